#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Redis's own test suite against the preloads: the suite of the redis-server
# Debian installed (its source package, fetched with apt-get source), once
# plain and once with every server it starts under a preload, and a failure
# for any test that ends differently.  See docs/batch.md, "Tested against".
#
#   tools/realworld/redis.sh [options]
#     --full           the whole suite (default: the CI subset below) for
#                      the batch run; the pager's run keeps its subset
#     --units "a b"    these units for every run (e.g. "unit/networking")
#     --clients N      test clients per run (default 4; the runs go side by
#                      side)
#     --preload P      batch (default), pager, or "batch pager": a run under
#                      each, beside a plain run of the same units
#     --build DIR      where the preloads were built (default build)
#     --keep           keep the suite's copies and server logs
#
# Needs root once, on a fresh Debian 12 machine (it installs dpkg-dev, tcl,
# redis-server, redis-tools and gdb if they are missing, like tools/deps.sh;
# gdb only takes the stacks of a server that never started: see stuck()).
# The source is fetched into $BUILD/realworld/ once (a few MB) and reused;
# each run's output stays in $BUILD/realworld/logs/.  Servers bind to
# 127.0.0.1 on ports in a range picked at random per run; every process it
# started is gone when it exits, and so are its temporary directories.
#
# Two runs end the same when the same tests pass, fail, are skipped or
# ignored in both (a test's name counted once, its digits aside: some names
# carry random values, some tests repeat for as long as a time allows) and
# every unit finished.  A test that ends differently is run once more,
# alone, plain and preloaded (--only, --clients 1): the suite has
# timing-dependent tests and a loaded 2-CPU machine, so a difference that
# does not come back is reported as such ("not again on a rerun") and does
# not fail the run; one that comes back does, and so does a test client
# that died.  More than BYPASS_RW_MAX_RERUNS differences (default 12) are
# not timing: the run fails at once, without reruns.  Every suite run has
# a wall-clock limit (BYPASS_RW_LIMIT seconds, default 1200, each rerun a
# quarter of it): a run cut short has units not done, and fails.  Exit
# status: 0 the same, 1 different, 2 could not run.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
full=0
units=""
clients=4
preloads="batch"
keep=0

# The CI subset: units whose servers do what the preloads change (client
# connections, replies, closes, listeners, blocking commands, pub/sub,
# replication links, child processes), chosen to finish within the CI
# budget (docs/batch.md: about 8 minutes for both runs, fetch included,
# on 2 CPUs).
ci_units="unit/networking unit/introspection unit/introspection-2 unit/info-command
unit/protocol unit/auth unit/quit unit/pubsub unit/pubsubshard unit/multi
unit/type/list unit/type/incr unit/type/string unit/keyspace unit/scan unit/expire
unit/obuf-limits unit/querybuf unit/limits unit/shutdown unit/tracking unit/acl
unit/other unit/info unit/latency-monitor unit/oom-score-adj unit/client-eviction
unit/replybufsize integration/replication-2 integration/redis-cli
integration/redis-benchmark integration/shutdown"

# The pager's run: these units (the CI subset less the ones that build
# data sets of tens of MB, which a 1 MiB budget pages in and out for
# minutes: unit/introspection, unit/other, unit/latency-monitor,
# unit/type/string, unit/obuf-limits, unit/client-eviction,
# integration/redis-cli), with BYPASS_PAGER_BUDGET=1M (below every
# server's heap: a test server's is 1 to 2 MiB when idle) and the heap
# engaged from the start (BYPASS_PAGER_HEAP_AFTER=0), in the CI run and in
# the full one alike.
pager_units="unit/networking unit/introspection-2 unit/info-command unit/protocol
unit/auth unit/quit unit/pubsub unit/pubsubshard unit/multi unit/type/list
unit/type/incr unit/keyspace unit/scan unit/expire unit/querybuf unit/limits
unit/shutdown unit/tracking unit/acl unit/info unit/oom-score-adj
unit/replybufsize integration/replication-2 integration/redis-benchmark
integration/shutdown"
pager_budget=${BYPASS_RW_PAGER_BUDGET:-1M}
max_reruns=${BYPASS_RW_MAX_RERUNS:-12}
limit=${BYPASS_RW_LIMIT:-1200}
case "$max_reruns$limit" in *[!0-9]*) echo "realworld: BYPASS_RW_MAX_RERUNS and BYPASS_RW_LIMIT want counts" >&2; exit 2 ;; esac

while [ $# -gt 0 ]; do
	case "$1" in
	--full) full=1 ;;
	--units) units=$2; shift ;;
	--clients) clients=$2; shift ;;
	--preload) preloads=$2; shift ;;
	--build) build=$(cd "$2" && pwd); shift ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '3,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "realworld: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case "$clients" in ''|*[!0-9]*|0) echo "realworld: --clients wants a count" >&2; exit 2 ;; esac
for p in $preloads; do
	case "$p" in
	batch|pager) [ -f "$build/libbypass-$p.so" ] ||
		{ echo "realworld: $build/libbypass-$p.so is missing (make first)" >&2; exit 2; } ;;
	*) echo "realworld: --preload batch|pager, not $p" >&2; exit 2 ;;
	esac
done

say() { echo "realworld: $*"; }
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 ))s"; }

# ------------------------------------------------------------------ packages

need_pkgs() {
	local missing=() p
	for p in dpkg-dev tcl redis-server redis-tools xz-utils procps gdb; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "realworld: missing ${missing[*]}; run as root to install them" >&2
		exit 2
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# The lists may be empty on a fresh machine.
	apt-cache policy redis-server 2>/dev/null | grep -q Candidate: || apt-get update -qq
	local rc=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# redis-server must not start on its default port when installed.
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
		rm -f /usr/sbin/policy-rc.d
	else
		apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
	fi
	[ $rc -eq 0 ] || { echo "realworld: apt-get install failed ($rc)" >&2; exit 2; }
}

# ------------------------------------------------------------------ source

# deb-src entries for this machine's own Debian archives: its apt sources
# (deb822 .sources and one-line .list files) for this release, its -updates
# and its -security suites, with "deb" turned into "deb-src".
src_lists() {
	local out=$1 cn
	cn=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$cn" ] || { echo "realworld: no VERSION_CODENAME in /etc/os-release" >&2; return 1; }
	mkdir -p "$out/parts"
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v cn="$cn" '
		BEGIN { RS = ""; }
		{
			n = split($0, L, "\n"); types = ""; suites = ""; off = 0
			for (i = 1; i <= n; i++) {
				if (L[i] ~ /^Types:/) types = L[i]
				else if (L[i] ~ /^Suites:/) suites = L[i]
				else if (L[i] ~ /^Enabled:[ \t]*no/) off = 1
			}
			if (off || types !~ /[ \t]deb([ \t]|$)/) next
			m = split(substr(suites, 8), S, /[ \t]+/); keep = ""
			for (j = 1; j <= m; j++)
				if (S[j] == cn || S[j] == cn "-updates" || S[j] == cn "-security")
					keep = keep " " S[j]
			if (keep == "") next
			for (i = 1; i <= n; i++) {
				if (L[i] ~ /^Types:/) L[i] = "Types: deb-src"
				else if (L[i] ~ /^Suites:/) L[i] = "Suites:" keep
				print L[i]
			}
			print ""
		}' "$f" >"$out/parts/$(basename "$f")"
	done
	: >"$out/sources.list"
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n -E "s/^deb([[:space:]]+\[[^]]*\])?[[:space:]]+([^[:space:]]+)[[:space:]]+($cn|$cn-updates|$cn-security)[[:space:]]+(.*)$/deb-src\1 \2 \3 \4/p" \
			"$f" >>"$out/sources.list"
	done
	if ! grep -qs . "$out/sources.list" "$out"/parts/*.sources; then
		echo "realworld: apt's sources name no $cn archive to take deb-src entries from" >&2
		return 1
	fi
}

# The source tree of the installed redis-server, patched as Debian built it,
# in $cache/redis-<version>/ (made once).
fetch_source() {
	local ver dir tmp
	ver=$(dpkg-query -W -f='${source:Version}' redis-server)
	dir=$cache/redis-${ver//[:~]/_}
	if [ -f "$dir/.complete" ]; then
		srcdir=$dir
		return 0
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/bypass-realworld-apt.XXXXXX")
	tmpdirs+=("$tmp")
	src_lists "$tmp"
	mkdir -p "$tmp/lists/partial" "$tmp/dl"
	local o=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=$tmp/parts"
		 -o "Dir::State::Lists=$tmp/lists" -o "APT::Sandbox::User=root" -qq)
	say "fetching the source of redis $ver (Debian's source package)"
	apt-get "${o[@]}" update >"$tmp/update.log" 2>&1 ||
		{ cat "$tmp/update.log" >&2; echo "realworld: apt-get update of deb-src failed" >&2; return 1; }
	if ! (cd "$tmp/dl" && apt-get "${o[@]}" source --download-only "redis=$ver") >"$tmp/src.log" 2>&1; then
		cat "$tmp/src.log" >&2
		echo "realworld: apt-get source redis=$ver failed (the installed version must be in the archive)" >&2
		return 1
	fi
	rm -rf "$dir" "$dir.part"
	mkdir -p "$cache"
	dpkg-source --no-check -x "$tmp"/dl/redis_*.dsc "$dir.part" >"$tmp/x.log" 2>&1 ||
		{ cat "$tmp/x.log" >&2; return 1; }
	touch "$dir.part/.complete"
	mv "$dir.part" "$dir"
	srcdir=$dir
}

# ------------------------------------------------------------------ runs

run_id=bypass-rw-$$-$RANDOM
tmpdirs=()
work=""

# Every process of this run: the suite's clients carry BYPASS_RW_RUN=$run_id
# in their environment; a server overwrites its environment with its
# process title, but works in a directory under this run's ($work).
# Nothing else is touched.
ours() {
	local e pid cwd
	for e in /proc/[0-9]*/environ; do
		pid=${e#/proc/}
		pid=${pid%/environ}
		if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "BYPASS_RW_RUN=$run_id"; then
			echo "$pid"
		elif [ -n "$work" ]; then
			cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
			case "$cwd" in "$work"/*) echo "$pid" ;; esac
		fi
	done
	return 0
}

cleanup() {
	local pid f i
	for i in 1 2; do
		for pid in $(ours); do kill -9 "$pid" 2>/dev/null || true; done
	done
	[ $keep = 1 ] || for f in "${tmpdirs[@]}"; do rm -rf "$f"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A copy of the suite whose programs are Debian's: its server, <copy>/src/
# redis-server, execs /usr/bin/redis-server under $BYPASS_RW_PRELOAD when
# set.
make_copy() {
	local d=$1
	mkdir -p "$d"
	cp -a "$srcdir/runtest" "$srcdir/tests" "$d/"
	mkdir -p "$d/src"
	cat >"$d/src/redis-server" <<'EOF'
#!/bin/sh
# bypass tools/realworld: Debian's redis-server, under a preload when asked.
[ -n "$BYPASS_RW_PRELOAD" ] && export LD_PRELOAD="$BYPASS_RW_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
exec /usr/bin/redis-server "$@"
EOF
	chmod +x "$d/src/redis-server"
	local b
	for b in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
		ln -s "/usr/bin/$b" "$d/src/$b"
	done
}

# The preload's environment for a variant.
variant_env() {
	case "$1" in
	plain) echo "" ;;
	batch) echo "BYPASS_RW_PRELOAD=$build/libbypass-batch.so" ;;
	pager) echo "BYPASS_RW_PRELOAD=$build/libbypass-pager.so BYPASS_PAGER_BUDGET=$pager_budget BYPASS_PAGER_HEAP_AFTER=${BYPASS_RW_PAGER_HEAP_AFTER:-0}" ;;
	esac
}

# run VARIANT DIR PORT LOG SECONDS ARGS...: the suite in DIR, servers on
# ports from PORT, output to LOG, for at most SECONDS (then the suite is
# killed: its units are not all done).  Returns runtest's status (not
# judged: the results are).
run_suite() {
	local v=$1 d=$2 port=$3 log=$4 secs=$5
	shift 5
	# shellcheck disable=SC2046
	(cd "$d" && timeout --kill-after=10 "$secs" env BYPASS_RW_RUN="$run_id" \
		BYPASS_BATCH_STATS="$d/batch-stats.jsonl" BYPASS_STATS_FILE="$d/stats.jsonl" \
		$(variant_env "$v") \
		./runtest --clients "$1" --baseport "$port" --portcount 1000 --durable \
		--timeout 900 "${@:2}" </dev/null >"$log" 2>&1)
}

# Each test's outcome, one "status<TAB>key<TAB>name" line per outcome a
# name had: status ok, err, skip, ignore, exception, timeout; key the name
# with every run of digits as N.  Some tests have random values in their
# names ("consistent after load (x = 93303)") or repeat for as long as a
# time allows (PSYNC2's cycles): so a run is the set of (status, key), and
# two runs end the same when their sets are equal (a test that failed, or
# did not run at all, in one run only is a difference).
outcomes() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
	/^\[(ok|err|skip|ignore|exception|timeout)\]: / {
		s = substr($1, 2, length($1) - 3)
		name = substr($0, length($1) + 2)
		if (s == "ok") sub(/ \([0-9]+ ms\)$/, "", name)
		if (s == "err") sub(/ in tests\/[^ ]*\.tcl$/, "", name)
		if (s == "exception") name = "(a test client died)"
		key = name
		gsub(/[0-9]+/, "N", key)
		print s "\t" key "\t" name
	}' | sort -t "$(printf '\t')" -k1,2 -u
}

# The outcome lines of key $1.
only() {
	awk -F'\t' -v k="$1" '$2 == k'
}

# Keys whose outcomes differ between two outcome files.
differing() {
	diff <(cut -f1,2 "$1" | sort -u) <(cut -f1,2 "$2" | sort -u) |
		sed -n 's/^[<>] //p' | cut -f2 | sort -u
}

# The suite's --only pattern for a test name: a regexp, its digits as
# [0-9]+.
only_pattern() {
	awk -v n="$1" 'BEGIN {
		out = ""
		for (i = 1; i <= length(n); i++) {
			c = substr(n, i, 1)
			if (c ~ /[0-9]/) {
				out = out "[0-9]+"
				while (substr(n, i + 1, 1) ~ /[0-9]/)
					i++
			} else if (c ~ /[A-Za-z_ ]/) {
				out = out c
			} else {
				out = out "\\" c
			}
		}
		print "/^" out "$"
	}'
}

# The units whose source names a test (by the start of its name), to run
# it again alone; all of them in scope when that is not clear.
units_of() {
	local prefix=${1%%[0-9]*} f u=()
	if [ ${#prefix} -ge 12 ]; then
		while read -r f; do
			f=${f#"$srcdir/tests/"}
			u+=(--single "${f%.tcl}")
		done < <(grep -rlF -- "$prefix" "$srcdir/tests/unit" "$srcdir/tests/integration" | sort)
	fi
	if [ ${#u[@]} -ge 2 ] && [ ${#u[@]} -le 8 ]; then
		printf '%s\n' "${u[@]}"
	else
		single_args "$2"
	fi
}

port_base() {
	# 20000-39000, a multiple of 1000: the suite also binds port + 10000.
	echo $(( 20000 + (RANDOM % 20) * 1000 ))
}

# Tests run, by outcome, and the units done, from a run's output.
summary() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
	/^\[(ok|err|skip|ignore|exception|timeout)\]: / { n[substr($1, 2, length($1) - 3)]++ }
	/^\[[0-9]+\/[0-9]+ done\]: / { d = substr($1, 2) }
	END { printf "%d ok, %d err, %d skipped, %d ignored, %d exceptions, %d timeouts; units %s", n["ok"], n["err"], n["skip"], n["ignore"], n["exception"], n["timeout"], d ? d : "0/?" }'
}

units_done() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n 's/^\[\([0-9]*\/[0-9]*\) done\]: .*/\1/p' | tail -1
}

# --single for each unit of a list ("" = the whole suite: nothing).
single_args() {
	local u
	for u in $1; do
		[ -f "$srcdir/tests/$u.tcl" ] || { echo "realworld: no unit $u in the suite" >&2; exit 2; }
		printf -- '--single\n%s\n' "$u"
	done
}

scope_of() {
	[ -z "$1" ] && echo "the whole suite" || echo "$(echo $1 | wc -w) units"
}

# Compare run $2 (variant $1) with its plain run $3; rerun what differs.
# Sets status=1 on a difference that comes back.
judge() {
	local v=$1 r=$2 p=$3 n=0 key name pat w off
	case $v in
	batch) [ -f "$logs/$r.batch-stats.jsonl" ] && n=$(grep -c '"module": *"batch"' "$logs/$r.batch-stats.jsonl" || true) ;;
	pager) [ -f "$logs/$r.stats.jsonl" ] && n=$(grep -c '"module": *"pager"' "$logs/$r.stats.jsonl" || true) ;;
	esac
	say "$r: $n server processes reported the preload's counters"
	if [ "$n" = 0 ]; then
		echo "realworld: no server ran under libbypass-$v.so" >&2
		status=1
	fi
	if [ ! -s "$logs/$p.outcomes" ]; then
		echo "realworld: the plain run $p reported no test (see $logs/$p.log)" >&2
		status=1
		return
	fi
	if [ "$(units_done "$logs/$r.log")" != "$(units_done "$logs/$p.log")" ]; then
		echo "realworld: $r: units done $(units_done "$logs/$r.log"), $p $(units_done "$logs/$p.log")" >&2
		status=1
	fi
	local diffs
	mapfile -t diffs < <(differing "$logs/$p.outcomes" "$logs/$r.outcomes")
	if [ ${#diffs[@]} -eq 0 ]; then
		say "$r: every test ended as in the plain run"
		return
	fi
	if [ ${#diffs[@]} -gt "$max_reruns" ]; then
		# A server that hung or died takes every later test of its unit
		# with it: not what a rerun of each, one by one, should sort out
		# (that took longer than CI allows once).
		say "$r: ${#diffs[@]} tests ended differently, more than $max_reruns: FAIL, no reruns"
		for key in "${diffs[@]}"; do
			only "$key" <"$logs/$p.outcomes" | cut -f1,3 | sed 's/^/    plain: /'
			only "$key" <"$logs/$r.outcomes" | cut -f1,3 | sed 's/^/    '"$v"': /'
		done
		status=1
		return
	fi
	say "$r: ${#diffs[@]} tests ended differently; each runs again alone, both ways"
	local -a where
	for key in "${diffs[@]}"; do
		only "$key" <"$logs/$p.outcomes" | cut -f1,3 | sed 's/^/    plain: /'
		only "$key" <"$logs/$r.outcomes" | cut -f1,3 | sed 's/^/    '"$v"': /'
		if [ "$key" = "(a test client died)" ]; then
			say "$r: a test client died: FAIL"
			status=1
			continue
		fi
		name=$(only "$key" <"$logs/$p.outcomes" | head -1 | cut -f3)
		[ -n "$name" ] || name=$(only "$key" <"$logs/$r.outcomes" | head -1 | cut -f3)
		pat=$(only_pattern "$name")
		mapfile -t where < <(units_of "$name" "${r_units[$r]}")
		off=9000
		for w in plain "$v"; do
			rm -rf "$work/re-$w"
			make_copy "$work/re-$w"
			run_suite "$w" "$work/re-$w" $(( base + off )) \
				"$logs/rerun-$w.log" $(( limit / 4 )) 1 --only "$pat" "${where[@]}" || true
			outcomes "$logs/rerun-$w.log" | only "$key" | cut -f1,2 >"$logs/rerun-$w.outcomes"
			off=$(( off + 1000 ))
		done
		if [ -s "$logs/rerun-plain.outcomes" ] &&
		   cmp -s "$logs/rerun-plain.outcomes" "$logs/rerun-$v.outcomes"; then
			say "$r: \"$key\": not again on a rerun ($(cut -f1 "$logs/rerun-plain.outcomes" | tr '\n' ' ')both ways)"
		else
			say "$r: \"$key\": ended differently again: FAIL"
			sed 's/^/    rerun plain: /' "$logs/rerun-plain.outcomes"
			sed 's/^/    rerun '"$v"': /' "$logs/rerun-$v.outcomes"
			status=1
		fi
	done
}

# stuck RUN: a server of RUN that the suite gave up on ("Can't start the
# Redis server": no PID line in its log within 2 minutes) is left running
# by the suite.  Before cleanup() kills it, its threads' stacks (gdb when
# present, the kernel's otherwise), its descriptors and its log go to
# $logs/RUN.stuck-PID.txt, so that a start that hangs under a preload is
# diagnosed from the run that saw it.
stuck() {
	local r=$1 pid cwd f out err
	for pid in $(ours); do
		cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
		# the suite's copy (a server that hung before its chdir) or its
		# directory among the suite's temporary ones
		case "$cwd" in "$work/$r" | "$work/$r"/*) ;; *) continue ;; esac
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'redis-server' || continue
		out=$(readlink "/proc/$pid/fd/1" 2>/dev/null) || out=""
		err=$(readlink "/proc/$pid/fd/2" 2>/dev/null) || err=""
		f=$logs/$r.stuck-$pid.txt
		{
			echo "== pid $pid, cwd $cwd, state: $(awk '/^State/ {print $2, $3}' "/proc/$pid/status" 2>/dev/null)"
			echo "== its log (stdout $out, stderr $err):"
			[ -f "$out" ] && cat "$out"
			[ -f "$err" ] && cat "$err"
			echo "== threads (kernel wait channel, kernel stack):"
			for t in /proc/"$pid"/task/*; do
				echo "-- ${t##*/} $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
				cat "$t/stack" 2>/dev/null
			done
			echo "== descriptors:"
			ls -l "/proc/$pid/fd" 2>/dev/null
			if command -v gdb >/dev/null; then
				echo "== gdb, every thread:"
				timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1
			fi
		} >"$f" 2>&1
		say "$r: a server the suite gave up on was still running (pid $pid): its stacks in $f"
	done
}

main() {
	need_pkgs
	cache=$build/realworld
	mkdir -p "$cache"
	fetch_source || exit 2
	say "suite: $srcdir ($(elapsed))"
	say "server: /usr/bin/redis-server $(/usr/bin/redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"

	# The runs: each preload's, beside a plain run of the same units.
	local u=$units p
	[ $full = 1 ] && [ -z "$units" ] && u=""
	[ $full = 0 ] && [ -z "$units" ] && u=$ci_units
	single_args "$u" >/dev/null
	single_args "$pager_units" >/dev/null
	runs=(plain)
	r_var[plain]=plain
	r_units[plain]=$u
	declare -A base_of
	for p in $preloads; do
		local pu=$u
		[ "$p" = pager ] && [ -z "$units" ] && pu=$pager_units
		runs+=("$p")
		r_var[$p]=$p
		r_units[$p]=$pu
		if [ "$pu" = "$u" ]; then
			base_of[$p]=plain
		else
			runs+=("plain-$p")
			r_var[plain-$p]=plain
			r_units[plain-$p]=$pu
			base_of[$p]=plain-$p
		fi
	done

	work=$(mktemp -d "${TMPDIR:-/tmp}/bypass-realworld.XXXXXX")
	tmpdirs+=("$work")
	logs=$cache/logs/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$logs"
	base=$(port_base)
	local r i=0 args
	declare -A pid
	for r in "${runs[@]}"; do
		say "$r: $(scope_of "${r_units[$r]}"), --clients $clients"
		mapfile -t args < <(single_args "${r_units[$r]}")
		make_copy "$work/$r"
		run_suite "${r_var[$r]}" "$work/$r" $(( base + i * 1500 )) "$logs/$r.log" \
			"$limit" "$clients" "${args[@]}" &
		pid[$r]=$!
		i=$(( i + 1 ))
	done
	say "runs side by side; logs in $logs"
	for r in "${runs[@]}"; do
		wait "${pid[$r]}" || true
		stuck "$r"
		outcomes "$logs/$r.log" >"$logs/$r.outcomes"
		if [ -f "$work/$r/batch-stats.jsonl" ]; then cp "$work/$r/batch-stats.jsonl" "$logs/$r.batch-stats.jsonl"; fi
		if [ -f "$work/$r/stats.jsonl" ]; then cp "$work/$r/stats.jsonl" "$logs/$r.stats.jsonl"; fi
	done
	say "suite runs done ($(elapsed))"
	for r in "${runs[@]}"; do
		say "$r: $(summary "$logs/$r.log")"
	done
	status=0
	for p in $preloads; do
		judge "$p" "$p" "${base_of[$p]}"
	done
	say "done in $(elapsed): $([ $status = 0 ] && echo 'the same results' || echo 'DIFFERENT results')"
	exit $status
}

declare -A r_var r_units
runs=()
main
