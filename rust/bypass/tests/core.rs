// SPDX-License-Identifier: MIT
//! core: version, log level, clock, arenas, descriptors over sockets.
mod common;
use common::*;

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;

use bypass::core::{clock, recv_fds, send_fds, set_log_level, Arena, ArenaOptions, LogLevel};

#[test]
fn version_and_log_level() {
    let _g = serial();
    let v = bypass::version();
    assert_eq!(v, format!("{}.{}", bypass::sys::BYPASS_VERSION_MAJOR, bypass::sys::BYPASS_VERSION_MINOR));
    let old = set_log_level(LogLevel::Error);
    assert_eq!(set_log_level(old), LogLevel::Error);
}

#[test]
fn clock_moves_forward() {
    let _g = serial();
    let a = clock::cycles();
    let (b, _cpu) = clock::rdtscp();
    assert!(b >= a);
    let t0 = clock::now_ns();
    std::thread::sleep(std::time::Duration::from_millis(2));
    assert!(clock::now_ns() > t0);
    if let Some(hz) = clock::tsc_hz() {
        assert!(hz > 1_000_000);
        assert!((clock::cycles_to_ns(hz) - 1e9).abs() < 1e6);
    }
}

#[test]
fn arena_alloc_roots_and_bad_options() {
    let _g = serial();
    let a = Arena::create(&ArenaOptions::new().size(1 << 16).name("rs-test")).unwrap();
    assert!(a.size() >= 1 << 16);
    let p = a.alloc(100, 0).unwrap();
    assert!(a.contains(p.as_ptr(), 100));
    assert!(!a.contains(std::ptr::null(), 1));
    assert_eq!(p.as_ptr() as usize % 64, 0);
    a.set_root(0, p.as_ptr()).unwrap();
    assert_eq!(a.root(0).unwrap(), p.as_ptr());
    assert_eq!(errno(&a.root(1).unwrap_err()), libc::ENOENT);
    assert_eq!(errno(&a.set_root(99, p.as_ptr()).unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&a.alloc(16, 3).unwrap_err()), libc::EINVAL); // not a power of two
    assert_eq!(errno(&a.alloc(1 << 20, 0).unwrap_err()), libc::ENOSPC);
    assert!(a.as_fd().as_raw_fd() >= 0);
    // Bad options.
    assert_eq!(errno(&Arena::create(&ArenaOptions::new().addr(4097)).unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&Arena::create(&ArenaOptions::new().name("a\0b")).unwrap_err()), libc::EINVAL);
    // The same range again in this process.
    assert_eq!(errno(&Arena::create(&ArenaOptions::new().addr(a.base() as usize)).unwrap_err()), libc::EEXIST);
    assert_eq!(errno(&Arena::open(a.as_fd()).unwrap_err()), libc::EEXIST);
}

#[test]
fn arena_shared_with_a_child() {
    let _g = serial();
    let (s1, s2) = UnixStream::pair().unwrap();
    // Forked first, so that the child has no mapping at the arena's address.
    let pid = fork_child(move || {
        let mut b = [0u8; 8];
        let (n, fds) = recv_fds(&s2, &mut b, 4).unwrap();
        if n != 8 || fds.len() != 1 {
            return false;
        }
        let a2 = Arena::open(fds[0].as_fd()).unwrap();
        let q = a2.root(2).unwrap();
        // SAFETY: root 2 names 8 bytes of the arena.
        unsafe { (q as *mut u64).write_volatile(0xfeed) };
        a2.base() as u64 == u64::from_le_bytes(b)
    });
    let a = Arena::create(&ArenaOptions::new()).unwrap();
    let p = a.alloc(8, 8).unwrap();
    a.set_root(2, p.as_ptr()).unwrap();
    send_fds(&s1, &[a.as_fd()], &(a.base() as u64).to_le_bytes()).unwrap();
    assert_eq!(wait_child(pid), 0);
    // SAFETY: 8 bytes of the arena, written by the child.
    assert_eq!(unsafe { (p.as_ptr() as *const u64).read_volatile() }, 0xfeed);
}

#[test]
fn descriptors_over_a_socket() {
    let _g = serial();
    let (a, b) = UnixStream::pair().unwrap();
    let (r, mut w) = std::os::unix::net::UnixStream::pair().unwrap();
    assert_eq!(send_fds(&a, &[r.as_fd(), w.as_fd()], b"xy").unwrap(), 2);
    let mut buf = [0u8; 8];
    let (n, fds) = recv_fds(&b, &mut buf, 4).unwrap();
    assert_eq!((n, fds.len(), &buf[..2]), (2, 2, &b"xy"[..]));
    w.write_all(b"z").unwrap();
    let mut got = [0u8; 1];
    std::fs::File::from(fds.into_iter().next().unwrap()).read_exact(&mut got).unwrap();
    assert_eq!(&got, b"z");
    // More descriptors than room: all closed, EMSGSIZE.
    send_fds(&a, &[r.as_fd(), w.as_fd()], b"x").unwrap();
    assert_eq!(errno(&recv_fds(&b, &mut buf, 1).unwrap_err()), libc::EMSGSIZE);
    // No data: EINVAL; too many descriptors: EINVAL.
    assert_eq!(errno(&send_fds(&a, &[], b"").unwrap_err()), libc::EINVAL);
    let many: Vec<_> = (0..17).map(|_| r.as_fd()).collect();
    assert_eq!(errno(&send_fds(&a, &many, b"x").unwrap_err()), libc::EINVAL);
    drop(a);
    assert_eq!(recv_fds(&b, &mut buf, 1).unwrap().0, 0); // end of file
}
