#!/usr/bin/env bash
# bench-params: every experiment knob bypass-bench reads (bench_param(c,
# "NAME", ...) and bench_count(c, "NAME", ...) in bench/) is named in
# docs/BENCHMARKS.in.md's --param table (a row "| module | ... |" whose cell
# has `NAME=` or `NAME` as written), and every name the table gives as
# `NAME=...` is read somewhere in bench/.  Twenty knobs had drifted out of
# the table before this check (pager's readahead, batch and spin, the fork
# and tier sizes, ipc's lib counts, syslet's whole row).
set -u
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
doc=${BENCH_PARAMS_DOC:-$src/docs/BENCHMARKS.in.md}
cd "$src" || exit 1
[ -d bench ] && [ -f "$doc" ] || { echo "SKIP: bench/ or $doc missing"; exit 77; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# the knobs read: a string literal right after the context argument
read_names=$(grep -rhoE 'bench_(param|count)[a-z_0-9]*\([^,()]+, *"[a-z_0-9]+"' bench/ |
	sed -E 's/.*"([a-z_0-9]+)"$/\1/' | sort -u)
[ -n "$read_names" ] || bad "no bench_param/bench_count call found in bench/"
# the table: the lines between "| module | parameters |" and the next blank line
table=$(awk '/^\| module \| parameters \|/{on=1; next} on && /^$/{exit} on' "$doc")
[ -n "$table" ] || bad "no '| module | parameters |' table in $doc"
n=0
for p in $read_names; do
	n=$((n + 1))
	printf '%s\n' "$table" | grep -qE "\`$p(=|\`)" ||
		bad "bench/ reads --param $p ($(grep -rlE "\"$p\"" bench/ | tr '\n' ' ')), the table in $doc does not name it"
done
# the other way: a `NAME=` in the table that nothing reads (a removed knob)
for p in $(printf '%s\n' "$table" | grep -oE '`[a-z_0-9]+=' | tr -d '`=' | sort -u); do
	printf '%s\n' "$read_names" | grep -qx "$p" ||
		bad "the table in $doc names --param $p=, which nothing in bench/ reads"
done
[ $fail -eq 0 ] && echo "PASS: core/bench-params ($n knobs read, every one in the table)"
exit $fail
