// SPDX-License-Identifier: MIT
//! Programs: what [`ProgramBuilder`] builds and [`Syslet`](super::Syslet)
//! runs.
use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::fd::RawFd;

use crate::sys;
use crate::util::{cvt, einval};

/// An atom of a program, by index (`AtomId::at(3)` names one not built yet,
/// for a forward jump).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomId(pub(super) u16);

impl AtomId {
    /// The atom at index `i`.
    pub const fn at(i: u16) -> AtomId {
        AtomId(i)
    }
    /// Its index.
    pub const fn index(self) -> u16 {
        self.0
    }
}

/// A buffer owned by a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufId(usize);
/// A NUL-terminated path owned by a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathId(usize);
/// A 64-bit variable owned by a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarId(usize);

/// A descriptor argument of a typed atom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fd {
    /// `AT_FDCWD` (for openat).
    Cwd,
    /// A descriptor number of this process.  It is used by number when
    /// the atom runs: keep it open until the program completes.
    Raw(RawFd),
    /// The result of an earlier atom (the descriptor an openat returned).
    Result(AtomId),
}

/// A raw atom's argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Arg {
    /// 0.
    #[default]
    None,
    /// A constant.
    Int(i64),
    /// The result of an earlier atom (earlier on every path).
    Result(AtomId),
    /// The address of one of the program's buffers.
    Buf(BufId),
    /// The address of one of the program's paths.
    Path(PathId),
    /// The address of one of the program's variables.
    Var(VarId),
    /// The value of one of the program's variables, read when the atom runs.
    Load(VarId),
}

impl From<Fd> for Arg {
    fn from(f: Fd) -> Arg {
        match f {
            Fd::Cwd => Arg::Int(libc::AT_FDCWD as i64),
            Fd::Raw(fd) => Arg::Int(fd as i64),
            Fd::Result(a) => Arg::Result(a),
        }
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Raw,
    /// A read into this buffer of at most its length: its result may be a
    /// later write's length on the same buffer.
    Read(BufId),
    /// A write whose length is the result of the read at this index.
    WriteRead(u16),
    /// An openat: its result is a descriptor the program owns.
    Open,
    Typed,
}

#[derive(Clone, Debug)]
struct AtomSpec {
    nr: i32,
    flags: u32,
    next: u16,
    on_stop: u16,
    args: [Arg; 6],
    kind: Kind,
}

/// Builds a [`Program`].
#[derive(Debug, Default)]
pub struct ProgramBuilder {
    atoms: Vec<AtomSpec>,
    bufs: Vec<Vec<u8>>,
    paths: Vec<CString>,
    vars: Vec<i64>,
    max_steps: u32,
    tag: u64,
    error: Option<&'static str>,
}

/// One atom being built: stop conditions, jumps and flags.
#[derive(Debug)]
pub struct AtomMut<'b> {
    b: &'b mut ProgramBuilder,
    i: usize,
}

impl AtomMut<'_> {
    fn flag(self, f: u32) -> Self {
        self.b.atoms[self.i].flags |= f;
        self
    }
    /// Stop when the result is negative (an error).
    pub fn stop_on_negative(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_STOP_ON_NEGATIVE)
    }
    /// Stop when the result is zero or negative (end of file or error).
    pub fn stop_on_non_positive(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_STOP_ON_NON_POSITIVE)
    }
    /// Stop when the result is zero.
    pub fn stop_on_zero(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_STOP_ON_ZERO)
    }
    /// Stop when the result is not zero.
    pub fn stop_on_nonzero(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_STOP_ON_NONZERO)
    }
    /// When a stop condition triggers, go on at `target` (a branch)
    /// instead of ending the program.
    pub fn on_stop(self, target: AtomId) -> Self {
        self.b.atoms[self.i].on_stop = sys::BYPASS_SYSLET_GOTO(target.0);
        self
    }
    /// When no stop condition triggers, go on at `target` (a loop, or a
    /// jump) instead of the following atom.
    pub fn next(self, target: AtomId) -> Self {
        self.b.atoms[self.i].next = sys::BYPASS_SYSLET_GOTO(target.0);
        self
    }
    /// When no stop condition triggers, end the program here.
    pub fn then_end(self) -> Self {
        self.b.atoms[self.i].next = sys::BYPASS_SYSLET_END;
        self
    }
    /// Go asynchronous at this atom (it and the rest run on a worker).
    pub fn asynchronous(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_ASYNC)
    }
    /// Run in the caller even if it blocks.
    pub fn synchronous(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_SYNC)
    }
    /// No completion if the program ends at this atom (when it ends
    /// asynchronously there, the context keeps the program until it is
    /// dropped).
    pub fn no_complete(self) -> Self {
        self.flag(sys::BYPASS_SYSLET_NO_COMPLETE)
    }
    /// The atom's id.
    pub fn id(self) -> AtomId {
        AtomId(self.i as u16)
    }
}

impl ProgramBuilder {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// A zeroed buffer of `len` bytes owned by the program.
    pub fn buffer(&mut self, len: usize) -> BufId {
        self.bufs.push(vec![0; len]);
        BufId(self.bufs.len() - 1)
    }

    /// A buffer owned by the program, holding `data`.
    pub fn buffer_from(&mut self, data: impl Into<Vec<u8>>) -> BufId {
        self.bufs.push(data.into());
        BufId(self.bufs.len() - 1)
    }

    /// A path owned by the program; `EINVAL` if it holds a NUL byte.
    pub fn path(&mut self, p: impl AsRef<std::path::Path>) -> io::Result<PathId> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(p.as_ref().as_os_str().as_bytes()).map_err(|_| einval())?;
        self.paths.push(c);
        Ok(PathId(self.paths.len() - 1))
    }

    /// A 64-bit variable owned by the program (for `umem_add` and loads).
    pub fn var(&mut self, init: i64) -> VarId {
        self.vars.push(init);
        VarId(self.vars.len() - 1)
    }

    /// The most atoms executed (required when the program can loop; 0:
    /// the number of atoms).  A program that runs out ends with `ELOOP`.
    pub fn max_steps(&mut self, n: u32) -> &mut Self {
        self.max_steps = n;
        self
    }

    /// The tag returned in the completion.
    pub fn tag(&mut self, tag: u64) -> &mut Self {
        self.tag = tag;
        self
    }

    fn push(&mut self, nr: i64, args: &[Arg], kind: Kind) -> AtomMut<'_> {
        let mut a = [Arg::None; 6];
        if args.len() > 6 {
            self.error = Some("more than 6 arguments");
        }
        for (d, s) in a.iter_mut().zip(args) {
            *d = *s;
        }
        let nr = i32::try_from(nr).unwrap_or_else(|_| {
            self.error = Some("system call number out of range");
            0
        });
        self.atoms.push(AtomSpec { nr, flags: 0, next: 0, on_stop: 0, args: a, kind });
        let i = self.atoms.len() - 1;
        AtomMut { b: self, i }
    }

    fn buf_len(&mut self, b: BufId) -> usize {
        match self.bufs.get(b.0) {
            Some(v) => v.len(),
            None => {
                self.error = Some("unknown buffer");
                0
            }
        }
    }

    /// `openat(dir, path, flags, mode)`.
    pub fn openat(&mut self, dir: Fd, path: PathId, flags: i32, mode: u32) -> AtomMut<'_> {
        if path.0 >= self.paths.len() {
            self.error = Some("unknown path");
        }
        self.push(
            libc::SYS_openat,
            &[dir.into(), Arg::Path(path), Arg::Int(flags as i64), Arg::Int(mode as i64)],
            Kind::Open,
        )
    }

    /// `read(fd, buf, len)`, `len` at most the buffer's length.
    pub fn read(&mut self, fd: Fd, buf: BufId, len: usize) -> AtomMut<'_> {
        if len > self.buf_len(buf) {
            self.error = Some("read longer than its buffer");
        }
        self.push(libc::SYS_read, &[fd.into(), Arg::Buf(buf), Arg::Int(len as i64)], Kind::Read(buf))
    }

    /// `write(fd, buf, len)` of `len` bytes (at most the buffer's length).
    pub fn write(&mut self, fd: Fd, buf: BufId, len: usize) -> AtomMut<'_> {
        if len > self.buf_len(buf) {
            self.error = Some("write longer than its buffer");
        }
        self.push(libc::SYS_write, &[fd.into(), Arg::Buf(buf), Arg::Int(len as i64)], Kind::Typed)
    }

    /// `write(fd, buf, n)` where `n` is the result of `read`, an earlier
    /// [`read`](ProgramBuilder::read) into the same buffer (so it never
    /// exceeds it): the classic copy loop.  The read must stop on a
    /// negative result (`stop_on_negative` or `stop_on_non_positive`), and
    /// its stop branch must not lead to this write without running the
    /// read again: [`build`](ProgramBuilder::build) refuses the program
    /// otherwise, since a negative length would make the kernel read past
    /// the buffer.
    pub fn write_read(&mut self, fd: Fd, buf: BufId, read: AtomId) -> AtomMut<'_> {
        match self.atoms.get(read.0 as usize).map(|a| &a.kind) {
            Some(Kind::Read(b)) if *b == buf => {}
            _ => self.error = Some("write_read: not a read into the same buffer"),
        }
        self.push(libc::SYS_write, &[fd.into(), Arg::Buf(buf), Arg::Result(read)], Kind::WriteRead(read.0))
    }

    /// `close(fd)` of the descriptor an earlier [`openat`] atom opened
    /// (only those: a descriptor of the process's own is not the program's
    /// to close).
    ///
    /// [`openat`]: ProgramBuilder::openat
    pub fn close(&mut self, opened: AtomId) -> AtomMut<'_> {
        if !matches!(self.atoms.get(opened.0 as usize).map(|a| &a.kind), Some(Kind::Open)) {
            self.error = Some("close: not an openat atom");
        }
        self.push(libc::SYS_close, &[Arg::Result(opened)], Kind::Typed)
    }

    /// `fsync(fd)`.
    pub fn fsync(&mut self, fd: Fd) -> AtomMut<'_> {
        self.push(libc::SYS_fsync, &[fd.into()], Kind::Typed)
    }

    /// Add `delta` to the variable `var` atomically; the result is the new
    /// value (Syslets' `sys_umem_add`).
    pub fn umem_add(&mut self, var: VarId, delta: i64) -> AtomMut<'_> {
        if var.0 >= self.vars.len() {
            self.error = Some("unknown variable");
        }
        self.push(sys::BYPASS_SYSLET_UMEM_ADD as i64, &[Arg::Var(var), Arg::Int(delta)], Kind::Typed)
    }

    /// Any system call with any arguments.
    ///
    /// # Safety
    /// The call runs with these arguments, in this thread or a worker, at
    /// any time until the program completes: it must not break memory
    /// safety (write where Rust does not expect it, unmap or close what
    /// others own, change the thread's state) whatever the results fed to
    /// it.  The library refuses fork, exec, exit and similar calls.
    pub unsafe fn raw(&mut self, nr: i64, args: &[Arg]) -> AtomMut<'_> {
        self.push(nr, args, Kind::Raw)
    }

    /// Check the program with the library's validator (`EINVAL`: a bad
    /// jump or argument, a result used before it exists on some path, a
    /// loop without [`max_steps`](ProgramBuilder::max_steps), a forbidden
    /// call, more than 64 atoms) and make it.
    pub fn build(self) -> io::Result<Program> {
        if let Some(why) = self.error {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        }
        for a in &self.atoms {
            for g in &a.args {
                let ok = match *g {
                    Arg::Buf(b) => b.0 < self.bufs.len(),
                    Arg::Path(p) => p.0 < self.paths.len(),
                    Arg::Var(v) | Arg::Load(v) => v.0 < self.vars.len(),
                    _ => true,
                };
                if !ok {
                    return Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown buffer, path or variable"));
                }
            }
        }
        self.check_write_reads()?;
        let n = self.atoms.len();
        let mut p = Program {
            atoms: self.atoms,
            bufs: self.bufs,
            paths: self.paths,
            vars: self.vars,
            results: vec![NOT_RUN; n],
            c_atoms: Vec::with_capacity(n),
            max_steps: self.max_steps,
            tag: self.tag,
        };
        let prog = p.materialize(0);
        // SAFETY: prog points into p, alive for the call.
        cvt(unsafe { sys::bypass_syslet_validate(&prog) })?;
        Ok(p)
    }
}

impl ProgramBuilder {
    /// The atoms execution may go to after atom `i`: on (no stop) and, if
    /// it has stop flags, on a stop.
    fn successors(&self, i: usize) -> Vec<usize> {
        let n = self.atoms.len();
        let a = &self.atoms[i];
        let target = |t: u16, default: Option<usize>| match t {
            0 => default,
            sys::BYPASS_SYSLET_END => None,
            g => Some(g as usize - 1),
        };
        let mut out = Vec::new();
        if let Some(j) = target(a.next, (i + 1 < n).then_some(i + 1)) {
            out.push(j);
        }
        if a.flags & STOPS != 0 {
            if let Some(j) = target(a.on_stop, None) {
                out.push(j);
            }
        }
        out
    }

    /// Each write_read: its read stops on a negative result, and no path
    /// from that stop reaches the write without running the read again.
    fn check_write_reads(&self) -> io::Result<()> {
        let bad = |why| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        for (w, a) in self.atoms.iter().enumerate() {
            let Kind::WriteRead(r) = a.kind else { continue };
            let r = r as usize;
            let read = &self.atoms[r];
            let neg = sys::BYPASS_SYSLET_STOP_ON_NEGATIVE | sys::BYPASS_SYSLET_STOP_ON_NON_POSITIVE;
            if read.flags & neg == 0 {
                return bad("write_read: its read must stop on a negative result");
            }
            let start = match read.on_stop {
                0 | sys::BYPASS_SYSLET_END => continue,
                g => g as usize - 1,
            };
            let (mut seen, mut todo) = (vec![false; self.atoms.len()], vec![start]);
            while let Some(i) = todo.pop() {
                if i >= self.atoms.len() || i == r || std::mem::replace(&mut seen[i], true) {
                    continue; // out of range (the validator says so), or the read runs again
                }
                if i == w {
                    return bad("write_read: the read's stop branch reaches the write");
                }
                todo.extend(self.successors(i));
            }
        }
        Ok(())
    }
}

const STOPS: u32 = sys::BYPASS_SYSLET_STOP_ON_NONZERO
    | sys::BYPASS_SYSLET_STOP_ON_ZERO
    | sys::BYPASS_SYSLET_STOP_ON_NEGATIVE
    | sys::BYPASS_SYSLET_STOP_ON_NON_POSITIVE;

const NOT_RUN: i64 = i64::MIN;

/// A checked program, owning the memory its atoms point into.
pub struct Program {
    atoms: Vec<AtomSpec>,
    bufs: Vec<Vec<u8>>,
    paths: Vec<CString>,
    vars: Vec<i64>,
    results: Vec<i64>,
    c_atoms: Vec<sys::bypass_syslet_atom>,
    max_steps: u32,
    tag: u64,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("atoms", &self.atoms.len())
            .field("tag", &self.tag)
            .field("results", &self.results)
            .finish()
    }
}

impl Program {
    /// The C program, with every pointer taken afresh from the owned
    /// memory, the results reset, and `id` as the C tag.
    pub(super) fn materialize(&mut self, id: u64) -> sys::bypass_syslet_prog {
        self.c_atoms.clear();
        let results = self.results.as_mut_ptr();
        for (i, a) in self.atoms.iter().enumerate() {
            let mut c = sys::bypass_syslet_atom {
                nr: a.nr,
                flags: a.flags,
                next: a.next,
                on_stop: a.on_stop,
                // SAFETY: i < results.len().
                ret: unsafe { results.add(i) },
                ..Default::default()
            };
            for (d, g) in c.arg.iter_mut().zip(a.args.iter()) {
                *d = match *g {
                    Arg::None => sys::bypass_syslet_arg::default(),
                    Arg::Int(v) => sys::BYPASS_SYSLET_C(v as u64),
                    Arg::Result(r) => sys::BYPASS_SYSLET_R(r.0 as u64),
                    Arg::Buf(b) => sys::BYPASS_SYSLET_P(self.bufs[b.0].as_mut_ptr()),
                    Arg::Path(p) => sys::BYPASS_SYSLET_P(self.paths[p.0].as_ptr()),
                    Arg::Var(v) => sys::BYPASS_SYSLET_P(self.vars.as_mut_ptr().wrapping_add(v.0)),
                    Arg::Load(v) => sys::BYPASS_SYSLET_LOAD(self.vars.as_ptr().wrapping_add(v.0)),
                };
            }
            self.c_atoms.push(c);
        }
        self.results.iter_mut().for_each(|r| *r = NOT_RUN);
        sys::bypass_syslet_prog {
            atoms: self.c_atoms.as_ptr(),
            natoms: self.atoms.len() as u32,
            max_steps: self.max_steps,
            tag: id,
            ..Default::default()
        }
    }

    /// A buffer's bytes (what reads put there, after completion).
    pub fn buffer(&self, b: BufId) -> &[u8] {
        &self.bufs[b.0]
    }

    /// A buffer's bytes, to fill before running the program.
    pub fn buffer_mut(&mut self, b: BufId) -> &mut [u8] {
        &mut self.bufs[b.0]
    }

    /// A variable's value.
    pub fn var(&self, v: VarId) -> i64 {
        self.vars[v.0]
    }

    /// Set a variable before running the program.
    pub fn set_var(&mut self, v: VarId, value: i64) {
        self.vars[v.0] = value;
    }

    /// The result of atom `a` in the last run, `None` if it did not run.
    /// (An atom run several times, in a loop, keeps its last result.)
    pub fn result(&self, a: AtomId) -> Option<i64> {
        self.results.get(a.0 as usize).copied().filter(|&r| r != NOT_RUN)
    }

    /// The program's tag.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// Change the tag.
    pub fn set_tag(&mut self, tag: u64) {
        self.tag = tag;
    }

    /// The number of atoms.
    pub fn len(&self) -> usize {
        self.atoms.len()
    }

    /// Whether it has no atom (never true of a built program).
    pub fn is_empty(&self) -> bool {
        self.atoms.is_empty()
    }
}
