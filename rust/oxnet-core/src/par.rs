//! Data parallelism for kernels, on the rayon pool.
//!
//! Every kernel goes through [`par_for`], whose rayon machinery is
//! instantiated exactly once (it takes a `dyn Fn`). Calling rayon's generic
//! iterators from each kernel instead instantiated its job/join/unwind code
//! for every (dtype, closure) pair: thousands of copies that made up more
//! than half of this crate's LLVM IR and of its build time. The wrappers
//! below are thin generic shims over `par_for`; one dynamic call per task
//! costs nothing next to a task's work.
use rayon::prelude::*;

/// Call `f(i)` for every `i` in `0..n`, in parallel when `n > 1`.
pub fn par_for(n: usize, f: &(dyn Fn(usize) + Sync)) {
    match n {
        0 => {}
        1 => f(0),
        _ => (0..n).into_par_iter().for_each(f),
    }
}

/// Run `f` on a thread of the rayon pool and wait for it. A kernel that
/// calls [`par_for`] many times in a row (an RNN's time steps) then forks
/// from inside the pool, which is much cheaper than injecting each fork
/// from an engine worker and sleeping until it is done.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() || rayon::current_num_threads() <= 1 {
        return f();
    }
    rayon::scope(|_| f())
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
    let groups = rayon::current_num_threads().min(n).max(1);
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
