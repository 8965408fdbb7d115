#!/usr/bin/env bash
# The ABI: libbypass.map lists every BYPASS_API function of
# include/bypass/*.h by name, once, in a version node, and nothing else;
# libbypass.so exports exactly those, each with its node's version, and
# libbypass.a defines no global
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

# 0. The version script, read as source (whatever MODULES built): every
#    function a public header declares BYPASS_API is listed in libbypass.map,
#    once; every name listed there is such a function.  A function that a
#    header adds without its line here would not be exported (and one listed
#    but declared nowhere is a typo or a leftover).
#    map_check <include dir> <map> <out prefix>: prints a FAIL line for each
#    fault, writes <out>.decl (declared names) and <out>.pairs ("node name").
map_check() {
	local inc=$1 map=$2 out=$3
	# Comments and "#define BYPASS_API" out; then each BYPASS_API
	# declaration's function name (a declaration may span lines).
	perl -0777 -ne 's{/\*.*?\*/}{}gs; s{^[ \t]*#[ \t]*define[ \t]+BYPASS_API\b.*$}{}mg;
		while (/\bBYPASS_API\b[^;{}]*?\b(bypass_\w+)\s*\(/g) { print "$1\n" }' \
		"$inc"/*.h | sort -u >"$out.decl"
	[ -s "$out.decl" ] || echo "FAIL: no BYPASS_API declarations found in $inc"
	# "<node> <name>" for every name in a node's global: list.
	perl -0777 -ne 's{/\*.*?\*/}{}gs; s{#[^\n]*}{}g;
		while (/([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*[\w.]*\s*;/gs) {
			my ($node, $body) = ($1, $2);
			$body =~ s/\blocal\s*:.*//s;
			$body =~ s/\bglobal\s*:\s*//;
			for my $n (split /\s*;\s*/, $body) {
				$n =~ s/^\s+|\s+$//g;
				print "$node $n\n" if length $n;
			}
		}' "$map" >"$out.pairs"
	awk '{print $2}' "$out.pairs" | sort >"$out.names"
	[ -s "$out.names" ] || echo "FAIL: $map lists no function"
	grep '[*?]' "$out.names" | while read -r n; do
		echo "FAIL: $map exports by pattern ($n): list each function by name"
	done
	uniq -d "$out.names" | while read -r n; do
		echo "FAIL: $map lists $n twice"
	done
	comm -23 "$out.decl" <(sort -u "$out.names") | while read -r n; do
		echo "FAIL: $n is declared BYPASS_API in include/bypass/ but $map does not list it (add it to the last version node)"
	done
	comm -13 "$out.decl" <(sort -u "$out.names") | grep -v '[*?]' | while read -r n; do
		echo "FAIL: $map lists $n, which no public header declares BYPASS_API"
	done
}
map=$src/libbypass.map
[ -f "$map" ] || { echo "FAIL: $map missing"; exit 1; }
map_check "$src/include/bypass" "$map" "$tmp/map" >"$tmp/map.fail"
[ -s "$tmp/map.fail" ] && { cat "$tmp/map.fail"; fail=1; }
# The check itself catches both faults: a planted declaration without its
# line in the map, and a planted line without its declaration.
mkdir "$tmp/inc"
cp "$src"/include/bypass/*.h "$tmp/inc/"
printf '%s\n' 'BYPASS_API int' 'bypass_planted_decl(int x);' >>"$tmp/inc/core.h"
sed 's/^\([[:space:]]*\)bypass_version;/&\n\1bypass_planted_line;/' "$map" >"$tmp/planted.map"
map_check "$tmp/inc" "$tmp/planted.map" "$tmp/planted" >"$tmp/planted.fail"
grep -q 'bypass_planted_decl is declared BYPASS_API .* does not list it' "$tmp/planted.fail" ||
	bad "symbols.sh's map check misses a BYPASS_API function the map lacks"
grep -q 'lists bypass_planted_line, which no public header declares' "$tmp/planted.fail" ||
	bad "symbols.sh's map check misses a map line no header declares"

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
# ... and every public function it builds is exported with the version node
# the map gives it.
nm -D --defined-only "$so" | grep -q ' A BYPASS_0' ||
	bad "libbypass.so has no BYPASS_ version node (libbypass.map not applied)"
# An old version kept beside the default (name@NODE, one @: bound by
# .symver in the sources, libbypass.map's header) is allowed when the
# sources bind it and the name's default is in the map's node.
grep -ho '\.symver[ \t]*[A-Za-z0-9_]*,[ \t]*bypass_[A-Za-z0-9_]*@BYPASS_[0-9.]*"' \
	"$src"/src/*/*.c 2>/dev/null | sed 's/.*,[ \t]*//; s/"$//' | sort -u >"$tmp/kept"
nm -D --defined-only "$so" | awk '$2 != "A" && $3 ~ /^bypass_/ {print $3}' >"$tmp/sover"
sed -n 's/^\([^@]*\)@@\(.*\)$/\2 \1/p' "$tmp/sover" | while read -r ver name; do
	want=$(awk -v n="$name" '$2 == n {print $1; exit}' "$tmp/map.pairs")
	[ -z "$want" ] || [ "$ver" = "$want" ] ||
		echo "FAIL: libbypass.so exports $name@@$ver, libbypass.map puts it in $want"
done | grep . && fail=1
sed -n 's/^\([^@]*\)@\([^@].*\)$/\2 \1/p' "$tmp/sover" | while read -r ver name; do
	want=$(awk -v n="$name" '$2 == n {print $1; exit}' "$tmp/map.pairs")
	grep -qxF "$name@$ver" "$tmp/kept" && [ "$ver" != "$want" ] &&
		grep -qxF "$name@@$want" "$tmp/sover" ||
		echo "FAIL: libbypass.so exports $name@$ver (not its default, libbypass.map's $want), bound by no .symver in src/"
done | grep . && fail=1
if grep -q '^BYPASS_MODULES:STRING=all$' "$build/CMakeCache.txt" 2>/dev/null; then
	grep -hE 'BYPASS_API' "$src"/include/bypass/*.h |
		grep -oE '\bbypass_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' |
		sort -u >"$tmp/api"
	while read -r f; do
		grep -qxF "$f" "$tmp/so" || bad "$f is declared BYPASS_API but libbypass.so does not export it"
	done <"$tmp/api"
fi

# 2. The static archive: global defined symbols of every member.
nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 {print $3}' |
	sed 's/^\(bypass_[A-Za-z0-9_]*\)@BYPASS_[0-9.]*$/\1/' | sort -u >"$tmp/a"
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
	uring="$uring $(pkg-config --libs liblz4 2>/dev/null)" # the pager's tier (issue 35)
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

[ $fail -eq 0 ] && echo "PASS: libbypass.map lists the $(wc -l <"$tmp/map.decl") BYPASS_API functions by name in version nodes; libbypass.so exports $(wc -l <"$tmp/so") public functions and nothing else; libbypass.a defines $(wc -l <"$tmp/a") globals, all bypass_ (public) or bp_"
exit $fail
