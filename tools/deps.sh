#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages bypass needs to build, test and benchmark,
# but only those that are missing (apt-get update runs only then).
#   tools/deps.sh            everything (build, tests, benchmarks, charts)
#   tools/deps.sh --build    only what building the library needs
#   tools/deps.sh --kernel   only what make check-kernel adds (QEMU, and
#                            busybox and cpio for its initramfs)
#   tools/deps.sh --deb      what make deb needs (the build, Debian's packaging
#                            tools and lintian; man-db for the installed
#                            pages' check in tools/deb-ci.sh)
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config liburing-dev libjemalloc-dev liblz4-dev)
test_pkgs=(clang libclang-rt-14-dev nginx-light lighttpd wrk curl procps util-linux redis-server redis-tools
           python3 python3-matplotlib)

kernel_pkgs=(qemu-system-x86 busybox-static cpio e2fsprogs xz-utils zstd)
deb_pkgs=(dpkg-dev debhelper lintian man-db)

case "${1:-}" in
--build) pkgs=("${build_pkgs[@]}") ;;
--kernel) pkgs=("${kernel_pkgs[@]}") ;;
--deb) pkgs=("${build_pkgs[@]}" "${deb_pkgs[@]}") ;;
*) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "${deb_pkgs[@]}") ;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then SUDO=sudo; else
		echo "deps: missing ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
else
	SUDO=
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx and lighttpd must not start on their default ports when installed
# here: the benchmarks start their own instances on ports they pick.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod +x /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
