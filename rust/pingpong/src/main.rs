// SPDX-License-Identifier: MIT
//! bypass-pingpong: a Rust ping-pong over bypass ipc (the safe crate:
//! `Conn::call`, `Conn::recv` + `Msg::reply`) against the C one
//! (`bypass_ipc_call`, `bypass_ipc_recv` + `bypass_ipc_reply`, c/pingpong.c,
//! the loops of bench/ipc's ipc.call rows), in one run: every round runs
//! each variant once, in a rotating order, each with a fresh server process
//! forked on the second CPU.  Prints the medians, p99 and means, the ratio
//! Rust / C (the median of the per-round ratios of each run's trimmed mean,
//! with a 95% confidence interval) and the target (the Rust ping-pong within 5% of the C
//! one: ratio <= 1.05) as met, not met or not resolved; JSON in
//! bypass-bench's format (tools/report.py renders it) with --json.
//! --cross adds the mixed pairs (Rust client with the C server, C client
//! with the Rust server), which say on which side a difference lies.
//! --lib OBJECT adds a second table: library mode's call (the C tree's
//! key-value service, build/examples/ipc-kv.so, its 32-byte PING) through
//! `LibClient::call` against `bypass_ipc_lib_call`, the server a process
//! that only holds the service.
//!
//!   bypass-pingpong [--rounds N] [--calls N] [--size BYTES] [--cross]
//!                   [--lib OBJECT] [--mode adaptive|spin|sleep]
//!                   [--json FILE] [--smoke]
use std::ffi::c_int;
use std::fmt::Write as _;
use std::io;
use std::process::exit;
use std::time::{Duration, Instant};

use bypass::core::clock;
use bypass::ipc::{Conn, IpcOptions, LibClient, LibOptions, LibService, Service};
use bypass::{sys, WaitMode};

extern "C" {
    fn pingpong_c_server(conn: *mut sys::bypass_ipc_conn, n: usize) -> c_int;
    fn pingpong_c_client(conn: *mut sys::bypass_ipc_conn, n: usize, len: usize, out: *mut u64) -> c_int;
    fn pingpong_c_lib_client(lib: *mut sys::bypass_ipc_lib, op: u32, n: usize, len: usize, out: *mut u64) -> c_int;
}

/// The key-value service's PING (examples/ipc-kv/kv.h): echoes up to 64
/// bytes, touches no state.
const KV_PING: u32 = 5;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    C,
    Rust,
}

/// A client and a server; `lib`: a library-mode call (the server only
/// holds the service).
#[derive(Clone, Copy, Debug)]
struct Variant {
    client: Side,
    server: Side,
    lib: bool,
}

impl Variant {
    fn label(self) -> &'static str {
        if self.lib {
            return match self.client {
                Side::C => "C: bypass_ipc_lib_call",
                Side::Rust => "Rust: LibClient::call",
            };
        }
        match (self.client, self.server) {
            (Side::C, Side::C) => "C: bypass_ipc_call / recv + reply",
            (Side::Rust, Side::Rust) => "Rust: Conn::call / recv + Msg::reply",
            (Side::Rust, Side::C) => "Rust client, C server",
            (Side::C, Side::Rust) => "C client, Rust server",
        }
    }
    fn key(self) -> &'static str {
        if self.lib {
            return match self.client {
                Side::C => "c-lib",
                Side::Rust => "rust-lib",
            };
        }
        match (self.client, self.server) {
            (Side::C, Side::C) => "c",
            (Side::Rust, Side::Rust) => "rust",
            (Side::Rust, Side::C) => "rust-client",
            (Side::C, Side::Rust) => "rust-server",
        }
    }
}

const C: usize = 0; // the message tables's baseline, in the variants

struct Args {
    rounds: usize,
    calls: usize,
    size: usize,
    mode: WaitMode,
    json: Option<String>,
    smoke: bool,
    cross: bool,
    lib: Option<String>,
}

fn parse_args() -> Args {
    let mut a =
        Args { rounds: 30, calls: 20_000, size: 32, mode: WaitMode::Adaptive, json: None, smoke: false, cross: false, lib: None };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--rounds" => a.rounds = val().parse().unwrap_or_else(|_| usage("--rounds N")),
            "--calls" => a.calls = val().parse().unwrap_or_else(|_| usage("--calls N")),
            "--size" => a.size = val().parse().unwrap_or_else(|_| usage("--size BYTES")),
            "--json" => a.json = Some(val()),
            "--cross" => a.cross = true,
            "--lib" => a.lib = Some(val()),
            "--mode" => {
                a.mode = match val().as_str() {
                    "adaptive" => WaitMode::Adaptive,
                    "spin" => WaitMode::Spin,
                    "sleep" => WaitMode::Sleep,
                    _ => usage("--mode adaptive|spin|sleep"),
                }
            }
            "--smoke" => {
                a.smoke = true;
                a.rounds = 4;
                a.calls = 2_000;
            }
            "-h" | "--help" => usage(""),
            _ => usage(&format!("unknown argument {k}")),
        }
    }
    if a.rounds < 2 || a.calls < 10 || a.size == 0 || a.size > 64 {
        usage("at least 2 rounds and 10 calls, a size of 1-64 bytes");
    }
    a
}

fn usage(why: &str) -> ! {
    if !why.is_empty() {
        eprintln!("bypass-pingpong: {why}");
    }
    eprintln!(
        "usage: bypass-pingpong [--rounds N] [--calls N] [--size BYTES] [--cross] [--lib OBJECT] [--mode adaptive|spin|sleep] [--json FILE] [--smoke]"
    );
    exit(2)
}

/// Online CPUs (not this process's affinity, which pin() narrows).
fn ncpus() -> usize {
    // SAFETY: plain system call.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
}

fn pin(cpu: usize) {
    if ncpus() < 2 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is valid; plain system call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn tick_s() -> f64 {
    // SAFETY: plain system call.
    1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// The busy CPU time (s) of the whole machine: user, nice, system, irq,
/// softirq and steal of /proc/stat (guest time is inside user).
fn machine_busy_s() -> f64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let busy: u64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| v.get(i)).sum();
    busy as f64 * tick_s()
}

/// The CPU time (s) of this process and its reaped children.
fn own_cpu_s() -> f64 {
    let mut t = 0.0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: a zeroed rusage is valid; plain system call.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        for tv in [ru.ru_utime, ru.ru_stime] {
            t += tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
        }
    }
    t
}

fn loadavg() -> (f64, String) {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    (s.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0.0), s.trim().to_string())
}

/// The Rust server: the safe crate's loop.
fn rust_server(conn: &Conn, n: usize) -> io::Result<()> {
    for _ in 0..n {
        let m = conn.recv(None)?;
        m.reply(&m, None)?;
    }
    Ok(())
}

/// The Rust client: the safe crate's loop, each call timed.
fn rust_client(conn: &Conn, size: usize, out: &mut [u64]) -> io::Result<()> {
    let q = [b'r'; 64];
    let q = &q[..size];
    for s in out.iter_mut() {
        let t0 = clock::cycles();
        let answer = conn.call(q, None)?;
        *s = clock::cycles() - t0;
        drop(answer);
    }
    Ok(())
}

fn errno(r: c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::from_raw_os_error(-r))
    } else {
        Ok(())
    }
}

/// One run of a variant: a server process forked on CPU 1, the client
/// here on CPU 0; appends the cycles of each call after the warm-up.
fn run(v: Variant, a: &Args, round: usize, out: &mut Vec<u64>) -> io::Result<()> {
    if v.lib {
        return run_lib(v, a, round, out);
    }
    let name = format!("bypass-pingpong-{}-{}-{}", std::process::id(), round, v.key());
    let opts = IpcOptions::new().mode(a.mode).ring_size(65536);
    let svc = Service::listen(&name, &opts)?;
    let total = a.calls + a.calls / 50; // warm-up first
    // SAFETY: this program is single-threaded; the child only runs the
    // server loop and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        pin(1);
        let r = svc.accept(Some(Duration::from_secs(10))).and_then(|conn| match v.server {
            // SAFETY: a live connection, used by this thread only.
            Side::C => errno(unsafe { pingpong_c_server(conn.as_raw(), total) }),
            Side::Rust => rust_server(&conn, total),
        });
        // SAFETY: leave without running the parent's destructors.
        unsafe { libc::_exit(if r.is_ok() { 0 } else { 1 }) };
    }
    drop(svc);
    pin(0);
    let mut samples = vec![0u64; total];
    let r = Conn::connect(&name, &opts).and_then(|conn| match v.client {
        // SAFETY: samples has room for total values; a live connection.
        Side::C => errno(unsafe { pingpong_c_client(conn.as_raw(), total, a.size, samples.as_mut_ptr()) }),
        Side::Rust => rust_client(&conn, a.size, &mut samples),
    });
    let mut status = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    r?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(io::Error::other("the server process failed"));
    }
    out.extend_from_slice(&samples[total - a.calls..]);
    Ok(())
}

/// One run of a library-mode variant: a server process forked on CPU 1
/// loads the service and only admits openers; the client here opens it in
/// library mode (the handler runs in this thread) and calls PING.
fn run_lib(v: Variant, a: &Args, round: usize, out: &mut Vec<u64>) -> io::Result<()> {
    let obj = a.lib.as_deref().unwrap_or_default();
    let name = format!("bypass-pingpong-{}-{}-{}", std::process::id(), round, v.key());
    let mut ready = [0; 2];
    let mut stop = [0; 2];
    // SAFETY: plain system calls.
    if unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) } < 0 || unsafe { libc::pipe2(stop.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let total = a.calls + a.calls / 50;
    // SAFETY: single-threaded; the child serves and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        pin(1);
        // SAFETY: our pipes: the ends the parent uses (the stop pipe reads
        // end of file only once no write end is open).
        unsafe {
            libc::close(ready[0]);
            libc::close(stop[1]);
        }
        // SAFETY: the object is the C tree's key-value service (--lib).
        let svc = unsafe { LibService::listen(&name, obj, &LibOptions::new()) };
        let ok = svc.is_ok() as u8;
        // SAFETY: our pipes.
        unsafe {
            libc::write(ready[1], [ok].as_ptr().cast(), 1);
            libc::fcntl(stop[0], libc::F_SETFL, libc::O_NONBLOCK);
        }
        if let Ok(svc) = svc {
            loop {
                let _ = svc.accept(Some(Duration::from_millis(20)));
                let mut b = [0u8; 1];
                // SAFETY: our pipe: 0 (end of file) once the parent closed it.
                if unsafe { libc::read(stop[0], b.as_mut_ptr().cast(), 1) } == 0 {
                    break;
                }
            }
        }
        // SAFETY: leave without the parent's destructors.
        unsafe { libc::_exit(if ok == 1 { 0 } else { 1 }) };
    }
    // SAFETY: our pipes.
    unsafe {
        libc::close(ready[1]);
        libc::close(stop[0]);
    }
    let mut ok = [0u8; 1];
    // SAFETY: our pipe.
    let got = unsafe { libc::read(ready[0], ok.as_mut_ptr().cast(), 1) };
    pin(0);
    let mut samples = vec![0u64; total];
    let r = if got == 1 && ok[0] == 1 {
        // SAFETY: the C tree's key-value service (--lib).
        unsafe { LibClient::open(&name, &LibOptions::new()) }.and_then(|l| {
            if !l.is_library() {
                return Err(io::Error::other("library mode was not had"));
            }
            match v.client {
                // SAFETY: samples has room for total values; a live handle.
                Side::C => errno(unsafe { pingpong_c_lib_client(l.as_raw(), KV_PING, total, a.size, samples.as_mut_ptr()) }),
                Side::Rust => {
                    let q = [b'r'; 64];
                    let (q, mut resp) = (&q[..a.size], [0u8; 64]);
                    for s in samples.iter_mut() {
                        let t0 = clock::cycles();
                        let r = l.call(KV_PING, q, &mut resp);
                        *s = clock::cycles() - t0;
                        r?;
                    }
                    Ok(())
                }
            }
        })
    } else {
        Err(io::Error::other("the server could not load the service object"))
    };
    let mut status = 0;
    // SAFETY: our pipes and child.
    unsafe {
        libc::close(ready[0]);
        libc::close(stop[1]);
        libc::waitpid(pid, &mut status, 0);
    }
    r?;
    out.extend_from_slice(&samples[total - a.calls..]);
    Ok(())
}

/// What the rest of the machine did during one round.
struct Quiet {
    wall_s: f64,
    other_s: f64,
    own_s: f64,
    load: f64,
}

/// One round: every variant once, in the given order.
fn round(vs: &[Variant], a: &Args, round: usize, order: &[usize]) -> (Vec<Vec<u64>>, Quiet) {
    let mut out = vec![Vec::new(); vs.len()];
    let (b0, o0, t0) = (machine_busy_s(), own_cpu_s(), Instant::now());
    for &k in order {
        if let Err(e) = run(vs[k], a, round, &mut out[k]) {
            eprintln!("bypass-pingpong: {} failed: {e}", vs[k].label());
            exit(1);
        }
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let own_s = own_cpu_s() - o0;
    let other_s = (machine_busy_s() - b0 - own_s).max(0.0);
    (out, Quiet { wall_s, other_s, own_s, load: loadavg().0 })
}

/// Disturbed: the rest of the machine used more than a tenth of one CPU
/// during the round, and more than 4 ticks (tick sampling noise), as
/// bypass-bench's bench/quiet.c decides.
fn disturbed(q: &Quiet) -> bool {
    q.other_s > q.wall_s * DISTURBED_AT && q.other_s > 4.0 * tick_s()
}

const DISTURBED_AT: f64 = 0.10;
const GOAL: f64 = 1.05;

fn median(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

/// The mean of the values at or below the 99th percentile.
fn trimmed_mean(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let keep = &v[..((v.len() * 99).div_ceil(100)).max(1)];
    keep.iter().map(|&x| x as f64).sum::<f64>() / keep.len() as f64
}

fn median_f(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// A distribution-free 95% interval for the median of `x`: the order
/// statistics k and n-1-k, k the largest with P(Binomial(n, 1/2) < k) <=
/// 0.025.
fn median_ci(x: &[f64]) -> (f64, f64) {
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    let lnfact = |m: usize| (1..=m).map(|i| (i as f64).ln()).sum::<f64>();
    let (mut cdf, mut k) = (0.0, 0);
    for j in 0..n {
        cdf += (lnfact(n) - lnfact(j) - lnfact(n - j) - n as f64 * 2f64.ln()).exp();
        if cdf > 0.025 {
            k = j;
            break;
        }
    }
    let hi = n.saturating_sub(1 + k).max(k);
    (v[k], v[hi])
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

fn git(args: &[&str]) -> Option<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let o = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn num(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        "null".into()
    }
}

fn utc_now() -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, sod) = (t.div_euclid(86400), t.rem_euclid(86400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", sod / 3600, sod % 3600 / 60, sod % 60)
}

/// The rows of one table: what `bypass-pingpong` prints and the JSON
/// holds for each experiment.
struct Table<'v> {
    id: &'static str,
    title: String,
    rows: Vec<usize>, // indices into the variants; the first is the base
    vs: &'v [Variant],
}

fn main() {
    let a = parse_args();
    let hz = clock::tsc_hz().unwrap_or(0);
    let ns = |c: f64| if hz > 0 { c * 1e9 / hz as f64 } else { f64::NAN };
    let mut vs = vec![
        Variant { client: Side::C, server: Side::C, lib: false },
        Variant { client: Side::Rust, server: Side::Rust, lib: false },
    ];
    if a.cross {
        vs.push(Variant { client: Side::Rust, server: Side::C, lib: false });
        vs.push(Variant { client: Side::C, server: Side::Rust, lib: false });
    }
    let msg_rows: Vec<usize> = (0..vs.len()).collect();
    let mut lib_rows = Vec::new();
    if a.lib.is_some() {
        lib_rows = vec![vs.len(), vs.len() + 1];
        vs.push(Variant { client: Side::C, server: Side::C, lib: true });
        vs.push(Variant { client: Side::Rust, server: Side::C, lib: true });
    }
    let base_of = |k: usize| if vs[k].lib { lib_rows[0] } else { C };
    let nv = vs.len();
    let mut all = vec![Vec::new(); nv];
    // ratios[k][r]: variant k's median / its table's base median, round r.
    let mut ratios = vec![Vec::new(); nv];
    let mut round_json = Vec::new();
    let (mut n_disturbed, mut reruns) = (0usize, 0usize);
    let (mut other_s, mut wall_s, mut own_s, mut other_max) = (0.0, 0.0, 0.0, 0.0f64);
    let (mut load_min, mut load_max) = (f64::MAX, 0.0f64);
    let load_start = loadavg().1;
    let started = Instant::now();
    println!(
        "bypass-pingpong: {} rounds x {} calls of {} bytes per variant, {:?} waits, {} CPUs, TSC {:.3} GHz",
        a.rounds,
        a.calls,
        a.size,
        a.mode,
        ncpus(),
        hz as f64 / 1e9
    );
    for r in 0..a.rounds {
        let order: Vec<usize> = (0..nv).map(|i| (i + r) % nv).collect();
        // A disturbed round runs again (at most as many reruns in all as
        // there are rounds); the last try is kept either way.
        let (mut s, mut q) = round(&vs, &a, r, &order);
        while disturbed(&q) && reruns < a.rounds {
            reruns += 1;
            (s, q) = round(&vs, &a, r, &order);
        }
        let dist = disturbed(&q);
        n_disturbed += dist as usize;
        other_s += q.other_s;
        wall_s += q.wall_s;
        own_s += q.own_s;
        other_max = other_max.max(q.other_s / q.wall_s.max(1e-9));
        load_min = load_min.min(q.load);
        load_max = load_max.max(q.load);
        // Each run's trimmed mean: the TSC ticks in steps of tens of
        // cycles here, too coarse for a median of calls of tens to hundreds
        // of cycles to tell 5% apart; the calls above the run's p99
        // (interrupts, preemption) are left out.
        let med: Vec<f64> = s.iter().map(|v| trimmed_mean(v)).collect();
        for k in 0..nv {
            ratios[k].push(med[k] / med[base_of(k)]);
        }
        round_json.push(format!(
            "{{\"round\": {r}, \"first\": \"{}\", \"trimmed_means\": {{{}}}, \"other_cpu\": {}, \"disturbed\": {dist}}}",
            vs[order[0]].key(),
            (0..nv).map(|k| format!("\"{}\": {}", vs[k].key(), num(med[k]))).collect::<Vec<_>>().join(", "),
            num(q.other_s / q.wall_s.max(1e-9))
        ));
        for (k, v) in s.into_iter().enumerate() {
            all[k].extend(v);
        }
    }
    let load_end = loadavg().1;
    let verdict_of = |lo: f64, hi: f64, met: bool| {
        if n_disturbed > 0 {
            "not resolved: disturbed"
        } else if lo <= GOAL && GOAL <= hi {
            "not resolved"
        } else if met {
            "met"
        } else {
            "not met"
        }
    };
    let quiet_line = format!(
        "{} rounds{}, {}; other processes {:.1}% of a CPU on average, {:.1}% at most in a round (threshold {:.0}%), load average {:.2}-{:.2}; the bench itself {:.1} CPU-s",
        a.rounds,
        if reruns > 0 { format!(" ({reruns} rerun{})", if reruns == 1 { "" } else { "s" }) } else { String::new() },
        if n_disturbed > 0 { format!("{n_disturbed} DISTURBED") } else { "none disturbed".into() },
        100.0 * other_s / wall_s.max(1e-9),
        100.0 * other_max,
        100.0 * DISTURBED_AT,
        load_min,
        load_max,
        own_s
    );
    let quiet = format!(
        "{{\"measured\": true, \"rounds\": {}, \"disturbed_rounds\": {n_disturbed}, \"reruns\": {reruns}, \"seconds\": {}, \
\"other_cpu_mean\": {}, \"other_cpu_max\": {}, \"own_cpu_seconds\": {}, \"loadavg_min\": {}, \"loadavg_max\": {}, \"threshold\": {}, \"line\": {}}}",
        a.rounds,
        num(wall_s),
        num(other_s / wall_s.max(1e-9)),
        num(other_max),
        num(own_s),
        num(load_min),
        num(load_max),
        num(DISTURBED_AT),
        json_str(&quiet_line)
    );
    let mut tables = vec![Table {
        id: "rust.pingpong",
        title: format!("round trip of a {}-byte call over bypass ipc: the Rust crate against the C API, alternating", a.size),
        rows: msg_rows,
        vs: &vs,
    }];
    if !lib_rows.is_empty() {
        tables.push(Table {
            id: "rust.lib_call",
            title: format!(
                "library mode: a {}-byte call of the key-value service's PING run in the caller's thread, the Rust crate against the C API",
                a.size
            ),
            rows: lib_rows.clone(),
            vs: &vs,
        });
    }
    let mut exps = Vec::new();
    for t in &tables {
        println!(
            "\n{}\n{:<38} {:>10} {:>10} {:>10} {:>10} {:>24}",
            t.id, "round trip of a call", "median cyc", "median ns", "p99 cyc", "mean cyc", "x base (per-round, 95% CI)"
        );
        let mut rows = Vec::new();
        for (i, &k) in t.rows.iter().enumerate() {
            let v = t.vs[k];
            let s = &mut all[k];
            s.sort_unstable();
            let m = median(s);
            let p99 = pct(s, 0.99);
            let mean = s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64;
            let (r, (rl, rh)) = (median_f(&ratios[k]), median_ci(&ratios[k]));
            println!(
                "{:<38} {:>10.0} {:>10.1} {:>10.0} {:>10.0} {:>24}",
                v.label(),
                m,
                ns(m),
                p99,
                mean,
                if i == 0 { "1".to_string() } else { format!("{r:.3} [{rl:.3}, {rh:.3}]") }
            );
            let ci = if i == 0 { "null".to_string() } else { format!("[{}, {}]", num(rl), num(rh)) };
            rows.push(format!(
                "{{\"variant\": {}, \"kind\": \"{}\", \"unit\": \"cycles\", \"higher_is_better\": false, \"n\": {}, \
\"median\": {}, \"mean\": {}, \"p99\": {}, \"min\": {}, \"max\": {}, \"median_ns\": {}, \"mean_ns\": {}, \"p99_ns\": {}, \
\"ratio\": {}, \"ratio_ci\": {ci}, \"is_base\": {}, \"source\": null, \"note\": {}}}",
                json_str(v.label()),
                if i == 0 { "baseline" } else { "rust" },
                s.len(),
                num(m),
                num(mean),
                num(p99),
                s[0],
                s[s.len() - 1],
                num(ns(m)),
                num(ns(mean)),
                num(ns(p99)),
                if i == 0 { "1".to_string() } else { num(r) },
                i == 0,
                json_str(match (v.lib, v.client, v.server) {
                    (true, Side::C, _) => "c/pingpong.c's loop over bypass_ipc_lib_call",
                    (true, Side::Rust, _) => "the safe crate's LibClient::call",
                    (false, Side::C, Side::C) => "c/pingpong.c: bench/ipc's ipc.call loops",
                    (false, Side::Rust, Side::Rust) => "the safe crate on both sides",
                    _ => "a mixed pair: on which side a difference lies",
                }),
            ));
        }
        // The target: the Rust row against the base, per round.
        let rust = t.rows[1];
        let (rmed, (lo, hi)) = (median_f(&ratios[rust]), median_ci(&ratios[rust]));
        let met = rmed <= GOAL;
        let verdict = verdict_of(lo, hi, met);
        let what = if t.id == "rust.pingpong" {
            "Rust ping-pong / C ping-pong over bypass ipc (median of per-round ratios of trimmed means) <= 1.05"
        } else {
            "Rust library-mode call / C library-mode call (median of per-round ratios of trimmed means) <= 1.05"
        };
        println!("\nratio {} / {} (median of the per-round ratios of trimmed means): {rmed:.4}, 95% CI [{lo:.4}, {hi:.4}] over {} rounds", t.vs[rust].label(), t.vs[t.rows[0]].label(), a.rounds);
        println!("target: within 5% (ratio <= {GOAL}): {verdict}");
        let mut notes = vec![
            format!(
                "{} calls of {} bytes per variant in each of {} rounds, every variant of the run in a rotating order; each run forks a fresh server process on CPU 1, the client runs on CPU 0; the first 2% of each run's calls are dropped as warm-up",
                a.calls, a.size, a.rounds
            ),
            "ratio: the median of the per-round ratios of trimmed means (each run's mean of its calls at or below its p99: the TSC ticks in steps of tens of cycles, too coarse for medians to tell 5% apart); its 95% interval: distribution-free, from the order statistics of the per-round ratios".to_string(),
            "both sides link the same libbypass.so; the C loops are compiled by the cc crate at -O2, the Rust loops in the profile the binary was built with (the command uses --release)".to_string(),
        ];
        if t.id == "rust.pingpong" {
            notes.insert(1, format!("{:?} waits on both sides (bypass_ipc_opts.mode), 64 KiB rings, as bench/ipc's ipc.call rows", a.mode));
        } else {
            notes.insert(1, format!("the service: {} (examples/ipc-kv), opened in library mode with the default protection (the gate where the CPU has protection keys); the server process only admits openers", a.lib.as_deref().unwrap_or("")));
        }
        exps.push(format!(
            "    {{\"id\": \"{}\", \"title\": {}, \"ratio_base\": {}, \"skipped\": null, \"ratio_rule\": \"x baseline time, lower is better\",\n     \"rows\": [\n      {}\n     ],\n\
     \"notes\": [{}],\n     \"failures\": [],\n     \"targets\": [{{\"what\": \"{what}\", \"value\": {}, \"ci\": [{}, {}], \"op\": \"<=\", \"goal\": {GOAL}, \"met\": {met}, \"resolved\": {}, \"verdict\": \"{verdict}\"}}],\n\
     \"quiet\": {quiet},\n     \"rounds\": [{}]}}",
            t.id,
            json_str(&t.title),
            json_str(t.vs[t.rows[0]].label()),
            rows.join(",\n      "),
            notes.iter().map(|n| json_str(n)).collect::<Vec<_>>().join(", "),
            num(rmed),
            num(lo),
            num(hi),
            !verdict.starts_with("not resolved"),
            round_json.join(", ")
        ));
    }
    println!("\nquiet: {quiet_line} ({:.1} s)", started.elapsed().as_secs_f64());
    if let Some(path) = &a.json {
        let commit = git(&["rev-parse", "HEAD"]);
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty());
        let envs: Vec<String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("BYPASS_"))
            .map(|(k, v)| format!("{}: {}", json_str(&k), json_str(&v)))
            .collect();
        let command: Vec<String> = std::env::args().collect();
        let j = format!(
            "{{\n  \"tool\": \"bypass-pingpong\",\n  \"version\": {},\n  \"date\": \"{}\",\n  \"command\": {},\n  \"mode\": \"{}\",\n  \"rounds\": {},\n\
  \"machine\": {{\"cpu_model\": {}, \"kernel\": {}, \"arch\": \"{}\", \"cores\": {}, \"tsc_hz\": {hz}, \"cpus_used\": [0, 1]}},\n\
  \"provenance\": {{\"git_commit\": {}, \"git_dirty\": {}, \"env\": {{{}}}, \"loadavg_start\": {}, \"loadavg_end\": {}, \
\"cpu\": {{\"model\": {}, \"online\": {}, \"usable\": {}}}}},\n  \"quiet\": {quiet},\n  \"experiments\": [\n{}\n  ]\n}}\n",
            json_str(bypass::version()),
            utc_now(),
            json_str(&command.join(" ")),
            if a.smoke { "smoke" } else { "custom" },
            a.rounds,
            json_str(&cpu_model()),
            json_str(&kernel()),
            std::env::consts::ARCH,
            ncpus(),
            commit.as_deref().map_or("null".to_string(), json_str),
            dirty.map_or("null".to_string(), |d| d.to_string()),
            envs.join(", "),
            json_str(&load_start),
            json_str(&load_end),
            json_str(&cpu_model()),
            ncpus(),
            ncpus(),
            exps.join(",\n")
        );
        if let Err(e) = std::fs::write(path, j) {
            eprintln!("bypass-pingpong: {path}: {e}");
            exit(1);
        }
        println!("JSON: {path}");
    }
}
