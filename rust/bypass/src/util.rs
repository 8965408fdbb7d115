// SPDX-License-Identifier: MIT
//! Conversions shared by the wrappers.
use std::ffi::{c_int, CString};
use std::io;
use std::time::Duration;

/// A C return value: 0 or a count, or -errno.
#[inline]
pub(crate) fn cvt(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::from_raw_os_error(-r))
    } else {
        Ok(r)
    }
}

/// The same for the few functions returning a wider count.
#[inline]
pub(crate) fn cvt_isize(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::from_raw_os_error((-r) as i32))
    } else {
        Ok(r as usize)
    }
}

/// An `Option<Duration>` as the library's `int64_t timeout_ns`: `None` is
/// BYPASS_FOREVER, longer than 292 years saturates.
#[inline]
pub(crate) fn timeout_ns(t: Option<Duration>) -> i64 {
    match t {
        None => bypass_sys::BYPASS_FOREVER,
        Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

/// A spin budget in nanoseconds (0 = the library's default).
pub(crate) fn spin_ns(d: Option<Duration>) -> u64 {
    d.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1))
}

/// A string for C; an interior NUL is EINVAL, as the library would say
/// of a bad name.
pub(crate) fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

pub(crate) fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

/// A marker that makes a type `!Sync` (and keeps it `Send`).
pub(crate) type NotSync = std::marker::PhantomData<std::cell::Cell<()>>;
/// A marker that makes a type `!Send` and `!Sync`.
pub(crate) type NotSend = std::marker::PhantomData<*mut ()>;
