#!/usr/bin/env bash
# The generated files that ship are not stale (issue 36): a function added
# to a public header and libbypass.map must reach
# - debian/libbypass0.symbols (the Debian package's ABI, from libbypass.map:
#   `debian/gen-symbols`), and debian/changelog must name the version
#   CMakeLists.txt builds (make deb refuses otherwise);
# - rust/bypass-sys/src/bindings.rs (the Rust bindings shipped so that the
#   crates build without libclang: `cd rust && cargo run -p bypass-sys-gen`,
#   which needs libclang): every BYPASS_API function of include/bypass/*.h
#   has its declaration there.  (rust/ci.sh compares the whole file with
#   bindgen's output where libclang exists.)
# Fails with the command that regenerates what is stale.
set -u
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if [ -x "$src/debian/gen-symbols" ]; then
	"$src/debian/gen-symbols" --check || bad "debian/libbypass0.symbols is stale: run debian/gen-symbols"
	if command -v dpkg-parsechangelog >/dev/null; then
		want=$(sed -n 's/^project(bypass VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
		got=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
		[ "$want" = "$got" ] ||
			bad "debian/changelog is at $got, CMakeLists.txt at $want: add an entry (dch -v $want)"
	else
		echo "note: dpkg-parsechangelog missing (dpkg-dev): debian/changelog's version not checked"
	fi
else
	bad "debian/gen-symbols missing"
fi

bindings=$src/rust/bypass-sys/src/bindings.rs
if [ -f "$bindings" ]; then
	n=0
	missing=()
	while read -r name; do
		n=$((n + 1))
		grep -q "pub fn $name(" "$bindings" || missing+=("$name")
	done < <(grep -h '^BYPASS_API ' "$src"/include/bypass/*.h | sed 's/(.*//; s/.*[^A-Za-z0-9_]//')
	[ $n -gt 100 ] || bad "only $n BYPASS_API functions found in $src/include/bypass"
	[ ${#missing[@]} -eq 0 ] || bad "not in rust/bypass-sys/src/bindings.rs: ${missing[*]}: run \`cargo run -p bypass-sys-gen\` in rust/ (needs libclang)"
else
	bad "$bindings missing"
fi
[ $fail -eq 0 ] && echo "PASS: core/generated ($n functions bound, debian symbols current)"
exit $fail
