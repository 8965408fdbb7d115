#!/usr/bin/env bash
# The module rules of docs/MODULES.md, checked:
#  1. src/<m>, preload/<m>, tests/<m> and bench/<m> include (with "...")
#     only their own module's files, core's, and files of their own directory
#     (preload/<m> also the preloads' scaffold, preload/common, which
#     includes only core's and its own);
#     src/core includes no module; public headers include only <bypass/...>
#     and system headers.  (cli/ and tests/core/cli-* check the command
#     against every module and may include any module's internal header.)
#  2. bypass.h includes every other public header.
#  3. Every tests/, bench/ and preload/ directory and every examples/<m>-*.c
#     names a module (a src/ directory); every module has a public header.
#  4. No stale reference: a path named in README.md, docs/*.md, man pages
#     and source comments exists (as written, or as <path>.c/.sh/.md/.3/.h
#     (a test's name), or as the prefix of a file: man/bypass_*;
#     bench/bypass-bench is a build output).
#  5. Every BYPASS_* environment variable the library, a preload or the
#     command reads is documented in bypass(7) (the process-wide contract),
#     and every one bypass(7) lists is read somewhere (none under "No longer
#     read" is).  The library reads no environment behind an explicit
#     option: in src/ only core/env.c (the parsing helpers the preloads and
#     the command use) and core/log.c (BYPASS_LOG) call getenv or them.
# Every public function has a man page: manpages.sh; symbols: symbols.sh;
# no libc name a preload defines is called from src/: imports.sh.
set -u
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }

modules=$(cd src && for d in */; do d=${d%/}; [ "$d" != core ] && echo "$d"; done)
is_module() { [ -d "src/$1" ] && [ "$1" != core ]; }

# 1. includes
check_includes() { # dir module
	local dir=$1 m=$2 f inc top
	for f in $(find "$dir" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) | sort); do
		case $f in tests/core/cli-*) continue ;; esac
		while IFS= read -r inc; do
			case $inc in
			*/*) top=${inc%%/*}
			     if [ "$top" = .. ]; then
				bad "$f: #include \"$inc\" climbs out of its directory"
			     elif [ "$m" = core ] && [ "$top" != core ] && [[ $dir == src/core ]]; then
				bad "$f: core includes \"$inc\" (core never uses a module)"
			     elif [ "$top" = common ] && [[ $dir == preload/* ]]; then
				: # the preloads' scaffold
			     elif [ "$top" != core ] && [ "$top" != "$m" ]; then
				bad "$f: #include \"$inc\": module $m reaches into $top (move the shared part to core)"
			     fi ;;
			*) [ -f "$dir/$inc" ] || [ -f "tests/$inc" ] || [ -f "bench/$inc" ] ||
				bad "$f: #include \"$inc\" is not a file of its directory" ;;
			esac
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done
}
check_includes src/core core
# ... nor names one in its code (comments and strings aside): modules
# register with core, and what one module alone uses lives in that module.
for f in src/core/*.[ch]; do
	perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(?:[^"\\\n]|\\.)*"}{""}g' "$f" |
		grep -noiE "\b[a-z_0-9]*($(echo $modules | tr ' ' '|'))[a-z_0-9]*\b" |
		while IFS=: read -r line word; do
			echo "FAIL: $f: \"$word\" names a module in core's code (core never names a module)"
		done
done | grep . && fail=1
for m in $modules; do
	for d in src/$m preload/$m tests/$m bench/$m; do
		[ -d "$d" ] && check_includes "$d" "$m"
	done
done
check_includes tests/core core
check_includes preload/common common
for h in include/bypass/*.h; do
	grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$h" >/dev/null &&
		bad "$h: a public header includes a project file with \"...\""
	grep -oE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<bypass/[^>]+>' "$h" |
		sed 's/.*<\(.*\)>/\1/' | while read -r p; do
		[ -f "include/$p" ] || echo "FAIL: $h includes <$p>, not a public header"
	done | grep . && fail=1
done

# 2. the umbrella header
for h in include/bypass/*.h; do
	b=$(basename "$h")
	[ "$b" = bypass.h ] && continue
	grep -qE "^#include <bypass/$b>" include/bypass/bypass.h ||
		bad "include/bypass/bypass.h does not include <bypass/$b>"
done

# 3. directories name modules
for m in $modules; do
	[ -f "include/bypass/$m.h" ] || bad "module $m has no public header include/bypass/$m.h"
done
for d in tests/*/ bench/*/ preload/*/; do
	[ -d "$d" ] || continue
	n=$(basename "$d")
	[ "${d%%/*}" = tests ] && [ "$n" = core ] && continue
	[ "$d" = preload/common/ ] && continue # the preloads' scaffold
	is_module "$n" || bad "$d does not name a module (no src/$n)"
done
for e in examples/*.c; do
	[ -f "$e" ] || continue
	n=$(basename "$e")
	is_module "${n%%-*}" || bad "$e: examples are named <module>-<name>.c"
done

# 4. stale references
ok_path() {
	local p=$1
	[ -e "$p" ] && return 0
	for x in .c .sh .md .3 .h; do [ -e "$p$x" ] && return 0; done
	compgen -G "$p*" >/dev/null && return 0 # a prefix: man/bypass_, tests/core/cli-*
	case $p in bench/bypass-bench) return 0 ;; esac
	return 1
}
files=$(git ls-files README.md 'docs/*.md' 'man/*' 'src/*' 'include/*' 'tests/*' \
	'bench/*' 'preload/*' 'cli/*' 'examples/*' 'tools/*' CMakeLists.txt Makefile \
	2>/dev/null | grep -v '^docs/results/')
[ -n "$files" ] || files=$(find README.md docs man src include tests bench preload cli \
	examples tools -type f 2>/dev/null | grep -v '^docs/results/')
# file:path pairs in one pass, each distinct path checked once
n=0
declare -A seen
while IFS= read -r fp; do
	f=${fp%%:*}
	p=${fp#*:}
	p=${p#[][ \`\"(:,*]}
	case $p in *[\<\>{}\$]*) continue ;; esac
	n=$((n + 1))
	if [ -z "${seen[$p]+x}" ]; then
		ok_path "$p" && seen[$p]=1 || seen[$p]=0
	fi
	[ "${seen[$p]}" = 1 ] || bad "$f names $p, which does not exist"
done < <(grep -oHE '(^|[][ `"(:,*])(src|docs|include|tests|bench|preload|examples|tools|man|cli)/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' $files 2>/dev/null | sort -u)

# 5. environment variables
srcs=$(git ls-files 'src/*.c' 'src/*.h' 'preload/*.c' 'preload/*.h' 'cli/*.c' 'cli/*.h' 2>/dev/null)
[ -n "$srcs" ] || srcs=$(find src preload cli -name '*.[ch]')
nenv=0
for v in $(grep -hoE '"BYPASS_[A-Z0-9_]+"' $srcs | tr -d '"' | sort -u); do
	nenv=$((nenv + 1))
	grep -qw "$v" man/bypass.7 || bad "$v is read (in $(grep -lw "\"$v\"" $srcs | head -1)) but not documented in man/bypass.7"
done
# The names bypass(7)'s ENVIRONMENT section lists (the tag line after each
# .TP), and those it says are no longer read.
envsec=$(awk '/^\.SH ENVIRONMENT/ {f = 1; next} /^\.SH/ {f = 0} f' man/bypass.7)
listed=$(awk '/^\.SS No longer read/ {exit} /^\.TP/ {getline; print}' <<<"$envsec" |
	grep -oE 'BYPASS_[A-Z0-9_]+' | sort -u)
gone=$(awk '/^\.SS No longer read/ {f = 1; next} /^\.S[SH]/ {f = 0} f' <<<"$envsec" |
	grep -oE 'BYPASS_[A-Z0-9_]+' | sort -u)
[ -n "$listed" ] || bad "man/bypass.7 lists no environment variable (no .TP tags under ENVIRONMENT)"
for v in $listed; do
	grep -qw "\"$v\"" $srcs || bad "man/bypass.7 lists $v, which nothing in src/, preload/ or cli/ reads"
done
for v in $gone; do
	f=$(grep -lw "\"$v\"" $srcs | head -1)
	[ -z "$f" ] || bad "man/bypass.7 says $v is no longer read, but $f reads it"
done
# The library reads no environment: getenv and the parsing helpers only in
# core's env.c (their definitions) and log.c (BYPASS_LOG).  Pending: syslet
# reads its three defaults in the library (issue 18's syslet part; bypass(7)
# says so) -- remove it from this list when they move out.
env_pending='src/syslet/'
while IFS= read -r hit; do
	f=${hit%%:*}
	case $f in src/core/env.c | src/core/log.c | src/core/internal.h) continue ;; esac
	case $f in "$env_pending"*) continue ;; esac
	bad "$hit: the library reads the environment (only the preloads and the command do: pass an option)"
done < <(grep -nE '\b(getenv|secure_getenv|bp_env_u64|bp_env_bool)[[:space:]]*\(' \
	$(grep -E '^src/' <<<"$srcs" | tr '\n' ' ') /dev/null | grep -v '^/dev/null')

[ $fail -eq 0 ] && echo "PASS: the module rules hold ($nenv environment variables documented; $(echo $modules | wc -w) modules; $n path references, none stale)"
exit $fail
