// SPDX-License-Identifier: MIT
//! Compiles the C side of the ping-pong (c/pingpong.c) with the headers
//! bypass-sys found (DEP_BYPASS_INCLUDE); it links the same libbypass.so,
//! whose directory (DEP_BYPASS_LIB) becomes the binary's rpath.
fn main() {
    let inc = std::env::var("DEP_BYPASS_INCLUDE").expect("bypass-sys exports its include directory");
    println!("cargo:rerun-if-changed=c/pingpong.c");
    // Runnable outside cargo too: the library's directory as an rpath.
    if let Ok(lib) = std::env::var("DEP_BYPASS_LIB") {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{lib}");
    }
    cc::Build::new()
        .file("c/pingpong.c")
        .include(inc)
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("pingpong_c");
}
