// SPDX-License-Identifier: MIT
//! Syslets (`<bypass/syslet.h>`): small programs of system calls
//! ("atoms") submitted with one call, with stop conditions, branches,
//! loops and results fed from one atom to the next, run inline while
//! nothing blocks and asynchronously from the first atom that would.
//!
//! A [`ProgramBuilder`] makes a [`Program`]: typed atoms (`openat`,
//! `read`, `write`, `close`, `fsync`, `umem_add`) over memory the program
//! owns (buffers, paths, 64-bit variables), or raw atoms (`unsafe`: any
//! system call with any arguments), and [`ProgramBuilder::build`] checks it
//! with the library's validator.  A [`Syslet`] context
//! [runs](Syslet::run) or [submits](Syslet::submit) programs by value: it
//! keeps each one (and the memory its atoms point into) until its
//! [`Completion`] hands it back, with its buffers, variables and every
//! atom's result.
//!
//! ```no_run
//! use bypass::syslet::{Fd, ProgramBuilder, Ran, Syslet};
//! let s = Syslet::new()?;
//! let mut b = ProgramBuilder::new();
//! let path = b.path("/etc/hostname")?;
//! let buf = b.buffer(4096);
//! let open = b.openat(Fd::Cwd, path, libc::O_RDONLY, 0).stop_on_negative().id();
//! let read = b.read(Fd::Result(open), buf, 4096).id();
//! b.close(open);
//! let prog = b.build()?;
//! let done = match s.run(prog)? {
//!     Ran::Done(c) => c,
//!     Ran::Async(_) => s.wait_one(None)?,
//! };
//! let n = done.program.result(read).unwrap_or(0).max(0) as usize;
//! println!("{}", String::from_utf8_lossy(&done.program.buffer(buf)[..n]));
//! # Ok::<(), std::io::Error>(())
//! ```
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::sys;
use crate::util::{cvt, einval, timeout_ns};

mod program;
pub use program::{Arg, AtomId, AtomMut, BufId, Fd, PathId, Program, ProgramBuilder, VarId};

/// Which engine ended a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The calling thread.
    Inline,
    /// A worker thread.
    Workers,
    /// io_uring.
    Uring,
    /// A value this wrapper does not know.
    Other(u16),
}

impl Engine {
    fn from_raw(v: u32) -> Engine {
        match v {
            sys::BYPASS_SYSLET_ENGINE_INLINE => Engine::Inline,
            sys::BYPASS_SYSLET_ENGINE_WORKERS => Engine::Workers,
            sys::BYPASS_SYSLET_ENGINE_URING => Engine::Uring,
            v => Engine::Other(v as u16),
        }
    }
}

/// A program that ended, handed back.
#[derive(Debug)]
pub struct Completion {
    /// The program's tag.
    pub tag: u64,
    /// The result of the atom that ended it (`-ELOOP` when the step
    /// budget ran out).
    pub result: i64,
    /// That atom.
    pub atom: AtomId,
    /// The engine that ended it.
    pub engine: Engine,
    /// Atoms executed.
    pub steps: u32,
    /// The program, with its buffers, variables and results.
    pub program: Program,
}

impl Completion {
    /// The final result as `io::Result`: a negative one is the error.
    pub fn status(&self) -> io::Result<i64> {
        if self.result < 0 {
            Err(io::Error::from_raw_os_error((-self.result) as i32))
        } else {
            Ok(self.result)
        }
    }
}

/// What [`Syslet::run`] did.
#[derive(Debug)]
pub enum Ran {
    /// The program ended in the calling thread.
    Done(Completion),
    /// It went asynchronous: its completion comes from
    /// [`Syslet::reap`] / [`Syslet::wait`], with this tag.
    Async(u64),
}

/// Programs the library refused, handed back (nothing of them ran).
#[derive(Debug)]
pub struct Rejected {
    /// Why: `EINVAL` (bad program), `EFAULT`, `EBUSY` (the completion ring
    /// holds as many programs as it has entries: reap first), `ENOMEM`; or
    /// `EBADFD` (the context's io_uring was closed behind its back: destroy
    /// the context), where part of them may have run and the context keeps
    /// them.
    pub error: io::Error,
    /// The programs (none after `EBADFD`).
    pub programs: Vec<Program>,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} program(s) refused: {}", self.programs.len(), self.error)
    }
}

impl std::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<Rejected> for io::Error {
    fn from(r: Rejected) -> io::Error {
        r.error
    }
}

/// Options of a [`Syslet`] context.
#[derive(Clone, Copy, Debug, Default)]
pub struct SysletOptions {
    entries: u32,
    workers: u32,
    engine: u32,
}

impl SysletOptions {
    /// The defaults: 256 programs in flight, 8 workers, io_uring where it
    /// works.
    pub fn new() -> Self {
        Self::default()
    }
    /// Completion ring size: programs in flight at most (a power of two up
    /// to 65536).
    pub fn entries(mut self, n: u32) -> Self {
        self.entries = n;
        self
    }
    /// Worker threads at most.
    pub fn workers(mut self, n: u32) -> Self {
        self.workers = n;
        self
    }
    /// Use only the worker threads, never io_uring.
    pub fn workers_only(mut self) -> Self {
        self.engine = sys::BYPASS_SYSLET_ENGINE_WORKERS;
        self
    }
    /// Require the io_uring engine (`EOPNOTSUPP` where it is refused).
    pub fn uring(mut self) -> Self {
        self.engine = sys::BYPASS_SYSLET_ENGINE_URING;
        self
    }
    /// Create the context.
    pub fn create(&self) -> io::Result<Syslet> {
        let o = sys::bypass_syslet_opts {
            entries: self.entries,
            workers: self.workers,
            engine: self.engine,
            ..Default::default()
        };
        let mut out = ptr::null_mut();
        // SAFETY: o and out are valid for the call.
        cvt(unsafe { sys::bypass_syslet_create(&o, &mut out) })?;
        Ok(Syslet {
            raw: NonNull::new(out).ok_or_else(einval)?,
            inflight: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        })
    }
}

/// The counters of a context (the C struct, documented in the header).
pub type SysletStats = sys::bypass_syslet_stats;

/// A syslet context: a completion ring, a pool of worker threads and an
/// io_uring.  It owns the programs in flight.
pub struct Syslet {
    raw: NonNull<sys::bypass_syslet>,
    /// Programs in flight, by their C tag.
    inflight: Mutex<HashMap<u64, Program>>,
    next: AtomicU64,
}

impl fmt::Debug for Syslet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Syslet").field("raw", &self.raw).finish()
    }
}

// SAFETY: syslet.h / docs/syslet.md: "Any number of threads may run,
// submit, reap and wait on one context"; the completion ring is a
// multi-producer multi-consumer queue.  Our own table of programs in
// flight is behind a Mutex.
unsafe impl Send for Syslet {}
// SAFETY: see Send.
unsafe impl Sync for Syslet {}

impl Syslet {
    /// A context with the default options.
    pub fn new() -> io::Result<Syslet> {
        SysletOptions::new().create()
    }

    fn id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn complete(raw: &sys::bypass_syslet_completion, program: Program) -> Completion {
        Completion {
            tag: program.tag(),
            result: raw.result,
            atom: AtomId(raw.atom),
            engine: Engine::from_raw(raw.engine as u32),
            steps: raw.steps,
            program,
        }
    }

    /// Run one program: in this thread while nothing blocks ([`Ran::Done`]),
    /// else the rest goes on asynchronously ([`Ran::Async`]) and the
    /// context keeps the program until its completion is reaped.
    pub fn run(&self, mut prog: Program) -> Result<Ran, Rejected> {
        let id = self.id();
        let tag = prog.tag();
        let c = prog.materialize(id);
        // Into the table first: a worker may finish it, and another thread
        // reap it, before run returns.  Moving the Program does not move
        // the memory its atoms point into.
        self.inflight.lock().unwrap().insert(id, prog);
        let mut done = sys::bypass_syslet_completion::default();
        // SAFETY: c and the memory it points into stay alive in the table
        // until the completion is reaped (or for ever, see Drop).
        let r = unsafe { sys::bypass_syslet_run(self.raw.as_ptr(), &c, &mut done) };
        match r {
            0 => Ok(Ran::Async(tag)),
            1 => {
                let p = self.inflight.lock().unwrap().remove(&id).expect("program in flight");
                Ok(Ran::Done(Self::complete(&done, p)))
            }
            e if e == -libc::EBADFD => {
                // The context's io_uring was closed behind its back and part
                // of the program may have run: it stays in the table (and is
                // leaked with the context), in case a request still names it.
                Err(Rejected { error: io::Error::from_raw_os_error(-e), programs: Vec::new() })
            }
            e => {
                let p = self.inflight.lock().unwrap().remove(&id).expect("program in flight");
                Err(Rejected { error: io::Error::from_raw_os_error(-e), programs: vec![p] })
            }
        }
    }

    /// Submit programs; each one's completion goes to the ring.  All are
    /// validated first: if one is invalid, none runs.  Linear programs
    /// io_uring can express go as linked chains in one system call.
    pub fn submit(&self, progs: Vec<Program>) -> Result<(), Rejected> {
        let n = u32::try_from(progs.len()).map_err(|_| Rejected { error: einval(), programs: Vec::new() })?;
        let mut cs = Vec::with_capacity(progs.len());
        let mut ids = Vec::with_capacity(progs.len());
        {
            let mut t = self.inflight.lock().unwrap();
            for mut p in progs {
                let id = self.id();
                cs.push(p.materialize(id));
                ids.push(id);
                t.insert(id, p);
            }
        }
        // SAFETY: as in run; cs points into the programs in the table.
        let r = unsafe { sys::bypass_syslet_submit(self.raw.as_ptr(), cs.as_ptr(), n) };
        if r == -libc::EBADFD {
            // As in run: programs of this call may have run; kept.
            return Err(Rejected { error: io::Error::from_raw_os_error(-r), programs: Vec::new() });
        }
        if r < 0 {
            let mut t = self.inflight.lock().unwrap();
            let programs = ids.iter().filter_map(|id| t.remove(id)).collect();
            return Err(Rejected { error: io::Error::from_raw_os_error(-r), programs });
        }
        Ok(())
    }

    /// Take up to `max` completions from the ring, without a system call
    /// when they are there.
    pub fn reap(&self, max: usize) -> Vec<Completion> {
        let max = max.min(u32::MAX as usize);
        let mut raw = vec![sys::bypass_syslet_completion::default(); max];
        // SAFETY: raw has room for max completions.
        let n = unsafe { sys::bypass_syslet_reap(self.raw.as_ptr(), raw.as_mut_ptr(), max as u32) };
        let n = n.max(0) as usize;
        let mut t = self.inflight.lock().unwrap();
        raw[..n]
            .iter()
            .filter_map(|c| t.remove(&c.tag).map(|p| Self::complete(c, p)))
            .collect()
    }

    /// Wait until at least `min` completions are in the ring, at most
    /// `timeout`: how many are there.  `ETIMEDOUT`; `EINVAL` (min is 0 or
    /// larger than the ring).
    pub fn wait(&self, min: u32, timeout: Option<Duration>) -> io::Result<usize> {
        // SAFETY: a live context.
        Ok(cvt(unsafe { sys::bypass_syslet_wait(self.raw.as_ptr(), min, timeout_ns(timeout)) })? as usize)
    }

    /// Wait for one completion and reap it.
    pub fn wait_one(&self, timeout: Option<Duration>) -> io::Result<Completion> {
        loop {
            self.wait(1, timeout)?;
            if let Some(c) = self.reap(1).pop() {
                return Ok(c);
            }
            // Another thread took it: wait again.
        }
    }

    /// How many programs are in flight (run asynchronously or submitted,
    /// not yet reaped).
    pub fn in_flight(&self) -> usize {
        self.inflight.lock().unwrap().len()
    }

    /// The context's counters.
    pub fn stats(&self) -> io::Result<SysletStats> {
        let mut s = SysletStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_syslet_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }
}

impl Drop for Syslet {
    fn drop(&mut self) {
        // SAFETY: live, and not used again.  destroy waits for the workers'
        // programs and cancels io_uring chains; it does not wait until the
        // kernel has let go of a cancelled chain's buffers.
        unsafe { sys::bypass_syslet_destroy(self.raw.as_ptr()) };
        // Programs never reaped may still be named by a cancelled io_uring
        // request (or ended at a NO_COMPLETE atom): their memory is leaked
        // rather than freed under the kernel.
        let t = std::mem::take(&mut *self.inflight.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, p) in t {
            std::mem::forget(p);
        }
    }
}
