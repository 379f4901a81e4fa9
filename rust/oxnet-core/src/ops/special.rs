//! Special functions and scans: gamma, gammaln (with their digamma-based
//! gradients `_backward_gamma` / `_backward_gammaln`), cumsum (MXNet 1.9.1's
//! `mx.nd.cumsum`, registered there as `_np_cumsum`) with
//! `_backward_np_cumsum`, and `_histogram` (behind `mx.nd.histogram`).
//!
//! gamma, lgamma and digamma are computed in float64 here (Lanczos with
//! g = 7 and reflection for x < 0.5; digamma by recurrence and its
//! asymptotic series) and rounded to the element type, with MXNet's values
//! at the poles: gamma is NaN at negative integers and +-inf at +-0, gammaln
//! is +inf at every pole, digamma is the largest float64 there (which
//! becomes +inf in float32 / float16), as in MXNet's kernels.
use super::attrs::Attrs;
use super::kernels::{map1, map2};
use super::registry::{infer_shape_same, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::shape::numel;
use crate::base::{fmt_shape, DType};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use std::f64::consts::PI;

// ---------------------------------------------------------------------------
// The functions, in float64
// ---------------------------------------------------------------------------

/// Lanczos coefficients for g = 7, nine terms (relative error ~1e-15).
#[allow(clippy::excessive_precision)]
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_93,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_13,
    -176.615_029_162_140_59,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_571_6e-6,
    1.505_632_735_149_311_6e-7,
];
const LANCZOS_G: f64 = 7.0;
/// Above this gamma overflows float64.
const GAMMA_MAX_X: f64 = 171.624_376_956_302_7;

/// The Lanczos series A(x - 1) and t = x - 1 + g + 1/2, for x >= 0.5.
fn lanczos(x: f64) -> (f64, f64) {
    let xm = x - 1.0;
    let mut a = LANCZOS[0];
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        a += c / (xm + i as f64);
    }
    (a, xm + LANCZOS_G + 0.5)
}

/// sin(pi x), exact at integers and accurate for large |x| (the argument is
/// reduced before multiplying by pi).
pub(crate) fn sinpi(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    // r in [-1, 1], exactly
    let r = x - 2.0 * (x / 2.0).round();
    let r = if r > 0.5 {
        1.0 - r
    } else if r < -0.5 {
        -1.0 - r
    } else {
        r
    };
    (PI * r).sin()
}

fn is_pole(x: f64) -> bool {
    x <= 0.0 && x == x.floor()
}

/// The gamma function.
pub(crate) fn gamma64(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return 1.0 / x; // +-inf with the sign of zero
    }
    if is_pole(x) {
        return f64::NAN;
    }
    if x == x.floor() && x <= 171.0 {
        // (x - 1)!, exact up to 22! and within a few ulps beyond
        let mut p = 1.0;
        let mut k = 2.0;
        while k < x {
            p *= k;
            k += 1.0;
        }
        return p;
    }
    if x >= GAMMA_MAX_X {
        return f64::INFINITY;
    }
    if x < 0.5 {
        let s = sinpi(x);
        if x > -170.0 {
            return PI / (s * gamma64(1.0 - x));
        }
        // gamma(1 - x) overflows: go through logarithms (the result is
        // tiny, down to the subnormals)
        let l = PI.ln() - s.abs().ln() - lgamma64(1.0 - x);
        return l.exp().copysign(s);
    }
    let (a, t) = lanczos(x);
    // t^(x - 1/2) split in two halves so that it does not overflow first
    let p = t.powf((x - 0.5) / 2.0);
    (2.0 * PI).sqrt() * a * (p * (-t).exp()) * p
}

/// log |gamma(x)|.
pub(crate) fn lgamma64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() || is_pole(x) {
        return f64::INFINITY;
    }
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    if x < 0.5 {
        return PI.ln() - sinpi(x).abs().ln() - lgamma64(1.0 - x);
    }
    let (a, t) = lanczos(x);
    0.5 * (2.0 * PI).ln() + (x - 0.5) * t.ln() - t + a.ln()
}

/// The digamma function psi = d/dx log gamma(x). At the poles (0 and the
/// negative integers, and -inf) it is the largest float64, as in MXNet.
pub(crate) fn digamma64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x == f64::NEG_INFINITY || is_pole(x) {
        return f64::MAX;
    }
    if x < 0.0 {
        // reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        let r = x - x.round();
        return digamma64(1.0 - x) - PI / (PI * r).tan();
    }
    let mut x = x;
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    // ln x - 1/(2x) - sum B_2k / (2k x^2k)
    let series = z
        * (1.0 / 12.0
            - z * (1.0 / 120.0
                - z * (1.0 / 252.0
                    - z * (1.0 / 240.0
                        - z * (1.0 / 132.0 - z * (691.0 / 32760.0 - z * (1.0 / 12.0)))))));
    acc + x.ln() - 0.5 / x - series
}

// ---------------------------------------------------------------------------
// gamma, gammaln and their gradients
// ---------------------------------------------------------------------------

fn unary64(x: &Blob, y: &Blob, f: fn(f64) -> f64) {
    dispatch_dtype!(x.dtype, T => {
        map1(x.data::<T>(), y.data_mut::<T>(), |v| T::from_f64(f(v.to_f64())))
    });
}

/// MXNet computes its float16 and float32 gradient functions in float32
/// and float64 ones in float64: round `v` to that working type.
#[inline]
fn work(t: DType, v: f64) -> f64 {
    if t == DType::F64 {
        v
    } else {
        v as f32 as f64
    }
}

/// ograd * d(x) for the gradient factor d(x) = f(x) (in the working type,
/// then rounded to the element type).
fn backward64(g: &Blob, x: &Blob, y: &Blob, f: impl Fn(f64) -> f64 + Sync) {
    dispatch_dtype!(x.dtype, T => {
        let sh = &x.shape;
        map2(g.data::<T>(), sh, x.data::<T>(), sh, y.data_mut::<T>(), sh, |gi, xi| {
            let d = T::from_f64(f(xi.to_f64())).to_f64();
            T::from_f64(gi.to_f64() * d)
        })
    });
}

pub static GAMMA: OpDef = OpDef {
    name: "gamma",
    doc:
        "Element-wise gamma function (extension of the factorial to the reals): gamma(n) = (n-1)!. \
          NaN at the negative integers and -inf, +inf at +0 and large x, -inf at -0. \
          Takes data; returns an array of its shape and dtype (integer inputs are computed \
          in float64 and truncated).",
    cpu: Some(|_, i, o, _| {
        unary64(&i[0], &o[0], gamma64);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(b.op1("_backward_gamma", &[], &[g[0], x[0]])?)])),
    ..OpDef::BASE
};

pub static GAMMA_GRAD: OpDef = OpDef {
    name: "_backward_gamma",
    doc:
        "Gradient of gamma: ograd * gamma(data) * digamma(data) (each factor in the element type).",
    inputs: &["ograd", "data"],
    infer_shape: infer_shape_same,
    cpu: Some(|_, i, o, _| {
        // gamma(x) * psi(x), each and their product in the working type
        let t = i[1].dtype;
        backward64(&i[0], &i[1], &o[0], |x| {
            work(t, work(t, gamma64(x)) * work(t, digamma64(x)))
        });
        Ok(())
    }),
    ..OpDef::BASE
};

pub static GAMMALN: OpDef = OpDef {
    name: "gammaln",
    doc: "Element-wise log of the absolute value of the gamma function: +inf at the poles \
          (0 and the negative integers) and at +-inf. Takes data; returns an array of its \
          shape and dtype.",
    cpu: Some(|_, i, o, _| {
        unary64(&i[0], &o[0], lgamma64);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_backward_gammaln",
            &[],
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static GAMMALN_GRAD: OpDef = OpDef {
    name: "_backward_gammaln",
    doc:
        "Gradient of gammaln: ograd * digamma(data) (digamma is the largest float64 at the poles).",
    inputs: &["ograd", "data"],
    infer_shape: infer_shape_same,
    cpu: Some(|_, i, o, _| {
        let t = i[1].dtype;
        backward64(&i[0], &i[1], &o[0], |x| work(t, digamma64(x)));
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// cumsum
// ---------------------------------------------------------------------------

pub struct CumsumParam {
    axis: Option<i64>,
    dtype: Option<DType>,
}

fn parse_cumsum(a: &Attrs, op: &str) -> Result<CumsumParam> {
    let p = a.p(op);
    let axis = p.opt_i64("axis")?;
    let dtype = match p.opt_str("dtype") {
        None => None,
        Some(s) => match s.as_str() {
            "float16" | "float32" | "float64" | "int32" | "int64" | "int8" => {
                Some(DType::from_name(&s)?)
            }
            _ => {
                return Err(Error::Param(format!(
                    "{op}: argument 'dtype' must be one of None, 'float16', 'float32', 'float64', \
                     'int32', 'int64', 'int8', got '{s}'"
                )))
            }
        },
    };
    Ok(CumsumParam { axis, dtype })
}

/// The normalised axis (None: the flattened array) for an input of `ndim`.
fn cumsum_axis(op: &str, axis: Option<i64>, shape: &[usize]) -> Result<Option<usize>> {
    let Some(a) = axis else { return Ok(None) };
    let n = shape.len() as i64;
    if a < -n || a >= n {
        return Err(Error::Param(format!(
            "{op}: axis {a} is out of range for an input of shape {} (valid: {} to {})",
            fmt_shape(shape),
            -n,
            n - 1
        )));
    }
    Ok(Some(if a < 0 { (a + n) as usize } else { a as usize }))
}

/// (outer, len, inner) of a scan along `axis` (None: the whole array).
fn scan_dims(shape: &[usize], axis: Option<usize>) -> (usize, usize, usize) {
    match axis {
        None => (1, numel(shape), 1),
        Some(ax) => (
            shape[..ax].iter().product(),
            shape[ax],
            shape[ax + 1..].iter().product(),
        ),
    }
}

/// Element conversion and wrapping addition with C semantics, for scans.
trait ScanElem: Elem {
    const INT: bool;
    fn to_i64w(self) -> i64;
    fn add(self, o: Self) -> Self;
}

macro_rules! scan_int {
    ($($t:ty),*) => {$(
        impl ScanElem for $t {
            const INT: bool = true;
            #[inline(always)]
            fn to_i64w(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
        }
    )*};
}
scan_int!(i8, u8, i32, i64);

macro_rules! scan_float {
    ($($t:ty),*) => {$(
        impl ScanElem for $t {
            const INT: bool = false;
            #[inline(always)]
            fn to_i64w(self) -> i64 {
                self.to_f64() as i64
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                // correctly rounded: a float64 sum of two narrower floats
                // rounded once to the narrower type
                Self::from_f64(self.to_f64() + o.to_f64())
            }
        }
    )*};
}
scan_float!(f32, f64, half::f16);

impl ScanElem for bool {
    const INT: bool = true;
    fn to_i64w(self) -> i64 {
        self as i64
    }
    fn add(self, o: Self) -> Self {
        self || o
    }
}

/// Convert one element (C casts: float to int truncates, int to int wraps).
#[inline(always)]
fn conv<S: ScanElem, D: ScanElem>(v: S) -> D {
    if D::INT {
        // int to int wraps; float to int truncates through a 64-bit
        // integer and wraps (what C's cast does on x86 for values that fit
        // in 32 bits: MXNet's int8 cumsum of 300.0 adds 44)
        D::from_i64(v.to_i64w())
    } else {
        D::from_f64(v.to_f64())
    }
}

/// y = cumulative sum of x along the middle dimension, accumulated in D
/// (each element is converted to D first), forward or from the end.
fn scan<S: ScanElem, D: ScanElem>(x: &[S], y: &mut [D], dims: (usize, usize, usize), rev: bool) {
    let (outer, len, inner) = dims;
    for o in 0..outer {
        for i in 0..inner {
            let base = o * len * inner + i;
            let mut acc = D::default();
            for k in 0..len {
                let k = if rev { len - 1 - k } else { k };
                let at = base + k * inner;
                acc = acc.add(conv::<S, D>(x[at]));
                y[at] = acc;
            }
        }
    }
}

fn scan_blob(x: &Blob, y: &Blob, dims: (usize, usize, usize), rev: bool) {
    crate::dispatch_dtype!(x.dtype, S => crate::dispatch_dtype!(y.dtype, D => {
        scan::<S, D>(x.data::<S>(), y.data_mut::<D>(), dims, rev)
    }))
}

fn cumsum_attrs(p: &CumsumParam) -> Vec<(&'static str, String)> {
    let mut v = vec![];
    if let Some(a) = p.axis {
        v.push(("axis", a.to_string()));
    }
    v
}

pub static CUMSUM: OpDef = OpDef {
    name: "cumsum",
    aliases: &["_np_cumsum"],
    doc: "Cumulative sum of the elements of a along axis (None: over the flattened array, \
          giving a 1-D result). dtype (float16, float32, float64, int32, int64, int8) is the \
          type of the result and of the accumulator; each element is converted to it before \
          it is added. By default the result has a's dtype (bool becomes int64).",
    inputs: &["a"],
    parse: |a| Ok(Box::new(parse_cumsum(a, "cumsum")?) as Params),
    infer_shape: |c, ins, outs| {
        let Some(s) = &ins[0] else { return Ok(()) };
        let ax = cumsum_axis("cumsum", c.p::<CumsumParam>().axis, s)?;
        outs[0] = Some(match ax {
            None => vec![numel(s)],
            Some(_) => s.clone(),
        });
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let Some(t) = ins[0] else { return Ok(()) };
        outs[0] = Some(c.p::<CumsumParam>().dtype.unwrap_or(match t {
            DType::Bool => DType::I64,
            t => t,
        }));
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let ax = cumsum_axis("cumsum", c.p::<CumsumParam>().axis, &i[0].shape)?;
        scan_blob(&i[0], &o[0], scan_dims(&i[0].shape, ax), false);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let a = cumsum_attrs(c.p::<CumsumParam>());
        Ok(vec![Some(b.op1(
            "_backward_np_cumsum",
            &a,
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static CUMSUM_GRAD: OpDef = OpDef {
    name: "_backward_np_cumsum",
    doc: "Gradient of cumsum: the cumulative sum of ograd from the end along axis, shaped \
          and typed like data.",
    inputs: &["ograd", "data"],
    parse: |a| Ok(Box::new(parse_cumsum(a, "_backward_np_cumsum")?) as Params),
    infer_shape: |c, ins, outs| {
        let Some(s) = ins[1].clone() else {
            return Ok(());
        };
        let ax = cumsum_axis("_backward_np_cumsum", c.p::<CumsumParam>().axis, &s)?;
        let want = match ax {
            None => vec![numel(&s)],
            Some(_) => s.clone(),
        };
        match &ins[0] {
            None => ins[0] = Some(want),
            Some(g) if *g != want => {
                return Err(Error::Shape(format!(
                    "_backward_np_cumsum: ograd shape {} does not match cumsum's output shape {} \
                     for data shape {}",
                    fmt_shape(g),
                    fmt_shape(&want),
                    fmt_shape(&s)
                )))
            }
            _ => {}
        }
        outs[0] = Some(s);
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let ax = cumsum_axis(
            "_backward_np_cumsum",
            c.p::<CumsumParam>().axis,
            &o[0].shape,
        )?;
        let dims = scan_dims(&o[0].shape, ax);
        if i[0].dtype == o[0].dtype {
            scan_blob(&i[0], &o[0], dims, true);
        } else {
            // accumulate in ograd's dtype, then convert to data's
            crate::dispatch_dtype!(i[0].dtype, G => {
                let mut tmp = vec![G::default(); i[0].size()];
                scan::<G, G>(i[0].data::<G>(), &mut tmp, dims, true);
                crate::dispatch_dtype!(o[0].dtype, O => {
                    for (y, &t) in o[0].data_mut::<O>().iter_mut().zip(&tmp) {
                        *y = conv::<G, O>(t);
                    }
                })
            });
        }
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        // linear in ograd: its gradient is the forward scan, in ograd's dtype
        let a = cumsum_attrs(c.p::<CumsumParam>());
        let s = b.op1("cumsum", &a, &[g[0]])?;
        Ok(vec![Some(b.op1("_cast_like", &[], &[s, x[0]])?), None])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// _histogram
// ---------------------------------------------------------------------------

pub struct HistParam {
    bin_cnt: Option<usize>,
    range: Option<(f64, f64)>,
}

fn parse_hist(a: &Attrs) -> Result<HistParam> {
    let op = "_histogram";
    let p = a.p(op);
    let bin_cnt = match p.opt_i64("bin_cnt")? {
        None => None,
        Some(n) if n < 0 => {
            return Err(Error::Param(format!(
                "{op}: argument 'bin_cnt' must be a non-negative integer, got {n}"
            )))
        }
        Some(n) => Some(n as usize),
    };
    let range = match p.floats("range")? {
        None => None,
        Some(v) if v.len() == 2 => {
            if v[0] > v[1] {
                return Err(Error::Param(format!(
                    "{op}: the first element of range ({}) must be less than or equal to the second ({})",
                    v[0], v[1]
                )));
            }
            Some((v[0], v[1]))
        }
        Some(v) => {
            return Err(Error::Param(format!(
                "{op}: argument 'range' expects two numbers (low, high), got {v:?}"
            )))
        }
    };
    if bin_cnt.is_some() != range.is_some() {
        return Err(Error::Param(format!(
            "{op}: bin_cnt and range must be given together (uniform bins) or both left out \
             (bin edges from the 'bins' input)"
        )));
    }
    Ok(HistParam { bin_cnt, range })
}

/// The bin of `v` for edges e[0..=n]: the last k with e[k] <= v (scanning
/// from the start), the last bin including e[n]; None outside [e0, en].
#[inline]
fn edge_bin(v: f64, e: &[f64]) -> Option<usize> {
    let n = e.len().checked_sub(1)?;
    if n == 0 || !(v >= e[0] && v <= e[n]) {
        return None;
    }
    let mut t = 0;
    while t < n && v >= e[t + 1] {
        t += 1;
    }
    Some(t.min(n - 1))
}

/// The range actually used: an empty range is widened by 0.5 each way (as
/// NumPy does).
fn effective_range(lo: f64, hi: f64) -> (f64, f64) {
    if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

pub static HISTOGRAM: OpDef = OpDef {
    name: "_histogram",
    doc: "Histogram of data (flattened). Either bin_cnt and range=(low, high) give bin_cnt \
          equal bins over the range (an empty range is widened by 0.5 each way), or the 1-D \
          input bins (data's dtype) gives the edges, the rightmost included. Values outside \
          are ignored. Returns (counts, int64, one per bin; edges, data's dtype).",
    inputs: &["data", "bins"],
    num_inputs: Some(|c| {
        if c.p::<HistParam>().bin_cnt.is_some() {
            1
        } else {
            2
        }
    }),
    num_outputs: |_| 2,
    parse: |a| Ok(Box::new(parse_hist(a)?) as Params),
    infer_shape: |c, ins, outs| {
        let p = c.p::<HistParam>();
        if let Some(n) = p.bin_cnt {
            outs[0] = Some(vec![n]);
            outs[1] = Some(vec![n + 1]);
            return Ok(());
        }
        let Some(b) = &ins[1] else { return Ok(()) };
        if b.len() != 1 || b[0] == 0 {
            return Err(Error::Shape(format!(
                "_histogram: bins must be a non-empty 1-D array of bin edges, got shape {}",
                fmt_shape(b)
            )));
        }
        outs[0] = Some(vec![b[0] - 1]);
        outs[1] = Some(b.clone());
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if let (Some(d), Some(Some(b))) = (ins[0], ins.get(1)) {
            if d != *b {
                return Err(Error::DType(format!(
                    "_histogram: bins has dtype {}, expected data's dtype {}",
                    b.name(),
                    d.name()
                )));
            }
        }
        outs[0] = Some(DType::I64);
        outs[1] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<HistParam>();
        let x = &i[0];
        let counts = o[0].data_mut::<i64>();
        counts.fill(0);
        let vals: Vec<f64> =
            dispatch_dtype!(x.dtype, T => x.data::<T>().iter().map(|v| v.to_f64()).collect());
        match (p.bin_cnt, p.range) {
            (Some(n), Some((lo, hi))) => {
                // MXNet bins by the edges rounded to data's dtype (an int32
                // histogram over (0, 10) in 4 bins has edges 0, 2, 5, 7, 10
                // and counts 2 in the second bin); values are kept by the
                // unrounded range
                let (lo, hi) = effective_range(lo, hi);
                let nf = n as f64;
                let edges: Vec<f64> = dispatch_dtype!(o[1].dtype, T => {
                    let ev = o[1].data_mut::<T>();
                    for (k, e) in ev.iter_mut().enumerate() {
                        // MXNet's rounding of the edges (NaN for 0 bins)
                        let k = k as f64;
                        *e = T::from_f64((lo * (nf - k) + hi * k) / nf);
                    }
                    ev.iter().map(|e| e.to_f64()).collect()
                });
                for v in vals {
                    if n == 0 || !(v >= lo && v <= hi) {
                        continue;
                    }
                    let k = edges.partition_point(|&e| e <= v).saturating_sub(1);
                    counts[k.min(n - 1)] += 1;
                }
            }
            _ => {
                let b = &i[1];
                let edges: Vec<f64> = dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64()).collect());
                for v in vals {
                    if let Some(k) = edge_bin(v, &edges) {
                        counts[k] += 1;
                    }
                }
                o[1].bytes_mut().copy_from_slice(b.bytes());
            }
        }
        Ok(())
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &GAMMA,
    &GAMMA_GRAD,
    &GAMMALN,
    &GAMMALN_GRAD,
    &CUMSUM,
    &CUMSUM_GRAD,
    &HISTOGRAM,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs().max(1e-300)
    }

    #[test]
    fn gamma_values_and_poles() {
        assert_eq!(gamma64(1.0), 1.0);
        assert_eq!(gamma64(5.0), 24.0);
        assert!(close(gamma64(0.5), PI.sqrt(), 1e-14));
        assert!(close(gamma64(-2.5), -0.945_308_720_482_941_7, 1e-13));
        assert!(close(gamma64(170.5), 5.562_092_414_56e305, 1e-12));
        assert!(gamma64(-3.0).is_nan() && gamma64(f64::NEG_INFINITY).is_nan());
        assert_eq!(gamma64(0.0), f64::INFINITY);
        assert_eq!(gamma64(-0.0), f64::NEG_INFINITY);
        assert_eq!(gamma64(172.0), f64::INFINITY);
        // tiny but not zero for very negative non-integers (as MXNet's float64)
        let g = gamma64(-170.5);
        assert!(
            g < 0.0 && close(g, -3.312_739_521_538_607e-308, 1e-9),
            "{g}"
        );
    }

    #[test]
    fn lgamma_and_digamma() {
        assert_eq!(lgamma64(1.0), 0.0);
        assert!(close(lgamma64(10.0), 362_880f64.ln(), 1e-14));
        assert!(close(lgamma64(-2.5), -0.056_243_716_497_674_57, 1e-12));
        assert!(close(lgamma64(1e30), 6.807_755_278_982_137e31, 1e-14));
        assert_eq!(lgamma64(-2.0), f64::INFINITY);
        assert_eq!(lgamma64(-0.0), f64::INFINITY);
        let euler = 0.577_215_664_901_532_9;
        assert!(close(digamma64(1.0), -euler, 1e-14));
        assert!(close(digamma64(0.5), -euler - 2.0 * 2f64.ln(), 1e-14));
        assert!(close(digamma64(-2.5), 1.103_156_640_645_243, 1e-13));
        assert_eq!(digamma64(-1.0), f64::MAX);
        assert_eq!(digamma64(0.0), f64::MAX);
        assert_eq!(digamma64(f64::INFINITY), f64::INFINITY);
        // numerical derivative of lgamma
        for &x in &[0.3, 1.7, 4.2, 25.0, -0.4, -3.7] {
            let h = 1e-6;
            let d = (lgamma64(x + h) - lgamma64(x - h)) / (2.0 * h);
            assert!(close(digamma64(x), d, 1e-6), "{x}: {} vs {d}", digamma64(x));
        }
    }

    #[test]
    fn bins() {
        assert_eq!(edge_bin(2.5, &[0.0, 1.0, 2.5, 4.0]), Some(2));
        assert_eq!(edge_bin(4.0, &[0.0, 1.0, 2.5, 4.0]), Some(2));
        assert_eq!(edge_bin(1.0, &[4.0, 1.0, 0.0]), None);
    }
}
