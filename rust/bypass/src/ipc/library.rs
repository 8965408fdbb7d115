// SPDX-License-Identifier: MIT
//! Library mode (`bypass_ipc_lib_*`): RPAL's call.  A service is written
//! once, as handlers in a shared object; the server loads it
//! ([`LibService::listen`]) and builds its state in an arena mapped at the
//! same address in every process; a client that opens the service in
//! library mode ([`LibClient::open`]) loads the same object and runs the
//! handlers in its own thread, behind a protection-key gate where the CPU
//! has one: a call costs about a function call and wakes nobody.  A client
//! may instead open it in message mode ([`LibClient::open_message`]): the
//! same calls then travel through a connection's rings to the server's
//! thread, which runs the same handlers ([`LibService::serve`]).
//!
//! Library mode trusts the service's code (it runs in this process), as
//! RPAL did; message mode is for a peer you do not trust.  Loading the
//! object is therefore `unsafe` here, as `dlopen` is.  Handlers are C (or
//! any language with the C ABI) against `struct bypass_ipc_env`
//! ([`sys::bypass_ipc_env`]); see examples/ipc-kv/ in the C tree.
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use super::{Conn, IpcOptions};
use crate::sys;
use crate::util::{cstring, cvt, einval, timeout_ns, NotSend};

/// How handlers are guarded in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protect {
    /// The protection-key gate where the CPU has protection keys,
    /// unguarded elsewhere ([`LibStats`]`.guarded` says which).
    #[default]
    Auto,
    /// The gate, or `EOPNOTSUPP`.
    Required,
    /// Never the gate.
    None,
}

/// Options of library mode, for the server and the client (a builder).
#[derive(Clone, Debug, Default)]
pub struct LibOptions {
    protect: Protect,
    flags: u32,
    allow_uids: Vec<libc::uid_t>,
    arena_size: usize,
    event_slots: u32,
    handshake_timeout: Option<Duration>,
    call_timeout: Option<Duration>,
    msg: Option<IpcOptions>,
}

impl LibOptions {
    /// The defaults: protection where available, peers of our own uid.
    pub fn new() -> Self {
        Self::default()
    }
    /// How handlers are guarded.
    pub fn protect(mut self, p: Protect) -> Self {
        self.protect = p;
        self
    }
    /// Client: open message mode where library mode cannot be had (the
    /// address range is taken, the object refused, protection keys
    /// required and absent).
    pub fn fallback(mut self, yes: bool) -> Self {
        self.flag(sys::BYPASS_IPC_LIB_FALLBACK, yes);
        self
    }
    /// Protection keys: the state is not even readable outside a call.
    pub fn no_read(mut self, yes: bool) -> Self {
        self.flag(sys::BYPASS_IPC_LIB_NOREAD, yes);
        self
    }
    /// Load an object that holds WRPKRU or XRSTOR byte sequences.
    pub fn allow_wrpkru(mut self, yes: bool) -> Self {
        self.flag(sys::BYPASS_IPC_LIB_ALLOW_WRPKRU, yes);
        self
    }
    /// Accept peers of any uid.
    pub fn any_uid(mut self, yes: bool) -> Self {
        self.flag(sys::BYPASS_IPC_ANY_UID, yes);
        self
    }
    /// Accept peers of these uids besides our own.
    pub fn allow_uids(mut self, uids: &[libc::uid_t]) -> Self {
        self.allow_uids = uids.to_vec();
        self
    }
    /// Server: bytes for the state (default: the object's, else 64 MiB).
    pub fn arena_size(mut self, bytes: usize) -> Self {
        self.arena_size = bytes;
        self
    }
    /// Server: events queued for its loop (default 256; `u32::MAX`: no
    /// queue).
    pub fn event_slots(mut self, n: u32) -> Self {
        self.event_slots = n;
        self
    }
    /// Client: how long to wait for the server's handshake (default 5 s).
    pub fn handshake_timeout(mut self, t: Duration) -> Self {
        self.handshake_timeout = Some(t);
        self
    }
    /// Client, message mode: the limit of a call (default none).
    pub fn call_timeout(mut self, t: Duration) -> Self {
        self.call_timeout = Some(t);
        self
    }
    /// Message mode: the options of the server's message service, or of
    /// the client's connection.
    pub fn message_options(mut self, o: IpcOptions) -> Self {
        self.msg = Some(o);
        self
    }
    /// Raw `BYPASS_IPC_LIB_*` flags, for flags this wrapper does not name
    /// yet.
    pub fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    fn flag(&mut self, f: u32, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// The C options; `msg` must outlive their use.
    fn raw(&self, msg: Option<&sys::bypass_ipc_opts>) -> io::Result<sys::bypass_ipc_lib_opts> {
        let ns = |t: Option<Duration>| t.map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX).max(1));
        Ok(sys::bypass_ipc_lib_opts {
            protect: match self.protect {
                Protect::Auto => sys::BYPASS_IPC_PROTECT_AUTO,
                Protect::Required => sys::BYPASS_IPC_PROTECT_REQUIRED,
                Protect::None => sys::BYPASS_IPC_PROTECT_NONE,
            } as i32,
            flags: self.flags,
            allow_uids: if self.allow_uids.is_empty() { ptr::null() } else { self.allow_uids.as_ptr() },
            nallow: u32::try_from(self.allow_uids.len()).map_err(|_| einval())?,
            arena_size: self.arena_size,
            event_slots: self.event_slots,
            handshake_timeout_ns: ns(self.handshake_timeout),
            call_timeout_ns: ns(self.call_timeout),
            msg: msg.map_or(ptr::null(), |m| m as *const _),
            ..Default::default()
        })
    }

    fn msg_raw(&self) -> io::Result<Option<sys::bypass_ipc_opts>> {
        self.msg.as_ref().map(|m| m.raw()).transpose()
    }
}

/// The mode a handle got, the protection this process got, and the
/// service's counters (the C struct, documented in the header).
pub type LibStats = sys::bypass_ipc_lib_stats;

/// An event a handler posted for the server's loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibEvent {
    /// The handler's event type.
    pub kind: u32,
    /// The posting process, in its own pid namespace.
    pub pid: i32,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// What [`LibService::accept`] admitted.
#[derive(Debug)]
pub enum Accepted {
    /// A library-mode opener: it has the arena and the object, and needs
    /// nothing more from the server.
    Library,
    /// A message-mode client: serve it with [`LibService::serve`].
    Message(Conn),
}

/// The server of a library-mode service.  Dropping it stops the service:
/// library-mode clients get `EPIPE` at their next call.
///
/// Neither `Send` nor `Sync`: the thread that listened holds the service's
/// liveness lock until it is closed (ipc.h), so it stays on that thread.
#[derive(Debug)]
pub struct LibService {
    raw: NonNull<sys::bypass_ipc_lib_service>,
    _thread: NotSend,
}

impl LibService {
    /// Load the service object at `path`, build its state (its `init`) in a
    /// fresh service arena and listen under `name` (message-mode clients
    /// connect to `name`, library-mode openers to a socket beside it).
    /// `EACCES` (the object's owner or permissions), `EPERM` (a WRPKRU or
    /// XRSTOR sequence in it), `ENOEXEC`, `EOPNOTSUPP`, `EADDRINUSE`, or
    /// its `init`'s error.
    ///
    /// # Safety
    /// The object's code runs in this process (its constructors and `init`
    /// now, its handlers at each served call): it must be a correct
    /// bypass service, as any code passed to `dlopen`.
    pub unsafe fn listen(name: &str, path: impl AsRef<Path>, opts: &LibOptions) -> io::Result<LibService> {
        let n = cstring(name)?;
        let p = CString::new(path.as_ref().as_os_str().as_bytes()).map_err(|_| einval())?;
        let msg = opts.msg_raw()?;
        let o = opts.raw(msg.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: the strings and options are valid for the call; the
        // caller vouches for the object.
        cvt(unsafe { sys::bypass_ipc_lib_listen(n.as_ptr(), p.as_ptr(), &o, &mut out) })?;
        Ok(LibService { raw: NonNull::new(out).ok_or_else(einval)?, _thread: NotSend::default() })
    }

    /// Admit one client, waiting at most `timeout`.  `EAGAIN` /
    /// `ETIMEDOUT` when nobody waits.
    pub fn accept(&self, timeout: Option<Duration>) -> io::Result<Accepted> {
        let mut c = ptr::null_mut();
        // SAFETY: a live service and a valid out pointer.
        let r = cvt(unsafe { sys::bypass_ipc_lib_accept(self.raw.as_ptr(), &mut c, timeout_ns(timeout)) })?;
        if r == 1 || c.is_null() {
            return Ok(Accepted::Library);
        }
        Ok(Accepted::Message(Conn::from_raw(c)?))
    }

    /// Wait at most `timeout` for one message-mode call on `conn` (a
    /// client this service accepted), run its handler in this thread and
    /// answer.  `true` when a call was served, `false` when none came;
    /// `ECONNRESET` when the client left (drop `conn`).
    pub fn serve(&self, conn: &Conn, timeout: Option<Duration>) -> io::Result<bool> {
        // SAFETY: a live service and connection; the handler is the code
        // the caller of listen vouched for.
        match cvt(unsafe { sys::bypass_ipc_lib_serve(self.raw.as_ptr(), conn.as_raw(), timeout_ns(timeout)) }) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ETIMEDOUT)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Before the server's loop sleeps on [`AsRawFd`]: ask posters for a
    /// wake-up.  `false` when armed, `true` when events already wait.
    pub fn arm(&self) -> io::Result<bool> {
        // SAFETY: a live service.
        Ok(cvt(unsafe { sys::bypass_ipc_lib_arm(self.raw.as_ptr()) })? == 1)
    }

    /// The oldest event a handler posted, if any.
    pub fn event(&self) -> io::Result<Option<LibEvent>> {
        let mut ev = sys::bypass_ipc_event::default();
        // SAFETY: a live service and a valid event to fill.
        match cvt(unsafe { sys::bypass_ipc_lib_event(self.raw.as_ptr(), &mut ev) }) {
            Ok(_) => {
                let len = (ev.len as usize).min(ev.data.len());
                Ok(Some(LibEvent { kind: ev.type_, pid: ev.pid, data: ev.data[..len].to_vec() }))
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Run the service's recover hook if it is broken.
    /// `ENOTRECOVERABLE` (no hook, or it failed), `EFAULT`.
    pub fn recover(&self) -> io::Result<()> {
        // SAFETY: a live service.
        cvt(unsafe { sys::bypass_ipc_lib_service_recover(self.raw.as_ptr()) })?;
        Ok(())
    }

    /// The service's counters.
    pub fn stats(&self) -> io::Result<LibStats> {
        let mut s = LibStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_ipc_lib_service_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }
}

impl AsRawFd for LibService {
    /// One descriptor for the server's loop: readable when a client waits
    /// (either mode) or, once armed, when an event was posted.
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: a live service.
        unsafe { sys::bypass_ipc_lib_service_fd(self.raw.as_ptr()) }
    }
}

impl AsFd for LibService {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor stays open as long as the service.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for LibService {
    fn drop(&mut self) {
        // SAFETY: live, and not used again.
        unsafe { sys::bypass_ipc_lib_service_close(self.raw.as_ptr()) };
    }
}

/// A client's handle on a library-mode service.  Dropping it unloads the
/// object and unmaps the arena (no call runs then: calls borrow it).
#[derive(Debug)]
pub struct LibClient {
    raw: NonNull<sys::bypass_ipc_lib>,
}

// SAFETY: ipc.h: "In library mode any number of threads may call at once.
// In message mode calls on one handle take turns" (behind the handle's
// lock); close needs the handle by value (Drop).
unsafe impl Send for LibClient {}
// SAFETY: see Send.
unsafe impl Sync for LibClient {}

impl LibClient {
    /// Open the service `name` in library mode (or in message mode, with
    /// [`LibOptions::fallback`] where library mode cannot be had):
    /// `EEXIST` (the arena's address range is taken here), `EACCES`,
    /// `EPERM`, `ENOEXEC`, `EOPNOTSUPP`, `EPROTO`, `ECONNREFUSED`/`ENOENT`
    /// (no such service), `ETIMEDOUT`.  [`LibClient::stats`] says which
    /// mode was had.
    ///
    /// # Safety
    /// In library mode the service's object is loaded into this process and
    /// its handlers run in the calling threads: it must be a correct bypass
    /// service (the library checks it is the server's own file, owned by
    /// the server's uid or root and not writable by others, but not what
    /// it does).
    pub unsafe fn open(name: &str, opts: &LibOptions) -> io::Result<LibClient> {
        Self::open_flags(name, opts, 0)
    }

    /// Open the service `name` in message mode: the handlers run in the
    /// server's process, none of its code is loaded here.
    pub fn open_message(name: &str, opts: &LibOptions) -> io::Result<LibClient> {
        Self::open_flags(name, opts, sys::BYPASS_IPC_LIB_MESSAGE)
    }

    fn open_flags(name: &str, opts: &LibOptions, extra: u32) -> io::Result<LibClient> {
        let n = cstring(name)?;
        let msg = opts.msg_raw()?;
        let mut o = opts.raw(msg.as_ref())?;
        o.flags |= extra;
        let mut out = ptr::null_mut();
        // SAFETY: valid strings and options for the call; in library mode
        // the caller of open vouched for the object.
        cvt(unsafe { sys::bypass_ipc_lib_open(n.as_ptr(), &o, &mut out) })?;
        Ok(LibClient { raw: NonNull::new(out).ok_or_else(einval)? })
    }

    /// Call handler `op` with `req`; the response goes to `resp`: its
    /// length.  The handler's own error, or `EINVAL` (op out of range),
    /// `EPIPE` (the server died or closed the service), `EFAULT` (the
    /// handler faulted: the service is now broken), `EOWNERDEAD` (a lock's
    /// owner died: broken), `ENOTRECOVERABLE` (broken: [`recover`]),
    /// `EDEADLK` (called from inside a call); in message mode the errors of
    /// [`Conn::call`](super::Conn::call) too.
    ///
    /// [`recover`]: LibClient::recover
    #[inline]
    pub fn call(&self, op: u32, req: &[u8], resp: &mut [u8]) -> io::Result<usize> {
        // SAFETY: the buffers are valid for their lengths; the handler is
        // the code the caller of open vouched for (or runs in the server).
        let r = unsafe {
            sys::bypass_ipc_lib_call(
                self.raw.as_ptr(),
                op,
                req.as_ptr().cast(),
                req.len(),
                resp.as_mut_ptr().cast(),
                resp.len(),
            )
        };
        Ok(cvt(r)? as usize)
    }

    /// Run the service's recover hook (if it is broken).  `EOPNOTSUPP` in
    /// message mode (the server recovers).
    pub fn recover(&self) -> io::Result<()> {
        // SAFETY: a live handle.
        cvt(unsafe { sys::bypass_ipc_lib_recover(self.raw.as_ptr()) })?;
        Ok(())
    }

    /// The mode this handle got, its protection, the service's counters.
    pub fn stats(&self) -> io::Result<LibStats> {
        let mut s = LibStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_ipc_lib_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// The raw handle, for calls of [`bypass_sys`] (it stays owned here).
    pub fn as_raw(&self) -> *mut sys::bypass_ipc_lib {
        self.raw.as_ptr()
    }

    /// Whether calls run here (library mode) rather than in the server.
    pub fn is_library(&self) -> bool {
        self.stats().is_ok_and(|s| s.mode == sys::BYPASS_IPC_LIB_MODE_LIBRARY as i32)
    }
}

impl Drop for LibClient {
    fn drop(&mut self) {
        // SAFETY: live, no call runs (calls borrow the handle), not used
        // again.
        unsafe { sys::bypass_ipc_lib_close(self.raw.as_ptr()) };
    }
}
