// SPDX-License-Identifier: MIT
//! Library mode from Rust, with the C tree's key-value service
//! (examples/ipc-kv/, built as build/examples/ipc-kv.so): a server that
//! loads it and serves message-mode clients and the events handlers post,
//! and a client that runs the handlers in its own thread (library mode) or
//! sends its calls to the server (message mode).  The Rust counterpart of
//! examples/ipc-kv-server.c and ipc-kv-client.c.
//!
//!   cargo run --example ipc_kv -- server NAME OBJECT [SECONDS]
//!   cargo run --example ipc_kv -- client NAME lib|msg set KEY VALUE
//!   cargo run --example ipc_kv -- client NAME lib|msg get KEY
//!   cargo run --example ipc_kv -- client NAME lib|msg count|save
//!   cargo run --example ipc_kv -- client NAME lib|msg check N
use std::io;
use std::os::fd::AsFd;
use std::process::exit;
use std::time::{Duration, Instant};

use bypass::ipc::{Accepted, Epoll, LibClient, LibOptions, LibService};

// The service's protocol (examples/ipc-kv/kv.h).
const KV_GET: u32 = 0;
const KV_SET: u32 = 1;
const KV_COUNT: u32 = 3;
const KV_SAVE: u32 = 4;
const KV_EV_SAVE: u32 = 1;
const KV_VAL_MAX: usize = 1024;
const LISTENER: u64 = u64::MAX;

fn server(name: &str, object: &str, secs: u64) -> io::Result<()> {
    // SAFETY: the object is the C tree's key-value service, built with it.
    let svc = unsafe { LibService::listen(name, object, &LibOptions::new())? };
    let st = svc.stats()?;
    println!("serving {name}: handlers {}", if st.guarded != 0 { "behind the protection-key gate" } else { "unguarded" });
    let mut ep = Epoll::new()?;
    ep.add_fd(svc.as_fd(), LISTENER, libc::EPOLLIN as u32)?;
    let end = (secs > 0).then(|| Instant::now() + Duration::from_secs(secs));
    let mut next = 0u64;
    while end.map_or(true, |e| Instant::now() < e) {
        let events = match ep.wait(16, Some(Duration::from_millis(100))) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => r?,
        };
        for ev in events {
            if ev.token == LISTENER {
                // New clients: library-mode openers need nothing more,
                // message-mode ones join the loop.
                while let Ok(a) = svc.accept(Some(Duration::ZERO)) {
                    if let Accepted::Message(c) = a {
                        ep.add_conn(next, c, libc::EPOLLIN as u32).map_err(|(e, _)| e)?;
                        next += 1;
                    }
                }
                // Events posted by handlers (a handler runs in the caller's
                // process: the server's own log is written here), then arm.
                loop {
                    while let Some(e) = svc.event()? {
                        if e.kind == KV_EV_SAVE {
                            println!("save asked by pid {}: {} bytes of state in use", e.pid, svc.stats()?.arena_used);
                        }
                    }
                    if !svc.arm()? {
                        break;
                    }
                }
                continue;
            }
            let Some(conn) = ep.conn(ev.token) else { continue };
            let gone = loop {
                match svc.serve(conn, Some(Duration::ZERO)) {
                    Ok(true) => {}
                    Ok(false) => break false,
                    Err(_) => break true, // the client left
                }
            };
            if gone {
                drop(ep.remove_conn(ev.token)?);
            }
        }
        if svc.stats()?.broken != 0 && svc.recover().is_ok() {
            println!("the service was broken: recovered");
        }
    }
    Ok(())
}

fn set(l: &LibClient, k: &str, v: &str) -> io::Result<usize> {
    let mut req = Vec::with_capacity(4 + k.len() + v.len());
    req.extend_from_slice(&(k.len() as u16).to_ne_bytes());
    req.extend_from_slice(&(v.len() as u16).to_ne_bytes());
    req.extend_from_slice(k.as_bytes());
    req.extend_from_slice(v.as_bytes());
    l.call(KV_SET, &req, &mut [])
}

fn get(l: &LibClient, k: &str) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; KV_VAL_MAX];
    let n = l.call(KV_GET, k.as_bytes(), &mut out)?;
    out.truncate(n);
    Ok(out)
}

fn client(name: &str, mode: &str, args: &[String]) -> io::Result<()> {
    let l = if mode == "msg" {
        LibClient::open_message(name, &LibOptions::new())?
    } else {
        // SAFETY: the server's object is the C tree's key-value service.
        unsafe { LibClient::open(name, &LibOptions::new().fallback(true))? }
    };
    eprintln!("ipc_kv: {} mode", if l.is_library() { "library" } else { "message" });
    match (args.first().map(String::as_str), args.get(1), args.get(2)) {
        (Some("set"), Some(k), Some(v)) => {
            set(&l, k, v)?;
        }
        (Some("get"), Some(k), _) => println!("{}", String::from_utf8_lossy(&get(&l, k)?)),
        (Some("count"), _, _) => {
            let mut out = [0u8; 8];
            l.call(KV_COUNT, &[], &mut out)?;
            println!("{}", u64::from_ne_bytes(out));
        }
        (Some("save"), _, _) => {
            l.call(KV_SAVE, &[], &mut [])?;
        }
        (Some("check"), Some(n), _) => {
            let n: usize = n.parse().map_err(|_| io::Error::other("check N"))?;
            let pid = std::process::id();
            for i in 0..n {
                let (k, v) = (format!("k{pid}-{i}"), format!("value {i} of {pid}"));
                set(&l, &k, &v)?;
                if get(&l, &k)? != v.as_bytes() {
                    return Err(io::Error::other(format!("{k}: wrong value")));
                }
            }
            println!("{n} sets and gets checked");
        }
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown command")),
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let r = match (args.get(1).map(String::as_str), args.get(2), args.get(3)) {
        (Some("server"), Some(name), Some(obj)) => {
            server(name, obj, args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0))
        }
        (Some("client"), Some(name), Some(mode)) if mode == "lib" || mode == "msg" => {
            client(name, mode, &args[4..])
        }
        _ => {
            eprintln!("usage: ipc_kv server NAME OBJECT [SECONDS] | client NAME lib|msg set K V|get K|count|save|check N");
            exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("ipc_kv: {e}");
        exit(1);
    }
}
