// SPDX-License-Identifier: MIT
//! Build script of bypass-sys.
//!
//! 1. Finds the headers and the library: `BYPASS_INCLUDE_DIR` and
//!    `BYPASS_LIB_DIR` (or `BYPASS_BUILD`, a CMake build directory), else
//!    this source tree's `include/` and `build/`, else `pkg-config bypass`
//!    (after `make install`).
//! 2. Generates nothing: the bindings are shipped (`src/bindings.rs`,
//!    made by the maintainer command `cargo run -p bypass-sys-gen` in
//!    rust/ with bindgen), so building needs no libclang.  It tells
//!    `tests/layout.rs` where the headers are (`BYPASS_SYS_INCLUDE_DIR`), to
//!    compare the shipped files with them.
//! 3. Copies libbypass.so into OUT_DIR, so that `cargo test` and
//!    `cargo run` find it (cargo puts link paths inside the target
//!    directory on LD_LIBRARY_PATH).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Located {
    include: PathBuf,
    /// Directory holding libbypass.so* to copy next to the build, or None
    /// when pkg-config gave the link flags.
    lib_dir: Option<PathBuf>,
    pkg_libs: Vec<String>,
}

fn env_path(name: &str) -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new("pkg-config").args(args).arg("bypass").output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn locate() -> Located {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let tree = manifest.join("../..");
    let include = env_path("BYPASS_INCLUDE_DIR")
        .or_else(|| Some(tree.join("include")).filter(|p| p.join("bypass/core.h").exists()))
        .or_else(|| {
            pkg_config(&["--cflags-only-I"]).and_then(|s| {
                s.split_whitespace()
                    .filter_map(|t| t.strip_prefix("-I"))
                    .map(PathBuf::from)
                    .find(|p| p.join("bypass/core.h").exists())
            })
        })
        .or_else(|| Some(PathBuf::from("/usr/include")).filter(|p| p.join("bypass/core.h").exists()))
        .unwrap_or_else(|| {
            panic!(
                "bypass-sys: <bypass/core.h> not found: set BYPASS_INCLUDE_DIR, build inside the \
                 bypass source tree, or `make install` it so that `pkg-config bypass` finds it"
            )
        });
    let lib_dir = env_path("BYPASS_LIB_DIR")
        .or_else(|| env_path("BYPASS_BUILD"))
        .or_else(|| Some(tree.join("build")))
        .filter(|d| d.join("libbypass.so").exists());
    let pkg_libs = if lib_dir.is_none() {
        pkg_config(&["--libs"])
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_else(|| {
                panic!(
                    "bypass-sys: libbypass.so not found: run `make` at the top of the source \
                     tree (build/), set BYPASS_LIB_DIR or BYPASS_BUILD, or `make install` it so \
                     that `pkg-config bypass` finds it"
                )
            })
    } else {
        Vec::new()
    };
    Located { include: include.canonicalize().unwrap_or(include), lib_dir, pkg_libs }
}

fn link(loc: &Located, out: &Path) {
    if let Some(dir) = &loc.lib_dir {
        let dst = out.join("lib");
        fs::create_dir_all(&dst).unwrap();
        for e in fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name();
            let n = name.to_string_lossy();
            if n.starts_with("libbypass.so") {
                let src = e.path();
                println!("cargo:rerun-if-changed={}", src.display());
                let to = dst.join(&name);
                let _ = fs::remove_file(&to);
                fs::copy(&src, &to).unwrap_or_else(|err| panic!("copy {}: {err}", src.display()));
            }
        }
        println!("cargo:rustc-link-search=native={}", dst.display());
        println!("cargo:rustc-link-lib=dylib=bypass");
        // For other crates' build scripts (DEP_BYPASS_LIB / DEP_BYPASS_INCLUDE).
        println!("cargo:lib={}", dst.display());
    } else {
        for t in &loc.pkg_libs {
            if let Some(p) = t.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={p}");
            } else if let Some(l) = t.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={l}");
            }
        }
    }
    println!("cargo:include={}", loc.include.display());
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // docs.rs builds the documentation without the C library: the shipped
    // bindings are all rustdoc needs, and nothing is linked there.
    if env::var_os("DOCS_RS").is_some() {
        return;
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let loc = locate();
    link(&loc, &out);
    // For tests/layout.rs: the headers to compile its C table against and
    // to scan for functions, structs and macros the shipped files lack.
    println!("cargo:rustc-env=BYPASS_SYS_INCLUDE_DIR={}", loc.include.display());
    if let Ok(dir) = fs::read_dir(loc.include.join("bypass")) {
        for e in dir.flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }
}
