#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI for the Rust crates (issue 19), called by .ci/run after the C tests,
# with the C build directory (build/, or $BYPASS_BUILD) already built:
# build, test, clippy and rustdoc with warnings denied, and the ping-pong
# benchmark at smoke size (it must run; no figure is judged here).
#
# A Rust toolchain is installed only if the machine has no cargo of Rust
# 1.77 or later: Debian's cargo-web/rustc-web/rust-web-clippy (Debian 12
# ships Rust 1.85, 1.96 with its security updates; its plain `cargo` is
# 1.65, too old), or rustup's stable toolchain where apt cannot install
# them.
#
# The crates need no libclang: bypass-sys ships its bindings.  Where
# libclang is found (Debian's clang, installed by tools/deps.sh for `make
# clang`), the shipped files are compared with what bindgen makes of the
# headers now (bypass-sys-gen --check: stale bindings fail CI); then
# `cargo package` of both crates, and no-clang.sh builds them again with
# every libclang hidden (issue 36).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export BYPASS_BUILD=${BYPASS_BUILD:-$here/../build}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
export CARGO_TERM_COLOR=never
start=$(date +%s)
step() { echo; echo "=== rust: $* ($(( $(date +%s) - start ))s)"; }

rust_ok() { # cargo and rustc of at least 1.77, and clippy
	command -v cargo >/dev/null 2>&1 || return 1
	local v
	v=$(rustc --version 2>/dev/null | awk '{print $2}')
	[ -n "$v" ] || return 1
	[ "$(printf '%s\n1.77.0\n' "${v%%-*}" | sort -V | head -1)" = 1.77.0 ] || return 1
	cargo clippy --version >/dev/null 2>&1
}

if ! rust_ok; then
	[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! rust_ok; then
	step "installing a Rust toolchain"
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			cargo-web rustc-web rust-web-clippy >/dev/null && rust_ok; then
		echo "rust: Debian's $(rustc --version)"
	else
		echo "rust: Debian's Rust packages unavailable: rustup's stable toolchain"
		curl -sSf https://sh.rustup.rs |
			sh -s -- -y -q --profile minimal --component clippy --no-modify-path
		export PATH="$HOME/.cargo/bin:$PATH"
	fi
fi
rust_ok || { echo "rust: no usable toolchain" >&2; exit 1; }
echo "rust: $(cargo --version), $(rustc --version)"
[ -e "$BYPASS_BUILD/libbypass.so" ] || { echo "rust: $BYPASS_BUILD/libbypass.so missing: build the C library first" >&2; exit 1; }

have_libclang() {
	[ -n "${LIBCLANG_PATH:-}" ] && return 0
	compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null ||
		compgen -G '/usr/lib/*/libclang*.so*' >/dev/null
}

step "build (all targets)"
cargo build --locked --workspace --all-targets
step "tests"
cargo test --locked --workspace
step "clippy, warnings denied"
cargo clippy --locked --workspace --all-targets -- -D warnings
step "rustdoc, warnings denied"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps
step "shipped bindings against the headers (bypass-sys-gen --check)"
if have_libclang; then
	cargo run --locked -q -p bypass-sys-gen -- --check
else
	echo "rust: no libclang here: the shipped bindings are checked by bypass-sys's tests only"
fi
step "cargo package (bypass-sys, bypass)"
# The packaged crates build from their tarballs against this tree's
# headers and library.  cargo 1.90 and later package both together (bypass
# is verified against the bypass-sys just packaged); an older cargo
# cannot verify bypass before bypass-sys is on crates.io.
export BYPASS_INCLUDE_DIR=${BYPASS_INCLUDE_DIR:-$here/../include} BYPASS_LIB_DIR=${BYPASS_LIB_DIR:-$BYPASS_BUILD}
cv=$(cargo --version | awk '{print $2}')
# cargo unpacks the just-packaged bypass-sys into a registry directory
# named after this tree's path and keeps it, and reuses what it compiled
# from there (a registry's sources are taken as immutable): a second run
# on the same tree would verify bypass against the first run's bindings
# (same version).  That unpacked copy of our own crate goes, and the
# packages are verified in a target directory of their own, made afresh.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/bypass-sys-[0-9]*
main_target=$CARGO_TARGET_DIR
export CARGO_TARGET_DIR=$main_target/verify
rm -rf "$CARGO_TARGET_DIR"
if [ "$(printf '%s\n1.90.0\n' "${cv%%-*}" | sort -V | head -1)" = 1.90.0 ]; then
	cargo package --locked --allow-dirty -p bypass-sys -p bypass
else
	cargo package --locked --allow-dirty -p bypass-sys
	echo "rust: cargo $cv verifies bypass only once bypass-sys is published: packaged unverified"
	cargo package --locked --allow-dirty --no-verify -p bypass
fi
unset BYPASS_INCLUDE_DIR BYPASS_LIB_DIR
export CARGO_TARGET_DIR=$main_target
step "build with no clang and no libclang (no-clang.sh)"
cargo build --locked -q -p bypass-sys-gen
"$here/no-clang.sh"
step "ping-pong benchmark, smoke size"
lib=()
[ -e "$BYPASS_BUILD/examples/ipc-kv.so" ] && lib=(--lib "$BYPASS_BUILD/examples/ipc-kv.so")
cargo run --locked -q -p bypass-pingpong -- --smoke --cross "${lib[@]}" \
	--json "$CARGO_TARGET_DIR/pingpong-smoke.json"
step "done"
