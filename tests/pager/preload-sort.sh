# SPDX-License-Identifier: MIT
# preload-sort: GNU sort, unmodified, over a generated file larger than the
# pager's budget (sort's buffer is one large malloc, read with fread), under
# libbypass-pager.so: the output is byte for byte the same as without it,
# and the statistics line shows that the buffer went through the swap file.
set -u
lib="${BYPASS_BUILD:-.}/libbypass-pager.so"
[ -r "$lib" ] || { echo "SKIP: no $lib"; exit 77; }
command -v sort >/dev/null || { echo "SKIP: no sort"; exit 77; }
if ldd "$lib" | grep -q libtsan; then echo "SKIP: LD_PRELOAD of a ThreadSanitizer build"; exit 77; fi
rt=$(ldd "$lib" | awk '/libasan/ {print $3}')
dir=$(mktemp -d "${TMPDIR:-/tmp}/bypass-pp-sort-XXXXXX")
trap 'rm -rf "$dir"' EXIT
# 6.7 MB of lines (sort's working set is about twice that): a random key and a payload (awk's srand: reproducible)
awk 'BEGIN { srand(11); for (i = 0; i < 100000; i++)
	printf "%08x %d %s\n", int(rand() * 4294967295), i, "payload-payload-payload-payload-payload-payload-pay" }' > "$dir/in"
LC_ALL=C sort -S 64M "$dir/in" > "$dir/want"
preload="$lib"
[ -n "$rt" ] && preload="$rt:$lib"
LC_ALL=C LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 BYPASS_PAGER_BUDGET=5M \
	BYPASS_PAGER_THRESHOLD=1M BYPASS_PAGER_SWAP="$dir" BYPASS_STATS_FILE="$dir/stats" \
	sort -S 64M "$dir/in" > "$dir/got" || { echo "FAIL: sort under the preload: exit $?"; exit 1; }
cmp "$dir/want" "$dir/got" || { echo "FAIL: the output differs"; exit 1; }
size=$(stat -c %s "$dir/in")
ev=$(grep -o '"evictions":[0-9]*' "$dir/stats" | awk -F: '{s += $2} END {print s + 0}')
echo "  input $size bytes, budget 5 MiB, evictions $ev"
if [ -n "$rt" ]; then
	echo "  (AddressSanitizer: sort's malloc is ASan's, nothing to page; output checked)"
elif [ "$ev" -le 0 ]; then
	echo "FAIL: nothing was evicted: sort's buffer was not paged"; exit 1
fi
echo "PASS pager/preload-sort"
