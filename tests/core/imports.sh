#!/usr/bin/env bash
# imports: the library makes its system calls through core/syscall.h, never
# through a libc function that a preload defines (docs/MODULES.md, "System
# calls: one layer").  Under LD_PRELOAD such a name resolves to the
# preload's wrapper, and the library would call into a preload: the pager's
# fault path into the batch preload's ioctl, ipc's fallback into its recv.
#
# The names come from the built preloads (nm -D --defined-only
# libbypass-*.so), not from a hand list; libc's syscall() is refused too
# (the layer's bp_syscallN replaces it).  Each object of libbypass
# (build/CMakeFiles/bypass_obj.dir/src/<dir>/<file>.c.o) must reference none
# of them, except:
#   - the malloc family, everywhere: the library allocates with the
#     process's allocator by design (core/syscall.h says why);
#   - the exceptions listed below, one name in one file each, with why; an
#     exception no longer needed fails the test until it is removed.
# Every directory is converted (issue 34: src/pager/tree.c was the last):
# there is no pending list any more.
# Before it looks at the library, the test plants an object that calls
# close() and syscall() from src/syslet/ and fails unless both are caught.
# ThreadSanitizer builds skip (their wrappers call libc on purpose).
set -u
build=${BYPASS_BUILD:-}
if [ -z "$build" ]; then
	echo "SKIP: BYPASS_BUILD unset (run through ctest)"
	exit 77
fi
if grep -q '^BYPASS_TSAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "SKIP: a ThreadSanitizer build: core/syscall.h calls libc there on purpose"
	exit 77
fi
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }

# Exceptions: "file name".  notify's interrupt handler runs the user's
# callback: installed through the process's sigaction, a preload that runs
# the program's handlers through a trampoline (batch's) runs it too.
exceptions=(
	"src/notify/interrupt.c sigaction"
)
malloc_family="malloc calloc realloc reallocarray free posix_memalign aligned_alloc
	memalign valloc pvalloc malloc_usable_size"

tmp=$(mktemp -d /tmp/bypass-imports.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

preloads=$(ls "$build"/libbypass-*.so 2>/dev/null)
if [ -z "$preloads" ]; then
	echo "SKIP: no preload built here (make MODULES=...): no name to refuse"
	exit 77
fi
nm -D --defined-only $preloads | awk 'NF == 3 && $2 ~ /^[TWi]$/ { print $3 }' |
	sed 's/@.*//' | grep -vE '^(bypass_|bp_)' | sort -u > "$tmp/defined"
tr -s ' \t\n' '\n' <<<"$malloc_family" | grep . | sort -u > "$tmp/malloc"
{ comm -23 "$tmp/defined" "$tmp/malloc"; echo syscall; } | sort -u > "$tmp/refused"
nrefused=$(wc -l < "$tmp/refused")
if [ "$nrefused" -lt 20 ] || ! grep -qx ioctl "$tmp/refused"; then
	echo "FAIL: the preloads ($preloads) define only $nrefused names to refuse, ioctl not among them: nm's output changed?"
	exit 1
fi

# The refused names an object references, one a line.
refs() { nm -u "$1" | awk '{ print $2 }' | sed 's/@.*//' | sort -u | comm -12 - "$tmp/refused"; }

fail=0
bad() { echo "FAIL: $*"; fail=1; }
declare -A exception_used

# check OBJECT REL: FAIL lines for what REL (src/<dir>/<file>.c) may not call.
check() {
	local obj=$1 rel=$2 name e
	for name in $(refs "$obj"); do
		for e in "${exceptions[@]}"; do
			if [ "$e" = "$rel $name" ]; then
				exception_used[$e]=1
				continue 2
			fi
		done
		if [ "$name" = syscall ]; then
			echo "FAIL: $rel calls libc's syscall(): use core/syscall.h (bp_syscallN, or a bp_sys_ wrapper)"
		else
			echo "FAIL: $rel calls $name, which a preload defines: use core/syscall.h (bp_sys_$name)"
		fi
	done
}

# The check must be able to fail: a planted call in a converted directory.
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
cc=${cc:-cc}
cat > "$tmp/planted.c" <<'EOF'
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>
int bp_planted(int fd)
{
	return close(fd) + (int)syscall(SYS_getpid);
}
EOF
if ! "$cc" -c -O2 -o "$tmp/planted.c.o" "$tmp/planted.c"; then
	echo "FAIL: cannot compile the planted object with $cc"
	exit 1
fi
converted=src/syslet
planted=$(check "$tmp/planted.c.o" "$converted/planted.c")
grep -q 'planted.c calls close,' <<<"$planted" &&
	grep -q "planted.c calls libc's syscall()" <<<"$planted" ||
	bad "a planted close() and syscall() in src/syslet/ were not caught: the check cannot fail (${planted:-nothing said})"

# The library's objects (the loop runs in this shell: check's marks stay).
objdir=$build/CMakeFiles/bypass_obj.dir
nobj=0
while IFS= read -r obj; do
	rel=${obj#"$objdir"/}
	nobj=$((nobj + 1))
	check "$obj" "${rel%.o}"
done < <(find "$objdir/src" -name '*.c.o' 2>/dev/null | sort) > "$tmp/out"
[ "$nobj" -gt 0 ] || bad "no object of libbypass under $objdir/src: the build tree's layout changed (fix this test)"
if [ -s "$tmp/out" ]; then
	cat "$tmp/out"
	fail=1
fi
for e in "${exceptions[@]}"; do
	[ -f "$objdir/${e% *}.o" ] || continue
	[ -n "${exception_used[$e]+x}" ] || bad "the exception \"$e\" is no longer needed: remove it"
done

[ $fail -eq 0 ] && echo "PASS: $nobj objects of libbypass call none of the $nrefused names the preloads define (the malloc family aside) or syscall(), outside ${#exceptions[@]} exception(s); a planted call is caught"
exit $fail
