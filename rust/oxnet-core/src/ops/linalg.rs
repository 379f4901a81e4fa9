//! Linear algebra (MXNet's `la_op`: `mx.nd.linalg.*` and `linalg_*`).
//!
//! Every operator works on the trailing two axes (for gemm / gemm2 the rows
//! may sit on another axis) and is batched over the leading ones, for
//! float32 and float64 only, like MXNet. Products run on the GEMM helpers of
//! `matrix.rs` in the input's own precision; factorizations (Cholesky,
//! triangular solves, LU with partial pivoting, Householder LQ, Householder
//! tridiagonalization + implicit QL for syevd) are written here and computed in float64 for both
//! dtypes, then rounded to the output dtype.
//!
//! Conventions follow MXNet 1.9.1: potrf / potri / syevd read only the
//! lower (potrf/potri with `lower=False`: upper) triangle of their input;
//! trsm / trmm only the triangle named by `lower`. Gradients are MXNet's:
//! potrf and syevd return a symmetric gradient (their input is taken to be
//! symmetric), the triangular operators a gradient restricted to the
//! triangle they read.
use super::attrs::Attrs;
use super::elemwise::fmt_f64;
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use std::borrow::Cow;

type B<'a> = &'a mut dyn GradBuilder;

/// The parameters of every linalg operator (each parses only its own).
#[derive(Debug, Clone, Copy)]
pub struct LaParam {
    pub transpose_a: bool,
    pub transpose_b: bool,
    pub alpha: f64,
    pub beta: f64,
    pub axis: i64,
    pub transpose: bool,
    pub rightside: bool,
    pub lower: bool,
    pub offset: i64,
}

const DEFAULT: LaParam = LaParam {
    transpose_a: false,
    transpose_b: false,
    alpha: 1.0,
    beta: 1.0,
    axis: -2,
    transpose: false,
    rightside: false,
    lower: true,
    offset: 0,
};

fn parse_gemm(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(LaParam {
        transpose_a: p.bool("transpose_a", false)?,
        transpose_b: p.bool("transpose_b", false)?,
        alpha: p.f64("alpha", 1.0)?,
        beta: p.f64("beta", 1.0)?,
        axis: p.i64("axis", -2)?,
        ..DEFAULT
    }))
}

fn parse_lower(a: &Attrs, op: &str) -> Result<Params> {
    Ok(Box::new(LaParam {
        lower: a.p(op).bool("lower", true)?,
        ..DEFAULT
    }))
}

fn parse_tri(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(LaParam {
        transpose: p.bool("transpose", false)?,
        rightside: p.bool("rightside", false)?,
        lower: p.bool("lower", true)?,
        alpha: p.f64("alpha", 1.0)?,
        ..DEFAULT
    }))
}

fn parse_syrk(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(LaParam {
        transpose: p.bool("transpose", false)?,
        alpha: p.f64("alpha", 1.0)?,
        ..DEFAULT
    }))
}

fn parse_offset(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(LaParam {
        offset: p.i64("offset", 0)?,
        lower: p.bool("lower", true)?,
        ..DEFAULT
    }))
}

fn parse_none(_: &Attrs, _: &str) -> Result<Params> {
    Ok(Box::new(DEFAULT))
}

fn tf(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// The forward call's attributes, for its backward operator.
fn fwd_attrs(c: &OpCall) -> Vec<(&str, String)> {
    c.attrs
        .0
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect()
}

// ---------------------------------------------------------------------------
// Shapes and dtypes.
// ---------------------------------------------------------------------------

/// All dtypes equal and float32 / float64.
fn infer_type_la(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    super::registry::infer_type_same(call, ins, outs)?;
    if let Some(t) = ins.iter().chain(outs.iter()).flatten().next() {
        if !matches!(t, DType::F32 | DType::F64) {
            return Err(Error::DType(format!(
                "{}: dtype {} is not supported; this operation only supports 32-bit and 64-bit \
                 floating point (float32, float64)",
                call.name(),
                t.name()
            )));
        }
    }
    Ok(())
}

/// (batch, n) of a tensor of square matrices on the trailing two axes.
fn square(op: &str, what: &str, s: &[usize]) -> Result<(usize, usize)> {
    let nd = s.len();
    if nd < 2 || s[nd - 2] != s[nd - 1] {
        return Err(Error::Shape(format!(
            "{op}: input {what} has shape {}, expected square matrices on the last two axes (..., n, n)",
            fmt_shape(s)
        )));
    }
    Ok((s[..nd - 2].iter().product(), s[nd - 1]))
}

/// (batch, rows, cols) of a tensor of matrices on the trailing two axes.
fn matrices(op: &str, what: &str, s: &[usize]) -> Result<(usize, usize, usize)> {
    let nd = s.len();
    if nd < 2 {
        return Err(Error::Shape(format!(
            "{op}: input {what} has shape {}, expected at least 2 dimensions (..., rows, cols)",
            fmt_shape(s)
        )));
    }
    Ok((s[..nd - 2].iter().product(), s[nd - 2], s[nd - 1]))
}

fn same_batch(op: &str, a: &[usize], b: &[usize]) -> Result<()> {
    if a.len() != b.len() || a[..a.len() - 2] != b[..b.len() - 2] {
        return Err(Error::Shape(format!(
            "{op}: inputs A {} and B {} must have the same number of dimensions and the same \
             leading (batch) dimensions",
            fmt_shape(a),
            fmt_shape(b)
        )));
    }
    Ok(())
}

/// The shape of a per-matrix scalar result (det, sumlogdiag): the batch
/// axes, or (1,) for a single matrix.
fn batch_shape(s: &[usize]) -> Shape {
    if s.len() == 2 {
        vec![1]
    } else {
        s[..s.len() - 2].to_vec()
    }
}

/// An output shape whose element count (in bytes of float64) fits in
/// memory addressing; an error naming the operator otherwise.
fn checked(op: &str, s: Shape) -> Result<Shape> {
    let n = s
        .iter()
        .try_fold(8usize, |acc, &d| acc.checked_mul(d))
        .filter(|&b| b <= isize::MAX as usize);
    match n {
        Some(_) => Ok(s),
        None => Err(Error::Shape(format!(
            "{op}: the output shape {} is too large",
            fmt_shape(&s)
        ))),
    }
}

// ---------------------------------------------------------------------------
// Data access: factorizations compute in float64.
// ---------------------------------------------------------------------------

fn rd(b: &Blob) -> Vec<f64> {
    match b.dtype {
        DType::F32 => b.data::<f32>().iter().map(|&x| x as f64).collect(),
        _ => b.data::<f64>().to_vec(),
    }
}

fn wr(b: &Blob, v: &[f64]) {
    match b.dtype {
        DType::F32 => {
            for (d, s) in b.data_mut::<f32>().iter_mut().zip(v) {
                *d = *s as f32;
            }
        }
        _ => b.data_mut::<f64>().copy_from_slice(v),
    }
}

// ---------------------------------------------------------------------------
// Dense kernels on one row-major float64 matrix.
// ---------------------------------------------------------------------------

/// `op(a) . op(b)` with op(a) (m x k), op(b) (k x n), through the GEMM helper.
#[allow(clippy::too_many_arguments)]
fn mm(m: usize, k: usize, n: usize, a: &[f64], ta: bool, b: &[f64], tb: bool) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    super::matrix::batched(1, m, k, n, a, ta, b, tb, &mut c);
    c
}

fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j];
        }
    }
    t
}

/// The lower (or upper) triangle of a, diagonal included; zeros elsewhere.
fn tri(a: &[f64], n: usize, lower: bool) -> Vec<f64> {
    let mut t = a.to_vec();
    for i in 0..n {
        for j in 0..n {
            if (lower && j > i) || (!lower && j < i) {
                t[i * n + j] = 0.0;
            }
        }
    }
    t
}

/// Keep the triangle of `a` in place.
fn keep_tri(a: &mut [f64], n: usize, lower: bool) {
    let t = tri(a, n, lower);
    a.copy_from_slice(&t);
}

/// The symmetric matrix with a's lower triangle (MXNet's copyLTU).
fn copy_ltu(a: &mut [f64], n: usize) {
    for i in 0..n {
        for j in i + 1..n {
            a[i * n + j] = a[j * n + i];
        }
    }
}

/// Cholesky factor L (lower) of the symmetric matrix whose lower triangle
/// is `a`; None when it is not positive definite.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        // Written so that a NaN pivot fails too.
        if !(d > 0.0) {
            return None;
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    Some(l)
}

/// Solve op(T) X = B in place, T the `lower` (or upper) triangle of the
/// n x n matrix `a`, op the transpose when `trans`; B is n x m.
fn solve_left(a: &[f64], n: usize, lower: bool, trans: bool, b: &mut [f64], m: usize) {
    let e = |i: usize, k: usize| if trans { a[k * n + i] } else { a[i * n + k] };
    let mut row = vec![0.0; m];
    if lower != trans {
        // op(T) is lower triangular: forward substitution.
        for i in 0..n {
            row.copy_from_slice(&b[i * m..(i + 1) * m]);
            for k in 0..i {
                let f = e(i, k);
                if f != 0.0 {
                    for (r, x) in row.iter_mut().zip(&b[k * m..(k + 1) * m]) {
                        *r -= f * x;
                    }
                }
            }
            let d = e(i, i);
            for (dst, r) in b[i * m..(i + 1) * m].iter_mut().zip(&row) {
                *dst = r / d;
            }
        }
    } else {
        for i in (0..n).rev() {
            row.copy_from_slice(&b[i * m..(i + 1) * m]);
            for k in i + 1..n {
                let f = e(i, k);
                if f != 0.0 {
                    for (r, x) in row.iter_mut().zip(&b[k * m..(k + 1) * m]) {
                        *r -= f * x;
                    }
                }
            }
            let d = e(i, i);
            for (dst, r) in b[i * m..(i + 1) * m].iter_mut().zip(&row) {
                *dst = r / d;
            }
        }
    }
}

/// X with op(T) X = B (B r x c, T c... n x n with n = r) or, with
/// `right`, X op(T) = B (n = c).
#[allow(clippy::too_many_arguments)]
fn solve(
    a: &[f64],
    n: usize,
    lower: bool,
    trans: bool,
    right: bool,
    b: &[f64],
    r: usize,
    c: usize,
) -> Vec<f64> {
    if right {
        // X op(T) = B  <=>  op(T)^T X^T = B^T.
        let mut bt = transpose(b, r, c);
        solve_left(a, n, lower, !trans, &mut bt, r);
        transpose(&bt, c, r)
    } else {
        let mut x = b.to_vec();
        solve_left(a, n, lower, trans, &mut x, c);
        x
    }
}

/// In-place LU factorization with partial pivoting (rows swapped as it
/// goes); returns the permutation's sign and the pivot rows. A zero pivot
/// leaves its column as it is (the matrix is singular).
fn lu(a: &mut [f64], n: usize) -> (f64, Vec<usize>) {
    let mut sign = 1.0;
    let mut piv = vec![0; n];
    for k in 0..n {
        let mut p = k;
        let mut best = a[k * n + k].abs();
        for i in k + 1..n {
            let v = a[i * n + k].abs();
            if v > best {
                best = v;
                p = i;
            }
        }
        piv[k] = p;
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
            sign = -sign;
        }
        let d = a[k * n + k];
        if d == 0.0 {
            continue;
        }
        for i in k + 1..n {
            let f = a[i * n + k] / d;
            a[i * n + k] = f;
            if f != 0.0 {
                for j in k + 1..n {
                    a[i * n + j] -= f * a[k * n + j];
                }
            }
        }
    }
    (sign, piv)
}

/// The inverse of `a`, None when an LU pivot is exactly zero.
fn inverse(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut f = a.to_vec();
    let (_, piv) = lu(&mut f, n);
    if (0..n).any(|i| f[i * n + i] == 0.0) {
        return None;
    }
    // P A = L U: solve L U X = P I.
    let mut x = vec![0.0; n * n];
    for i in 0..n {
        x[i * n + i] = 1.0;
    }
    for (k, &p) in piv.iter().enumerate() {
        if p != k {
            for j in 0..n {
                x.swap(k * n + j, p * n + j);
            }
        }
    }
    // Unit lower L: forward substitution, then upper U.
    for i in 0..n {
        for k in 0..i {
            let l = f[i * n + k];
            if l != 0.0 {
                for j in 0..n {
                    x[i * n + j] -= l * x[k * n + j];
                }
            }
        }
    }
    solve_left(&f, n, false, false, &mut x, n);
    Some(x)
}

/// (sign, log|det|, det) of `a` from its LU factorization; a zero pivot
/// gives sign 0 (signed like MXNet's: the permutation's sign times 0),
/// log|det| = -inf and det = 0.
fn slogdet(a: &[f64], n: usize) -> (f64, f64, f64) {
    // MXNet factorizes the transpose (its row-major data handed to a
    // column-major LAPACK): the same pivots, hence the same signed zeros.
    let mut f = transpose(a, n, n);
    let (mut sign, _) = lu(&mut f, n);
    let mut logabs = 0.0;
    let mut det = sign;
    for i in 0..n {
        let d = f[i * n + i];
        det *= d;
        logabs += d.abs().ln();
        sign *= if d > 0.0 {
            1.0
        } else if d < 0.0 {
            -1.0
        } else {
            0.0
        };
    }
    (sign, logabs, det)
}

/// LQ factorization of an m x n matrix (m <= n) by Householder reflections
/// from the right, LAPACK's conventions (gelqf + orglq): L's diagonal is
/// -sign(alpha) * norm; a row already reduced (zero tail) keeps its value.
/// Returns (Q (m x n), L (m x m)).
fn lq(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut r = a.to_vec();
    let mut vs: Vec<(Vec<f64>, f64)> = Vec::with_capacity(m);
    for i in 0..m {
        let alpha = r[i * n + i];
        let xnorm = r[i * n + i + 1..(i + 1) * n]
            .iter()
            .fold(0.0f64, |s, x| s.hypot(*x));
        let mut v = vec![0.0; n - i];
        v[0] = 1.0;
        if xnorm == 0.0 {
            vs.push((v, 0.0));
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for j in 1..n - i {
            v[j] = r[i * n + i + j] * scale;
        }
        // Row i becomes (beta, 0, ..., 0); the rows below get H applied.
        r[i * n + i] = beta;
        for j in i + 1..n {
            r[i * n + j] = 0.0;
        }
        for row in i + 1..m {
            let x = &mut r[row * n + i..(row + 1) * n];
            let dot: f64 = x.iter().zip(&v).map(|(a, b)| a * b).sum();
            let f = tau * dot;
            for (xj, vj) in x.iter_mut().zip(&v) {
                *xj -= f * vj;
            }
        }
        vs.push((v, tau));
    }
    let mut l = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            l[i * m + j] = r[i * n + j];
        }
    }
    // Q = [I 0] H_{m-1} ... H_0, the reflections applied from the right.
    let mut q = vec![0.0; m * n];
    for i in 0..m {
        q[i * n + i] = 1.0;
    }
    for i in (0..m).rev() {
        let (v, tau) = &vs[i];
        if *tau == 0.0 {
            continue;
        }
        for row in 0..m {
            let x = &mut q[row * n + i..(row + 1) * n];
            let dot: f64 = x.iter().zip(v).map(|(a, b)| a * b).sum();
            let f = tau * dot;
            for (xj, vj) in x.iter_mut().zip(v) {
                *xj -= f * vj;
            }
        }
    }
    (q, l)
}

/// Eigen-decomposition of the symmetric matrix whose lower triangle is `a`:
/// Householder reduction to tridiagonal form, then implicit QL iterations
/// with Wilkinson shifts. Returns (U, w) with the eigenvalues ascending and
/// the eigenvectors as the rows of U, each signed so that its entry of
/// largest magnitude (the first such) is positive (MXNet's convention).
fn syevd(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut s = a.to_vec();
    copy_ltu(&mut s, n);
    // Work on A / max|A| (squares of large entries must not overflow).
    let amax = s.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let unscale = if amax > 0.0 && amax.is_finite() {
        s.iter_mut().for_each(|x| *x /= amax);
        amax
    } else {
        1.0
    };
    let (mut d, mut e, q) = tridiagonalize(s, n);
    // zt: the eigenvectors as rows (contiguous rows for the rotations).
    let mut zt = transpose(&q, n, n);
    tridiagonal_ql(&mut d, &mut e, &mut zt, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| d[i].total_cmp(&d[j]));
    let w: Vec<f64> = order.iter().map(|&i| d[i] * unscale).collect();
    let mut u = vec![0.0; n * n];
    for (r, &col) in order.iter().enumerate() {
        let mut best = 0.0f64;
        let mut sgn = 1.0;
        let vec = &zt[col * n..(col + 1) * n];
        for (k, &x) in vec.iter().enumerate() {
            if k == 0 || x.abs() > best {
                best = x.abs();
                sgn = if x < 0.0 { -1.0 } else { 1.0 };
            }
        }
        for (dst, x) in u[r * n..(r + 1) * n].iter_mut().zip(vec) {
            *dst = sgn * x;
        }
    }
    (u, w)
}

/// Householder reduction of the symmetric `s` (n x n) to a tridiagonal T =
/// Q^T S Q: returns T's diagonal d, its subdiagonal e (e[i] couples i and
/// i + 1; e[n - 1] = 0) and Q (row-major).
fn tridiagonalize(mut s: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        q[i * n + i] = 1.0;
    }
    let mut v = vec![0.0; n];
    let mut w = vec![0.0; n];
    for k in 0..n.saturating_sub(2) {
        let m = n - k - 1;
        let alpha = s[(k + 1) * n + k];
        let xnorm = (k + 2..n).fold(0.0f64, |acc, r| acc.hypot(s[r * n + k]));
        if xnorm == 0.0 {
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        // v = x - beta e1, H = I - tau v v^T maps x to beta e1.
        v[0] = alpha - beta;
        for t in 1..m {
            v[t] = s[(k + 1 + t) * n + k];
        }
        let vtv: f64 = v[..m].iter().map(|x| x * x).sum();
        let tau = 2.0 / vtv;
        // Trailing block B (rows/cols k+1..n): B <- H B H = B - v q^T - q v^T
        // with w = tau B v, q = w - (tau / 2) (v . w) v.
        for r in 0..m {
            let row = &s[(k + 1 + r) * n + k + 1..(k + 2 + r) * n];
            w[r] = tau * row.iter().zip(&v[..m]).map(|(a, b)| a * b).sum::<f64>();
        }
        let kk = 0.5 * tau * v[..m].iter().zip(&w[..m]).map(|(a, b)| a * b).sum::<f64>();
        for r in 0..m {
            w[r] -= kk * v[r];
        }
        for r in 0..m {
            let row = &mut s[(k + 1 + r) * n + k + 1..(k + 2 + r) * n];
            for (c, x) in row.iter_mut().enumerate() {
                *x -= v[r] * w[c] + w[r] * v[c];
            }
        }
        s[(k + 1) * n + k] = beta;
        s[k * n + k + 1] = beta;
        for r in k + 2..n {
            s[r * n + k] = 0.0;
            s[k * n + r] = 0.0;
        }
        // Q <- Q H.
        for r in 0..n {
            let row = &mut q[r * n + k + 1..(r + 1) * n];
            let f = tau * row.iter().zip(&v[..m]).map(|(a, b)| a * b).sum::<f64>();
            for (x, vv) in row.iter_mut().zip(&v[..m]) {
                *x -= f * vv;
            }
        }
    }
    let d: Vec<f64> = (0..n).map(|i| s[i * n + i]).collect();
    let e: Vec<f64> = (0..n)
        .map(|i| if i + 1 < n { s[(i + 1) * n + i] } else { 0.0 })
        .collect();
    (d, e, q)
}

/// Eigenvalues (into d) and eigenvectors (the rows of zt, which holds the
/// transposed tridiagonalizing Q on entry) of the symmetric tridiagonal (d, e), by
/// implicit QL iterations with Wilkinson shifts. Bounded iterations: a
/// matrix with NaNs comes out with NaNs instead of looping.
fn tridiagonal_ql(d: &mut [f64], e: &mut [f64], zt: &mut [f64], n: usize) {
    for l in 0..n {
        for _iter in 0..60 {
            // The first negligible subdiagonal entry at or after l.
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd {
                    break;
                }
                m += 1;
            }
            if m == l {
                break;
            }
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = g.hypot(1.0);
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0f64, 1.0f64, 0.0f64);
            let mut deflated = false;
            for i in (l..m).rev() {
                let f = s * e[i];
                let b = c * e[i];
                r = f.hypot(g);
                e[i + 1] = r;
                if r == 0.0 {
                    // Underflow: the block splits at i + 1.
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    deflated = true;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                let (lo, hi) = zt.split_at_mut((i + 1) * n);
                for (zi, zi1) in lo[i * n..].iter_mut().zip(&mut hi[..n]) {
                    let f = *zi1;
                    *zi1 = s * *zi + c * f;
                    *zi = c * *zi - s * f;
                }
            }
            if deflated {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
}

// ---------------------------------------------------------------------------
// gemm / gemm2.
// ---------------------------------------------------------------------------

/// A tensor seen as `outer x rows x mid x cols`: its matrices have their
/// rows on the row axis and their columns on the last axis.
#[derive(Debug, Clone, Copy)]
struct Lay {
    outer: usize,
    rows: usize,
    mid: usize,
    cols: usize,
}

impl Lay {
    fn new(s: &[usize], axis: usize) -> Lay {
        let n = s.len();
        Lay {
            outer: s[..axis].iter().product(),
            rows: s[axis],
            mid: s[axis + 1..n - 1].iter().product(),
            cols: s[n - 1],
        }
    }
    fn batch(&self) -> usize {
        self.outer * self.mid
    }
}

/// The matrices of `x` one after the other (a copy only when the row axis
/// is not the second to last).
fn gather<T: Copy>(x: &[T], l: Lay) -> Cow<'_, [T]> {
    if l.mid == 1 {
        return Cow::Borrowed(x);
    }
    let mut out = Vec::with_capacity(x.len());
    for o in 0..l.outer {
        for md in 0..l.mid {
            for r in 0..l.rows {
                let base = ((o * l.rows + r) * l.mid + md) * l.cols;
                out.extend_from_slice(&x[base..base + l.cols]);
            }
        }
    }
    Cow::Owned(out)
}

fn scatter<T: Copy>(src: &[T], l: Lay, dst: &mut [T]) {
    if l.mid == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let mut it = 0;
    for o in 0..l.outer {
        for md in 0..l.mid {
            for r in 0..l.rows {
                let base = ((o * l.rows + r) * l.mid + md) * l.cols;
                dst[base..base + l.cols].copy_from_slice(&src[it..it + l.cols]);
                it += l.cols;
            }
        }
    }
}

/// (row axis, M, K, N, output shape) of gemm / gemm2.
fn gemm_dims(
    op: &str,
    a: &[usize],
    b: &[usize],
    p: &LaParam,
) -> Result<(usize, usize, usize, usize, Shape)> {
    let nd = a.len();
    if nd < 2 || b.len() != nd {
        return Err(Error::Shape(format!(
            "{op}: inputs A {} and B {} must have the same number of dimensions, at least 2",
            fmt_shape(a),
            fmt_shape(b)
        )));
    }
    let ax = if p.axis < 0 {
        p.axis + nd as i64
    } else {
        p.axis
    };
    if ax < 0 || ax >= nd as i64 - 1 {
        return Err(Error::Param(format!(
            "{op}: invalid row axis {} for {}-dimensional inputs (it must be in [-{nd}, {}) and \
             not the last axis)",
            p.axis,
            nd,
            nd - 1
        )));
    }
    let ax = ax as usize;
    for i in 0..nd - 1 {
        if i != ax && a[i] != b[i] {
            return Err(Error::Shape(format!(
                "{op}: inputs A {} and B {} must have the same shape except on the row axis {ax} \
                 and the last axis",
                fmt_shape(a),
                fmt_shape(b)
            )));
        }
    }
    let (m, ka) = if p.transpose_a {
        (a[nd - 1], a[ax])
    } else {
        (a[ax], a[nd - 1])
    };
    let (kb, n) = if p.transpose_b {
        (b[nd - 1], b[ax])
    } else {
        (b[ax], b[nd - 1])
    };
    if ka != kb {
        return Err(Error::Shape(format!(
            "{op}: incompatible matrix dimensions for multiplication: A {} and B {} \
             (transpose_a={}, transpose_b={}, axis={}) give {} vs {} on the summed axis",
            fmt_shape(a),
            fmt_shape(b),
            tf(p.transpose_a),
            tf(p.transpose_b),
            p.axis,
            ka,
            kb
        )));
    }
    let mut out = a.to_vec();
    out[ax] = m;
    out[nd - 1] = n;
    Ok((ax, m, ka, n, checked(op, out)?))
}

fn gemm_infer_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = c.p::<LaParam>();
    if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
        let (_, _, _, _, out) = gemm_dims(c.name(), a, b, p)?;
        if ins.len() == 3 {
            if let Some(cs) = &ins[2] {
                if *cs != out {
                    return Err(Error::Shape(format!(
                        "{}: input C has shape {}, expected {} (the shape of op(A) * op(B))",
                        c.name(),
                        fmt_shape(cs),
                        fmt_shape(&out)
                    )));
                }
            }
        }
        outs[0] = Some(out);
    }
    Ok(())
}

fn gemm_typed<T: Elem>(c: &OpCall, i: &[Blob], o: &Blob) -> Result<()> {
    let p = c.p::<LaParam>();
    let (ax, m, k, n, _) = gemm_dims(c.name(), &i[0].shape, &i[1].shape, p)?;
    let la = Lay::new(&i[0].shape, ax);
    let lb = Lay::new(&i[1].shape, ax);
    let lo = Lay::new(&o.shape, ax);
    let a = gather(i[0].data::<T>(), la);
    let b = gather(i[1].data::<T>(), lb);
    let mut d = vec![T::default(); lo.batch() * m * n];
    super::matrix::batched(
        lo.batch(),
        m,
        k,
        n,
        &a,
        p.transpose_a,
        &b,
        p.transpose_b,
        &mut d,
    );
    if i.len() == 3 {
        let cm = gather(i[2].data::<T>(), lo);
        for (x, y) in d.iter_mut().zip(cm.iter()) {
            *x = T::from_f64(p.alpha * x.to_f64() + p.beta * y.to_f64());
        }
    } else if p.alpha != 1.0 {
        for x in d.iter_mut() {
            *x = T::from_f64(p.alpha * x.to_f64());
        }
    }
    scatter(&d, lo, o.data_mut::<T>());
    Ok(())
}

fn gemm_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    match o[0].dtype {
        DType::F32 => gemm_typed::<f32>(c, i, &o[0]),
        _ => gemm_typed::<f64>(c, i, &o[0]),
    }
}

/// dA, dB of alpha * op(A) op(B), as gemm2 products with the same axis.
fn gemm_grads(c: &OpCall, b: B, x: &[Entry], g: Entry) -> Result<(Entry, Entry)> {
    let p = *c.p::<LaParam>();
    let axis = p.axis.to_string();
    let alpha = fmt_f64(p.alpha);
    let mut mk = |x: Entry, y: Entry, t1: bool, t2: bool| {
        b.op1(
            "_linalg_gemm2",
            &[
                ("transpose_a", tf(t1)),
                ("transpose_b", tf(t2)),
                ("alpha", alpha.clone()),
                ("axis", axis.clone()),
            ],
            &[x, y],
        )
    };
    let (a2, b2) = (x[0], x[1]);
    Ok(match (p.transpose_a, p.transpose_b) {
        (false, false) => (mk(g, b2, false, true)?, mk(a2, g, true, false)?),
        (true, false) => (mk(b2, g, false, true)?, mk(a2, g, false, false)?),
        (false, true) => (mk(g, b2, false, false)?, mk(g, a2, true, false)?),
        (true, true) => (mk(b2, g, true, true)?, mk(g, a2, true, true)?),
    })
}

pub static GEMM: OpDef = OpDef {
    name: "_linalg_gemm",
    aliases: &["linalg_gemm"],
    doc: "General matrix multiplication and accumulation: out = alpha * op(A) * op(B) + beta * C, \
          op() the identity or the transpose (transpose_a, transpose_b). Inputs of n >= 2 \
          dimensions are batches of matrices with columns on the last axis and rows on `axis` \
          (default -2); float32 and float64 only. Returns an array shaped like C.",
    inputs: &["A", "B", "C"],
    parse: |a| parse_gemm(a, "_linalg_gemm"),
    infer_shape: gemm_infer_shape,
    infer_type: infer_type_la,
    cpu: Some(gemm_kernel),
    grad: Some(|c, b, x, _, g| {
        let (ga, gb) = gemm_grads(c, b, x, g[0])?;
        let beta = c.p::<LaParam>().beta;
        let gc = b.op1("_mul_scalar", &[("scalar", fmt_f64(beta))], &[g[0]])?;
        Ok(vec![Some(ga), Some(gb), Some(gc)])
    }),
    ..OpDef::BASE
};

pub static GEMM2: OpDef = OpDef {
    name: "_linalg_gemm2",
    aliases: &["linalg_gemm2"],
    doc: "General matrix multiplication: out = alpha * op(A) * op(B), op() the identity or the \
          transpose (transpose_a, transpose_b). Inputs of n >= 2 dimensions are batches of \
          matrices with columns on the last axis and rows on `axis` (default -2); float32 and \
          float64 only. Returns the batch of products.",
    inputs: &["A", "B"],
    parse: |a| parse_gemm(a, "_linalg_gemm2"),
    infer_shape: gemm_infer_shape,
    infer_type: infer_type_la,
    cpu: Some(gemm_kernel),
    grad: Some(|c, b, x, _, g| {
        let (ga, gb) = gemm_grads(c, b, x, g[0])?;
        Ok(vec![Some(ga), Some(gb)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Per-matrix operators: a small driver.
// ---------------------------------------------------------------------------

/// Batches with at least this many input elements in all run their
/// matrices in parallel on the kernel pool.
const PAR_ELEMS: usize = 1 << 14;

/// Run `f(batch index, inputs' matrices) -> outputs' matrices` over the
/// batch, reading every input and writing every output in float64; large
/// batches in parallel. The first failing matrix (in batch order) decides
/// the error.
fn per_matrix<F>(i: &[Blob], o: &[Blob], batch: usize, f: F) -> Result<()>
where
    F: Fn(usize, &[&[f64]]) -> Result<Vec<Vec<f64>>> + Sync,
{
    let ins: Vec<Vec<f64>> = i.iter().map(rd).collect();
    let mut outs: Vec<Vec<f64>> = o.iter().map(|b| vec![0.0; b.size()]).collect();
    if batch > 0 {
        let isz: Vec<usize> = ins.iter().map(|v| v.len() / batch).collect();
        let osz: Vec<usize> = outs.iter().map(|v| v.len() / batch).collect();
        let one = |k: usize| {
            let views: Vec<&[f64]> = ins
                .iter()
                .zip(&isz)
                .map(|(v, &s)| &v[k * s..(k + 1) * s])
                .collect();
            f(k, &views)
        };
        let total: usize = ins.iter().map(|v| v.len()).sum();
        let results: Vec<Result<Vec<Vec<f64>>>> =
            if batch > 1 && total >= PAR_ELEMS && crate::par::num_threads() > 1 {
                crate::par::par_map(batch, one)
            } else {
                (0..batch).map(one).collect()
            };
        for (k, res) in results.into_iter().enumerate() {
            for ((dst, &s), r) in outs.iter_mut().zip(&osz).zip(res?) {
                dst[k * s..(k + 1) * s].copy_from_slice(&r);
            }
        }
    }
    for (b, v) in o.iter().zip(&outs) {
        wr(b, v);
    }
    Ok(())
}

fn same_shape_square(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(a) = &ins[0] {
        square(c.name(), "A", a)?;
        outs[0] = Some(a.clone());
    }
    Ok(())
}

/// A backward operator's outputs: shaped like the forward inputs listed.
fn backward_shapes(
    outs: &mut [Option<Shape>],
    ins: &[Option<Shape>],
    from: &[usize],
) -> Result<()> {
    for (o, &k) in outs.iter_mut().zip(from) {
        if let Some(s) = &ins[k] {
            *o = Some(s.clone());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// potrf / potri.
// ---------------------------------------------------------------------------

fn potrf_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let lower = c.p::<LaParam>().lower;
    let (batch, n) = square(c.name(), "A", &i[0].shape)?;
    per_matrix(i, o, batch, |k, m| {
        // The upper factor of A is the transpose of the lower factor of A^T.
        let a = if lower {
            m[0].to_vec()
        } else {
            transpose(m[0], n, n)
        };
        let l = cholesky(&a, n).ok_or_else(|| {
            Error::Param(format!(
                "_linalg_potrf: matrix {k} of the batch is not positive definite (Cholesky \
                 factorization failed); the input must be symmetric positive definite"
            ))
        })?;
        Ok(vec![if lower { l } else { transpose(&l, n, n) }])
    })
}

/// dA = 0.5 * L^-T copyLTU(L^T dL) L^-1 (symmetric), for L lower; the upper
/// case works on the transposes.
fn potrf_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let lower = c.p::<LaParam>().lower;
    let (batch, n) = square(c.name(), "A", &i[1].shape)?;
    per_matrix(i, o, batch, |_, m| {
        let (g, l) = if lower {
            (m[0].to_vec(), m[1].to_vec())
        } else {
            (transpose(m[0], n, n), transpose(m[1], n, n))
        };
        let mut t = mm(n, n, n, &l, true, &g, false);
        copy_ltu(&mut t, n);
        // L^-T t, then (.) L^-1, times 0.5.
        let t = solve(&l, n, true, true, false, &t, n, n);
        let mut t = solve(&l, n, true, false, true, &t, n, n);
        t.iter_mut().for_each(|x| *x *= 0.5);
        Ok(vec![t])
    })
}

fn potri_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let lower = c.p::<LaParam>().lower;
    let (batch, n) = square(c.name(), "A", &i[0].shape)?;
    per_matrix(i, o, batch, |k, m| {
        let t = tri(m[0], n, lower);
        if (0..n).any(|j| t[j * n + j] == 0.0) {
            return Err(Error::Param(format!(
                "_linalg_potri: matrix {k} of the batch has a zero on its diagonal; the input must \
                 be a Cholesky factor (as returned by potrf)"
            )));
        }
        let mut id = vec![0.0; n * n];
        for j in 0..n {
            id[j * n + j] = 1.0;
        }
        // T^-1, then A^-T A^-1 (lower) or A^-1 A^-T (upper).
        let ti = solve(&t, n, lower, false, false, &id, n, n);
        Ok(vec![if lower {
            mm(n, n, n, &ti, true, &ti, false)
        } else {
            mm(n, n, n, &ti, false, &ti, true)
        }])
    })
}

/// out = (L L^T)^-1: dL = -tril((H + H^T) L), H = out dOut out; the upper
/// case: dU = -triu(U (H + H^T)).
fn potri_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let lower = c.p::<LaParam>().lower;
    let (batch, n) = square(c.name(), "A", &i[1].shape)?;
    per_matrix(i, o, batch, |_, m| {
        let (g, a, out) = (m[0], tri(m[1], n, lower), m[2]);
        let h = mm(
            n,
            n,
            n,
            out,
            false,
            &mm(n, n, n, g, false, out, false),
            false,
        );
        let mut s = h.clone();
        for r in 0..n {
            for q in 0..n {
                s[r * n + q] += h[q * n + r];
            }
        }
        let mut d = if lower {
            mm(n, n, n, &s, false, &a, false)
        } else {
            mm(n, n, n, &a, false, &s, false)
        };
        d.iter_mut().for_each(|x| *x = -*x);
        keep_tri(&mut d, n, lower);
        Ok(vec![d])
    })
}

pub static POTRF: OpDef = OpDef {
    name: "_linalg_potrf",
    aliases: &["linalg_potrf"],
    doc: "Cholesky factorization of symmetric positive-definite matrices: returns B with \
          A = B * B^T and B lower triangular (lower=True, the default; only A's lower triangle \
          is read), or A = B^T * B and B upper triangular (lower=False; A's upper triangle). \
          Batched over the leading axes; float32 and float64 only. A matrix that is not \
          positive definite raises an error.",
    inputs: &["A"],
    parse: |a| parse_lower(a, "_linalg_potrf"),
    infer_shape: same_shape_square,
    infer_type: infer_type_la,
    cpu: Some(potrf_kernel),
    grad: Some(|c, b, _, y, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_potrf",
            &fwd_attrs(c),
            &[g[0], y[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_POTRF: OpDef = OpDef {
    name: "_backward_linalg_potrf",
    doc: "Gradient of potrf: from (dB, B) the symmetric gradient 0.5 * B^-T copyLTU(B^T dB) B^-1.",
    inputs: &["ograd", "B"],
    parse: |a| parse_lower(a, "_backward_linalg_potrf"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(potrf_backward),
    ..OpDef::BASE
};

pub static POTRI: OpDef = OpDef {
    name: "_linalg_potri",
    aliases: &["linalg_potri"],
    doc: "Inverse of a symmetric positive-definite matrix from its Cholesky factor A (as \
          returned by potrf): out = A^-T * A^-1 (lower=True, the default; A's lower triangle is \
          read) or A^-1 * A^-T (lower=False). Batched over the leading axes; float32 and float64 \
          only. A zero on A's diagonal raises an error.",
    inputs: &["A"],
    parse: |a| parse_lower(a, "_linalg_potri"),
    infer_shape: same_shape_square,
    infer_type: infer_type_la,
    cpu: Some(potri_kernel),
    grad: Some(|c, b, x, y, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_potri",
            &fwd_attrs(c),
            &[g[0], x[0], y[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_POTRI: OpDef = OpDef {
    name: "_backward_linalg_potri",
    doc: "Gradient of potri: from (dOut, A, out) the gradient on A's triangle.",
    inputs: &["ograd", "A", "out"],
    parse: |a| parse_lower(a, "_backward_linalg_potri"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(potri_backward),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// trsm / trmm.
// ---------------------------------------------------------------------------

/// (batch, n, rows of B, cols of B) of trsm / trmm.
fn tri_dims(
    op: &str,
    a: &[usize],
    b: &[usize],
    p: &LaParam,
) -> Result<(usize, usize, usize, usize)> {
    let (batch, n) = square(op, "A", a)?;
    let (_, r, c) = matrices(op, "B", b)?;
    same_batch(op, a, b)?;
    let k = if p.rightside { c } else { r };
    if k != n {
        return Err(Error::Shape(format!(
            "{op}: incompatible matrix dimensions: triangular A {} and B {} (rightside={}: B's {} \
             must be {n})",
            fmt_shape(a),
            fmt_shape(b),
            tf(p.rightside),
            if p.rightside { "columns" } else { "rows" }
        )));
    }
    Ok((batch, n, r, c))
}

fn tri_infer_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
        tri_dims(c.name(), a, b, c.p::<LaParam>())?;
        outs[0] = Some(b.clone());
    }
    Ok(())
}

fn trsm_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, n, r, cc) = tri_dims(c.name(), &i[0].shape, &i[1].shape, &p)?;
    per_matrix(i, o, batch, |_, m| {
        let mut x = solve(m[0], n, p.lower, p.transpose, p.rightside, m[1], r, cc);
        x.iter_mut().for_each(|v| *v *= p.alpha);
        Ok(vec![x])
    })
}

/// The gradient on T from the gradient on E = op(T), kept on T's triangle.
fn to_tri(de: Vec<f64>, n: usize, p: &LaParam) -> Vec<f64> {
    let mut d = if p.transpose {
        transpose(&de, n, n)
    } else {
        de
    };
    keep_tri(&mut d, n, p.lower);
    d
}

/// out = alpha op(T)^-1 B (left) or alpha B op(T)^-1 (right), E = op(T):
/// Y = E^-T dOut (left) or dOut E^-T (right); dB = alpha Y,
/// dE = -Y out^T (left) or -out^T Y (right).
fn trsm_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, n, r, cc) = tri_dims(c.name(), &i[1].shape, &i[2].shape, &p)?;
    per_matrix(i, o, batch, |_, m| {
        let (g, a, out) = (m[0], m[1], m[3]);
        let y = solve(a, n, p.lower, !p.transpose, p.rightside, g, r, cc);
        let mut de = if p.rightside {
            mm(n, r, n, out, true, &y, false)
        } else {
            mm(n, cc, n, &y, false, out, true)
        };
        de.iter_mut().for_each(|v| *v = -*v);
        let db: Vec<f64> = y.iter().map(|v| v * p.alpha).collect();
        Ok(vec![to_tri(de, n, &p), db])
    })
}

fn trmm_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, n, r, cc) = tri_dims(c.name(), &i[0].shape, &i[1].shape, &p)?;
    per_matrix(i, o, batch, |_, m| {
        let t = tri(m[0], n, p.lower);
        let mut x = if p.rightside {
            mm(r, n, n, m[1], false, &t, p.transpose)
        } else {
            mm(n, n, cc, &t, p.transpose, m[1], false)
        };
        x.iter_mut().for_each(|v| *v *= p.alpha);
        Ok(vec![x])
    })
}

/// out = alpha E B (left) or alpha B E (right), E = op(T):
/// dB = alpha E^T dOut / alpha dOut E^T, dE = alpha dOut B^T / alpha B^T dOut.
fn trmm_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, n, r, cc) = tri_dims(c.name(), &i[1].shape, &i[2].shape, &p)?;
    per_matrix(i, o, batch, |_, m| {
        let (g, bm) = (m[0], m[2]);
        let t = tri(m[1], n, p.lower);
        let (mut de, mut db) = if p.rightside {
            (
                mm(n, r, n, bm, true, g, false),
                mm(r, n, n, g, false, &t, !p.transpose),
            )
        } else {
            (
                mm(n, cc, n, g, false, bm, true),
                mm(n, n, cc, &t, !p.transpose, g, false),
            )
        };
        de.iter_mut().for_each(|v| *v *= p.alpha);
        db.iter_mut().for_each(|v| *v *= p.alpha);
        Ok(vec![to_tri(de, n, &p), db])
    })
}

pub static TRSM: OpDef = OpDef {
    name: "_linalg_trsm",
    aliases: &["linalg_trsm"],
    doc: "Solves a triangular system: returns out with op(A) * out = alpha * B (rightside=False) \
          or out * op(A) = alpha * B (rightside=True); A is read as lower (lower=True, the \
          default) or upper triangular and op() is the transpose when transpose=True. Batched \
          over the leading axes; float32 and float64 only.",
    inputs: &["A", "B"],
    parse: |a| parse_tri(a, "_linalg_trsm"),
    infer_shape: tri_infer_shape,
    infer_type: infer_type_la,
    cpu: Some(trsm_kernel),
    grad: Some(|c, b, x, y, g| {
        let r = b.op(
            "_backward_linalg_trsm",
            &fwd_attrs(c),
            &[g[0], x[0], x[1], y[0]],
        )?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_TRSM: OpDef = OpDef {
    name: "_backward_linalg_trsm",
    doc: "Gradient of trsm: from (dOut, A, B, out) the gradients on A's triangle and on B.",
    inputs: &["ograd", "A", "B", "out"],
    num_outputs: |_| 2,
    parse: |a| parse_tri(a, "_backward_linalg_trsm"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1, 2]),
    infer_type: infer_type_la,
    cpu: Some(trsm_backward),
    ..OpDef::BASE
};

pub static TRMM: OpDef = OpDef {
    name: "_linalg_trmm",
    aliases: &["linalg_trmm"],
    doc: "Triangular matrix multiplication: out = alpha * op(A) * B (rightside=False) or \
          alpha * B * op(A) (rightside=True); only A's lower (lower=True, the default) or upper \
          triangle is used and op() is the transpose when transpose=True. Batched over the \
          leading axes; float32 and float64 only.",
    inputs: &["A", "B"],
    parse: |a| parse_tri(a, "_linalg_trmm"),
    infer_shape: tri_infer_shape,
    infer_type: infer_type_la,
    cpu: Some(trmm_kernel),
    grad: Some(|c, b, x, _, g| {
        let r = b.op("_backward_linalg_trmm", &fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_TRMM: OpDef = OpDef {
    name: "_backward_linalg_trmm",
    doc: "Gradient of trmm: from (dOut, A, B) the gradients on A's triangle and on B.",
    inputs: &["ograd", "A", "B"],
    num_outputs: |_| 2,
    parse: |a| parse_tri(a, "_backward_linalg_trmm"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1, 2]),
    infer_type: infer_type_la,
    cpu: Some(trmm_backward),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// syrk, sumlogdiag.
// ---------------------------------------------------------------------------

fn syrk_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, r, cc) = matrices(c.name(), "A", &i[0].shape)?;
    per_matrix(i, o, batch, |_, m| {
        let mut x = if p.transpose {
            mm(cc, r, cc, m[0], true, m[0], false)
        } else {
            mm(r, cc, r, m[0], false, m[0], true)
        };
        x.iter_mut().for_each(|v| *v *= p.alpha);
        Ok(vec![x])
    })
}

/// dA = alpha (dOut + dOut^T) A, or alpha A (dOut + dOut^T) with transpose.
fn syrk_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = *c.p::<LaParam>();
    let (batch, r, cc) = matrices(c.name(), "A", &i[1].shape)?;
    let k = if p.transpose { cc } else { r };
    per_matrix(i, o, batch, |_, m| {
        let mut s = m[0].to_vec();
        for a in 0..k {
            for b in 0..k {
                s[a * k + b] += m[0][b * k + a];
            }
        }
        let mut d = if p.transpose {
            mm(r, cc, cc, m[1], false, &s, false)
        } else {
            mm(r, r, cc, &s, false, m[1], false)
        };
        d.iter_mut().for_each(|v| *v *= p.alpha);
        Ok(vec![d])
    })
}

pub static SYRK: OpDef = OpDef {
    name: "_linalg_syrk",
    aliases: &["linalg_syrk"],
    doc: "Multiplication of a matrix with its transpose: out = alpha * A * A^T \
          (transpose=False, the default) or alpha * A^T * A (transpose=True). Batched over the \
          leading axes; float32 and float64 only.",
    inputs: &["A"],
    parse: |a| parse_syrk(a, "_linalg_syrk"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            let (_, r, cc) = matrices(c.name(), "A", a)?;
            let k = if c.p::<LaParam>().transpose { cc } else { r };
            let mut s = a.clone();
            let nd = s.len();
            s[nd - 2] = k;
            s[nd - 1] = k;
            outs[0] = Some(checked(c.name(), s)?);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(syrk_kernel),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_syrk",
            &fwd_attrs(c),
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SYRK: OpDef = OpDef {
    name: "_backward_linalg_syrk",
    doc: "Gradient of syrk: from (dOut, A) the gradient on A.",
    inputs: &["ograd", "A"],
    parse: |a| parse_syrk(a, "_backward_linalg_syrk"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(syrk_backward),
    ..OpDef::BASE
};

fn scalar_per_matrix(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(a) = &ins[0] {
        square(c.name(), "A", a)?;
        let s = batch_shape(a);
        for o in outs.iter_mut() {
            *o = Some(s.clone());
        }
    }
    Ok(())
}

pub static SUMLOGDIAG: OpDef = OpDef {
    name: "_linalg_sumlogdiag",
    aliases: &["linalg_sumlogdiag"],
    doc: "Sum of the natural logarithms of the diagonal of square matrices: shape (1,) for one \
          matrix, the batch axes for a batch. Float32 and float64 only.",
    inputs: &["A"],
    parse: |a| parse_none(a, "_linalg_sumlogdiag"),
    infer_shape: scalar_per_matrix,
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        per_matrix(i, o, batch, |_, m| {
            Ok(vec![vec![(0..n).map(|j| m[0][j * n + j].ln()).sum()]])
        })
    }),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_sumlogdiag",
            &fwd_attrs(c),
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SUMLOGDIAG: OpDef = OpDef {
    name: "_backward_linalg_sumlogdiag",
    doc: "Gradient of sumlogdiag: dOut / A[i, i] on the diagonal, zero elsewhere.",
    inputs: &["ograd", "A"],
    parse: |a| parse_none(a, "_backward_linalg_sumlogdiag"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[1].shape)?;
        per_matrix(i, o, batch, |_, m| {
            let mut d = vec![0.0; n * n];
            for j in 0..n {
                d[j * n + j] = m[0][0] / m[1][j * n + j];
            }
            Ok(vec![d])
        })
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Diagonals and triangles.
// ---------------------------------------------------------------------------

/// (row, col) of the triangle extracttrian / maketrian use: the lower one
/// (row by row) when offset < 0 or (offset == 0 and lower), else the upper
/// one (column by column, MXNet's order), bounded by the offset-th diagonal.
fn trian_idx(n: usize, offset: i64, lower: bool) -> Vec<(usize, usize)> {
    let use_lower = offset < 0 || (offset == 0 && lower);
    let mut v = Vec::new();
    for a in 0..n {
        for b in 0..n {
            if use_lower {
                let (i, j) = (a, b);
                if j as i64 <= i as i64 + offset {
                    v.push((i, j));
                }
            } else {
                let (i, j) = (b, a);
                if j as i64 >= i as i64 + offset {
                    v.push((i, j));
                }
            }
        }
    }
    v
}

/// n - |offset| for extraction from n x n matrices; an error unless > 0.
fn extract_len(op: &str, a: &[usize], offset: i64) -> Result<usize> {
    let (_, n) = square(op, "A", a)?;
    let m = n as i64 - offset.abs();
    if m <= 0 {
        return Err(Error::Param(format!(
            "{op}: offset {offset} is out of range for matrices of shape {} (|offset| must be < {n})",
            fmt_shape(&a[a.len() - 2..])
        )));
    }
    Ok(m as usize)
}

fn diag_pos(i: usize, offset: i64) -> (usize, usize) {
    if offset >= 0 {
        (i, i + offset as usize)
    } else {
        (i + offset.unsigned_abs() as usize, i)
    }
}

fn offset_attrs(c: &OpCall) -> Vec<(&'static str, String)> {
    let p = c.p::<LaParam>();
    vec![("offset", p.offset.to_string()), ("lower", tf(p.lower))]
}

pub static EXTRACTDIAG: OpDef = OpDef {
    name: "_linalg_extractdiag",
    aliases: &["linalg_extractdiag"],
    doc: "Extracts the diagonal of square matrices (offset > 0: a diagonal above the main one, \
          < 0: below) as an array with one axis less. Batched over the leading axes; float32 \
          and float64 only.",
    inputs: &["A"],
    parse: |a| parse_offset(a, "_linalg_extractdiag"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            let m = extract_len(c.name(), a, c.p::<LaParam>().offset)?;
            let mut s = a[..a.len() - 2].to_vec();
            s.push(m);
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let off = c.p::<LaParam>().offset;
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        let m = extract_len(c.name(), &i[0].shape, off)?;
        per_matrix(i, o, batch, |_, a| {
            Ok(vec![(0..m)
                .map(|k| {
                    let (r, q) = diag_pos(k, off);
                    a[0][r * n + q]
                })
                .collect()])
        })
    }),
    grad: Some(|c, b, _, _, g| {
        let attrs = vec![("offset", c.p::<LaParam>().offset.to_string())];
        Ok(vec![Some(b.op1("_linalg_makediag", &attrs, &[g[0]])?)])
    }),
    ..OpDef::BASE
};

pub static MAKEDIAG: OpDef = OpDef {
    name: "_linalg_makediag",
    aliases: &["linalg_makediag"],
    doc: "Square matrices with the input's last axis as their diagonal (offset > 0: a diagonal \
          above the main one, < 0: below), zeros elsewhere; one axis more than the input. \
          Float32 and float64 only.",
    inputs: &["A"],
    parse: |a| parse_offset(a, "_linalg_makediag"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            if a.is_empty() {
                return Err(Error::Shape(format!(
                    "{}: input A must have at least one dimension, got shape {}",
                    c.name(),
                    fmt_shape(a)
                )));
            }
            let n = a[a.len() - 1].saturating_add(c.p::<LaParam>().offset.unsigned_abs() as usize);
            let mut s = a[..a.len() - 1].to_vec();
            s.push(n);
            s.push(n);
            outs[0] = Some(checked(c.name(), s)?);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let off = c.p::<LaParam>().offset;
        let s = &i[0].shape;
        let m = s[s.len() - 1];
        let batch: usize = s[..s.len() - 1].iter().product();
        let n = m + off.unsigned_abs() as usize;
        per_matrix(i, o, batch, |_, a| {
            let mut d = vec![0.0; n * n];
            for (k, v) in a[0].iter().enumerate() {
                let (r, q) = diag_pos(k, off);
                d[r * n + q] = *v;
            }
            Ok(vec![d])
        })
    }),
    grad: Some(|c, b, _, _, g| {
        let attrs = vec![("offset", c.p::<LaParam>().offset.to_string())];
        Ok(vec![Some(b.op1("_linalg_extractdiag", &attrs, &[g[0]])?)])
    }),
    ..OpDef::BASE
};

pub static EXTRACTTRIAN: OpDef = OpDef {
    name: "_linalg_extracttrian",
    aliases: &["linalg_extracttrian"],
    doc: "Extracts a triangle of square matrices as a flat array: the lower (offset = 0 and \
          lower=True, or offset < 0; row by row) or upper triangle (column by column) bounded by \
          the offset-th diagonal. Batched over the leading axes (one axis less in the result); float32 and \
          float64 only.",
    inputs: &["A"],
    parse: |a| parse_offset(a, "_linalg_extracttrian"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            let m = extract_len(c.name(), a, c.p::<LaParam>().offset)?;
            let mut s = a[..a.len() - 2].to_vec();
            s.push(m * (m + 1) / 2);
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let p = *c.p::<LaParam>();
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        extract_len(c.name(), &i[0].shape, p.offset)?;
        let idx = trian_idx(n, p.offset, p.lower);
        per_matrix(i, o, batch, |_, a| {
            Ok(vec![idx.iter().map(|&(r, q)| a[0][r * n + q]).collect()])
        })
    }),
    grad: Some(|c, b, _, _, g| {
        Ok(vec![Some(b.op1("_linalg_maketrian", &offset_attrs(c), &[g[0]])?)])
    }),
    ..OpDef::BASE
};

/// m with m (m + 1) / 2 == len.
fn trian_side(op: &str, a: &[usize]) -> Result<usize> {
    let len = a[a.len() - 1];
    let m = (((8 * len + 1) as f64).sqrt() as usize).saturating_sub(1) / 2;
    let m = (m.saturating_sub(1)..=m + 1)
        .find(|&m| m * (m + 1) / 2 == len)
        .ok_or_else(|| {
            Error::Shape(format!(
                "{op}: the last axis of A {} has length {len}, which is not a triangular number \
                 m * (m + 1) / 2",
                fmt_shape(a)
            ))
        })?;
    Ok(m)
}

pub static MAKETRIAN: OpDef = OpDef {
    name: "_linalg_maketrian",
    aliases: &["linalg_maketrian"],
    doc: "Square matrices from flat triangles (the inverse of extracttrian): the last axis, of \
          length m * (m + 1) / 2, fills the lower (row by row; offset = 0 and lower=True, or \
          offset < 0) or upper triangle (column by column) of an (m + |offset|) x (m + |offset|) matrix, zeros \
          elsewhere. Float32 and float64 only.",
    inputs: &["A"],
    parse: |a| parse_offset(a, "_linalg_maketrian"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            if a.is_empty() {
                return Err(Error::Shape(format!(
                    "{}: input A must have at least one dimension, got shape {}",
                    c.name(),
                    fmt_shape(a)
                )));
            }
            let m = trian_side(c.name(), a)?;
            let n = m.saturating_add(c.p::<LaParam>().offset.unsigned_abs() as usize);
            let mut s = a[..a.len() - 1].to_vec();
            s.push(n);
            s.push(n);
            outs[0] = Some(checked(c.name(), s)?);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let p = *c.p::<LaParam>();
        let s = &i[0].shape;
        let m = trian_side(c.name(), s)?;
        let batch: usize = s[..s.len() - 1].iter().product();
        let n = m + p.offset.unsigned_abs() as usize;
        let idx = trian_idx(n, p.offset, p.lower);
        per_matrix(i, o, batch, |_, a| {
            let mut d = vec![0.0; n * n];
            for (&(r, q), v) in idx.iter().zip(a[0]) {
                d[r * n + q] = *v;
            }
            Ok(vec![d])
        })
    }),
    grad: Some(|c, b, _, _, g| {
        Ok(vec![Some(b.op1("_linalg_extracttrian", &offset_attrs(c), &[g[0]])?)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// inverse, det, slogdet.
// ---------------------------------------------------------------------------

pub static INVERSE: OpDef = OpDef {
    name: "_linalg_inverse",
    aliases: &["linalg_inverse"],
    doc: "Inverse of square matrices (LU factorization with partial pivoting), batched over the \
          leading axes; float32 and float64 only. A singular matrix raises an error.",
    inputs: &["A"],
    parse: |a| parse_none(a, "_linalg_inverse"),
    infer_shape: same_shape_square,
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        per_matrix(i, o, batch, |k, m| {
            Ok(vec![inverse(m[0], n).ok_or_else(|| {
                Error::Param(format!(
                    "_linalg_inverse: matrix {k} of the batch is singular (not invertible)"
                ))
            })?])
        })
    }),
    // dA = -out^T dOut out^T.
    grad: Some(|_, b, _, y, g| {
        let t = b.op1("_linalg_gemm2", &[("transpose_a", tf(true))], &[y[0], g[0]])?;
        let d = b.op1(
            "_linalg_gemm2",
            &[("transpose_b", tf(true)), ("alpha", "-1.0".into())],
            &[t, y[0]],
        )?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

/// dA = dOut * scale * A^-T, zero for a singular A (like MXNet).
fn det_like_backward(i: &[Blob], o: &[Blob], batch: usize, n: usize, use_det: bool) -> Result<()> {
    per_matrix(i, o, batch, |_, m| {
        let s = if use_det { m[0][0] * m[2][0] } else { m[0][0] };
        Ok(vec![match inverse(m[1], n) {
            Some(inv) => {
                let mut d = transpose(&inv, n, n);
                d.iter_mut().for_each(|v| *v *= s);
                d
            }
            None => vec![0.0; n * n],
        }])
    })
}

pub static DET: OpDef = OpDef {
    name: "_linalg_det",
    aliases: &["linalg_det"],
    doc: "Determinant of square matrices (LU factorization with partial pivoting): shape (1,) \
          for one matrix, the batch axes for a batch; float32 and float64 only. The gradient is \
          dOut * det(A) * A^-T, and zero where A is singular.",
    inputs: &["A"],
    parse: |a| parse_none(a, "_linalg_det"),
    infer_shape: scalar_per_matrix,
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        per_matrix(i, o, batch, |_, m| Ok(vec![vec![slogdet(m[0], n).2]]))
    }),
    grad: Some(|c, b, x, y, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_det",
            &fwd_attrs(c),
            &[g[0], x[0], y[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_DET: OpDef = OpDef {
    name: "_backward_linalg_det",
    doc: "Gradient of det: from (dOut, A, det) the gradient dOut * det * A^-T (zero for a \
          singular A).",
    inputs: &["ograd", "A", "det"],
    parse: |a| parse_none(a, "_backward_linalg_det"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[1].shape)?;
        det_like_backward(i, o, batch, n, true)
    }),
    ..OpDef::BASE
};

pub static SLOGDET: OpDef = OpDef {
    name: "_linalg_slogdet",
    aliases: &["linalg_slogdet"],
    doc: "Sign and natural log of the absolute value of the determinant of square matrices: \
          returns (sign, logabsdet), each of shape (1,) for one matrix or the batch axes; a \
          singular matrix gives sign 0 and logabsdet -inf. Float32 and float64 only. Only \
          logabsdet has a gradient (dOut * A^-T, zero for a singular A).",
    inputs: &["A"],
    num_outputs: |_| 2,
    parse: |a| parse_none(a, "_linalg_slogdet"),
    infer_shape: scalar_per_matrix,
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        per_matrix(i, o, batch, |_, m| {
            let (s, l, _) = slogdet(m[0], n);
            Ok(vec![vec![s], vec![l]])
        })
    }),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_slogdet",
            &fwd_attrs(c),
            &[g[1], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SLOGDET: OpDef = OpDef {
    name: "_backward_linalg_slogdet",
    doc: "Gradient of slogdet: from (dLogabsdet, A) the gradient dLogabsdet * A^-T (zero for a \
          singular A).",
    inputs: &["ograd", "A"],
    parse: |a| parse_none(a, "_backward_linalg_slogdet"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[1]),
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[1].shape)?;
        det_like_backward(i, o, batch, n, false)
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// gelqf, syevd.
// ---------------------------------------------------------------------------

fn gelqf_dims(op: &str, a: &[usize]) -> Result<(usize, usize, usize)> {
    let (batch, m, n) = matrices(op, "A", a)?;
    if m > n {
        return Err(Error::Shape(format!(
            "{op}: input A {} must have no more rows than columns (x <= y for matrices (x, y))",
            fmt_shape(a)
        )));
    }
    Ok((batch, m, n))
}

/// dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T.
fn gelqf_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (batch, m, n) = gelqf_dims(c.name(), &i[2].shape)?;
    per_matrix(i, o, batch, |_, v| {
        let (dq, dl, q, l) = (v[0], v[1], v[2], v[3]);
        let mut mm_ = mm(m, m, m, l, true, dl, false);
        let t = mm(m, n, m, dq, false, q, true);
        for (x, y) in mm_.iter_mut().zip(&t) {
            *x -= y;
        }
        copy_ltu(&mut mm_, m);
        let mut x = mm(m, m, n, &mm_, false, q, false);
        for (a, b) in x.iter_mut().zip(dq) {
            *a += b;
        }
        Ok(vec![solve(l, m, true, true, false, &x, m, n)])
    })
}

pub static GELQF: OpDef = OpDef {
    name: "_linalg_gelqf",
    aliases: &["linalg_gelqf"],
    doc: "LQ factorization (Householder reflections, LAPACK's gelqf + orglq conventions) of \
          matrices A of shape (x, y) with x <= y: returns (Q, L) with A = L * Q, Q of shape \
          (x, y) with orthonormal rows and L of shape (x, x) lower triangular. Batched over the \
          leading axes; float32 and float64 only.",
    inputs: &["A"],
    num_outputs: |_| 2,
    parse: |a| parse_none(a, "_linalg_gelqf"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            let (_, m, _) = gelqf_dims(c.name(), a)?;
            let mut l = a.clone();
            let nd = l.len();
            l[nd - 1] = m;
            outs[0] = Some(a.clone());
            outs[1] = Some(l);
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, m, n) = gelqf_dims(c.name(), &i[0].shape)?;
        per_matrix(i, o, batch, |_, v| {
            let (q, l) = lq(v[0], m, n);
            Ok(vec![q, l])
        })
    }),
    grad: Some(|c, b, _, y, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_gelqf",
            &fwd_attrs(c),
            &[g[0], g[1], y[0], y[1]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_GELQF: OpDef = OpDef {
    name: "_backward_linalg_gelqf",
    doc: "Gradient of gelqf: from (dQ, dL, Q, L) the gradient on A.",
    inputs: &["dQ", "dL", "Q", "L"],
    parse: |a| parse_none(a, "_backward_linalg_gelqf"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[2]),
    infer_type: infer_type_la,
    cpu: Some(gelqf_backward),
    ..OpDef::BASE
};

/// dA = sym(U^T (diag(dL) + K) U), K[j][i] = (U dU^T)[j][i] / (L[i] - L[j])
/// off the diagonal, sym(X) = (X + X^T) / 2. Like MXNet, an eigengap below
/// eps (1e-30 in float32, 1e-100 in float64) counts as eps, with the sign of
/// the ascending order: equal eigenvalues give huge but finite gradients.
fn syevd_backward(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (batch, n) = square(c.name(), "U", &i[2].shape)?;
    let eps = if i[2].dtype == DType::F32 {
        1e-30
    } else {
        1e-100
    };
    per_matrix(i, o, batch, |_, v| {
        let (du, dl, u, l) = (v[0], v[1], v[2], v[3]);
        let mut k = mm(n, n, n, u, false, du, true);
        for j in 0..n {
            for q in 0..n {
                k[j * n + q] = if j == q {
                    dl[j]
                } else if q > j {
                    k[j * n + q] / (l[q] - l[j]).max(eps)
                } else {
                    k[j * n + q] / (l[q] - l[j]).min(-eps)
                };
            }
        }
        let t = mm(n, n, n, u, true, &mm(n, n, n, &k, false, u, false), false);
        let mut d = vec![0.0; n * n];
        for j in 0..n {
            for q in 0..n {
                d[j * n + q] = 0.5 * (t[j * n + q] + t[q * n + j]);
            }
        }
        Ok(vec![d])
    })
}

pub static SYEVD: OpDef = OpDef {
    name: "_linalg_syevd",
    doc: "Eigen-decomposition of symmetric matrices (only the lower triangle of A is read): \
          returns (U, L) with U * A = diag(L) * U, U orthonormal with the eigenvectors as rows \
          (each signed so that its entry of largest magnitude is positive) and the eigenvalues L \
          in ascending order. Batched over the leading axes; float32 and float64 only. The \
          gradient needs distinct eigenvalues.",
    inputs: &["A"],
    num_outputs: |_| 2,
    parse: |a| parse_none(a, "_linalg_syevd"),
    infer_shape: |c, ins, outs| {
        if let Some(a) = &ins[0] {
            square(c.name(), "A", a)?;
            outs[0] = Some(a.clone());
            outs[1] = Some(a[..a.len() - 1].to_vec());
        }
        Ok(())
    },
    infer_type: infer_type_la,
    cpu: Some(|c, i, o, _| {
        let (batch, n) = square(c.name(), "A", &i[0].shape)?;
        per_matrix(i, o, batch, |_, v| {
            let (u, w) = syevd(v[0], n);
            Ok(vec![u, w])
        })
    }),
    grad: Some(|c, b, _, y, g| {
        Ok(vec![Some(b.op1(
            "_backward_linalg_syevd",
            &fwd_attrs(c),
            &[g[0], g[1], y[0], y[1]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SYEVD: OpDef = OpDef {
    name: "_backward_linalg_syevd",
    doc: "Gradient of syevd: from (dU, dL, U, L) the symmetric gradient on A.",
    inputs: &["dU", "dL", "U", "L"],
    parse: |a| parse_none(a, "_backward_linalg_syevd"),
    infer_shape: |_, ins, outs| backward_shapes(outs, ins, &[2]),
    infer_type: infer_type_la,
    cpu: Some(syevd_backward),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &GEMM,
    &GEMM2,
    &POTRF,
    &BACKWARD_POTRF,
    &POTRI,
    &BACKWARD_POTRI,
    &TRSM,
    &BACKWARD_TRSM,
    &TRMM,
    &BACKWARD_TRMM,
    &SYRK,
    &BACKWARD_SYRK,
    &SUMLOGDIAG,
    &BACKWARD_SUMLOGDIAG,
    &EXTRACTDIAG,
    &MAKEDIAG,
    &EXTRACTTRIAN,
    &MAKETRIAN,
    &INVERSE,
    &DET,
    &BACKWARD_DET,
    &SLOGDET,
    &BACKWARD_SLOGDET,
    &GELQF,
    &BACKWARD_GELQF,
    &SYEVD,
    &BACKWARD_SYEVD,
];

#[cfg(test)]
mod tests {
    use super::super::matrix::testutil::*;
    use super::*;
    use crate::ops::registry::call;

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    /// A well-conditioned symmetric positive-definite n x n matrix.
    fn spd(n: usize, seed: u64) -> Vec<f64> {
        let m = vals(n * n, seed);
        let mut s = mm(n, n, n, &m, false, &m, true);
        for i in 0..n {
            s[i * n + i] += n as f64;
        }
        s
    }

    #[test]
    fn factorizations_reconstruct() {
        let n = 7;
        let a = spd(n, 1);
        let l = cholesky(&a, n).unwrap();
        close(&mm(n, n, n, &l, false, &l, true), &a, 1e-12);
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
        // Triangular solves against products, every side / transpose / triangle.
        let b = vals(n * 3, 2);
        for lower in [true, false] {
            for trans in [false, true] {
                let t = tri(&a, n, lower);
                let x = solve(&a, n, lower, trans, false, &b, n, 3);
                close(&mm(n, n, 3, &t, trans, &x, false), &b, 1e-12);
                let bt = transpose(&b, n, 3);
                let x = solve(&a, n, lower, trans, true, &bt, 3, n);
                close(&mm(3, n, n, &x, false, &t, trans), &bt, 1e-12);
            }
        }
        let g = vals(n * n, 3);
        let inv = inverse(&g, n).unwrap();
        let mut id = vec![0.0; n * n];
        for i in 0..n {
            id[i * n + i] = 1.0;
        }
        close(&mm(n, n, n, &g, false, &inv, false), &id, 1e-10);
        assert!(inverse(&[1.0, 2.0, 2.0, 4.0], 2).is_none());
        let (s, l, d) = slogdet(&[0.0, 1.0, 1.0, 0.0], 2);
        assert_eq!((s, l, d), (-1.0, 0.0, -1.0));
        let (m, k) = (3, 5);
        let x = vals(m * k, 4);
        let (q, lo) = lq(&x, m, k);
        close(&mm(m, m, k, &lo, false, &q, false), &x, 1e-12);
        close(
            &mm(m, k, m, &q, false, &q, true),
            &(0..m * m)
                .map(|i| if i % (m + 1) == 0 { 1.0 } else { 0.0 })
                .collect::<Vec<_>>(),
            1e-12,
        );
        let (u, w) = syevd(&a, n);
        let d = mm(n, n, n, &u, false, &mm(n, n, n, &a, false, &u, true), false);
        for i in 0..n {
            for j in 0..n {
                let want = if i == j { w[i] } else { 0.0 };
                assert!((d[i * n + j] - want).abs() < 1e-10);
            }
            if i > 0 {
                assert!(w[i] >= w[i - 1]);
            }
        }
    }

    #[test]
    fn gradients() {
        for (ta, tb, axis) in [
            ("False", "False", "-2"),
            ("True", "True", "-2"),
            ("False", "True", "1"),
        ] {
            let (ash, bsh) = match (ta, tb, axis) {
                ("False", "False", _) => (vec![2, 3, 4], vec![2, 4, 5]),
                ("True", "True", _) => (vec![2, 4, 3], vec![2, 5, 4]),
                _ => (vec![2, 3, 2, 4], vec![2, 5, 2, 4]),
            };
            let cshape: Vec<usize> = if axis == "1" {
                vec![2, 3, 2, 5]
            } else {
                vec![2, 3, 5]
            };
            let attrs = [
                ("transpose_a", ta),
                ("transpose_b", tb),
                ("axis", axis),
                ("alpha", "1.5"),
                ("beta", "-0.5"),
            ];
            let na: usize = ash.iter().product();
            let nb: usize = bsh.iter().product();
            let nc: usize = cshape.iter().product();
            check_grad(
                "_linalg_gemm",
                &attrs,
                &[
                    (vals(na, 1), ash),
                    (vals(nb, 2), bsh),
                    (vals(nc, 3), cshape),
                ],
                &[0, 1, 2],
            );
        }
        let mut t = tri(&spd(3, 5), 3, true);
        for v in t.iter_mut().step_by(4) {
            *v += 1.0;
        }
        let cases = [
            (
                false,
                vec![
                    ("rightside", "False"),
                    ("transpose", "False"),
                    ("alpha", "2.0"),
                ],
            ),
            (
                true,
                vec![
                    ("rightside", "True"),
                    ("transpose", "True"),
                    ("lower", "False"),
                ],
            ),
        ];
        for (right, attrs) in cases {
            let (tt, bsh) = if right {
                (transpose(&t, 3, 3), vec![2, 3])
            } else {
                (t.clone(), vec![3, 2])
            };
            for op in ["_linalg_trsm", "_linalg_trmm"] {
                check_grad(
                    op,
                    &attrs,
                    &[(tt.clone(), vec![3, 3]), (vals(6, 6), bsh.clone())],
                    &[0, 1],
                );
            }
        }
        check_grad(
            "_linalg_gelqf",
            &[],
            &[(vals(2 * 2 * 4, 7), vec![2, 2, 4])],
            &[0],
        );
        check_grad("_linalg_inverse", &[], &[(spd(3, 8), vec![3, 3])], &[0]);
        check_grad("_linalg_slogdet", &[], &[(spd(3, 9), vec![3, 3])], &[0]);
        check_grad(
            "_linalg_maketrian",
            &[("offset", "1")],
            &[(vals(6, 10), vec![6])],
            &[0],
        );
    }

    #[test]
    fn errors_name_the_operator() {
        let e = call("_linalg_potrf", &[], &[arr(&vals(6, 1), &[2, 3])])
            .err()
            .unwrap();
        assert!(
            e.message()
                .contains("_linalg_potrf: input A has shape (2, 3)"),
            "{}",
            e.message()
        );
        let e = call(
            "_linalg_gemm2",
            &[("axis", "-1")],
            &[arr(&vals(6, 1), &[2, 3]), arr(&vals(6, 1), &[2, 3])],
        )
        .err()
        .unwrap();
        assert!(
            e.message().contains("invalid row axis -1"),
            "{}",
            e.message()
        );
    }
}
