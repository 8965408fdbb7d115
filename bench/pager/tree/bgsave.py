#!/usr/bin/python3
# Redis BGSAVE under the pager preload, per-process budgets against one
# budget for the process tree (issue 32, item 3): where the save's CPU goes.
#   bgsave.py BINDIR OUTDIR ROUNDS [runs=LABEL:SCOPE[:BINDIR],...]
#             [keys=300000] [budget=32M]
# BINDIR holds bypass and libbypass-pager.so (a build directory).  Per
# round, per run (alternating): redis-server under
#   BINDIR/bypass run --pager BUDGET,scope=SCOPE -- redis-server ...
# DEBUG POPULATE KEYS key 200, then BGSAVE.  Sampled every 20 ms during
# BGSAVE: the server's and the child's /proc/PID/task/*/stat (CPU per
# thread), /proc/PID/io, and (scope=tree) the tree's ledger read through
# /proc/SERVER/fd/N (a memfd; layout of src/pager/tree.c, version 1:
# refused otherwise): per slot charge, asks made, waits, time in
# reservation, own pages evicted, pages served for others.  Exact totals:
# the child's whole CPU is the server's cutime+cstime after it reaped the
# child (the child ends with _exit: it writes no stats line).  Writes
# OUTDIR/LABEL-ROUND/result.json and OUTDIR/all.json; one line per run on
# stdout.  Needs redis-server and redis-cli (Debian's redis).
import json, mmap, os, re, socket, struct, subprocess, sys, time

CLK = os.sysconf('SC_CLK_TCK')
build, outdir, rounds = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])
opts = dict(a.split('=', 1) for a in sys.argv[4:])
runs = [(r.split(':') + [build])[:3] for r in opts.get('runs', 'process:process,tree:tree').split(',')]
keys = int(opts.get('keys', '300000'))
budget = opts.get('budget', '32M')
os.makedirs(outdir, exist_ok=True)


def cli(port, *args, timeout=600):
    r = subprocess.run(['redis-cli', '-h', '127.0.0.1', '-p', str(port)] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return r.stdout.strip()


def stat(pid, tid=None):
    path = f'/proc/{pid}/stat' if tid is None else f'/proc/{pid}/task/{tid}/stat'
    with open(path) as f:
        s = f.read()
    comm = s[s.index('(') + 1:s.rindex(')')]
    f = s[s.rindex(')') + 2:].split()
    # fields from 3: state=0 ... minflt=7 majflt=9 utime=11 stime=12 cutime=13 cstime=14
    return dict(comm=comm, minflt=int(f[7]), majflt=int(f[9]),
                cpu=(int(f[11]) + int(f[12])) / CLK, ccpu=(int(f[13]) + int(f[14])) / CLK,
                utime=int(f[11]) / CLK, stime=int(f[12]) / CLK)


def threads(pid):
    out = {}
    try:
        for t in os.listdir(f'/proc/{pid}/task'):
            try:
                out[int(t)] = stat(pid, t)
            except OSError:
                pass
    except OSError:
        return None
    return out


def io(pid):
    try:
        with open(f'/proc/{pid}/io') as f:
            return {k: int(v) for k, v in (l.split(': ') for l in f.read().split('\n') if l)}
    except OSError:
        return None


def children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


# the ledger (src/pager/tree.c, struct bp_ledger): header then 1000 slots
# of 64 bytes, from offset 136
LEDGER_MAGIC, LEDGER_VERSION = 0x6270747265656c67, 1
HDR = struct.Struct('<QIIIIIIIIQQQQ')  # magic ver size budget slack total peak progress waiters over asks tmo reclaimed
SLOT_OFF = 136
SLOT = struct.Struct("<iIIIQIIQQQQ")  # pid charge req want answered asks_made waits wait_ns own_pages served_pages active_ns


def ledger_open(pid):
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            if 'bypass-pager-ledger' in os.readlink(f'/proc/{pid}/fd/{fd}'):
                f = open(f'/proc/{pid}/fd/{fd}', 'rb')
                return mmap.mmap(f.fileno(), 65536, prot=mmap.PROT_READ)
        except OSError:
            pass
    return None


def ledger_read(m):
    h = HDR.unpack_from(m, 0)
    if h[0] != LEDGER_MAGIC or h[1] != LEDGER_VERSION:
        sys.exit(f'the ledger is not version {LEDGER_VERSION} of src/pager/tree.c: update this script')
    hdr = dict(budget=h[3], slack=h[4], total=h[5], peak=h[6], over=h[9], asks=h[10],
               ask_timeouts=h[11], reclaimed=h[12])
    slots = {}
    for i in range(1000):
        s = SLOT.unpack_from(m, SLOT_OFF + 64 * i)
        if s[0] > 0:
            slots[s[0]] = dict(slot=i, charge=s[1], answered=s[4], asks_made=s[5], waits=s[6],
                               wait_ns=s[7], own_pages=s[8], served_pages=s[9])
    return hdr, slots


def port_free():
    while True:
        s = socket.socket()
        try:
            s.bind(('127.0.0.1', 0))
            return s.getsockname()[1]
        finally:
            s.close()


def one(label, scope, bindir, rnd):
    name = f'{label}-{rnd}'
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    port = port_free()
    env = dict(os.environ, BYPASS_PAGER_SWAP=d, BYPASS_STATS_FILE=os.path.join(d, 'stats'))
    pager = budget + (',scope=tree' if scope == 'tree' else ',scope=process')
    cmd = [os.path.join(bindir, 'bypass'), 'run', '--pager', pager, '--no-report', '--',
           'redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save', '',
           '--appendonly', 'no', '--dir', d, '--dbfilename', 'dump.rdb',
           '--enable-debug-command', 'yes', '--logfile', os.path.join(d, 'log')]
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, 'err'), 'w'))
    for _ in range(200):
        if cli(port, 'ping') == 'PONG':
            break
        time.sleep(0.1)
    spid = int(re.search(r'process_id:(\d+)', cli(port, 'info', 'server')).group(1))
    s0 = stat(spid)
    t0 = time.monotonic()
    assert cli(port, 'debug', 'populate', str(keys), 'key', '200') == 'OK'
    t_pop = time.monotonic() - t0
    s1 = stat(spid)
    th1 = threads(spid)
    led = ledger_open(spid) if scope == 'tree' else None
    l1 = ledger_read(led) if led else None
    io1 = io(spid)
    assert 'Background saving started' in cli(port, 'bgsave')
    t1 = time.monotonic()
    child, csamp, ssamp, lsamp = None, None, None, None
    series = []
    while True:
        if child is None:
            c = [x for x in children(spid) if x != srv.pid]
            child = c[0] if c else None
        if child is not None:
            th = threads(child)
            if th:
                prev = csamp[1] if csamp else {}
                for t, v in prev.items():
                    if t not in th or th[t]['cpu'] < v['cpu']:
                        th[t] = v
                csamp = (time.monotonic() - t1, th, io(child) or (csamp[2] if csamp else None))
        ssamp = threads(spid)
        if led:
            lsamp = ledger_read(led)
            series.append((round(time.monotonic() - t1, 3), lsamp[0]['total'],
                           {p: v['charge'] for p, v in lsamp[1].items()}))
        st = cli(port, 'info', 'persistence')
        if 'rdb_bgsave_in_progress:0' in st:
            break
        time.sleep(0.02)
    t_save = time.monotonic() - t1
    ok = re.search(r'rdb_last_bgsave_status:(\w+)', st).group(1)
    s2 = stat(spid)
    io2 = io(spid)
    l2 = ledger_read(led) if led else None
    cli(port, 'shutdown', 'nosave')
    srv.wait(timeout=120)
    stats = [json.loads(l) for l in open(os.path.join(d, 'stats'))] if os.path.exists(os.path.join(d, 'stats')) else []
    r = dict(label=label, scope=scope, bindir=bindir, round=rnd, ok=ok, populate_s=t_pop, bgsave_wall_s=t_save,
             server_cpu_populate=s1['cpu'] - s0['cpu'],
             server_cpu_bgsave=s2['cpu'] - s1['cpu'],
             child_cpu_total=s2['ccpu'] - s1['ccpu'],
             child_last_sample=csamp and dict(at=csamp[0], threads=csamp[1], io=csamp[2]),
             server_threads_before=th1, server_threads_after=ssamp,
             server_io_bgsave={k: io2[k] - io1[k] for k in io1} if io1 and io2 else None,
             ledger_before=l1, ledger_after=l2, ledger_last=lsamp, ledger_series=series[::5],
             stats=stats)
    json.dump(r, open(os.path.join(d, 'result.json'), 'w'), indent=1, default=str)
    return r


def summary(r):
    cs = r['child_last_sample']
    th = cs['threads'] if cs else {}
    cpid = min(th) if th else None
    per = ', '.join(f"{'main' if t == cpid else v['comm']}:{v['cpu']:.2f}" for t, v in sorted(th.items()))
    line = (f"{r['label']:10} r{r['round']} {r['ok']} populate {r['populate_s']:.1f}s "
            f"(srv cpu {r['server_cpu_populate']:.1f}) | bgsave wall {r['bgsave_wall_s']:.1f}s "
            f"child cpu {r['child_cpu_total']:.2f}s [{per}] srv cpu {r['server_cpu_bgsave']:.2f}s")
    if cs and cs['io']:
        line += f" child rchar {cs['io']['rchar']>>20}M wchar {cs['io']['wchar']>>20}M"
    if cs:
        m = cs['threads'].get(cpid)
        if m:
            line += f" child minflt {m['minflt']}"
    if r['ledger_last']:
        h, sl = r['ledger_last']
        line += f" | ledger asks {h['asks']} tmo {h['ask_timeouts']} over {h['over']}"
        for p, v in sl.items():
            line += (f" | pid {p}: charge {v['charge']} asks {v['asks_made']} waits {v['waits']} "
                     f"wait {v['wait_ns']/1e9:.2f}s own {v['own_pages']} served {v['served_pages']}"
                     f" answered {v['answered']}")
    for s in r['stats']:
        line += (f" | stats pid {s['pid']}: ev {s['evictions']} (clean {s['evictions_clean']}) "
                 f"swapin {s['faults_swapin']} rd {s['bytes_read']>>20}M wr {s['bytes_written']>>20}M "
                 f"peak {s['resident_peak']}")
    return line


res = []
for rnd in range(rounds):
    for label, sc, bindir in runs:
        r = one(label, sc, bindir, rnd)
        res.append(r)
        print(summary(r), flush=True)
json.dump([{k: v for k, v in r.items() if k not in ('ledger_series',)} for r in res],
          open(os.path.join(outdir, 'all.json'), 'w'), default=str)
