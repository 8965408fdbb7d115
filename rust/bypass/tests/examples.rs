// SPDX-License-Identifier: MIT
//! The examples that the module tests do not already start.
mod common;
use common::*;

#[test]
fn doorbell_pingpong_example() {
    let _g = serial();
    let out = std::process::Command::new(example("doorbell_pingpong")).arg("2000").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.starts_with("2000 round trips"), "{s}");
}

#[test]
fn examples_refuse_bad_arguments() {
    let _g = serial();
    let st = std::process::Command::new(example("ipc_echo")).arg("neither").output().unwrap();
    assert_eq!(st.status.code(), Some(2));
    let st = std::process::Command::new(example("ipc_echo")).args(["client", &unique("none"), "1"]).output().unwrap();
    assert_eq!(st.status.code(), Some(1)); // no such service
    let st = std::process::Command::new(example("paged_buffer")).args(["/nonexistent/dir", "1"]).output().unwrap();
    assert_eq!(st.status.code(), Some(1));
}
