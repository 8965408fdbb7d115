#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-kernel: the tests of a build, run inside a VM booted on another
# kernel (by default the one Debian 12 ships, Linux 6.1), and CTest's result.
#
#   tools/check-kernel.sh [BUILD]          (make check-kernel runs this)
#
# Variables (the Makefile passes them through):
#   KERNEL      what to boot: a Debian package name (linux-image-6.1.0-N-amd64)
#               fetched with apt-get download, or a path to a vmlinuz whose
#               modules are in KERNEL_MODULES (a /lib/modules/VERSION tree).
#               Default: the newest linux-image-6.1.0-*-amd64 apt knows of.
#   ACCEL       kvm, tcg or auto (default): KVM when a probe guest boots with
#               it, TCG (emulation, slow) otherwise.
#   KTESTS      kernel (default): the tests labelled "kernel" (tests/kernel.list);
#               all: the whole suite.
#   CTESTARGS   more ctest arguments (-R pager, ...), given to the guest's ctest.
#   VM_CMD      a shell command to run in the guest instead of ctest (in the
#               build directory; its status is the result), to look closer:
#               VM_CMD='strace -f tests/batch/api'.
#   VM_CPUS     guest CPUs (default 2), VM_MEM guest memory (default 4G),
#   VM_TIMEOUT  seconds before the VM is stopped as hung (default 3600).
#   VM_TIMEOUT_SCALE  multiplies every test's time limit (default 10 under
#               TCG, 2 under KVM): BYPASS_TEST_TIMEOUT_SCALE in the guest.
#   VM_TMP      ext4 (default): the guest's /tmp on an ext4 scratch disk;
#               tmpfs: a tmpfs there instead (what some systems have; no
#               O_DIRECT), to see what a program meets on such a /tmp.
#
# How: no image and no virtme.  An initramfs of our own (busybox-static, the
# kernel's virtio, 9p and ext4 modules, a 30-line init) mounts this machine's
# root read-only over virtio-9p, the build directory read-write at the same
# path, and an ext4 scratch disk as the guest's /tmp (O_DIRECT, FIFOs and
# sockets work there as on a normal disk; a 9p or tmpfs /tmp has no O_DIRECT),
# then switch_root's into this script's guest half, which runs ctest and
# writes its exit status into the build directory.  What it needs is
# installed by package name (tools/deps.sh --kernel); the kernel package is
# unpacked under BUILD/kernel-vm/, never into /lib/modules: the host is not
# touched outside the build directory.
set -euo pipefail

# ------------------------------------------------------------- guest half
# (Both halves are functions: bash has read all of this file before it runs
# either, so editing it while a VM runs changes nothing in that run.)
guest() {
		build=$2 src=$3
		export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		export HOME=/tmp/home TERM=dumb LANG=C.UTF-8
		state=$build/kernel-vm
		rc=2
		trap 'echo o >/proc/sysrq-trigger; read -r -t 30 _ </dev/ttyS0 2>/dev/null' EXIT
		# shellcheck disable=SC1091
		. /.bypass/build/kernel-vm/run.env # $state/run.env, before $build is in place
		mount -t proc proc /proc
		mount -t sysfs sysfs /sys
		mount -t devtmpfs devtmpfs /dev
		mkdir -p /dev/pts /dev/shm
		mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
		mount -t tmpfs -o mode=1777 tmpfs /dev/shm
		mount -t tmpfs -o mode=755 tmpfs /run
		mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || true
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
		mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
		if [ "$VM_TMP" = tmpfs ]; then
			mount -t tmpfs -o mode=1777 tmpfs /tmp
		else
			mount /dev/vda /tmp
		fi
		chmod 1777 /tmp
		mkdir -p /tmp/home /tmp/var-tmp /tmp/var-log
		chmod 1777 /tmp/var-tmp
		mount --bind /tmp/var-tmp /var/tmp
		mount --bind /tmp/var-log /var/log
		# The source tree and the build directory at their own paths, now
		# that /tmp and /var/tmp have the guest's filesystems (a checkout
		# under either, as CI's may be, would be hidden by them): init left
		# the host's root and the build's share under /.bypass.
		if [ ! -e "$src/tools/check-kernel.sh" ]; then
			mkdir -p "$src"
			mount --bind "/.bypass/host$src" "$src"
		fi
		mkdir -p "$build" 2>/dev/null || true
		mount --bind /.bypass/build "$build"
		finish() {
			echo "$rc" >"$state/rc.tmp" && mv "$state/rc.tmp" "$state/rc"
			sync
			echo o >/proc/sysrq-trigger
			read -r -t 30 _ </dev/ttyS0 2>/dev/null # builtin: 9p is gone
		}
		trap finish EXIT
		ln -sf /proc/self/fd /dev/fd 2>/dev/null || true
		hostname bypass-guest 2>/dev/null || true
		ulimit -n 65536 2>/dev/null || true
		echo "=== guest: Linux $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024) " MiB"}' /proc/meminfo), accel $VM_ACCEL, /tmp $VM_TMP"
		if [ -x "$build/bypass" ]; then
			"$build/bypass" doctor >"$state/doctor.txt" 2>&1 || true
		fi
		cd "$build"
		set +e
		if [ -n "${VM_CMD:-}" ]; then
			bash -c "$VM_CMD"
		else
			# shellcheck disable=SC2086
			ctest --output-on-failure -j "$(nproc)" $GUEST_CTESTARGS
		fi
		rc=$?
		set -e
		exit 0
}

# -------------------------------------------------------------- host half
host() {
	src=$(cd "$(dirname "$0")/.." && pwd)
	build=${1:-${BUILD:-build}}
	case $build in /*) ;; *) build=$src/$build ;; esac
	[ -f "$build/CTestTestfile.cmake" ] || { echo "check-kernel: $build is not a configured build (run make first)" >&2; exit 2; }
	build=$(cd "$build" && pwd)
	case $build in *[[:space:]]*) echo "check-kernel: the build path must not hold spaces: $build" >&2; exit 2 ;; esac

	KERNEL=${KERNEL:-}
	ACCEL=${ACCEL:-auto}
	KTESTS=${KTESTS:-kernel}
	CTESTARGS=${CTESTARGS:-}
	VM_CPUS=${VM_CPUS:-2}
	VM_MEM=${VM_MEM:-4G}
	VM_TIMEOUT=${VM_TIMEOUT:-3600}
	VM_TMP=${VM_TMP:-ext4}
	VM_TIMEOUT_SCALE=${VM_TIMEOUT_SCALE:-}
	state=$build/kernel-vm
	mkdir -p "$state"
	log() { echo "check-kernel: $*"; }

	"$src/tools/deps.sh" --kernel

	# The kernel: vmlinuz, and the modules the initramfs loads.
	kdir=
	if [ -n "$KERNEL" ] && [ -f "$KERNEL" ]; then
		vmlinuz=$KERNEL
		moddir=${KERNEL_MODULES:?KERNEL is a file: KERNEL_MODULES must name its /lib/modules/VERSION tree}
		kname=custom-$(basename "$moddir")
	else
		pkg=$KERNEL
		if [ -z "$pkg" ]; then
			pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1)
			[ -n "$pkg" ] || { echo "check-kernel: apt knows no linux-image-6.1.0-*-amd64 (a Debian 12 archive in sources.list, and apt-get update?)" >&2; exit 2; }
		fi
		ver=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
		[ -n "$ver" ] || { echo "check-kernel: apt knows no package $pkg" >&2; exit 2; }
		kname=$pkg-$ver
		kdir=$state/$kname
		if [ ! -f "$kdir/vmlinuz" ]; then
			log "fetching $pkg $ver"
			rm -rf "$kdir" "$state/dl"
			mkdir -p "$state/dl"
			# apt-get download as root drops to _apt, which must be able to write.
			chmod 777 "$state/dl"
			(cd "$state/dl" && apt-get download -q "$pkg=$ver")
			mkdir -p "$kdir/unpacked"
			dpkg-deb -x "$state/dl/"*.deb "$kdir/unpacked"
			rm -rf "$state/dl"
			kver=$(ls "$kdir/unpacked/lib/modules")
			cp "$kdir/unpacked/boot/vmlinuz-$kver" "$kdir/vmlinuz.tmp"
			mv "$kdir/unpacked/lib/modules/$kver" "$kdir/modules"
			[ -f "$kdir/unpacked/boot/config-$kver" ] && cp "$kdir/unpacked/boot/config-$kver" "$kdir/config"
			rm -rf "$kdir/unpacked"
			mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
		fi
		vmlinuz=$kdir/vmlinuz
		moddir=$kdir/modules
	fi

	# The initramfs: busybox, the modules for virtio-9p, virtio-blk and ext4
	# with what they depend on (from each .ko's modinfo "depends="), and init.
	# Made afresh each time (a second or two), so that it follows this script.
	initrd=$state/initrd.cpio.gz
	rm -f "$initrd" "$state"/initrd-*.cpio.gz
	{
		ird=$(mktemp -d "$state/initrd.XXXXXX")
		trap 'rm -rf "$ird"' EXIT
		mkdir -p "$ird/bin" "$ird/mod" "$ird/newroot" "$ird/host" "$ird/proc" "$ird/sys" "$ird/dev"
		cp "$(command -v busybox)" "$ird/bin/busybox"
		ln -s busybox "$ird/bin/sh"
		declare -A kofile=() loaded=()
		while IFS= read -r -d '' f; do
			b=${f##*/}
			b=${b%%.ko*}
			kofile[${b//-/_}]=$f
		done < <(find "$moddir/kernel" -name '*.ko*' -print0)
		order=()
		# Depth first: a module's dependencies come before it.
		want() {
			local m=${1//-/_} f deps d
			[ -n "${loaded[$m]:-}" ] && return 0
			loaded[$m]=1
			f=${kofile[$m]:-}
			[ -n "$f" ] || return 0 # built in (or absent: init says so)
			case $f in
			*.ko.xz) xz -dc "$f" >"$ird/mod/$m.ko" ;;
			*.ko.zst) zstd -qdc "$f" >"$ird/mod/$m.ko" ;;
			*.ko.gz) gzip -dc "$f" >"$ird/mod/$m.ko" ;;
			*) cp "$f" "$ird/mod/$m.ko" ;;
			esac
			deps=$(tr '\0' '\n' <"$ird/mod/$m.ko" | sed -n 's/^depends=//p' | head -1)
			for d in ${deps//,/ }; do want "$d"; done
			order+=("$m")
		}
		for m in virtio_pci virtio_blk virtio_console virtio_rng 9pnet_virtio 9p ext4 crc32c_intel crc32c_generic; do
			want "$m"
		done
		printf '%s\n' "${order[@]}" >"$ird/mod/order"
		cat >"$ird/init" <<-'INIT'
	#!/bin/sh
	# bypass check-kernel's guest init: modules, the host's root over 9p, then
	# the guest half of tools/check-kernel.sh as PID 1.
	export PATH=/bin
	busybox mount -t proc proc /proc
	busybox mount -t sysfs sysfs /sys
	busybox mount -t devtmpfs devtmpfs /dev
	for m in $(busybox cat /mod/order); do
		busybox insmod /mod/$m.ko 2>/dev/null
	done
	build= src= probe=
	for a in $(busybox cat /proc/cmdline); do
		case $a in
		bypass.build=*) build=${a#bypass.build=} ;;
		bypass.src=*) src=${a#bypass.src=} ;;
		bypass.probe=*) probe=1 ;;
		esac
	done
	if [ -n "$probe" ]; then
		echo "BYPASS-VM-PROBE-OK"
		echo o >/proc/sysrq-trigger
		busybox sleep 30
	fi
	die() { echo "init: $*"; echo o >/proc/sysrq-trigger; busybox sleep 30; }
	busybox ifconfig lo 127.0.0.1 netmask 255.0.0.0 up
	# The root is a tmpfs holding the host's top-level directories, each
	# bound from the 9p share: 9p dentries cannot be walked under RCU
	# (d_revalidate), so a root on 9p itself would fail every
	# openat2(RESOLVE_CACHED) and non-blocking open of /tmp's files.
	busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /host ||
		die "cannot mount the host's root"
	busybox mount -t tmpfs -o mode=755 root /newroot
	for e in /host/* /host/.[!.]*; do
		n=${e#/host/}
		case $n in '*'|'.[!.]*') continue ;; esac
		if [ -L "$e" ]; then
			busybox ln -s "$(busybox readlink "$e")" "/newroot/$n"
		elif [ -d "$e" ]; then
			busybox mkdir "/newroot/$n"
			case $n in proc|sys|dev|run|tmp) ;; *) busybox mount -o bind "$e" "/newroot/$n" ;; esac
		fi
	done
	# The build's share and the whole host root under /.bypass: the guest
	# half binds them at their paths once /tmp is mounted (the tree may
	# live under /tmp, which the guest replaces).
	busybox mkdir -p /newroot/.bypass/host /newroot/.bypass/build
	busybox mount -o bind /host /newroot/.bypass/host
	busybox mount -t 9p -o trans=virtio,version=9p2000.L,cache=mmap,msize=512000 build /newroot/.bypass/build ||
		die "cannot mount the build directory"
	busybox umount /proc /sys
	busybox umount /dev 2>/dev/null
	exec busybox switch_root /newroot /bin/bash "/.bypass/host$src/tools/check-kernel.sh" --guest "$build" "$src"
	INIT
		chmod +x "$ird/init"
		(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
		mv "$initrd.tmp" "$initrd"
		rm -rf "$ird"
		trap - EXIT
	}

	qemu=(qemu-system-x86_64 -nodefaults -display none -no-reboot
	      -kernel "$vmlinuz" -initrd "$initrd" -smp "$VM_CPUS" -m "$VM_MEM"
	      -serial stdio -device virtio-rng-pci)
	append="console=ttyS0 panic=-1 quiet loglevel=4"

	# KVM only if a probe guest really boots with it (a /dev/kvm may exist where
	# nested virtualization does not work).
	accel=$ACCEL
	if [ "$accel" = auto ]; then
		accel=tcg
		if [ -w /dev/kvm ]; then
			out=$(timeout 60 "${qemu[@]}" -accel kvm -cpu host -append "$append bypass.probe=1" </dev/null 2>&1 || true)
			if grep -q BYPASS-VM-PROBE-OK <<<"$out"; then
				accel=kvm
			else
				log "/dev/kvm is there but a guest does not boot with it ($(tail -1 <<<"$out")): TCG"
			fi
		else
			log "no usable /dev/kvm: TCG (slow)"
		fi
	fi
	case $accel in
	kvm) qemu+=(-accel kvm -cpu host); : "${VM_TIMEOUT_SCALE:=2}" ;;
	tcg) qemu+=(-accel tcg,thread=multi -cpu max); : "${VM_TIMEOUT_SCALE:=10}" ;;
	*) echo "check-kernel: ACCEL=$accel (kvm, tcg or auto)" >&2; exit 2 ;;
	esac

	# The guest's /tmp: a sparse ext4 image, made afresh for each run.
	scratch=$state/scratch.img
	rm -f "$scratch" "$state/rc" "$state/doctor.txt"
	truncate -s 16G "$scratch"
	mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$scratch"
	trap 'rm -f "$scratch"' EXIT

	ctestargs=
	case $KTESTS in
	kernel) ctestargs="-L ^kernel\$" ;;
	all) ;;
	*) echo "check-kernel: KTESTS=$KTESTS (kernel or all)" >&2; exit 2 ;;
	esac
	{
		printf 'VM_ACCEL=%q\n' "$accel"
		printf 'VM_TMP=%q\n' "$VM_TMP"
		printf 'VM_CMD=%q\n' "${VM_CMD:-}"
		printf 'export BYPASS_TEST_TIMEOUT_SCALE=%q\n' "$VM_TIMEOUT_SCALE"
		printf 'GUEST_CTESTARGS=%q\n' "$ctestargs $CTESTARGS"
	} >"$state/run.env"

	model=none
	[ "$(id -u)" -eq 0 ] && model=passthrough
	qemu+=(-fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
	       -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
	       -fsdev "local,id=build,path=$build,security_model=$model,multidevs=remap"
	       -device virtio-9p-pci,fsdev=build,mount_tag=build
	       -drive "file=$scratch,if=virtio,format=raw,cache=unsafe,discard=unmap")

	log "booting $kname ($accel, $VM_CPUS CPUs, $VM_MEM) for: ctest $ctestargs $CTESTARGS"
	t0=$(date +%s)
	set +e
	timeout "$VM_TIMEOUT" "${qemu[@]}" -append "$append bypass.build=$build bypass.src=$src" </dev/null 2>&1 |
		tee "$state/console.log"
	qrc=${PIPESTATUS[0]}
	set -e
	t1=$(date +%s)
	if [ ! -f "$state/rc" ]; then
		log "the VM ended (qemu status $qrc after $((t1 - t0)) s) without a test result: see $state/console.log"
		exit 2
	fi
	rc=$(cat "$state/rc")
	log "Linux $kname under $accel: ctest exited $rc after $((t1 - t0)) s (doctor's view: $state/doctor.txt)"
	exit "$rc"
}

if [ "${1:-}" = "--guest" ]; then
	guest "$@"
else
	host "$@"
fi
exit
