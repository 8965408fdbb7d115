#!/usr/bin/env bash
# make install into a temporary prefix gives headers, libraries, man pages
# (sections 1, 3 and 7), the bypass command (which finds the installed
# preloads and bypass-bench from bin/) and a bypass.pc that works from where
# it lies: a program built with `pkg-config --cflags --libs bypass` (shared
# and static) runs.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
for tool in cmake pkg-config cc; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing"; exit 77; }
done
if grep -qE '^BYPASS_(SANITIZE|TSAN):BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "SKIP: a sanitizer build installs libraries that need the sanitizer's runtime"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "install"; }
pc=$(find "$tmp/prefix" -name bypass.pc | head -1)
[ -n "$pc" ] || fail "no bypass.pc installed"
for h in bypass core notify batch ipc pager; do
	[ -f "$tmp/prefix/include/bypass/$h.h" ] || fail "header $h.h not installed"
done
man=$(find "$tmp/prefix" -path '*man3/bypass_notify_ring.3' | head -1)
[ -n "$man" ] || fail "man pages not installed"
for page in man1/bypass.1 man7/bypass.7; do
	[ -n "$(find "$tmp/prefix" -path "*$page")" ] || fail "$page not installed"
done

# The command, and the preloads it finds from the install's bin/.
cmd=$tmp/prefix/bin/bypass
[ -x "$cmd" ] || fail "bin/bypass not installed"
"$cmd" --version | grep -q '^bypass [0-9]' || fail "installed bypass --version"
batch_so=$(find "$tmp/prefix" -name libbypass-batch.so | head -1)
if [ -n "$batch_so" ]; then
	out=$("$cmd" run --batch -- sh -c 'echo "$LD_PRELOAD"') || fail "installed bypass run"
	[ "$out" = "$(cd "$(dirname "$batch_so")" && pwd -P)/libbypass-batch.so" ] ||
		fail "installed bypass run preloads '$out', not the installed $batch_so"
fi
[ -x "$tmp/prefix/bin/bypass-bench" ] && { "$cmd" bench --help >/dev/null 2>&1 ||
	fail "installed bypass bench"; }

cat >"$tmp/use.c" <<'C'
#include <bypass/bypass.h>
#include <stdio.h>
int main(void)
{
#ifdef USE_NOTIFY
	bypass_doorbell *d;
	if (bypass_notify_create(NULL, &d))
		return 1;
	bypass_notify_ring(d);
	int n = bypass_notify_try(d);
	bypass_notify_destroy(d);
#else
	int n = 1; /* a build without the notify module (make MODULES=...) */
#endif
	printf("%d %s\n", n, bypass_version());
	return n == 1 ? 0 : 1;
}
C
export PKG_CONFIG_PATH=$(dirname "$pc")
# The doorbells where the notify module is built (make MODULES= may leave it out).
notify=
nm -D --defined-only "$(pkg-config --variable=libdir bypass)/libbypass.so" 2>/dev/null |
	grep -qw bypass_notify_create && notify=-DUSE_NOTIFY
cc $notify "$tmp/use.c" $(pkg-config --cflags --libs bypass) -o "$tmp/use-shared" || fail "shared link"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir bypass) "$tmp/use-shared" || fail "shared run"
cc $notify "$tmp/use.c" -static $(pkg-config --static --cflags --libs bypass) -o "$tmp/use-static" 2>"$tmp/log" ||
	{ cat "$tmp/log"; fail "static link"; }
"$tmp/use-static" || fail "static run"
echo "PASS: core/install"
