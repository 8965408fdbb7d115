// SPDX-License-Identifier: MIT
//! Calls and messages between processes through shared memory
//! (`<bypass/ipc.h>`), with no system call while both sides are awake: the
//! stock-kernel counterpart of RPAL.
//!
//! A server [listens](Service::listen) on a named service; a client
//! [connects](Conn::connect).  The handshake checks the peer's credentials
//! and passes a shared arena holding one ring per direction.  A message is
//! [loaned](Conn::loan) from the ring, written in place and sent (no copy),
//! or [sent](Conn::send) from a private buffer (one copy); the receiver
//! reads it in place ([`Msg`] derefs to `&[u8]`) and the room goes back to
//! the sender when the `Msg` is dropped.  [`Conn::call`] sends a request and
//! waits for the response, which the server [answers](Msg::reply).
//!
//! Lifetimes make misuse a compile error: a [`Loan`] and a [`Msg`] borrow
//! their connection, so neither outlives it; a `Loan` dropped unsent is
//! given back (`bypass_ipc_loan_cancel`), a `Msg` dropped is released.
//!
//! A peer that dies becomes `ECONNRESET` (receiving) or `EPIPE` (sending)
//! within about 20 ms; a peer that writes garbage into the rings cannot
//! make this process touch memory outside the arena.
//!
//! Library mode ([`LibService`], [`LibClient`]) is RPAL's call itself: the
//! service's handlers, loaded from one shared object, run in the caller's
//! thread.
//!
//! ```no_run
//! use bypass::ipc::{Conn, IpcOptions};
//! use std::time::Duration;
//! let conn = Conn::connect("echo", &IpcOptions::new())?;
//! let mut loan = conn.loan(5, Some(Duration::from_secs(1)))?;
//! loan.copy_from_slice(b"hello");
//! let answer = loan.call(5, Some(Duration::from_secs(1)))?;
//! assert_eq!(&*answer, b"hello");
//! # Ok::<(), std::io::Error>(())
//! ```
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::core::WaitMode;

mod epoll;
mod library;
pub use epoll::{Epoll, Event};
pub use library::{Accepted, LibClient, LibEvent, LibOptions, LibService, LibStats, Protect};
use crate::sys;
use crate::util::{cstring, cvt, einval, spin_ns, timeout_ns, NotSync};

/// Options of a service or a connection (a builder).
#[derive(Clone, Debug, Default)]
pub struct IpcOptions {
    ring_size: usize,
    max_msg: usize,
    mode: WaitMode,
    spin: Option<Duration>,
    handshake_timeout: Option<Duration>,
    allow_uids: Vec<libc::uid_t>,
    flags: u32,
    max_ring: usize,
    max_per_pid: u32,
    max_per_uid: u32,
}

impl IpcOptions {
    /// The defaults: 1 MiB rings, adaptive waits, peers of our own uid.
    pub fn new() -> Self {
        Self::default()
    }
    /// Service: bytes per direction of each connection's rings, a power of
    /// two from 4 KiB to 1 GiB.
    pub fn ring_size(mut self, bytes: usize) -> Self {
        self.ring_size = bytes;
        self
    }
    /// Service: the largest message (default a quarter of the ring).
    pub fn max_msg(mut self, bytes: usize) -> Self {
        self.max_msg = bytes;
        self
    }
    /// How this side waits.
    pub fn mode(mut self, mode: WaitMode) -> Self {
        self.mode = mode;
        self
    }
    /// The adaptive spin budget (default 20 µs).
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = Some(spin);
        self
    }
    /// Client: how long to wait for the server's handshake (default 5 s).
    pub fn handshake_timeout(mut self, t: Duration) -> Self {
        self.handshake_timeout = Some(t);
        self
    }
    /// Accept peers of these uids besides our own.
    pub fn allow_uids(mut self, uids: &[libc::uid_t]) -> Self {
        self.allow_uids = uids.to_vec();
        self
    }
    /// Accept peers of any uid (no credential check).
    pub fn any_uid(mut self, yes: bool) -> Self {
        self.set_flag(sys::BYPASS_IPC_ANY_UID, yes);
        self
    }
    /// Guard this process's mapping of the arena with a memory protection
    /// key ([`pkey_supported`]); `EOPNOTSUPP` where there are none.
    pub fn pkey(mut self, yes: bool) -> Self {
        self.set_flag(sys::BYPASS_IPC_PKEY, yes);
        self
    }
    /// Do not pre-fault this side's mapping of the rings.
    pub fn lazy(mut self, yes: bool) -> Self {
        self.set_flag(sys::BYPASS_IPC_LAZY, yes);
        self
    }
    /// Client: the largest ring accepted from a server (default 16 MiB;
    /// a larger offer fails with `EFBIG`).
    pub fn max_ring(mut self, bytes: usize) -> Self {
        self.max_ring = bytes;
        self
    }
    /// Service: connections open at once per client process and per client
    /// uid (default 64 and 1024; `u32::MAX`: no limit).
    pub fn max_connections(mut self, per_pid: u32, per_uid: u32) -> Self {
        self.max_per_pid = per_pid;
        self.max_per_uid = per_uid;
        self
    }
    /// Raw `BYPASS_IPC_*` flags, for flags this wrapper does not name yet
    /// (unknown ones fail with `EINVAL`).
    pub fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    fn set_flag(&mut self, f: u32, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    fn raw(&self) -> io::Result<sys::bypass_ipc_opts> {
        Ok(sys::bypass_ipc_opts {
            ring_size: self.ring_size,
            max_msg: self.max_msg,
            mode: self.mode.raw(),
            spin_ns: spin_ns(self.spin),
            handshake_timeout_ns: match self.handshake_timeout {
                None => 0,
                Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX).max(1),
            },
            allow_uids: if self.allow_uids.is_empty() { ptr::null() } else { self.allow_uids.as_ptr() },
            nallow: u32::try_from(self.allow_uids.len()).map_err(|_| einval())?,
            flags: self.flags,
            max_ring: self.max_ring,
            max_per_pid: self.max_per_pid,
            max_per_uid: self.max_per_uid,
            ..Default::default()
        })
    }
}

// ------------------------------------------------------------------ service

/// A named service.  Dropping it stops listening (and unlinks a path it
/// created); accepted connections go on.
#[derive(Debug)]
pub struct Service {
    raw: NonNull<sys::bypass_ipc_service>,
    _not_sync: NotSync,
}

// SAFETY: a service is a listening socket and its bookkeeping in this
// process; ipc.h ties connections to the process, not to a thread.  It is
// not Sync: ipc.h does not promise concurrent accepts on one service.
unsafe impl Send for Service {}

impl Service {
    /// Create a service.  `name` is a file-system path if it starts with
    /// `/` or `.`, else a name in the abstract Unix socket namespace.
    /// `EINVAL` (bad name or options), `EADDRINUSE`, `EOPNOTSUPP` (pkey
    /// asked for without protection keys).
    pub fn listen(name: &str, opts: &IpcOptions) -> io::Result<Service> {
        let n = cstring(name)?;
        let o = opts.raw()?;
        let mut out = ptr::null_mut();
        // SAFETY: n, o (and the uid list it points to) and out are valid for
        // the call.
        cvt(unsafe { sys::bypass_ipc_listen(n.as_ptr(), &o, &mut out) })?;
        Ok(Service { raw: NonNull::new(out).ok_or_else(einval)?, _not_sync: NotSync::default() })
    }

    /// Accept one client, waiting at most `timeout` (`None`: no limit).
    /// `EAGAIN` or `ETIMEDOUT` (nobody came), `EACCES` (uid refused),
    /// `EUSERS` (the client is over its limits), `ECONNABORTED` (it left).
    pub fn accept(&self, timeout: Option<Duration>) -> io::Result<Conn> {
        let mut out = ptr::null_mut();
        // SAFETY: a live service and a valid out pointer.
        cvt(unsafe { sys::bypass_ipc_accept(self.raw.as_ptr(), &mut out, timeout_ns(timeout)) })?;
        Conn::from_raw(out)
    }

    /// Accept a client if one waits: `None` if nobody does.
    pub fn try_accept(&self) -> io::Result<Option<Conn>> {
        match self.accept(Some(Duration::ZERO)) {
            Ok(c) => Ok(Some(c)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ETIMEDOUT)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsRawFd for Service {
    /// The listening socket: it polls readable when a client waits.
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: a live service.
        unsafe { sys::bypass_ipc_service_fd(self.raw.as_ptr()) }
    }
}

impl AsFd for Service {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the socket stays open as long as the service.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for Service {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: live, and not used again.
        unsafe { sys::bypass_ipc_service_close(self.raw.as_ptr()) };
    }
}

// --------------------------------------------------------------- connection

/// One end of a connection.  Dropping it tells the peer, unmaps the arena
/// and closes the descriptors (`bypass_ipc_close`).
///
/// Its methods take `&self`, so that a [`Msg`] can be answered with a
/// [`Loan`] while both borrow the connection; `Conn` is not `Sync`, so
/// that all of them stay on one thread.
#[derive(Debug)]
pub struct Conn {
    raw: NonNull<sys::bypass_ipc_conn>,
    /// Where the library describes the message received (one held at a
    /// time) and the response of a call (one held at a time): filled in
    /// place and read there by the [`Msg`] that borrows the connection.
    /// A description moved right after the library wrote it would be read
    /// back by wider loads than the stores, which stalls store forwarding:
    /// tens of cycles per message on the round trip's critical path.
    rx: UnsafeCell<sys::bypass_ipc_msg>,
    resp: UnsafeCell<sys::bypass_ipc_msg>,
    _not_sync: NotSync,
}

// SAFETY: ipc.h: "a connection may have one sending thread and one
// receiving thread at a time" and "belongs to the process that opened it":
// moving it to another thread is fine.  Not Sync: two threads sending at
// once through `&Conn` would break that rule.  (A Loan is not Send either:
// with BYPASS_IPC_PKEY only the thread that took it may write it.)
unsafe impl Send for Conn {}

impl Conn {
    /// Connect to a service and map its arena.  `ECONNREFUSED` or `ENOENT`
    /// (no such service), `EACCES`, `ETIMEDOUT`, `EPROTO`, `EFBIG` (its
    /// rings exceed [`IpcOptions::max_ring`]), `EUSERS`, `EEXIST`.
    pub fn connect(name: &str, opts: &IpcOptions) -> io::Result<Conn> {
        let n = cstring(name)?;
        let o = opts.raw()?;
        let mut out = ptr::null_mut();
        // SAFETY: n, o (and its uid list) and out are valid for the call.
        cvt(unsafe { sys::bypass_ipc_connect(n.as_ptr(), &o, &mut out) })?;
        Conn::from_raw(out)
    }

    fn from_raw(p: *mut sys::bypass_ipc_conn) -> io::Result<Conn> {
        Ok(Conn {
            raw: NonNull::new(p).ok_or_else(einval)?,
            rx: UnsafeCell::new(sys::bypass_ipc_msg::default()),
            resp: UnsafeCell::new(sys::bypass_ipc_msg::default()),
            _not_sync: NotSync::default(),
        })
    }

    /// The raw handle, for calls of [`bypass_sys`] (it stays owned here).
    pub fn as_raw(&self) -> *mut sys::bypass_ipc_conn {
        self.raw.as_ptr()
    }

    /// How this side waits; `spin` replaces the adaptive budget (`None`
    /// keeps it).
    pub fn set_mode(&self, mode: WaitMode, spin: Option<Duration>) -> io::Result<()> {
        // SAFETY: a live connection, used from one thread (not Sync).
        cvt(unsafe { sys::bypass_ipc_set_mode(self.raw.as_ptr(), mode.raw(), spin_ns(spin)) })?;
        Ok(())
    }

    /// The peer's pid and uid, as the kernel reported them at connection.
    pub fn peer(&self) -> io::Result<(libc::pid_t, libc::uid_t)> {
        let (mut pid, mut uid) = (0, 0);
        // SAFETY: valid out pointers.
        cvt(unsafe { sys::bypass_ipc_peer(self.raw.as_ptr(), &mut pid, &mut uid) })?;
        Ok((pid, uid))
    }

    /// The largest message this connection carries.
    pub fn max_msg(&self) -> io::Result<usize> {
        let mut m = 0;
        // SAFETY: a valid out pointer.
        cvt(unsafe { sys::bypass_ipc_max_msg(self.raw.as_ptr(), &mut m) })?;
        Ok(m)
    }

    /// Reserve room for a message of up to `size` bytes in the shared ring,
    /// waiting at most `timeout` for room.  Write it in place, then
    /// [send](Loan::send) it; dropping the loan gives the room back.
    /// `EMSGSIZE` (larger than [`Conn::max_msg`]), `EBUSY` (a loan is
    /// outstanding), `EAGAIN`/`ETIMEDOUT` (the ring is full), `EPIPE` (the
    /// peer is gone).
    #[inline]
    pub fn loan(&self, size: usize, timeout: Option<Duration>) -> io::Result<Loan<'_>> {
        let mut p = ptr::null_mut();
        // SAFETY: a live connection and a valid out pointer.
        cvt(unsafe { sys::bypass_ipc_loan(self.raw.as_ptr(), size, &mut p, timeout_ns(timeout)) })?;
        Ok(Loan { conn: self, buf: NonNull::new(p as *mut u8).ok_or_else(einval)?, cap: size })
    }

    /// Send a one-way message, copied once into the ring; waits at most
    /// `timeout` for room.  `EMSGSIZE`, `EAGAIN`/`ETIMEDOUT`, `EPIPE`.
    #[inline]
    pub fn send(&self, data: &[u8], timeout: Option<Duration>) -> io::Result<()> {
        // SAFETY: data is valid for the call; it is not the loan (a loan is
        // borrowed mutably by its Loan), so the library copies it.
        cvt(unsafe {
            sys::bypass_ipc_send(self.raw.as_ptr(), data.as_ptr() as *const c_void, data.len(), timeout_ns(timeout))
        })?;
        Ok(())
    }

    /// Wait at most `timeout` for the next message, read in place.  One
    /// message may be held at a time (`EBUSY`).  `EAGAIN`/`ETIMEDOUT`
    /// (nothing came), `ECONNRESET` (the peer is gone and everything it
    /// sent was read), `EPROTO`/`EFAULT` (the peer corrupted the
    /// connection).
    #[inline]
    pub fn recv(&self, timeout: Option<Duration>) -> io::Result<Msg<'_>> {
        // SAFETY: a live connection and its receive slot, which no Msg
        // reads now (while one does, the library answers EBUSY and writes
        // nothing; it writes the slot only on success).
        let r = unsafe { sys::bypass_ipc_recv(self.raw.as_ptr(), self.rx.get(), timeout_ns(timeout)) };
        Msg::filled(self, &self.rx, r)
    }

    /// The next message if one is there, without waiting.
    #[inline]
    pub fn try_recv(&self) -> io::Result<Option<Msg<'_>>> {
        match self.recv(Some(Duration::ZERO)) {
            Ok(m) => Ok(Some(m)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ETIMEDOUT)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Send a request (copied once) and wait at most `timeout` in total
    /// for its response, read in place.  `ETIMEDOUT` (a late response is
    /// dropped), `ECONNRESET` (the server died first), `EBUSY` (the
    /// previous response is still held), `EINVAL` for a zero timeout.
    #[inline]
    pub fn call(&self, req: &[u8], timeout: Option<Duration>) -> io::Result<Msg<'_>> {
        self.call_raw(req.as_ptr(), req.len(), timeout)
    }

    #[inline]
    fn call_raw(&self, p: *const u8, len: usize, timeout: Option<Duration>) -> io::Result<Msg<'_>> {
        // SAFETY: p is valid for len bytes (a slice, or this conn's loan);
        // the response slot as the receive slot in recv (EBUSY while the
        // previous response is held).
        let r = unsafe {
            sys::bypass_ipc_call(self.raw.as_ptr(), p as *const c_void, len, self.resp.get(), timeout_ns(timeout))
        };
        Msg::filled(self, &self.resp, r)
    }

    /// Answer the request `req` with `data` (copied once).  `EINVAL` if
    /// `req` is not a request ([`Msg::is_call`]).
    #[inline]
    pub fn reply(&self, req: &Msg<'_>, data: &[u8], timeout: Option<Duration>) -> io::Result<()> {
        self.reply_raw(req, data.as_ptr(), data.len(), timeout)
    }

    #[inline]
    fn reply_raw(&self, req: &Msg<'_>, p: *const u8, len: usize, timeout: Option<Duration>) -> io::Result<()> {
        if !ptr::eq(req.conn, self) {
            return Err(einval());
        }
        // SAFETY: req describes a message of this connection; p is valid.
        cvt(unsafe {
            sys::bypass_ipc_reply(self.raw.as_ptr(), req.slot.get(), p as *const c_void, len, timeout_ns(timeout))
        })?;
        Ok(())
    }

    /// Before blocking in poll/epoll on this connection's descriptor
    /// ([`AsRawFd`]): ask the peer to make it readable on its next message.
    /// `false` when armed, `true` when a message already waits (do not
    /// block).
    pub fn arm(&self) -> io::Result<bool> {
        // SAFETY: a live connection.
        Ok(cvt(unsafe { sys::bypass_ipc_arm(self.raw.as_ptr()) })? == 1)
    }
}

impl AsRawFd for Conn {
    /// A descriptor that polls readable when a message arrives while the
    /// connection is [armed](Conn::arm), and when the peer hangs up.  It
    /// belongs to the connection: do not read it or close it.
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: a live connection.
        unsafe { sys::bypass_ipc_fd(self.raw.as_ptr()) }
    }
}

impl AsFd for Conn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor stays open as long as the connection.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for Conn {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: live, and not used again (Loans and Msgs borrowed it and
        // are gone).
        unsafe { sys::bypass_ipc_close(self.raw.as_ptr()) };
    }
}

// --------------------------------------------------------------------- loan

/// Room for one message in the shared ring, loaned to the sender: write it
/// through `DerefMut<Target = [u8]>`, then [send](Loan::send),
/// [call](Loan::call) or [reply](Loan::reply) with it.  Dropped unsent, the
/// room is given back (`bypass_ipc_loan_cancel`).  It borrows its
/// connection, so it cannot outlive it.
#[derive(Debug)]
pub struct Loan<'conn> {
    conn: &'conn Conn,
    buf: NonNull<u8>,
    cap: usize,
}

impl<'conn> Loan<'conn> {
    /// Publish the first `len` bytes (at most the loaned size) as a
    /// one-way message, in place.  On failure the loan is given back.
    #[inline]
    pub fn send(self, len: usize, timeout: Option<Duration>) -> io::Result<()> {
        let this = self.consume(len)?;
        // SAFETY: buf is this connection's outstanding loan.
        let r = cvt(unsafe {
            sys::bypass_ipc_send(this.conn.raw.as_ptr(), this.buf.as_ptr() as *const c_void, len, timeout_ns(timeout))
        });
        this.finish(r).map(|_| ())
    }

    /// Send the first `len` bytes as a request, in place, and wait for the
    /// response ([`Conn::call`]).
    #[inline]
    pub fn call(self, len: usize, timeout: Option<Duration>) -> io::Result<Msg<'conn>> {
        let this = self.consume(len)?;
        let r = this.conn.call_raw(this.buf.as_ptr(), len, timeout);
        match r {
            Ok(m) => Ok(m),
            Err(e) => this.finish(Err(e)).map(|_| unreachable!()),
        }
    }

    /// Answer the request `req` with the first `len` bytes, in place.
    #[inline]
    pub fn reply(self, req: &Msg<'_>, len: usize, timeout: Option<Duration>) -> io::Result<()> {
        let this = self.consume(len)?;
        let r = this.conn.reply_raw(req, this.buf.as_ptr(), len, timeout);
        this.finish(r.map(|_| 0))?;
        Ok(())
    }

    #[inline]
    fn consume(self, len: usize) -> io::Result<Spent<'conn>> {
        let s = Spent { conn: self.conn, buf: self.buf };
        let cap = self.cap;
        std::mem::forget(self);
        if len > cap {
            // Dropping `s` gives the loan back.
            return Err(einval());
        }
        Ok(s)
    }

    /// The loaned size.
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

/// A loan being published: if publishing fails, the library may still
/// hold it outstanding, and dropping this gives it back (a cancel of a
/// loan already published is refused harmlessly).
struct Spent<'conn> {
    conn: &'conn Conn,
    buf: NonNull<u8>,
}

impl Spent<'_> {
    #[inline]
    fn finish(self, r: io::Result<i32>) -> io::Result<i32> {
        if r.is_ok() {
            std::mem::forget(self);
        }
        r
    }
}

impl Drop for Spent<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: buf is (or was) this connection's loan; cancel checks it.
        unsafe { sys::bypass_ipc_loan_cancel(self.conn.raw.as_ptr(), self.buf.as_ptr() as *mut c_void) };
    }
}

impl Deref for Loan<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the loan is cap bytes of the arena, reserved to us until
        // it is sent or cancelled; the peer does not read it before.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), self.cap) }
    }
}

impl DerefMut for Loan<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for Deref; the loan is ours alone to write.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_ptr(), self.cap) }
    }
}

impl Drop for Loan<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: buf is this connection's outstanding loan.
        unsafe { sys::bypass_ipc_loan_cancel(self.conn.raw.as_ptr(), self.buf.as_ptr() as *mut c_void) };
    }
}

// ---------------------------------------------------------------------- msg

/// A received message or a response, read in place in the shared arena
/// through `Deref<Target = [u8]>`.  Dropping it gives its room back to the
/// sender (`bypass_ipc_release`).  It borrows its connection.
///
/// The bytes lie in memory the peer can still write: a peer that keeps
/// writing a message after sending it changes what this slice reads.  Copy
/// what you must validate (`msg.to_vec()`) if you do not trust the peer.
#[derive(Debug)]
pub struct Msg<'conn> {
    conn: &'conn Conn,
    /// The connection's slot that describes it.
    slot: &'conn UnsafeCell<sys::bypass_ipc_msg>,
}

impl<'conn> Msg<'conn> {
    /// The message in `slot`, if the call that was to fill it succeeded.
    #[inline]
    fn filled(conn: &'conn Conn, slot: &'conn UnsafeCell<sys::bypass_ipc_msg>, r: std::ffi::c_int) -> io::Result<Msg<'conn>> {
        if r < 0 {
            return Err(io::Error::from_raw_os_error(-r));
        }
        Ok(Msg { conn, slot })
    }

    #[inline]
    fn raw(&self) -> &sys::bypass_ipc_msg {
        // SAFETY: the library wrote the slot before this Msg existed and
        // writes it again only after it is released (see Conn::recv).
        unsafe { &*self.slot.get() }
    }

    /// Whether the message is a request, to be answered with
    /// [`Msg::reply`] (or [`Loan::reply`]).
    #[inline]
    pub fn is_call(&self) -> bool {
        self.raw().flags & sys::BYPASS_IPC_MSG_CALL != 0
    }

    /// Answer this request with `data` (copied once).
    #[inline]
    pub fn reply(&self, data: &[u8], timeout: Option<Duration>) -> io::Result<()> {
        self.conn.reply(self, data, timeout)
    }

    /// The raw description, for calls of [`bypass_sys`].
    pub fn as_raw(&self) -> &sys::bypass_ipc_msg {
        self.raw()
    }
}

impl Deref for Msg<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        let m = self.raw();
        if m.len == 0 || m.data.is_null() {
            return &[];
        }
        // SAFETY: the library checked that [data, data + len) lies in the
        // connection's arena, held for us until release.
        unsafe { std::slice::from_raw_parts(m.data as *const u8, m.len) }
    }
}

impl Drop for Msg<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the slot describes a message held on this connection.
        unsafe { sys::bypass_ipc_release(self.conn.raw.as_ptr(), self.slot.get()) };
    }
}

// --------------------------------------------------------------- protection

/// Whether memory protection keys can guard arenas here
/// ([`IpcOptions::pkey`]): `Ok(())`, or the reason they cannot.
pub fn pkey_supported() -> Result<(), String> {
    let mut why: *const std::ffi::c_char = ptr::null();
    // SAFETY: why receives a static string or stays null.
    if unsafe { sys::bypass_ipc_pkey_supported(&mut why) } == 1 {
        return Ok(());
    }
    if why.is_null() {
        return Err("protection keys are not available".into());
    }
    // SAFETY: a static NUL-terminated string.
    Err(unsafe { std::ffi::CStr::from_ptr(why) }.to_string_lossy().into_owned())
}
