// SPDX-License-Identifier: MIT
//! syslet: ProgramBuilder, Program, Syslet.
mod common;
use common::*;

use std::io::Write;
use std::time::Duration;

use bypass::syslet::{Arg, AtomId, Engine, Fd, ProgramBuilder, Ran, Syslet, SysletOptions};

const T: Option<Duration> = Some(Duration::from_secs(10));

fn file(dir: &TempDir, name: &str, data: &[u8]) -> String {
    let p = dir.0.join(name);
    std::fs::File::create(&p).unwrap().write_all(data).unwrap();
    p.to_string_lossy().into_owned()
}

/// open, read, close: the result of atom 0 feeds 1 and 2.
fn reader(path: &str, len: usize, tag: u64) -> (ProgramBuilder, AtomId, bypass::syslet::BufId) {
    let mut b = ProgramBuilder::new();
    let p = b.path(path).unwrap();
    let buf = b.buffer(len);
    let open = b.openat(Fd::Cwd, p, libc::O_RDONLY, 0).stop_on_negative().id();
    let read = b.read(Fd::Result(open), buf, len).id();
    b.close(open);
    b.tag(tag);
    (b, read, buf)
}

fn finish(s: &Syslet, r: Ran) -> bypass::syslet::Completion {
    match r {
        Ran::Done(c) => c,
        Ran::Async(_) => s.wait_one(T).unwrap(),
    }
}

#[test]
fn run_passes_results_between_atoms() {
    let _g = serial();
    let dir = TempDir::new("syslet");
    let path = file(&dir, "a", b"syslet data");
    let s = Syslet::new().unwrap();
    let (b, read, buf) = reader(&path, 64, 7);
    let c = finish(&s, s.run(b.build().unwrap()).unwrap());
    assert_eq!(c.tag, 7);
    assert_eq!(c.atom, AtomId::at(2));
    assert_eq!(c.status().unwrap(), 0); // close's result
    assert_eq!(c.steps, 3);
    assert_eq!(c.program.result(read), Some(11));
    assert_eq!(&c.program.buffer(buf)[..11], b"syslet data");
    assert!(matches!(c.engine, Engine::Inline | Engine::Workers | Engine::Uring));
    // The program can run again.
    let c2 = finish(&s, s.run(c.program).unwrap());
    assert_eq!(c2.program.result(read), Some(11));
    let st = s.stats().unwrap();
    assert!(st.programs >= 2);
}

#[test]
fn a_stop_ends_or_branches() {
    let _g = serial();
    let s = Syslet::new().unwrap();
    // A missing file: atom 0 stops the program with -ENOENT.
    let (b, read, _) = reader("/nonexistent/bypass-rs", 16, 1);
    let c = finish(&s, s.run(b.build().unwrap()).unwrap());
    assert_eq!(c.atom, AtomId::at(0));
    assert_eq!(c.result, -(libc::ENOENT as i64));
    assert_eq!(errno(&c.status().unwrap_err()), libc::ENOENT);
    assert_eq!(c.program.result(read), None); // never ran
    // A branch: on error go to atom 2, which adds to a counter.
    let mut b = ProgramBuilder::new();
    let p = b.path("/nonexistent/bypass-rs").unwrap();
    let v = b.var(40);
    b.openat(Fd::Cwd, p, libc::O_RDONLY, 0).stop_on_negative().on_stop(AtomId::at(2));
    b.umem_add(v, 100).then_end(); // skipped
    b.umem_add(v, 2);
    let c = finish(&s, s.run(b.build().unwrap()).unwrap());
    assert_eq!(c.program.var(v), 42);
    assert_eq!(c.result, 42);
}

#[test]
fn loops_need_a_budget() {
    let _g = serial();
    let dir = TempDir::new("loop");
    let data = vec![b'z'; 10_000];
    let src = file(&dir, "src", &data);
    let dst = dir.0.join("dst");
    let out = std::fs::File::create(&dst).unwrap();
    use std::os::fd::AsRawFd;
    let build = |steps: u32| {
        let mut b = ProgramBuilder::new();
        let p = b.path(&src).unwrap();
        let buf = b.buffer(1000);
        let open = b.openat(Fd::Cwd, p, libc::O_RDONLY, 0).stop_on_negative().id();
        let read = b.read(Fd::Result(open), buf, 1000).stop_on_non_positive().on_stop(AtomId::at(3)).id();
        b.write_read(Fd::Raw(out.as_raw_fd()), buf, read).stop_on_negative().on_stop(AtomId::at(3)).next(read);
        b.close(open);
        b.max_steps(steps);
        b.build()
    };
    // A loop without a step budget: the validator refuses it.
    assert_eq!(errno(&build(0).unwrap_err()), libc::EINVAL);
    // A budget too small: ELOOP.
    let s = Syslet::new().unwrap();
    let c = finish(&s, s.run(build(5).unwrap()).unwrap());
    assert_eq!(c.result, -(libc::ELOOP as i64));
    // Enough: the file is copied.
    std::fs::File::create(&dst).unwrap();
    let c = finish(&s, s.run(build(100).unwrap()).unwrap());
    assert_eq!(c.status().unwrap(), 0);
    assert_eq!(std::fs::read(&dst).unwrap().len() % 1000, 0);
}

#[test]
fn builder_and_validator_errors() {
    let _g = serial();
    let mut b = ProgramBuilder::new();
    let buf = b.buffer(10);
    b.read(Fd::Raw(0), buf, 11); // longer than its buffer
    assert_eq!(b.build().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    let mut b = ProgramBuilder::new();
    let buf = b.buffer(10);
    let other = b.buffer(10);
    let r = b.read(Fd::Raw(0), buf, 10).id();
    b.write_read(Fd::Raw(1), other, r); // not the same buffer
    assert!(b.build().is_err());
    // A write_read whose read does not stop on errors, or whose stop
    // branch leads to the write: a negative length would make the kernel
    // read past the buffer.
    let mut b = ProgramBuilder::new();
    let buf = b.buffer(10);
    let r = b.read(Fd::Raw(0), buf, 10).id();
    b.write_read(Fd::Raw(1), buf, r);
    assert_eq!(b.build().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    let mut b = ProgramBuilder::new();
    let buf = b.buffer(10);
    let v = b.var(0);
    let r = b.read(Fd::Raw(0), buf, 10).stop_on_negative().on_stop(AtomId::at(2)).id();
    b.write_read(Fd::Raw(1), buf, r).then_end();
    b.umem_add(v, 1).next(AtomId::at(1)); // the stop branch jumps to the write
    b.max_steps(10);
    assert_eq!(b.build().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    // An empty program, a jump out of it, a result used before it exists,
    // a forbidden call: the library's validator says EINVAL.
    assert_eq!(errno(&ProgramBuilder::new().build().unwrap_err()), libc::EINVAL);
    let mut b = ProgramBuilder::new();
    let v = b.var(0);
    b.umem_add(v, 1).next(AtomId::at(9));
    assert_eq!(errno(&b.build().unwrap_err()), libc::EINVAL);
    let mut b = ProgramBuilder::new();
    // SAFETY: refused by the validator (a result used before it exists).
    unsafe { b.raw(libc::SYS_close, &[Arg::Result(AtomId::at(1))]) };
    let v = b.var(0);
    b.umem_add(v, 1);
    assert_eq!(errno(&b.build().unwrap_err()), libc::EINVAL);
    // close() only closes what an openat of the program opened.
    let mut b = ProgramBuilder::new();
    let v = b.var(3);
    let a = b.umem_add(v, 0).id();
    b.close(a);
    assert_eq!(b.build().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    let mut b = ProgramBuilder::new();
    // SAFETY: refused by the validator, never run.
    unsafe { b.raw(libc::SYS_fork, &[]) };
    assert_eq!(errno(&b.build().unwrap_err()), libc::EINVAL);
    let mut b = ProgramBuilder::new();
    let v = b.var(0);
    for _ in 0..65 {
        b.umem_add(v, 1);
    }
    assert_eq!(errno(&b.build().unwrap_err()), libc::EINVAL);
    // Raw atoms with loads: getpid() + a load of a variable.
    let mut b = ProgramBuilder::new();
    let v = b.var(5);
    // SAFETY: getpid has no argument that touches memory.
    unsafe { b.raw(libc::SYS_getpid, &[]) };
    // SAFETY: umem_add on the program's own variable, by address.
    unsafe { b.raw(bypass::sys::BYPASS_SYSLET_UMEM_ADD as i64, &[Arg::Var(v), Arg::Load(v)]) };
    let s = Syslet::new().unwrap();
    let c = finish(&s, s.run(b.build().unwrap()).unwrap());
    assert_eq!(c.program.result(AtomId::at(0)), Some(std::process::id() as i64));
    assert_eq!(c.program.var(v), 10);
}

#[test]
fn asynchronous_submit_reap_wait() {
    let _g = serial();
    let dir = TempDir::new("async");
    let path = file(&dir, "f", b"0123456789");
    for opts in [SysletOptions::new(), SysletOptions::new().workers_only().workers(2)] {
        let s = opts.create().unwrap();
        let (b, _, buf) = reader(&path, 10, 99);
        let c = finish(&s, s.run(b.build().unwrap()).unwrap());
        assert_eq!(c.tag, 99);
        // Linear programs: io_uring chains where the engine has io_uring.
        let progs: Vec<_> = (0..8).map(|i| reader(&path, 10, 100 + i).0.build().unwrap()).collect();
        s.submit(progs).unwrap();
        let mut tags = Vec::new();
        while tags.len() < 8 {
            s.wait(1, T).unwrap();
            for c in s.reap(8) {
                assert_eq!(c.status().unwrap(), 0);
                assert_eq!(&c.program.buffer(buf)[..10], b"0123456789");
                tags.push(c.tag);
            }
        }
        tags.sort();
        assert_eq!(tags, (100..108).collect::<Vec<_>>());
        assert_eq!(s.in_flight(), 0);
        assert!(s.reap(4).is_empty());
        assert_eq!(errno(&s.wait(1, Some(Duration::from_millis(5))).unwrap_err()), libc::ETIMEDOUT);
        assert_eq!(errno(&s.wait(0, T).unwrap_err()), libc::EINVAL);
    }
}

#[test]
fn explicit_async_and_a_full_ring() {
    let _g = serial();
    // The ring has at least 8 entries.
    let s = SysletOptions::new().entries(8).workers_only().create().unwrap();
    let mk = |tag| {
        let mut b = ProgramBuilder::new();
        let v = b.var(0);
        b.umem_add(v, 1).asynchronous();
        b.tag(tag);
        b.build().unwrap()
    };
    let mut pending = 0;
    for t in 0..8 {
        match s.run(mk(t)).unwrap() {
            Ran::Async(tag) => {
                assert_eq!(tag, t);
                pending += 1;
            }
            Ran::Done(_) => panic!("an ASYNC atom went asynchronous"),
        }
    }
    // The ring holds as many programs as it has entries: EBUSY, and the
    // program comes back.
    let rej = s.run(mk(5)).unwrap_err();
    assert_eq!(errno(&rej.error), libc::EBUSY);
    assert_eq!(rej.programs.len(), 1);
    let rej = s.submit(vec![mk(6), mk(7)]).unwrap_err();
    assert_eq!(rej.programs.len(), 2);
    while pending > 0 {
        let c = s.wait_one(T).unwrap();
        assert_eq!(c.engine, Engine::Workers);
        assert_eq!(c.result, 1);
        pending -= 1;
    }
    // A loop without a budget never becomes a Program.
    let mut bad = ProgramBuilder::new();
    let v = bad.var(0);
    bad.umem_add(v, 1).next(AtomId::at(0));
    assert_eq!(errno(&bad.build().unwrap_err()), libc::EINVAL);
    let st = s.stats().unwrap();
    assert_eq!(st.programs_workers, 8);
}

#[test]
fn bad_options() {
    let _g = serial();
    let e = SysletOptions::new().entries(1 << 20).create().unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL);
}

#[test]
fn syslet_cat_example() {
    let _g = serial();
    let dir = TempDir::new("cat");
    let a = file(&dir, "a", b"first\n");
    let b = file(&dir, "b", &vec![b'x'; 200_000]);
    let out = std::process::Command::new(example("syslet_cat")).args([&a, &b]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout.len(), 6 + 200_000);
    assert!(out.stdout.starts_with(b"first\n"));
    let out = std::process::Command::new(example("syslet_cat")).arg("/nonexistent/x").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
