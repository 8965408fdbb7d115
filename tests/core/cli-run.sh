#!/usr/bin/env bash
# `bypass` itself and `bypass run`: --help/--version, exit codes for bad
# usage (2), a program that is not there (127), the program's own status
# (and 128+N for a signal); the preload is in LD_PRELOAD (ahead of one the
# caller had) and the pager's budget and swap reach the environment; --stats
# hands the program BYPASS_STATS_FILE, prints what was appended to it (one
# line per process, a total per module for several), and removes the file.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
bypass=$build/bypass
[ -x "$bypass" ] || { echo "FAIL: $bypass not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# expect CODE CMD...: run, keep stdout+stderr in $tmp/out
expect() {
	local want=$1
	shift
	"$@" >"$tmp/out" 2>&1
	local got=$?
	[ "$got" = "$want" ] || { bad "'$*' exited $got, want $want"; sed 's/^/  | /' "$tmp/out"; }
}

expect 0 "$bypass" --help
grep -q 'doctor' "$tmp/out" && grep -q 'run' "$tmp/out" && grep -q 'bench' "$tmp/out" ||
	bad "--help does not list doctor, run and bench"
expect 0 "$bypass" --version
grep -qE '^bypass [0-9]+\.[0-9]+' "$tmp/out" || bad "--version: $(cat "$tmp/out")"
expect 2 "$bypass"
expect 2 "$bypass" frobnicate
grep -q "unknown command 'frobnicate'" "$tmp/out" || bad "unknown command not named"
expect 0 "$bypass" run --help
expect 2 "$bypass" run
expect 2 "$bypass" run --batch
expect 2 "$bypass" run --bogus -- true
expect 2 "$bypass" run -- true
grep -q 'nothing to preload' "$tmp/out" || bad "run without a preload: $(cat "$tmp/out")"
for spec in 0 12Q -5 M 64M,swop=/x ''; do
	expect 2 "$bypass" run --pager "$spec" -- true
done
expect 2 "$bypass" run --pager

if grep -qE '^BYPASS_(SANITIZE|TSAN):BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "note: the preloads of a sanitizer build cannot be loaded into other programs: run checks skipped"
	[ $fail -eq 0 ] && echo "PASS: core/cli-run (usage only)"
	exit $fail
fi

if [ -f "$build/libbypass-batch.so" ]; then
	expect 127 "$bypass" run --batch -- "$tmp/no-such-program"
	expect 126 "$bypass" run --batch -- "$tmp"
	expect 3 "$bypass" run --batch -- sh -c 'exit 3'
	expect 143 "$bypass" run --batch --stats -- sh -c 'kill -TERM $$'
	expect 0 env LD_PRELOAD=libc.so.6 "$bypass" run --batch -- sh -c 'echo "$LD_PRELOAD"'
	grep -qE '^/[^:]*/libbypass-batch\.so:libc\.so\.6$' "$tmp/out" ||
		bad "LD_PRELOAD: $(cat "$tmp/out")"

	# --stats: the program sees the file; what is appended is printed.
	cat >"$tmp/prog.sh" <<'SH'
[ -n "$BYPASS_STATS_FILE" ] && [ -f "$BYPASS_STATS_FILE" ] || exit 9
echo "$BYPASS_STATS_FILE" >"$1"
echo '{"module": "fake", "pid": 11, "hits": 2, "misses": 5}' >>"$BYPASS_STATS_FILE"
echo '{"module": "fake", "pid": 12, "hits": 3, "misses": 1}' >>"$BYPASS_STATS_FILE"
exit 4
SH
	expect 4 "$bypass" run --batch --stats -- sh "$tmp/prog.sh" "$tmp/path"
	grep -q '^bypass: fake pid 11: hits=2 misses=5$' "$tmp/out" || bad "--stats line: $(cat "$tmp/out")"
	grep -q '^bypass: fake total: hits=5 misses=6$' "$tmp/out" || bad "--stats total: $(cat "$tmp/out")"
	[ -s "$tmp/path" ] && [ ! -e "$(cat "$tmp/path")" ] || bad "the stats file was not removed"
	# SIGTERM to bypass reaches the program, whose lines are still printed.
	cat >"$tmp/slow.sh" <<'SH'
trap 'echo "{\"module\": \"fake\", \"pid\": $$, \"terms\": 1}" >>"$BYPASS_STATS_FILE"; exit 5' TERM
echo ready >"$1"
while :; do sleep 0.05; done
SH
	"$bypass" run --batch --stats -- sh "$tmp/slow.sh" "$tmp/ready" >"$tmp/out" 2>&1 &
	bp=$!
	for _ in $(seq 200); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
	kill -TERM $bp
	wait $bp
	r=$?
	[ $r = 5 ] || bad "SIGTERM to bypass run --stats: exit $r, want the program's 5"
	grep -q 'fake pid [0-9]*: terms=1' "$tmp/out" || bad "SIGTERM: $(cat "$tmp/out")"
	# The batch preload's own line, where it writes one (BYPASS_STATS_FILE).
	expect 0 "$bypass" run --batch --stats -- sh -c 'echo hello >/dev/null'
	if grep -q '^bypass: batch pid' "$tmp/out"; then
		echo "batch preload counters: $(grep '^bypass: batch pid' "$tmp/out" | head -1)"
	else
		echo "note: libbypass-batch.so wrote no counters to BYPASS_STATS_FILE: $(cat "$tmp/out")"
	fi
else
	expect 1 "$bypass" run --batch -- true
	grep -q 'libbypass-batch.so' "$tmp/out" || bad "missing preload not named"
fi

if [ -f "$build/libbypass-pager.so" ]; then
	expect 0 "$bypass" run --pager 64M,swap="$tmp/swap" -- \
		sh -c 'echo "$BYPASS_PAGER_BUDGET $BYPASS_PAGER_SWAP $LD_PRELOAD"'
	grep -qE "^67108864 $tmp/swap /[^:]*/libbypass-pager\.so\$" "$tmp/out" ||
		bad "--pager environment: $(cat "$tmp/out")"
	expect 0 "$bypass" run --batch --pager 1G -- sh -c 'echo "$BYPASS_PAGER_BUDGET $LD_PRELOAD"'
	grep -qE "^1073741824 /[^:]*/libbypass-batch\.so:/[^:]*/libbypass-pager\.so\$" "$tmp/out" ||
		bad "--batch --pager environment: $(cat "$tmp/out")"
	# The real preload's counters: 80 MiB touched under a 16 MiB budget.
	if command -v python3 >/dev/null && "$bypass" doctor | grep -qE '^pager\.upcall +yes'; then
		expect 0 "$bypass" run --pager 16M,swap="$tmp" --stats -- \
			python3 -c 'x = bytearray(80 << 20); x[::4096] = b"a" * len(x[::4096]); print(sum(x[::4096]) == 97 * len(x[::4096]))'
		grep -q '^True$' "$tmp/out" || bad "the paged program's output: $(head -3 "$tmp/out")"
		grep -qE '^bypass: pager pid [0-9]+: faults_zero=[1-9][0-9]* .*evictions=[1-9]' "$tmp/out" ||
			bad "no pager counters with faults and evictions: $(cat "$tmp/out")"
	else
		echo "note: the paged run skipped (no python3, or no pager upcall mode here)"
	fi
else
	expect 1 "$bypass" run --pager 64M -- true
	grep -q 'libbypass-pager.so, which is not built' "$tmp/out" ||
		bad "missing pager preload: $(cat "$tmp/out")"
fi

[ $fail -eq 0 ] && echo "PASS: core/cli-run"
exit $fail
