#!/usr/bin/env bash
# `bypass run`'s report (issue 36): at the program's end, one line per
# fact for each preload, for the whole process tree.  Checked:
# - bad options exit 2 (--stats=xml, --report or --stats=json without a
#   FILE, --report with --no-report);
# - the arithmetic, from counter lines the program appends itself to the
#   stats file: crossings saved (deferred + merged waits - enters) and per
#   second, errors reported late and never, the merged wait; the pager's
#   median and p99 from its histogram, the warnings for a pager over its
#   budget and a swap file nearly full; every counter the report sums
#   (cli/report.c: the pager's BP_PAGER_COUNTERS, batch's BT_COUNTERS, by
#   name) said with its own figure;
# - real runs: a paged program whose memory stays outside the pager
#   exceeds its budget and gets the warning, one within it gets none; a
#   batch run of an epoll loop prints the crossings it saved;
# - --report FILE (the report goes there, not to stderr; '-': stderr),
#   --stats=json FILE (the raw lines are kept), --no-report; without
#   --report and with stderr not a terminal, no report and the program at
#   bypass's own pid; a BYPASS_STATS_FILE of the caller's is kept and only
#   this run's lines are reported;
# - the live status: under a terminal (script(1)'s pty) a line that is
#   erased at exit; none when stderr is a file or with --no-status.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
bypass=$build/bypass
[ -x "$bypass" ] || { echo "FAIL: $bypass not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
expect() {
	local want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	[ "$got" = "$want" ] || { bad "'$*' exited $got, want $want"; sed 's/^/  | /' "$tmp/out" "$tmp/err"; }
}
has() { grep -qE -- "$1" "$2" || { bad "$3: no line matching '$1' in:"; sed 's/^/  | /' "$2"; }; }
hasnt() { ! grep -qE -- "$1" "$2" || { bad "$3: a line matching '$1' in:"; sed 's/^/  | /' "$2"; }; }

expect 2 "$bypass" run --batch --stats=xml -- true
expect 2 "$bypass" run --batch --report
expect 2 "$bypass" run --batch --stats=json
expect 2 "$bypass" run --batch --report "$tmp/r" --no-report -- true
[ ! -e "$tmp/r" ] || bad "a refused --report created its file"

if grep -qE '^BYPASS_(SANITIZE|TSAN):BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "note: the preloads of a sanitizer build cannot be loaded into other programs: usage only"
	[ $fail -eq 0 ] && echo "PASS: core/cli-report (usage only)"
	exit $fail
fi
[ -f "$build/libbypass-batch.so" ] && [ -f "$build/libbypass-pager.so" ] ||
	{ echo "SKIP: the preloads are not built (MODULES)"; exit 77; }

# ---- the arithmetic, from lines the program writes itself
cat >"$tmp/fake-batch.sh" <<'SH'
echo '{"module": "batch", "pid": 11, "segments": 40, "deferred": 100, "direct": 3, "enters": 20, "bytes": 4096, "errors": 3, "reported": 2, "merged_waits": 10}' >>"$BYPASS_STATS_FILE"
echo '{"module": "batch", "pid": 12, "segments": 5, "deferred": 50, "enters": 10, "merged_waits": 0}' >>"$BYPASS_STATS_FILE"
SH
expect 0 "$bypass" run --batch --report - -- sh "$tmp/fake-batch.sh"
has '^bypass: batch: calls deferred: 150 \(4.0 KiB of payload\) in 45 segments; 3 other calls' "$tmp/err" "batch deferred"
has '^bypass: batch: kernel crossings saved: 130, [0-9.]+ per second \(150 deferred calls \+ 10 merged waits - 30 io_uring_enter calls\)' \
	"$tmp/err" "crossings saved"
has '^bypass: batch: errors reported late: 3 deferred calls failed after returning success; 2 reported to the next call on the descriptor, 1 never' \
	"$tmp/err" "errors reported late"
has '^bypass: batch: merged wait: used 10 times' "$tmp/err" "merged wait"
# More enters than calls saved: said as a cost, not a negative saving.
echo 'echo "{\"module\": \"batch\", \"pid\": 13, \"deferred\": 4, \"enters\": 9}" >>"$BYPASS_STATS_FILE"' >"$tmp/fake-cost.sh"
expect 0 "$bypass" run --batch --report=- -- sh "$tmp/fake-cost.sh"
has '^bypass: batch: kernel crossings saved: none: 5 more than without the preload' "$tmp/err" "crossings cost"
# The counters only the "also" line says.
echo 'echo "{\"module\": \"batch\", \"pid\": 14, \"deferred\": 4, \"enters\": 1, \"partial\": 2, \"spliced\": 3, \"eagain\": 5}" >>"$BYPASS_STATS_FILE"' >"$tmp/fake-also.sh"
expect 0 "$bypass" run --batch --report=- -- sh "$tmp/fake-also.sh"
has '^bypass: batch: also: 2 short writes finished by the preload, 3 sendfile calls deferred as splices, 5 writes answered EAGAIN behind queued data' \
	"$tmp/err" "the also line"

# Pager: 90 faults of 1-2 us, 10 of 1-2 ms: the median is the first bucket,
# the p99 the second; pid 21's pager held 1100 pages over its 1024 (a
# broken pager: warned), and its swap file is 95% full at exit.
hist() { local h="" i; for i in $(seq 0 31); do
	case $i in 10) h+="90" ;; 20) h+="10" ;; *) h+="0" ;; esac; [ $i -lt 31 ] && h+=","; done; echo "$h"; }
cat >"$tmp/fake-pager.sh" <<SH
echo '{"module":"pager","pid":21,"faults_zero":70,"faults_swapin":30,"evictions":512,"evictions_clean":256,"bytes_read":1048576,"bytes_written":1048576,"resident_peak":1100,"budget_pages":1024,"swap_pages":1000,"swap_used":950,"mapped_pages":4096,"lat_hist":[$(hist)],"lat_count":100,"lat_sum_ns":10000000,"heap":1}' >>"\$BYPASS_STATS_FILE"
SH
expect 0 "$bypass" run --pager 4M,swap="$tmp" --report - -- sh "$tmp/fake-pager.sh"
has '^bypass: pager: budget: 4.0 MiB of resident paged memory' "$tmp/err" "pager budget"
has '^bypass: pager: fault latency: median 1.02-2.05 us, p99 1.05-2.1 ms \(100 faults: 70 first touches, 30 swap-ins' \
	"$tmp/err" "fault latency"
has '^bypass: pager: evicted: 2.0 MiB \(512 pages; 1.0 MiB of them clean' "$tmp/err" "evicted"
has '^bypass: pager: read back from swap: 1.0 MiB \(30 swap-in faults' "$tmp/err" "read back"
has '^bypass: pager: time in faults: 10.0 ms, ' "$tmp/err" "time in faults"
has "^bypass: pager: WARNING: pid 21's pager held 4.3 MiB resident, over its 4.0 MiB budget" "$tmp/err" "over its budget"
has '^bypass: pager: WARNING: the swap file is nearly full \(95%' "$tmp/err" "swap nearly full"
has '^bypass: pager: swap: a 3.9 MiB swap file per paging process in '"$tmp" "$tmp/err" "swap line"
# Every counter the report sums says its figure (cli/report.c sums the
# pager's list, src/pager/stats.h, by name): the ones the line above lacks.
cat >"$tmp/fake-pager2.sh" <<SH
echo '{"module":"pager","pid":22,"faults_zero":1,"faults_swapin":30,"faults_wp":5,"faults_other":2,"readahead_pages":7,"prefetch_pages":9,"prefetch_used":4,"engine_switches":3,"policy_rejects":6,"write_errors":8,"faultaround_pages":11,"budget_pages":1024,"mapped_pages":64,"lat_hist":[$(hist)],"lat_count":100,"lat_sum_ns":1000,"heap":0}' >>"\$BYPASS_STATS_FILE"
SH
expect 0 "$bypass" run --pager 4M,swap="$tmp" --report - -- sh "$tmp/fake-pager2.sh"
has '\(100 faults: 1 first touches, 30 swap-ins, 5 writes to clean pages, 2 other;' "$tmp/err" "faults by kind"
has '^bypass: pager: read back from swap: .* \(30 swap-in faults, 7 pages read along, 9 prefetched of which 4 used\)' \
	"$tmp/err" "readahead and prefetch"
has ', 3 switches between upcalls and the handler pool; 6 answers of the policy refused$' "$tmp/err" \
	"engine switches and policy rejects"
has '^bypass: pager: WARNING: 8 write-backs to the swap file failed' "$tmp/err" "write errors"
hasnt 'compressed tier' "$tmp/err" "a tier line without the tier"
# The compressed tier's line (issue 35), from a process whose line carries
# the tier_* counters: what went in, what did not, swap-ins from each tier,
# the pool at exit and the memory it held them in.
cat >"$tmp/fake-pager3.sh" <<SH
echo '{"module":"pager","pid":23,"faults_swapin":340,"budget_pages":1024,"mapped_pages":64,"lat_hist":[$(hist)],"lat_count":100,"lat_sum_ns":1000,"tier_stored":500,"tier_rejected":20,"tier_skipped":12,"tier_swapin_pool":300,"tier_swapin_file":40,"tier_pool_pages":256,"tier_pool_bytes":262144,"heap":0}' >>"\$BYPASS_STATS_FILE"
SH
expect 0 "$bypass" run --pager 4M,swap="$tmp" --report - -- sh "$tmp/fake-pager3.sh"
has '^bypass: pager: compressed tier: 500 pages put in the pool, 20 that did not compress written to swap \(12 untried\); swap-ins: 300 from the pool, 40 from the file; at exit the pool held 1.0 MiB of pages in 256.0 KiB \(4.0x\)$' \
	"$tmp/err" "the tier's line"
# A line with more counters than this report knows (a newer preload: 150
# unknown ones before the tier's): the counters after them still count
# (the report once kept the first 96 of a line and dropped the rest).
many=""; for i in $(seq 1 150); do many+="\"future_$i\":$i,"; done
cat >"$tmp/fake-pager4.sh" <<SH
echo '{"module":"pager","pid":24,$many"faults_swapin":340,"budget_pages":1024,"mapped_pages":64,"lat_hist":[$(hist)],"lat_count":100,"lat_sum_ns":1000,"tier_stored":500,"tier_rejected":20,"tier_skipped":12,"tier_swapin_pool":300,"tier_swapin_file":40,"tier_pool_pages":256,"tier_pool_bytes":262144,"heap":0}' >>"\$BYPASS_STATS_FILE"
SH
expect 0 "$bypass" run --pager 4M,swap="$tmp" --report - -- sh "$tmp/fake-pager4.sh"
has '^bypass: pager: compressed tier: 500 pages put in the pool, 20 that did not compress written to swap \(12 untried\); swap-ins: 300 from the pool, 40 from the file' \
	"$tmp/err" "the tier's line after 150 unknown counters"

# ---- --report FILE, --stats=json FILE, --no-report
expect 0 "$bypass" run --batch --report "$tmp/rep" --stats=json "$tmp/raw.json" -- sh "$tmp/fake-batch.sh"
hasnt '^bypass: batch:' "$tmp/err" "--report FILE still printed on stderr"
has '^bypass: batch: kernel crossings saved: 130,' "$tmp/rep" "--report FILE"
[ "$(grep -c '"pid": 1[12],' "$tmp/raw.json")" = 2 ] || bad "--stats=json: the program's lines: $(cat "$tmp/raw.json")"
grep -q '"module": "batch", "pid": [0-9]*, "why"' "$tmp/raw.json" || bad "--stats=json: no line of the preload's own"
expect 0 "$bypass" run --batch --no-report -- sh -c '[ -z "$BYPASS_STATS_FILE" ]'
hasnt '^bypass:' "$tmp/err" "--no-report"
expect 2 "$bypass" run --batch --report - --no-report -- true
expect 2 "$bypass" run --batch --no-report --report - -- true
# stderr not a terminal and no --report: no report, and the program runs
# in bypass's place (its pid: scripts and services see no change).
"$bypass" run --batch -- sh -c 'echo $$ >"$0"; [ -z "$BYPASS_STATS_FILE" ]' "$tmp/pid" 2>"$tmp/err" &
bp=$!
wait $bp || bad "the program without a report: exit $?"
[ "$(cat "$tmp/pid")" = "$bp" ] || bad "without a report the program is pid $(cat "$tmp/pid"), not bypass's $bp"
hasnt '^bypass:' "$tmp/err" "no report where stderr is not a terminal"
# The caller's own BYPASS_STATS_FILE: appended to and kept; the report
# counts only what this run appended.
echo '{"module": "batch", "pid": 99, "deferred": 1000, "enters": 1}' >"$tmp/own.json"
expect 0 env BYPASS_STATS_FILE="$tmp/own.json" "$bypass" run --batch --report - -- sh "$tmp/fake-batch.sh"
has '^bypass: batch: kernel crossings saved: 130,' "$tmp/err" "the caller's stats file: an earlier line counted"
[ "$(grep -c '"pid": 99,' "$tmp/own.json")" = 1 ] && [ "$(grep -c '"pid": 1[12],' "$tmp/own.json")" = 2 ] ||
	bad "the caller's stats file: $(cat "$tmp/own.json")"

# ---- real runs
py=/usr/bin/python3
if [ -x $py ] && "$bypass" doctor | grep -qE '^pager\.upcall +yes'; then
	# 48 MiB outside the pager (heap off, threshold above it) under an 8 MiB budget.
	expect 0 env BYPASS_PAGER_HEAP=off BYPASS_PAGER_THRESHOLD=1G "$bypass" run --pager 8M,swap="$tmp" --report - -- \
		$py -c 'x = bytearray(48 << 20); x[::4096] = b"a" * len(x[::4096]); print(len(x))'
	has '^50331648$' "$tmp/out" "the over-budget program's output"
	has '^bypass: pager: WARNING: the budget was exceeded: the process tree.s resident memory reached [0-9.]+ MiB, over the 8.0 MiB budget' \
		"$tmp/err" "over-budget run"
	has '^bypass: pager: peak resident memory: [0-9.]+ MiB' "$tmp/err" "peak resident"
	# Paged for real under a budget the whole tree fits in: no warning.
	expect 0 "$bypass" run --pager 1G,swap="$tmp" --report - -- $py -c 'x = bytearray(80 << 20); print(len(x))'
	hasnt 'WARNING' "$tmp/err" "a run within its budget"
	has '^bypass: pager: paged memory resident at most: ' "$tmp/err" "paged run"
else
	echo "note: the real pager runs skipped (no $py, or no pager upcall mode here)"
fi
if [ -x $py ]; then
	cat >"$tmp/loop.py" <<'PY'
import socket, select
a, b = socket.socketpair()
b.setblocking(False)
ep = select.epoll()
ep.register(b.fileno(), select.EPOLLIN)
got = 0
for i in range(500):
    ep.poll(0)
    for k in range(8):
        a.send(b"x" * 64)
    ep.poll(1)
    while True:
        try:
            got += len(b.recv(65536))
        except BlockingIOError:
            break
print(got)
PY
	expect 0 "$bypass" run --batch --report - -- $py "$tmp/loop.py"
	has '^256000$' "$tmp/out" "the epoll loop's bytes"
	if grep -qE '^bypass: batch: calls deferred: [1-9]' "$tmp/err"; then
		has '^bypass: batch: kernel crossings saved: [1-9][0-9]*, [0-9.]+ per second' "$tmp/err" "real batch run"
	elif "$bypass" doctor | grep -qE '^batch +yes'; then
		bad "the epoll loop deferred nothing: $(cat "$tmp/err")"
	else
		echo "note: batch is refused here (no io_uring): the real batch run deferred nothing"
	fi
fi

# ---- the live status
if command -v script >/dev/null; then
	# (and the report, by default under a terminal)
	script -qec "$bypass run --pager 64M,swap=$tmp -- sleep 2.2" /dev/null >"$tmp/tty" 2>&1
	grep -qa 'bypass: [0-9.]*[KMG] resident / 64.0M budget' "$tmp/tty" ||
		bad "no live status under a terminal: $(cat -v "$tmp/tty")"
	# erased before the report: carriage return, erase to the end of line
	grep -qa $'\r\033\\[K\rbypass: pager:\|\r\033\\[Kbypass: pager:' "$tmp/tty" ||
		bad "the live status is not erased before the report: $(cat -v "$tmp/tty")"
	script -qec "$bypass run --no-status --pager 64M,swap=$tmp -- sleep 1.5" /dev/null >"$tmp/tty" 2>&1
	hasnt 'resident /' "$tmp/tty" "--no-status"
	"$bypass" run --pager 64M,swap="$tmp" --report - -- sleep 1.5 2>"$tmp/err"
	hasnt 'resident /' "$tmp/err" "status with stderr not a terminal"
else
	echo "note: script(1) missing: the live status is not tested"
fi

[ $fail -eq 0 ] && echo "PASS: core/cli-report"
exit $fail
