// SPDX-License-Identifier: MIT
//! batch: Segment guard, scope, the explicit calls.
mod common;
use common::*;

use std::io::{IoSlice, Read, Write};
use std::net::{Shutdown, UdpSocket};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use bypass::batch::{self, BatchOptions, Segment};

/// io_uring may be refused here (a seccomp filter, io_uring_disabled):
/// then the batch tests have nothing to test.
fn available() -> bool {
    match Segment::start() {
        Ok(s) => {
            drop(s);
            true
        }
        Err(e) => {
            eprintln!("skipped: batch segments unavailable here: {e}");
            false
        }
    }
}

fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: plain system call.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors we own.
    unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) }
}

#[test]
fn scope_writes_and_results() {
    let _g = serial();
    if !available() {
        return;
    }
    let (mut r, w) = pipe();
    let head = b"hello, ".to_vec();
    let tail = String::from("world\n");
    let ((a, b, c), done) = batch::scope(|seg| {
        assert!(batch::active());
        let a = seg.write(&w, &head).unwrap();
        let b = seg.writev(&w, &[IoSlice::new(b"wor"), IoSlice::new(&tail.as_bytes()[3..])]).unwrap();
        let c = seg.write(&w, b"").unwrap();
        assert_eq!(seg.len(), 3);
        (a, b, c)
    })
    .unwrap();
    assert!(!batch::active());
    assert_eq!(done.len(), 3);
    assert_eq!(done.stored(), 3);
    assert_eq!(done.result(a).unwrap(), 7);
    assert_eq!(done.result(b).unwrap(), 6);
    assert_eq!(done.result(c).unwrap(), 0);
    drop(w);
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    assert_eq!(s, "hello, world\n");
}

#[test]
fn guard_flushes_on_drop_and_keeps_owned_payloads() {
    let _g = serial();
    if !available() {
        return;
    }
    let (mut r, w) = pipe();
    {
        let mut seg = Segment::start().unwrap();
        // A second segment on this thread: EALREADY.
        assert_eq!(errno(&Segment::start().unwrap_err()), libc::EALREADY);
        assert_eq!(errno(&batch::start().unwrap_err()), libc::EALREADY);
        seg.write_owned(&w, format!("{}-", 42)).unwrap();
        seg.write(&w, b"static").unwrap();
        let mut buf = [0u8; 9];
        // Nothing has reached the pipe before the flush.
        // SAFETY: a non-blocking peek at the read end.
        let n = unsafe { libc::recv(std::os::fd::AsRawFd::as_raw_fd(&r), buf.as_mut_ptr().cast(), 9, libc::MSG_DONTWAIT) };
        assert!(n <= 0);
    } // dropped: flushed
    drop(w);
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    assert_eq!(s, "42-static");
}

#[test]
fn errors_at_once_and_at_the_flush() {
    let _g = serial();
    if !available() {
        return;
    }
    let (r, w) = pipe();
    let mut seg = Segment::start().unwrap();
    // (A negative descriptor, which the library refuses at once with
    // EBADF, cannot be made: AsFd never holds -1.)
    // A closed descriptor number fails at the flush (EBADF), and a failed
    // call stops the later ones on the same descriptor (ECANCELED).
    let (r2, w2) = pipe();
    drop(r2); // writing to w2 now: EPIPE
    let a = seg.send_owned(&w2, b"to nobody".to_vec(), libc::MSG_NOSIGNAL).unwrap();
    let b = seg.write(&w2, b"after").unwrap();
    let c = seg.write(&w, b"fine").unwrap();
    let done = seg.flush().unwrap();
    assert!(done.result(a).is_err());
    let eb = done.result(b).unwrap_err();
    assert!(matches!(errno(&eb), libc::ECANCELED | libc::EPIPE), "{eb}");
    assert_eq!(done.result(c).unwrap(), 4);
    // A ticket of another segment: EINVAL.
    let other = batch::scope(|s| s.write(&w, b"1").unwrap()).unwrap();
    assert_eq!(errno(&done.result(other.0).unwrap_err()), libc::EINVAL);
    drop((r, w2));
    // No segment open: ENOTCONN.
    assert_eq!(errno(&batch::flush().unwrap_err()), libc::ENOTCONN);
}

#[test]
fn sockets_sendfile_shutdown_close_setsockopt() {
    let _g = serial();
    if !available() {
        return;
    }
    let (a, mut b) = UnixStream::pair().unwrap();
    let dir = TempDir::new("sf");
    let mut f = std::fs::File::options().read(true).write(true).create(true).truncate(true).open(dir.0.join("x")).unwrap();
    f.write_all(b"file contents").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = udp.local_addr().unwrap();
    let (dup_a, keep) = (a.try_clone().unwrap(), a);
    let ((s1, s2, s3, s4, s5, s6, s7), done) = batch::scope(|seg| {
        let s1 = seg.send(&keep, b"sent ", 0).unwrap();
        let s2 = seg.sendfile(&keep, &f, Some(0), 4).unwrap();
        let s3 = seg.send_msg(&keep, &[IoSlice::new(b" msg")], None, 0).unwrap();
        let s4 = seg.send_to(&udp, b"dgram", 0, to).unwrap();
        let one = 1i32.to_ne_bytes();
        let s5 = seg.setsockopt(&udp, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one).unwrap();
        let s6 = seg.shutdown(&keep, Shutdown::Write).unwrap();
        let s7 = seg.close(OwnedFd::from(dup_a)).unwrap();
        (s1, s2, s3, s4, s5, s6, s7)
    })
    .unwrap();
    assert_eq!(done.result(s1).unwrap(), 5);
    assert_eq!(done.result(s2).unwrap(), 4);
    assert_eq!(done.result(s3).unwrap(), 4);
    assert_eq!(done.result(s4).unwrap(), 5);
    // setsockopt needs Linux 6.7; older kernels answer EOPNOTSUPP/EINVAL.
    if let Err(e) = done.result(s5) {
        assert!(matches!(errno(&e), libc::EOPNOTSUPP | libc::EINVAL), "{e}");
    }
    assert_eq!(done.result(s6).unwrap(), 0);
    assert_eq!(done.result(s7).unwrap(), 0);
    let mut s = String::new();
    b.read_to_string(&mut s).unwrap();
    assert_eq!(s, "sent file msg");
    let mut d = [0u8; 16];
    assert_eq!(udp.recv(&mut d).unwrap(), 5);
}

#[test]
fn explicit_calls_configure_register_stats() {
    let _g = serial();
    if !available() {
        return;
    }
    // This thread's queue exists already (the segments above): EBUSY; bad
    // depths: EINVAL.
    assert_eq!(errno(&batch::configure(&BatchOptions::new().entries(3)).unwrap_err()), libc::EINVAL);
    let e = batch::configure(&BatchOptions::new().entries(64)).unwrap_err();
    assert_eq!(errno(&e), libc::EBUSY);
    // A fresh thread takes the configuration.
    std::thread::spawn(|| {
        batch::configure(&BatchOptions::new().entries(64)).unwrap();
        let (_r, w) = pipe();
        let (t, done) = batch::scope(|s| s.write(&w, b"x").unwrap()).unwrap();
        assert_eq!(done.result(t).unwrap(), 1);
    })
    .join()
    .unwrap();
    let before = batch::stats().unwrap();
    let (mut r, w) = pipe();
    batch::register_fd(w.as_fd()).unwrap();
    assert_eq!(errno(&batch::register_fd(w.as_fd()).unwrap_err()), libc::EALREADY);
    batch::start().unwrap();
    assert!(batch::active());
    assert_eq!(errno(&Segment::start().unwrap_err()), libc::EALREADY);
    assert_eq!(batch::flush().unwrap(), 0);
    let (t, done) = batch::scope(|s| s.write(&w, b"reg").unwrap()).unwrap();
    assert_eq!(done.result(t).unwrap(), 3);
    batch::unregister_fd(w.as_fd()).unwrap();
    assert_eq!(errno(&batch::unregister_fd(w.as_fd()).unwrap_err()), libc::ENOENT);
    let after = batch::stats().unwrap();
    assert!(after.segments >= before.segments + 2);
    assert!(after.deferred > before.deferred);
    drop(w);
    let mut s = String::new();
    r.read_to_string(&mut s).unwrap();
    assert_eq!(s, "reg");
}

#[test]
fn scope_flushes_when_the_closure_panics() {
    let _g = serial();
    if !available() {
        return;
    }
    let (mut r, w) = pipe();
    let data = b"before the panic".to_vec();
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = batch::scope(|seg| {
            seg.write(&w, &data).unwrap();
            panic!("boom");
        });
    }));
    assert!(res.is_err());
    assert!(!batch::active());
    drop(w);
    let mut s = Vec::new();
    r.read_to_end(&mut s).unwrap();
    assert_eq!(s, data);
}
