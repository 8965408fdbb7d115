#!/bin/bash
# What one budget for a process tree costs (issue 32, item 3): Redis BGSAVE
# (bgsave.py), Python multiprocessing's peak memory (pss.py) and one Python
# process paging hard alone (solo.py), under the pager preload of a build,
# with the disturbance the run saw.
#   bench/pager/tree/run.sh BUILD OUT [ROUNDS]
# BUILD: a build directory (make: build/) with bypass and
# libbypass-pager.so.  OUT: a new directory for the results.  ROUNDS
# (default 2): rounds of each, runs alternating within a round.  Takes
# about 6 minutes on 2 vCPUs at 2 rounds.  For figures, run it alone:
#   flock -x /work/.quiet.lock timeout 720 bench/pager/tree/run.sh build OUT
# (the project's quiet lock; everyone else's builds and tests take it
# shared).  OUT/summary: the figures and the disturbance.
set -eu
here=$(dirname "$(realpath "$0")")
build=$(realpath "$1")
out=$(realpath -m "$2")
rounds=${3:-2}
[ -x "$build/bypass" ] && [ -e "$build/libbypass-pager.so" ] || {
	echo "no bypass or libbypass-pager.so in $build" >&2; exit 2; }
mkdir -p "$out"
py=/usr/bin/python3
git -C "$here" log -1 --format='%h %s' >"$out/commit" 2>/dev/null || true
{ date -u +%s.%N; head -1 /proc/stat; } >"$out/start"
# BGSAVE of 300,000 keys of 200 bytes at a 32 MiB budget: per process, tree
$py "$here/bgsave.py" "$build" "$out/bgsave" "$rounds" runs=process:process,tree:tree |
	tee "$out/bgsave.txt"
# 5.5 M ints, fork Pool(4), 64 MiB: no preload, per process, tree with
# BYPASS_PAGER_HEAP_AFTER unset (the default) and 4M
$py "$here/pss.py" "$out/pss" "$rounds" 5500000 \
	"runs=none+none+x;process+64M+$build;tree+64M,scope=tree+$build;tree-ha4M+64M,scope=tree+$build+BYPASS_PAGER_HEAP_AFTER=4M" |
	tee "$out/pss.txt"
# one process alone in its tree, paging hard: 8 MiB, process vs tree
# (wall and CPU seconds of the whole run, from bash's time)
mkdir -p "$out/solo"
for r in $(seq 1 "$rounds"); do
	for scope in process tree; do
		TIMEFORMAT="solo $scope r$r: wall %R s, CPU %U+%S s"
		{ time BYPASS_PAGER_THRESHOLD=2M BYPASS_PAGER_SWAP="$out/solo" \
			"$build/bypass" run --pager "8M,scope=$scope" --no-report -- \
			$py "$here/solo.py" >"$out/solo/$scope-$r.out"; } 2>&1 | tee -a "$out/solo.txt"
	done
done
cmp -s "$out/solo/process-1.out" "$out/solo/tree-1.out" || echo "solo: outputs differ" | tee -a "$out/solo.txt"
{ date -u +%s.%N; head -1 /proc/stat; } >"$out/end"
# CPU used by this script's children (`times`, second line: the reaped
# children's user and system time) against the whole machine's busy time.
times >"$out/times"
$py - "$out" <<'PY' | tee "$out/summary"
import json, os, re, sys
out = sys.argv[1]
def rd(n):
    t, cpu = open(os.path.join(out, n)).read().split('\n')[:2]
    v = [int(x) for x in cpu.split()[1:]]
    return float(t), v
t0, a = rd('start'); t1, b = rd('end')
hz = os.sysconf('SC_CLK_TCK')
d = [(y - x) / hz for x, y in zip(a, b)]
idle = d[3] + d[4]; steal = d[7] if len(d) > 7 else 0.0
busy = sum(d[:8]) - idle - steal
def secs(s):
    m = re.match(r'(\d+)m([\d.]+)s', s)
    return int(m.group(1)) * 60 + float(m.group(2))
kids = sum(secs(x) for x in open(os.path.join(out, 'times')).read().split('\n')[1].split())
ncpu = os.cpu_count()
print(f"elapsed {t1 - t0:.0f} s x {ncpu} CPUs; busy {busy:.1f} CPU-s, of which this run's "
      f"processes {kids:.1f}: others {busy - kids:.1f} CPU-s "
      f"({100 * (busy - kids) / ((t1 - t0) * ncpu):.1f}% of the machine); steal {steal:.2f} s")
print(open(os.path.join(out, 'commit')).read().strip() if os.path.exists(os.path.join(out, 'commit')) else '')
bg = json.load(open(os.path.join(out, 'bgsave', 'all.json')))
for lab in dict.fromkeys(r['label'] for r in bg):
    rs = [r for r in bg if r['label'] == lab]
    print(f"BGSAVE {lab:8}: child CPU-s " + ', '.join(f"{r['child_cpu_total']:.1f}" for r in rs) +
          "; wall s " + ', '.join(f"{r['bgsave_wall_s']:.1f}" for r in rs) +
          "; status " + ','.join(r['ok'] for r in rs))
print(open(os.path.join(out, 'solo.txt')).read().strip())
ps = json.load(open(os.path.join(out, 'pss', 'all.json')))
for lab in dict.fromkeys(r['label'] for r in ps):
    rs = [r for r in ps if r['label'] == lab]
    print(f"mp {lab:9}: peak Pss_Anon MiB " + ', '.join(f"{r['peak_pss_anon_mib']:.0f}" for r in rs) +
          "; wall s " + ', '.join(f"{r['wall_s']:.1f}" for r in rs) +
          "; rc " + ','.join(str(r['rc']) for r in rs))
PY
