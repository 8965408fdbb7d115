#!/usr/bin/env bash
# `bypass bench` runs bypass-bench: the same help text, its arguments
# passed through (a bad one is the driver's own error), a missing driver a
# clear message and exit 1.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
bypass=$build/bypass
[ -x "$bypass" ] || { echo "FAIL: $bypass not built"; exit 1; }
[ -x "$build/bench/bypass-bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$build/bench/bypass-bench" --help >"$tmp/direct" 2>&1
d=$?
"$bypass" bench --help >"$tmp/via" 2>&1
v=$?
[ $d = $v ] || bad "bypass bench --help exited $v, bypass-bench --help $d"
cmp -s "$tmp/direct" "$tmp/via" || bad "bypass bench --help differs from bypass-bench --help"
"$build/bench/bypass-bench" no-such-module >"$tmp/direct" 2>&1
d=$?
"$bypass" bench no-such-module >"$tmp/via" 2>&1
v=$?
[ $d = $v ] && [ $v != 0 ] || bad "an unknown module: bypass bench exited $v, bypass-bench $d"

# Without the driver beside it: a copy of the command in an empty directory.
mkdir "$tmp/alone"
cp "$bypass" "$tmp/alone/bypass"
"$tmp/alone/bypass" bench all >"$tmp/out" 2>&1
r=$?
[ $r = 1 ] && grep -q 'bypass-bench is not built or installed' "$tmp/out" ||
	bad "no driver: exit $r, $(cat "$tmp/out")"
[ $fail -eq 0 ] && echo "PASS: core/cli-bench"
exit $fail
