// SPDX-License-Identifier: MIT
//! Memory whose page faults are served in user space, with a budget and a
//! swap file (`<bypass/pager.h>`): the stock-kernel counterpart of ExtMem.
//!
//! A [`Pager`] owns a budget of resident memory and a swap file.  A
//! [`Region`] mapped from it is a `&mut [u8]`-like view of memory that
//! reads as zeros until written; beyond the budget, the least recently used
//! pages go to the swap file and come back on the next touch.
//!
//! In upcall mode (the default) the kernel cannot fault pages in for its
//! own accesses: a system call that reads or writes a page that is not
//! resident fails with `EFAULT`.  [Pin](Region::pin) the part of a region
//! handed to a system call (`file.read(&mut *region.pin_mut(..)?)`), or map
//! it with [`Pager::map_handler`].
//!
//! ```no_run
//! use bypass::pager::{PagerConfig, Pager};
//! let pager = PagerConfig::new(64 << 20, "/var/tmp").temp_swap(1 << 30).create()?;
//! let mut region = pager.map(256 << 20)?;
//! region[..5].copy_from_slice(b"hello"); // faults served by bypass
//! println!("{:?}", pager.stats()?.resident_pages);
//! # Ok::<(), std::io::Error>(())
//! ```
use std::ffi::{c_char, c_void, CString};
use std::io;
use std::ops::{Bound, Deref, DerefMut, RangeBounds};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::sys;
use crate::util::{cstring, cvt, einval};

/// How faults are served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PagerMode {
    /// In the faulting thread's own SIGBUS handler (no manager thread).
    #[default]
    Upcall,
    /// In handler threads reading a userfaultfd (needs privilege, or
    /// `vm.unprivileged_userfaultfd = 1`); system calls on the region work.
    Handler,
    /// Upcalls, or a pool of handler threads when that serves faults
    /// faster (measured); unprivileged.
    Adaptive,
}

/// The configuration of a [`Pager`] (a builder).
#[derive(Clone, Debug)]
pub struct PagerConfig {
    budget: usize,
    swap_path: PathBuf,
    swap_size: usize,
    mode: PagerMode,
    flags: u32,
    high: usize,
    low: usize,
    batch: u32,
    readahead: u32,
    fault_around: u32,
    threads: u32,
}

impl PagerConfig {
    /// A budget of `budget` resident bytes (at least 16 pages) and the swap
    /// file (or block device) at `swap_path`, used whole.
    pub fn new(budget: usize, swap_path: impl AsRef<Path>) -> Self {
        PagerConfig {
            budget,
            swap_path: swap_path.as_ref().to_path_buf(),
            swap_size: 0,
            mode: PagerMode::Upcall,
            flags: 0,
            high: 0,
            low: 0,
            batch: 0,
            readahead: 0,
            fault_around: 0,
            threads: 0,
        }
    }
    /// Use `bytes` of the swap file; it bounds the total size mapped.
    pub fn swap_size(mut self, bytes: usize) -> Self {
        self.swap_size = bytes;
        self
    }
    /// Create the swap file if it is missing and extend it to `bytes`.
    pub fn create_swap(mut self, bytes: usize) -> Self {
        self.flags |= sys::BYPASS_PAGER_SWAP_CREATE;
        self.swap_size = bytes;
        self
    }
    /// The swap path is a directory: use an unnamed file of `bytes` there
    /// (O_TMPFILE) that disappears with the pager.
    pub fn temp_swap(mut self, bytes: usize) -> Self {
        self.flags |= sys::BYPASS_PAGER_SWAP_TEMP;
        self.swap_size = bytes;
        self
    }
    /// Access samples without privilege: while the pager evicts, a thread
    /// of its own takes a few resident pages out of the page table each
    /// interval, so that their next access (a read too) faults and marks
    /// them referenced for the policies (`access_samples`, `access_hits`
    /// and their cost in [`PagerStats`]).
    pub fn access_samples(mut self, on: bool) -> Self {
        if on {
            self.flags |= sys::BYPASS_PAGER_SAMPLE;
        } else {
            self.flags &= !sys::BYPASS_PAGER_SAMPLE;
        }
        self
    }
    /// Whether swap-in reads poll for their completion while a CPU is
    /// spare (the default, `true`), or sleep in `pread` as Linux's swap-in
    /// does (`false`: `BYPASS_PAGER_NO_SPIN`); `reads_polled` in
    /// [`PagerStats`] counts the polled ones.
    pub fn poll_reads(mut self, on: bool) -> Self {
        if on {
            self.flags &= !sys::BYPASS_PAGER_NO_SPIN;
        } else {
            self.flags |= sys::BYPASS_PAGER_NO_SPIN;
        }
        self
    }
    /// How faults are served.
    pub fn mode(mut self, mode: PagerMode) -> Self {
        self.mode = mode;
        self
    }
    /// Eviction starts at `high` resident bytes and goes down to `low`.
    pub fn watermarks(mut self, high: usize, low: usize) -> Self {
        self.high = high;
        self.low = low;
        self
    }
    /// Pages evicted per round (0: 32).
    pub fn batch(mut self, pages: u32) -> Self {
        self.batch = pages;
        self
    }
    /// Pages read per swap-in (0: 8, 1: none, at most 64).
    pub fn readahead(mut self, pages: u32) -> Self {
        self.readahead = pages;
        self
    }
    /// Pages installed by a first-touch fault in an ascending stream (0:
    /// 16, 1: off, at most 64).
    pub fn fault_around(mut self, pages: u32) -> Self {
        self.fault_around = pages;
        self
    }
    /// Handler threads (handler mode, the adaptive pool; at most 64).
    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }

    /// Create the pager.  `EINVAL` (bad configuration), `ENOENT` (no swap
    /// file), `ENOSPC`, `EISDIR`, `EPERM` (handler mode without the
    /// privilege), `ENOSYS`, `EOPNOTSUPP` (userfaultfd lacks a feature).
    pub fn create(&self) -> io::Result<Pager> {
        let path = CString::new(self.swap_path.as_os_str().as_bytes()).map_err(|_| einval())?;
        let c = sys::bypass_pager_config {
            budget: self.budget,
            swap_path: path.as_ptr(),
            swap_size: self.swap_size,
            mode: match self.mode {
                PagerMode::Upcall => sys::BYPASS_PAGER_UPCALL,
                PagerMode::Handler => sys::BYPASS_PAGER_HANDLER,
                PagerMode::Adaptive => sys::BYPASS_PAGER_ADAPTIVE,
            } as i32,
            flags: self.flags,
            high_watermark: self.high,
            low_watermark: self.low,
            batch: self.batch,
            readahead: self.readahead,
            fault_around: self.fault_around,
            threads: self.threads,
            ..Default::default()
        };
        let mut out = ptr::null_mut();
        // SAFETY: c (and the path it names) and out are valid for the call.
        cvt(unsafe { sys::bypass_pager_create(&c, &mut out) })?;
        Ok(Pager { raw: NonNull::new(out).ok_or_else(einval)? })
    }
}

/// The counters of a pager (the C struct, documented in the header).
pub type PagerStats = sys::bypass_pager_stats;
/// The counters of access heat.
pub type HeatStats = sys::bypass_pager_heat_stats;
/// A range of pages at a similar heat, with its mean score (0..256).
pub type HeatRange = sys::bypass_pager_heat_range;
/// The compressed tier's settings (`bypass_pager_tier(3)`).
pub type TierConfig = sys::bypass_pager_tier_config;
/// The compressed tier's counters.
pub type TierStats = sys::bypass_pager_tier_stats;

/// A pager.  Dropping it (after its regions, which borrow it) unmaps
/// everything and closes the swap file.
#[derive(Debug)]
pub struct Pager {
    raw: NonNull<sys::bypass_pager>,
}

// SAFETY: pager.h serves faults of many threads at once, and its calls
// (map, unmap, pin, advise, set_policy "also while regions are mapped and
// faults are served", stats, heat) take the pager's own locks; a forked
// child gets -ECHILD rather than sharing state.
unsafe impl Send for Pager {}
// SAFETY: see Send.
unsafe impl Sync for Pager {}

impl Pager {
    /// The raw handle, for calls of [`bypass_sys`] (it stays owned here).
    pub fn as_raw(&self) -> *mut sys::bypass_pager {
        self.raw.as_ptr()
    }

    fn map_flags(&self, len: usize, flags: u32) -> io::Result<Region<'_>> {
        let mut p = ptr::null_mut();
        // SAFETY: a live pager and a valid out pointer.
        cvt(unsafe { sys::bypass_pager_map(self.raw.as_ptr(), len, flags, &mut p) })?;
        Ok(Region { pager: self, ptr: NonNull::new(p as *mut u8).ok_or_else(einval)?, len })
    }

    /// Map `len` bytes (a non-zero multiple of the page size) served by the
    /// pager.  `EINVAL`, `ENOSPC` (the swap file has no room for it).
    pub fn map(&self, len: usize) -> io::Result<Region<'_>> {
        self.map_flags(len, 0)
    }

    /// Map a region whose faults a handler thread serves even in upcall
    /// mode, so that system calls on it never fail with `EFAULT` (`EPERM`
    /// where userfaultfd refuses kernel-mode faults).
    pub fn map_handler(&self, len: usize) -> io::Result<Region<'_>> {
        self.map_flags(len, sys::BYPASS_PAGER_MAP_HANDLER)
    }

    /// Choose the policy by name: `"2q"` (the default), `"clock"`,
    /// `"prefetch"`, `"window"`, a registered policy, or `"path.so"`
    /// (optionally `":symbol"`), each optionally followed by `",args"`.
    /// `ENOENT` (no such policy), `EINVAL` (malformed).
    pub fn set_policy(&self, spec: &str) -> io::Result<()> {
        let s = cstring(spec)?;
        // SAFETY: a valid C string for the call.
        cvt(unsafe { sys::bypass_pager_set_policy(self.raw.as_ptr(), s.as_ptr()) })?;
        Ok(())
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> io::Result<PagerStats> {
        let mut s = PagerStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_pager_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// Turn the compressed tier on with `cfg` (`TierConfig::default()`:
    /// a 50% share, pages kept at 60%), or off with `None` (the pool
    /// emptied).  `EOPNOTSUPP` where the library was built without liblz4.
    pub fn tier(&self, cfg: Option<&TierConfig>) -> io::Result<()> {
        let c = cfg.map_or(ptr::null(), |c| c as *const TierConfig);
        // SAFETY: c is null or valid for the call.
        cvt(unsafe { sys::bypass_pager_tier(self.raw.as_ptr(), c) })?;
        Ok(())
    }

    /// The compressed tier's counters (zeros if it was never on).
    pub fn tier_stats(&self) -> io::Result<TierStats> {
        let mut s = TierStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_pager_tier_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// Start sampling access heat.  `EBUSY` (enabled already), and the
    /// reason a requested source is unavailable unless
    /// [`HeatConfig::optional`].
    pub fn enable_heat(&self, cfg: &HeatConfig) -> io::Result<()> {
        let path = cfg
            .stats_path
            .as_ref()
            .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(|_| einval()))
            .transpose()?;
        let c = sys::bypass_pager_heat_config {
            sources: cfg.sources,
            interval_ms: cfg.interval_ms,
            flags: cfg.flags,
            stats_path: path.as_ref().map_or(ptr::null(), |p| p.as_ptr()),
            stats_ms: cfg.stats_ms,
            ..Default::default()
        };
        // SAFETY: c (and the path) valid for the call; the library copies.
        cvt(unsafe { sys::bypass_pager_heat_enable(self.raw.as_ptr(), &c) })?;
        Ok(())
    }

    /// Stop sampling; scores and counters stay readable.
    pub fn disable_heat(&self) -> io::Result<()> {
        // SAFETY: a live pager.
        cvt(unsafe { sys::bypass_pager_heat_disable(self.raw.as_ptr()) })?;
        Ok(())
    }

    /// The heat counters, and why a source is not in use
    /// ([`heat_reason`]).
    pub fn heat_stats(&self) -> io::Result<HeatStats> {
        let mut s = HeatStats::default();
        // SAFETY: s is valid for the call.
        cvt(unsafe { sys::bypass_pager_heat_stats(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// Up to `max` of the hottest or coldest ranges.  `ENODATA` when heat
    /// was never enabled.
    pub fn heat_ranges(&self, order: HeatOrder, max: usize) -> io::Result<Vec<HeatRange>> {
        let mut v = vec![HeatRange::default(); max];
        let which = match order {
            HeatOrder::Hot => sys::BYPASS_PAGER_HEAT_HOT,
            HeatOrder::Cold => sys::BYPASS_PAGER_HEAT_COLD,
        } as i32;
        // SAFETY: v has room for max entries.
        let n = cvt(unsafe { sys::bypass_pager_heat_ranges(self.raw.as_ptr(), which, v.as_mut_ptr(), max) })?;
        v.truncate(n as usize);
        Ok(v)
    }

    /// Forget every score and zero the heat counters.
    pub fn reset_heat(&self) -> io::Result<()> {
        // SAFETY: a live pager.
        cvt(unsafe { sys::bypass_pager_heat_reset(self.raw.as_ptr()) })?;
        Ok(())
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        // SAFETY: live, and not used again; its regions (which borrow it)
        // are gone.
        unsafe { sys::bypass_pager_destroy(self.raw.as_ptr()) };
    }
}

/// Make `pol` known by its name to [`Pager::set_policy`].  `EEXIST` (the
/// name is taken), `ENOSPC` (32 registered), `EINVAL`.
///
/// # Safety
/// The callbacks marked `[signal]` in pager.h run in a SIGBUS handler that
/// interrupted any code of the program, in several threads at once: they
/// must be async-signal-safe, must not touch the pager's regions and must
/// not unwind.  `init` and `fini` must honour their contracts.
pub unsafe fn register_policy(pol: &'static sys::bypass_pager_policy) -> io::Result<()> {
    // SAFETY: the caller vouches for the callbacks; pol lives for ever.
    cvt(unsafe { sys::bypass_pager_policy_register(pol) })?;
    Ok(())
}

/// A heat reason (`written_why`, `damon_why`) as a string.
pub fn heat_reason(why: &[c_char]) -> String {
    let bytes: Vec<u8> = why.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Which end of the heat ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeatOrder {
    /// Hottest first (heat > 0 only).
    Hot,
    /// Coldest first.
    Cold,
}

/// Access-heat sampling options (a builder).
#[derive(Clone, Debug, Default)]
pub struct HeatConfig {
    sources: u32,
    interval_ms: u32,
    flags: u32,
    stats_path: Option<PathBuf>,
    stats_ms: u32,
}

impl HeatConfig {
    /// Every available source, every 100 ms.
    pub fn new() -> Self {
        Self::default()
    }
    /// Faults served (always available).
    pub fn faults(mut self) -> Self {
        self.sources |= sys::BYPASS_PAGER_HEAT_FAULTS;
        self
    }
    /// PAGEMAP_SCAN's written bits (Linux 6.7).
    pub fn written(mut self) -> Self {
        self.sources |= sys::BYPASS_PAGER_HEAT_WRITTEN;
        self
    }
    /// DAMON (root, virtual address monitoring).
    pub fn damon(mut self) -> Self {
        self.sources |= sys::BYPASS_PAGER_HEAT_DAMON;
        self
    }
    /// Skip requested sources that are unavailable instead of failing.
    pub fn optional(mut self) -> Self {
        self.flags |= sys::BYPASS_PAGER_HEAT_OPTIONAL;
        self
    }
    /// The sampling interval (10 ms .. 60 s).
    pub fn interval(mut self, d: Duration) -> Self {
        self.interval_ms = u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1);
        self
    }
    /// Rewrite a live view (for `bypass heat FILE`) at `path` every
    /// `every` (at least the interval).
    pub fn stats_file(mut self, path: impl AsRef<Path>, every: Duration) -> Self {
        self.stats_path = Some(path.as_ref().to_path_buf());
        self.stats_ms = u32::try_from(every.as_millis()).unwrap_or(u32::MAX).max(1);
        self
    }
}

/// A per-range hint ([`Region::advise`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// No hint: clears the others.
    Normal,
    /// Accessed in ascending order: prefetch ahead of the faults.
    Sequential,
    /// No read-ahead, fault-around or fault-driven prefetch.
    Random,
    /// Bring the swapped pages in now, asynchronously, within the budget.
    WillNeed,
    /// Evict these first (contents kept).
    DontNeed,
    /// Keep resident ahead of everything else.
    Priority,
}

impl Advice {
    fn raw(self) -> i32 {
        (match self {
            Advice::Normal => sys::BYPASS_PAGER_ADV_NORMAL,
            Advice::Sequential => sys::BYPASS_PAGER_ADV_SEQUENTIAL,
            Advice::Random => sys::BYPASS_PAGER_ADV_RANDOM,
            Advice::WillNeed => sys::BYPASS_PAGER_ADV_WILLNEED,
            Advice::DontNeed => sys::BYPASS_PAGER_ADV_DONTNEED,
            Advice::Priority => sys::BYPASS_PAGER_ADV_PRIORITY,
        }) as i32
    }
}

/// Memory served by a pager, used as a `[u8]` (`Deref`/`DerefMut`).
/// Dropping it unmaps it.  A forked child inherits its bytes as ordinary
/// private memory (copy-on-write, outside any budget: the pager reads
/// every evicted page back before `fork` returns); calls on the pager
/// answer `ECHILD` there, so a `Region` dropped in the child leaves the
/// child's copy mapped (`munmap` it, or let the child exit).
#[derive(Debug)]
pub struct Region<'p> {
    pager: &'p Pager,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a region is plain memory of the process (like a Box<[u8]>): any
// thread may touch it, its faults are served in the faulting thread or by
// the pager's handlers; the calls on it take the pager's locks.
unsafe impl Send for Region<'_> {}
// SAFETY: see Send: `&Region` gives only shared access to the bytes.
unsafe impl Sync for Region<'_> {}

fn bounds(r: impl RangeBounds<usize>, len: usize) -> io::Result<(usize, usize)> {
    let start = match r.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or_else(einval)?,
        Bound::Unbounded => 0,
    };
    let end = match r.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or_else(einval)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(einval());
    }
    Ok((start, end))
}

impl<'p> Region<'p> {
    /// The pager serving it.
    pub fn pager(&self) -> &'p Pager {
        self.pager
    }

    /// Make the pages of `range` resident and keep them so while the
    /// returned guard lives, so that the kernel may read them in a system
    /// call (a `write` or `send` from them).  Pins nest.  `ENOMEM` (more
    /// than half the budget would be pinned), `EIO` (the swap file could
    /// not be read).
    pub fn pin(&self, range: impl RangeBounds<usize>) -> io::Result<Pinned<'_>> {
        let (s, e) = bounds(range, self.len)?;
        self.pin_raw(s, e, 0)?;
        Ok(Pinned { region: self, start: s, end: e })
    }

    /// Pin `range` resident and writable, so that the kernel may write it
    /// in a system call (a `read` or `recv` into it).
    pub fn pin_mut(&mut self, range: impl RangeBounds<usize>) -> io::Result<PinnedMut<'_, 'p>> {
        let (s, e) = bounds(range, self.len)?;
        self.pin_raw(s, e, sys::BYPASS_PAGER_PIN_WRITE)?;
        Ok(PinnedMut { region: self, start: s, end: e })
    }

    fn pin_raw(&self, s: usize, e: usize, flags: u32) -> io::Result<()> {
        if s == e {
            return Ok(());
        }
        // SAFETY: [s, e) lies in this region of the pager.
        cvt(unsafe {
            sys::bypass_pager_pin(self.pager.raw.as_ptr(), self.ptr.as_ptr().add(s) as *mut c_void, e - s, flags)
        })?;
        Ok(())
    }

    fn unpin_raw(&self, s: usize, e: usize) {
        if s == e {
            return;
        }
        // SAFETY: undoes a pin of the same range.
        unsafe { sys::bypass_pager_unpin(self.pager.raw.as_ptr(), self.ptr.as_ptr().add(s) as *mut c_void, e - s) };
    }

    /// Give a hint for the pages of `range` (rounded out to pages).
    /// `ENOSPC` when the pager's table of 64 hinted ranges is full.
    pub fn advise(&self, range: impl RangeBounds<usize>, advice: Advice) -> io::Result<()> {
        let (s, e) = bounds(range, self.len)?;
        // SAFETY: [s, e) lies in this region of the pager.
        cvt(unsafe {
            sys::bypass_pager_advise(self.pager.raw.as_ptr(), self.ptr.as_ptr().add(s) as *mut c_void, e - s, advice.raw())
        })?;
        Ok(())
    }

    /// Forget the data of `range` (whole pages: its start and end multiples
    /// of the page size), as `madvise(MADV_DONTNEED)` does: it reads as
    /// zeros afterwards, and nothing is written to the swap file or read
    /// from it for it (a page in use at that moment, pinned or being
    /// served, is zeroed by writing instead).  An empty range does
    /// nothing.  `EINVAL` for a range not of whole pages.
    pub fn discard(&mut self, range: impl RangeBounds<usize>) -> io::Result<()> {
        let (s, e) = bounds(range, self.len)?;
        if s == e {
            return Ok(());
        }
        // SAFETY: [s, e) lies in this region; `&mut self` means nothing
        // borrows its bytes.  The library checks the alignment.
        cvt(unsafe {
            sys::bypass_pager_discard(self.pager.raw.as_ptr(), self.ptr.as_ptr().add(s) as *mut c_void, e - s)
        })?;
        Ok(())
    }

    /// Unmap the pages from `new_len` (a multiple of the page size) to the
    /// end, releasing their swap space; the rest stays mapped.
    pub fn truncate(&mut self, new_len: usize) -> io::Result<()> {
        if new_len >= self.len {
            return if new_len == self.len { Ok(()) } else { Err(einval()) };
        }
        // SAFETY: the tail lies in this region; `&mut self` means nothing
        // borrows it.  The library checks the alignment.
        cvt(unsafe {
            sys::bypass_pager_unmap(
                self.pager.raw.as_ptr(),
                self.ptr.as_ptr().add(new_len) as *mut c_void,
                self.len - new_len,
            )
        })?;
        self.len = new_len;
        Ok(())
    }

    /// The region's address.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for Region<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: len bytes mapped for us until drop; faults are served.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for Region<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as for Deref, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Region<'_> {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the whole (remaining) region; nothing borrows it.
        unsafe { sys::bypass_pager_unmap(self.pager.raw.as_ptr(), self.ptr.as_ptr() as *mut c_void, self.len) };
    }
}

/// Pages kept resident ([`Region::pin`]); unpinned on drop.  Derefs to the
/// pinned bytes.
#[derive(Debug)]
pub struct Pinned<'r> {
    region: &'r Region<'r>,
    start: usize,
    end: usize,
}

impl Deref for Pinned<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.region[self.start..self.end]
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        self.region.unpin_raw(self.start, self.end);
    }
}

/// Pages kept resident and writable ([`Region::pin_mut`]); unpinned on
/// drop.  Derefs mutably to the pinned bytes.
#[derive(Debug)]
pub struct PinnedMut<'r, 'p> {
    region: &'r mut Region<'p>,
    start: usize,
    end: usize,
}

impl Deref for PinnedMut<'_, '_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.region[self.start..self.end]
    }
}

impl DerefMut for PinnedMut<'_, '_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let (s, e) = (self.start, self.end);
        &mut self.region[s..e]
    }
}

impl Drop for PinnedMut<'_, '_> {
    fn drop(&mut self) {
        self.region.unpin_raw(self.start, self.end);
    }
}
