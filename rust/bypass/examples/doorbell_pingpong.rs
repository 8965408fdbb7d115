// SPDX-License-Identifier: MIT
//! Two processes pass a doorbell ring back and forth (the Rust counterpart
//! of examples/notify-pingpong.c).  The doorbells are made before fork and
//! inherited; with an awake peer a wait spins and no system call happens.
//!
//!   cargo run --example doorbell_pingpong -- [ROUND_TRIPS]
use std::process::exit;
use std::time::Duration;

use bypass::core::clock;
use bypass::notify::Doorbell;

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let (ping, pong) = match (Doorbell::new(), Doorbell::new()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("doorbell_pingpong: {e}");
            exit(1);
        }
    };
    // SAFETY: single-threaded here; the child only waits and rings, then
    // _exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        eprintln!("doorbell_pingpong: fork: {}", std::io::Error::last_os_error());
        exit(1);
    }
    if child == 0 {
        for _ in 0..n {
            if let Err(e) = ping.wait(None) {
                eprintln!("child: wait: {e}");
                // SAFETY: leave without the parent's destructors.
                unsafe { libc::_exit(1) };
            }
            let _ = pong.ring();
        }
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    let t0 = clock::cycles();
    for _ in 0..n {
        let _ = ping.ring();
        // A 1 s timeout: if the child died we hear about it (EPIPE).
        if let Err(e) = pong.wait(Some(Duration::from_secs(1))) {
            eprintln!("parent: wait: {e}");
            exit(1);
        }
    }
    let cycles = clock::cycles() - t0;
    let mut status = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    println!(
        "{n} round trips, {:.0} ns each ({} backend)",
        clock::cycles_to_ns(cycles) / n as f64,
        ping.backend()
    );
    let _ = ping.destroy();
    let _ = pong.destroy();
}
