#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The crates build with no clang and no libclang on the machine (issue 36):
# in a private mount namespace, every libclang*.so* file becomes /dev/null
# and every /usr/lib/llvm-* directory an empty tmpfs (clang, llvm-config
# and the libraries they hold go with it), then
#   1. bindgen is shown unable to load libclang there (the maintainer
#      command bypass-sys-gen, built beforehand, must fail), and
#   2. bypass-sys and bypass build from scratch (a target directory of
#      their own) and bypass-sys's tests pass: the shipped bindings are all
#      they need, and no bindgen is in their dependency graph.
# Called by rust/ci.sh (as root, or where `unshare -r` works) with
# CARGO_TARGET_DIR holding a built bypass-sys-gen; the host is untouched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
gen=$CARGO_TARGET_DIR/debug/bypass-sys-gen

if [ "${1:-}" != --inside ]; then
	[ -x "$gen" ] || { echo "no-clang: $gen not built (cargo build -p bypass-sys-gen)" >&2; exit 1; }
	if [ "$(id -u)" -eq 0 ]; then
		exec unshare --mount --propagation private "$0" --inside
	elif unshare -r -m true 2>/dev/null; then
		exec unshare -r -m --propagation private "$0" --inside
	fi
	echo "no-clang: SKIP: neither root nor an unprivileged user namespace here: cannot hide libclang"
	exit 0
fi

# ---- inside the namespace
hidden=0
while IFS= read -r f; do
	mount --bind /dev/null "$f"
	hidden=$((hidden + 1))
done < <(find /usr/lib /usr/local/lib /opt -xdev -name 'libclang*.so*' -type f 2>/dev/null)
for d in /usr/lib/llvm-*; do
	[ -d "$d" ] && mount -t tmpfs -o size=1m,ro none "$d" && hidden=$((hidden + 1))
done
echo "no-clang: hid $hidden libclang files and llvm directories"
unset LIBCLANG_PATH LLVM_CONFIG_PATH CLANG_PATH
if command -v clang >/dev/null && clang --version >/dev/null 2>&1; then
	echo "no-clang: FAIL: clang still runs: $(command -v clang)" >&2
	exit 1
fi
echo "no-clang: clang does not run here"

# 1. bindgen really cannot find libclang here.
if "$gen" --check >"$CARGO_TARGET_DIR/no-clang-gen.log" 2>&1; then
	echo "no-clang: FAIL: bindgen still found a libclang" >&2
	cat "$CARGO_TARGET_DIR/no-clang-gen.log" >&2
	exit 1
fi
echo "no-clang: bindgen fails as it must: $(grep -m1 -iE 'libclang|clang' "$CARGO_TARGET_DIR/no-clang-gen.log" || tail -1 "$CARGO_TARGET_DIR/no-clang-gen.log")"

# 2. The crates build and bypass-sys's tests pass without it.
if cargo tree --locked -p bypass -e normal,build --prefix none | grep -qE '^(bindgen|clang-sys) '; then
	echo "no-clang: FAIL: bindgen or clang-sys is still a dependency of bypass" >&2
	exit 1
fi
export CARGO_TARGET_DIR=$CARGO_TARGET_DIR-noclang
rm -rf "$CARGO_TARGET_DIR"
cargo build --locked -p bypass-sys -p bypass
cargo test --locked -p bypass-sys
rm -rf "$CARGO_TARGET_DIR"
echo "no-clang: bypass-sys and bypass built, bypass-sys's tests passed, with no libclang"
