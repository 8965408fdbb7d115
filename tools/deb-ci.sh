#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI for the Debian packages (issue 36), as root on a machine with
# tools/deps.sh run: build them (make deb: dpkg-buildpackage, lintian
# clean), install them with apt-get, use them from /usr/bin and
# /usr/include as a user would, then purge them and prove that nothing of
# theirs is left on the machine.
#
#   tools/deb-ci.sh [OUTDIR]     default OUTDIR: build-deb
#
# What is checked once installed: bypass is /usr/bin/bypass and finds the
# installed preloads; `pkg-config bypass` gives the installed version; every
# examples/*.c compiles and links against it (shared, and static for one),
# and the quick ones run; `bypass doctor` answers; a short `bypass run
# --batch` and `bypass run --pager` (a program over its budget) run with
# the installed preloads and print their report; `man 3
# bypass_ipc_lib_call` (and bypass(1), bypass(7)) resolve.  Then `apt-get
# purge`: every path `dpkg -L` listed is gone, and a list of the files
# under /usr, /etc, /opt and /var/lib taken before the install equals the
# one taken after the purge (files of a dependency apt pulled in and left
# installed are allowed and named).  The packages are purged on failure too.
# The build tree (build/) is not touched.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${1:-build-deb}
[ "$(id -u)" -eq 0 ] || { echo "deb-ci: must run as root (it installs packages)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
step() { echo; echo "=== deb: $* ($(( $(date +%s) - start ))s)"; }
pkgs=(libbypass0 libbypass-dev bypass-tools)
tmp=$(mktemp -d /tmp/bypass-deb-ci.XXXXXX)
installed=0

snapshot() { # the files and links under the trees a package may write to
	find /usr /etc /opt /var/lib -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \
		-o -path /var/lib/man-db -o -path /var/lib/systemd -o -path /var/lib/ucf \
		-o -path "$top" -o -path "$tmp" \) -prune -o \( -type f -o -type l \) -print 2>/dev/null |
		LC_ALL=C sort
}

purge() {
	local present=()
	for p in "${pkgs[@]}" libbypass0-dbgsym bypass-tools-dbgsym; do
		case "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" in
		*" installed" | *" config-files" | *" half-"*) present+=("$p") ;;
		esac
	done
	[ ${#present[@]} -eq 0 ] || apt-get purge -y -qq "${present[@]}" >"$tmp/purge.log" 2>&1
}

cleanup() {
	local rc=$?
	if [ $installed -eq 1 ]; then
		echo "deb-ci: purging the packages after a failure" >&2
		purge || true
	fi
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT

for p in "${pkgs[@]}"; do
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ]; then
		echo "deb-ci: $p is already installed: purge it first (apt-get purge $p)" >&2
		exit 1
	fi
done

step "make deb (dpkg-buildpackage, lintian)"
tools/deb.sh "$out"
out=$(cd "$out" && pwd)

step "apt-get install ./*.deb"
snapshot >"$tmp/before"
installed=1
# A slim image's dpkg leaves out /usr/share/man (path-exclude in
# /etc/dpkg/dpkg.cfg.d); the manual pages are part of what is checked.
apt-get install -y -qq --no-install-recommends \
	-o Dpkg::Options::=--path-include=/usr/share/man/* "$out"/*.deb >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; exit 1; }
for p in "${pkgs[@]}"; do
	dpkg -L "$p" >>"$tmp/listed"
	echo "deb-ci: $p $(dpkg-query -W -f='${Version}' "$p"): $(dpkg -L "$p" | wc -l) paths"
done

step "the installed command, library and headers"
fail() { echo "deb-ci: FAIL: $*" >&2; exit 1; }
# Outputs go through variables, never `cmd | grep -q`: under pipefail, grep
# leaving early fails cmd with SIGPIPE.
doctor=$(/usr/bin/bypass doctor) || fail "bypass doctor failed"
[ "$(command -v bypass)" = /usr/bin/bypass ] || fail "bypass is $(command -v bypass), not /usr/bin/bypass"
/usr/bin/bypass --version
version=$(dpkg-query -W -f='${Version}' libbypass-dev)
[ "$(pkg-config --modversion bypass)" = "$version" ] ||
	fail "pkg-config bypass says $(pkg-config --modversion bypass), the package is $version"
echo "pkg-config bypass: $(pkg-config --cflags --libs bypass)"
# /usr, not a path relative to the .pc file: pkg-config then leaves out
# the system directories, as for any other library
[ "$(pkg-config --variable=prefix bypass)" = /usr ] ||
	fail "bypass.pc's prefix is $(pkg-config --variable=prefix bypass), not /usr"

step "examples/ against the installed pkg-config"
mkdir -p "$tmp/ex"
for src in examples/*.c; do
	name=$(basename "$src" .c)
	# shellcheck disable=SC2046
	cc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iexamples "$src" -o "$tmp/ex/$name" \
		$(pkg-config --cflags --libs bypass) || fail "$src does not build against the installed library"
done
cc -std=gnu11 -D_GNU_SOURCE -fPIC -shared -Iexamples examples/ipc-kv/kv-service.c -o "$tmp/ex/ipc-kv.so" \
	$(pkg-config --cflags bypass) || fail "examples/ipc-kv/kv-service.c"
# shellcheck disable=SC2046
cc -std=gnu11 -D_GNU_SOURCE examples/notify-pingpong.c -static -o "$tmp/ex/notify-pingpong-static" \
	$(pkg-config --static --cflags --libs bypass) || fail "a static link against the installed libbypass.a"
echo "built: $(cd "$tmp/ex" && ls | tr '\n' ' ')"
# /lib is /usr/lib on Debian 12 (merged /usr): either is the installed one.
# (ldd's output in a variable: grep -q in a pipe under pipefail would fail
# ldd with SIGPIPE.)
libs=$(ldd "$tmp/ex/notify-pingpong")
grep -qE '=> (/usr)?/lib/[^ ]*/libbypass\.so\.0 ' <<<"$libs" ||
	fail "notify-pingpong does not load the installed libbypass.so.0: $libs"
"$tmp/ex/notify-pingpong" 1000
"$tmp/ex/notify-pingpong-static" 1000
"$tmp/ex/syslet-cat" /etc/hostname >/dev/null
"$tmp/ex/batch-fanout" | tail -1
if grep -qE '^pager\.upcall +yes' <<<"$doctor"; then
	(cd "$tmp" && "$tmp/ex/pager-swap" | tail -1)
fi

step "bypass doctor"
echo "$doctor"

step "bypass run --batch and --pager from /usr/bin"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
out_batch=$(/usr/bin/bypass run --batch --report "$tmp/report-batch" -- sh -c 'echo "$LD_PRELOAD"; for i in 1 2 3; do echo line $i; done >/dev/null')
[ "$out_batch" = "/usr/lib/$multiarch/bypass/libbypass-batch.so" ] ||
	fail "bypass run --batch preloads '$out_batch'"
cat "$tmp/report-batch"
grep -q '^bypass: batch' "$tmp/report-batch" || fail "no batch report"
# A program over its budget: 96 MiB (above BYPASS_PAGER_THRESHOLD's 64M,
# so one paged region) under 16 MiB, every page written then read.  Debian's
# python3 by path: a shim on PATH (pyenv) would add its own processes.
if grep -qE '^pager\.upcall +yes' <<<"$doctor" && [ -x /usr/bin/python3 ]; then
	/usr/bin/bypass run --pager 16M,swap="$tmp" --report "$tmp/report-pager" -- /usr/bin/python3 -c \
		'x = bytearray(96 << 20); x[::4096] = b"a" * len(x[::4096]); print(sum(x[::4096]) == 97 * len(x[::4096]))' \
		>"$tmp/pager.out"
	[ "$(cat "$tmp/pager.out")" = True ] || fail "the paged program printed '$(cat "$tmp/pager.out")'"
	cat "$tmp/report-pager"
	grep -q '^bypass: pager: 1 process' "$tmp/report-pager" || fail "the pager report does not count 1 process"
	grep -qE '^bypass: pager: evicted: [1-9]' "$tmp/report-pager" || fail "the pager report says nothing was evicted"
	grep -qE '^bypass: pager: read back from swap: [1-9]' "$tmp/report-pager" ||
		fail "the pager report says nothing was read back"
else
	echo "deb-ci: the paged run skipped (no pager upcall mode here, or no /usr/bin/python3)"
fi

step "man pages"
for page in "3 bypass_ipc_lib_call" "1 bypass" "7 bypass" "3 libbypass-pager"; do
	# shellcheck disable=SC2086
	where=$(man -w $page) || fail "man $page does not resolve"
	# shellcheck disable=SC2086
	text=$(man $page 2>/dev/null) || fail "man $page fails"
	[ -n "$text" ] || fail "man $page renders nothing"
	echo "man $page: $where"
done

step "apt-get purge"
purge
installed=0
left=0
while IFS= read -r path; do
	[ -e "$path" ] || [ -L "$path" ] || continue
	# directories the packages share with others (/usr/lib, /usr/share/man/man3)
	[ -d "$path" ] && [ -n "$(ls -A "$path")" ] && continue
	echo "deb-ci: left after purge: $path" >&2
	left=1
done <"$tmp/listed"
snapshot >"$tmp/after"
while IFS= read -r path; do
	owner=$(dpkg -S "$path" 2>/dev/null | cut -d: -f1 | head -1)
	if [ -n "$owner" ]; then
		echo "deb-ci: new since the install, of package $owner (a dependency apt pulled in): $path"
	else
		echo "deb-ci: left after purge, owned by no package: $path" >&2
		left=1
	fi
done < <(LC_ALL=C comm -13 "$tmp/before" "$tmp/after")
gone=$(LC_ALL=C comm -23 "$tmp/before" "$tmp/after")
[ -z "$gone" ] || { echo "deb-ci: files that were there before the install are gone:" >&2; echo "$gone" >&2; left=1; }
[ $left -eq 0 ] || fail "the purge left files behind (see above)"
echo "deb-ci: purged: the $(wc -l <"$tmp/listed") paths dpkg listed are gone, and /usr, /etc, /opt, /var/lib hold the same files as before the install"
step "done"
