// SPDX-License-Identifier: MIT
//! notify: Doorbell.
mod common;
use common::*;

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use bypass::core::{Arena, ArenaOptions};
use bypass::notify::{backend_available, set_signal, signal_number, Doorbell, DoorbellOptions};
use bypass::WaitMode;

const T: Option<Duration> = Some(Duration::from_secs(5));

#[test]
fn ring_wait_try_and_timeouts() {
    let _g = serial();
    let db = Doorbell::new().unwrap();
    assert_eq!(db.try_wait().unwrap(), None);
    assert_eq!(errno(&db.wait(Some(Duration::ZERO)).unwrap_err()), libc::ETIMEDOUT);
    assert_eq!(errno(&db.wait(Some(Duration::from_millis(5))).unwrap_err()), libc::ETIMEDOUT);
    db.ring().unwrap();
    db.ring().unwrap();
    assert_eq!(db.wait(T).unwrap(), 2); // rings are counted, consumed once
    db.ring().unwrap();
    assert_eq!(db.try_wait().unwrap(), Some(1));
    assert!(db.peer_alive().unwrap()); // a thread-only doorbell
    assert!(!db.backend().is_empty());
    assert!(!db.addr().is_null());
}

#[test]
fn options_and_modes() {
    let _g = serial();
    for mode in [WaitMode::Adaptive, WaitMode::Sleep, WaitMode::Spin] {
        let mut db = DoorbellOptions::new().mode(mode).spin(Duration::from_micros(5)).create().unwrap();
        db.ring().unwrap();
        assert_eq!(db.wait(T).unwrap(), 1);
        db.set_mode(WaitMode::Sleep, Some(Duration::from_micros(1))).unwrap();
        db.ring().unwrap();
        assert_eq!(db.wait(T).unwrap(), 1);
    }
    // Bad options: an unknown backend, a name with NUL.
    let e = DoorbellOptions::new().backend("carrier-pigeon").create().unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL);
    assert_eq!(errno(&DoorbellOptions::new().backend("a\0").create().unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&backend_available("carrier-pigeon").unwrap_err()), libc::EINVAL);
    assert!(backend_available("futex").unwrap());
    assert_eq!(DoorbellOptions::new().backend("auto").create().unwrap().backend(), "futex");
    // User interrupts have no backend (issue 18): an unknown name.
    assert_eq!(errno(&backend_available("uintr").unwrap_err()), libc::EINVAL);
    let e = DoorbellOptions::new().backend("uintr").create().unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL);
    assert!(signal_number() > 0);
    // Not a real-time signal: EINVAL.
    assert_eq!(errno(&set_signal(libc::SIGUSR1).unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&set_signal(libc::SIGRTMAX() + 1).unwrap_err()), libc::EINVAL);
}

#[test]
fn threads_ring_and_wait() {
    let _g = serial();
    let db = Arc::new(Doorbell::new().unwrap());
    let n = 2000;
    let d2 = db.clone();
    let t = std::thread::spawn(move || {
        for _ in 0..n {
            d2.ring().unwrap();
        }
    });
    let mut got = 0;
    while got < n {
        got += db.wait(T).unwrap();
    }
    t.join().unwrap();
    assert_eq!(got, n);
}

#[test]
fn eventfd_arm_and_poll() {
    let _g = serial();
    let db = DoorbellOptions::new().eventfd(true).create().unwrap();
    let fd = db.eventfd().unwrap().as_raw_fd();
    assert_eq!(db.as_raw_fd(), fd);
    assert!(!db.arm().unwrap()); // armed, nothing pending
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: plain poll on one descriptor.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 0) }, 0);
    db.ring().unwrap();
    assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1);
    assert_eq!(db.try_wait().unwrap(), Some(1));
    db.ring().unwrap();
    assert!(db.arm().unwrap()); // already pending
    assert_eq!(db.try_wait().unwrap(), Some(1));
}

#[test]
fn shared_over_fork_and_dead_peer() {
    let _g = serial();
    let ping = Doorbell::new().unwrap();
    let pong = Doorbell::new().unwrap();
    let pid = fork_child(|| {
        for _ in 0..100 {
            if ping.wait(T).is_err() {
                return false;
            }
            pong.ring().unwrap();
        }
        true
    });
    for _ in 0..100 {
        ping.ring().unwrap();
        assert!(pong.wait(T).unwrap() >= 1);
    }
    assert_eq!(wait_child(pid), 0);
    // The peer has exited and rang nothing more: EPIPE, not a hang.  (The
    // library checks its peers about every 20 ms.)
    let e = pong.wait(Some(Duration::from_secs(10))).unwrap_err();
    assert_eq!(errno(&e), libc::EPIPE, "{e}");
    assert!(!pong.peer_alive().unwrap());
}

#[test]
fn sent_over_a_unix_socket() {
    let _g = serial();
    let (a, b) = UnixStream::pair().unwrap();
    let db = DoorbellOptions::new().eventfd(true).create().unwrap();
    let pid = fork_child(move || {
        let got = Doorbell::recv_from(&b).unwrap();
        got.ring().is_ok()
    });
    db.send_to(&a).unwrap();
    assert_eq!(db.wait(T).unwrap(), 1);
    assert_eq!(wait_child(pid), 0);
    // Not a doorbell: EPROTO; a closed peer: ECONNRESET.
    let (c, d) = UnixStream::pair().unwrap();
    bypass::core::send_fds(&c, &[], b"junk").unwrap();
    assert_eq!(errno(&Doorbell::recv_from(&d).unwrap_err()), libc::EPROTO);
    drop(c);
    assert_eq!(errno(&Doorbell::recv_from(&d).unwrap_err()), libc::ECONNRESET);
}

#[test]
fn in_an_arena_and_destroyed() {
    let _g = serial();
    let arena = Arena::create(&ArenaOptions::new()).unwrap();
    let db = DoorbellOptions::new().create_in(&arena).unwrap();
    let other = Doorbell::open(&arena, db.addr()).unwrap();
    other.ring().unwrap();
    assert_eq!(db.wait(T).unwrap(), 1);
    // Not a doorbell there: EINVAL.
    let junk = arena.alloc(256, 64).unwrap();
    assert_eq!(errno(&Doorbell::open(&arena, junk.as_ptr()).unwrap_err()), libc::EINVAL);
    // Destroy ends it for every handle; a waiter wakes with EINVAL.
    let other = Arc::new(other);
    let o2 = other.clone();
    let t = std::thread::spawn(move || o2.wait(Some(Duration::from_secs(10))));
    std::thread::sleep(Duration::from_millis(20));
    db.destroy().unwrap();
    assert_eq!(errno(&t.join().unwrap().unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&other.ring().unwrap_err()), libc::EINVAL);
    // Full arena: ENOSPC.
    let small = Arena::create(&ArenaOptions::new().size(4096)).unwrap();
    let mut made = Vec::new();
    let e = loop {
        match DoorbellOptions::new().create_in(&small) {
            Ok(d) => made.push(d),
            Err(e) => break e,
        }
    };
    assert_eq!(errno(&e), libc::ENOSPC);
}

static HITS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn on_ring(_db: *mut bypass::sys::bypass_doorbell, count: u32, _arg: *mut std::ffi::c_void) {
    HITS.fetch_add(count, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn interrupt_mode() {
    let _g = serial();
    // The signal chosen before the first handler (the one it has already,
    // if an earlier test of this process installed it: then EBUSY for
    // another).
    let sig = signal_number();
    set_signal(sig).unwrap();
    let other = if sig == libc::SIGRTMIN() + 5 { libc::SIGRTMIN() + 6 } else { libc::SIGRTMIN() + 5 };
    let db = Doorbell::new().unwrap();
    // SAFETY: the callback only touches an atomic.
    unsafe { db.set_handler(on_ring, std::ptr::null_mut()) }.unwrap();
    assert_eq!(errno(&db.wait(Some(Duration::ZERO)).unwrap_err()), libc::EBUSY);
    db.ring().unwrap();
    let t0 = std::time::Instant::now();
    while HITS.load(std::sync::atomic::Ordering::SeqCst) == 0 && t0.elapsed() < Duration::from_secs(5) {
        std::hint::spin_loop();
    }
    assert_eq!(HITS.load(std::sync::atomic::Ordering::SeqCst), 1);
    db.clear_handler().unwrap();
    db.ring().unwrap();
    assert_eq!(db.wait(T).unwrap(), 1);
    // The handler is installed now: another signal is refused.
    assert_eq!(errno(&set_signal(other).unwrap_err()), libc::EBUSY);
    assert_eq!(signal_number(), sig);
}
