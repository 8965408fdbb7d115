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
# them.  bindgen needs libclang at build time: Debian's clang (installed
# by tools/deps.sh for `make clang`) brings libclang1.
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

step "build (all targets)"
cargo build --locked --workspace --all-targets
step "tests"
cargo test --locked --workspace
step "clippy, warnings denied"
cargo clippy --locked --workspace --all-targets -- -D warnings
step "rustdoc, warnings denied"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps
step "ping-pong benchmark, smoke size"
lib=()
[ -e "$BYPASS_BUILD/examples/ipc-kv.so" ] && lib=(--lib "$BYPASS_BUILD/examples/ipc-kv.so")
cargo run --locked -q -p bypass-pingpong -- --smoke --cross "${lib[@]}" \
	--json "$CARGO_TARGET_DIR/pingpong-smoke.json"
step "done"
