//! Reductions: sum, mean, prod, max, min, nansum, nanprod, norm, argmax,
//! argmin, and the internal `_reduce_grad_broadcast` their gradients use.
//!
//! Shapes follow MXNet 1.x's `ReduceAxesShapeImpl`: `axis=None` or `()`
//! reduces everything into shape `(1,)` (or all-ones with keepdims; exclude
//! is then ignored); negative axes count from the end; `exclude=True`
//! reduces every axis NOT listed. Values accumulate in f64.
use super::kernels::{map2, PAR_GRAIN};
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef};
use crate::base::dtype::Elem;
use crate::base::shape::{numel, strides};
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::par::{par_chunks_mut, par_map};

type B<'a> = &'a mut dyn GradBuilder;

// ---------------------------------------------------------------------------
// Parameters and the shape rule
// ---------------------------------------------------------------------------

/// MXNet's `ReduceAxesParam` (also used by `_reduce_grad_broadcast`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceParam {
    /// None (or empty) = all axes.
    pub axis: Option<Vec<i64>>,
    pub keepdims: bool,
    pub exclude: bool,
}

fn parse_axes(op: &str, a: &super::attrs::Attrs) -> Result<Option<Vec<i64>>> {
    let axis = a.p(op).ints("axis")?;
    if let Some(v) = &axis {
        if v.contains(&i64::MIN) {
            return Err(Error::Param(format!(
                "{op}: argument 'axis' must be a tuple of integers, got '{}'",
                a.raw("axis").unwrap_or("")
            )));
        }
    }
    Ok(axis.filter(|v| !v.is_empty()))
}

fn parse_reduce(op: &str, a: &super::attrs::Attrs) -> Result<ReduceParam> {
    let p = a.p(op);
    Ok(ReduceParam {
        axis: parse_axes(op, a)?,
        keepdims: p.bool("keepdims", false)?,
        exclude: p.bool("exclude", false)?,
    })
}

fn axes_attr(axis: &Option<Vec<i64>>) -> String {
    match axis {
        None => "None".to_string(),
        Some(v) if v.len() == 1 => format!("({},)", v[0]),
        Some(v) => format!(
            "({})",
            v.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// The reduction plan: which input axes are reduced, and the output shape.
pub fn reduce_plan(op: &str, ishape: &[usize], p: &ReduceParam) -> Result<(Vec<bool>, Shape)> {
    let nd = ishape.len();
    let Some(axis) = &p.axis else {
        let out = if p.keepdims { vec![1; nd] } else { vec![1] };
        return Ok((vec![true; nd], out));
    };
    let mut axes = Vec::with_capacity(axis.len());
    for &a in axis {
        let n = a + if a < 0 { nd as i64 } else { 0 };
        if n < 0 || n >= nd as i64 {
            return Err(Error::Param(format!(
                "{op}: axis {a} is out of range for input of shape {} ({nd} dimensions)",
                fmt_shape(ishape)
            )));
        }
        axes.push(n as usize);
    }
    axes.sort_unstable();
    if let Some(w) = axes.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Param(format!(
            "{op}: axis {:?} names axis {} twice (input shape {})",
            axis,
            w[0],
            fmt_shape(ishape)
        )));
    }
    let listed: Vec<bool> = (0..nd).map(|i| axes.binary_search(&i).is_ok()).collect();
    let mask: Vec<bool> = listed.iter().map(|&l| l != p.exclude).collect();
    let out: Shape = if p.keepdims {
        (0..nd)
            .map(|i| if mask[i] { 1 } else { ishape[i] })
            .collect()
    } else {
        let kept: Shape = (0..nd).filter(|&i| !mask[i]).map(|i| ishape[i]).collect();
        if kept.is_empty() {
            vec![1]
        } else {
            kept
        }
    };
    Ok((mask, out))
}

/// Input shape with the reduced axes set to 1.
fn keep_shape(ishape: &[usize], mask: &[bool]) -> Shape {
    ishape
        .iter()
        .zip(mask)
        .map(|(&d, &m)| if m { 1 } else { d })
        .collect()
}

// ---------------------------------------------------------------------------
// Reducers
// ---------------------------------------------------------------------------

/// The exact integer form of a reduction (integer inputs reduce in
/// wrapping i64 arithmetic, never through float64).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IntRed {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
}

pub trait Reducer: Send + Sync + 'static {
    const INIT: f64;
    /// Some for reductions with an exact integer form.
    const INT: Option<IntRed> = None;
    fn step(acc: f64, v: f64) -> f64;
    /// Merge two partial accumulators.
    fn combine(a: f64, b: f64) -> f64;
    fn finish(acc: f64, _n: usize) -> f64 {
        acc
    }
    /// Fold a contiguous slice with 8 independent lanes (vectorisable).
    #[inline]
    fn fold<T: Elem>(acc: f64, xs: &[T]) -> f64 {
        let mut l = [Self::INIT; 8];
        let ch = xs.chunks_exact(8);
        let rem = ch.remainder();
        for c in ch {
            for k in 0..8 {
                l[k] = Self::step(l[k], c[k].to_f64());
            }
        }
        let mut a = acc;
        for v in l {
            a = Self::combine(a, v);
        }
        for &v in rem {
            a = Self::step(a, v.to_f64());
        }
        a
    }
}

pub struct RSum;
pub struct RMean;
pub struct RProd;
pub struct RNanSum;
pub struct RNanProd;
pub struct RMax;
pub struct RMin;
pub struct RNorm1;
pub struct RNorm2;

#[inline(always)]
fn max_nan(a: f64, v: f64) -> f64 {
    // NaN propagates (as MXNet's red::maximum): once NaN, stays NaN.
    if a.is_nan() {
        a
    } else if !(a >= v) {
        v
    } else {
        a
    }
}
#[inline(always)]
fn min_nan(a: f64, v: f64) -> f64 {
    if a.is_nan() {
        a
    } else if !(a <= v) {
        v
    } else {
        a
    }
}

impl Reducer for RSum {
    const INT: Option<IntRed> = Some(IntRed::Sum);
    const INIT: f64 = 0.0;
    fn step(a: f64, v: f64) -> f64 {
        a + v
    }
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}
impl Reducer for RMean {
    const INT: Option<IntRed> = Some(IntRed::Mean);
    const INIT: f64 = 0.0;
    fn step(a: f64, v: f64) -> f64 {
        a + v
    }
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
    fn finish(a: f64, n: usize) -> f64 {
        a / n as f64
    }
}
impl Reducer for RProd {
    const INT: Option<IntRed> = Some(IntRed::Prod);
    const INIT: f64 = 1.0;
    fn step(a: f64, v: f64) -> f64 {
        a * v
    }
    fn combine(a: f64, b: f64) -> f64 {
        a * b
    }
}
impl Reducer for RNanSum {
    const INT: Option<IntRed> = Some(IntRed::Sum);
    const INIT: f64 = 0.0;
    fn step(a: f64, v: f64) -> f64 {
        if v.is_nan() {
            a
        } else {
            a + v
        }
    }
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}
impl Reducer for RNanProd {
    const INT: Option<IntRed> = Some(IntRed::Prod);
    const INIT: f64 = 1.0;
    fn step(a: f64, v: f64) -> f64 {
        if v.is_nan() {
            a
        } else {
            a * v
        }
    }
    fn combine(a: f64, b: f64) -> f64 {
        a * b
    }
}
impl Reducer for RMax {
    const INT: Option<IntRed> = Some(IntRed::Max);
    const INIT: f64 = f64::NEG_INFINITY;
    fn step(a: f64, v: f64) -> f64 {
        max_nan(a, v)
    }
    fn combine(a: f64, b: f64) -> f64 {
        max_nan(a, b)
    }
}
impl Reducer for RMin {
    const INT: Option<IntRed> = Some(IntRed::Min);
    const INIT: f64 = f64::INFINITY;
    fn step(a: f64, v: f64) -> f64 {
        min_nan(a, v)
    }
    fn combine(a: f64, b: f64) -> f64 {
        if b.is_nan() {
            b
        } else {
            min_nan(a, b)
        }
    }
}
impl Reducer for RNorm1 {
    const INIT: f64 = 0.0;
    fn step(a: f64, v: f64) -> f64 {
        a + v.abs()
    }
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}
impl Reducer for RNorm2 {
    const INIT: f64 = 0.0;
    fn step(a: f64, v: f64) -> f64 {
        a + v * v
    }
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
    fn finish(a: f64, _: usize) -> f64 {
        a.sqrt()
    }
}

/// Offsets of every combination of the given (size, stride) groups, in
/// row-major order of the groups.
fn group_offsets(groups: &[(usize, usize)]) -> Vec<usize> {
    let mut offs = vec![0usize];
    for &(n, st) in groups {
        let mut next = Vec::with_capacity(offs.len() * n);
        for &o in &offs {
            for i in 0..n {
                next.push(o + i * st);
            }
        }
        offs = next;
    }
    offs
}

/// Base offset of row-major index `o` over `groups` (size, stride).
#[inline]
fn base_of(mut o: usize, groups: &[(usize, usize)]) -> usize {
    let mut b = 0;
    for &(n, st) in groups.iter().rev() {
        b += (o % n) * st;
        o /= n;
    }
    b
}

/// Reduce `x` of shape `shape` over the axes where `mask` is true into
/// `out` (row-major over the kept axes).
pub fn reduce_into<T: Elem, O: Elem, R: Reducer>(
    x: &[T],
    shape: &[usize],
    mask: &[bool],
    out: &mut [O],
) {
    let n_red: usize = shape
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(&d, _)| d)
        .product();
    if x.is_empty() {
        let v = O::from_f64(R::finish(R::INIT, n_red));
        out.fill(v);
        return;
    }
    // Collapse: drop size-1 axes, merge neighbours with the same status.
    let mut groups: Vec<(usize, bool)> = Vec::new();
    for (&d, &m) in shape.iter().zip(mask) {
        if d == 1 {
            continue;
        }
        match groups.last_mut() {
            Some(g) if g.1 == m => g.0 *= d,
            _ => groups.push((d, m)),
        }
    }
    if groups.is_empty() {
        groups.push((1, true));
    }
    let sizes: Vec<usize> = groups.iter().map(|g| g.0).collect();
    let st = strides(&sizes);
    let kept: Vec<(usize, usize)> = groups
        .iter()
        .zip(&st)
        .filter(|(g, _)| !g.1)
        .map(|(g, &s)| (g.0, s))
        .collect();
    let big = x.len() >= 2 * PAR_GRAIN;
    let last_reduced = groups.last().map(|g| g.1).unwrap_or(true);
    if last_reduced {
        let l = groups.last().unwrap().0;
        let red: Vec<(usize, usize)> = groups[..groups.len() - 1]
            .iter()
            .zip(&st)
            .filter(|(g, _)| g.1)
            .map(|(g, &s)| (g.0, s))
            .collect();
        let roffs = group_offsets(&red);
        if out.len() == 1 {
            // Full (or single-output) reduction: split the work in chunks.
            let acc = if big {
                let parts: Vec<f64> = if roffs.len() == 1 {
                    par_map(l.div_ceil(PAR_GRAIN), |c| {
                        R::fold(R::INIT, &x[c * PAR_GRAIN..((c + 1) * PAR_GRAIN).min(l)])
                    })
                } else {
                    par_map(roffs.len(), |i| {
                        R::fold(R::INIT, &x[roffs[i]..roffs[i] + l])
                    })
                };
                parts.into_iter().fold(R::INIT, R::combine)
            } else {
                roffs.iter().fold(R::INIT, |a, &r| R::fold(a, &x[r..r + l]))
            };
            out[0] = O::from_f64(R::finish(acc, n_red));
            return;
        }
        let one = |o: usize, y: &mut O| {
            let b = base_of(o, &kept);
            let acc = roffs
                .iter()
                .fold(R::INIT, |a, &r| R::fold(a, &x[b + r..b + r + l]));
            *y = O::from_f64(R::finish(acc, n_red));
        };
        if big {
            par_chunks_mut(out, 64, |c, ys| {
                for (j, y) in ys.iter_mut().enumerate() {
                    one(c * 64 + j, y);
                }
            });
        } else {
            out.iter_mut().enumerate().for_each(|(o, y)| one(o, y));
        }
    } else {
        // The innermost group is kept: accumulate whole contiguous rows.
        let l = groups.last().unwrap().0;
        let red: Vec<(usize, usize)> = groups
            .iter()
            .zip(&st)
            .filter(|(g, _)| g.1)
            .map(|(g, &s)| (g.0, s))
            .collect();
        let roffs = group_offsets(&red);
        let outer = &kept[..kept.len() - 1];
        const CH: usize = 2048;
        let row = |r: usize, yrow: &mut [O]| {
            let b = base_of(r, outer);
            let mut acc = vec![R::INIT; CH.min(l)];
            for (c, ych) in yrow.chunks_mut(CH).enumerate() {
                let c0 = b + c * CH;
                let acc = &mut acc[..ych.len()];
                acc.fill(R::INIT);
                for &ro in &roffs {
                    let xs = &x[c0 + ro..c0 + ro + ych.len()];
                    for (a, &v) in acc.iter_mut().zip(xs) {
                        *a = R::step(*a, v.to_f64());
                    }
                }
                for (y, &a) in ych.iter_mut().zip(acc.iter()) {
                    *y = O::from_f64(R::finish(a, n_red));
                }
            }
        };
        if big && out.len() / l > 1 {
            par_chunks_mut(out, l, row);
        } else if big {
            // One row: split its columns across threads.
            par_chunks_mut(out, CH, |c, ych| {
                let mut acc = vec![R::INIT; ych.len()];
                for &ro in &roffs {
                    let xs = &x[c * CH + ro..c * CH + ro + ych.len()];
                    for (a, &v) in acc.iter_mut().zip(xs) {
                        *a = R::step(*a, v.to_f64());
                    }
                }
                for (y, &a) in ych.iter_mut().zip(acc.iter()) {
                    *y = O::from_f64(R::finish(a, n_red));
                }
            });
        } else {
            out.chunks_mut(l).enumerate().for_each(|(r, y)| row(r, y));
        }
    }
}

fn reduce_blob<R: Reducer>(x: &Blob, mask: &[bool], y: &Blob) {
    let int = matches!(x.dtype, DType::U8 | DType::I8 | DType::I32 | DType::I64);
    if let (Some(k), true, true) = (R::INT, int, x.dtype == y.dtype) {
        dispatch_dtype!(x.dtype, T => {
            reduce_int::<T>(x.data::<T>(), &x.shape, mask, y.data_mut::<T>(), k)
        });
        return;
    }
    dispatch_dtype!(x.dtype, T => {
        dispatch_dtype!(y.dtype, O => {
            reduce_into::<T, O, R>(x.data::<T>(), &x.shape, mask, y.data_mut::<O>())
        })
    })
}

/// An integer reduction in wrapping i64 arithmetic. The result wraps to
/// the dtype as MXNet's (and NumPy's same-dtype) sums do: int8 [100]*3 sums
/// to 44; a mean is that wrapped sum divided by the count (integer division,
/// as MXNet). Exact beyond 2^53.
fn reduce_int<T: Elem>(x: &[T], shape: &[usize], mask: &[bool], out: &mut [T], k: IntRed) {
    let (init, step): (i64, fn(i64, i64) -> i64) = match k {
        IntRed::Sum | IntRed::Mean => (0, i64::wrapping_add),
        IntRed::Prod => (1, i64::wrapping_mul),
        IntRed::Max => (i64::MIN, i64::max),
        IntRed::Min => (i64::MAX, i64::min),
    };
    let n_red: usize = shape
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(&d, _)| d)
        .product();
    let finish = |a: i64| -> T {
        match k {
            IntRed::Mean if n_red > 0 => T::from_i64(T::from_i64(a).to_i64() / n_red as i64),
            IntRed::Mean => T::from_i64(0),
            _ => T::from_i64(a),
        }
    };
    let st = strides(shape);
    let kept: Vec<(usize, usize)> = (0..shape.len())
        .filter(|&d| !mask[d])
        .map(|d| (shape[d], st[d]))
        .collect();
    // the reduced axes as (size, stride), innermost last; a contiguous
    // innermost run is folded as a slice
    let red: Vec<(usize, usize)> = (0..shape.len())
        .filter(|&d| mask[d] && shape[d] != 1)
        .map(|d| (shape[d], st[d]))
        .collect();
    let (roffs, run) = match red.last() {
        Some(&(n, 1)) => (group_offsets(&red[..red.len() - 1]), n),
        _ => (group_offsets(&red), 1),
    };
    let fold = |b: usize| -> i64 {
        let mut a = init;
        for &r in &roffs {
            for &v in &x[b + r..b + r + run] {
                a = step(a, v.to_i64());
            }
        }
        a
    };
    if out.len() == 1 && roffs.len() == 1 && x.len() >= 2 * PAR_GRAIN {
        // one long contiguous run: fold pieces in parallel (the operations
        // are associative and commutative in wrapping arithmetic)
        let parts = par_map(x.len().div_ceil(PAR_GRAIN), |c| {
            let xs = &x[c * PAR_GRAIN..((c + 1) * PAR_GRAIN).min(x.len())];
            xs.iter().fold(init, |a, &v| step(a, v.to_i64()))
        });
        out[0] = finish(parts.into_iter().fold(init, step));
        return;
    }
    let one = |o: usize, y: &mut T| *y = finish(fold(base_of(o, &kept)));
    if x.len() >= 2 * PAR_GRAIN && out.len() > 1 {
        par_chunks_mut(out, 64, |c, ys| {
            for (j, y) in ys.iter_mut().enumerate() {
                one(c * 64 + j, y);
            }
        });
    } else {
        out.iter_mut().enumerate().for_each(|(o, y)| one(o, y));
    }
}

// ---------------------------------------------------------------------------
// sum, mean, prod, nansum, nanprod, max, min
// ---------------------------------------------------------------------------

fn no_bool(op: &str, t: DType) -> Result<()> {
    if t == DType::Bool {
        return Err(Error::DType(format!(
            "{op}: dtype bool is not supported (cast to a numeric dtype first)"
        )));
    }
    Ok(())
}

fn reduce_infer_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(s) = &ins[0] {
        let p = c.p::<ReduceParam>();
        let (mask, out) = reduce_plan(c.name(), s, p)?;
        // max/min have no identity: an empty reduced axis is an error
        // unless the result itself is empty (NumPy: max over axis 1 of a
        // (0, 3) array is an empty (0,) array, over axis 0 an error)
        let empty_axis = s.iter().zip(&mask).any(|(&d, &m)| m && d == 0);
        if matches!(c.name(), "max" | "min") && empty_axis && numel(&out) > 0 {
            return Err(Error::Shape(format!(
                "{}: cannot reduce an empty axis of input shape {} (no identity)",
                c.name(),
                fmt_shape(s)
            )));
        }
        outs[0] = Some(out);
    }
    Ok(())
}

fn reduce_infer_type(
    c: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let t = ins[0].or(outs[0]);
    if let Some(t) = t {
        no_bool(c.name(), t)?;
        ins[0] = Some(t);
        outs[0] = Some(t);
    }
    Ok(())
}

fn reduce_kernel<R: Reducer>(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (mask, _) = reduce_plan(c.name(), &i[0].shape, c.p::<ReduceParam>())?;
    reduce_blob::<R>(&i[0], &mask, &o[0]);
    Ok(())
}

/// Attributes that pass a reduction's axes on to gradient ops.
fn rattrs(p: &ReduceParam) -> Vec<(&'static str, String)> {
    vec![
        ("axis", axes_attr(&p.axis)),
        ("keepdims", py_bool(p.keepdims)),
        ("exclude", py_bool(p.exclude)),
    ]
}

/// Broadcast a reduced value (gradient or output) back to data's shape.
fn g_back(b: B, p: &ReduceParam, v: Entry, data: Entry) -> Result<Entry> {
    b.op1("_reduce_grad_broadcast", &rattrs(p), &[v, data])
}

fn grad_sum(c: &OpCall, b: B, x: &[Entry], _: &[Entry], g: &[Entry]) -> Result<Vec<Option<Entry>>> {
    Ok(vec![Some(g_back(b, c.p::<ReduceParam>(), g[0], x[0])?)])
}

fn grad_mean(
    c: &OpCall,
    b: B,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let mut a = rattrs(c.p::<ReduceParam>());
    a.push(("mean", "True".to_string()));
    Ok(vec![Some(b.op1(
        "_reduce_grad_broadcast",
        &a,
        &[g[0], x[0]],
    )?)])
}

fn grad_prod(
    c: &OpCall,
    b: B,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<ReduceParam>();
    let gb = g_back(b, p, g[0], x[0])?;
    let yb = g_back(b, p, y[0], x[0])?;
    let t = b.op1("elemwise_div", &[], &[yb, x[0]])?;
    Ok(vec![Some(b.op1("elemwise_mul", &[], &[gb, t])?)])
}

fn grad_nansum(
    c: &OpCall,
    b: B,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let gb = g_back(b, c.p::<ReduceParam>(), g[0], x[0])?;
    let not_nan = b.op1("_equal", &[], &[x[0], x[0]])?;
    Ok(vec![Some(b.op1("elemwise_mul", &[], &[gb, not_nan])?)])
}

fn grad_nanprod(
    c: &OpCall,
    b: B,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<ReduceParam>();
    let gb = g_back(b, p, g[0], x[0])?;
    let yb = g_back(b, p, y[0], x[0])?;
    let t = b.op1("elemwise_div", &[], &[yb, x[0]])?;
    let t = b.op1("elemwise_mul", &[], &[gb, t])?;
    let not_nan = b.op1("_equal", &[], &[x[0], x[0]])?;
    let z = b.op1("zeros_like", &[], &[t])?;
    Ok(vec![Some(b.op1("where", &[], &[not_nan, t, z])?)])
}

/// max/min: the gradient goes to every element equal to the result (all
/// tied extrema get the full gradient, as in MXNet 1.x).
fn grad_extremum(
    c: &OpCall,
    b: B,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<ReduceParam>();
    let gb = g_back(b, p, g[0], x[0])?;
    let yb = g_back(b, p, y[0], x[0])?;
    let m = b.op1("_equal", &[], &[x[0], yb])?;
    Ok(vec![Some(b.op1("elemwise_mul", &[], &[gb, m])?)])
}

macro_rules! reduce_op {
    ($NAME:ident, $name:expr, [$($alias:expr),*], $R:ty, $grad:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$($alias),*],
            doc: $doc,
            parse: |a| Ok(Box::new(parse_reduce($name, a)?)),
            infer_shape: reduce_infer_shape,
            infer_type: reduce_infer_type,
            cpu: Some(reduce_kernel::<$R>),
            grad: Some($grad),
            ..OpDef::BASE
        };
    };
}

reduce_op!(
    SUM,
    "sum",
    ["sum_axis"],
    RSum,
    grad_sum,
    "Sum over the given axes (all by default)."
);
reduce_op!(
    MEAN,
    "mean",
    [],
    RMean,
    grad_mean,
    "Mean over the given axes (all by default)."
);
reduce_op!(
    PROD,
    "prod",
    [],
    RProd,
    grad_prod,
    "Product over the given axes (all by default)."
);
reduce_op!(
    NANSUM,
    "nansum",
    [],
    RNanSum,
    grad_nansum,
    "Sum over the given axes, treating NaN as zero."
);
reduce_op!(
    NANPROD,
    "nanprod",
    [],
    RNanProd,
    grad_nanprod,
    "Product over the given axes, treating NaN as one."
);
reduce_op!(
    MAX,
    "max",
    ["max_axis"],
    RMax,
    grad_extremum,
    "Maximum over the given axes (all by default)."
);
reduce_op!(
    MIN,
    "min",
    ["min_axis"],
    RMin,
    grad_extremum,
    "Minimum over the given axes (all by default)."
);

// ---------------------------------------------------------------------------
// _reduce_grad_broadcast
// ---------------------------------------------------------------------------

pub struct RgbParam {
    r: ReduceParam,
    mean: bool,
}

pub static REDUCE_GRAD_BROADCAST: OpDef = OpDef {
    name: "_reduce_grad_broadcast",
    doc: "Broadcast ograd (the output of a reduction of data with axis/keepdims/exclude) back to data's shape; divided by the reduced count when mean=True.",
    inputs: &["ograd", "data"],
    parse: |a| {
        let op = "_reduce_grad_broadcast";
        Ok(Box::new(RgbParam { r: parse_reduce(op, a)?, mean: a.p(op).bool("mean", false)? }))
    },
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            let d = &d;
            let (_, rs) = reduce_plan(c.name(), d, &c.p::<RgbParam>().r)?;
            match &ins[0] {
                None => ins[0] = Some(rs),
                Some(g) if *g != rs => {
                    return Err(Error::Shape(format!(
                        "_reduce_grad_broadcast: ograd shape {} does not match the reduced shape {} of data shape {}",
                        fmt_shape(g),
                        fmt_shape(&rs),
                        fmt_shape(d)
                    )))
                }
                _ => {}
            }
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if ins[0].is_none() {
            ins[0] = outs[0].or(ins[1]);
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<RgbParam>();
        let (g, y) = (&i[0], &o[0]);
        let (mask, _) = reduce_plan(c.name(), &y.shape, &p.r)?;
        let ks = keep_shape(&y.shape, &mask);
        let n_red: usize = y.shape.iter().zip(&mask).filter(|(_, &m)| m).map(|(&d, _)| d).product();
        let scale = if p.mean { 1.0 / n_red.max(1) as f64 } else { 1.0 };
        dispatch_dtype!(g.dtype, T => {
            let z = [T::default()];
            if scale == 1.0 {
                map2(g.data::<T>(), &ks, &z, &[1], y.data_mut::<T>(), &y.shape, |a, _| a);
            } else {
                map2(g.data::<T>(), &ks, &z, &[1], y.data_mut::<T>(), &y.shape, |a, _| T::from_f64(a.to_f64() * scale));
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let p = c.p::<RgbParam>();
        let op = if p.mean { "mean" } else { "sum" };
        Ok(vec![Some(b.op1(op, &rattrs(&p.r), &[g[0]])?), None])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// norm
// ---------------------------------------------------------------------------

pub struct NormParam {
    ord: i64,
    r: ReduceParam,
    out_dtype: Option<DType>,
}

pub static NORM: OpDef = OpDef {
    name: "norm",
    doc: "L1 (ord=1) or L2 (ord=2) norm over the given axes (all by default; a 2-tuple gives the Frobenius norm of matrices).",
    parse: |a| {
        let p = a.p("norm");
        let ord = p.i64("ord", 2)?;
        if ord != 1 && ord != 2 {
            return Err(Error::Param(format!("norm: argument 'ord' must be 1 or 2, got {ord}")));
        }
        let out_dtype = p.opt_dtype("out_dtype")?;
        if let Some(t) = out_dtype {
            if !matches!(t, DType::F16 | DType::F32 | DType::F64 | DType::I64 | DType::I32 | DType::I8) {
                return Err(Error::Param(format!(
                    "norm: argument 'out_dtype' must be one of float16, float32, float64, int64, int32, int8, got '{}'",
                    t.name()
                )));
            }
        }
        let r = ReduceParam { axis: parse_axes("norm", a)?, keepdims: p.bool("keepdims", false)?, exclude: false };
        Ok(Box::new(NormParam { ord, r, out_dtype }))
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(reduce_plan("norm", s, &c.p::<NormParam>().r)?.1);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<NormParam>();
        if let Some(t) = ins[0] {
            no_bool("norm", t)?;
        }
        match p.out_dtype {
            Some(t) => outs[0] = Some(t),
            None => {
                let t = ins[0].or(outs[0]);
                ins[0] = t;
                outs[0] = t;
            }
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<NormParam>();
        let (mask, _) = reduce_plan("norm", &i[0].shape, &p.r)?;
        if p.ord == 1 {
            reduce_blob::<RNorm1>(&i[0], &mask, &o[0]);
        } else {
            reduce_blob::<RNorm2>(&i[0], &mask, &o[0]);
        }
        Ok(())
    }),
    grad: Some(|c, b, x, y, g| {
        let p = c.p::<NormParam>();
        let (mut gg, mut yy) = (g[0], y[0]);
        if p.out_dtype.is_some() {
            gg = b.op1("_cast_like", &[], &[gg, x[0]])?;
            yy = b.op1("_cast_like", &[], &[yy, x[0]])?;
        }
        let gb = g_back(b, &p.r, gg, x[0])?;
        let t = if p.ord == 1 {
            b.op1("sign", &[], &[x[0]])?
        } else {
            let yb = g_back(b, &p.r, yy, x[0])?;
            b.op1("elemwise_div", &[], &[x[0], yb])?
        };
        Ok(vec![Some(b.op1("elemwise_mul", &[], &[gb, t])?)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// argmax, argmin
// ---------------------------------------------------------------------------

/// MXNet's `ReduceAxisParam`: one optional axis (None = flatten).
#[derive(Debug, Clone)]
pub struct ReduceAxisParam {
    pub axis: Option<i64>,
    pub keepdims: bool,
}

/// MXNet's `ReduceAxisShapeImpl`. Returns (outer, n, inner) and the output shape.
pub fn reduce_axis_plan(
    op: &str,
    ishape: &[usize],
    axis: Option<i64>,
    keepdims: bool,
) -> Result<((usize, usize, usize), Shape)> {
    let nd = ishape.len();
    let Some(a) = axis else {
        let out = if keepdims { vec![1; nd] } else { vec![1] };
        return Ok(((1, numel(ishape), 1), out));
    };
    let ax = crate::base::shape::norm_axis(op, a, nd).map_err(|_| {
        Error::Param(format!(
            "{op}: axis {a} is out of range for input of shape {} ({nd} dimensions)",
            fmt_shape(ishape)
        ))
    })?;
    let ax = ax.min(nd.saturating_sub(1));
    let outer: usize = ishape[..ax].iter().product();
    let n = ishape.get(ax).copied().unwrap_or(1);
    let inner: usize = ishape
        .get(ax + 1..)
        .map(|s| s.iter().product())
        .unwrap_or(1);
    let out = if keepdims {
        let mut s = ishape.to_vec();
        if nd > 0 {
            s[ax] = 1;
        }
        s
    } else if nd <= 1 {
        vec![1]
    } else {
        let mut s = ishape.to_vec();
        s.remove(ax);
        s
    };
    Ok(((outer, n, inner), out))
}

fn parse_reduce_axis(op: &str, a: &super::attrs::Attrs) -> Result<ReduceAxisParam> {
    let p = a.p(op);
    Ok(ReduceAxisParam {
        axis: p.opt_i64("axis")?,
        keepdims: p.bool("keepdims", false)?,
    })
}

fn arg_kernel<const MAX: bool>(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<ReduceAxisParam>();
    let ((outer, n, inner), _) = reduce_axis_plan(c.name(), &i[0].shape, p.axis, p.keepdims)?;
    if n == 0 {
        return Err(Error::Shape(format!(
            "{}: cannot search an empty axis (input shape {})",
            c.name(),
            fmt_shape(&i[0].shape)
        )));
    }
    // compared in the input's own type: exact for int64 beyond 2^53
    #[inline(always)]
    #[allow(clippy::eq_op)]
    fn better<T: PartialOrd, const MAX: bool>(v: T, best: T) -> bool {
        // `x != x` only for NaN: the first NaN wins
        if best != best {
            false
        } else if v != v {
            true
        } else if MAX {
            v > best
        } else {
            v < best
        }
    }
    dispatch_dtype!(i[0].dtype, T => {
        dispatch_dtype!(o[0].dtype, O => {
            let x = i[0].data::<T>();
            let y = o[0].data_mut::<O>();
            let block = |ob: usize, yb: &mut [O]| {
                let xb = &x[ob * n * inner..(ob + 1) * n * inner];
                if inner == 1 {
                    let (mut bi, mut bv) = (0usize, xb[0]);
                    for (k, &v) in xb.iter().enumerate().skip(1) {
                        if better::<T, MAX>(v, bv) {
                            bi = k;
                            bv = v;
                        }
                    }
                    yb[0] = O::from_f64(bi as f64);
                } else {
                    let mut bv: Vec<T> = xb[..inner].to_vec();
                    let mut bi = vec![0usize; inner];
                    for k in 1..n {
                        let row = &xb[k * inner..(k + 1) * inner];
                        for j in 0..inner {
                            let v = row[j];
                            if better::<T, MAX>(v, bv[j]) {
                                bv[j] = v;
                                bi[j] = k;
                            }
                        }
                    }
                    for (yv, &k) in yb.iter_mut().zip(&bi) {
                        *yv = O::from_f64(k as f64);
                    }
                }
            };
            if x.len() >= 2 * PAR_GRAIN && outer > 1 {
                par_chunks_mut(y, inner, block);
            } else {
                y.chunks_mut(inner).enumerate().for_each(|(ob, yb)| block(ob, yb));
            }
        })
    });
    Ok(())
}

fn arg_infer_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(s) = &ins[0] {
        let p = c.p::<ReduceAxisParam>();
        let ((_, n, _), out) = reduce_axis_plan(c.name(), s, p.axis, p.keepdims)?;
        if n == 0 {
            return Err(Error::Shape(format!(
                "{}: cannot search an empty axis (input shape {})",
                c.name(),
                fmt_shape(s)
            )));
        }
        outs[0] = Some(out);
    }
    Ok(())
}

const NO_GRAD: Option<super::registry::GradFn> = Some(|_, _, i, _, _| Ok(vec![None; i.len()]));

pub static ARGMAX: OpDef = OpDef {
    name: "argmax",
    doc: "Index of the maximum along axis (flattened when axis=None), as the input's dtype (MXNet 1.x).",
    parse: |a| Ok(Box::new(parse_reduce_axis("argmax", a)?)),
    infer_shape: arg_infer_shape,
    infer_type: reduce_infer_type,
    cpu: Some(arg_kernel::<true>),
    grad: NO_GRAD,
    ..OpDef::BASE
};

pub static ARGMIN: OpDef = OpDef {
    name: "argmin",
    doc: "Index of the minimum along axis (flattened when axis=None), as the input's dtype (MXNet 1.x).",
    parse: |a| Ok(Box::new(parse_reduce_axis("argmin", a)?)),
    infer_shape: arg_infer_shape,
    infer_type: reduce_infer_type,
    cpu: Some(arg_kernel::<false>),
    grad: NO_GRAD,
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &SUM,
    &MEAN,
    &PROD,
    &NANSUM,
    &NANPROD,
    &MAX,
    &MIN,
    &REDUCE_GRAD_BROADCAST,
    &NORM,
    &ARGMAX,
    &ARGMIN,
];

/// Test helpers shared with the index family: arrays, an eager
/// `GradBuilder` and a central finite-difference gradient check.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::base::dtype::Elem;
    use crate::dispatch_dtype;
    use crate::error::Result;
    use crate::ops::attrs::Attrs;
    use crate::ops::registry::{call, invoke, lookup, parse_call, Entry, GradBuilder};
    use crate::{Context, NDArray};
    use std::sync::Arc;

    pub fn arr(v: Vec<f64>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape, Context::default()).unwrap()
    }
    pub fn arr32(v: &[f32], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape, Context::default()).unwrap()
    }
    pub fn vals(a: &NDArray) -> Vec<f64> {
        dispatch_dtype!(a.dtype(), T => a.to_vec::<T>().unwrap().into_iter().map(|v| v.to_f64()).collect())
    }
    pub fn run1(op: &str, attrs: &[(&str, &str)], ins: &[NDArray]) -> NDArray {
        call(op, attrs, ins)
            .unwrap_or_else(|e| panic!("{op}: {e}"))
            .remove(0)
    }
    pub fn err(op: &str, attrs: &[(&str, &str)], ins: &[NDArray]) -> String {
        match call(op, attrs, ins) {
            Ok(o) => match o[0].wait_to_read() {
                Ok(()) => panic!("{op} with {attrs:?} should have failed"),
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        }
    }
    /// Deterministic pseudo-random values in [-1, 1).
    pub fn rnd(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }
    pub fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}: lengths differ");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs());
            assert!(
                ok,
                "{what}: element {i}: got {x}, expected {y}\n got {a:?}\nwant {b:?}"
            );
        }
    }

    /// Runs gradient ops immediately.
    pub struct Eager(pub Vec<NDArray>);
    impl GradBuilder for Eager {
        fn op(
            &mut self,
            name: &str,
            attrs: &[(&str, String)],
            inputs: &[Entry],
        ) -> Result<Vec<Entry>> {
            let ins: Vec<NDArray> = inputs.iter().map(|&i| self.0[i].clone()).collect();
            let a: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let outs = call(name, &a, &ins)?;
            let mut ids = Vec::new();
            for o in outs {
                self.0.push(o);
                ids.push(self.0.len() - 1);
            }
            Ok(ids)
        }
    }

    /// Forward outputs and the gradient of sum_o sum(w_o * y_o) for each input.
    pub fn grads(
        op: &str,
        attrs: &[(&str, &str)],
        ins: &[NDArray],
        ws: &[NDArray],
    ) -> (Vec<NDArray>, Vec<Option<Vec<f64>>>) {
        let def = lookup(op).unwrap();
        let c = Arc::new(parse_call(def, Attrs::from_pairs(attrs)).unwrap());
        let outs = invoke(c.clone(), ins, None, None).unwrap();
        let mut b = Eager(Vec::new());
        b.0.extend(ins.iter().cloned());
        b.0.extend(outs.iter().cloned());
        b.0.extend(ws.iter().cloned());
        let (n, m) = (ins.len(), outs.len());
        let xi: Vec<Entry> = (0..n).collect();
        let yi: Vec<Entry> = (n..n + m).collect();
        let gi: Vec<Entry> = (n + m..n + m + ws.len()).collect();
        let g = (def.grad.expect("operator has a gradient"))(&c, &mut b, &xi, &yi, &gi).unwrap();
        let g = g.into_iter().map(|e| e.map(|e| vals(&b.0[e]))).collect();
        (outs, g)
    }

    /// Compare the analytic gradient (from the op's GradFn) with central
    /// differences for the inputs in `wrt` (float64 inputs).
    pub fn check_grad(op: &str, attrs: &[(&str, &str)], ins: &[NDArray], wrt: &[usize]) {
        let outs = call(op, attrs, ins).unwrap();
        let ws: Vec<NDArray> = outs
            .iter()
            .enumerate()
            .map(|(k, o)| {
                let w = rnd(o.size(), 77 + k as u64);
                let w = arr(w, &o.shape);
                crate::ops::registry::call("_cast_like", &[], &[w, o.clone()])
                    .unwrap()
                    .remove(0)
            })
            .collect();
        let (_, g) = grads(op, attrs, ins, &ws);
        let wv: Vec<Vec<f64>> = ws.iter().map(vals).collect();
        let loss = |xs: &[NDArray]| -> f64 {
            let o = call(op, attrs, xs).unwrap();
            o.iter()
                .zip(&wv)
                .filter(|(y, _)| y.dtype().is_float())
                .map(|(y, w)| vals(y).iter().zip(w).map(|(a, b)| a * b).sum::<f64>())
                .sum()
        };
        for &k in wrt {
            let x0 = vals(&ins[k]);
            let analytic = g[k].clone().unwrap_or_else(|| vec![0.0; x0.len()]);
            let eps = 1e-6;
            let mut numeric = Vec::new();
            for i in 0..x0.len() {
                let mut xs = ins.to_vec();
                let mut xp = x0.clone();
                xp[i] += eps;
                xs[k] = arr(xp, &ins[k].shape);
                let lp = loss(&xs);
                let mut xm = x0.clone();
                xm[i] -= eps;
                xs[k] = arr(xm, &ins[k].shape);
                let lm = loss(&xs);
                numeric.push((lp - lm) / (2.0 * eps));
            }
            assert_close(
                &analytic,
                &numeric,
                1e-5,
                &format!("{op} {attrs:?} gradient wrt input {k}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;
    use crate::NDArray;

    /// Brute-force reduction: walk every input element, map it to its
    /// output position through the keepdims shape.
    fn naive(
        x: &[f64],
        shape: &[usize],
        mask: &[bool],
        init: f64,
        f: fn(f64, f64) -> f64,
    ) -> Vec<f64> {
        let ks = keep_shape(shape, mask);
        let mut out = vec![init; numel(&ks)];
        let kst = strides(&ks);
        for (flat, &v) in x.iter().enumerate() {
            let (mut rem, mut o) = (flat, 0);
            for d in (0..shape.len()).rev() {
                let i = rem % shape[d];
                rem /= shape[d];
                if !mask[d] {
                    o += i * kst[d];
                }
            }
            out[o] = f(out[o], v);
        }
        out
    }

    fn mask_of(nd: usize, axes: &[usize], exclude: bool) -> Vec<bool> {
        (0..nd).map(|i| axes.contains(&i) != exclude).collect()
    }

    #[test]
    fn shapes_follow_mxnet() {
        let x = arr(rnd(24, 1), &[2, 3, 4]);
        let cases: &[(&[(&str, &str)], &[usize])] = &[
            (&[], &[1]),
            (&[("axis", "()")], &[1]),
            (&[("keepdims", "True")], &[1, 1, 1]),
            (&[("axis", "1")], &[2, 4]),
            (&[("axis", "-1")], &[2, 3]),
            (&[("axis", "(0, 2)")], &[3]),
            (&[("axis", "(0, 2)"), ("keepdims", "True")], &[1, 3, 1]),
            (&[("axis", "1"), ("exclude", "True")], &[3]),
            (
                &[("axis", "1"), ("exclude", "True"), ("keepdims", "True")],
                &[1, 3, 1],
            ),
            (&[("axis", "(0, 1, 2)")], &[1]),
            (&[("axis", "(-3, -2)"), ("exclude", "True")], &[2, 3]),
            // exclude is ignored when every axis is reduced (axis=None).
            (&[("exclude", "True")], &[1]),
        ];
        for (attrs, want) in cases {
            for op in [
                "sum", "sum_axis", "mean", "prod", "max", "max_axis", "min", "min_axis", "nansum",
                "nanprod",
            ] {
                assert_eq!(
                    run1(op, attrs, &[x.clone()]).shape,
                    want.to_vec(),
                    "{op} {attrs:?}"
                );
            }
        }
    }

    #[test]
    fn bad_axes_are_named() {
        let x = arr(rnd(6, 1), &[2, 3]);
        let e = err("sum", &[("axis", "2")], &[x.clone()]);
        assert!(
            e.contains("sum") && e.contains("axis 2") && e.contains("(2, 3)"),
            "{e}"
        );
        let e = err("mean", &[("axis", "-3")], &[x.clone()]);
        assert!(e.contains("mean") && e.contains("axis -3"), "{e}");
        let e = err("max", &[("axis", "(1, -1)")], &[x.clone()]);
        assert!(e.contains("max") && e.contains("twice"), "{e}");
        let e = err("argmax", &[("axis", "5")], &[x.clone()]);
        assert!(e.contains("argmax") && e.contains("axis 5"), "{e}");
        let e = err("norm", &[("ord", "3")], &[x.clone()]);
        assert!(e.contains("norm") && e.contains("ord"), "{e}");
        let e = err("sum", &[("axis", "x")], &[x.clone()]);
        assert!(e.contains("sum") && e.contains("axis"), "{e}");
        let empty = arr(vec![], &[0, 3]);
        let e = err("max", &[], &[empty.clone()]);
        assert!(e.contains("max") && e.contains("empty"), "{e}");
        let e = err("min", &[("axis", "0")], &[empty.clone()]);
        assert!(e.contains("min") && e.contains("empty"), "{e}");
        // over a non-empty axis the result is empty, as in NumPy
        for op in ["max", "min"] {
            let y = run1(op, &[("axis", "1")], &[empty.clone()]);
            assert_eq!(y.shape, vec![0], "{op}");
        }
        // sum of nothing is zero, as in NumPy and MXNet.
        assert_eq!(vals(&run1("sum", &[("axis", "0")], &[empty])), vec![0.0; 3]);
    }

    #[test]
    fn values_match_brute_force() {
        let shapes: &[&[usize]] = &[&[7], &[3, 5], &[2, 3, 4], &[4, 1, 3, 2], &[2, 3, 2, 5]];
        for (si, &shape) in shapes.iter().enumerate() {
            let nd = shape.len();
            let x = rnd(numel(shape), si as u64 + 10)
                .iter()
                .map(|v| v + 0.2)
                .collect::<Vec<_>>();
            let xa = arr(x.clone(), shape);
            // every subset of axes, with and without exclude/keepdims
            for bits in 0..(1u32 << nd) {
                let axes: Vec<usize> = (0..nd).filter(|i| bits >> i & 1 == 1).collect();
                for exclude in [false, true] {
                    for keepdims in [false, true] {
                        let (axis, mask) = if axes.is_empty() {
                            ("None".to_string(), vec![true; nd])
                        } else {
                            (
                                format!(
                                    "({},)",
                                    axes.iter()
                                        .map(|a| a.to_string())
                                        .collect::<Vec<_>>()
                                        .join(",")
                                ),
                                mask_of(nd, &axes, exclude),
                            )
                        };
                        let attrs = [
                            ("axis", axis.as_str()),
                            ("exclude", if exclude { "True" } else { "False" }),
                            ("keepdims", if keepdims { "1" } else { "0" }),
                        ];
                        let n_red: usize = shape
                            .iter()
                            .zip(&mask)
                            .filter(|(_, &m)| m)
                            .map(|(&d, _)| d)
                            .product();
                        let refs: [(&str, Vec<f64>); 5] = [
                            ("sum", naive(&x, shape, &mask, 0.0, |a, b| a + b)),
                            ("prod", naive(&x, shape, &mask, 1.0, |a, b| a * b)),
                            ("max", naive(&x, shape, &mask, f64::NEG_INFINITY, f64::max)),
                            ("min", naive(&x, shape, &mask, f64::INFINITY, f64::min)),
                            (
                                "mean",
                                naive(&x, shape, &mask, 0.0, |a, b| a + b)
                                    .iter()
                                    .map(|v| v / n_red as f64)
                                    .collect(),
                            ),
                        ];
                        for (op, want) in refs {
                            let y = run1(op, &attrs, &[xa.clone()]);
                            assert_close(
                                &vals(&y),
                                &want,
                                1e-12,
                                &format!("{op} {shape:?} {attrs:?}"),
                            );
                        }
                        let y = run1(
                            "norm",
                            &[("axis", attrs[0].1), ("keepdims", attrs[2].1)],
                            &[xa.clone()],
                        );
                        if !exclude {
                            let want: Vec<f64> = naive(&x, shape, &mask, 0.0, |a, b| a + b * b)
                                .iter()
                                .map(|v| v.sqrt())
                                .collect();
                            assert_close(
                                &vals(&y),
                                &want,
                                1e-12,
                                &format!("norm {shape:?} {attrs:?}"),
                            );
                            let y = run1(
                                "norm",
                                &[("ord", "1"), ("axis", attrs[0].1), ("keepdims", attrs[2].1)],
                                &[xa.clone()],
                            );
                            let want = naive(&x, shape, &mask, 0.0, |a, b| a + b.abs());
                            assert_close(
                                &vals(&y),
                                &want,
                                1e-12,
                                &format!("norm ord=1 {shape:?} {attrs:?}"),
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn large_inputs_use_the_parallel_paths() {
        // Full reduction, last-axis reduction and first-axis reduction on
        // arrays above the parallel threshold.
        let (r, c) = (300, 700);
        let x: Vec<f64> = (0..r * c).map(|i| ((i % 97) as f64) * 0.5 - 20.0).collect();
        let xa = arr32(&x.iter().map(|&v| v as f32).collect::<Vec<_>>(), &[r, c]);
        let total: f64 = x.iter().sum();
        assert_close(
            &vals(&run1("sum", &[], &[xa.clone()])),
            &[total],
            1e-9,
            "full sum",
        );
        let rows: Vec<f64> = (0..r).map(|i| x[i * c..(i + 1) * c].iter().sum()).collect();
        assert_close(
            &vals(&run1("sum", &[("axis", "1")], &[xa.clone()])),
            &rows,
            1e-9,
            "row sums",
        );
        let cols: Vec<f64> = (0..c).map(|j| (0..r).map(|i| x[i * c + j]).sum()).collect();
        assert_close(
            &vals(&run1("sum", &[("axis", "0")], &[xa.clone()])),
            &cols,
            1e-9,
            "column sums",
        );
        let cmax: Vec<f64> = (0..c)
            .map(|j| (0..r).map(|i| x[i * c + j]).fold(f64::MIN, f64::max))
            .collect();
        assert_close(
            &vals(&run1("max", &[("axis", "0")], &[xa.clone()])),
            &cmax,
            0.0,
            "column max",
        );
        let am: Vec<f64> = (0..r)
            .map(|i| {
                let row = &x[i * c..(i + 1) * c];
                let m = row.iter().cloned().fold(f64::MIN, f64::max);
                row.iter().position(|&v| v == m).unwrap() as f64
            })
            .collect();
        assert_close(
            &vals(&run1("argmax", &[("axis", "1")], &[xa.clone()])),
            &am,
            0.0,
            "argmax rows",
        );
        // 3-D with the middle axis reduced and many rows
        let xa3 = arr(x.clone(), &[r, 7, 100]);
        let want: Vec<f64> = (0..r)
            .flat_map(|i| {
                let x = &x;
                (0..100).map(move |k| (0..7).map(|j| x[(i * 7 + j) * 100 + k]).sum())
            })
            .collect();
        assert_close(
            &vals(&run1("sum", &[("axis", "1")], &[xa3])),
            &want,
            1e-12,
            "middle axis",
        );
    }

    #[test]
    fn dtypes_and_nan_handling() {
        let xi = NDArray::from_vec(vec![1i32, 2, 3, 4, 5, 7], &[2, 3], Default::default()).unwrap();
        let y = run1("sum", &[("axis", "1")], &[xi.clone()]);
        assert_eq!(y.dtype(), DType::I32);
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![6, 16]);
        // integer mean truncates, as MXNet's integer division does
        assert_eq!(
            run1("mean", &[("axis", "1")], &[xi.clone()])
                .to_vec::<i32>()
                .unwrap(),
            vec![2, 5]
        );
        assert_eq!(
            run1("max", &[], &[xi.clone()]).to_vec::<i32>().unwrap(),
            vec![7]
        );
        let h = NDArray::from_vec(
            vec![half::f16::from_f32(0.5); 4000],
            &[4000],
            Default::default(),
        )
        .unwrap();
        // f64 accumulation: 2000 is exact in f16, naive f16 accumulation stalls at 1024.
        assert_eq!(
            run1("sum", &[], &[h]).to_vec::<half::f16>().unwrap()[0].to_f32(),
            2000.0
        );
        let nan = f64::NAN;
        let x = arr(vec![1.0, nan, 3.0, 2.0, 2.0, nan], &[2, 3]);
        assert_close(
            &vals(&run1("nansum", &[("axis", "1")], &[x.clone()])),
            &[4.0, 4.0],
            0.0,
            "nansum",
        );
        assert_close(
            &vals(&run1("nanprod", &[("axis", "1")], &[x.clone()])),
            &[3.0, 4.0],
            0.0,
            "nanprod",
        );
        assert_close(
            &vals(&run1("sum", &[("axis", "1")], &[x.clone()])),
            &[nan, nan],
            0.0,
            "sum with nan",
        );
        assert_close(
            &vals(&run1("max", &[("axis", "1")], &[x.clone()])),
            &[nan, nan],
            0.0,
            "max propagates nan",
        );
        assert_close(
            &vals(&run1("min", &[("axis", "0")], &[x.clone()])),
            &[1.0, nan, nan],
            0.0,
            "min propagates nan",
        );
        let b = NDArray::from_vec(vec![true, false], &[2], Default::default()).unwrap();
        let e = err("sum", &[], &[b]);
        assert!(e.contains("sum") && e.contains("bool"), "{e}");
        // norm out_dtype
        let x = arr32(&[3.0, 4.0], &[2]);
        let y = run1("norm", &[("out_dtype", "float64")], &[x]);
        assert_eq!(y.dtype(), DType::F64);
        assert_eq!(vals(&y), vec![5.0]);
    }

    #[test]
    fn argmax_argmin() {
        let x = arr32(&[1.0, 5.0, 5.0, 0.0, -1.0, 2.0, 9.0, -3.0], &[2, 4]);
        let y = run1("argmax", &[("axis", "1")], &[x.clone()]);
        assert_eq!(y.shape, vec![2]);
        assert_eq!(y.dtype(), DType::F32);
        assert_eq!(vals(&y), vec![1.0, 2.0]); // first of the tied maxima
        assert_eq!(
            vals(&run1("argmin", &[("axis", "-1")], &[x.clone()])),
            vec![3.0, 3.0]
        );
        assert_eq!(
            vals(&run1("argmax", &[("axis", "0")], &[x.clone()])),
            vec![0.0, 0.0, 1.0, 0.0]
        );
        let y = run1(
            "argmax",
            &[("axis", "0"), ("keepdims", "True")],
            &[x.clone()],
        );
        assert_eq!(y.shape, vec![1, 4]);
        let y = run1("argmax", &[], &[x.clone()]);
        assert_eq!((y.shape.clone(), vals(&y)), (vec![1], vec![6.0]));
        let y = run1("argmin", &[("keepdims", "True")], &[x.clone()]);
        assert_eq!((y.shape.clone(), vals(&y)), (vec![1, 1], vec![7.0]));
        // output dtype follows the input dtype (MXNet 1.x ElemwiseType)
        let xd = arr(vec![0.0, 2.0, 1.0], &[3]);
        assert_eq!(run1("argmax", &[("axis", "0")], &[xd]).dtype(), DType::F64);
        assert_eq!(
            grads(
                "argmax",
                &[("axis", "1")],
                &[x.clone()],
                &[arr32(&[1.0, 1.0], &[2])]
            )
            .1,
            vec![None]
        );
    }

    #[test]
    fn gradients_match_finite_differences() {
        let x = arr(rnd(24, 5).iter().map(|v| v + 1.5).collect(), &[2, 3, 4]);
        let attr_sets: &[&[(&str, &str)]] = &[
            &[],
            &[("keepdims", "True")],
            &[("axis", "1")],
            &[("axis", "-1"), ("keepdims", "True")],
            &[("axis", "(0, 2)")],
            &[("axis", "1"), ("exclude", "True")],
            &[
                ("axis", "(0, 1)"),
                ("exclude", "True"),
                ("keepdims", "True"),
            ],
        ];
        for attrs in attr_sets {
            for op in ["sum", "mean", "prod", "max", "min", "nansum", "nanprod"] {
                check_grad(op, attrs, &[x.clone()], &[0]);
            }
            let no_ex: Vec<(&str, &str)> = attrs
                .iter()
                .filter(|(k, _)| *k != "exclude")
                .cloned()
                .collect();
            if no_ex.len() == attrs.len() {
                check_grad("norm", &no_ex, &[x.clone()], &[0]);
                let mut a1 = no_ex.clone();
                a1.push(("ord", "1"));
                check_grad("norm", &a1, &[x.clone()], &[0]);
            }
            // the broadcast used by the gradients, and its own gradient (sum/mean)
            let y = run1("sum", attrs, &[x.clone()]);
            let g = arr(rnd(y.size(), 9), &y.shape);
            let mut a: Vec<(&str, &str)> = attrs.to_vec();
            check_grad("_reduce_grad_broadcast", &a, &[g.clone(), x.clone()], &[0]);
            a.push(("mean", "True"));
            check_grad("_reduce_grad_broadcast", &a, &[g, x.clone()], &[0]);
        }
    }

    #[test]
    fn max_gradient_goes_to_every_tie() {
        let x = arr(vec![1.0, 3.0, 3.0, 2.0, 0.0, 0.0], &[2, 3]);
        let g = arr(vec![10.0, 20.0], &[2]);
        let (_, gr) = grads("max", &[("axis", "1")], &[x.clone()], &[g.clone()]);
        assert_eq!(
            gr[0].as_ref().unwrap(),
            &vec![0.0, 10.0, 10.0, 20.0, 0.0, 0.0]
        );
        let (_, gr) = grads("min", &[("axis", "1")], &[x.clone()], &[g]);
        assert_eq!(
            gr[0].as_ref().unwrap(),
            &vec![10.0, 0.0, 0.0, 0.0, 20.0, 20.0]
        );
        // nansum/nanprod give no gradient to NaN entries
        let x = arr(vec![2.0, f64::NAN, 3.0], &[3]);
        let (_, gr) = grads("nanprod", &[], &[x.clone()], &[arr(vec![1.0], &[1])]);
        assert_eq!(gr[0].as_ref().unwrap(), &vec![3.0, 0.0, 2.0]);
        let (_, gr) = grads("nansum", &[], &[x], &[arr(vec![2.0], &[1])]);
        assert_eq!(gr[0].as_ref().unwrap(), &vec![2.0, 0.0, 2.0]);
    }

    #[test]
    fn reduce_grad_broadcast_checks_ograd_shape() {
        let x = arr(rnd(6, 1), &[2, 3]);
        let g = arr(vec![1.0, 2.0, 3.0], &[3]);
        let e = err(
            "_reduce_grad_broadcast",
            &[("axis", "1")],
            &[g.clone(), x.clone()],
        );
        assert!(e.contains("ograd shape (3,)") && e.contains("(2,)"), "{e}");
        let y = run1("_reduce_grad_broadcast", &[("axis", "0")], &[g, x]);
        assert_eq!(vals(&y), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    }
}
