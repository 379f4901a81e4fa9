//! Pooled host storage: a bucketing rule times a device allocator.
//!
//! Rules (`OXNET_MEM_POOL_TYPE`, or MXNet's `MXNET_CPU_MEM_POOL_TYPE`):
//! * `Page` (default; MXNet's `Naive` accepted): up to 4 KiB round to the
//!   next power of two (at least 64 bytes), up to 2 MiB to a multiple of
//!   4 KiB, above that to a multiple of 2 MiB;
//! * `PowerOfTwo` (MXNet's `Round` accepted): the next power of two;
//! * `Unpooled`: exact size, returned to the system at once.
//!
//! Every block is 64-byte aligned. Freed blocks are cached per bucket up to
//! `OXNET_MEM_POOL_MAX_CACHED` bytes (default 4 GiB); on allocation failure
//! the pool releases its cache and retries once.
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

pub struct Pool {
    rule: Rule,
    max_cached: usize,
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
            .unwrap_or(4usize << 30);
        Pool {
            rule,
            max_cached,
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
        let layout = Layout::from_size_align(cap, ALIGN)
            .map_err(|_| Error::Param(format!("storage: invalid allocation size {cap}")))?;
        // SAFETY: layout has non-zero size.
        let p = unsafe { sys_alloc(layout) };
        if let Some(p) = NonNull::new(p) {
            return Ok(p);
        }
        self.release_all();
        let p = unsafe { sys_alloc(layout) };
        NonNull::new(p)
            .ok_or_else(|| Error::Device(format!("storage: out of memory allocating {cap} bytes")))
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
        self.in_use.fetch_add(cap, Ordering::Relaxed);
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
        if self.rule != Rule::Unpooled
            && self.cached.load(Ordering::Relaxed) + cap <= self.max_cached
        {
            self.cached.fetch_add(cap, Ordering::Relaxed);
            self.free
                .lock()
                .entry(cap)
                .or_default()
                .push(ptr.as_ptr() as usize);
        } else {
            unsafe { dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(cap, ALIGN)) };
        }
        crate::profiler::memory_counter(self);
    }

    /// Return every cached block to the system.
    pub fn release_all(&self) {
        let mut f = self.free.lock();
        for (cap, v) in f.drain() {
            for p in v {
                unsafe { dealloc(p as *mut u8, Layout::from_size_align_unchecked(cap, ALIGN)) };
                self.cached.fetch_sub(cap, Ordering::Relaxed);
            }
        }
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
    fn unpooled_frees() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(Rule::Unpooled)));
        drop(pool.alloc(1000, Context::cpu(0)).unwrap());
        assert_eq!(pool.stats().bytes_cached, 0);
    }
}
