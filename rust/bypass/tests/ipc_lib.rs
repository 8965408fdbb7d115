// SPDX-License-Identifier: MIT
//! ipc library mode: LibService, LibClient, with the C tree's key-value
//! service (build/examples/ipc-kv.so; its protocol in examples/ipc-kv/kv.h).
mod common;
use common::*;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use bypass::ipc::{LibClient, LibOptions, LibService, Protect};

const KV_GET: u32 = 0;
const KV_SET: u32 = 1;
const KV_DEL: u32 = 2;
const KV_COUNT: u32 = 3;
const KV_SAVE: u32 = 4;
const KV_PING: u32 = 5;

/// The C build's directory (BYPASS_BUILD, else the tree's build/).
fn build_dir() -> PathBuf {
    std::env::var_os("BYPASS_BUILD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../build")))
}

fn kv_object() -> Option<PathBuf> {
    let p = build_dir().join("examples/ipc-kv.so");
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {} is not built", p.display());
        None
    }
}

fn set(l: &LibClient, k: &str, v: &str) -> std::io::Result<usize> {
    let mut req = Vec::new();
    req.extend_from_slice(&(k.len() as u16).to_ne_bytes());
    req.extend_from_slice(&(v.len() as u16).to_ne_bytes());
    req.extend_from_slice(k.as_bytes());
    req.extend_from_slice(v.as_bytes());
    l.call(KV_SET, &req, &mut [])
}

fn get(l: &LibClient, k: &str) -> std::io::Result<Vec<u8>> {
    let mut out = vec![0u8; 1024];
    let n = l.call(KV_GET, k.as_bytes(), &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// The ipc_kv example as the server, in its own process; its stdout.
fn spawn_server(name: &str, obj: &std::path::Path) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut srv = Command::new(example("ipc_kv"))
        .args(["server", name, obj.to_str().unwrap(), "60"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the ipc_kv example (built by cargo test)");
    let mut out = BufReader::new(srv.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("serving"), "{line}");
    (srv, out)
}

#[test]
fn both_modes_give_the_same_answers() {
    let _g = serial();
    let Some(obj) = kv_object() else { return };
    let name = unique("kv");
    let (mut srv, mut out) = spawn_server(&name, &obj);
    // SAFETY: the object is the C tree's key-value service.
    let lib = unsafe { LibClient::open(&name, &LibOptions::new()) }.unwrap();
    assert!(lib.is_library());
    let msg = LibClient::open_message(&name, &LibOptions::new().call_timeout(Duration::from_secs(10))).unwrap();
    assert!(!msg.is_library());
    for (i, (a, b)) in [(&lib, &msg), (&msg, &lib)].into_iter().enumerate() {
        let (k, v) = (format!("key{i}"), format!("value {i}"));
        assert_eq!(set(a, &k, &v).unwrap(), 0);
        assert_eq!(get(b, &k).unwrap(), v.as_bytes());
        let mut ping = [0u8; 32];
        assert_eq!(a.call(KV_PING, b"32 bytes of a call, RPAL's size", &mut ping).unwrap(), 31);
        assert_eq!(&ping[..31], b"32 bytes of a call, RPAL's size");
    }
    let mut count = [0u8; 8];
    lib.call(KV_COUNT, &[], &mut count).unwrap();
    assert_eq!(u64::from_ne_bytes(count), 2);
    // The handler's own error, in both modes; an op out of range: EINVAL.
    for l in [&lib, &msg] {
        assert_eq!(errno(&l.call(KV_DEL, b"missing", &mut []).unwrap_err()), libc::ENOENT);
        assert_eq!(errno(&l.call(99, b"", &mut []).unwrap_err()), libc::EINVAL);
    }
    assert_eq!(lib.call(KV_DEL, b"key0", &mut []).unwrap(), 0);
    assert_eq!(errno(&get(&msg, "key0").unwrap_err()), libc::ENOENT);
    // A handler posts an event: the server's loop writes its log line.
    lib.call(KV_SAVE, &[], &mut []).unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("save asked by pid"), "{line}");
    let st = lib.stats().unwrap();
    assert!(st.events >= 1 && st.broken == 0);
    assert_eq!(errno(&msg.recover().unwrap_err()), libc::EOPNOTSUPP);
    lib.recover().unwrap(); // not broken: nothing to do
    // The server dies: the next call says so (EPIPE), without a hang.
    srv.kill().unwrap();
    srv.wait().unwrap();
    assert_eq!(errno(&lib.call(KV_COUNT, &[], &mut count).unwrap_err()), libc::EPIPE);
    let e = msg.call(KV_COUNT, &[], &mut count).unwrap_err();
    assert!(matches!(errno(&e), libc::EPIPE | libc::ECONNRESET), "{e}");
}

#[test]
fn the_server_in_this_process() {
    let _g = serial();
    let Some(obj) = kv_object() else { return };
    let name = unique("kvself");
    // SAFETY: the C tree's key-value service.
    let svc = unsafe { LibService::listen(&name, &obj, &LibOptions::new()) }.unwrap();
    let st = svc.stats().unwrap();
    assert_eq!(st.mode, bypass::sys::BYPASS_IPC_LIB_MODE_LIBRARY as i32);
    assert!(st.arena_base != 0);
    // A child forked from here inherits the arena's mapping and the
    // library's record of it: it opens library mode and calls.
    let n2 = name.clone();
    let pid = fork_child(move || {
        // SAFETY: as above.
        let l = unsafe { LibClient::open(&n2, &LibOptions::new().handshake_timeout(Duration::from_secs(10))) };
        match l {
            Ok(l) => l.is_library() && set(&l, "forked", "child").is_ok() && get(&l, "forked").is_ok_and(|v| v == b"child"),
            Err(e) => {
                eprintln!("child: open: {e}");
                false
            }
        }
    });
    assert_eq!(serve_until_exit(&svc, pid), 0, "the forked child's calls failed");
    // A process where the arena's address range is taken by something else
    // gets EEXIST: this test binary again, as a helper that maps a page
    // there first (address_taken_helper below).
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "address_taken_helper", "--nocapture", "--test-threads=1"])
        .env("BYPASS_RS_KV_NAME", &name)
        .env("BYPASS_RS_KV_BASE", st.arena_base.to_string())
        .spawn()
        .unwrap();
    let hp = helper.id() as i32;
    assert_eq!(serve_until_exit(&svc, hp), 0, "the helper's open did not answer EEXIST");
    let _ = helper.wait();
    // Nobody else waits; no event.
    assert!(matches!(svc.accept(Some(Duration::ZERO)).map(|_| ()).unwrap_err().raw_os_error(), Some(libc::EAGAIN) | Some(libc::ETIMEDOUT)));
    assert!(svc.event().unwrap().is_none());
    assert!(!svc.arm().unwrap());
    svc.recover().unwrap();
    // The same name twice.
    // SAFETY: as above.
    let e = unsafe { LibService::listen(&name, &obj, &LibOptions::new()) }.unwrap_err();
    assert_eq!(errno(&e), libc::EADDRINUSE);
}

/// Accept (library openers need nothing more) until the process pid
/// exits: its exit status.
fn serve_until_exit(svc: &LibService, pid: i32) -> i32 {
    loop {
        let _ = svc.accept(Some(Duration::from_millis(20)));
        let mut st = 0;
        // SAFETY: our child.
        if unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == pid {
            return if libc::WIFEXITED(st) { libc::WEXITSTATUS(st) } else { 128 + libc::WTERMSIG(st) };
        }
    }
}

/// Run by the_server_in_this_process in a fresh process: with a page of
/// ours at the service arena's address, library mode answers EEXIST.
#[test]
fn address_taken_helper() {
    let (Some(name), Some(base)) = (std::env::var_os("BYPASS_RS_KV_NAME"), std::env::var_os("BYPASS_RS_KV_BASE")) else {
        return; // not run as the helper
    };
    let base: usize = base.to_str().unwrap().parse().unwrap();
    // SAFETY: a fresh anonymous page at an address nothing here uses.
    let p = unsafe {
        libc::mmap(base as *mut _, 4096, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE, -1, 0)
    };
    assert_eq!(p as usize, base, "could not map the page");
    // SAFETY: refused before the object is loaded.
    let e = unsafe { LibClient::open(name.to_str().unwrap(), &LibOptions::new()) }.unwrap_err();
    assert_eq!(errno(&e), libc::EEXIST, "{e}");
}

#[test]
fn objects_and_options_refused() {
    let _g = serial();
    let Some(obj) = kv_object() else { return };
    let dir = TempDir::new("kvbad");
    let listen = |p: &std::path::Path, o: &LibOptions| {
        // SAFETY: each of these is refused before its code runs (or it is
        // the key-value service).
        unsafe { LibService::listen(&unique("bad"), p, o) }.map(|_| ())
    };
    assert_eq!(errno(&listen(&dir.0.join("missing.so"), &LibOptions::new()).unwrap_err()), libc::ENOENT);
    let text = dir.0.join("text.so");
    std::fs::write(&text, "not an object").unwrap();
    assert_eq!(errno(&listen(&text, &LibOptions::new()).unwrap_err()), libc::ENOEXEC);
    // Writable by others: EACCES.
    let open = dir.0.join("open.so");
    std::fs::copy(&obj, &open).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(errno(&listen(&open, &LibOptions::new()).unwrap_err()), libc::EACCES);
    // An object holding a WRPKRU sequence (the C tests' own): EPERM.
    let wrpkru = build_dir().join("tests/ipc/testsvc-wrpkru.so");
    if wrpkru.exists() {
        assert_eq!(errno(&listen(&wrpkru, &LibOptions::new()).unwrap_err()), libc::EPERM);
    }
    // Bad options and names.
    assert_eq!(errno(&listen(&obj, &LibOptions::new().flags(0x4000_0000)).unwrap_err()), libc::EINVAL);
    // SAFETY: refused before anything is loaded.
    let e = unsafe { LibService::listen("", &obj, &LibOptions::new()) }.unwrap_err();
    assert_eq!(errno(&e), libc::EINVAL);
    // Protection keys required where there are none: EOPNOTSUPP.
    if bypass::ipc::pkey_supported().is_err() {
        let e = listen(&obj, &LibOptions::new().protect(Protect::Required)).unwrap_err();
        assert_eq!(errno(&e), libc::EOPNOTSUPP);
    }
    // No such service.
    let e = LibClient::open_message(&unique("nobody"), &LibOptions::new()).unwrap_err();
    assert!(matches!(errno(&e), libc::ECONNREFUSED | libc::ENOENT), "{e}");
}

#[test]
fn ipc_kv_example_against_the_c_server() {
    let _g = serial();
    let Some(obj) = kv_object() else { return };
    let cserver = build_dir().join("examples/ipc-kv-server");
    if !cserver.exists() {
        eprintln!("skipped: {} is not built", cserver.display());
        return;
    }
    let name = unique("kvc");
    let mut srv = Command::new(&cserver).args([&name, obj.to_str().unwrap(), "60"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(srv.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("serving"), "{line}");
    for mode in ["lib", "msg"] {
        let out = Command::new(example("ipc_kv")).args(["client", &name, mode, "check", "100"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("100 sets and gets checked"));
    }
    srv.kill().unwrap();
    srv.wait().unwrap();
}
