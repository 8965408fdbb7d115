#!/usr/bin/env bash
# The ABI: libbypass.so exports exactly the functions declared in
# include/bypass/*.h (libbypass.map), and libbypass.a defines no global
# symbol outside the two prefixes: bypass_ (declared in a public header) and
# bp_ (internals); the preloads export none of either.  A program that
# defines names bypass used to export (spin_lock, check_config, open_swap,
# ...) links against libbypass.a with every member pulled in.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v nm >/dev/null || { echo "SKIP: nm missing"; exit 77; }
so=$build/libbypass.so
ar=$build/libbypass.a
[ -f "$so" ] && [ -f "$ar" ] || { echo "FAIL: $so or $ar not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Every bypass_ name a public header declares as a function.
grep -hoE '\bbypass_[a-z0-9_]+[[:space:]]*\(' "$src"/include/bypass/*.h |
	tr -d '( \t' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "FAIL: no public declarations found"; exit 1; }
# Sanitizer builds add their own instrumentation symbols.
san='^(__asan|__odr_asan|__tsan|__ubsan|__sanitizer|__sancov)'

# 1. The shared library: defined dynamic symbols (not the version node).
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' |
	sort -u >"$tmp/so"
[ -s "$tmp/so" ] || bad "libbypass.so exports nothing"
while read -r s; do
	grep -qxF "$s" "$tmp/declared" || bad "libbypass.so exports $s, not declared in include/bypass/*.h"
done <"$tmp/so"
# ... and every public function it builds is exported with the version node.
nm -D --defined-only "$so" | grep -q ' A BYPASS_0' ||
	bad "libbypass.so has no BYPASS_ version node (libbypass.map not applied)"
if grep -q '^BYPASS_MODULES:STRING=all$' "$build/CMakeCache.txt" 2>/dev/null; then
	grep -hE 'BYPASS_API' "$src"/include/bypass/*.h |
		grep -oE '\bbypass_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' |
		sort -u >"$tmp/api"
	while read -r f; do
		grep -qxF "$f" "$tmp/so" || bad "$f is declared BYPASS_API but libbypass.so does not export it"
	done <"$tmp/api"
fi

# 2. The static archive: global defined symbols of every member.
nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u >"$tmp/a"
[ -s "$tmp/a" ] || bad "libbypass.a defines nothing"
while read -r s; do
	case $s in
	bp_*) ;;
	bypass_*) grep -qxF "$s" "$tmp/declared" ||
		bad "libbypass.a defines $s, not declared in include/bypass/*.h" ;;
	*) [[ $s =~ $san ]] ||
		bad "libbypass.a defines $s: internal symbols must be named bp_*" ;;
	esac
done <"$tmp/a"

# 3. The preloads export the calls they wrap and nothing of the library: a
#    bypass_ or bp_ name there would interpose on the libbypass.so of a
#    program that links the library itself.
for pre in "$build"/libbypass-*.so; do
	[ -f "$pre" ] || continue
	leak=$(nm -D --defined-only "$pre" | awk '{print $3}' | grep -E '^(bp_|bypass_)' | head -3)
	[ -z "$leak" ] || bad "$(basename "$pre") exports library symbols: $leak"
done

# 4. A program defining former internal names links against the whole archive.
if command -v cc >/dev/null && ! grep -qE '^BYPASS_(SANITIZE|TSAN):BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	cat >"$tmp/clash.c" <<'C'
#include <bypass/bypass.h>
#include <stdio.h>
#include <string.h>
/* Names libbypass.a defined before its internals were prefixed. */
int spin_lock(int *l) { return *l; }
int spin_unlock(int *l) { return *l; }
int check_config(const char *s) { return (int)strlen(s); }
int open_swap(const char *p) { return p ? 1 : 0; }
int tab_find(int x) { return x; }
int lru_add(int x) { return x; }
int db_register(int x) { return x; }
int bt_submit(int x) { return x; }
int ipc_publish(int x) { return x; }
int uffd_setup(int x) { return x; }
int main(void)
{
	int l = 3;
	printf("%s %d\n", bypass_version(),
	       spin_lock(&l) + spin_unlock(&l) + check_config("ab") + open_swap("x") +
	       tab_find(1) + lru_add(1) + db_register(1) + bt_submit(1) +
	       ipc_publish(1) + uffd_setup(1));
	return 0;
}
C
	uring=$(pkg-config --libs liburing 2>/dev/null || echo -luring)
	if ! cc -I"$src/include" "$tmp/clash.c" -o "$tmp/clash" \
		-Wl,--whole-archive "$ar" -Wl,--no-whole-archive $uring -lpthread -ldl \
		>"$tmp/log" 2>&1; then
		cat "$tmp/log"
		bad "a program defining spin_lock, check_config, open_swap, ... does not link against libbypass.a"
	elif ! "$tmp/clash" >/dev/null; then
		bad "the program linked against libbypass.a does not run"
	fi
else
	echo "note: link check skipped (no cc, or a sanitizer build)"
fi

[ $fail -eq 0 ] && echo "PASS: libbypass.so exports $(wc -l <"$tmp/so") public functions and nothing else; libbypass.a defines $(wc -l <"$tmp/a") globals, all bypass_ (public) or bp_"
exit $fail
