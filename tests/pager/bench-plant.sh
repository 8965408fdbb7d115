#!/usr/bin/env bash
# bench-plant: bypass-bench's failure paths for pager (issue 24).  A fault
# engine error planted in pager.latency (the upcall kind fails), lost data in
# pager.throughput (the bypass side changes a word before the check) and wrong
# ranks in pager.pagerank (the window side's ranks off by one part in 10^9);
# lost data in pager.prefetch (the synchronous read-ahead side changes a word
# before its scans' checksums); a wrong output in pager.unmodified (a byte
# added to the C program's output under the preload before its comparison
# with the reference run); a page left in memory by pager.drop's bypass row
# (its first batch names one page twice; the check that every dropped page is
# gone catches it); a wrong byte received by pager.sockcost's preload side
# (its first pair after a fault counted wrong).
# Each must end up in the JSON's "failures", leave no target of its table
# met ("no verdict: failed") and make bypass-bench exit 1
# (tools/report.py --expect-failed checks the JSON).  No figure is judged.
# Then the verdicts' own planted checks, the runs' leftovers and the lock of
# zram/zswap (below).  Every run here leaves zram and zswap alone (--param
# compressed=0: they are system-wide, another bench may be using them), but
# the lock's check, which holds the lock so that the bench cannot touch them.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (reads the JSON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 ran=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--smoke
	--rounds 1
	--param faults=64
	--param swapin_faults=64
	--param region_mib=32
	--param rand_accesses=2000
	--param dev_reads=16
	--param dev_seq_mib=8
	--param scale=14
	--param iters=2
	--param compressed=0)

# <plant>:<the table that must carry the failure>:<--param only=...>
for spec in \
	pager.latency:pager.latency:only=latency \
	pager.throughput:pager.throughput:only=throughput \
	pager.pagerank:pager.pagerank:only=pagerank \
	pager.prefetch:pager.prefetch:only=prefetch \
	pager.unmodified:pager.unmodified:only=unmodified \
	pager.drop:pager.drop:only=drop \
	pager.sockcost:pager.sockcost:only=sockcost; do
	IFS=: read -r id table only <<<"$spec"
	name=${table//./-}
	"$bench" pager "${small[@]}" --param "$only" --param plant="$id" \
		--json "$tmp/$name.json" >"$tmp/$name.out" 2>&1
	r=$?
	python3 "$src/tools/report.py" --expect-failed "$table" "$tmp/$name.json"
	c=$?
	[ $c = 77 ] && continue
	ran=1
	[ $c = 0 ] || bad "$id: the JSON of the planted failure: $(tail -5 "$tmp/$name.out")"
	[ $r = 1 ] || bad "$id: planted failure: exit $r, want 1: $(tail -5 "$tmp/$name.out")"
	grep -q FAILED "$tmp/$name.out" || bad "$id: no FAILED line"
done
# The verdicts (issue 33), on pager.unmodified at smoke size:
# - a program that never pages fails the peak target (plant=
#   pager.unmodified.nopage: the preload's budget is 1 GiB, above the C
#   program's footprint, so its peak is its footprint, above 0.6x it), and
#   an identical-output target is judged on a disturbed run (plant=
#   disturbed: every span counts as if another process took a whole CPU):
#   the table is disturbed, its identical output met, its peak not met;
# - a killed baseline run gives "baseline incomplete" (plant=
#   pager.unmodified.kill: the Linux side's run of the first of 2 rounds is
#   killed, as its OOM killer would): the time and swap-in targets of the
#   program are "not resolved: baseline incomplete", never met.
vj=$tmp/verdicts.json
"$bench" pager --smoke --rounds 2 --param only=unmodified --param programs=syscalls \
	--param compressed=0 --param plant=pager.unmodified.nopage,disturbed --json "$vj" >"$tmp/verdicts.out" 2>&1
r=$?
python3 "$src/tools/report.py" --expect "$vj" pager.unmodified "identical output" met
c=$?
if [ $c != 77 ]; then
	ran=1
	[ $c = 0 ] || bad "identical output on a disturbed run: $(tail -5 "$tmp/verdicts.out")"
	[ $r = 0 ] || bad "the nopage/disturbed run: exit $r, want 0: $(tail -5 "$tmp/verdicts.out")"
	python3 "$src/tools/report.py" --expect-quiet "$vj" pager.unmodified disturbed ||
		bad "plant=disturbed: the table is not disturbed"
	python3 "$src/tools/report.py" --expect "$vj" pager.unmodified "peak resident set" \
		"not met" || bad "a program that never pages met the peak target"
fi
if [ "$(id -u)" = 0 ] && [ -x /usr/bin/python3 ]; then
	kj=$tmp/kill.json
	"$bench" pager --smoke --rounds 2 --param only=unmodified --param programs=python \
		--param compressed=0 --param plant=pager.unmodified.kill --json "$kj" >"$tmp/kill.out" 2>&1
	r=$?
	python3 "$src/tools/report.py" --expect "$kj" pager.unmodified "time vs Linux" \
		"not resolved: baseline incomplete"
	c=$?
	if [ $c != 77 ]; then
		ran=1
		[ $c = 0 ] || bad "a killed Linux run: $(tail -5 "$tmp/kill.out")"
		python3 "$src/tools/report.py" --expect "$kj" pager.unmodified "swap-ins" \
			"not resolved: baseline incomplete" || bad "a killed Linux run: swap-ins judged"
		grep -q "killed by the memory cgroup's OOM killer in 1 of 2 runs" "$tmp/kill.out" ||
			bad "a killed Linux run: no note of the kill"
		[ $r = 0 ] || bad "the kill run: exit $r, want 0 (a baseline's kill is no failure)"
	fi
else
	echo "(the killed-baseline check needs root and /usr/bin/python3: not run)"
fi
# The runs' leftovers (plant=pager.unmodified.orphan): every run of the C
# program leaves a child behind that holds its stdout and waits for ever (its
# pid in $of), as a pool's worker does when the OOM killer takes its parent.
# The bench (their subreaper) must kill and reap each when its side ends:
# none is left when the bench exits, and its note counts them (before the
# fix they were reparented to init and lived on: their CPU was "other
# processes'").
of=$tmp/orphans
BYPASS_BENCH_PLANT_ORPHANS=$of timeout 300 "$bench" pager --smoke --rounds 1 \
	--param only=unmodified --param programs=syscalls --param compressed=0 \
	--param plant=pager.unmodified.orphan >"$tmp/orphan.out" 2>&1
r=$?
if [ -s "$of" ]; then
	ran=1
	[ $r = 0 ] || bad "the orphan run: exit $r, want 0: $(tail -5 "$tmp/orphan.out")"
	left=""
	for p in $(cat "$of"); do
		if kill -0 "$p" 2>/dev/null; then
			left="$left $p"
			kill -9 "$p"
		fi
	done
	[ -z "$left" ] || bad "planted leftovers still alive after the bench:$left"
	grep -q "outlived .* program (.*planted: --param plant=pager.unmodified.orphan" \
		"$tmp/orphan.out" || bad "no note of the killed leftovers: $(tail -5 "$tmp/orphan.out")"
elif grep -q "SKIPPED:" "$tmp/orphan.out"; then
	:
else
	bad "the orphan run left no pid: exit $r: $(tail -5 "$tmp/orphan.out")"
fi
# Redis's client side (plant=pager.unmodified.redis.stall: it writes its pid
# into $rf and waits for a BGSAVE end that never comes, blind to the server's
# end, as the old loop was when the server was gone): its bound
# (--param redis_wait_s) must end it and fail the row; and a SIGTERM to the
# bench must end it with the bench (its process group: pb_running_group),
# not leave it polling (last session: 11 minutes, holding the quiet lock).
# Where pager.unmodified or Redis cannot run here, the check says so.
alive() { # a process that is neither gone nor a zombie
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st#Z}" = "$st" ]
}
rf=$tmp/redis-stall
BYPASS_BENCH_PLANT_REDIS=$rf timeout 300 "$bench" pager --smoke --rounds 1 \
	--param only=unmodified --param programs=redis --param compressed=0 \
	--param plant=pager.unmodified.redis.stall --param redis_wait_s=2 >"$tmp/rstall.out" 2>&1
r=$?
if [ -s "$rf" ]; then
	ran=1
	grep -q "redis: BGSAVE did not end in 2 s" "$tmp/rstall.out" ||
		bad "Redis's client side: no word of its bound: $(tail -5 "$tmp/rstall.out")"
	grep -q "redis (populate, reads, BGSAVE).*its client side failed" "$tmp/rstall.out" ||
		bad "Redis's stalled client side: the row does not say it failed"
	for p in $(cat "$rf"); do
		alive "$p" && { bad "Redis's client side $p alive after its bound"; kill -9 "$p"; }
	done
	if [ "$(id -u)" = 0 ]; then
		# the cleanup on a signal is the Linux side's (root)
		rm -f "$rf"
		BYPASS_BENCH_PLANT_REDIS=$rf "$bench" pager --smoke --rounds 1 \
			--param only=unmodified --param programs=redis --param compressed=0 \
			--param plant=pager.unmodified.redis.stall >"$tmp/rterm.out" 2>&1 &
		bp=$!
		for _ in $(seq 600); do [ -s "$rf" ] && break; sleep 0.1; done
		sleep 0.5
		kill -TERM "$bp"
		wait "$bp"
		if [ -s "$rf" ]; then
			sleep 0.2
			for p in $(cat "$rf"); do
				alive "$p" && { bad "Redis's client side $p outlived the bench's SIGTERM"; kill -9 -- "-$p"; }
			done
		else
			bad "the SIGTERM run's client side left no pid: $(tail -5 "$tmp/rterm.out")"
		fi
		[ -e "/var/tmp/bypass-bench-unmod-$bp" ] &&
			bad "the SIGTERM run left its scratch directory /var/tmp/bypass-bench-unmod-$bp" &&
			rm -rf "/var/tmp/bypass-bench-unmod-$bp"
	fi
elif grep -q "SKIPPED:" "$tmp/rstall.out"; then
	:
elif grep -q "redis not run: " "$tmp/rstall.out"; then
	echo "(Redis's client side check needs redis-server, redis-cli and redis-benchmark: not run)"
else
	bad "the stalled Redis run left no pid: exit $r: $(tail -5 "$tmp/rstall.out")"
fi
# A run without a Linux side (pb_linux_setup failed: here the bench runs as
# nobody, "needs root") must still clean up on a SIGTERM: its scratch
# directory removed, the running program's group killed.  Before the fix
# only a run with a Linux side had the signal's cleanup.  The orphan plant
# marks a program running (its leftover's pid written); the SIGTERM comes
# then, and the bench must die of it (a run that ended first proves
# nothing: said, not judged).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$tmp"
	mkdir -m 1777 "$tmp/sw"
	nf=$tmp/sw/orphans
	BYPASS_BENCH_PLANT_ORPHANS=$nf setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$bench" pager --smoke --rounds 1 --param only=unmodified --param programs=syscalls \
		--param compressed=0 --param swapdir="$tmp/sw" \
		--param plant=pager.unmodified.orphan >"$tmp/nolinux.out" 2>&1 &
	bp=$!
	for _ in $(seq 600); do [ -s "$nf" ] && break; sleep 0.02; done
	before=$(ls "$tmp/sw" | grep -c "^bypass-bench-unmod-$bp$")
	kill -TERM "$bp"
	wait "$bp"
	r=$?
	sleep 0.2
	for p in $(cat "$nf" 2>/dev/null); do
		alive "$p" && { bad "a SIGTERM run without a Linux side left its program's leftover $p"; kill -9 "$p"; }
	done
	if grep -q "SKIPPED:" "$tmp/nolinux.out"; then
		:
	elif [ $r = 143 ]; then
		ran=1
		[ "$before" = 1 ] || bad "no scratch directory of the run as nobody to check"
		left=$(ls "$tmp/sw" | grep bypass-bench-unmod)
		[ -z "$left" ] && [ ! -e "$tmp/sw/bypass-bench-unmod-$bp" ] ||
			bad "the SIGTERM run without a Linux side left its scratch directory: $left"
	else
		echo "(the cleanup check without a Linux side: the run ended (exit $r) before the SIGTERM: not judged)"
	fi
fi
# The lock of zram and zswap: held here (a file of the test's:
# BYPASS_BENCH_COMPRESSED_LOCK), a bench that selects them waits at most
# --param compressed_wait seconds, then runs without them, saying why, and
# never touches them (zswap stays as it was).
if [ "$(id -u)" = 0 ]; then
	lk=$tmp/compressed.lock
	python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
f.write("bench-plant.sh (the test)\n")
f.flush()
open(sys.argv[2], "w").close()
time.sleep(300)' "$lk" "$tmp/held" &
	hp=$!
	for _ in $(seq 100); do [ -e "$tmp/held" ] && break; sleep 0.1; done
	zs=$(cat /sys/module/zswap/parameters/enabled 2>/dev/null)
	BYPASS_BENCH_COMPRESSED_LOCK=$lk "$bench" pager --smoke --rounds 1 --param only=unmodified \
		--param programs=syscalls --param compressed_wait=1 >"$tmp/lock.out" 2>&1
	r=$?
	kill "$hp"
	wait "$hp" 2>/dev/null
	if grep -q "Linux side not run" "$tmp/lock.out"; then
		echo "(the lock's check needs the Linux side: not run)"
	elif grep -q "SKIPPED:" "$tmp/lock.out"; then
		echo "(the lock's check needs pager.unmodified: skipped in this build)"
	else
		ran=1
		[ $r = 0 ] || bad "the locked run: exit $r, want 0: $(tail -5 "$tmp/lock.out")"
		for s in zram zswap; do
			grep -q "Linux $s.* not run: another bypass-bench has zram/zswap set up ($lk held by bench-plant.sh (the test)" \
				"$tmp/lock.out" || bad "$s ran beside the lock's holder: $(grep -i "$s" "$tmp/lock.out" | head -3)"
		done
		grep -q "waiting (at most 1 s) for $lk" "$tmp/lock.out" || bad "no word of the wait"
		[ "$(cat /sys/module/zswap/parameters/enabled 2>/dev/null)" = "$zs" ] ||
			bad "zswap changed under the lock's holder"
	fi
fi
[ $ran = 1 ] || { echo "SKIP: no experiment could run here"; exit 77; }
[ $fail -eq 0 ] && echo "PASS: pager/bench-plant"
exit $fail
