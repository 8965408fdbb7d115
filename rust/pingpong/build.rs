// SPDX-License-Identifier: MIT
//! Compiles the C side of the ping-pong (c/pingpong.c) with the headers
//! bypass-sys found (DEP_BYPASS_INCLUDE); it links the same libbypass.so.
fn main() {
    let inc = std::env::var("DEP_BYPASS_INCLUDE").expect("bypass-sys exports its include directory");
    println!("cargo:rerun-if-changed=c/pingpong.c");
    cc::Build::new()
        .file("c/pingpong.c")
        .include(inc)
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("pingpong_c");
}
