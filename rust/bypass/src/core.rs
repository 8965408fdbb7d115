// SPDX-License-Identifier: MIT
//! What every module shares (`<bypass/core.h>`): the cycle clock, shared
//! arenas mapped at the same address in every process, descriptors over
//! Unix sockets, the log level and the version.
use std::ffi::{c_void, CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};

use crate::sys;
use crate::util::{cstring, cvt, einval};

/// The library's version, `"major.minor"`.
pub fn version() -> &'static str {
    // SAFETY: bypass_version returns a static NUL-terminated ASCII string.
    unsafe { CStr::from_ptr(sys::bypass_version()) }.to_str().unwrap_or("?")
}

/// How a receiver waits (doorbells, ipc connections): the library's
/// spin-then-sleep policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin up to the spin budget, then sleep (the default).
    #[default]
    Adaptive,
    /// Sleep at once.
    Sleep,
    /// Never sleep: the lowest latency, and a CPU burnt while waiting.
    Spin,
}

impl WaitMode {
    pub(crate) fn raw(self) -> i32 {
        (match self {
            WaitMode::Adaptive => sys::BYPASS_WAIT_ADAPTIVE,
            WaitMode::Sleep => sys::BYPASS_WAIT_SLEEP,
            WaitMode::Spin => sys::BYPASS_WAIT_SPIN,
        }) as i32
    }
}

/// Levels of the library's messages on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Nothing (the default unless `BYPASS_LOG` says otherwise).
    None,
    /// Errors.
    Error,
    /// Errors and warnings.
    Warn,
    /// And information.
    Info,
    /// Everything.
    Debug,
}

impl LogLevel {
    fn from_raw(v: i32) -> LogLevel {
        match v as u32 {
            sys::BYPASS_LOG_NONE => LogLevel::None,
            sys::BYPASS_LOG_ERROR => LogLevel::Error,
            sys::BYPASS_LOG_WARN => LogLevel::Warn,
            sys::BYPASS_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

/// Set the log level for the whole process (it overrides `BYPASS_LOG`);
/// returns the previous one.
pub fn set_log_level(level: LogLevel) -> LogLevel {
    // SAFETY: plain integer argument.
    LogLevel::from_raw(unsafe { sys::bypass_set_log_level(level as i32) })
}

/// The cycle clock: the time-stamp counter, calibrated against
/// CLOCK_MONOTONIC.
pub mod clock {
    use crate::sys;

    /// Read the time-stamp counter (ordered after earlier loads), and the
    /// CPU the read happened on.
    #[inline]
    pub fn rdtscp() -> (u64, u32) {
        let mut cpu = 0;
        // SAFETY: cpu is a valid place for the CPU number.
        let t = unsafe { sys::bypass_rdtscp(&mut cpu) };
        (t, cpu)
    }

    /// Read the time-stamp counter only.
    #[inline]
    pub fn cycles() -> u64 {
        // SAFETY: a null cpu pointer is allowed.
        unsafe { sys::bypass_rdtscp(std::ptr::null_mut()) }
    }

    /// TSC ticks per second (calibrated once, about 20 ms on the first
    /// call), or `None` when the TSC is not usable.
    pub fn tsc_hz() -> Option<u64> {
        // SAFETY: no arguments.
        Some(unsafe { sys::bypass_tsc_hz() }).filter(|&h| h != 0)
    }

    /// A TSC interval in nanoseconds.
    pub fn cycles_to_ns(cycles: u64) -> f64 {
        // SAFETY: plain argument.
        unsafe { sys::bypass_cycles_to_ns(cycles) }
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    pub fn now_ns() -> u64 {
        // SAFETY: no arguments.
        unsafe { sys::bypass_now_ns() }
    }
}

// -------------------------------------------------------------------- arena

/// Options of [`Arena::create`].
#[derive(Clone, Debug, Default)]
pub struct ArenaOptions {
    size: usize,
    addr: usize,
    name: Option<String>,
}

impl ArenaOptions {
    /// Default options: 1 MiB wherever the library picks.
    pub fn new() -> Self {
        Self::default()
    }
    /// Bytes, rounded up to the page size (0: 1 MiB).
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }
    /// A fixed address wanted (page-aligned); creating fails with `EEXIST`
    /// when the range is taken.
    pub fn addr(mut self, addr: usize) -> Self {
        self.addr = addr;
        self
    }
    /// The memfd's name, for debugging.  A name with a NUL byte makes
    /// [`Arena::create`] fail with `EINVAL`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
}

/// A shared-memory arena: a memfd mapped at the same virtual address in
/// every process that opens it, so pointers into it stay valid across
/// them.  Memory is carved with a lock-free bump allocator and freed only
/// with the arena.  Dropping it unmaps this process's mapping.
#[derive(Debug)]
pub struct Arena {
    raw: NonNull<sys::bypass_arena>,
}

// SAFETY: the handle is a plain description of a mapping; core.h documents
// bypass_arena_alloc as "safe from several threads and processes at once",
// and the other calls only read the handle or publish a root with an
// atomic store.  Closing needs `self` by value (Drop).
unsafe impl Send for Arena {}
// SAFETY: as above: every `&self` method is safe to call concurrently.
unsafe impl Sync for Arena {}

impl Arena {
    /// Create an arena and map it.
    pub fn create(opts: &ArenaOptions) -> io::Result<Arena> {
        let name = cstr_opt(opts.name.as_deref())?;
        let o = sys::bypass_arena_opts {
            size: opts.size,
            addr: opts.addr as *mut c_void,
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            ..Default::default()
        };
        let mut out = ptr::null_mut();
        // SAFETY: o and out are valid for the call; name outlives it.
        cvt(unsafe { sys::bypass_arena_create(&o, &mut out) })?;
        Ok(Arena { raw: NonNull::new(out).ok_or_else(einval)? })
    }

    /// Map an arena received as a descriptor (from [`Arena::as_fd`] in
    /// another process) at its creator's address.  The descriptor is
    /// duplicated.  `EEXIST` when that range is taken here, `EINVAL` when
    /// `fd` is not an arena.
    pub fn open(fd: BorrowedFd<'_>) -> io::Result<Arena> {
        let mut out = ptr::null_mut();
        // SAFETY: fd is a valid descriptor for the call; out is valid.
        cvt(unsafe { sys::bypass_arena_open(fd.as_raw_fd(), &mut out) })?;
        Ok(Arena { raw: NonNull::new(out).ok_or_else(einval)? })
    }

    pub(crate) fn raw(&self) -> *mut sys::bypass_arena {
        self.raw.as_ptr()
    }

    /// Where the arena is mapped.
    pub fn base(&self) -> *mut u8 {
        // SAFETY: a live handle.
        unsafe { sys::bypass_arena_base(self.raw.as_ptr()) as *mut u8 }
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        // SAFETY: a live handle.
        unsafe { sys::bypass_arena_size(self.raw.as_ptr()) }
    }

    /// Carve `size` bytes aligned to `align` (a power of two up to 4096;
    /// 0 means 64).  `ENOSPC` when the arena is full.  The memory is
    /// shared with every process that maps the arena; it is zeroed when
    /// the arena is created and never freed before it.
    pub fn alloc(&self, size: usize, align: usize) -> io::Result<NonNull<u8>> {
        let mut p = ptr::null_mut();
        // SAFETY: a live handle and a valid out pointer.
        cvt(unsafe { sys::bypass_arena_alloc(self.raw.as_ptr(), size, align, &mut p) })?;
        NonNull::new(p as *mut u8).ok_or_else(einval)
    }

    /// Publish `ptr` (inside the arena) in root slot `idx` (below
    /// [`sys::BYPASS_ARENA_ROOTS`]).
    pub fn set_root(&self, idx: u32, ptr: *const u8) -> io::Result<()> {
        // SAFETY: the library checks idx and that ptr lies in the arena.
        cvt(unsafe { sys::bypass_arena_set_root(self.raw.as_ptr(), idx, ptr as *mut c_void) })?;
        Ok(())
    }

    /// The pointer published in root slot `idx`; `ENOENT` for an empty slot.
    pub fn root(&self, idx: u32) -> io::Result<*mut u8> {
        let mut p = ptr::null_mut();
        // SAFETY: a live handle and a valid out pointer.
        cvt(unsafe { sys::bypass_arena_get_root(self.raw.as_ptr(), idx, &mut p) })?;
        Ok(p as *mut u8)
    }

    /// Whether `[ptr, ptr + len)` lies inside the arena.
    pub fn contains(&self, ptr: *const u8, len: usize) -> bool {
        // SAFETY: only compares addresses.
        unsafe { sys::bypass_arena_contains(self.raw.as_ptr(), ptr as *const c_void, len) == 1 }
    }
}

impl AsRawFd for Arena {
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: a live handle.
        unsafe { sys::bypass_arena_fd(self.raw.as_ptr()) }
    }
}

impl AsFd for Arena {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the memfd stays open as long as the arena.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the handle is live and not used again.
        unsafe { sys::bypass_arena_close(self.raw.as_ptr()) };
    }
}

// ------------------------------------------------------ descriptor passing

/// Send `data` (at least one byte) and up to 16 descriptors over a
/// connected Unix socket in one message; returns the bytes sent.
pub fn send_fds(sock: impl AsFd, fds: &[BorrowedFd<'_>], data: &[u8]) -> io::Result<usize> {
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let n = u32::try_from(raw.len()).map_err(|_| einval())?;
    // SAFETY: the slices are valid for the call.
    let r = unsafe {
        sys::bypass_send_fds(
            sock.as_fd().as_raw_fd(),
            raw.as_ptr(),
            n,
            data.as_ptr() as *const c_void,
            data.len(),
        )
    };
    Ok(cvt(r)? as usize)
}

/// Receive one message sent by [`send_fds`]: up to `data.len()` bytes and
/// up to `max_fds` descriptors (close-on-exec).  Returns the bytes
/// received (0 at end of file) and the descriptors; `EMSGSIZE` (and none
/// kept) when more descriptors came than `max_fds`.
pub fn recv_fds(
    sock: impl AsFd,
    data: &mut [u8],
    max_fds: usize,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut fds = vec![-1; max_fds];
    let mut n = u32::try_from(max_fds).map_err(|_| einval())?;
    // SAFETY: the buffers are valid for the call; n is their capacity.
    let r = unsafe {
        sys::bypass_recv_fds(
            sock.as_fd().as_raw_fd(),
            fds.as_mut_ptr(),
            &mut n,
            data.as_mut_ptr() as *mut c_void,
            data.len(),
        )
    };
    let len = cvt(r)? as usize;
    let owned = fds[..n as usize]
        .iter()
        // SAFETY: the library hands us fresh descriptors we now own.
        .map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    Ok((len, owned))
}

pub(crate) fn cstr_opt(s: Option<&str>) -> io::Result<Option<CString>> {
    s.map(cstring).transpose()
}
