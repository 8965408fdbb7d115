// SPDX-License-Identifier: MIT
//! An ipc echo pair: a server that echoes every message of its clients
//! from one epoll loop (bypass::ipc::Epoll: no system call while clients
//! keep it busy), and a client that sends messages built in place (loans)
//! and checks the echoes.  The Rust counterpart of
//! examples/ipc-echo-bypass.c and ipc-echo-client.c.
//!
//!   cargo run --example ipc_echo -- server NAME [CLIENTS]
//!   cargo run --example ipc_echo -- client NAME [COUNT]
use std::io;
use std::os::fd::AsFd;
use std::process::exit;
use std::time::Duration;

use bypass::ipc::{Conn, Epoll, IpcOptions, Service};

const LISTENER: u64 = u64::MAX;

fn server(name: &str, clients: usize) -> io::Result<()> {
    let svc = Service::listen(name, &IpcOptions::new())?;
    let mut ep = Epoll::new()?;
    ep.add_fd(svc.as_fd(), LISTENER, libc::EPOLLIN as u32)?;
    println!("ipc_echo: serving {name}");
    let (mut next, mut done) = (0u64, 0usize);
    while done < clients {
        let events = match ep.wait(16, None) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => r?,
        };
        for ev in events {
            if ev.token == LISTENER {
                if let Some(c) = svc.try_accept()? {
                    ep.add_conn(next, c, libc::EPOLLIN as u32).map_err(|(e, _)| e)?;
                    next += 1;
                }
                continue;
            }
            let Some(conn) = ep.conn(ev.token) else { continue };
            let gone = match conn.try_recv() {
                Ok(None) => false,
                // At most 1 ms for room: a client that does not read its
                // replies must not stall the others.
                Ok(Some(m)) => conn.send(&m, Some(Duration::from_millis(1))).is_err(),
                Err(_) => true, // the client left (ECONNRESET)
            };
            if gone {
                drop(ep.remove_conn(ev.token)?);
                done += 1;
            }
        }
    }
    Ok(())
}

fn client(name: &str, count: usize) -> io::Result<()> {
    let conn = Conn::connect(name, &IpcOptions::new())?;
    let t = Some(Duration::from_secs(5));
    for i in 0..count {
        let text = format!("message {i}");
        let mut loan = conn.loan(text.len(), t)?;
        loan.copy_from_slice(text.as_bytes());
        loan.send(text.len(), t)?;
        let echo = conn.recv(t)?;
        if *echo != *text.as_bytes() {
            return Err(io::Error::other(format!("echo {i} differs")));
        }
    }
    println!("ipc_echo: {count} messages echoed");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let r = match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("server"), Some(name)) => server(name, n(3, 1)),
        (Some("client"), Some(name)) => client(name, n(3, 1000)),
        _ => {
            eprintln!("usage: ipc_echo server NAME [CLIENTS] | client NAME [COUNT]");
            exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("ipc_echo: {e}");
        exit(1);
    }
}
