#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# preload-stacked-servers: Debian's nginx and lighttpd, unmodified, under
# both preloads (`bypass run --batch --pager 4M`, the pager's heap engaged
# at once: BYPASS_PAGER_HEAP_AFTER=0, so the servers' buffers are paged
# memory where jemalloc is built in), beside the same server without
# preloads (issue 34, D3).
#
# Each server is started by this test on 127.0.0.1 at a port it picks
# (tests/batch/server-lib.bash: free_port, start_server, stop_server, the
# servers' configurations, the files of 0 B to 3 MB, cleanup of the server
# by its pid and of the directory on any exit).  A fixed list of requests
# (every file, a HEAD, a range, a missing file) is made with curl on one
# connection; the replies (status line and
# headers but Date, and the bodies) of the stacked run must equal the plain
# run's byte for byte.  Then the batch tests' bounded client workload
# (keep-alive, close, pipelined, slow readers, resets: every byte checked
# against the files) runs against the stacked server.  The batch preload's
# from_bypass (calls into its wrappers from a libbypass object) is printed:
# the pager preload's own I/O wrappers still call fstat/getsockopt by
# name (preload/pager/io.c, not this test's), so it is not asserted here;
# tests/pager/preload-stacked-faults asserts it for the fault path.
#
# Redis under both preloads is tests/pager/preload-redis.sh's last case
# (--batch --pager 32M: DEBUG POPULATE, DBSIZE and a value against the
# plain server's).  Skips (77) when a server or curl is missing.
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)
[ -x "$NGINX" ] || { echo "SKIP: nginx is not installed (Debian's nginx)"; exit 77; }
[ -x "$LIGHTTPD" ] || { echo "SKIP: lighttpd is not installed (Debian's lighttpd)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
BYPASS_BUILD=${BYPASS_BUILD:-.}
PAGER=$BYPASS_BUILD/libbypass-pager.so
[ -r "$PAGER" ] || { echo "SKIP: no $PAGER"; exit 77; }
[ -x "$BYPASS_BUILD/bypass" ] || { echo "SKIP: no $BYPASS_BUILD/bypass"; exit 77; }
. "${BYPASS_SOURCE:-$(dirname "$0")/../..}/tests/batch/server-lib.bash"
# server-lib set PRELOAD to the batch preload (after the ASan runtime, if
# any); the runs here choose their own
ASAN_RT=
[ "$PRELOAD" != "$SO" ] && ASAN_RT=${PRELOAD%%:*}
mkdir -p "$T/swap"

# the command prefix of the stacked runs: both preloads
if [ -n "$ASAN_RT" ]; then # the runtime first: bypass run would put it last
	STACKED=(env "LD_PRELOAD=$ASAN_RT:$SO:$PAGER" BYPASS_PAGER_BUDGET=4M)
else
	STACKED=("$B/bypass" run --batch --pager 4M --)
fi

# fetch OUTDIR: the fixed requests, one connection; replies kept there
fetch() {
	local out=$1 args=() f i=0
	mkdir -p "$out"
	for f in ${FILES//,/ } missing; do
		args+=(-o "$out/body.$i" -D "$out/head.$i" "http://127.0.0.1:$PORT/$f")
		i=$((i + 1))
	done
	args+=(-r 1000-70999 -o "$out/body.range" -D "$out/head.range" "http://127.0.0.1:$PORT/f200000")
	# hang guards (minutes), never a timing assertion
	if ! timeout 600 curl -s --max-time 300 "${args[@]}" ||
		! timeout 300 curl -s -I --max-time 120 -o "$out/head.head" "http://127.0.0.1:$PORT/f65536"; then
		echo "FAIL: curl against port $PORT failed"
		cat "$T"/error.log* 2>/dev/null
		exit 1
	fi
	# Date changes from run to run: everything else must not
	for f in "$out"/head.*; do sed -i '/^Date: /d' "$f"; done
}

nginx_on() { nginx_conf on off; }
lighttpd_two() { lighttpd_conf 2; }

# serve NAME CONF SIGNAL CMD...: plain, then stacked; replies compared
serve() {
	local name=$1 conf=$2 sig=$3; shift 3
	PRELOAD=
	start_server "$conf" "$@"
	fetch "$T/$name.plain"
	stop_server "$sig"
	PRELOAD=${ASAN_RT:-}
	rm -f "$T/pstats"
	start_server "$conf" BYPASS_PAGER_HEAP_AFTER=0 BYPASS_PAGER_THRESHOLD=1M \
		BYPASS_PAGER_SWAP="$T/swap" BYPASS_STATS_FILE="$T/pstats" \
		ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 "${STACKED[@]}" "$@"
	fetch "$T/$name.stacked"
	if ! diff -r "$T/$name.plain" "$T/$name.stacked" >"$T/diff" 2>&1; then
		head -20 "$T/diff"
		echo "FAIL: $name: replies under --batch --pager differ from the plain server's"
		exit 1
	fi
	clients_all
	stop_server "$sig"
	if grep -E "\[(alert|emerg)\]|signal [0-9]+ .*exited" "$T/error.log"; then
		echo "FAIL: $name: the server logged the above under both preloads"
		exit 1
	fi
	local np nb heap
	np=$(grep -c '"module":"pager"' "$T/pstats" 2>/dev/null)
	nb=$(grep -c '"module": "batch"' "$T/pstats" 2>/dev/null)
	heap=$(grep -o '"heap":[0-9]' "$T/pstats" 2>/dev/null | sort -u | tr '\n' ' ')
	[ "${np:-0}" -gt 0 ] && [ "${nb:-0}" -gt 0 ] ||
		{ echo "FAIL: $name: no statistics line from both preloads (pager $np, batch $nb)"; exit 1; }
	echo "ok: $name: $(ls "$T/$name.plain" | grep -c '^body') replies equal; then the client workload;" \
		"processes: $np pager lines ($heap), $nb batch lines; deferred $(stat_sum deferred)," \
		"from_bypass $(stat_sum from_bypass)"
}

serve nginx nginx_on QUIT "$NGINX" -c "$T/nginx.conf" -p "$T"
serve lighttpd lighttpd_two TERM "$LIGHTTPD" -D -f "$T/lighttpd.conf"
echo "PASS pager/preload-stacked-servers"
