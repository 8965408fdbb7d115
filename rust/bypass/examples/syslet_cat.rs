// SPDX-License-Identifier: MIT
//! cat(1) as one syslet per file (the Rust counterpart of
//! examples/syslet-cat.c):
//!
//!   0 openat(AT_FDCWD, path, O_RDONLY)   stop if negative
//!   1 read(fd of atom 0, buf, 64 KiB)    stop if <= 0: go to atom 3
//!   2 write(1, buf, length of atom 1)    then back to atom 1 (a loop)
//!   3 close(fd of atom 0)
//!
//! run() executes it in this thread while nothing blocks and hands the rest
//! to a worker when something would (then we wait, to keep files in order).
//!
//!   cargo run --example syslet_cat -- FILE...
use std::io::{self, Write};
use std::process::exit;

use bypass::syslet::{AtomId, Fd, ProgramBuilder, Ran, Syslet};

fn cat(s: &Syslet, path: &str, tag: u64) -> io::Result<bool> {
    let mut b = ProgramBuilder::new();
    let p = b.path(path)?;
    let buf = b.buffer(65536);
    let open = b.openat(Fd::Cwd, p, libc::O_RDONLY, 0).stop_on_negative().id();
    let read = b.read(Fd::Result(open), buf, 65536).stop_on_non_positive().on_stop(AtomId::at(3)).id();
    b.write_read(Fd::Raw(1), buf, read).stop_on_negative().on_stop(AtomId::at(3)).next(read);
    b.close(open);
    b.max_steps(1 << 30).tag(tag); // it loops: a budget is required
    let done = match s.run(b.build()?)? {
        Ran::Done(c) => c,
        Ran::Async(_) => s.wait_one(None)?,
    };
    if done.atom == open || done.result < 0 {
        let e = io::Error::from_raw_os_error((-done.result) as i32);
        eprintln!("syslet_cat: {path}: {e} (atom {})", done.atom.index());
        return Ok(false);
    }
    Ok(true)
}

fn main() {
    let s = match Syslet::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("syslet_cat: {e}");
            exit(1);
        }
    };
    let mut ok = true;
    for (i, path) in std::env::args().skip(1).enumerate() {
        io::stdout().flush().ok();
        match cat(&s, &path, i as u64) {
            Ok(good) => ok &= good,
            Err(e) => {
                eprintln!("syslet_cat: {path}: {e}");
                exit(1);
            }
        }
    }
    if let Ok(st) = s.stats() {
        eprintln!(
            "syslet_cat: {} programs: {} ended inline, {} on workers ({} atoms inline, {} on workers)",
            st.programs, st.programs_inline, st.programs_workers, st.atoms_inline, st.atoms_workers
        );
    }
    exit(if ok { 0 } else { 1 });
}
