// SPDX-License-Identifier: MIT
//! A paged buffer: a region four times the pager's budget, written and read
//! back through the swap file, then part of it filled by a read(2) through
//! a pin (in upcall mode the kernel cannot fault pages in itself).
//!
//!   cargo run --example paged_buffer -- [SWAP_DIR] [BUDGET_MIB]
use std::io::{self, Read};
use std::process::exit;

use bypass::pager::{Advice, PagerConfig};

fn run(dir: &str, budget_mib: usize) -> io::Result<()> {
    let budget = budget_mib << 20;
    let len = 4 * budget;
    let pager = PagerConfig::new(budget, dir).temp_swap(2 * len).create()?;
    pager.set_policy("2q")?;
    let mut region = pager.map(len)?;
    region.advise(.., Advice::Sequential)?;
    for (i, page) in region.chunks_mut(4096).enumerate() {
        page[..8].copy_from_slice(&(i as u64).to_le_bytes());
    }
    for (i, page) in region.chunks(4096).enumerate() {
        let v = u64::from_le_bytes(page[..8].try_into().unwrap());
        if v != i as u64 {
            return Err(io::Error::other(format!("page {i} reads {v}")));
        }
    }
    {
        let mut pinned = region.pin_mut(..65536)?;
        io::repeat(0xab).read_exact(&mut pinned)?; // a plain copy, but through a pin
        let mut f = std::fs::File::open("/proc/self/stat")?;
        let n = f.read(&mut pinned)?; // read(2) writes into the region
        println!("read(2) put {n} bytes into the pinned pages");
    }
    let st = pager.stats()?;
    println!(
        "{} MiB through a {} MiB budget: {} zero faults, {} swap-ins, {} evictions ({} clean), {} MiB written to swap, peak {} resident pages of {}",
        len >> 20,
        budget_mib,
        st.faults_zero,
        st.faults_swapin,
        st.evictions,
        st.evictions_clean,
        st.bytes_written >> 20,
        st.resident_peak,
        st.budget_pages
    );
    Ok(())
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| std::env::temp_dir().to_string_lossy().into_owned());
    let mib = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(16);
    if let Err(e) = run(&dir, mib) {
        eprintln!("paged_buffer: {e}");
        exit(1);
    }
}
