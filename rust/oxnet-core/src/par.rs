//! Data parallelism for kernels, on the rayon pool.
//!
//! Every kernel goes through [`par_for`], whose rayon machinery is
//! instantiated exactly once (it takes a `dyn Fn`). Calling rayon's generic
//! iterators from each kernel instead instantiated its job/join/unwind code
//! for every (dtype, closure) pair: thousands of copies that made up more
//! than half of this crate's LLVM IR and of its build time. The wrappers
//! below are thin generic shims over `par_for`; one dynamic call per task
//! costs nothing next to a task's work.
//!
//! The kernel pool is oxnet's own rayon pool, never rayon's global one:
//! a process forked after the pool started has none of its threads, and
//! rayon's global registry cannot be replaced, so a child calling into it
//! would wait forever. After a fork the child drops (leaks) the old pool and
//! starts a fresh one on first use; [`fork_generation`] tells other owners
//! of threads (the image decode pools) that theirs are gone too.
use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

static POOL: AtomicPtr<rayon::ThreadPool> = AtomicPtr::new(std::ptr::null_mut());
static POOL_INIT: Mutex<()> = Mutex::new(());
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The kernel pool (created on first use; `RAYON_NUM_THREADS` sets its
/// size, else one thread per core).
pub fn pool() -> &'static rayon::ThreadPool {
    let p = POOL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: pools are leaked, never freed, so the pointer stays valid.
        return unsafe { &*p };
    }
    let _g = POOL_INIT.lock();
    let p = POOL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: as above.
        return unsafe { &*p };
    }
    install_fork_handler();
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("oxnet-kernel-{i}"))
        .build()
        .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
        .expect("oxnet: cannot start even one kernel thread");
    let p = Box::into_raw(Box::new(pool));
    POOL.store(p, Ordering::Release);
    // SAFETY: just leaked; never freed.
    unsafe { &*p }
}

/// How many times this process's ancestry forked since the pools started
/// (0 in the original process). A thread pool created under another
/// generation has no threads in this process.
/// The first call installs the fork handler that counts.
pub fn fork_generation() -> u64 {
    install_fork_handler();
    FORK_GENERATION.load(Ordering::Acquire)
}

fn install_fork_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: the handler only stores atomics and unlocks a mutex the
    // (now single) child thread may have inherited locked.
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_child));
    });
}

extern "C" fn after_fork_child() {
    // The pool's threads did not survive the fork: forget (leak) the pool;
    // the next kernel starts a fresh one. Never drop it: its threads' locks
    // may have been held at the fork.
    POOL.store(std::ptr::null_mut(), Ordering::Release);
    FORK_GENERATION.fetch_add(1, Ordering::AcqRel);
    if POOL_INIT.is_locked() {
        // SAFETY: the thread that held it does not exist in the child.
        unsafe { POOL_INIT.force_unlock() };
    }
}

/// Threads available to a kernel running now: the current pool's size on a
/// pool thread (a kernel run inside another pool, e.g. a test's one-thread
/// pool, uses that pool), else the kernel pool's.
pub fn num_threads() -> usize {
    if rayon::current_thread_index().is_some() {
        rayon::current_num_threads()
    } else {
        pool().current_num_threads()
    }
}

/// Run `f` with rayon's parallel calls going to the kernel pool: directly
/// on a pool thread, else on a kernel-pool thread while the caller waits.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        f()
    } else {
        pool().install(f)
    }
}

struct AssertSend<F>(F);
// SAFETY: see `install_raw`.
unsafe impl<F> Send for AssertSend<F> {}

/// [`install`] for a closure that captures raw pointers (a GEMM's operands).
/// # Safety
/// The caller waits for `f` (install returns after it), so what the
/// pointers address outlives the call; `f` must touch it only as the
/// caller's own contract allows (disjoint writes, no aliasing).
pub(crate) unsafe fn install_raw(f: impl FnOnce()) {
    let job = AssertSend(f);
    install(move || {
        let job = job;
        (job.0)()
    })
}

/// Call `f(i)` for every `i` in `0..n`, in parallel when `n > 1`.
pub fn par_for(n: usize, f: &(dyn Fn(usize) + Sync)) {
    match n {
        0 => {}
        1 => f(0),
        _ => install(|| (0..n).into_par_iter().for_each(f)),
    }
}

/// Run `f` on a thread of the rayon pool and wait for it. A kernel that
/// calls [`par_for`] many times in a row (an RNN's time steps) then forks
/// from inside the pool, which is much cheaper than injecting each fork
/// from an engine worker and sleeping until it is done.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() || num_threads() <= 1 {
        return f();
    }
    pool().install(f)
}

/// A pointer that may cross threads; users guarantee disjoint access.
/// Kernels whose parallel tasks write interleaved, not contiguous, parts
/// of an output (a channel's planes across a batch) share it through this.
pub(crate) struct SharedMut<T>(*mut T);
unsafe impl<T: Send> Send for SharedMut<T> {}
unsafe impl<T: Send> Sync for SharedMut<T> {}
impl<T> SharedMut<T> {
    pub(crate) fn new(v: &mut [T]) -> SharedMut<T> {
        SharedMut(v.as_mut_ptr())
    }
    // A method (not field access) so closures capture the whole wrapper.
    fn at(&self, i: usize) -> *mut T {
        // SAFETY: callers only pass offsets inside the slice it came from.
        unsafe { self.0.add(i) }
    }
    /// Elements `start..start + len` of the slice it came from.
    /// # Safety
    /// The range lies inside that slice, the slice outlives the use, and no
    /// other task touches the range meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        std::slice::from_raw_parts_mut(self.at(start), len)
    }
}

/// `f(c, chunk)` for the consecutive `chunk`-element pieces of `y` (the
/// last may be shorter), in parallel.
pub fn par_chunks_mut<T: Send>(y: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let chunk = chunk.max(1);
    let n = y.len();
    let p = SharedMut(y.as_mut_ptr());
    par_for(n.div_ceil(chunk), &|c| {
        let s = c * chunk;
        let len = chunk.min(n - s);
        // SAFETY: chunk c covers [s, s + len) of `y`; chunks are disjoint and
        // `y` is borrowed mutably for the whole call.
        let yc = unsafe { std::slice::from_raw_parts_mut(p.at(s), len) };
        f(c, yc)
    });
}

/// Like [`par_chunks_mut`] over two slices at once: chunk `c` of `a`
/// (`ca` elements) goes with chunk `c` of `b` (`cb` elements). Runs as many
/// tasks as the shorter side has chunks.
pub fn par_chunks_mut2<A: Send, B: Send>(
    a: &mut [A],
    ca: usize,
    b: &mut [B],
    cb: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync,
) {
    let (ca, cb) = (ca.max(1), cb.max(1));
    let (na, nb) = (a.len(), b.len());
    let (pa, pb) = (SharedMut(a.as_mut_ptr()), SharedMut(b.as_mut_ptr()));
    par_for(na.div_ceil(ca).min(nb.div_ceil(cb)), &|c| {
        let (sa, sb) = (c * ca, c * cb);
        // SAFETY: as in par_chunks_mut, for each slice separately.
        let ac = unsafe { std::slice::from_raw_parts_mut(pa.at(sa), ca.min(na - sa)) };
        let bc = unsafe { std::slice::from_raw_parts_mut(pb.at(sb), cb.min(nb - sb)) };
        f(c, ac, bc)
    });
}

/// `[f(0), f(1), ..., f(n - 1)]`, computed in parallel, in order.
pub fn par_map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    par_chunks_mut(&mut out, 1, |i, slot| slot[0] = Some(f(i)));
    out.into_iter()
        .map(|v| v.expect("par_map: every slot is filled"))
        .collect()
}

/// `f(i, state)` for `i` in `0..n`, split into one contiguous range per
/// pool thread, each with its own `init()` state (scratch buffers).
pub fn par_for_init<S>(n: usize, init: impl Fn() -> S + Sync, f: impl Fn(usize, &mut S) + Sync) {
    let groups = num_threads().min(n).max(1);
    let per = n.div_ceil(groups);
    par_for(groups, &|g| {
        let mut s = init();
        for i in g * per..((g + 1) * per).min(n) {
            f(i, &mut s);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sum of 0..n computed on the kernel pool.
    fn pool_sum(n: usize) -> u64 {
        let parts = par_map(64, |c| {
            (c * n / 64..(c + 1) * n / 64)
                .map(|i| i as u64)
                .sum::<u64>()
        });
        parts.into_iter().sum()
    }

    #[test]
    fn forked_child_gets_a_fresh_kernel_pool() {
        let n = 1 << 20;
        let want = (n as u64 - 1) * n as u64 / 2;
        assert_eq!(pool_sum(n), want); // the pool runs in the parent
        let gen = fork_generation();
        // SAFETY: the child only runs kernels and exits with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: plain libc calls in the child; alarm kills a hung child.
            unsafe { libc::alarm(20) };
            let ok = pool_sum(n) == want && fork_generation() == gen + 1;
            unsafe { libc::_exit(if ok { 0 } else { 3 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child hung or failed (status {status:#x})"
        );
        assert_eq!(pool_sum(n), want);
        assert_eq!(fork_generation(), gen);
    }

    #[test]
    fn chunks_cover_everything_once() {
        let mut v = vec![0usize; 1003];
        par_chunks_mut(&mut v, 10, |c, ch| {
            for (j, x) in ch.iter_mut().enumerate() {
                *x += c * 10 + j + 1;
            }
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i + 1));
        let mut a = vec![0u8; 25];
        let mut b = vec![0u32; 3];
        par_chunks_mut2(&mut a, 10, &mut b, 1, |c, ac, bc| {
            ac.fill(c as u8 + 1);
            bc[0] = ac.len() as u32;
        });
        assert_eq!(b, vec![10, 10, 5]);
        assert_eq!(a[24], 3);
        assert_eq!(par_map(5, |i| i * i), vec![0, 1, 4, 9, 16]);
        let seen = parking_lot::Mutex::new(vec![0; 37]);
        par_for_init(37, || 7usize, |i, s| seen.lock()[i] += *s);
        assert!(seen.lock().iter().all(|&x| x == 7));
        par_chunks_mut(&mut Vec::<u8>::new(), 4, |_, _| {
            panic!("no chunks for an empty slice")
        });
    }
}
