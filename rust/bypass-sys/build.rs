// SPDX-License-Identifier: MIT
//! Build script of bypass-sys.
//!
//! 1. Finds the headers and the library: `BYPASS_INCLUDE_DIR` and
//!    `BYPASS_LIB_DIR` (or `BYPASS_BUILD`, a CMake build directory), else
//!    this source tree's `include/` and `build/`, else `pkg-config bypass`
//!    (after `make install`).
//! 2. Generates the bindings with bindgen from `<bypass/bypass.h>`, so that
//!    the raw layer follows the headers by itself.
//! 3. Generates the layout test's two halves from the same parse: a C table
//!    (compiled by the `cc` crate with the C compiler, not libclang) of the
//!    size, alignment and field offsets of every struct bindgen saw, and the
//!    value of every enum constant and of every object-like `BYPASS_*` macro
//!    found in the headers' text; and the Rust table of the same items,
//!    computed from the bindings.  `tests/layout.rs` compares them.  A macro
//!    bindgen cannot evaluate (a cast) must be defined by hand in `lib.rs`:
//!    the generated test names it, so it fails to compile until it is.
//! 4. Copies libbypass.so into OUT_DIR, so that `cargo test` and
//!    `cargo run` find it (cargo puts link paths inside the target
//!    directory on LD_LIBRARY_PATH).
use std::collections::BTreeSet;
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

#[derive(Default, Debug)]
struct Seen {
    /// (struct, field) in declaration order.
    fields: Vec<(String, String)>,
    /// enum constants (C names).
    variants: Vec<String>,
    /// integer macros bindgen evaluated.
    macros: BTreeSet<String>,
}

#[derive(Debug)]
struct Collector(Arc<Mutex<Seen>>);

impl bindgen::callbacks::ParseCallbacks for Collector {
    fn field_visibility(
        &self,
        info: bindgen::callbacks::FieldInfo<'_>,
    ) -> Option<bindgen::FieldVisibilityKind> {
        let mut s = self.0.lock().unwrap();
        let key = (info.type_name.to_string(), info.field_name.to_string());
        if !s.fields.contains(&key) {
            s.fields.push(key);
        }
        None
    }

    fn enum_variant_name(
        &self,
        _enum_name: Option<&str>,
        original_variant_name: &str,
        _variant_value: bindgen::callbacks::EnumVariantValue,
    ) -> Option<String> {
        let mut s = self.0.lock().unwrap();
        let name = original_variant_name.to_string();
        // System enums (glibc's MSG_*, SOCK_*) are parsed too: only ours.
        if name.starts_with("BYPASS_") && !s.variants.contains(&name) {
            s.variants.push(name);
        }
        None
    }

    fn int_macro(&self, name: &str, _value: i64) -> Option<bindgen::callbacks::IntKind> {
        self.0.lock().unwrap().macros.insert(name.to_string());
        None
    }
}

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

/// Object-like BYPASS_* macros (numbers, then strings) and the struct
/// tags, from the headers' text.
fn scan_headers(dir: &Path) -> (Vec<String>, Vec<String>, BTreeSet<String>) {
    let mut macros = Vec::new();
    let mut strings = Vec::new();
    let mut tags = BTreeSet::new();
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "h"))
        .collect();
    files.sort();
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let text = fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(rest) = t.strip_prefix("#define ") {
                let rest = rest.trim_start();
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let (name, value) = rest.split_at(end);
                let object_like = !value.starts_with('(');
                let value = value.trim();
                let ours = name.starts_with("BYPASS_") && object_like && name != "BYPASS_API";
                if ours && value.starts_with('"') && !strings.iter().any(|m| m == name) {
                    strings.push(name.to_string());
                } else if ours
                    && !value.is_empty()
                    && !value.contains('"')
                    && !value.starts_with('{')
                    && !macros.iter().any(|m| m == name)
                {
                    macros.push(name.to_string());
                }
            }
            // "struct NAME {" declares a tagged struct.
            let mut words = t.split_whitespace();
            while let Some(w) = words.next() {
                if w == "struct" {
                    if let (Some(name), Some("{")) = (words.next(), words.next()) {
                        tags.insert(name.to_string());
                    }
                    break;
                }
            }
        }
    }
    (macros, strings, tags)
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
    "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// bindgen reports a field by its Rust name: a C field named like a Rust
/// keyword (`type`) is `type_` there.
fn c_field(name: &str) -> &str {
    match name.strip_suffix('_') {
        Some(k) if RUST_KEYWORDS.contains(&k) => k,
        _ => name,
    }
}

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let loc = locate();
    link(&loc, &out);

    let seen = Arc::new(Mutex::new(Seen::default()));
    let header = loc.include.join("bypass/bypass.h");
    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_arg(format!("-I{}", loc.include.display()))
        .allowlist_function("bypass_.*")
        .allowlist_type("bypass_.*")
        .allowlist_var("BYPASS_.*")
        // System types come from the libc crate, so that the safe layer
        // and its users pass libc's values straight through.
        .blocklist_type("iovec|msghdr|sockaddr|epoll_event|epoll_data|epoll_data_t|socklen_t|uid_t|pid_t|off_t|ssize_t")
        .raw_line("pub use libc::{epoll_event, iovec, msghdr, off_t, pid_t, sockaddr, socklen_t, ssize_t, uid_t};")
        .use_core()
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .derive_default(true)
        .derive_debug(true)
        .impl_debug(true)
        .layout_tests(false) // tests/layout.rs compares with the C compiler instead
        .generate_comments(true)
        .parse_callbacks(Box::new(Collector(seen.clone())))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("bindgen could not parse <bypass/bypass.h> (is libclang installed?)");
    bindings.write_to_file(out.join("bindings.rs")).unwrap();

    let (macros, strings, tags) = scan_headers(&loc.include.join("bypass"));
    let seen = seen.lock().unwrap();

    // The two tables, item by item.
    let mut c = String::new();
    let mut r = String::new();
    c.push_str(
        "/* generated by bypass-sys/build.rs */\n#include <bypass/bypass.h>\n#include <stddef.h>\n\
         struct bypass_sys_layout_item { const char *name; long long value; };\n\
         const struct bypass_sys_layout_item bypass_sys_layout_items[] = {\n",
    );
    r.push_str("// generated by bypass-sys/build.rs\n#[allow(clippy::unnecessary_cast)]\npub const RUST_LAYOUT: &[(&str, i64)] = &[\n");
    let structs: Vec<&String> = {
        let mut v: Vec<&String> = Vec::new();
        for (s, _) in &seen.fields {
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v
    };
    for s in &structs {
        let cty = if tags.contains(s.as_str()) { format!("struct {s}") } else { s.to_string() };
        writeln!(c, "\t{{ \"size {s}\", (long long)sizeof({cty}) }},").unwrap();
        writeln!(c, "\t{{ \"align {s}\", (long long)_Alignof({cty}) }},").unwrap();
        writeln!(r, "\t(\"size {s}\", ::core::mem::size_of::<bypass_sys::{s}>() as i64),").unwrap();
        writeln!(r, "\t(\"align {s}\", ::core::mem::align_of::<bypass_sys::{s}>() as i64),").unwrap();
        for (st, f) in seen.fields.iter().filter(|(st, _)| st == *s) {
            let cf = c_field(f);
            writeln!(c, "\t{{ \"offset {st}.{cf}\", (long long)offsetof({cty}, {cf}) }},").unwrap();
            writeln!(r, "\t(\"offset {st}.{cf}\", ::core::mem::offset_of!(bypass_sys::{st}, {f}) as i64),").unwrap();
        }
    }
    let mut consts: Vec<&String> = seen.variants.iter().collect();
    for m in &macros {
        if !consts.contains(&m) {
            consts.push(m);
        }
    }
    for k in consts {
        writeln!(c, "\t{{ \"const {k}\", (long long)({k}) }},").unwrap();
        writeln!(r, "\t(\"const {k}\", bypass_sys::{k} as i64),").unwrap();
    }
    c.push_str(
        "};\nconst size_t bypass_sys_layout_count =\n\tsizeof(bypass_sys_layout_items) / sizeof(bypass_sys_layout_items[0]);\n",
    );
    r.push_str("];\n");
    // String macros: the bytes, without the terminating NUL.
    c.push_str("struct bypass_sys_layout_str { const char *name; const char *value; };\nconst struct bypass_sys_layout_str bypass_sys_layout_strs[] = {\n");
    r.push_str("/// String macros, with their terminating NUL.\npub const RUST_STRINGS: &[(&str, &[u8])] = &[\n");
    for k in &strings {
        writeln!(c, "\t{{ \"{k}\", {k} }},").unwrap();
        writeln!(r, "\t(\"{k}\", bypass_sys::{k}),").unwrap();
    }
    c.push_str("\t{ 0, 0 }\n};\n");
    r.push_str("];\n");
    // Macros the Rust side defines by hand (bindgen could not evaluate them).
    let by_hand: Vec<&String> = macros.iter().filter(|m| !seen.macros.contains(*m)).collect();
    writeln!(r, "/// Object-like macros bindgen did not evaluate: defined by hand in lib.rs.").unwrap();
    writeln!(r, "pub const BY_HAND: &[&str] = &{by_hand:?};").unwrap();
    fs::write(out.join("layout.c"), c).unwrap();
    fs::write(out.join("layout_test.rs"), r).unwrap();

    cc::Build::new()
        .file(out.join("layout.c"))
        .include(&loc.include)
        .warnings(true)
        .compile("bypass_sys_layout");
    println!("cargo:rerun-if-changed=build.rs");
}
