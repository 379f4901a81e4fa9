//! Pooled host storage: a bucketing rule times a device allocator.
//!
//! Rules (`OXNET_MEM_POOL_TYPE`, or MXNet's `MXNET_CPU_MEM_POOL_TYPE`):
//! * `Page` (default; MXNet's `Naive` accepted): up to 4 KiB round to the
//!   next power of two (at least 64 bytes), up to 2 MiB to a multiple of
//!   4 KiB, above that to a multiple of 2 MiB;
//! * `PowerOfTwo` (MXNet's `Round` accepted): the next power of two;
//! * `Unpooled`: exact size, returned to the system at once.
//!
//! Every block is 64-byte aligned. Blocks of 2 MiB and more are mapped
//! from the system directly (`mmap`) and unmapped when released, so their
//! memory really goes back to the OS; smaller ones come from the allocator.
//! Freed blocks are cached per bucket, up to a bound proportional to use:
//! the peak of bytes in use since the last `release_all` (at least 64 MiB),
//! and never more than `OXNET_MEM_POOL_MAX_CACHED` bytes (default: a quarter
//! of the machine's memory, at most 4 GiB). `release_all` unmaps the cached
//! large blocks, frees the others and tells the allocator to purge (the
//! hook the extension registers: mimalloc's `mi_collect`; glibc's
//! `malloc_trim`). On allocation failure the pool releases its cache and
//! retries once.
//!
//! External storage ([`Storage::external`]) wraps memory owned by someone
//! else (a NumPy array, a DLPack producer): it keeps an owner object alive
//! and drops it, instead of returning a block to a pool, when the storage is
//! dropped. Kernels assume only the element alignment of the array's dtype,
//! never the pool's 64 bytes: a first-axis slice view already starts at any
//! multiple of the element size, and the SIMD code uses unaligned loads and
//! stores. Callers that wrap external memory check element alignment
//! ([`crate::ndarray::NDArray::from_external`]) and copy when it is not met.
use crate::base::Context;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::alloc::{alloc as sys_alloc, dealloc, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

pub const ALIGN: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Page,
    PowerOfTwo,
    Unpooled,
}

impl Rule {
    pub fn from_env() -> Rule {
        let v = std::env::var("OXNET_MEM_POOL_TYPE")
            .or_else(|_| std::env::var("MXNET_CPU_MEM_POOL_TYPE"))
            .unwrap_or_default();
        match v.to_ascii_lowercase().as_str() {
            "round" | "poweroftwo" | "pow2" => Rule::PowerOfTwo,
            "unpooled" => Rule::Unpooled,
            _ => Rule::Page,
        }
    }

    /// Bucket size for a request of `size` bytes.
    pub fn round(self, size: usize) -> usize {
        let size = size.max(1);
        match self {
            Rule::Unpooled => size.div_ceil(ALIGN) * ALIGN,
            Rule::PowerOfTwo => size.next_power_of_two().max(ALIGN),
            Rule::Page => {
                if size <= 4096 {
                    size.next_power_of_two().max(ALIGN)
                } else if size <= 2 << 20 {
                    size.div_ceil(4096) * 4096
                } else {
                    size.div_ceil(2 << 20) * (2 << 20)
                }
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Rule::Page => "Page",
            Rule::PowerOfTwo => "PowerOfTwo",
            Rule::Unpooled => "Unpooled",
        }
    }
}

/// Counters reported by `mx.storage.stats()`.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub bytes_in_use: u64,
    pub bytes_cached: u64,
    pub hits: u64,
    pub misses: u64,
    pub allocs: u64,
    pub frees: u64,
    pub rule: &'static str,
}

/// Blocks of at least this many bytes are mapped from the OS directly.
pub const LARGE_BLOCK: usize = 2 << 20;
/// The cache bound never goes below this (bytes).
const MIN_CACHE_BOUND: usize = 64 << 20;

/// The machine's physical memory in bytes (0 when unknown).
pub fn physical_memory() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as usize * page as usize
    } else {
        0
    }
}

/// Memory a new allocation may still get, in bytes: the kernel's estimate
/// of available physical memory plus free swap (`/proc/meminfo`), or
/// `None` where that is unknown.
pub fn available_memory() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: usize = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some(field("MemAvailable:")? + field("SwapFree:").unwrap_or(0))
}

/// Arrays of at least this many bytes are checked against the available
/// memory when they are created.
const CHECK_FIT_BYTES: usize = 256 << 20;

/// Refuse, at once, an array of `nbytes` that cannot fit in the memory the
/// machine has left (physical + swap): an out-of-memory error instead of a
/// process killed later by the OOM killer while the kernel fills it.
/// `what` describes the array for the message.
pub fn check_fits(nbytes: usize, what: &dyn Fn() -> String) -> Result<()> {
    if nbytes < CHECK_FIT_BYTES {
        return Ok(());
    }
    let Some(avail) = available_memory() else {
        return Ok(());
    };
    // the pool's cached blocks can be given back for it
    let avail = avail + cpu_pool().cached.load(Ordering::Relaxed);
    if nbytes > avail {
        return Err(Error::OutOfMemory(format!(
            "cannot allocate {} for {}: only {} of memory (physical + swap) is available",
            fmt_bytes(nbytes),
            what(),
            fmt_bytes(avail)
        )));
    }
    Ok(())
}

fn fmt_bytes(n: usize) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    }
}

static PURGE_HOOK: OnceLock<fn()> = OnceLock::new();

/// Register the allocator's purge function (called by `release_all` after
/// the cached blocks are freed); the first registration wins.
pub fn set_purge_hook(f: fn()) {
    let _ = PURGE_HOOK.set(f);
}

/// Ask the allocators to return free memory to the OS.
fn purge_allocators() {
    if let Some(f) = PURGE_HOOK.get() {
        f();
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns glibc's free pages to the OS.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Map `cap` bytes of fresh zeroed memory (page-aligned, so 64-byte aligned).
fn map_block(cap: usize) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            cap,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(p as *mut u8)
    }
}

/// Give a block back to the system (mapped when large, else the allocator).
/// # Safety
/// `p` came from `raw_alloc(cap)` and is not used afterwards.
unsafe fn raw_free(p: *mut u8, cap: usize) {
    if cap >= LARGE_BLOCK {
        libc::munmap(p as *mut libc::c_void, cap);
    } else {
        dealloc(p, Layout::from_size_align_unchecked(cap, ALIGN));
    }
}

/// A block of `cap` bytes from the system (None when it has none).
fn raw_alloc(cap: usize) -> Option<NonNull<u8>> {
    if cap >= LARGE_BLOCK {
        return map_block(cap);
    }
    let layout = Layout::from_size_align(cap, ALIGN).ok()?;
    // SAFETY: layout has non-zero size (cap >= 64).
    NonNull::new(unsafe { sys_alloc(layout) })
}

pub struct Pool {
    rule: Rule,
    /// The cache's hard bound (bytes).
    max_cached: usize,
    /// The peak of `in_use` since the last `release_all`: the cache's
    /// soft bound.
    peak: AtomicUsize,
    free: Mutex<HashMap<usize, Vec<usize>>>,
    in_use: AtomicUsize,
    cached: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    allocs: AtomicU64,
    frees: AtomicU64,
}

impl Pool {
    pub fn new(rule: Rule) -> Pool {
        let max_cached = std::env::var("OXNET_MEM_POOL_MAX_CACHED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| match physical_memory() {
                0 => 1usize << 30,
                m => (m / 4).min(4 << 30),
            });
        Pool {
            rule,
            max_cached,
            peak: AtomicUsize::new(0),
            free: Mutex::new(HashMap::new()),
            in_use: AtomicUsize::new(0),
            cached: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            allocs: AtomicU64::new(0),
            frees: AtomicU64::new(0),
        }
    }

    pub fn rule(&self) -> Rule {
        self.rule
    }

    fn alloc_block(&self, cap: usize) -> Result<NonNull<u8>> {
        if Layout::from_size_align(cap, ALIGN).is_err() {
            return Err(Error::Param(format!(
                "storage: invalid allocation size {cap}"
            )));
        }
        if let Some(p) = raw_alloc(cap) {
            return Ok(p);
        }
        // give the cache back to the system, then try once more
        self.release_all();
        raw_alloc(cap).ok_or_else(|| {
            Error::OutOfMemory(format!(
                "storage: out of memory allocating {} (the pool's cache was released first)",
                fmt_bytes(cap)
            ))
        })
    }

    /// The bound on cached bytes now: the peak use (at least 64 MiB),
    /// never above the hard bound.
    fn cache_bound(&self) -> usize {
        self.peak
            .load(Ordering::Relaxed)
            .max(MIN_CACHE_BOUND)
            .min(self.max_cached)
    }

    pub fn alloc(&'static self, size: usize, ctx: Context) -> Result<Storage> {
        let cap = self.rule.round(size);
        self.allocs.fetch_add(1, Ordering::Relaxed);
        let reused = if self.rule == Rule::Unpooled {
            None
        } else {
            self.free.lock().get_mut(&cap).and_then(|v| v.pop())
        };
        let ptr = match reused {
            Some(p) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                self.cached.fetch_sub(cap, Ordering::Relaxed);
                NonNull::new(p as *mut u8).unwrap()
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                self.alloc_block(cap)?
            }
        };
        let now = self.in_use.fetch_add(cap, Ordering::Relaxed) + cap;
        self.peak.fetch_max(now, Ordering::Relaxed);
        crate::profiler::memory_counter(self);
        Ok(Storage {
            ptr,
            size,
            cap,
            ctx,
            origin: Origin::Pool(self),
        })
    }

    fn release(&self, ptr: NonNull<u8>, cap: usize) {
        self.in_use.fetch_sub(cap, Ordering::Relaxed);
        self.frees.fetch_add(1, Ordering::Relaxed);
        let bound = self.cache_bound();
        if self.rule != Rule::Unpooled && cap <= bound {
            let mut free = self.free.lock();
            // a full cache makes room for the block just freed (the sizes in
            // use now) by giving back blocks of other sizes, largest first:
            // a cache full of sizes no longer used would never hit again
            while self.cached.load(Ordering::Relaxed) + cap > bound {
                let Some(&victim) = free
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(c, _)| c)
                    .max()
                else {
                    break;
                };
                if let Some(p) = free.get_mut(&victim).and_then(|v| v.pop()) {
                    // SAFETY: cached blocks came from raw_alloc(victim) and
                    // belong to the cache alone.
                    unsafe { raw_free(p as *mut u8, victim) };
                    self.cached.fetch_sub(victim, Ordering::Relaxed);
                }
            }
            self.cached.fetch_add(cap, Ordering::Relaxed);
            free.entry(cap).or_default().push(ptr.as_ptr() as usize);
        } else {
            // SAFETY: the block came from raw_alloc(cap) and its storage is
            // being dropped.
            unsafe { raw_free(ptr.as_ptr(), cap) };
        }
        crate::profiler::memory_counter(self);
    }

    /// Return every cached block to the system (large blocks unmapped,
    /// small ones freed and the allocator told to purge), and restart the
    /// cache's bound from the current use.
    pub fn release_all(&self) {
        let blocks: Vec<(usize, Vec<usize>)> = self.free.lock().drain().collect();
        for (cap, v) in blocks {
            for p in v {
                // SAFETY: cached blocks came from raw_alloc(cap) and are
                // owned by the cache alone.
                unsafe { raw_free(p as *mut u8, cap) };
                self.cached.fetch_sub(cap, Ordering::Relaxed);
            }
        }
        self.peak
            .store(self.in_use.load(Ordering::Relaxed), Ordering::Relaxed);
        purge_allocators();
        crate::profiler::memory_counter(self);
    }

    pub fn stats(&self) -> Stats {
        Stats {
            bytes_in_use: self.in_use.load(Ordering::Relaxed) as u64,
            bytes_cached: self.cached.load(Ordering::Relaxed) as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            allocs: self.allocs.load(Ordering::Relaxed),
            frees: self.frees.load(Ordering::Relaxed),
            rule: self.rule.name(),
        }
    }
}

/// The host pool (all CPU contexts share it).
pub fn cpu_pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::new(Rule::from_env()))
}

/// Allocate `size` bytes for `ctx`.
pub fn alloc(size: usize, ctx: Context) -> Result<Storage> {
    if !ctx.is_cpu() {
        return Err(Error::Device(format!(
            "{ctx} is not available: this build of oxnet has no GPU backend (mx.context.num_gpus() == 0)"
        )));
    }
    cpu_pool().alloc(size, ctx)
}

/// The owner of external memory: whatever keeps the memory valid (a
/// reference to a NumPy array, a DLPack tensor whose deleter its `Drop`
/// calls). It is dropped, on whichever thread drops the storage (often an
/// engine worker), once no array or pending operation uses the memory, so
/// its `Drop` must be safe to run on any thread and must not block on
/// anything an engine worker may be waiting for.
pub type Owner = Box<dyn Send + Sync>;

enum Origin {
    Pool(&'static Pool),
    /// Held only to be dropped with the storage.
    External(#[allow(dead_code)] Owner),
}

/// A block of device memory: returned to its pool on drop, or (external
/// storage) released by dropping its owner.
pub struct Storage {
    ptr: NonNull<u8>,
    size: usize,
    cap: usize,
    pub ctx: Context,
    origin: Origin,
}

// SAFETY: the engine orders every access to the block.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// Wrap `size` bytes at `ptr` that `owner` keeps valid; nothing is
    /// copied. The owner is dropped when the storage is (after every
    /// operation on it). A zero-size block may have a dangling pointer.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `size` bytes for as long
    /// as `owner` is alive, and nothing else may access the memory while the
    /// engine runs operations on it (beyond what the caller's API documents).
    pub unsafe fn external(ptr: *mut u8, size: usize, ctx: Context, owner: Owner) -> Storage {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        Storage {
            ptr,
            size,
            cap: size,
            ctx,
            origin: Origin::External(owner),
        }
    }

    /// True when the memory is owned by someone else (see [`Storage::external`]).
    pub fn is_external(&self) -> bool {
        matches!(self.origin, Origin::External(_))
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        // An external block's owner is dropped with `origin`.
        if let Origin::Pool(pool) = self.origin {
            pool.release(self.ptr, self.cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_round() {
        assert_eq!(Rule::Page.round(1), 64);
        assert_eq!(Rule::Page.round(100), 128);
        assert_eq!(Rule::Page.round(5000), 8192);
        assert_eq!(Rule::Page.round(3 << 20), 4 << 20);
        assert_eq!(Rule::PowerOfTwo.round(5000), 8192);
        assert_eq!(Rule::PowerOfTwo.round(3 << 20), 4 << 20);
        assert_eq!(Rule::Unpooled.round(100), 128);
    }

    #[test]
    fn pool_reuses_and_aligns() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(Rule::Page)));
        let a = pool.alloc(1000, Context::cpu(0)).unwrap();
        assert_eq!(a.ptr() as usize % ALIGN, 0);
        let p = a.ptr();
        drop(a);
        let s = pool.stats();
        assert_eq!(s.bytes_cached, 1024);
        let b = pool.alloc(900, Context::cpu(0)).unwrap();
        assert_eq!(b.ptr(), p);
        assert_eq!(pool.stats().hits, 1);
        drop(b);
        pool.release_all();
        assert_eq!(pool.stats().bytes_cached, 0);
        assert_eq!(pool.stats().bytes_in_use, 0);
    }

    #[test]
    fn external_drops_owner_not_pool() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        struct Flag(Arc<AtomicBool>, #[allow(dead_code)] Vec<u8>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let mut buf = vec![7u8; 16];
        let p = buf.as_mut_ptr();
        let owner = Flag(dropped.clone(), buf);
        let s = unsafe { Storage::external(p, 16, Context::cpu(0), Box::new(owner)) };
        assert!(s.is_external());
        assert_eq!(unsafe { *s.ptr().add(3) }, 7);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(s);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn cache_is_bounded_and_makes_room_for_sizes_in_use() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(Rule::Page)));
        let ctx = Context::cpu(0);
        // 40 blocks of distinct sizes (3..81 MiB, 1.7 GiB in all), one alive
        // at a time: the cache never holds more than its bound, the peak
        // use or 64 MiB
        for i in 0..40 {
            drop(pool.alloc((3 << 20) + i * (2 << 20), ctx).unwrap());
            let cached = pool.stats().bytes_cached;
            assert!(
                cached <= pool.cache_bound() as u64 && cached <= 82 << 20,
                "{cached}"
            );
        }
        // the size used last is cached (older sizes made room for it) and hits
        let hits = pool.stats().hits;
        drop(pool.alloc((3 << 20) + 39 * (2 << 20), ctx).unwrap());
        assert_eq!(pool.stats().hits, hits + 1);
        pool.release_all();
        assert_eq!(pool.stats().bytes_cached, 0);
    }

    #[test]
    fn unpooled_frees() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(Rule::Unpooled)));
        drop(pool.alloc(1000, Context::cpu(0)).unwrap());
        assert_eq!(pool.stats().bytes_cached, 0);
    }
}
