//! Matrix products: `dot` and `batch_dot`, computed with the `gemm` crate
//! (packed, vectorised micro-kernels, rayon-parallel for large products).
//!
//! MXNet semantics for N-d `dot`: the lhs is a matrix over (all axes but
//! the reduced one) x (reduced axis), where the reduced axis is the last one
//! (first with `transpose_a`); the rhs reduces over its first axis (last with
//! `transpose_b`). The output shape is the lhs's kept axes followed by the
//! rhs's kept axes; 1-D . 1-D gives shape (1,).
use super::attrs::Attrs;
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params};
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use gemm::Parallelism;
use half::f16;

type B<'a> = &'a mut dyn GradBuilder;

/// Products with fewer multiply-adds than this run on one thread.
const PAR_FLOPS: usize = 48 * 48 * 48;

#[derive(Debug, Clone, Copy)]
pub struct DotParam {
    pub transpose_a: bool,
    pub transpose_b: bool,
}

fn parse_dot(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    if let Some(st) = p.opt_str("forward_stype") {
        if st != "default" {
            return Err(Error::Param(format!(
                "{op}: forward_stype='{st}' is not supported (only dense 'default' storage)"
            )));
        }
    }
    Ok(Box::new(DotParam {
        transpose_a: p.bool("transpose_a", false)?,
        transpose_b: p.bool("transpose_b", false)?,
    }))
}

fn tflag(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// The 2-D view of a `dot`: (M, K, N) and the output shape.
pub fn dot_dims(
    l: &[usize],
    r: &[usize],
    ta: bool,
    tb: bool,
) -> Result<(usize, usize, usize, Shape)> {
    if l.is_empty() || r.is_empty() {
        return Err(Error::Shape(format!(
            "dot: lhs shape {} and rhs shape {} must both have at least one dimension",
            fmt_shape(l),
            fmt_shape(r)
        )));
    }
    let (kl, mdims) = if ta {
        (l[0], &l[1..])
    } else {
        (l[l.len() - 1], &l[..l.len() - 1])
    };
    let (kr, ndims) = if tb {
        (r[r.len() - 1], &r[..r.len() - 1])
    } else {
        (r[0], &r[1..])
    };
    if kl != kr {
        let flags = match (ta, tb) {
            (false, false) => String::new(),
            (true, false) => " with transpose_a=True".into(),
            (false, true) => " with transpose_b=True".into(),
            (true, true) => " with transpose_a=True, transpose_b=True".into(),
        };
        return Err(Error::Shape(format!(
            "dot: lhs shape {} and rhs shape {} do not match on the reduced axis ({} vs {}){}",
            fmt_shape(l),
            fmt_shape(r),
            kl,
            kr,
            flags
        )));
    }
    let m: usize = mdims.iter().product();
    let n: usize = ndims.iter().product();
    let mut out: Shape = mdims.to_vec();
    out.extend_from_slice(ndims);
    if l.len() == 1 && r.len() == 1 {
        out = vec![1];
    }
    Ok((m, kl, n, out))
}

fn infer_type_float(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    super::registry::infer_type_same(call, ins, outs)?;
    if let Some(t) = ins.iter().chain(outs.iter()).flatten().next() {
        if !t.is_float() {
            return Err(Error::DType(format!(
                "{}: dtype {} is not supported (float32, float64 or float16 only)",
                call.name(),
                t.name()
            )));
        }
    }
    Ok(())
}

/// (row, column) strides of op(a) (m x k) and op(b) (k x n) for `a` stored
/// row-major (m, k), or (k, m) when `ta`, and `b` (k, n), or (n, k) when `tb`.
type Strides = ((isize, isize), (isize, isize));
fn strides(m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Strides {
    let sa = if ta { (1, m as isize) } else { (k as isize, 1) };
    let sb = if tb { (1, k as isize) } else { (n as isize, 1) };
    (sa, sb)
}

/// The gemm crate's `dst (m x n, rows n apart) = [dst +] op(a) . op(b)`.
/// # Safety
/// The pointers must cover the matrices their strides describe; `dst` must
/// not alias them.
#[allow(clippy::too_many_arguments)]
unsafe fn crate_gemm<T: 'static + Copy + crate::base::dtype::Elem>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    b: *const T,
    ((a_rs, a_cs), (b_rs, b_cs)): Strides,
    dst: *mut T,
    accumulate: bool,
    par: Parallelism,
) {
    let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
    let run = move || {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            n as isize,
            accumulate,
            a,
            a_cs,
            a_rs,
            b,
            b_cs,
            b_rs,
            if accumulate { one } else { zero },
            one,
            false,
            false,
            false,
            par,
        );
    };
    match par {
        Parallelism::None => run(),
        // SAFETY: install waits for the product; the caller's guarantees on
        // the pointers hold for that time. The kernel pool, never rayon's
        // global one (see crate::par).
        _ => crate::par::install_raw(run),
    }
}

/// One product `dst (m x n) = op(a) . op(b)` with `a` stored (m, k) or
/// (k, m) when `ta`, and `b` stored (k, n) or (n, k) when `tb`.
/// # Safety
/// The pointers must cover the stated matrices and `dst` must not alias.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_one<T: 'static + Copy + crate::base::dtype::Elem>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    ta: bool,
    b: *const T,
    tb: bool,
    dst: *mut T,
    par: Parallelism,
) {
    let st = strides(m, k, n, ta, tb);
    // Large float32 products on oxnet's AVX2 sgemm (a few % ahead of the
    // gemm crate from ~256 on every side; the gemm crate wins on small ones).
    #[cfg(target_arch = "x86_64")]
    if m.min(n).min(k) >= 256 && crate::ops::sgemm::runs_for::<T>() {
        let threads = match par {
            Parallelism::None => 1,
            _ => crate::par::num_threads(),
        };
        let ((a_rs, a_cs), (b_rs, b_cs)) = st;
        // SAFETY: T is f32; the caller guarantees the matrices as above.
        crate::ops::sgemm::sgemm(
            m,
            n,
            k,
            dst as *mut f32,
            n as isize,
            1,
            false,
            a as *const f32,
            a_rs,
            a_cs,
            b as *const f32,
            b_rs,
            b_cs,
            threads,
        );
        return;
    }
    crate_gemm(m, k, n, a, b, st, dst, false, par);
}

/// `dst (m x n) = op(a) . op(b)`, or `dst += op(a) . op(b)` with
/// `accumulate`, for callers outside this file (RNN): `a` is stored (m, k)
/// or (k, m) when `ta`, `b` (k, n) or (n, k) when `tb`, all row-major and
/// contiguous. Panics if a slice is shorter than its matrix.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_into<T: crate::base::dtype::Elem>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    ta: bool,
    b: &[T],
    tb: bool,
    dst: &mut [T],
    accumulate: bool,
) {
    assert!(a.len() >= m * k && b.len() >= k * n && dst.len() >= m * n);
    if m * n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(T::from_f64(0.0));
        }
        return;
    }
    let st = strides(m, k, n, ta, tb);
    // Products with few rows and a short side (RNN steps: batch x 4H x H)
    // stay on one thread in the gemm crate: split the rows of dst over the
    // rayon threads instead, each part a single-threaded product.
    let threads = crate::par::num_threads();
    if threads > 1 && m >= 16 && m * n * k >= 1 << 20 && m.min(n).min(k) < 256 {
        struct P<T>(*const T, *const T, *mut T);
        // SAFETY: the parts write disjoint rows of dst and only read a and b.
        unsafe impl<T> Sync for P<T> {}
        let rows = m.div_ceil(threads.min(m / 8));
        let ptrs = P(a.as_ptr(), b.as_ptr(), dst.as_mut_ptr());
        crate::par::par_for(m.div_ceil(rows), &|i| {
            let p = &ptrs;
            let (r0, a_rs) = (i * rows, st.0 .0);
            // SAFETY: rows r0.. of op(a) and dst lie inside the slices
            // (checked above); each part writes only its own rows.
            unsafe {
                let a0 = p.0.offset(r0 as isize * a_rs);
                let d0 = p.2.add(r0 * n);
                crate_gemm(
                    rows.min(m - r0),
                    k,
                    n,
                    a0,
                    p.1,
                    st,
                    d0,
                    accumulate,
                    Parallelism::None,
                )
            }
        });
        return;
    }
    let par = parallelism(m * n * k);
    // SAFETY: the slices cover the matrices (checked above); dst is a
    // distinct &mut slice.
    unsafe {
        if accumulate {
            crate_gemm(
                m,
                k,
                n,
                a.as_ptr(),
                b.as_ptr(),
                st,
                dst.as_mut_ptr(),
                true,
                par,
            )
        } else {
            gemm_one(
                m,
                k,
                n,
                a.as_ptr(),
                ta,
                b.as_ptr(),
                tb,
                dst.as_mut_ptr(),
                par,
            )
        }
    }
}

fn parallelism(flops: usize) -> Parallelism {
    if flops < PAR_FLOPS || crate::par::num_threads() <= 1 {
        Parallelism::None
    } else {
        Parallelism::Rayon(0)
    }
}

/// `batch` independent products; parallel over the batch when each product
/// is small, inside each product when they are large.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batched<T: crate::base::dtype::Elem>(
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    ta: bool,
    b: &[T],
    tb: bool,
    dst: &mut [T],
) {
    if m * n == 0 {
        return;
    }
    if k == 0 {
        dst.fill(T::from_f64(0.0));
        return;
    }
    let (sa, sb, sd) = (m * k, k * n, m * n);
    let per = m * n * k;
    let run = |i: usize, d: &mut [T], par: Parallelism| unsafe {
        gemm_one(
            m,
            k,
            n,
            a[i * sa..].as_ptr(),
            ta,
            b[i * sb..].as_ptr(),
            tb,
            d.as_mut_ptr(),
            par,
        )
    };
    if batch > 1 && per < 4 * PAR_FLOPS && per * batch >= PAR_FLOPS && crate::par::num_threads() > 1
    {
        crate::par::par_chunks_mut(dst, sd, |i, d| run(i, d, Parallelism::None));
    } else {
        let par = parallelism(per);
        for (i, d) in dst.chunks_mut(sd).enumerate() {
            run(i, d, par);
        }
    }
}

fn run_batched(
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a: &Blob,
    ta: bool,
    b: &Blob,
    tb: bool,
    out: &Blob,
) -> Result<()> {
    match out.dtype {
        DType::F32 => batched(
            batch,
            m,
            k,
            n,
            a.data::<f32>(),
            ta,
            b.data::<f32>(),
            tb,
            out.data_mut::<f32>(),
        ),
        DType::F64 => batched(
            batch,
            m,
            k,
            n,
            a.data::<f64>(),
            ta,
            b.data::<f64>(),
            tb,
            out.data_mut::<f64>(),
        ),
        DType::F16 => batched(
            batch,
            m,
            k,
            n,
            a.data::<f16>(),
            ta,
            b.data::<f16>(),
            tb,
            out.data_mut::<f16>(),
        ),
        d => {
            return Err(Error::DType(format!(
                "dot: dtype {} is not supported (float32, float64 or float16 only)",
                d.name()
            )))
        }
    }
    Ok(())
}

fn dot_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<DotParam>();
    let (m, k, n, _) = dot_dims(&i[0].shape, &i[1].shape, p.transpose_a, p.transpose_b)?;
    run_batched(
        1,
        m,
        k,
        n,
        &i[0],
        p.transpose_a,
        &i[1],
        p.transpose_b,
        &o[0],
    )
}

/// Gradients of C = op(A) . op(B) on the 2-D views, for each transpose
/// combination, as products of the same kind.
fn dot_grads_2d(
    b: B,
    op: &str,
    a2: Entry,
    b2: Entry,
    g2: Entry,
    ta: bool,
    tb: bool,
) -> Result<(Entry, Entry)> {
    let mk = |b: B, x: Entry, y: Entry, t1: bool, t2: bool| {
        b.op1(
            op,
            &[("transpose_a", tflag(t1)), ("transpose_b", tflag(t2))],
            &[x, y],
        )
    };
    Ok(match (ta, tb) {
        (false, false) => (mk(b, g2, b2, false, true)?, mk(b, a2, g2, true, false)?),
        (true, false) => (mk(b, b2, g2, false, true)?, mk(b, a2, g2, false, false)?),
        (false, true) => (mk(b, g2, b2, false, false)?, mk(b, g2, a2, true, false)?),
        (true, true) => (mk(b, b2, g2, true, true)?, mk(b, g2, a2, true, true)?),
    })
}

fn reshape_code(b: B, x: Entry, first: bool) -> Result<Entry> {
    // (k, rest...) -> (k, prod(rest)) or (rest..., k) -> (prod(rest), k).
    if first {
        b.op1("Reshape", &[("shape", "(0, -1)".into())], &[x])
    } else {
        b.op1(
            "Reshape",
            &[("shape", "(-1, 0)".into()), ("reverse", "True".into())],
            &[x],
        )
    }
}

fn dot_grad(c: &OpCall, b: B, x: &[Entry], _: &[Entry], g: &[Entry]) -> Result<Vec<Option<Entry>>> {
    let p = *c.p::<DotParam>();
    let (ta, tb) = (p.transpose_a, p.transpose_b);
    // 2-D views of the operands and of the output gradient.
    let a2 = reshape_code(b, x[0], ta)?;
    let b2 = reshape_code(b, x[1], !tb)?;
    let g2 = b.op1(
        "_dot_flat_out",
        &[("transpose_a", tflag(ta)), ("transpose_b", tflag(tb))],
        &[g[0], x[0], x[1]],
    )?;
    let (ga, gb) = dot_grads_2d(b, "dot", a2, b2, g2, ta, tb)?;
    let ga = b.op1("reshape_like", &[], &[ga, x[0]])?;
    let gb = b.op1("reshape_like", &[], &[gb, x[1]])?;
    Ok(vec![Some(ga), Some(gb)])
}

pub static DOT: OpDef = OpDef {
    name: "dot",
    doc: "Dot product of two arrays. N-d: sums over the last axis of lhs (first with transpose_a) and the \
          first axis of rhs (last with transpose_b); the output has the remaining axes of lhs then rhs.",
    inputs: &["lhs", "rhs"],
    parse: |a| parse_dot(a, "dot"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<DotParam>();
        if let (Some(l), Some(r)) = (&ins[0], &ins[1]) {
            outs[0] = Some(dot_dims(l, r, p.transpose_a, p.transpose_b)?.3);
        }
        Ok(())
    },
    infer_type: infer_type_float,
    cpu: Some(dot_kernel),
    grad: Some(dot_grad),
    ..OpDef::BASE
};

/// Internal: the output gradient of `dot(lhs, rhs)` reshaped to the 2-D
/// (M, N) matrix the product is computed as (used by dot's gradient).
pub static DOT_FLAT_OUT: OpDef = OpDef {
    name: "_dot_flat_out",
    doc: "Reshape data (shaped like dot(lhs, rhs)) to the (M, N) matrix of the 2-D product.",
    inputs: &["data", "lhs", "rhs"],
    parse: |a| parse_dot(a, "_dot_flat_out"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<DotParam>();
        if let (Some(l), Some(r)) = (&ins[1], &ins[2]) {
            let (m, _, n, o) = dot_dims(l, r, p.transpose_a, p.transpose_b)?;
            if let Some(d) = &ins[0] {
                if *d != o {
                    return Err(Error::Shape(format!(
                        "_dot_flat_out: data shape {} is not the shape {} of dot({}, {})",
                        fmt_shape(d),
                        fmt_shape(&o),
                        fmt_shape(l),
                        fmt_shape(r)
                    )));
                }
            }
            outs[0] = Some(vec![m, n]);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        o[0].bytes_mut().copy_from_slice(i[0].bytes());
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        Ok(vec![
            Some(b.op1("reshape_like", &[], &[g[0], x[0]])?),
            None,
            None,
        ])
    }),
    ..OpDef::BASE
};

/// (batch, M, K, N, out shape) of a batch_dot.
pub fn batch_dot_dims(
    l: &[usize],
    r: &[usize],
    ta: bool,
    tb: bool,
) -> Result<(usize, usize, usize, usize, Shape)> {
    if l.len() < 3 || r.len() != l.len() || l[..l.len() - 2] != r[..r.len() - 2] {
        return Err(Error::Shape(format!(
            "batch_dot: lhs shape {} and rhs shape {} must be 3-D (or more) with the same leading batch axes",
            fmt_shape(l),
            fmt_shape(r)
        )));
    }
    let nd = l.len();
    let batch: usize = l[..nd - 2].iter().product();
    let (m, kl) = if ta {
        (l[nd - 1], l[nd - 2])
    } else {
        (l[nd - 2], l[nd - 1])
    };
    let (kr, n) = if tb {
        (r[nd - 1], r[nd - 2])
    } else {
        (r[nd - 2], r[nd - 1])
    };
    if kl != kr {
        return Err(Error::Shape(format!(
            "batch_dot: lhs shape {} and rhs shape {} do not match on the reduced axis ({} vs {}) \
             (transpose_a={}, transpose_b={})",
            fmt_shape(l),
            fmt_shape(r),
            kl,
            kr,
            tflag(ta),
            tflag(tb)
        )));
    }
    let mut out: Shape = l[..nd - 2].to_vec();
    out.push(m);
    out.push(n);
    Ok((batch, m, kl, n, out))
}

pub static BATCH_DOT: OpDef = OpDef {
    name: "batch_dot",
    doc: "Batched matrix product of (B, M, K) and (B, K, N) arrays (transpose_a / transpose_b transpose \
          the last two axes of each operand).",
    inputs: &["lhs", "rhs"],
    parse: |a| parse_dot(a, "batch_dot"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<DotParam>();
        if let (Some(l), Some(r)) = (&ins[0], &ins[1]) {
            outs[0] = Some(batch_dot_dims(l, r, p.transpose_a, p.transpose_b)?.4);
        }
        Ok(())
    },
    infer_type: infer_type_float,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<DotParam>();
        let (batch, m, k, n, _) = batch_dot_dims(&i[0].shape, &i[1].shape, p.transpose_a, p.transpose_b)?;
        run_batched(batch, m, k, n, &i[0], p.transpose_a, &i[1], p.transpose_b, &o[0])
    }),
    grad: Some(|c, b, x, _, g| {
        let p = *c.p::<DotParam>();
        let (ga, gb) = dot_grads_2d(b, "batch_dot", x[0], x[1], g[0], p.transpose_a, p.transpose_b)?;
        Ok(vec![Some(ga), Some(gb)])
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&DOT, &DOT_FLAT_OUT, &BATCH_DOT];

/// Test helpers shared by this crate's operator tests: an eager gradient
/// builder and a finite-difference gradient check.
#[cfg(test)]
pub(crate) mod testutil {
    use super::super::registry::{call, lookup, parse_call, Entry, GradBuilder};
    use super::super::Attrs;
    use crate::{Context, NDArray, Result};

    pub struct Eager {
        pub vals: Vec<NDArray>,
    }

    impl Eager {
        pub fn push(&mut self, a: NDArray) -> Entry {
            self.vals.push(a);
            self.vals.len() - 1
        }
    }

    impl GradBuilder for Eager {
        fn op(
            &mut self,
            name: &str,
            attrs: &[(&str, String)],
            inputs: &[Entry],
        ) -> Result<Vec<Entry>> {
            let pairs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let ins: Vec<NDArray> = inputs.iter().map(|&i| self.vals[i].clone()).collect();
            let outs = call(name, &pairs, &ins)?;
            Ok(outs.into_iter().map(|o| self.push(o)).collect())
        }
    }

    pub fn arr(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape, Context::cpu(0)).unwrap()
    }

    /// Deterministic pseudo-random values in [-1, 1).
    pub fn vals(n: usize, seed: u64) -> Vec<f64> {
        let mut r = crate::random::Rng::seeded(seed);
        (0..n).map(|_| r.uniform() * 2.0 - 1.0).collect()
    }

    /// Check the registered gradient of `op` against central differences of
    /// L = sum_j sum(out_j * w_j) for random weights w_j, in float64.
    /// `diff` marks the inputs to check.
    pub fn check_grad(
        op: &str,
        attrs: &[(&str, &str)],
        inputs: &[(Vec<f64>, Vec<usize>)],
        diff: &[usize],
    ) {
        let def = lookup(op).unwrap();
        let arrs: Vec<NDArray> = inputs.iter().map(|(v, s)| arr(v, s)).collect();
        // every output, hidden ones included (the gradient function gets them)
        let c = std::sync::Arc::new(parse_call(def, Attrs::from_pairs(attrs)).unwrap());
        let all = crate::ops::registry::invoke(c.clone(), &arrs, None, None).unwrap();
        let outs = &all[..def.n_visible(&c)];
        let ws: Vec<Vec<f64>> = outs
            .iter()
            .enumerate()
            .map(|(j, o)| vals(o.size(), 100 + j as u64))
            .collect();
        let loss = |xs: &[NDArray]| -> f64 {
            let outs = call(op, attrs, xs).unwrap();
            outs.iter()
                .zip(&ws)
                .map(|(o, w)| {
                    o.to_vec::<f64>()
                        .unwrap()
                        .iter()
                        .zip(w)
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
                })
                .sum()
        };
        let mut e = Eager { vals: vec![] };
        let xi: Vec<Entry> = arrs.iter().map(|a| e.push(a.clone())).collect();
        let oi: Vec<Entry> = all.iter().map(|a| e.push(a.clone())).collect();
        let mut gi: Vec<Entry> = outs
            .iter()
            .zip(&ws)
            .map(|(o, w)| e.push(arr(w, &o.shape)))
            .collect();
        for o in &all[outs.len()..] {
            gi.push(e.push(arr(&vec![0.0; o.size()], &o.shape)));
        }
        let grads =
            (def.grad.expect("operator has a gradient"))(&c, &mut e, &xi, &oi, &gi).unwrap();
        assert_eq!(grads.len(), inputs.len(), "{op}: one gradient per input");
        for &d in diff {
            let (v, s) = &inputs[d];
            let got: Vec<f64> = match grads[d] {
                Some(gidx) => {
                    assert_eq!(e.vals[gidx].shape, *s, "{op}: gradient shape of input {d}");
                    e.vals[gidx].to_vec::<f64>().unwrap()
                }
                None => vec![0.0; v.len()],
            };
            let h = 1e-6;
            for k in 0..v.len() {
                let mut xs = arrs.clone();
                let mut vp = v.clone();
                vp[k] += h;
                xs[d] = arr(&vp, s);
                let lp = loss(&xs);
                vp[k] -= 2.0 * h;
                xs[d] = arr(&vp, s);
                let lm = loss(&xs);
                let num = (lp - lm) / (2.0 * h);
                assert!(
                    (num - got[k]).abs() <= 1e-5 * (1.0 + num.abs()),
                    "{op} {attrs:?}: d/d input {d}[{k}]: numeric {num}, analytic {}",
                    got[k]
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use crate::ops::registry::call;
    use crate::{Context, NDArray};

    /// Reference product on the 2-D views, in f64.
    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for p in 0..k {
                    let x = if ta { a[p * m + i] } else { a[i * k + p] };
                    let y = if tb { b[j * k + p] } else { b[p * n + j] };
                    s += x * y;
                }
                c[i * n + j] = s;
            }
        }
        c
    }

    fn tf(b: bool) -> &'static str {
        if b {
            "True"
        } else {
            "False"
        }
    }

    #[test]
    fn dot_matches_naive_2d_all_transposes() {
        for &(m, k, n) in &[(1, 1, 1), (3, 5, 2), (17, 9, 33), (64, 70, 65), (130, 3, 7)] {
            for ta in [false, true] {
                for tb in [false, true] {
                    let a = vals(m * k, 1);
                    let b = vals(k * n, 2);
                    let ash = if ta { [k, m] } else { [m, k] };
                    let bsh = if tb { [n, k] } else { [k, n] };
                    let want = naive(&a, &b, m, k, n, ta, tb);
                    // f64
                    let out = call(
                        "dot",
                        &[("transpose_a", tf(ta)), ("transpose_b", tf(tb))],
                        &[arr(&a, &ash), arr(&b, &bsh)],
                    )
                    .unwrap();
                    assert_eq!(out[0].shape, vec![m, n]);
                    let got = out[0].to_vec::<f64>().unwrap();
                    for (x, y) in got.iter().zip(&want) {
                        assert!((x - y).abs() < 1e-10, "f64 {m}x{k}x{n} ta={ta} tb={tb}");
                    }
                    // f32
                    let af: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                    let bf: Vec<f32> = b.iter().map(|&v| v as f32).collect();
                    let ctx = Context::cpu(0);
                    let out = call(
                        "dot",
                        &[("transpose_a", tf(ta)), ("transpose_b", tf(tb))],
                        &[
                            NDArray::from_vec(af, &ash, ctx).unwrap(),
                            NDArray::from_vec(bf, &bsh, ctx).unwrap(),
                        ],
                    )
                    .unwrap();
                    let got = out[0].to_vec::<f32>().unwrap();
                    for (x, y) in got.iter().zip(&want) {
                        assert!(
                            (*x as f64 - y).abs() < 1e-4 * (1.0 + k as f64),
                            "f32 {m}x{k}x{n} ta={ta} tb={tb}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn dot_f16() {
        let (m, k, n) = (5, 8, 3);
        let a = vals(m * k, 3);
        let b = vals(k * n, 4);
        let h = |v: &[f64]| {
            v.iter()
                .map(|&x| half::f16::from_f64(x))
                .collect::<Vec<_>>()
        };
        let ctx = Context::cpu(0);
        let out = call(
            "dot",
            &[],
            &[
                NDArray::from_vec(h(&a), &[m, k], ctx).unwrap(),
                NDArray::from_vec(h(&b), &[k, n], ctx).unwrap(),
            ],
        )
        .unwrap();
        let ar: Vec<f64> = h(&a).iter().map(|x| x.to_f64()).collect();
        let br: Vec<f64> = h(&b).iter().map(|x| x.to_f64()).collect();
        let want = naive(&ar, &br, m, k, n, false, false);
        for (x, y) in out[0].to_vec::<half::f16>().unwrap().iter().zip(&want) {
            assert!((x.to_f64() - y).abs() < 2e-2, "{x} vs {y}");
        }
    }

    #[test]
    fn dot_nd_shapes_and_values() {
        // (2, 3, 4) . (4, 5) -> (2, 3, 5)
        let a = vals(24, 5);
        let b = vals(20, 6);
        let out = call("dot", &[], &[arr(&a, &[2, 3, 4]), arr(&b, &[4, 5])]).unwrap();
        assert_eq!(out[0].shape, vec![2, 3, 5]);
        let want = naive(&a, &b, 6, 4, 5, false, false);
        assert_eq!(out[0].to_vec::<f64>().unwrap().len(), want.len());
        for (x, y) in out[0].to_vec::<f64>().unwrap().iter().zip(&want) {
            assert!((x - y).abs() < 1e-12);
        }
        // (4, 2, 3) with transpose_a . (4, 5, 2) -> (2, 3, 5, 2)
        let a = vals(24, 7);
        let b = vals(40, 8);
        let out = call(
            "dot",
            &[("transpose_a", "True")],
            &[arr(&a, &[4, 2, 3]), arr(&b, &[4, 5, 2])],
        )
        .unwrap();
        assert_eq!(out[0].shape, vec![2, 3, 5, 2]);
        let want = naive(&a, &b, 6, 4, 10, true, false);
        for (x, y) in out[0].to_vec::<f64>().unwrap().iter().zip(&want) {
            assert!((x - y).abs() < 1e-12);
        }
        // (3, 4) . (2, 5, 4) with transpose_b -> (3, 2, 5)
        let a = vals(12, 9);
        let b = vals(40, 10);
        let out = call(
            "dot",
            &[("transpose_b", "True")],
            &[arr(&a, &[3, 4]), arr(&b, &[2, 5, 4])],
        )
        .unwrap();
        assert_eq!(out[0].shape, vec![3, 2, 5]);
        let want = naive(&a, &b, 3, 4, 10, false, true);
        for (x, y) in out[0].to_vec::<f64>().unwrap().iter().zip(&want) {
            assert!((x - y).abs() < 1e-12);
        }
        // 1-D . 1-D -> (1,)
        let out = call(
            "dot",
            &[],
            &[arr(&[1.0, 2.0, 3.0], &[3]), arr(&[4.0, 5.0, 6.0], &[3])],
        )
        .unwrap();
        assert_eq!(out[0].shape, vec![1]);
        assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![32.0]);
        // 1-D . 2-D -> (n,), 2-D . 1-D -> (m,)
        let out = call(
            "dot",
            &[],
            &[
                arr(&[1.0, 2.0], &[2]),
                arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]),
            ],
        )
        .unwrap();
        assert_eq!(out[0].shape, vec![3]);
        assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![9.0, 12.0, 15.0]);
        let out = call(
            "dot",
            &[],
            &[
                arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]),
                arr(&[1.0, -1.0], &[2]),
            ],
        )
        .unwrap();
        assert_eq!(out[0].shape, vec![3]);
        assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![-1.0, -1.0, -1.0]);
        // zero-size reduced axis gives zeros
        let out = call("dot", &[], &[arr(&[], &[2, 0]), arr(&[], &[0, 3])]).unwrap();
        assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![0.0; 6]);
    }

    #[test]
    fn dot_errors() {
        let e = call(
            "dot",
            &[],
            &[arr(&vals(6, 1), &[2, 3]), arr(&vals(20, 1), &[4, 5])],
        )
        .err()
        .unwrap();
        assert_eq!(
            e.message(),
            "dot: lhs shape (2, 3) and rhs shape (4, 5) do not match on the reduced axis (3 vs 4)"
        );
        let e = call(
            "dot",
            &[("transpose_b", "True")],
            &[arr(&vals(6, 1), &[2, 3]), arr(&vals(6, 1), &[3, 2])],
        )
        .err()
        .unwrap();
        assert!(
            e.message().contains("(3 vs 2) with transpose_b=True"),
            "{}",
            e.message()
        );
        let ctx = Context::cpu(0);
        let i = NDArray::from_vec(vec![1i32, 2], &[1, 2], ctx).unwrap();
        let j = NDArray::from_vec(vec![1i32, 2], &[2, 1], ctx).unwrap();
        let e = call("dot", &[], &[i, j]).err().unwrap();
        assert!(
            e.message().contains("int32 is not supported"),
            "{}",
            e.message()
        );
        let e = call(
            "dot",
            &[("forward_stype", "csr")],
            &[arr(&[1.0], &[1]), arr(&[1.0], &[1])],
        )
        .err()
        .unwrap();
        assert!(e.message().contains("forward_stype"), "{}", e.message());
        let e = call(
            "batch_dot",
            &[],
            &[arr(&vals(6, 1), &[2, 3]), arr(&vals(6, 1), &[3, 2])],
        )
        .err()
        .unwrap();
        assert!(
            e.message()
                .contains("batch_dot: lhs shape (2, 3) and rhs shape (3, 2) must be 3-D"),
            "{}",
            e.message()
        );
        let e = call(
            "batch_dot",
            &[],
            &[arr(&vals(12, 1), &[2, 2, 3]), arr(&vals(12, 1), &[2, 2, 3])],
        )
        .err()
        .unwrap();
        assert!(e.message().contains("(3 vs 2)"), "{}", e.message());
    }

    #[test]
    fn batch_dot_matches_naive() {
        for &(bs, m, k, n) in &[(1, 2, 3, 4), (3, 5, 7, 2), (40, 9, 8, 7), (2, 70, 60, 50)] {
            for ta in [false, true] {
                for tb in [false, true] {
                    let a = vals(bs * m * k, 11);
                    let b = vals(bs * k * n, 12);
                    let ash = if ta { [bs, k, m] } else { [bs, m, k] };
                    let bsh = if tb { [bs, n, k] } else { [bs, k, n] };
                    let out = call(
                        "batch_dot",
                        &[("transpose_a", tf(ta)), ("transpose_b", tf(tb))],
                        &[arr(&a, &ash), arr(&b, &bsh)],
                    )
                    .unwrap();
                    assert_eq!(out[0].shape, vec![bs, m, n]);
                    let got = out[0].to_vec::<f64>().unwrap();
                    for i in 0..bs {
                        let want = naive(
                            &a[i * m * k..(i + 1) * m * k],
                            &b[i * k * n..(i + 1) * k * n],
                            m,
                            k,
                            n,
                            ta,
                            tb,
                        );
                        for (x, y) in got[i * m * n..(i + 1) * m * n].iter().zip(&want) {
                            assert!((x - y).abs() < 1e-10);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dot_gradients() {
        for ta in [false, true] {
            for tb in [false, true] {
                let attrs = [("transpose_a", tf(ta)), ("transpose_b", tf(tb))];
                let (ash, bsh) = (
                    if ta { vec![4, 3] } else { vec![3, 4] },
                    if tb { vec![2, 4] } else { vec![4, 2] },
                );
                check_grad(
                    "dot",
                    &attrs,
                    &[(vals(12, 1), ash), (vals(8, 2), bsh)],
                    &[0, 1],
                );
                let (ash, bsh) = (
                    if ta { vec![2, 3, 2] } else { vec![3, 2, 2] },
                    if tb { vec![2, 3, 2] } else { vec![2, 2, 3] },
                );
                check_grad(
                    "dot",
                    &attrs,
                    &[(vals(12, 3), ash), (vals(12, 4), bsh)],
                    &[0, 1],
                );
            }
        }
        // 1-D cases
        check_grad(
            "dot",
            &[],
            &[(vals(3, 1), vec![3]), (vals(3, 2), vec![3])],
            &[0, 1],
        );
        check_grad(
            "dot",
            &[],
            &[(vals(3, 1), vec![3]), (vals(6, 2), vec![3, 2])],
            &[0, 1],
        );
    }

    #[test]
    fn batch_dot_gradients() {
        for ta in [false, true] {
            for tb in [false, true] {
                let attrs = [("transpose_a", tf(ta)), ("transpose_b", tf(tb))];
                let ash = if ta { vec![2, 4, 3] } else { vec![2, 3, 4] };
                let bsh = if tb { vec![2, 5, 4] } else { vec![2, 4, 5] };
                check_grad(
                    "batch_dot",
                    &attrs,
                    &[(vals(24, 7), ash), (vals(40, 8), bsh)],
                    &[0, 1],
                );
            }
        }
    }

    /// `cargo test --release -p oxnet-core dot_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn dot_speed() {
        let n = 1024;
        let ctx = Context::cpu(0);
        let a = NDArray::from_vec(vec![0.5f32; n * n], &[n, n], ctx).unwrap();
        let b = NDArray::from_vec(vec![0.25f32; n * n], &[n, n], ctx).unwrap();
        for _ in 0..3 {
            call("dot", &[], &[a.clone(), b.clone()]).unwrap()[0]
                .wait_to_read()
                .unwrap();
        }
        let reps = 20;
        let t = std::time::Instant::now();
        for _ in 0..reps {
            call("dot", &[], &[a.clone(), b.clone()]).unwrap()[0]
                .wait_to_read()
                .unwrap();
        }
        let s = t.elapsed().as_secs_f64() / reps as f64;
        let gf = 2.0 * (n * n * n) as f64 / s / 1e9;
        println!(
            "dot {n}x{n} f32: {:.3} ms, {:.1} GFLOP/s ({} rayon threads)",
            s * 1e3,
            gf,
            crate::par::num_threads()
        );
    }
}
