# SPDX-License-Identifier: MIT
# preload-stacked-faults: the pager's fault path never calls into the batch
# preload when both are loaded (issue 34, D3).
#
# tests/pager/helper-stacked-faults maps 16 MiB and writes, then reads back
# and checks, every page, under `bypass run --batch --pager 4M`: it faults
# zero pages, evicts and swaps in.  The batch preload's statistics line
# counts "from_bypass", the calls that reached its wrappers from the code of
# another libbypass object (preload/batch/from.c: the caller's return
# address against the executable segments of libbypass.so and
# libbypass-pager.so).  The pager makes its system calls through
# core/syscall.h: the count must be 0 with each engine that serves faults
# differently (upcall: the faulting thread's SIGBUS handler; pool: handler
# threads reading the userfaultfd), and equal to an idle run's (the same
# program mapping nothing: the preloads' start and exit alone), which is 0
# today: nothing legitimate passes there.  A call by a libc name in the
# library (libc's read() for the userfaultfd in fault.c, say) shows up as
# thousands.
set -u
build="${BYPASS_BUILD:-.}"
batch="$build/libbypass-batch.so" pager="$build/libbypass-pager.so"
cli="$build/bypass" prog="$build/tests/pager/helper-stacked-faults"
for f in "$batch" "$pager"; do [ -r "$f" ] || { echo "SKIP: no $f"; exit 77; }; done
for f in "$cli" "$prog"; do [ -x "$f" ] || { echo "SKIP: no $f"; exit 77; }; done
if ldd "$batch" | grep -q libtsan; then echo "SKIP: LD_PRELOAD of a ThreadSanitizer build"; exit 77; fi
rt=$(ldd "$batch" | awk '/libasan/ {print $3; exit}')
dir=$(mktemp -d "${TMPDIR:-/tmp}/bypass-pp-stacked-XXXXXX")
trap 'rm -rf "$dir"' EXIT
HANG=${BYPASS_TEST_HANG:-300} # seconds: a hang guard, never a timing assertion

# run NAME MIB [env...]: the program under both preloads; its two lines in $dir/NAME
run() {
	local name=$1 mib=$2; shift 2
	local pre=("$cli" run --batch --pager 4M --)
	# under ASan the runtime comes first: the same order by hand
	[ -n "$rt" ] && pre=(env LD_PRELOAD="$rt:$batch:$pager" BYPASS_PAGER_BUDGET=4M
		ASAN_OPTIONS=detect_leaks=0)
	env "$@" BYPASS_PAGER_THRESHOLD=1M BYPASS_PAGER_SWAP="$dir" \
		BYPASS_STATS_FILE="$dir/$name" timeout $HANG "${pre[@]}" "$prog" "$mib" 3 \
		>"$dir/$name.out" 2>&1
	local rc=$?
	[ $rc = 0 ] || { cat "$dir/$name.out"; echo "FAIL: $name: exit $rc"; exit 1; }
	grep -q '^ok ' "$dir/$name.out" || { cat "$dir/$name.out"; echo "FAIL: $name: no ok line"; exit 1; }
}
# get NAME MODULE KEY: the counter in that module's line
get() {
	grep "\"module\": *\"$2\"" "$dir/$1" | grep -o "\"$3\": *[0-9]*" | head -1 | grep -o '[0-9]*$'
}

run idle 0
idle=$(get idle batch from_bypass)
[ -n "$idle" ] || { cat "$dir/idle"; echo "FAIL: no from_bypass in the batch preload's line"; exit 1; }
echo "  idle run: from_bypass $idle"
fail=0
for engine in upcall pool; do
	run $engine 16 BYPASS_PAGER_ENGINE=$engine
	fb=$(get $engine batch from_bypass)
	fz=$(get $engine pager faults_zero) fs=$(get $engine pager faults_swapin)
	ev=$(get $engine pager evictions) rd=$(get $engine pager bytes_read)
	echo "  $engine: faults_zero $fz, faults_swapin $fs, evictions $ev, bytes_read $rd: from_bypass $fb"
	[ "${ev:-0}" -gt 0 ] && [ "${rd:-0}" -gt 0 ] ||
		{ echo "FAIL: $engine: nothing evicted and read back: the test proves nothing"; fail=1; }
	if [ "$fb" != "$idle" ] || [ "$fb" != 0 ]; then
		echo "FAIL: $engine: the batch preload's wrappers were called $fb times from a libbypass object (idle run: $idle): a libc name in the library?"
		fail=1
	fi
done
[ $fail = 0 ] || exit 1
echo "PASS pager/preload-stacked-faults"
