// SPDX-License-Identifier: MIT
//! ipc: Service, Conn, Loan, Msg, Epoll.  A connection's arena is mapped
//! at the same address on both sides, so its two ends live in two
//! processes: each test forks its peer.
mod common;
use common::*;

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bypass::ipc::{pkey_supported, Conn, Epoll, IpcOptions, Service};
use bypass::WaitMode;

const T: Option<Duration> = Some(Duration::from_secs(5));

fn go(s: &mut UnixStream) {
    s.write_all(b"g").unwrap();
}

fn wait_go(s: &mut UnixStream) -> bool {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).is_ok()
}

/// Listen here; a forked child connects and runs `client`; we accept.
fn with_client(opts: &IpcOptions, client: impl FnOnce(Conn, UnixStream) -> bool) -> (Service, Conn, i32, UnixStream) {
    let name = unique("c");
    let svc = Service::listen(&name, opts).unwrap();
    let (mine, theirs) = UnixStream::pair().unwrap();
    let pid = fork_child(move || {
        let c = Conn::connect(&name, &IpcOptions::new()).unwrap();
        client(c, theirs)
    });
    let conn = svc.accept(T).unwrap();
    (svc, conn, pid, mine)
}

/// Listen here; a forked child accepts and runs `server`; we connect.
fn with_server(opts: &IpcOptions, server: impl FnOnce(Conn, UnixStream) -> bool) -> (Conn, i32, UnixStream) {
    let name = unique("s");
    let svc = Service::listen(&name, opts).unwrap();
    let (mine, theirs) = UnixStream::pair().unwrap();
    let pid = fork_child(move || {
        let c = svc.accept(T).unwrap();
        server(c, theirs)
    });
    let conn = Conn::connect(&name, &IpcOptions::new()).unwrap();
    (conn, pid, mine)
}

#[test]
fn bad_names_and_options() {
    let _g = serial();
    let e = Conn::connect(&unique("nobody"), &IpcOptions::new()).unwrap_err();
    assert!(matches!(errno(&e), libc::ECONNREFUSED | libc::ENOENT), "{e}");
    assert_eq!(errno(&Service::listen("", &IpcOptions::new()).unwrap_err()), libc::EINVAL);
    assert_eq!(errno(&Service::listen("a\0b", &IpcOptions::new()).unwrap_err()), libc::EINVAL);
    let long = "x".repeat(200);
    assert_eq!(errno(&Service::listen(&long, &IpcOptions::new()).unwrap_err()), libc::EINVAL);
    let bad = IpcOptions::new().ring_size(5000); // not a power of two
    assert_eq!(errno(&Service::listen(&unique("bad"), &bad).unwrap_err()), libc::EINVAL);
    let bad = IpcOptions::new().ring_size(4096).max_msg(4096);
    assert_eq!(errno(&Service::listen(&unique("bad"), &bad).unwrap_err()), libc::EINVAL);
    let bad = IpcOptions::new().flags(0x8000_0000);
    assert_eq!(errno(&Service::listen(&unique("bad"), &bad).unwrap_err()), libc::EINVAL);
    // The same name twice.
    let name = unique("dup");
    let s = Service::listen(&name, &IpcOptions::new()).unwrap();
    assert_eq!(errno(&Service::listen(&name, &IpcOptions::new()).unwrap_err()), libc::EADDRINUSE);
    // Nobody waiting.
    assert!(s.try_accept().unwrap().is_none());
    let e = s.accept(Some(Duration::from_millis(5))).unwrap_err();
    assert!(matches!(errno(&e), libc::ETIMEDOUT | libc::EAGAIN));
    // Protection keys: either they work, or a reason and EOPNOTSUPP.
    if let Err(why) = pkey_supported() {
        assert!(!why.is_empty());
        let e = Service::listen(&unique("pk"), &IpcOptions::new().pkey(true)).unwrap_err();
        assert_eq!(errno(&e), libc::EOPNOTSUPP);
    }
}

#[test]
fn send_recv_copy_and_in_place() {
    let _g = serial();
    let (_svc, server, pid, mut sock) = with_client(&IpcOptions::new().ring_size(65536), |c, mut s| {
        c.send(b"copied", T).unwrap();
        let mut loan = c.loan(64, T).unwrap();
        assert_eq!(loan.capacity(), 64);
        loan[..8].copy_from_slice(b"in place");
        loan.send(8, T).unwrap();
        c.send(b"", T).unwrap(); // empty messages are messages
        c.set_mode(WaitMode::Spin, Some(Duration::from_micros(3))).unwrap();
        wait_go(&mut s)
    });
    let (ppid, uid) = server.peer().unwrap();
    assert_eq!(ppid, pid);
    // SAFETY: plain system call.
    assert_eq!(uid, unsafe { libc::getuid() });
    assert_eq!(server.max_msg().unwrap(), 65536 / 4);
    let m = server.recv(T).unwrap();
    assert_eq!(&*m, b"copied");
    assert!(!m.is_call());
    // One message held at a time.
    assert_eq!(errno(&server.recv(Some(Duration::ZERO)).unwrap_err()), libc::EBUSY);
    drop(m);
    assert_eq!(&*server.recv(T).unwrap(), b"in place");
    assert_eq!(server.recv(T).unwrap().len(), 0);
    assert!(server.try_recv().unwrap().is_none());
    let e = server.recv(Some(Duration::from_millis(5))).unwrap_err();
    assert_eq!(errno(&e), libc::ETIMEDOUT);
    server.set_mode(WaitMode::Sleep, None).unwrap();
    go(&mut sock);
    assert_eq!(wait_child(pid), 0);
}

#[test]
fn loans_dropped_unsent_and_a_full_ring() {
    let _g = serial();
    let (_svc, server, pid, mut sock) = with_client(&IpcOptions::new().ring_size(4096), |c, mut s| {
        // The first message is "after": the loan dropped unsent sent nothing.
        if &*c.recv(T).unwrap() != b"after" {
            return false;
        }
        if c.recv(T).unwrap().len() != 3 {
            return false;
        }
        // Then the ring the server filled while we did not read.
        if !wait_go(&mut s) {
            return false;
        }
        let mut n = [0u8; 4];
        s.read_exact(&mut n).unwrap();
        let max = c.max_msg().unwrap();
        (0..u32::from_le_bytes(n)).all(|_| c.recv(T).map(|m| m.len() == max).unwrap_or(false))
    });
    {
        let mut loan = server.loan(100, T).unwrap();
        loan.fill(0xee);
        // A second loan while one is outstanding: EBUSY.
        assert_eq!(errno(&server.loan(10, T).unwrap_err()), libc::EBUSY);
    } // dropped unsent: given back
    server.send(b"after", T).unwrap();
    // Larger than max_msg: EMSGSIZE.
    let max = server.max_msg().unwrap();
    assert_eq!(errno(&server.loan(max + 1, T).unwrap_err()), libc::EMSGSIZE);
    assert_eq!(errno(&server.send(&vec![0; max + 1], T).unwrap_err()), libc::EMSGSIZE);
    // Sending more than was loaned: EINVAL, and the loan is given back.
    let loan = server.loan(8, T).unwrap();
    assert_eq!(errno(&loan.send(9, T).unwrap_err()), libc::EINVAL);
    server.loan(8, T).unwrap().send(3, T).unwrap();
    // Fill the ring while the client waits: EAGAIN without waiting,
    // ETIMEDOUT with a timeout.
    let chunk = vec![7u8; max];
    let mut sent = 0u32;
    let e = loop {
        match server.send(&chunk, Some(Duration::ZERO)) {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
    };
    assert!(sent >= 1);
    assert!(matches!(errno(&e), libc::EAGAIN | libc::ETIMEDOUT), "{e}");
    let e = server.loan(max, Some(Duration::from_millis(5))).unwrap_err();
    assert!(matches!(errno(&e), libc::EAGAIN | libc::ETIMEDOUT), "{e}");
    go(&mut sock);
    sock.write_all(&sent.to_le_bytes()).unwrap();
    assert_eq!(wait_child(pid), 0);
}

#[test]
fn calls_and_replies() {
    let _g = serial();
    let (client, pid, _sock) = with_server(&IpcOptions::new(), |c, _s| {
        for i in 0..3 {
            let req = c.recv(T).unwrap();
            if !req.is_call() {
                return false;
            }
            match i {
                0 => req.reply(&req, T).unwrap(), // echo, copied
                1 => {
                    let mut l = c.loan(16, T).unwrap();
                    l[..5].copy_from_slice(b"loan!");
                    l.reply(&req, 5, T).unwrap(); // in place
                }
                _ => {
                    // Dropped unanswered; then replying to a one-way
                    // message: EINVAL.
                    drop(req);
                    let m = c.recv(T).unwrap();
                    if m.is_call() || errno(&m.reply(b"no", T).unwrap_err()) != libc::EINVAL {
                        return false;
                    }
                }
            }
        }
        true
    });
    // Zero timeout: EINVAL (a call must be able to wait).
    assert_eq!(errno(&client.call(b"x", Some(Duration::ZERO)).unwrap_err()), libc::EINVAL);
    let a = client.call(b"ping", T).unwrap();
    assert_eq!(&*a, b"ping");
    // The previous response is still held: EBUSY.
    assert_eq!(errno(&client.call(b"x", T).unwrap_err()), libc::EBUSY);
    drop(a);
    let mut l = client.loan(8, T).unwrap();
    l[..3].copy_from_slice(b"req");
    assert_eq!(&*l.call(3, T).unwrap(), b"loan!");
    // A call the server drops unanswered: it times out.
    let e = client.call(b"ignored", Some(Duration::from_millis(50))).unwrap_err();
    assert_eq!(errno(&e), libc::ETIMEDOUT);
    client.send(b"one-way", T).unwrap();
    assert_eq!(wait_child(pid), 0);
}

#[test]
fn dead_peer_becomes_an_error() {
    let _g = serial();
    let (_svc, server, pid, _sock) = with_client(&IpcOptions::new(), |c, _s| {
        c.send(b"last words", T).unwrap();
        // SAFETY: die without closing anything, as a crash would.
        unsafe { libc::_exit(0) }
    });
    assert_eq!(wait_child(pid), 0);
    // What it sent is still read, then ECONNRESET (within ~20 ms).
    assert_eq!(&*server.recv(T).unwrap(), b"last words");
    assert_eq!(errno(&server.recv(Some(Duration::from_secs(10))).unwrap_err()), libc::ECONNRESET);
    assert_eq!(errno(&server.send(b"hello?", T).unwrap_err()), libc::EPIPE);
    assert_eq!(errno(&server.loan(1, T).unwrap_err()), libc::EPIPE);
}

#[test]
fn server_dies_during_a_call() {
    let _g = serial();
    let (client, pid, _sock) = with_server(&IpcOptions::new(), |c, _s| {
        let _req = c.recv(T).unwrap();
        // SAFETY: die holding the request, unanswered.
        unsafe { libc::_exit(0) }
    });
    let e = client.call(b"hello", Some(Duration::from_secs(10))).unwrap_err();
    assert_eq!(errno(&e), libc::ECONNRESET, "{e}");
    assert_eq!(wait_child(pid), 0);
}

#[test]
fn epoll_reports_connections_and_descriptors() {
    let _g = serial();
    let name = unique("epoll");
    let svc = Service::listen(&name, &IpcOptions::new()).unwrap();
    let mut ep = Epoll::new().unwrap();
    ep.add_fd(svc.as_fd(), 1000, libc::EPOLLIN as u32).unwrap();
    assert!(ep.wait(8, Some(Duration::ZERO)).unwrap().is_empty());
    let (mut mine, theirs) = UnixStream::pair().unwrap();
    let n2 = name.clone();
    let pid = fork_child(move || {
        let mut s = theirs;
        let a = Conn::connect(&n2, &IpcOptions::new()).unwrap();
        let _b = Conn::connect(&n2, &IpcOptions::new()).unwrap();
        a.send(b"ready", T).unwrap();
        wait_go(&mut s) // then both connections close
    });
    let evs = ep.wait(8, T).unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].token, 1000);
    let first = svc.accept(T).unwrap();
    let second = svc.accept(T).unwrap();
    // The client's first connection is accepted first.
    ep.add_conn(7, first, (libc::EPOLLIN | libc::EPOLLRDHUP) as u32).map_err(|(e, _)| e).unwrap();
    // A token in use: EEXIST, and the connection comes back.
    let (e, second) = ep.add_conn(7, second, libc::EPOLLIN as u32).map(|_| ()).unwrap_err();
    assert_eq!(errno(&e), libc::EEXIST);
    // EPOLLOUT is not supported for connections.
    let (e, _second) = ep.add_conn(8, second, libc::EPOLLOUT as u32).map(|_| ()).unwrap_err();
    assert_eq!(errno(&e), libc::EOPNOTSUPP);
    let evs = ep.wait(8, T).unwrap();
    assert!(evs.iter().any(|e| e.token == 7 && e.readable()), "{evs:?}");
    assert_eq!(&*ep.conn(7).unwrap().recv(T).unwrap(), b"ready");
    ep.modify_conn(7, (libc::EPOLLIN | libc::EPOLLRDHUP) as u32).unwrap();
    assert_eq!(ep.conns(), 1);
    go(&mut mine);
    assert_eq!(wait_child(pid), 0);
    let evs = ep.wait(8, Some(Duration::from_secs(10))).unwrap();
    assert!(evs.iter().any(|e| e.token == 7 && e.hangup()), "{evs:?}");
    let back = ep.remove_conn(7).unwrap();
    assert_eq!(errno(&back.recv(Some(Duration::ZERO)).unwrap_err()), libc::ECONNRESET);
    assert_eq!(errno(&ep.remove_conn(7).unwrap_err()), libc::ENOENT);
    ep.remove_fd(svc.as_fd()).unwrap();
}

#[test]
fn arm_and_the_connection_fd() {
    let _g = serial();
    let (_svc, server, pid, mut sock) = with_client(&IpcOptions::new(), |c, mut s| {
        wait_go(&mut s);
        c.send(b"wake", T).unwrap();
        wait_go(&mut s);
        c.send(b"again", T).unwrap();
        wait_go(&mut s)
    });
    let fd = server.as_raw_fd();
    assert!(fd >= 0);
    assert!(!server.arm().unwrap());
    go(&mut sock);
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: poll on one descriptor.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1);
    assert_eq!(&*server.recv(T).unwrap(), b"wake");
    go(&mut sock);
    assert_eq!(&*server.recv(T).unwrap(), b"again");
    go(&mut sock);
    assert_eq!(wait_child(pid), 0);
}

#[test]
fn echo_pair_of_example_processes() {
    let _g = serial();
    let name = unique("example");
    let mut srv = std::process::Command::new(example("ipc_echo"))
        .args(["server", &name, "2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the ipc_echo example (built by cargo test)");
    // Wait for the server's first line: it listens.
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(srv.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("serving"), "{line}");
    for n in ["500", "100"] {
        let st = std::process::Command::new(example("ipc_echo")).args(["client", &name, n]).status().unwrap();
        assert!(st.success());
    }
    assert!(srv.wait().unwrap().success());
}
