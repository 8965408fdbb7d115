#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nginx (Debian's, unmodified) under libbypass-batch.so: many concurrent
# clients fetch files of 0 B to 3 MB with keep-alive and without, pipelined,
# slowly (partial writes), and resetting connections; every byte is checked.
# Two workers (forked after the preload is loaded), sendfile run directly,
# deferred by copy and by splice (BYPASS_BATCH_SPLICE=1), sendfile off
# (writev), tcp_nopush (TCP_CORK).
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "SKIP: nginx is not installed"; exit 77; }
. "$(dirname "$0")/server-lib.bash"

run() { # <label> <sendfile on|off> <tcp_nopush on|off> <env...>
	local label=$1 sf=$2 nopush=$3; shift 3
	write_conf() { nginx_conf "$sf" "$nopush"; }
	start_server write_conf "$@" "$NGINX" -c "$T/nginx.conf" -p "$T"
	clients_all
	kill -QUIT "$SERVER_PID"  # graceful: workers finish and exit
	wait "$SERVER_PID"
	SERVER_PID=
	if grep -E "\[(alert|emerg)\]|signal [0-9]+ .*exited" "$T/error.log"; then
		echo "FAIL: $label: nginx logged the above"
		exit 1
	fi
	echo "ok: $label: deferred $(stat_sum deferred), segments $(stat_sum segments)," \
		"enters $(stat_sum enters), errors $(stat_sum errors), reported $(stat_sum reported)," \
		"spliced $(stat_sum spliced)"
	check_counters "$label" "$@"
}

run "defaults" on off
run "sendfile (direct)" on off BYPASS_BATCH_SENDFILE=sync
run "sendfile (copy)" on off BYPASS_BATCH_SENDFILE=copy BYPASS_BATCH_SENDFILE_MAX=65536
run "sendfile off (writev), close=all" off off BYPASS_BATCH_CLOSE=all
run "tcp_nopush (cork), copy" on on BYPASS_BATCH_SENDFILE=copy BYPASS_BATCH_SENDFILE_MAX=65536
run "sendfile (splice)" on off BYPASS_BATCH_SPLICE=1
run "tcp_nopush (cork), splice" on on BYPASS_BATCH_SPLICE=1
echo "PASS: batch/nginx"
