// SPDX-License-Identifier: MIT
//! bypass-pingpong: a Rust ping-pong over bypass ipc (the safe crate:
//! `Conn::call`, `Conn::recv` + `Msg::reply`) against the C one
//! (`bypass_ipc_call`, `bypass_ipc_recv` + `bypass_ipc_reply`, c/pingpong.c,
//! the loops of bench/ipc's ipc.call rows), in one run: every round runs
//! each variant once, in a rotating order, each with a fresh server process
//! forked on the second CPU.  Prints the medians, p99 and means, the ratio
//! Rust / C (the median of the per-round ratios, with a 95% confidence
//! interval) and the target (the Rust ping-pong within 5% of the C
//! one: ratio <= 1.05) as met, not met or not resolved; JSON in
//! bypass-bench's format (tools/report.py renders it) with --json.
//! --cross adds the mixed pairs (Rust client with the C server, C client
//! with the Rust server), which say on which side a difference lies.
//!
//!   bypass-pingpong [--rounds N] [--calls N] [--size BYTES] [--cross]
//!                   [--mode adaptive|spin|sleep] [--json FILE] [--smoke]
use std::ffi::c_int;
use std::fmt::Write as _;
use std::io;
use std::process::exit;
use std::time::{Duration, Instant};

use bypass::core::clock;
use bypass::ipc::{Conn, IpcOptions, Service};
use bypass::{sys, WaitMode};

extern "C" {
    fn pingpong_c_server(conn: *mut sys::bypass_ipc_conn, n: usize) -> c_int;
    fn pingpong_c_client(conn: *mut sys::bypass_ipc_conn, n: usize, len: usize, out: *mut u64) -> c_int;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    C,
    Rust,
}

/// A client and a server.
#[derive(Clone, Copy, Debug)]
struct Variant {
    client: Side,
    server: Side,
}

impl Variant {
    fn label(self) -> &'static str {
        match (self.client, self.server) {
            (Side::C, Side::C) => "C: bypass_ipc_call / recv + reply",
            (Side::Rust, Side::Rust) => "Rust: Conn::call / recv + Msg::reply",
            (Side::Rust, Side::C) => "Rust client, C server",
            (Side::C, Side::Rust) => "C client, Rust server",
        }
    }
    fn key(self) -> &'static str {
        match (self.client, self.server) {
            (Side::C, Side::C) => "c",
            (Side::Rust, Side::Rust) => "rust",
            (Side::Rust, Side::C) => "rust-client",
            (Side::C, Side::Rust) => "rust-server",
        }
    }
}

const C: usize = 0; // the baseline's index in the variants
const RUST: usize = 1;

struct Args {
    rounds: usize,
    calls: usize,
    size: usize,
    mode: WaitMode,
    json: Option<String>,
    smoke: bool,
    cross: bool,
}

fn parse_args() -> Args {
    let mut a =
        Args { rounds: 30, calls: 20_000, size: 32, mode: WaitMode::Adaptive, json: None, smoke: false, cross: false };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--rounds" => a.rounds = val().parse().unwrap_or_else(|_| usage("--rounds N")),
            "--calls" => a.calls = val().parse().unwrap_or_else(|_| usage("--calls N")),
            "--size" => a.size = val().parse().unwrap_or_else(|_| usage("--size BYTES")),
            "--json" => a.json = Some(val()),
            "--cross" => a.cross = true,
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
        "usage: bypass-pingpong [--rounds N] [--calls N] [--size BYTES] [--cross] [--mode adaptive|spin|sleep] [--json FILE] [--smoke]"
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

fn main() {
    let a = parse_args();
    let hz = clock::tsc_hz().unwrap_or(0);
    let ns = |c: f64| if hz > 0 { c * 1e9 / hz as f64 } else { f64::NAN };
    let mut vs = vec![Variant { client: Side::C, server: Side::C }, Variant { client: Side::Rust, server: Side::Rust }];
    if a.cross {
        vs.push(Variant { client: Side::Rust, server: Side::C });
        vs.push(Variant { client: Side::C, server: Side::Rust });
    }
    let nv = vs.len();
    let mut all = vec![Vec::new(); nv];
    // ratios[k][r]: variant k's median / the C median, in round r.
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
        let med: Vec<f64> = s.iter().map(|v| median(v)).collect();
        for k in 0..nv {
            ratios[k].push(med[k] / med[C]);
        }
        round_json.push(format!(
            "{{\"round\": {r}, \"first\": \"{}\", \"medians\": {{{}}}, \"other_cpu\": {}, \"disturbed\": {dist}}}",
            vs[order[0]].key(),
            (0..nv).map(|k| format!("\"{}\": {}", vs[k].key(), num(med[k]))).collect::<Vec<_>>().join(", "),
            num(q.other_s / q.wall_s.max(1e-9))
        ));
        for (k, v) in s.into_iter().enumerate() {
            all[k].extend(v);
        }
    }
    let load_end = loadavg().1;
    let (rmed, (lo, hi)) = (median_f(&ratios[RUST]), median_ci(&ratios[RUST]));
    let met = rmed <= GOAL;
    let verdict = if n_disturbed > 0 {
        "not resolved: disturbed"
    } else if lo <= GOAL && GOAL <= hi {
        "not resolved"
    } else if met {
        "met"
    } else {
        "not met"
    };
    println!(
        "\n{:<38} {:>10} {:>10} {:>10} {:>10} {:>24}",
        "round trip of a call", "median cyc", "median ns", "p99 cyc", "mean cyc", "x C (per-round, 95% CI)"
    );
    let mut rows = Vec::new();
    for (k, v) in vs.iter().enumerate() {
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
            if k == C { "1".to_string() } else { format!("{r:.3} [{rl:.3}, {rh:.3}]") }
        );
        let ci = if k == C { "null".to_string() } else { format!("[{}, {}]", num(rl), num(rh)) };
        rows.push(format!(
            "{{\"variant\": {}, \"kind\": \"{}\", \"unit\": \"cycles\", \"higher_is_better\": false, \"n\": {}, \
\"median\": {}, \"mean\": {}, \"p99\": {}, \"min\": {}, \"max\": {}, \"median_ns\": {}, \"mean_ns\": {}, \"p99_ns\": {}, \
\"ratio\": {}, \"ratio_ci\": {ci}, \"is_base\": {}, \"source\": null, \"note\": {}}}",
            json_str(v.label()),
            if k == C { "baseline" } else { "rust" },
            s.len(),
            num(m),
            num(mean),
            num(p99),
            s[0],
            s[s.len() - 1],
            num(ns(m)),
            num(ns(mean)),
            num(ns(p99)),
            if k == C { "1".to_string() } else { num(r) },
            k == C,
            json_str(match k {
                C => "c/pingpong.c: bench/ipc's ipc.call loops",
                RUST => "the safe crate on both sides",
                _ => "a mixed pair: on which side a difference lies",
            }),
        ));
    }
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
    println!("\nratio Rust / C (median of the per-round ratios): {rmed:.4}, 95% CI [{lo:.4}, {hi:.4}] over {} rounds", a.rounds);
    println!("target: Rust within 5% of C (ratio <= {GOAL}): {verdict}");
    println!("quiet: {quiet_line} ({:.1} s)", started.elapsed().as_secs_f64());
    if let Some(path) = &a.json {
        let commit = git(&["rev-parse", "HEAD"]);
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty());
        let envs: Vec<String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("BYPASS_"))
            .map(|(k, v)| format!("{}: {}", json_str(&k), json_str(&v)))
            .collect();
        let command: Vec<String> = std::env::args().collect();
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
        let notes = [
            format!(
                "{} calls of {} bytes per variant in each of {} rounds, the variants in a rotating order; each run forks a fresh server process on CPU 1, the client runs on CPU 0; the first 2% of each run's calls are dropped as warm-up",
                a.calls, a.size, a.rounds
            ),
            format!("{:?} waits on both sides (bypass_ipc_opts.mode), 64 KiB rings, as bench/ipc's ipc.call rows", a.mode),
            "ratio: the median of the per-round ratios (the row's median / the C median of the same round); its 95% interval: distribution-free, from the order statistics of the per-round ratios".to_string(),
            "both sides link the same libbypass.so; the C loops are compiled by the cc crate at -O2, the Rust loops in the profile the binary was built with (the command uses --release)".to_string(),
        ];
        let j = format!(
            "{{\n  \"tool\": \"bypass-pingpong\",\n  \"version\": {},\n  \"date\": \"{}\",\n  \"command\": {},\n  \"mode\": \"{}\",\n  \"rounds\": {},\n\
  \"machine\": {{\"cpu_model\": {}, \"kernel\": {}, \"arch\": \"{}\", \"cores\": {}, \"tsc_hz\": {hz}, \"cpus_used\": [0, 1]}},\n\
  \"provenance\": {{\"git_commit\": {}, \"git_dirty\": {}, \"env\": {{{}}}, \"loadavg_start\": {}, \"loadavg_end\": {}, \
\"cpu\": {{\"model\": {}, \"online\": {}, \"usable\": {}}}}},\n  \"quiet\": {quiet},\n  \"experiments\": [\n    {{\"id\": \"rust.pingpong\", \
\"title\": {}, \"ratio_base\": {}, \"skipped\": null, \"ratio_rule\": \"x baseline time, lower is better\",\n     \"rows\": [\n      {}\n     ],\n\
     \"notes\": [{}],\n     \"failures\": [],\n     \"targets\": [{{\"what\": \"Rust ping-pong / C ping-pong over bypass ipc (median of per-round ratios) <= 1.05\", \
\"value\": {}, \"ci\": [{}, {}], \"op\": \"<=\", \"goal\": {GOAL}, \"met\": {met}, \"resolved\": {}, \"verdict\": \"{verdict}\"}}],\n     \"quiet\": {quiet},\n     \"rounds\": [{}]}}\n  ]\n}}\n",
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
            json_str(&format!(
                "round trip of a {}-byte call over bypass ipc: the Rust crate against the C API, alternating",
                a.size
            )),
            json_str(vs[C].label()),
            rows.join(",\n      "),
            notes.iter().map(|n| json_str(n)).collect::<Vec<_>>().join(", "),
            num(rmed),
            num(lo),
            num(hi),
            !verdict.starts_with("not resolved"),
            round_json.join(", ")
        );
        if let Err(e) = std::fs::write(path, j) {
            eprintln!("bypass-pingpong: {path}: {e}");
            exit(1);
        }
        println!("JSON: {path}");
    }
}
