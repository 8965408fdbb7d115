# SPDX-License-Identifier: MIT
# preload-redis: Debian's redis-server, unmodified, under the pager preload
# (`bypass run --pager 32M`), beside the same server without it (issue 32).
#
# The first command is DEBUG POPULATE of 300,000 keys of 200 bytes (about
# 90 MB of small allocations, three budgets): at 95741d6 it never answered
# (the library's bookkeeping allocated from the paged heap while the heap
# grew: map_region -> calloc -> jemalloc, which is redis's own allocator
# and the heap's -> the heap's extent hook -> heap_lock, held).  Then
# redis-benchmark, bounded in requests (deterministic keys: no -r), BGSAVE
# (a forked child writes the whole evicted data set) and the RDB file
# loaded into a server without the preload.  Every reply of the sequence
# is compared with the unpreloaded server's, and the whole data set through
# the RDB file (DEBUG DIGEST of the server that loaded it: a digest under
# the preload would read the data set back in hash order, 35 s at this
# budget, which is issue 32's thrashing item, not this test's); the
# preload's statistics must show evictions.  Again with --batch --pager
# (the issue's second case), the first command and a few replies.
#
# The lock-rank check is on (BYPASS_PAGER_LOCK_RANKS=1: an out-of-order
# take, a heap lock held into jemalloc among them, aborts the server).
#
# Each server listens on 127.0.0.1 at a port this test picks (another is
# tried when the bind fails: other tests may run servers), in a directory
# of its own, and is stopped by its pid.  The only time bounds are hang
# guards (minutes, for work that takes seconds): no assertion is a timing.
set -u
build="${BYPASS_BUILD:-.}"
lib="$build/libbypass-pager.so"
cli="$build/bypass"
[ -r "$lib" ] || { echo "SKIP: no $lib"; exit 77; }
[ -x "$cli" ] || { echo "SKIP: no $cli"; exit 77; }
for t in redis-server redis-cli redis-benchmark redis-check-rdb; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (Debian's redis-server, redis-tools)"; exit 77; }
done
if ldd "$lib" | grep -q libtsan; then echo "SKIP: LD_PRELOAD of a ThreadSanitizer build"; exit 77; fi
# without its heap (-DBYPASS_JEMALLOC=OFF, or no libjemalloc-dev at build
# time: bypass doctor's pager.heap says which) redis's allocations are not
# paged: the deadlock this test is about cannot occur, the test proves nothing
if ! ldd "$lib" | grep -q libjemalloc; then
	echo "SKIP: the preload was built without its heap (jemalloc): redis's heap is not paged"
	exit 77
fi
if ldd "$lib" | grep -q libasan; then
	# under the ASan runtime redis's malloc is ASan's: the heap, where the
	# deadlock was, is not used (preload-heap checks what ASan allows)
	echo "SKIP: AddressSanitizer build: the preload's heap is not used under the ASan runtime"
	exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/bypass-pp-redis-XXXXXX")
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null && { sleep 1; kill -9 "$p" 2>/dev/null; }
	done
	# BYPASS_TEST_KEEP=FILE: the statistics lines of every run kept there
	if [ -n "${BYPASS_TEST_KEEP:-}" ]; then
		cat "$dir"/*/stats >"$BYPASS_TEST_KEEP" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
HANG=${BYPASS_TEST_HANG:-300} # seconds: a hang guard, never a timing assertion

# fail: also from a command substitution's subshell (the marker file is
# checked after each group of commands)
fail() {
	echo "FAIL: $*" | tee -a "$dir/FAILED" >&2
	[ -f "$dir/cur.log" ] && tail -5 "$dir/cur.log" >&2
	exit 1
}
check() { [ -e "$dir/FAILED" ] && { cat "$dir/FAILED"; exit 1; }; return 0; }

# rcli PORT ARGS...: one command, its reply on stdout (--no-raw: typed)
rcli() {
	local port=$1; shift
	timeout $HANG redis-cli --no-raw -h 127.0.0.1 -p "$port" "$@"
	local rc=$?
	[ $rc = 124 ] && fail "no reply to '$*' within $HANG s (port $port): the server hangs"
	return $rc
}

# start NAME [bypass run options...]: a server in $dir/NAME; sets PORT, PID
start() {
	local name=$1; shift
	mkdir -p "$dir/$name"
	for try in 1 2 3 4 5 6 7 8; do
		PORT=$((20000 + RANDOM % 40000))
		(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && continue # taken
		local pre=()
		[ $# -gt 0 ] && pre=("$cli" run "$@" --)
		BYPASS_PAGER_SWAP="$dir/$name" BYPASS_STATS_FILE="$dir/$name/stats" \
			BYPASS_PAGER_LOCK_RANKS=1 \
			"${pre[@]}" redis-server --port $PORT --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$dir/$name" --dbfilename dump.rdb \
			--enable-debug-command yes --logfile "$dir/$name/log" \
			>"$dir/$name/out" 2>&1 &
		PID=$!
		echo $PID >"$dir/$name/pid"
		pids="$pids $PID"
		ln -sf "$dir/$name/log" "$dir/cur.log"
		local i
		for i in $(seq 200); do # up to 20 s to start listening
			kill -0 $PID 2>/dev/null || break
			if [ "$(timeout 5 redis-cli -h 127.0.0.1 -p $PORT ping 2>/dev/null)" = PONG ]; then
				# ours, not another test's server on the same port
				local got
				got=$(timeout 5 redis-cli -h 127.0.0.1 -p $PORT info server |
					tr -d '\r' | awk -F: '/^process_id:/ {print $2}')
				[ "$got" = "$PID" ] && return 0
				break
			fi
			sleep 0.1
		done
		kill $PID 2>/dev/null
		wait $PID 2>/dev/null
		grep -q 'Address already in use' "$dir/$name/log" 2>/dev/null && continue
		cat "$dir/$name/out"; tail -5 "$dir/$name/log" 2>/dev/null
		fail "$name: redis-server did not start"
	done
	fail "$name: no free port after 8 tries"
}

# stop: SHUTDOWN NOSAVE, the process waited for (its exit statistics)
stop() {
	timeout 30 redis-cli -h 127.0.0.1 -p $PORT shutdown nosave >/dev/null 2>&1
	local i
	for i in $(seq 300); do
		kill -0 $PID 2>/dev/null || break
		sleep 0.1
	done
	kill -0 $PID 2>/dev/null && fail "server $PID did not exit after SHUTDOWN"
	wait $PID 2>/dev/null
}

# wait_bgsave: BGSAVE's child has finished; prints its status
wait_bgsave() {
	local i st
	for i in $(seq $((HANG * 10))); do
		st=$(rcli $PORT info persistence | tr -d '\r')
		if echo "$st" | grep -q '^rdb_bgsave_in_progress:0'; then
			echo "$st" | awk -F: '/^rdb_last_bgsave_status:/ {print $2}'
			return 0
		fi
		sleep 0.1
	done
	fail "BGSAVE still running after $HANG s"
}

# session NAME [bypass run options...]: the command sequence; replies in
# $dir/NAME.replies
session() {
	local name=$1; shift
	start "$name" "$@"
	local out="$dir/$name.replies"
	{
		rcli $PORT debug populate 300000 key 200 || fail "$name: DEBUG POPULATE"
		rcli $PORT dbsize
		rcli $PORT get key:0
		rcli $PORT get key:123457
		rcli $PORT strlen key:299999
		timeout $HANG redis-benchmark -h 127.0.0.1 -p $PORT -n 20000 -c 4 -d 100 \
			-t set,get,incr,lpush,hset -q >"$dir/$name.bench" 2>&1 ||
			fail "$name: redis-benchmark failed or hung: $(tail -3 "$dir/$name.bench")"
		rcli $PORT dbsize
		rcli $PORT get counter:__rand_int__
		rcli $PORT llen mylist
		rcli $PORT hget myhash element:__rand_int__
		rcli $PORT bgsave >/dev/null || fail "$name: BGSAVE"
		echo "bgsave: $(wait_bgsave)"
		rcli $PORT get key:299998
	} >"$out"
	check
	stop
	redis-check-rdb "$dir/$name/dump.rdb" >"$dir/$name.check" 2>&1 ||
		fail "$name: the RDB file BGSAVE wrote is damaged: $(tail -3 "$dir/$name.check")"
	# the RDB loaded into a server without the preload: the same data set
	mkdir -p "$dir/$name-load"
	cp "$dir/$name/dump.rdb" "$dir/$name-load/dump.rdb"
	start "$name-load"
	echo "loaded: $(rcli $PORT dbsize) $(rcli $PORT debug digest)" >>"$out"
	check
	stop
}

session plain
session paged --pager 32M
paged_pid=$(cat "$dir/paged/pid")
if ! cmp -s "$dir/plain.replies" "$dir/paged.replies"; then
	diff "$dir/plain.replies" "$dir/paged.replies" | head -20
	fail "replies differ under the preload"
fi
grep -q '^bgsave: ok' "$dir/paged.replies" || fail "BGSAVE under the preload did not succeed"
stats=$(grep "\"pid\":$paged_pid," "$dir/paged/stats" 2>/dev/null)
[ -n "$stats" ] || fail "no statistics line from the server under the preload"
field() { echo "$stats" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }
ev=$(field evictions) rd=$(field bytes_read) peak=$(field resident_peak) heap=$(field heap)
echo "  $(sed -n 1p "$dir/paged.replies"), $(sed -n 2p "$dir/paged.replies") keys, $(grep -c . "$dir/paged.replies") replies equal"
echo "  under --pager 32M: evictions $ev, bytes read back $rd, resident peak $peak pages, heap $heap"
[ "${heap:-0}" = 1 ] || fail "the preload's heap did not engage: the test proves nothing"
[ "${ev:-0}" -gt 0 ] || fail "nothing was evicted: the data set was not paged"
# BGSAVE's fork read nothing back (issue 32): the server stayed within its
# 32 MiB budget all along (8192 pages; at 95741d6 the fork read every
# evicted page back first)
[ "${peak:-0}" -le 8192 ] || fail "resident peak $peak pages, above the 32 MiB budget (8192)"

# --batch --pager: the first command again
start batched --batch --pager 32M
{
	rcli $PORT debug populate 300000 key 200 || fail "batched: DEBUG POPULATE"
	rcli $PORT dbsize
	rcli $PORT get key:123457
} >"$dir/batched.replies"
check
stop
sed -n '1,2p;4p' "$dir/plain.replies" >"$dir/want.b"
cmp -s "$dir/want.b" "$dir/batched.replies" || { diff "$dir/want.b" "$dir/batched.replies"; fail "replies differ under --batch --pager"; }
echo "  --batch --pager 32M: populate, dbsize and a value equal"
echo "PASS pager/preload-redis"
