//! Loops shared by operator families: parallel maps, broadcasting, casts.
use crate::base::dtype::Elem;
use crate::base::shape::strides;
use crate::ndarray::Blob;
use crate::par::par_chunks_mut;

/// Elements per parallel task; below this a loop runs on one thread.
pub const PAR_GRAIN: usize = 1 << 15;

/// `v` limited to `[lo, hi]`; NaN stays NaN, as in MXNet's and NumPy's
/// clip (`f64::max`/`min` would return the bound). Every clip, relu-like
/// floor and `clip_gradient` goes through this or [`max_nan`].
#[inline(always)]
pub fn clip_nan<F: PartialOrd + Copy>(v: F, lo: F, hi: F) -> F {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// The larger of `a` and `b`, NaN if either is NaN (NumPy's `maximum`).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn max_nan<F: PartialOrd + Copy>(a: F, b: F) -> F {
    // `a != a` is true only for NaN
    if a != a || a >= b {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, NaN if either is NaN (NumPy's `minimum`).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn min_nan<F: PartialOrd + Copy>(a: F, b: F) -> F {
    if a != a || a <= b {
        a
    } else {
        b
    }
}

/// `y[i] = f(x[i])` over one chunk. Not inlined on purpose: as a function
/// argument `y` is known not to alias anything `f` reads (the scalar of
/// `x + 1`, say), so LLVM hoists those loads and vectorises the loop; inlined
/// into the parallel closure (where the slices come from raw pointers) the
/// loop stayed scalar and reloaded the scalar every element (4x slower).
#[inline(never)]
fn apply1<A: Copy, B: Copy, F: Fn(A) -> B>(x: &[A], y: &mut [B], f: &F) {
    for (o, &i) in y.iter_mut().zip(x) {
        *o = f(i);
    }
}

/// `y[i] = f(a[i], b[i])` over one chunk (see [`apply1`]).
#[inline(never)]
fn apply2<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], y: &mut [T], f: &F) {
    for ((o, &u), &v) in y.iter_mut().zip(a).zip(b) {
        *o = f(u, v);
    }
}

/// C = 0 over an m x n strided block (a product with an empty inner
/// dimension that overwrites its destination).
///
/// # Safety
/// Every `c[i * rs + j * cs]` for i < m, j < n must be writable.
pub(crate) unsafe fn zero_strided<T: Copy>(
    m: usize,
    n: usize,
    c: *mut T,
    rs: isize,
    cs: isize,
    zero: T,
) {
    for i in 0..m {
        for j in 0..n {
            *c.offset(i as isize * rs + j as isize * cs) = zero;
        }
    }
}

/// Whether this CPU runs the AVX2+FMA copies of the element-wise loops.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn wide_cpu() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// [`apply1`] compiled for AVX2 (8 float32 lanes): what makes the
/// branch-free polynomial transcendentals (`fast_tanhf`, `fast_expf`)
/// several times faster than on the SSE2 baseline. Element-wise, so the
/// results are the same bits as the baseline loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply1_avx2<A: Copy, B: Copy, F: Fn(A) -> B>(x: &[A], y: &mut [B], f: &F) {
    for (o, &i) in y.iter_mut().zip(x) {
        *o = f(i);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply2_avx2<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], y: &mut [T], f: &F) {
    for ((o, &u), &v) in y.iter_mut().zip(a).zip(b) {
        *o = f(u, v);
    }
}

#[inline(never)]
fn apply1_wide<A: Copy, B: Copy, F: Fn(A) -> B>(x: &[A], y: &mut [B], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if wide_cpu() {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { apply1_avx2(x, y, f) };
    }
    apply1(x, y, f)
}

#[inline(never)]
fn apply2_wide<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], y: &mut [T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if wide_cpu() {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { apply2_avx2(a, b, y, f) };
    }
    apply2(a, b, y, f)
}

/// `y[i] = f(x[i])` for compute-heavy `f` (the fast transcendentals): like
/// [`map1`], on AVX2 where the CPU has it.
pub fn map1_wide<A: Copy + Sync, B: Copy + Send>(x: &[A], y: &mut [B], f: impl Fn(A) -> B + Sync) {
    split1(x, y, &f, apply1_wide)
}

/// `y[i] = f(a[i], b[i])` for same-shape inputs and compute-heavy `f`.
pub fn map2_wide<T: Copy + Send + Sync>(
    a: &[T],
    b: &[T],
    y: &mut [T],
    f: impl Fn(T, T) -> T + Sync,
) {
    split2(a, b, y, &f, apply2_wide)
}

/// Run `apply` over `PAR_GRAIN` chunks of `y` in parallel (or at once
/// when small).
#[inline]
fn split1<A: Copy + Sync, B: Copy + Send, F: Fn(A) -> B + Sync>(
    x: &[A],
    y: &mut [B],
    f: &F,
    apply: fn(&[A], &mut [B], &F),
) {
    if y.len() >= 2 * PAR_GRAIN {
        par_chunks_mut(y, PAR_GRAIN, |c, yc| {
            apply(&x[c * PAR_GRAIN..c * PAR_GRAIN + yc.len()], yc, f)
        });
    } else {
        apply(x, y, f);
    }
}

/// The two-input [`split1`] (same-length inputs).
#[inline]
fn split2<T: Copy + Send + Sync, F: Fn(T, T) -> T + Sync>(
    a: &[T],
    b: &[T],
    y: &mut [T],
    f: &F,
    apply: fn(&[T], &[T], &mut [T], &F),
) {
    if y.len() >= 2 * PAR_GRAIN {
        par_chunks_mut(y, PAR_GRAIN, |c, yc| {
            let s = c * PAR_GRAIN;
            apply(&a[s..s + yc.len()], &b[s..s + yc.len()], yc, f)
        });
    } else {
        apply(a, b, y, f);
    }
}

/// y[i] = f(x[i]).
#[inline]
pub fn map1<A: Copy + Sync, B: Copy + Send>(x: &[A], y: &mut [B], f: impl Fn(A) -> B + Sync) {
    split1(x, y, &f, apply1)
}

/// out[i] = f(a[i], b[i]) with NumPy broadcasting between `ash` and `bsh`.
pub fn map2<T: Copy + Send + Sync>(
    a: &[T],
    ash: &[usize],
    b: &[T],
    bsh: &[usize],
    out: &mut [T],
    osh: &[usize],
    f: impl Fn(T, T) -> T + Sync,
) {
    let n = out.len();
    if n == 0 {
        return;
    }
    if a.len() == n && b.len() == n {
        split2(a, b, out, &f, apply2);
        return;
    }
    if b.len() == 1 && a.len() == n {
        let bv = b[0];
        map1(a, out, |x| f(x, bv));
        return;
    }
    if a.len() == 1 && b.len() == n {
        let av = a[0];
        map1(b, out, |x| f(av, x));
        return;
    }
    // General case: walk the output row by row (last axis innermost).
    let nd = osh.len();
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; nd - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (ap, bp) = (pad(ash), pad(bsh));
    let (ast, bst) = (strides(&ap), strides(&bp));
    let ast: Vec<usize> = (0..nd)
        .map(|i| if ap[i] == 1 { 0 } else { ast[i] })
        .collect();
    let bst: Vec<usize> = (0..nd)
        .map(|i| if bp[i] == 1 { 0 } else { bst[i] })
        .collect();
    let inner = osh[nd - 1];
    let (sa, sb) = (ast[nd - 1], bst[nd - 1]);
    let rows = n / inner.max(1);
    let row_fn = |r: usize, orow: &mut [T]| {
        let (mut ao, mut bo, mut rem) = (0usize, 0usize, r);
        for d in (0..nd - 1).rev() {
            let i = rem % osh[d];
            rem /= osh[d];
            ao += i * ast[d];
            bo += i * bst[d];
        }
        for (j, o) in orow.iter_mut().enumerate() {
            *o = f(a[ao + j * sa], b[bo + j * sb]);
        }
    };
    if n >= 2 * PAR_GRAIN && rows > 1 {
        par_chunks_mut(out, inner, row_fn);
    } else {
        for (r, orow) in out.chunks_mut(inner).enumerate() {
            row_fn(r, orow);
        }
    }
}

/// Convert between any two dtypes (as NumPy's astype does for finite values).
pub fn cast_blob(src: &Blob, dst: &Blob) {
    fn go<S: Elem, D: Elem>(s: &[S], d: &mut [D]) {
        map1(s, d, |v| D::from_f64(v.to_f64()));
    }
    if src.dtype == dst.dtype {
        dst.bytes_mut().copy_from_slice(src.bytes());
        return;
    }
    match (src.dtype, dst.dtype) {
        (crate::DType::F32, crate::DType::F16) => map1(
            src.data::<f32>(),
            dst.data_mut::<half::f16>(),
            half::f16::from_f32,
        ),
        (crate::DType::F16, crate::DType::F32) => map1(
            src.data::<half::f16>(),
            dst.data_mut::<f32>(),
            half::f16::to_f32,
        ),
        // to or from float32: one conversion (Rust's `as`, as NumPy's cast:
        // an int64 is rounded once, not through float64 first)
        (from, crate::DType::F32) if from != crate::DType::Bool => {
            crate::dispatch_dtype!(from, T => map1(src.data::<T>(), dst.data_mut::<f32>(), T::to_f32))
        }
        (crate::DType::F32, to) if to != crate::DType::Bool => {
            crate::dispatch_dtype!(to, T => map1(src.data::<f32>(), dst.data_mut::<T>(), T::from_f32))
        }
        _ => {
            crate::dispatch_dtype!(src.dtype, S => crate::dispatch_dtype!(dst.dtype, D => go::<S, D>(src.data::<S>(), dst.data_mut::<D>())))
        }
    }
}

/// Sum `src` (of shape `ssh`) down to `dst` (of shape `dsh`, broadcastable
/// to `ssh`): the gradient of a broadcast.
pub fn reduce_to<T: Elem>(src: &[T], ssh: &[usize], dst: &mut [T], dsh: &[usize]) {
    let nd = ssh.len();
    let mut dp = vec![1; nd - dsh.len()];
    dp.extend_from_slice(dsh);
    let dst_st = strides(&dp);
    let dst_st: Vec<usize> = (0..nd)
        .map(|i| if dp[i] == 1 { 0 } else { dst_st[i] })
        .collect();
    let mut acc = vec![0f64; dst.len()];
    let mut idx = vec![0usize; nd];
    let mut off = 0usize;
    for &v in src.iter() {
        acc[off] += v.to_f64();
        // odometer increment
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            off += dst_st[d];
            if idx[d] < ssh[d] {
                break;
            }
            off -= dst_st[d] * idx[d];
            idx[d] = 0;
        }
    }
    for (o, a) in dst.iter_mut().zip(acc) {
        *o = T::from_f64(a);
    }
}
