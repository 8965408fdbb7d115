// SPDX-License-Identifier: MIT
//! Doorbells (`<bypass/notify.h>`): notifications between threads and
//! processes through shared memory, the stock-kernel counterpart of user
//! interrupts.
//!
//! A doorbell counts rings.  A receiver [waits](Doorbell::wait) for them
//! (spinning for a bounded time, then sleeping on a futex),
//! [polls](Doorbell::try_wait), or waits through an eventfd in an epoll
//! loop ([`Doorbell::arm`], [`AsRawFd`]).  Ringing costs no system call
//! unless the receiver sleeps or armed the eventfd.  Rings are consumed:
//! each is returned once, to one of several concurrent waiters.
//!
//! A doorbell is shared with children forked after [`Doorbell::new`], with
//! any process it is [sent](Doorbell::send_to) to over a Unix socket, and
//! through an [`Arena`].  Every process that maps it can write it: share it
//! only with processes you trust (see the header's "Trust").
//!
//! ```no_run
//! use bypass::notify::Doorbell;
//! use std::time::Duration;
//! let db = Doorbell::new()?;
//! db.ring()?;
//! assert_eq!(db.wait(Some(Duration::from_millis(10)))?, 1);
//! # Ok::<(), std::io::Error>(())
//! ```
use std::ffi::{c_void, CStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::core::{cstr_opt, Arena, WaitMode};
use crate::sys;
use crate::util::{cvt, einval, spin_ns, timeout_ns};

/// Options of a doorbell (a builder).
#[derive(Clone, Debug, Default)]
pub struct DoorbellOptions {
    backend: Option<String>,
    mode: WaitMode,
    spin: Option<Duration>,
    eventfd: bool,
}

impl DoorbellOptions {
    /// The defaults: the automatic backend, adaptive waits.
    pub fn new() -> Self {
        Self::default()
    }
    /// The backend by name: `"auto"` (the best available, today always
    /// `"futex"`) or `"futex"`; creating fails with `EINVAL` for another
    /// name.
    pub fn backend(mut self, name: &str) -> Self {
        self.backend = Some(name.to_string());
        self
    }
    /// How this handle waits.
    pub fn mode(mut self, mode: WaitMode) -> Self {
        self.mode = mode;
        self
    }
    /// The adaptive spin budget (default 20 µs).
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = Some(spin);
        self
    }
    /// Create the eventfd at once, so that `fork` and
    /// [`Doorbell::send_to`] carry it to other processes.
    pub fn eventfd(mut self, yes: bool) -> Self {
        self.eventfd = yes;
        self
    }

    fn with_raw<R>(&self, f: impl FnOnce(&sys::bypass_notify_opts) -> R) -> io::Result<R> {
        let backend = cstr_opt(self.backend.as_deref())?;
        let o = sys::bypass_notify_opts {
            backend: backend.as_ref().map_or(ptr::null(), |b| b.as_ptr()),
            mode: self.mode.raw(),
            spin_ns: spin_ns(self.spin),
            flags: if self.eventfd { sys::BYPASS_NOTIFY_EVENTFD } else { 0 },
            ..Default::default()
        };
        Ok(f(&o))
    }

    /// A doorbell in its own shared page (threads of this process, children
    /// forked later, processes it is sent to).
    pub fn create(&self) -> io::Result<Doorbell> {
        let mut out = ptr::null_mut();
        // SAFETY: o and out are valid for the call.
        cvt(self.with_raw(|o| unsafe { sys::bypass_notify_create(o, &mut out) })?)?;
        Doorbell::from_raw(out)
    }

    /// A doorbell placed in `arena`; another process that mapped the arena
    /// opens it with [`Doorbell::open`] and [`Doorbell::addr`] (publish it
    /// with [`Arena::set_root`]).  `ENOSPC` when the arena is full.
    pub fn create_in(&self, arena: &Arena) -> io::Result<Doorbell> {
        let mut out = ptr::null_mut();
        // SAFETY: a live arena; o and out valid for the call.
        cvt(self.with_raw(|o| unsafe { sys::bypass_notify_create_in(arena.raw(), o, &mut out) })?)?;
        Doorbell::from_raw(out)
    }
}

/// A handle on a doorbell.  Dropping it releases this handle
/// (`bypass_notify_close`); the doorbell goes on for the other handles
/// until one of them [destroys](Doorbell::destroy) it.
#[derive(Debug)]
pub struct Doorbell {
    raw: NonNull<sys::bypass_doorbell>,
}

// SAFETY: notify.h: "Several threads and processes may ring", and rings are
// "returned once (to one of several concurrent consumers)": ring, wait,
// try, arm and the eventfd are made for concurrent use of one handle (the
// handle's mutable parts are behind its lock or atomics).  The one plain
// field write, bypass_notify_set_mode, takes `&mut self` here.
unsafe impl Send for Doorbell {}
// SAFETY: see Send.
unsafe impl Sync for Doorbell {}

impl Doorbell {
    /// A doorbell with the default options.
    pub fn new() -> io::Result<Doorbell> {
        DoorbellOptions::new().create()
    }

    fn from_raw(p: *mut sys::bypass_doorbell) -> io::Result<Doorbell> {
        Ok(Doorbell { raw: NonNull::new(p).ok_or_else(einval)? })
    }

    /// A new handle on the doorbell at `addr` inside `arena` (from
    /// [`Doorbell::addr`] in the process that created it).  `EINVAL` if
    /// there is no live doorbell there.
    pub fn open(arena: &Arena, addr: *mut u8) -> io::Result<Doorbell> {
        let mut out = ptr::null_mut();
        // SAFETY: the library checks that addr is a live doorbell in arena.
        cvt(unsafe { sys::bypass_notify_open(arena.raw(), addr as *mut c_void, &mut out) })?;
        Doorbell::from_raw(out)
    }

    /// Receive a doorbell sent with [`Doorbell::send_to`] over a connected
    /// Unix socket.  `EPROTO` if the message is not a doorbell,
    /// `ECONNRESET` if the peer closed the socket.
    pub fn recv_from(sock: impl AsFd) -> io::Result<Doorbell> {
        let mut out = ptr::null_mut();
        // SAFETY: a valid descriptor and out pointer for the call.
        cvt(unsafe { sys::bypass_notify_recv(sock.as_fd().as_raw_fd(), &mut out) })?;
        Doorbell::from_raw(out)
    }

    /// Send this doorbell (its shared memory, and its eventfd if it has
    /// one) to another process over a connected Unix socket.
    pub fn send_to(&self, sock: impl AsFd) -> io::Result<()> {
        // SAFETY: a live handle and a valid descriptor.
        cvt(unsafe { sys::bypass_notify_send(sock.as_fd().as_raw_fd(), self.raw.as_ptr()) })?;
        Ok(())
    }

    /// Where the doorbell's shared state lives (for [`Doorbell::open`]).
    pub fn addr(&self) -> *mut u8 {
        // SAFETY: a live handle.
        unsafe { sys::bypass_notify_addr(self.raw.as_ptr()) as *mut u8 }
    }

    /// Ring once.  `EPERM` (the receiver's process may not be signalled or
    /// its eventfd reached from here) and `EAGAIN` (its signal queue is
    /// full) still count the ring.
    pub fn ring(&self) -> io::Result<()> {
        // SAFETY: a live handle.
        cvt(unsafe { sys::bypass_notify_ring(self.raw.as_ptr()) })?;
        Ok(())
    }

    /// Wait for rings at most `timeout` (`None`: no limit) and consume
    /// them: their number.  `ETIMEDOUT`; `EPIPE` when every other process
    /// that used the doorbell has exited and nothing is pending; `EINVAL`
    /// once destroyed; `EBUSY` while a handler consumes the rings.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<u32> {
        // SAFETY: a live handle.
        Ok(cvt(unsafe { sys::bypass_notify_wait(self.raw.as_ptr(), timeout_ns(timeout)) })? as u32)
    }

    /// Consume pending rings without waiting: `Some(count)`, or `None`
    /// when there are none.  Also drains and disarms the eventfd.
    pub fn try_wait(&self) -> io::Result<Option<u32>> {
        // SAFETY: a live handle.
        match cvt(unsafe { sys::bypass_notify_try(self.raw.as_ptr()) }) {
            Ok(n) => Ok(Some(n as u32)),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// How this handle waits; `spin` replaces the adaptive budget (`None`
    /// keeps it).
    pub fn set_mode(&mut self, mode: WaitMode, spin: Option<Duration>) -> io::Result<()> {
        // SAFETY: a live handle, exclusively borrowed (a plain field write).
        cvt(unsafe { sys::bypass_notify_set_mode(self.raw.as_ptr(), mode.raw(), spin_ns(spin)) })?;
        Ok(())
    }

    /// The eventfd for poll/epoll, made on first use.  It belongs to the
    /// handle.  Before each blocking poll call [`Doorbell::arm`]; once it
    /// polls readable, consume with [`Doorbell::try_wait`].
    pub fn eventfd(&self) -> io::Result<BorrowedFd<'_>> {
        // SAFETY: a live handle.
        let fd = cvt(unsafe { sys::bypass_notify_fd(self.raw.as_ptr()) })?;
        // SAFETY: the handle keeps the descriptor open while borrowed.
        Ok(unsafe { BorrowedFd::borrow_raw(fd) })
    }

    /// Ask ringers to signal the eventfd: `false` when armed, `true` when
    /// rings were already pending (the fd was made readable at once).
    pub fn arm(&self) -> io::Result<bool> {
        // SAFETY: a live handle.
        Ok(cvt(unsafe { sys::bypass_notify_arm(self.raw.as_ptr()) })? == 1)
    }

    /// Whether another process that used the doorbell still runs (also
    /// `true` when none ever did).  Costs a system call per peer.
    pub fn peer_alive(&self) -> io::Result<bool> {
        // SAFETY: a live handle.
        Ok(cvt(unsafe { sys::bypass_notify_peer_alive(self.raw.as_ptr()) })? == 1)
    }

    /// The backend this doorbell uses (`"futex"`, ...).
    pub fn backend(&self) -> &'static str {
        // SAFETY: a live handle; the name is a static string.
        let p = unsafe { sys::bypass_notify_backend(self.raw.as_ptr()) };
        if p.is_null() {
            return "?";
        }
        // SAFETY: a static NUL-terminated string.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?")
    }

    /// Interrupt mode: make the calling thread the doorbell's receiver.
    /// Each ring (coalesced while one is in flight) interrupts this thread,
    /// whatever it runs, with a signal ([`signal_number`]) whose handler
    /// consumes the rings and calls `cb(db, count, arg)`.  `EBUSY` when
    /// another thread or process is the receiver, `EAGAIN` when 64
    /// doorbells of this process have handlers.
    ///
    /// # Safety
    /// `cb` runs in signal context, in the middle of any code of this
    /// thread: it may only ring doorbells and use async-signal-safe
    /// functions (no allocation, no locks, no panics), and `arg` must stay
    /// valid until the handler is removed with [`Doorbell::clear_handler`]
    /// or the doorbell is gone.
    pub unsafe fn set_handler(
        &self,
        cb: unsafe extern "C" fn(*mut sys::bypass_doorbell, u32, *mut c_void),
        arg: *mut c_void,
    ) -> io::Result<()> {
        // SAFETY: the caller guarantees what the callback does.
        cvt(unsafe { sys::bypass_notify_set_handler(self.raw.as_ptr(), Some(cb), arg) })?;
        Ok(())
    }

    /// Leave interrupt mode.
    pub fn clear_handler(&self) -> io::Result<()> {
        // SAFETY: a live handle; NULL unregisters.
        cvt(unsafe { sys::bypass_notify_set_handler(self.raw.as_ptr(), None, ptr::null_mut()) })?;
        Ok(())
    }

    /// End the doorbell for every handle in every process (their calls
    /// fail with `EINVAL`, their waiters wake), and release this handle.
    pub fn destroy(self) -> io::Result<()> {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        // SAFETY: the handle is live and not used again.
        cvt(unsafe { sys::bypass_notify_destroy(raw) })?;
        Ok(())
    }

    /// The raw handle, for calls of [`bypass_sys`] (it stays owned here).
    pub fn as_raw(&self) -> *mut sys::bypass_doorbell {
        self.raw.as_ptr()
    }
}

impl AsRawFd for Doorbell {
    /// The eventfd ([`Doorbell::eventfd`]); -1 if it cannot be made.
    fn as_raw_fd(&self) -> RawFd {
        self.eventfd().map_or(-1, |f| f.as_raw_fd())
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: the handle is live and not used again.
        unsafe { sys::bypass_notify_close(self.raw.as_ptr()) };
    }
}

/// The real-time signal of interrupt mode in this process (SIGRTMIN+4
/// unless [`set_signal`] chose another).
pub fn signal_number() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::bypass_notify_signal() }
}

/// Choose the real-time signal of interrupt mode in this process, before
/// the first [`Doorbell::set_handler`] (which installs its handler).  A
/// ringer sends its own process's signal: every process that shares a
/// doorbell in interrupt mode must choose the same one.  `EINVAL` (not
/// between SIGRTMIN and SIGRTMAX), `EBUSY` (the handler is installed with
/// another).
pub fn set_signal(sig: i32) -> io::Result<()> {
    // SAFETY: plain argument.
    cvt(unsafe { sys::bypass_notify_set_signal(sig) })?;
    Ok(())
}

/// Whether a backend is available here: `Ok(true)`, `Ok(false)`, or
/// `EINVAL` for an unknown name.
pub fn backend_available(name: &str) -> io::Result<bool> {
    let n = crate::util::cstring(name)?;
    // SAFETY: a valid C string for the call.
    Ok(cvt(unsafe { sys::bypass_notify_backend_available(n.as_ptr()) })? == 1)
}
