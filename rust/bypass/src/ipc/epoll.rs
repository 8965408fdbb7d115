// SPDX-License-Identifier: MIT
//! Connections in an epoll loop: `bypass_ipc_epoll_ctl` and
//! `bypass_ipc_epoll_wait` behind [`Epoll`].
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::time::Duration;

use super::Conn;
use crate::sys;
use crate::util::{cvt, timeout_ns};

/// One event of [`Epoll::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The token given when the connection or descriptor was added.
    pub token: u64,
    /// `EPOLLIN`, `EPOLLHUP`, `EPOLLRDHUP`, `EPOLLERR` ... (`libc::EPOLL*`).
    pub events: u32,
}

impl Event {
    /// A message waits (or, for a descriptor, it polls readable).
    pub fn readable(&self) -> bool {
        self.events & libc::EPOLLIN as u32 != 0
    }
    /// The peer is gone.
    pub fn hangup(&self) -> bool {
        self.events & (libc::EPOLLHUP | libc::EPOLLRDHUP) as u32 != 0
    }
}

/// An epoll instance that reports ready connections and ordinary
/// descriptors together (`bypass_ipc_epoll_ctl` / `bypass_ipc_epoll_wait`):
/// no system call while connections are busy.
///
/// It owns the connections added to it, so that none is closed while it
/// is registered and the instance cannot be closed under a registered one
/// (the library keys its records by the epoll descriptor's number).
/// Dropping it takes them out and closes them.
#[derive(Debug)]
pub struct Epoll {
    conns: HashMap<u64, Conn>,
    fd: OwnedFd,
}

impl Epoll {
    /// A new epoll instance (close-on-exec).
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain system call.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        Ok(Epoll { conns: HashMap::new(), fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Add a connection under `token`, reporting `events` (`EPOLLIN`,
    /// `EPOLLRDHUP`; hang-ups always).  On failure the connection is handed
    /// back with the error (`EEXIST` for a token in use, `EOPNOTSUPP` for
    /// `EPOLLOUT`, `EPOLLET`, `EPOLLONESHOT` or `EPOLLEXCLUSIVE`).
    pub fn add_conn(&mut self, token: u64, conn: Conn, events: u32) -> Result<&Conn, (io::Error, Conn)> {
        if self.conns.contains_key(&token) {
            return Err((io::Error::from_raw_os_error(libc::EEXIST), conn));
        }
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: a live epoll descriptor and connection; ev is valid.
        let r = unsafe {
            sys::bypass_ipc_epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, conn.raw.as_ptr(), &mut ev)
        };
        if let Err(e) = cvt(r) {
            return Err((e, conn));
        }
        Ok(self.conns.entry(token).or_insert(conn))
    }

    /// Change the events reported for the connection under `token`.
    pub fn modify_conn(&mut self, token: u64, events: u32) -> io::Result<()> {
        let conn = self.conns.get(&token).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: as in add_conn.
        cvt(unsafe { sys::bypass_ipc_epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_MOD, conn.raw.as_ptr(), &mut ev) })?;
        Ok(())
    }

    /// Take the connection under `token` out, and give it back.
    pub fn remove_conn(&mut self, token: u64) -> io::Result<Conn> {
        let conn = self.conns.remove(&token).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        // SAFETY: a registered connection of this instance.
        unsafe {
            sys::bypass_ipc_epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, conn.raw.as_ptr(), ptr::null_mut())
        };
        Ok(conn)
    }

    /// The connection under `token`.
    pub fn conn(&self, token: u64) -> Option<&Conn> {
        self.conns.get(&token)
    }

    /// How many connections are registered.
    pub fn conns(&self) -> usize {
        self.conns.len()
    }

    /// Add an ordinary descriptor (`epoll_ctl`, `data.u64 = token`).  It
    /// must stay open while registered, or be removed first.
    pub fn add_fd(&self, fd: BorrowedFd<'_>, token: u64, events: u32) -> io::Result<()> {
        self.ctl_fd(libc::EPOLL_CTL_ADD, fd, token, events)
    }

    /// Take an ordinary descriptor out.
    pub fn remove_fd(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl_fd(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    fn ctl_fd(&self, op: i32, fd: BorrowedFd<'_>, token: u64, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: valid descriptors and event.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Wait at most `timeout` for events (level-triggered), at most
    /// `max` of them; `EINTR` when a signal interrupted the sleep.
    pub fn wait(&self, max: usize, timeout: Option<Duration>) -> io::Result<Vec<Event>> {
        let max = max.clamp(1, i32::MAX as usize);
        let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; max];
        // SAFETY: evs has room for max events.
        let n = cvt(unsafe {
            sys::bypass_ipc_epoll_wait(self.fd.as_raw_fd(), evs.as_mut_ptr(), max as i32, timeout_ns(timeout))
        })? as usize;
        Ok(evs[..n].iter().map(|e| Event { token: e.u64, events: e.events }).collect())
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for Epoll {
    #[inline]
    fn drop(&mut self) {
        for (_, conn) in self.conns.drain() {
            // SAFETY: registered connections of this live instance.
            unsafe {
                sys::bypass_ipc_epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, conn.raw.as_ptr(), ptr::null_mut())
            };
        }
    }
}
