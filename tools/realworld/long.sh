#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Long real use of the batch preload: one server of Debian's (nginx,
# lighttpd or redis-server) under `bypass run --batch`, loaded for rounds
# of a few seconds each by wrk (HTTP) or redis-benchmark (Redis), and
# checked as it goes:
#   - every response correct: wrk's non-2xx responses and socket errors 0,
#     and every body byte for byte the file asked for (a wrk script);
#     redis-benchmark prints no error, and the counts it made are in the
#     server (INCR of one key: its value; LPUSH: the list's length);
#   - no descriptor or memory growth: each server process's open
#     descriptors, VmRSS and Pss (/proc/PID/fd, status, smaps_rollup) after
#     each round, once the clients have gone: the descriptors after the
#     last round equal those after the first, and VmRSS has grown by at most
#     BYPASS_LONG_RSS_KB (default 4096) since the first (not judged in an
#     ASan build: its quarantine grows VmRSS);
#   - the server's processes alive and the same all along, nothing in its
#     error log, and at its exit the preload's stats line sane: one line
#     per process, "why": "exit", every counter present, calls deferred,
#     reported <= errors.
#
#   tools/realworld/long.sh [options] [VAR=value ...]
#     --server S     nginx (default), lighttpd or redis
#     --rounds N     rounds (default 3); the growth is judged from round 1
#     --seconds S    seconds per load in a round (default 10)
#     --conns N      connections (default 32)
#     --build DIR    the build tree (default build)
#     --sendfile off nginx: sendfile off (writev)
#     --workers N    nginx: worker processes (default 2); lighttpd: 0 (one
#                    process, the default) or more
#     VAR=value      the server's environment (BYPASS_BATCH_SPLICE=1, ...)
#
# A round of nginx or lighttpd runs four loads, seconds each: keep-alive on
# a 100 B file, keep-alive on a 1 MiB file, "Connection: close" on a 4 KiB
# file and on a 1 MiB file.  A round of Redis runs SET, GET, INCR, LPUSH,
# LPOP and MSET (-n requests each, sized from --seconds), plain and in
# pipelines of 16.  Each run prints what it did and the samples; exit 0
# when every check passed, 1 when one failed, 77 when a tool is missing.
# The server binds 127.0.0.1 on a free port; what the script started is
# stopped by pid, its temporary directory removed.  In make soak:
# tests/batch/extra.cmake (batch/soak-*), docs/batch.md.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
server=nginx
rounds=3
seconds=10
conns=32
build=$root/build
sendfile=on
workers=
envs=()
while [ $# -gt 0 ]; do
	case $1 in
	--server) server=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--conns) conns=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--sendfile) sendfile=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	*=*) envs+=("$1"); shift ;;
	-h|--help) sed -n '3,42p' "$0"; exit 0 ;;
	*) echo "long.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
export BYPASS_BUILD=$(cd "$build" && pwd)
case $server in
nginx) need=(nginx wrk); [ -n "$workers" ] || workers=2 ;;
lighttpd) need=(lighttpd wrk); [ -n "$workers" ] || workers=0 ;;
redis) need=(redis-server redis-benchmark redis-cli) ;;
*) echo "long.sh: --server nginx, lighttpd or redis" >&2; exit 2 ;;
esac
for t in "${need[@]}"; do
	PATH=$PATH:/usr/sbin command -v "$t" > /dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
[ -x "$BYPASS_BUILD/bypass" ] || { echo "SKIP: no $BYPASS_BUILD/bypass"; exit 77; }
# The temporary directory, its files (f100 ... f3000000), free_port,
# start_server, stop_server, stat_sum, the servers' configurations.
. "$root/tests/batch/server-lib.bash"
if [ "$PRELOAD" != "$SO" ]; then
	# bypass run puts its preload first in LD_PRELOAD; a sanitizer's runtime
	# must come first: the preload goes by LD_PRELOAD (server-lib.bash).
	echo "note: a sanitizer build: the server runs with LD_PRELOAD=$PRELOAD, not under bypass run"
	RUNNER=()
	# ASan keeps freed memory in quarantine (256 MiB per process by
	# default) and fills it as the run goes: VmRSS grows without a leak.
	# Memory is judged in a plain build; descriptors in both.
	echo "note: a sanitizer build: VmRSS is sampled, not judged (ASan's quarantine grows it)"
	JUDGE_RSS=0
else
	PRELOAD=
	RUNNER=("$BYPASS_BUILD/bypass" run --batch --no-report --no-status --)
fi

JUDGE_RSS=${JUDGE_RSS:-1}
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# The server's processes: the process group start_server made, but bypass
# run itself (it waits; the preload is not in it).
server_pids() {
	local p
	for p in $(pgrep -g "$SERVER_PID"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = bypass ] || echo "$p"
	done
}

# sample <round>: one line per server process: pid fds rss_kb pss_kb
# pipe_fds threads, into $T/samples (round pid fds rss pss pipes threads)
# and printed.
sample() {
	local p fds rss pss pipes thr
	for p in $(server_pids); do
		fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
		pipes=$(find "/proc/$p/fd" -lname 'pipe:*' 2>/dev/null | wc -l)
		rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null)
		thr=$(awk '/^Threads:/ {print $2}' "/proc/$p/status" 2>/dev/null)
		pss=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
		echo "$1 $p ${fds:-0} ${rss:-0} ${pss:-0} ${pipes:-0} ${thr:-1}" >> "$T/samples"
		echo "  sample round $1: pid $p ($(cat "/proc/$p/comm" 2>/dev/null)): fds $fds (pipes $pipes), VmRSS ${rss} kB, Pss ${pss} kB"
	done
}

# settle: the clients have gone; the server's descriptors stop changing
# (closes of the last connections, a worker's idle work) within 5 s.
settle() {
	local a b=x
	for _ in $(seq 50); do
		a=$(for p in $(server_pids); do ls "/proc/$p/fd" 2>/dev/null | wc -l; done | tr '\n' ' ')
		[ "$a" = "$b" ] && return
		b=$a
		sleep 0.1
	done
}

# The growth, from $T/samples: every process of round 1 still there with
# the same descriptors other than pipes and at most BYPASS_LONG_RSS_KB more
# VmRSS.  Pipes are the splice path's pool (src/batch/splice.c: at most 16
# pipes, 32 descriptors, per thread, kept once made): how many a round
# leaves depends on how many splices ran at once, which the machine's load
# decides (a loaded round 1 made 38 and round 4 46).  They may differ by at
# most the pool's bound, BYPASS_LONG_PIPE_FDS (32) per thread: a leak of one
# per request or connection over a round's tens of thousands is far past it.
check_growth() {
	local slack=${BYPASS_LONG_RSS_KB:-4096} pool=${BYPASS_LONG_PIPE_FDS:-32}
	awk -v last="$rounds" -v slack="$slack" -v judge="$JUDGE_RSS" -v pool="$pool" '
	$1 == 1 { fd[$2] = $3 - $6; pi[$2] = $6; rss[$2] = $4; n++ }
	$1 == last { lfd[$2] = $3 - $6; lpi[$2] = $6; lrss[$2] = $4; thr[$2] = $7 }
	END {
		bad = 0
		for (p in fd) {
			if (!(p in lfd)) { print "FAIL: pid " p " of round 1 is gone by round " last; bad++; continue }
			if (lfd[p] != fd[p]) { print "FAIL: pid " p ": " fd[p] " descriptors (not pipes) after round 1, " lfd[p] " after round " last; bad++ }
			d = lpi[p] - pi[p]; if (d < 0) d = -d
			if (d > pool * thr[p]) { print "FAIL: pid " p ": " pi[p] " pipe descriptors after round 1, " lpi[p] " after round " last " (the pool holds at most " pool " per thread, " thr[p] " threads)"; bad++ }
			if (judge && lrss[p] - rss[p] > slack) { print "FAIL: pid " p ": VmRSS " rss[p] " kB after round 1, " lrss[p] " kB after round " last " (more than " slack " kB)"; bad++ }
			else print "ok: pid " p ": descriptors " fd[p] " -> " lfd[p] " and pipes " pi[p] " -> " lpi[p] ", VmRSS " rss[p] " -> " lrss[p] " kB"
		}
		if (!n) { print "FAIL: no server process was sampled"; bad++ }
		exit bad ? 1 : 0
	}' "$T/samples" || FAILS=$((FAILS + 1))
}

# The stats lines at exit: one per process that ran under the preload.
check_stats() {
	local want=$1 n
	n=$(grep -c '"module": "batch"' "$T/stats" 2>/dev/null)
	[ "${n:-0}" -ge "$want" ] || fail "$n stats lines at exit, $want processes"
	/usr/bin/python3 - "$T/stats" <<'PY' || FAILS=$((FAILS + 1))
import json, sys
keys = ("segments deferred direct enters submitted bytes partial eagain errors "
        "reported merged_waits spliced from_bypass").split()
bad, total = 0, {k: 0 for k in keys}
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("module") != "batch":
        continue
    miss = [k for k in keys if not isinstance(d.get(k), int) or d[k] < 0]
    if miss or d.get("why") != "exit" or d["reported"] > d["errors"]:
        print("FAIL: stats line not sane:", line.strip()); bad += 1
    for k in keys:
        total[k] += d.get(k, 0) if isinstance(d.get(k), int) else 0
print("stats at exit (summed): " + ", ".join("%s %d" % (k, total[k]) for k in keys))
if total["deferred"] <= 0:
    print("FAIL: nothing was deferred"); bad += 1
sys.exit(1 if bad else 0)
PY
}

# ------------------------------------------------------------------ HTTP

# The wrk script: every response 200 and byte for byte the file (its path
# after wrk's --); the counts summed over wrk's threads at the end.
cat > "$T/check.lua" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
	local f = assert(io.open(args[1], "rb"))
	want = f:read("*a")
	f:close()
	checked, bad = 0, 0
end
function response(status, headers, body)
	checked = checked + 1
	if status ~= 200 or body ~= want then bad = bad + 1 end
end
function done(summary, latency, requests)
	local c, b = 0, 0
	for _, t in ipairs(threads) do c = c + t:get("checked"); b = b + t:get("bad") end
	io.write(string.format("checked %d bad %d\n", c, b))
end
LUA

TOTAL=0
# load <label> <file> [wrk args...]
load() {
	local label=$1 file=$2 out; shift 2
	# --timeout 30s: a response slower than wrk's default 2 s on a loaded
	# machine is counted as a socket error; 30 s is a stall, not load.
	out=$(wrk -t2 -c"$conns" -d"${seconds}s" --timeout 30s -s "$T/check.lua" "$@" \
		"http://127.0.0.1:$PORT/$file" -- "$T/www/$file" 2>&1)
	local reqs non2xx sock checked bad
	reqs=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
	non2xx=$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' <<<"$out")
	sock=$(sed -n 's/.*Socket errors: \(.*\)/\1/p' <<<"$out")
	checked=$(sed -n 's/^checked \([0-9]*\) bad.*/\1/p' <<<"$out")
	bad=$(sed -n 's/^checked [0-9]* bad \([0-9]*\)/\1/p' <<<"$out")
	echo "  $label /$file: ${reqs:-?} requests, $(sed -n 's/^Requests\/sec: *//p' <<<"$out") /s, checked ${checked:-?}, bad ${bad:-?}${non2xx:+, non-2xx $non2xx}${sock:+, socket errors: $sock}"
	if [ -z "$reqs" ] || [ "${reqs:-0}" -le 0 ] || [ -n "$non2xx" ] || [ -n "$sock" ] ||
		[ "${bad:-1}" != 0 ] || [ "${checked:-0}" -le 0 ]; then
		fail "$label /$file"; echo "$out"
	fi
	TOTAL=$((TOTAL + ${reqs:-0}))
}

http_round() {
	load keep-alive f100
	load keep-alive f1048576
	load close f4096 -H "Connection: close"
	load close f1048576 -H "Connection: close"
}

# --------------------------------------------------------------- Redis

redis_conf() {
	cat > "$T/redis.conf" <<CONF
port $PORT
bind 127.0.0.1
save ""
appendonly no
dir $T
logfile $T/error.log
CONF
}

rcli() { redis-cli -p "$PORT" "$@"; }

# bench <label> [redis-benchmark args...]: no error printed
bench() {
	local label=$1 out; shift
	out=$(redis-benchmark -p "$PORT" -c "$conns" -q "$@" 2>&1)
	echo "  $label: $(tr '\r' '\n' <<<"$out" | grep 'requests per second' | sed 's/ requests per second.*//' | tr '\n' ' ')"
	if grep -qi "error" <<<"$out"; then
		fail "$label: redis-benchmark: $(grep -i error <<<"$out" | head -3)"
	fi
}

redis_round() {
	# -n = 12,000 x --seconds per kind: a round (plain and pipelined) took
	# 3-4 x seconds on this 2-CPU machine under load, more under ASan.
	local n=$((seconds * 12000)) p v
	for p in 1 16; do
		rcli flushall > /dev/null
		bench "P=$p set,get,lpop,mset" -n "$n" -P "$p" -r 100000 -d 64 -t set,get,lpop,mset
		bench "P=$p incr,lpush" -n "$n" -P "$p" -t incr,lpush
		v=$(rcli get counter:__rand_int__)
		[ "$v" = "$n" ] || fail "P=$p: INCR counter:__rand_int__ is $v after $n INCRs"
		v=$(rcli llen mylist)
		[ "$v" = "$n" ] || fail "P=$p: LLEN mylist is $v after $n LPUSHes"
		TOTAL=$((TOTAL + 6 * n))
	done
}

# ------------------------------------------------------------------ run

env_list=${envs[*]:-}
case $server in
nginx)
	write_conf() { nginx_conf "$sendfile" off; sed -i "s/^worker_processes 2;/worker_processes $workers;/" "$T/nginx.conf"; }
	start_server write_conf "${envs[@]}" "${RUNNER[@]}" nginx -c "$T/nginx.conf" -p "$T"
	nprocs=$((workers + 1)) ;;
lighttpd)
	write_conf() { lighttpd_conf "$workers"; }
	start_server write_conf "${envs[@]}" "${RUNNER[@]}" lighttpd -D -f "$T/lighttpd.conf"
	nprocs=$((workers > 0 ? workers + 1 : 1)) ;;
redis)
	start_server redis_conf "${envs[@]}" "${RUNNER[@]}" redis-server "$T/redis.conf"
	nprocs=1 ;;
esac
echo "long.sh: $server under ${RUNNER[*]:-LD_PRELOAD}${env_list:+ with $env_list} on port $PORT: $rounds rounds, ${seconds} s per load, $conns connections"
first=$(server_pids | sort | tr '\n' ' ')
start=$(date +%s)
for r in $(seq "$rounds"); do
	echo "round $r:"
	if [ "$server" = redis ]; then redis_round; else http_round; fi
	settle
	sample "$r"
	now=$(server_pids | sort | tr '\n' ' ')
	[ "$now" = "$first" ] || fail "round $r: the server's processes were '$first', now '$now'"
done
check_growth
case $server in
nginx) kill -QUIT "$(cat "$T/nginx.pid")" ;;  # graceful: workers finish
redis) rcli shutdown nosave > /dev/null 2>&1 ;;
*) kill -TERM "$(server_pids | head -1)" ;;
esac
for _ in $(seq 100); do pgrep -g "$SERVER_PID" > /dev/null || break; sleep 0.1; done
pgrep -g "$SERVER_PID" > /dev/null && fail "the server did not exit within 10 s"
wait "$SERVER_PID"
rc=$?
SERVER_PID=
[ "$rc" = 0 ] || fail "the server (under ${RUNNER[*]:-LD_PRELOAD}) exited with status $rc"
if grep -E "\[(alert|emerg|crit)\]|signal [0-9]+ .*exited|# ERROR|\(error\)" "$T"/error.log* 2>/dev/null; then
	fail "the server logged the above"
fi
check_stats "$nprocs"
echo "long.sh: $server: $TOTAL requests in $(($(date +%s) - start)) s, $FAILS failures"
[ "$FAILS" = 0 ] && echo "PASS: $server" && exit 0
exit 1
