#!/usr/bin/python3
# The process tree's peak memory under the pager preload (issue 32, item 3):
# Python multiprocessing (fork) over a large list.
#   pss.py OUTDIR ROUNDS N runs='LABEL+PAGER+BINDIR[+VAR=VALUE...];...'
# PAGER: none (no preload), or bypass run's --pager value (64M,scope=tree);
# BINDIR holds bypass and libbypass-pager.so; VAR=VALUE: extra environment
# (BYPASS_PAGER_HEAP_AFTER=4M).  Runs /usr/bin/python3 mp.py N (a list of N
# ints, a fork Pool(4), 8 strided sums, checked) and samples every 100 ms
# the sum over the tree's processes of Pss_Anon (/proc/PID/smaps_rollup),
# keeping the peak sample's per-process values and, under scope=tree, each
# process's charge in the ledger (read through /proc/PID/fd: a memfd,
# layout of src/pager/tree.c).  Alternating runs, ROUNDS rounds.  Writes
# OUTDIR/LABEL-ROUND/result.json and OUTDIR/all.json; one line per run.
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
outdir, rounds, N = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
opts = dict(a.split('=', 1) for a in sys.argv[4:])
runs = [r.split('+') for r in opts['runs'].split(';')]
os.makedirs(outdir, exist_ok=True)

def kids(pid):
    out = []
    try:
        for t in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{t}/children') as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out

def tree(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += kids(p)
    return seen

def rollup(pid):
    try:
        with open(f'/proc/{pid}/smaps_rollup') as f:
            d = {}
            for l in f:
                k, _, v = l.partition(':')
                if v.strip().endswith('kB'):
                    d[k] = int(v.split()[0])
            return d
    except OSError:
        return None

def cpu(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            s = f.read()
        x = s[s.rindex(')') + 2:].split()
        return (int(x[11]) + int(x[12]) + int(x[13]) + int(x[14])) / os.sysconf('SC_CLK_TCK')
    except OSError:
        return None

import mmap, struct
SLOT = struct.Struct('<iI')  # a ledger slot's pid and charge (pages): bgsave.py has the layout
def ledger_open(pid):
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                if 'bypass-pager-ledger' in os.readlink(f'/proc/{pid}/fd/{fd}'):
                    f = open(f'/proc/{pid}/fd/{fd}', 'rb')
                    m = mmap.mmap(f.fileno(), 65536, prot=mmap.PROT_READ)
                    if struct.unpack_from('<QI', m, 0) != (0x6270747265656c67, 1):
                        sys.exit('the ledger is not version 1 of src/pager/tree.c: update this script')
                    return m
            except OSError:
                pass
    except OSError:
        pass
    return None

def charges(m):
    out = {}
    for i in range(1000):
        pid, c = SLOT.unpack_from(m, 136 + 64 * i)
        if pid > 0:
            out[pid] = c
    return out

res = []
for rnd in range(rounds):
    for label, pager, bindir, *extra in runs:
        d = os.path.join(outdir, f'{label}-{rnd}')
        os.makedirs(d, exist_ok=True)
        env = dict(os.environ, BYPASS_PAGER_SWAP=d, BYPASS_STATS_FILE=os.path.join(d, 'stats'))
        env.update(dict(e.split('=', 1) for e in extra))
        cmd = ['/usr/bin/python3', os.path.join(here, 'mp.py'), N]
        if pager != 'none':
            cmd = [os.path.join(bindir, 'bypass'), 'run', '--pager', pager, '--no-report', '--'] + cmd
        t0 = time.monotonic()
        pr = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(d, 'err'), 'w'))
        peak, at, nproc = 0, None, 0
        led = None
        while pr.poll() is None:
            if led is None and 'scope=tree' in pager:
                for p in tree(pr.pid):
                    led = ledger_open(p)
                    if led:
                        break
            ch = charges(led) if led else {}
            per = {}
            for p in tree(pr.pid):
                r = rollup(p)
                if r:
                    per[p] = dict(pss_anon=r.get('Pss_Anon', 0), pss=r.get('Pss', 0), rss=r.get('Rss', 0),
                                  anon=r.get('Anonymous', 0), charge_kib=ch.get(p, 0) * 4)
            s = sum(v['pss_anon'] for v in per.values())
            nproc = max(nproc, len(per))
            if s > peak:
                peak, at = s, dict(t=round(time.monotonic() - t0, 2), per=per)
            time.sleep(0.1)
        wall = time.monotonic() - t0
        out = pr.stdout.read().decode().strip()
        r = dict(label=label, pager=pager, round=rnd, rc=pr.returncode, out=out, wall_s=round(wall, 2),
                 peak_pss_anon_mib=round(peak / 1024, 1), nproc=nproc, at_peak=at,
                 stats=[json.loads(l) for l in open(os.path.join(d, 'stats'))] if os.path.exists(os.path.join(d, 'stats')) else [])
        res.append(r)
        json.dump(r, open(os.path.join(d, 'result.json'), 'w'), indent=1)
        per = ' '.join(f"{v['pss_anon']>>10}/{v['charge_kib']>>10}" for v in (at['per'].values() if at else []))
        tr = [s for s in r['stats'] if 'tree_peak_pages' in s]
        print(f"{label:10} r{rnd} rc {pr.returncode} wall {wall:.1f}s peak Pss_Anon {peak/1024:.0f} MiB "
              f"[per process Pss_Anon/charge MiB: {per}] procs {nproc}"
              + (f" tree_peak {tr[0]['tree_peak_pages']*4>>10} MiB asks {tr[0]['tree_asks']}" if tr else ''),
              flush=True)
json.dump(res, open(os.path.join(outdir, 'all.json'), 'w'))
