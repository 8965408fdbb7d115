// SPDX-License-Identifier: MIT
//! Every public function of include/bypass/*.h has a safe wrapper (its
//! raw binding is called from src/), or is listed below with the reason it
//! has none.  A function added to a header fails this test until it is
//! wrapped: the raw layer follows the headers by itself (bindgen), the
//! safe layer does not.
use std::collections::BTreeSet;
use std::path::Path;

/// Functions deliberately without a safe wrapper, and why.
const UNWRAPPED: &[(&str, &str)] = &[];

fn header_functions(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        // Declarations may span lines: look at each BYPASS_API up to '('.
        for (i, _) in text.match_indices("BYPASS_API ") {
            let rest = &text[i..];
            let Some(paren) = rest.find('(') else { continue };
            let decl = &rest[..paren];
            if decl.contains(';') || decl.contains("#define") {
                continue;
            }
            if let Some(name) = decl.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).rfind(|w| w.starts_with("bypass_")) {
                out.insert(name.to_string());
            }
        }
        // static inline functions (bypass_rdtscp) are public too.
        for (i, _) in text.match_indices("static inline ") {
            let rest = &text[i..];
            let Some(paren) = rest.find('(') else { continue };
            if let Some(name) = rest[..paren].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).rfind(|w| w.starts_with("bypass_")) {
                out.insert(name.to_string());
            }
        }
    }
    out
}

#[test]
fn every_public_function_is_wrapped() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let headers = root.join("../../include/bypass");
    if !headers.exists() {
        eprintln!("skipped: not in the bypass source tree (no {})", headers.display());
        return;
    }
    let funcs = header_functions(&headers);
    assert!(funcs.len() > 80, "found only {} functions in the headers", funcs.len());
    let mut src = String::new();
    let mut dirs = vec![root.join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            } else if e.path().extension().is_some_and(|x| x == "rs") {
                src.push_str(&std::fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    let missing: Vec<&String> = funcs
        .iter()
        .filter(|f| !src.contains(&format!("sys::{f}(")) && !UNWRAPPED.iter().any(|(n, _)| n == f))
        .collect();
    assert!(
        missing.is_empty(),
        "public functions without a safe wrapper (wrap them in bypass/src, or list them in UNWRAPPED with a reason): {missing:?}"
    );
    let stale: Vec<&str> = UNWRAPPED.iter().map(|(n, _)| *n).filter(|n| !funcs.contains(*n)).collect();
    assert!(stale.is_empty(), "UNWRAPPED names functions the headers no longer have: {stale:?}");
}
