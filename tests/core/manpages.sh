#!/usr/bin/env bash
# Every public function (BYPASS_API, or static inline in a public header)
# has a man3 page that man can find: a page of its own or a .so link to an
# existing page that names it.
set -u
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
funcs=$(grep -hE 'BYPASS_API|static inline' "$src"/include/bypass/*.h |
	grep -oE '\bbypass_[a-z0-9_]+\(' | tr -d '(' | sort -u)
[ -n "$funcs" ] || { echo "FAIL: no public functions found"; exit 1; }
n=0
for f in $funcs; do
	n=$((n + 1))
	page="$src/man/$f.3"
	if [ ! -f "$page" ]; then
		echo "FAIL: $f has no man page (man/$f.3)"
		fail=1
		continue
	fi
	target=$(sed -n 's/^\.so man3\///p' "$page")
	if [ -n "$target" ]; then
		if [ ! -f "$src/man/$target" ]; then
			echo "FAIL: man/$f.3 links to missing $target"
			fail=1
		elif ! grep -q "\b$f\b" "$src/man/$target"; then
			echo "FAIL: man/$target does not document $f"
			fail=1
		fi
	fi
done
[ $fail -eq 0 ] && echo "PASS: $n public functions, each with a man page"
exit $fail
