#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lighttpd (Debian's, unmodified) under libbypass-batch.so: many concurrent
# clients fetch files of 0 B to 3 MB with keep-alive and without, pipelined,
# slowly (partial writes), and resetting connections; every byte is checked.
# One process, then two workers; sendfile run directly, deferred by copy
# and by splice (BYPASS_BATCH_SPLICE=1, not the default).
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)
[ -x "$LIGHTTPD" ] || { echo "SKIP: lighttpd is not installed"; exit 77; }
. "$(dirname "$0")/server-lib.bash"

run() { # <label> <workers> <env...>
	local label=$1 workers=$2; shift 2
	write_conf() { lighttpd_conf "$workers"; }
	start_server write_conf "$@" "$LIGHTTPD" -D -f "$T/lighttpd.conf"
	clients_all
	stop_server TERM
	echo "ok: $label: deferred $(stat_sum deferred), segments $(stat_sum segments)," \
		"enters $(stat_sum enters), errors $(stat_sum errors), reported $(stat_sum reported)," \
		"spliced $(stat_sum spliced)"
	check_counters "$label" "$@"
}

run "one process, defaults" 0
run "one process, sendfile (direct)" 0 BYPASS_BATCH_SENDFILE=sync
run "one process, sendfile (copy)" 0 BYPASS_BATCH_SENDFILE=copy BYPASS_BATCH_SENDFILE_MAX=65536
run "two workers, sendfile (copy)" 2 BYPASS_BATCH_SENDFILE=copy BYPASS_BATCH_SENDFILE_MAX=65536
run "one process, sendfile (splice)" 0 BYPASS_BATCH_SPLICE=1
run "two workers, sendfile (splice)" 2 BYPASS_BATCH_SPLICE=1
echo "PASS: batch/lighttpd"
