// SPDX-License-Identifier: MIT
//! bypass-pingpong: a Rust ping-pong over bypass ipc (the safe crate:
//! `Conn::call`, `Conn::recv` + `Msg::reply`) against the C one
//! (`bypass_ipc_call`, `bypass_ipc_recv` + `bypass_ipc_reply`, c/pingpong.c),
//! alternating in one run: each round runs both, in an order that
//! alternates, each with a fresh server process forked on the second CPU.
//! Prints the medians, p99 and means of both, the ratio Rust / C per
//! round, its median with a 95% confidence interval, and the target (the
//! Rust call within 5% of the C one: ratio <= 1.05) as MET, NOT MET or not
//! resolved; JSON with --json.
//!
//!   bypass-pingpong [--rounds N] [--calls N] [--size BYTES]
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

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::C => "C: bypass_ipc_call / recv + reply",
            Side::Rust => "Rust: Conn::call / recv + Msg::reply",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Side::C => "c",
            Side::Rust => "rust",
        }
    }
}

struct Args {
    rounds: usize,
    calls: usize,
    size: usize,
    mode: WaitMode,
    json: Option<String>,
    smoke: bool,
}

fn parse_args() -> Args {
    let mut a = Args { rounds: 30, calls: 20_000, size: 32, mode: WaitMode::Adaptive, json: None, smoke: false };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        match k.as_str() {
            "--rounds" => a.rounds = val().parse().unwrap_or_else(|_| usage("--rounds N")),
            "--calls" => a.calls = val().parse().unwrap_or_else(|_| usage("--calls N")),
            "--size" => a.size = val().parse().unwrap_or_else(|_| usage("--size BYTES")),
            "--json" => a.json = Some(val()),
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
        "usage: bypass-pingpong [--rounds N] [--calls N] [--size BYTES] [--mode adaptive|spin|sleep] [--json FILE] [--smoke]"
    );
    exit(2)
}

fn ncpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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

/// The CPU time (ns) of the whole machine, and of this process and its
/// waited-for children, to tell how much the rest of the machine ran.
fn machine_busy_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = s.lines().next().unwrap_or("");
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    let busy = v.iter().enumerate().filter(|(i, _)| !matches!(i, 3 | 4)).map(|(_, x)| *x).sum::<u64>();
    // SAFETY: plain system call.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    busy * 1_000_000_000 / hz
}

fn own_cpu_ns() -> u64 {
    let mut t = 0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: a zeroed rusage is valid; plain system call.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        for tv in [ru.ru_utime, ru.ru_stime] {
            t += tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
        }
    }
    t
}

/// One run of `n` calls: a server process forked on CPU 1 (C or Rust
/// loops), the client here on CPU 0.  Returns the cycles of each call.
fn run(side: Side, a: &Args, round: usize, out: &mut Vec<u64>) -> io::Result<()> {
    let name = format!("bypass-pingpong-{}-{}-{}", std::process::id(), round, side.key());
    let opts = IpcOptions::new().mode(a.mode).ring_size(65536);
    let svc = Service::listen(&name, &opts)?;
    let total = a.calls + a.calls / 50; // warm-up first
    // SAFETY: this program is single-threaded here; the child only runs
    // the server loop and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        pin(1);
        let code = (|| -> io::Result<()> {
            let conn = svc.accept(Some(Duration::from_secs(10)))?;
            match side {
                // SAFETY: a live connection, used by this thread only.
                Side::C => match unsafe { pingpong_c_server(conn.as_raw(), total) } {
                    0 => Ok(()),
                    e => Err(io::Error::from_raw_os_error(-e)),
                },
                Side::Rust => {
                    for _ in 0..total {
                        let m = conn.recv(None)?;
                        m.reply(&m, None)?;
                    }
                    Ok(())
                }
            }
        })();
        // SAFETY: leave without running the parent's destructors.
        unsafe { libc::_exit(if code.is_ok() { 0 } else { 1 }) };
    }
    drop(svc);
    pin(0);
    let conn = Conn::connect(&name, &opts);
    let mut samples = vec![0u64; total];
    let r = conn.and_then(|conn| match side {
        // SAFETY: samples has room for total values; a live connection.
        Side::C => match unsafe { pingpong_c_client(conn.as_raw(), total, a.size, samples.as_mut_ptr()) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(-e)),
        },
        Side::Rust => {
            let q = [b'r'; 64];
            let q = &q[..a.size];
            for s in samples.iter_mut() {
                let t0 = clock::cycles();
                let answer = conn.call(q, None)?;
                *s = clock::cycles() - t0;
                drop(answer);
            }
            Ok(())
        }
    });
    let mut status = 0;
    // SAFETY: plain system call on our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    r?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(io::Error::other("the server process failed"));
    }
    out.extend_from_slice(&samples[total - a.calls..]);
    Ok(())
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// A distribution-free 95% interval for the median of `x` (sorted): the
/// order statistics k and n-1-k with P(Binomial(n, 1/2) < k+1) <= 0.025.
fn median_ci(x: &[f64]) -> (f64, f64) {
    let n = x.len();
    let mut cdf = 0.0;
    let mut k = 0usize;
    // P(B = j) = C(n, j) / 2^n, accumulated in logs.
    let lnfact = |m: usize| (1..=m).map(|i| (i as f64).ln()).sum::<f64>();
    for j in 0..n {
        let p = (lnfact(n) - lnfact(j) - lnfact(n - j) - n as f64 * 2f64.ln()).exp();
        if cdf + p > 0.025 {
            k = j;
            break;
        }
        cdf += p;
    }
    let hi = n.saturating_sub(1 + k).max(k);
    (x[k], x[hi])
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
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

fn main() {
    let a = parse_args();
    let hz = clock::tsc_hz().unwrap_or(0);
    let ns = |c: f64| if hz > 0 { c * 1e9 / hz as f64 } else { f64::NAN };
    let sides = [Side::C, Side::Rust];
    let mut all: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut ratios = Vec::new();
    let mut round_json = Vec::new();
    let mut disturbed_rounds = 0;
    let started = Instant::now();
    println!(
        "bypass-pingpong: {} rounds x {} calls of {} bytes, {:?} waits, {} CPUs, TSC {:.3} GHz",
        a.rounds,
        a.calls,
        a.size,
        a.mode,
        ncpus(),
        hz as f64 / 1e9
    );
    for round in 0..a.rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut med = [0.0; 2];
        let (b0, o0, t0) = (machine_busy_ns(), own_cpu_ns(), Instant::now());
        for &k in &order {
            let mut s = Vec::with_capacity(a.calls);
            if let Err(e) = run(sides[k], &a, round, &mut s) {
                eprintln!("bypass-pingpong: {} failed: {e}", sides[k].label());
                exit(1);
            }
            med[k] = median(&mut s.clone());
            all[k].extend_from_slice(&s);
        }
        let wall = t0.elapsed().as_nanos() as u64;
        let other = (machine_busy_ns().saturating_sub(b0)).saturating_sub(own_cpu_ns() - o0);
        // Disturbed: the rest of the machine used more than a tenth of one
        // CPU during the round.
        let disturbed = other > wall / 10;
        disturbed_rounds += disturbed as usize;
        let r = med[1] / med[0];
        ratios.push(r);
        round_json.push(format!(
            "{{\"round\":{round},\"c_median_cycles\":{:.1},\"rust_median_cycles\":{:.1},\"ratio\":{r:.4},\"other_cpu_ms\":{:.1},\"disturbed\":{disturbed}}}",
            med[0],
            med[1],
            other as f64 / 1e6
        ));
    }
    let mut sorted_r = ratios.clone();
    sorted_r.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let rmed = if sorted_r.len() % 2 == 1 {
        sorted_r[sorted_r.len() / 2]
    } else {
        (sorted_r[sorted_r.len() / 2 - 1] + sorted_r[sorted_r.len() / 2]) / 2.0
    };
    let (lo, hi) = median_ci(&sorted_r);
    let verdict = if disturbed_rounds * 4 > a.rounds {
        "not resolved: disturbed"
    } else if hi <= 1.05 {
        "MET"
    } else if lo > 1.05 {
        "NOT MET"
    } else {
        "not resolved"
    };
    println!("\n{:<40} {:>10} {:>10} {:>10} {:>10}", "round trip of a call", "median cyc", "median ns", "p99 cyc", "mean cyc");
    let mut variants = Vec::new();
    for (k, side) in sides.iter().enumerate() {
        let v = &mut all[k];
        v.sort_unstable();
        let m = median(v);
        let p99 = pct(v, 0.99);
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        println!("{:<40} {:>10.0} {:>10.1} {:>10.0} {:>10.0}", side.label(), m, ns(m), p99, mean);
        variants.push(format!(
            "{{\"name\":{},\"key\":\"{}\",\"samples\":{},\"median_cycles\":{m:.1},\"median_ns\":{:.2},\"p99_cycles\":{p99:.1},\"mean_cycles\":{mean:.1}}}",
            json_str(side.label()),
            side.key(),
            v.len(),
            ns(m)
        ));
    }
    println!(
        "\nratio Rust / C, per round: median {rmed:.4}, 95% CI [{lo:.4}, {hi:.4}] over {} rounds ({} disturbed)",
        a.rounds, disturbed_rounds
    );
    println!("target: Rust within 5% of C (ratio <= 1.05): {verdict}");
    println!("({:.1} s)", started.elapsed().as_secs_f64());
    if let Some(path) = &a.json {
        let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let envs: Vec<String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("BYPASS_"))
            .map(|(k, v)| format!("{}:{}", json_str(&k), json_str(&v)))
            .collect();
        let j = format!(
            "{{\"experiment\":\"rust.pingpong\",\"description\":\"round trip of a {}-byte call over bypass ipc, Rust (safe crate) vs C, alternating rounds\",\
\"params\":{{\"rounds\":{},\"calls\":{},\"size\":{},\"mode\":\"{:?}\",\"smoke\":{}}},\
\"variants\":[{}],\"ratio\":{{\"of\":\"rust median / c median, per round\",\"median\":{rmed:.4},\"ci95\":[{lo:.4},{hi:.4}],\"rounds\":[{}]}},\
\"target\":{{\"goal\":\"ratio <= 1.05\",\"verdict\":\"{verdict}\"}},\"disturbed_rounds\":{disturbed_rounds},\
\"machine\":{{\"cpu\":{},\"cpus\":{},\"kernel\":{},\"tsc_hz\":{hz}}},\"commit\":{},\"dirty\":{dirty},\"env\":{{{}}}}}\n",
            a.size,
            a.rounds,
            a.calls,
            a.size,
            a.mode,
            a.smoke,
            variants.join(","),
            round_json.join(","),
            json_str(&cpu_model()),
            ncpus(),
            json_str(&kernel()),
            json_str(&commit),
            envs.join(",")
        );
        if let Err(e) = std::fs::write(path, j) {
            eprintln!("bypass-pingpong: {path}: {e}");
            exit(1);
        }
        println!("JSON: {path}");
    }
}
