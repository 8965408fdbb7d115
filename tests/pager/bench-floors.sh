#!/usr/bin/env bash
# bench-floors: bypass-bench --compare A B --floors (tools/report_checks.py,
# issue 34 D4) on two committed quick runs: the quiet runs at 6334b4e (A) and
# a168c83 (B).  Each row outside its interval says whether a floor row of its
# table (limit, baseline, base; of the same program in "PROGRAM: side"
# tables) moved the same way by at least half as much in log terms; the
# summary gives last session's reading (docs/results/
# compare-quick-6334b4e-a168c83.md, read then with a notes script): 16 moved
# rows, 5 floor rows themselves, 6 explained, 5 not (ipc.oneway's adaptive
# rows and pager.unmodified's python rows, all faster).  Without --floors the
# output is the committed comparison, byte for byte.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (tools/report.py)"; exit 77; }
a=docs/results/quick-6334b4e-quiet.json b=docs/results/quick-a168c83-quiet.json
cmp=docs/results/compare-quick-6334b4e-a168c83.md
cd "$src" || exit 1
for f in "$a" "$b" "$cmp"; do
	[ -f "$f" ] || { echo "SKIP: $f missing"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
BYPASS_SOURCE=$src "$bench" --compare "$a" "$b" >"$tmp/plain.md" 2>&1 || bad "--compare: exit $?"
cmp -s "$tmp/plain.md" "$cmp" || bad "--compare without --floors differs from $cmp: $(diff "$tmp/plain.md" "$cmp" | head -5)"
BYPASS_SOURCE=$src "$bench" --compare "$a" "$b" --floors >"$tmp/floors.md" 2>&1 ||
	bad "--compare --floors: exit $?"
f=$tmp/floors.md
grep -q '^## Floors (--floors)$' "$f" || bad "no Floors section"
grep -q '^Moved rows: 16: floor rows themselves 5, explained by a floor row 6, not explained 5, without a median in both runs 0\.' "$f" ||
	bad "the summary: $(grep '^Moved rows' "$f")"
grep -q '^- ipc.oneway | bypass adaptive: median 787 -> 684 cycles; NOT explained by a floor row$' "$f" ||
	bad "ipc.oneway's adaptive row is not read as unexplained"
grep -q '^- pager.latency | handler pool (2), 1 thread: per fault: .*explained by userfaultfd handler thread, 1 thread: per fault' "$f" ||
	bad "the handler pool's move is not explained by the handler thread's"
grep -q '^- pager.unmodified | C program (malloc + read/write): bypass preload (upcall): .*explained by C program (malloc + read/write): Linux zram' "$f" ||
	bad "the C program's move is not explained by its own program's floor"
grep -q '^- pager.swapin | userfaultfd handler thread, 2 threads: faults/s: a floor row itself (baseline)' "$f" ||
	bad "a baseline row is not read as a floor row"
grep -q '| bypass adaptive | .*\*\*moved\*\*.*: median 787 -> 684 cycles; NOT explained' "$f" ||
	bad "the moved row's own line does not carry its reading"
[ $fail -eq 0 ] && echo "PASS: pager/bench-floors"
exit $fail
