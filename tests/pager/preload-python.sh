# SPDX-License-Identifier: MIT
# preload-python: a Python script allocating large lists (their item
# arrays are large mallocs and reallocs), with faulthandler's SIGSEGV
# handler installed, under libbypass-pager.so with a budget well below its
# footprint: the same output as without the preload, and evictions.  Then
# multiprocessing with the fork start method (workers read the parent's
# objects, evicted at the fork) and a plain os.fork that writes its copy.
set -u
lib="${BYPASS_BUILD:-.}/libbypass-pager.so"
[ -r "$lib" ] || { echo "SKIP: no $lib"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: python3 is not installed"; exit 77; }
if ldd "$lib" | grep -q libtsan; then echo "SKIP: LD_PRELOAD of a ThreadSanitizer build"; exit 77; fi
# without its heap (-DBYPASS_JEMALLOC=OFF, or no libjemalloc-dev at build
# time: bypass doctor's pager.heap says which) the preload pages only large
# allocations: python's small objects, which this test needs paged, are not
if ! ldd "$lib" | grep -q libjemalloc; then
	echo "SKIP: the preload was built without its heap (jemalloc): python's small objects are not paged"
	exit 77
fi
rt=$(ldd "$lib" | awk '/libasan/ {print $3}')
dir=$(mktemp -d "${TMPDIR:-/tmp}/bypass-pp-py-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat > "$dir/lists.py" <<'PY'
import faulthandler, random, sys
faulthandler.enable()
random.seed(7)
a = list(range(600_000))                # a 4.8 MB item array
b = [x * 3 % 1000003 for x in a]        # grown by appends: reallocs
random.shuffle(a)
c = sorted(b)
d = a + b                               # 9.6 MB
print(len(d), sum(a), sum(b), c[:5], c[-5:], a[:5], d[-3:])
with open(sys.argv[1], "wb") as f:      # write() from a large bytes object
    f.write(bytes(range(256)) * 40000)
with open(sys.argv[1], "rb") as f:      # read() into one
    data = f.read()
print(len(data), sum(data[::4099]), faulthandler.is_enabled())
PY
"$py" "$dir/lists.py" "$dir/f1" > "$dir/want" || { echo "SKIP: the script fails without the preload"; exit 77; }
preload="$lib"
[ -n "$rt" ] && preload="$rt:$lib"
LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 BYPASS_PAGER_BUDGET=8M \
	BYPASS_PAGER_THRESHOLD=2M BYPASS_PAGER_SWAP="$dir" BYPASS_STATS_FILE="$dir/stats" \
	"$py" "$dir/lists.py" "$dir/f2" > "$dir/got" || { echo "FAIL: python under the preload: exit $?"; exit 1; }
cmp "$dir/want" "$dir/got" || { echo "FAIL: the output differs"; diff "$dir/want" "$dir/got" | head; exit 1; }
ev=$(grep -o '"evictions":[0-9]*' "$dir/stats" | awk -F: '{s += $2} END {print s + 0}')
echo "  output: $(head -c 100 "$dir/got")"
echo "  budget 8 MiB, threshold 2 MiB (above pymalloc's 1 MiB arenas), evictions $ev"
if [ -n "$rt" ]; then
	echo "  (AddressSanitizer: python's malloc is ASan's, nothing to page; output checked)"
elif [ "$ev" -le 0 ]; then
	echo "FAIL: nothing was evicted"; exit 1
fi

# multiprocessing with the fork start method: the workers read what the
# parent built (its small objects: the heap, mostly evicted at the fork)
cat > "$dir/mp.py" <<'PY'
import multiprocessing as mp, os
data = [(i * 7919) % 100003 for i in range(1_500_000)]
table = {i: str(i) * 3 for i in range(200_000)}
def part(k):
    s = data[k::4]
    return sum(s), len(s), sum(len(table[i]) for i in range(k, 200_000, 4))
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        got = pool.map(part, range(4))
    print(got, sum(data), len(table))
    pid = os.fork()                     # a plain fork that changes its copy
    if pid == 0:
        data[0] = -1
        os._exit(0 if sum(data[:10]) == sum(data[1:10]) - 1 else 1)
    print(os.waitpid(pid, 0)[1], data[0])
PY
"$py" "$dir/mp.py" > "$dir/want-mp" || { echo "SKIP: multiprocessing fails without the preload"; exit 77; }
rm -f "$dir/stats"
LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 BYPASS_PAGER_BUDGET=16M \
	BYPASS_PAGER_SWAP="$dir" BYPASS_STATS_FILE="$dir/stats" \
	"$py" "$dir/mp.py" > "$dir/got-mp" || { echo "FAIL: multiprocessing under the preload: exit $?"; exit 1; }
cmp "$dir/want-mp" "$dir/got-mp" || { echo "FAIL: the multiprocessing output differs"; diff "$dir/want-mp" "$dir/got-mp" | head; exit 1; }
ev=$(grep -o '"evictions":[0-9]*' "$dir/stats" | awk -F: '{s += $2} END {print s + 0}')
heap=$(grep -c '"heap":1' "$dir/stats")
echo "  multiprocessing (fork): $(head -c 80 "$dir/got-mp"); evictions $ev, heap engaged in $heap processes"
if [ -z "$rt" ] && [ "$ev" -le 0 ]; then
	echo "FAIL: nothing was evicted (multiprocessing)"; exit 1
fi
echo "PASS pager/preload-python"
