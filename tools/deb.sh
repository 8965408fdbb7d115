#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deb: the Debian packages libbypass0, libbypass-dev and bypass-tools,
# built by Debian's own tooling (dpkg-buildpackage with debhelper, from
# debian/) and checked by lintian.
#
#   tools/deb.sh [OUTDIR]     default OUTDIR: build-deb
#
# The source tree is left as it is: the files git tracks (and untracked ones
# it does not ignore; without git, the tree less its build directories) are
# copied to OUTDIR/src, dpkg-buildpackage runs there, and the .deb, .buildinfo
# and .changes files land in OUTDIR, with the source package (.dsc, .tar.xz).  It fails when debian/libbypass0.symbols
# is stale against libbypass.map (debian/gen-symbols), when
# debian/changelog's version is not CMakeLists.txt's, when the package
# build fails, or when lintian reports an error or a warning.
# Needs: dpkg-dev, debhelper, lintian and the build dependencies of
# debian/control (tools/deps.sh installs them).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${1:-build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for tool in dpkg-buildpackage dh lintian; do
	command -v $tool >/dev/null ||
		{ echo "deb: $tool missing (tools/deps.sh installs dpkg-dev, debhelper and lintian)" >&2; exit 1; }
done
debian/gen-symbols --check
cmake_version=$(sed -n 's/^project(bypass VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_version=$(dpkg-parsechangelog -S Version)
[ "$cmake_version" = "$deb_version" ] || {
	echo "deb: debian/changelog says $deb_version, CMakeLists.txt $cmake_version: add a changelog entry (dch -v $cmake_version)" >&2
	exit 1
}

# A clean copy of the source.
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/*.dsc "$out"/*.tar.*
mkdir -p "$out/src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf - | tar -xf - -C "$out/src"
else
	tar --exclude=./build --exclude='./build-*' --exclude=./results --exclude=./rust/target \
		--exclude="./$(basename "$out")" -cf - . | tar -xf - -C "$out/src"
fi

# The source package and the binary ones (lintian checks both);
# dpkg-buildpackage writes them into the parent directory: $out.
echo "deb: dpkg-buildpackage in $out/src"
(cd "$out/src" && dpkg-buildpackage -us -uc -j"$(nproc)") >"$out/build.log" 2>&1 || {
	tail -60 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2
	exit 1
}
rm -rf "$out/src"
changes=$(ls "$out"/bypass_*.changes)
echo "deb: built $(cd "$out" && ls ./*.deb | tr '\n' ' ')"

# lintian: no error and no warning (informational tags are printed).
echo "deb: lintian"
lintian --fail-on error,warning --info --display-info "$changes"
echo "deb: lintian clean"
