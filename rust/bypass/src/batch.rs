// SPDX-License-Identifier: MIT
//! System-call batching through io_uring (`<bypass/batch.h>`): ESCA's
//! segments on a stock kernel, with honest semantics.
//!
//! A [`Segment`] is a stretch of code on one thread: created, it opens the
//! thread's segment (`bypass_batch_start`); the calls made through it are
//! queued instead of entering the kernel one by one; [flushed](Segment::flush)
//! (or dropped), it submits them all with one `io_uring_enter`, waits until
//! every one has finished, and each call's real result is available in the
//! [`Flushed`] it returns, by the [`Ticket`] the call gave.  Calls on one
//! descriptor run in order; one that fails stops the later ones on that
//! descriptor (`ECANCELED`).
//!
//! Payload bytes are not copied by the library: they must stay unchanged
//! until the flush.  A [`Segment::start`] guard therefore takes payloads
//! that live for ever (`&'static [u8]`) or that it keeps until the flush
//! (the `*_owned` calls); [`scope`] lends borrowed buffers, and flushes
//! before it returns.  (A guard that borrowed could be leaked with
//! `mem::forget`, leaving the kernel to read freed memory.)
//!
//! Descriptors are taken as [`AsFd`] and used by number at the flush: keep
//! them open until then ([`Segment::close`] takes ownership of the one it
//! closes).
//!
//! ```no_run
//! use bypass::batch;
//! let out = std::io::stdout();
//! let (_, done) = batch::scope(|seg| {
//!     let a = seg.write(&out, b"hello, ")?;
//!     let b = seg.write(&out, b"world\n")?;
//!     Ok::<_, std::io::Error>((a, b))
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
use std::ffi::{c_int, c_void};
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd};

use crate::sys;
use crate::util::{cvt, cvt_isize, einval};

const CHUNK: usize = 64;
const PENDING: isize = -(libc::EINPROGRESS as isize);

thread_local! {
    static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

/// Which call of a segment a result belongs to (given when it is queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    seg: u64,
    idx: usize,
}

/// The segment open on this thread: calls queued through it run at its
/// flush.  Created by [`Segment::start`] (payloads `'static` or owned) or
/// lent by [`scope`] (payloads borrowed for `'a`).  Dropping it flushes.
///
/// It is neither `Send` nor `Sync`: the segment belongs to the thread that
/// opened it (batch.h: "a stretch of code on one thread").
pub struct Segment<'a> {
    id: u64,
    /// Where the library stores each result: chunks that never move.
    slots: Vec<Vec<isize>>,
    n: usize,
    /// Owned payloads, kept until the flush (leaked with the guard if it is).
    keep: Vec<Vec<u8>>,
    done: bool,
    _buf: PhantomData<fn(&'a ()) -> &'a ()>,
    _thread: crate::util::NotSend,
}

impl std::fmt::Debug for Segment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment").field("id", &self.id).field("queued", &self.n).finish()
    }
}

/// The results of a flushed segment.
#[derive(Debug)]
pub struct Flushed {
    id: u64,
    slots: Vec<Vec<isize>>,
    n: usize,
    stored: usize,
}

impl Flushed {
    /// The result of the call `t` queued: what the system call returned,
    /// or its error.  `EINVAL` for a ticket of another segment.
    pub fn result(&self, t: Ticket) -> io::Result<usize> {
        if t.seg != self.id || t.idx >= self.n {
            return Err(einval());
        }
        cvt_isize(self.slots[t.idx / CHUNK][t.idx % CHUNK])
    }

    /// How many calls were queued.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no call was queued.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// How many results the flush stored (`bypass_batch_flush`'s count;
    /// 0 when the segment had been flushed already by [`flush`]).
    pub fn stored(&self) -> usize {
        self.stored
    }
}

impl Segment<'static> {
    /// Open a segment on this thread.  `EALREADY` if one is open; where
    /// io_uring is unavailable, `ENOSYS` or `EPERM` (no segment is open
    /// then).
    pub fn start() -> io::Result<Segment<'static>> {
        Segment::open()
    }
}

impl<'a> Segment<'a> {
    fn open() -> io::Result<Segment<'a>> {
        // SAFETY: no arguments.
        cvt(unsafe { sys::bypass_batch_start() })?;
        let id = NEXT_ID.with(|c| {
            let v = c.get();
            c.set(v + 1);
            v
        });
        Ok(Segment {
            id,
            slots: Vec::new(),
            n: 0,
            keep: Vec::new(),
            done: false,
            _buf: PhantomData,
            _thread: PhantomData,
        })
    }

    /// The next result slot (stable: chunks never reallocate).
    fn slot(&mut self) -> (*mut isize, Ticket) {
        if self.slots.len() * CHUNK <= self.n {
            self.slots.push(vec![PENDING; CHUNK]);
        }
        let t = Ticket { seg: self.id, idx: self.n };
        let p = &mut self.slots[self.n / CHUNK][self.n % CHUNK] as *mut isize;
        (p, t)
    }

    /// Queue through `f` with the next slot; count it only if queued.
    fn queue(&mut self, f: impl FnOnce(*mut isize) -> c_int) -> io::Result<Ticket> {
        let (p, t) = self.slot();
        cvt(f(p))?;
        self.n += 1;
        Ok(t)
    }

    /// Queue `write(fd, buf)`.
    pub fn write(&mut self, fd: impl AsFd, buf: &'a [u8]) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        // SAFETY: buf lives for 'a, past the flush; res is a stable slot.
        self.queue(|res| unsafe { sys::bypass_batch_write(fd, buf.as_ptr() as *const c_void, buf.len(), res) })
    }

    /// Queue `writev(fd, bufs)` (the array is copied now, the bytes are
    /// read at the flush).
    pub fn writev(&mut self, fd: impl AsFd, bufs: &[IoSlice<'a>]) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let n = c_int::try_from(bufs.len()).map_err(|_| einval())?;
        // SAFETY: IoSlice is ABI-compatible with struct iovec; the bytes
        // live for 'a; the array is copied by the call.
        self.queue(|res| unsafe { sys::bypass_batch_writev(fd, bufs.as_ptr() as *const libc::iovec, n, res) })
    }

    /// Queue `send(fd, buf, flags)` (`libc::MSG_*`: DONTWAIT, NOSIGNAL,
    /// MORE, WAITALL, EOR).
    pub fn send(&mut self, fd: impl AsFd, buf: &'a [u8], flags: i32) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        // SAFETY: as in write.
        self.queue(|res| unsafe { sys::bypass_batch_send(fd, buf.as_ptr() as *const c_void, buf.len(), flags, res) })
    }

    /// Queue `sendto(fd, buf, flags, addr)` (the address is copied now).
    pub fn send_to(&mut self, fd: impl AsFd, buf: &'a [u8], flags: i32, addr: SocketAddr) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let (ss, len) = sockaddr(addr);
        // SAFETY: as in write; the address is copied by the call.
        self.queue(|res| unsafe {
            sys::bypass_batch_sendto(
                fd,
                buf.as_ptr() as *const c_void,
                buf.len(),
                flags,
                &ss as *const _ as *const libc::sockaddr,
                len,
                res,
            )
        })
    }

    /// Queue `sendmsg(fd, msg, flags)` of the buffers `bufs`, to `addr` if
    /// given (the header, the array and the address are copied now).
    pub fn send_msg(
        &mut self,
        fd: impl AsFd,
        bufs: &[IoSlice<'a>],
        addr: Option<SocketAddr>,
        flags: i32,
    ) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let sa = addr.map(sockaddr);
        // SAFETY: zero is a valid msghdr.
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        m.msg_iovlen = bufs.len();
        if let Some((ss, len)) = &sa {
            m.msg_name = ss as *const _ as *mut c_void;
            m.msg_namelen = *len;
        }
        // SAFETY: the description is copied by the call; the bytes live for 'a.
        self.queue(|res| unsafe { sys::bypass_batch_sendmsg(fd, &m, flags, res) })
    }

    /// Queue a sendfile of `count` bytes of `in_fd` at `offset` (`None`:
    /// the file position, which advances) to `out_fd`.
    pub fn sendfile(&mut self, out_fd: impl AsFd, in_fd: impl AsFd, offset: Option<u64>, count: usize) -> io::Result<Ticket> {
        let (o, i) = (out_fd.as_fd().as_raw_fd(), in_fd.as_fd().as_raw_fd());
        let off = match offset {
            None => -1,
            Some(v) => libc::off_t::try_from(v).map_err(|_| einval())?,
        };
        // SAFETY: plain arguments.
        self.queue(|res| unsafe { sys::bypass_batch_sendfile(o, i, off, count, res) })
    }

    /// Queue `shutdown(fd, how)`.
    pub fn shutdown(&mut self, fd: impl AsFd, how: Shutdown) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let how = match how {
            Shutdown::Read => libc::SHUT_RD,
            Shutdown::Write => libc::SHUT_WR,
            Shutdown::Both => libc::SHUT_RDWR,
        };
        // SAFETY: plain arguments.
        self.queue(|res| unsafe { sys::bypass_batch_shutdown(fd, how, res) })
    }

    /// Queue `close(fd)`, taking the descriptor: it is closed at the flush
    /// (or stays open, owned by nobody, if queuing fails: it is closed
    /// then, at once).
    pub fn close(&mut self, fd: OwnedFd) -> io::Result<Ticket> {
        let raw = fd.into_raw_fd();
        // SAFETY: we own raw; the library closes it at the flush.
        let r = self.queue(|res| unsafe { sys::bypass_batch_close(raw, res) });
        if r.is_err() {
            // SAFETY: still ours: nothing was queued.
            unsafe { libc::close(raw) };
        }
        r
    }

    /// Queue `setsockopt(fd, level, name, value)` (up to 64 bytes, copied
    /// now; Linux 6.7).
    pub fn setsockopt(&mut self, fd: impl AsFd, level: i32, name: i32, value: &[u8]) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let len = libc::socklen_t::try_from(value.len()).map_err(|_| einval())?;
        // SAFETY: the value is copied by the call.
        self.queue(|res| unsafe { sys::bypass_batch_setsockopt(fd, level, name, value.as_ptr() as *const c_void, len, res) })
    }

    /// Queue `write(fd, buf)` of a buffer the segment keeps until the
    /// flush.
    pub fn write_owned(&mut self, fd: impl AsFd, buf: impl Into<Vec<u8>>) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let buf = buf.into();
        let (p, len) = (buf.as_ptr(), buf.len());
        self.keep.push(buf);
        // SAFETY: the Vec's bytes stay where they are while kept.
        self.queue(|res| unsafe { sys::bypass_batch_write(fd, p as *const c_void, len, res) })
    }

    /// Queue `send(fd, buf, flags)` of a buffer the segment keeps until
    /// the flush.
    pub fn send_owned(&mut self, fd: impl AsFd, buf: impl Into<Vec<u8>>, flags: i32) -> io::Result<Ticket> {
        let fd = fd.as_fd().as_raw_fd();
        let buf = buf.into();
        let (p, len) = (buf.as_ptr(), buf.len());
        self.keep.push(buf);
        // SAFETY: as in write_owned.
        self.queue(|res| unsafe { sys::bypass_batch_send(fd, p as *const c_void, len, flags, res) })
    }

    /// How many calls are queued.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no call is queued.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Submit every queued call with one `io_uring_enter`, wait until all
    /// have finished, and close the segment.  If io_uring refuses a
    /// submission, the rest run as ordinary system calls: no result is
    /// lost.
    pub fn flush(mut self) -> io::Result<Flushed> {
        let stored = self.do_flush()?;
        Ok(Flushed { id: self.id, slots: std::mem::take(&mut self.slots), n: self.n, stored })
    }

    fn do_flush(&mut self) -> io::Result<usize> {
        self.done = true;
        // SAFETY: no arguments; our slots and payloads are alive.
        match cvt(unsafe { sys::bypass_batch_flush() }) {
            Ok(n) => Ok(n as usize),
            // Flushed already by an explicit flush(): the results are in.
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Segment<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.do_flush();
        }
    }
}

/// Open a segment, let `f` queue calls on buffers it borrows, and flush
/// before returning (also when `f` panics): `f`'s value and the results.
/// `EALREADY` if a segment is open on this thread.
pub fn scope<'a, R>(f: impl FnOnce(&mut Segment<'a>) -> R) -> io::Result<(R, Flushed)> {
    let mut seg = Segment::open()?;
    let r = f(&mut seg);
    let done = seg.flush()?;
    Ok((r, done))
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough.
            let s = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = v4.port().to_be();
            s.sin_addr = libc::in_addr { s_addr: u32::from(*v4.ip()).to_be() };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above.
            let s = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = v6.port().to_be();
            s.sin6_addr = libc::in6_addr { s6_addr: v6.ip().octets() };
            s.sin6_flowinfo = v6.flowinfo();
            s.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

// ------------------------------------------------------- the explicit calls

/// Options of the per-thread queue ([`configure`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchOptions {
    entries: u32,
    sqpoll: bool,
    sqpoll_idle_ms: u32,
}

impl BatchOptions {
    /// The defaults: 256 entries, no SQPOLL.
    pub fn new() -> Self {
        Self::default()
    }
    /// Queue depth: a power of two from 2 to 32768.
    pub fn entries(mut self, n: u32) -> Self {
        self.entries = n;
        self
    }
    /// A kernel thread polls the queue (a flush makes no system call while
    /// it is awake), idling after `idle_ms` (0: 50 ms).
    pub fn sqpoll(mut self, on: bool, idle_ms: u32) -> Self {
        self.sqpoll = on;
        self.sqpoll_idle_ms = idle_ms;
        self
    }
}

/// Set the queue options for the threads of this process that have not
/// made their queue yet.  `EINVAL` (entries not a power of two in range),
/// `EBUSY` (this thread's queue exists already).
pub fn configure(opts: &BatchOptions) -> io::Result<()> {
    let o = sys::bypass_batch_opts {
        entries: opts.entries,
        flags: if opts.sqpoll { sys::BYPASS_BATCH_SQPOLL } else { 0 },
        sqpoll_idle_ms: opts.sqpoll_idle_ms,
        ..Default::default()
    };
    // SAFETY: o is valid for the call.
    cvt(unsafe { sys::bypass_batch_configure(&o) })?;
    Ok(())
}

/// `bypass_batch_start`: open a segment on this thread without a guard.
/// Calls are queued only through a [`Segment`]; this is for code that
/// shares the thread's segment with C code.  `EALREADY` if one is open.
pub fn start() -> io::Result<()> {
    // SAFETY: no arguments.
    cvt(unsafe { sys::bypass_batch_start() })?;
    Ok(())
}

/// `bypass_batch_flush`: flush this thread's open segment (a [`Segment`]
/// then finds it flushed; its results are stored all the same).  The
/// number of results stored, or `ENOTCONN` when no segment is open.
pub fn flush() -> io::Result<usize> {
    // SAFETY: no arguments; every queued payload outlives the flush (the
    // Segment that queued it is alive, or its payloads are 'static/leaked).
    Ok(cvt(unsafe { sys::bypass_batch_flush() })? as usize)
}

/// Whether a segment is open on this thread.
pub fn active() -> bool {
    // SAFETY: no arguments.
    unsafe { sys::bypass_batch_active() == 1 }
}

/// Register `fd` in this thread's io_uring, so that its queued calls skip
/// the kernel's descriptor lookup.  Unregister before closing it.
/// `EALREADY`, `ENOSPC` (4096 registered, or fd >= 4096), `EBADF`.
pub fn register_fd(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain argument.
    cvt(unsafe { sys::bypass_batch_register_fd(fd.as_raw_fd()) })?;
    Ok(())
}

/// Undo [`register_fd`].  `ENOENT` if it was not registered.
pub fn unregister_fd(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain argument.
    cvt(unsafe { sys::bypass_batch_unregister_fd(fd.as_raw_fd()) })?;
    Ok(())
}

/// The process's batching counters (the C struct, whose fields the
/// header documents).
pub type BatchStats = sys::bypass_batch_stats;

/// The counters of the whole process (every thread, the explicit calls
/// and the preload).
pub fn stats() -> io::Result<BatchStats> {
    let mut s = BatchStats::default();
    // SAFETY: s is valid for the call.
    cvt(unsafe { sys::bypass_batch_stats(&mut s) })?;
    Ok(s)
}

// IoSlice is documented ABI-compatible with struct iovec on Unix.
const _: () = assert!(std::mem::size_of::<IoSlice<'static>>() == std::mem::size_of::<libc::iovec>());
