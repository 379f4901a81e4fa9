//! Random sampling from MXNet 1.9.1's distributions beyond `random.rs`'s
//! uniform / normal / randint:
//!
//! * `_random_{exponential, gamma, poisson, negative_binomial,
//!   generalized_negative_binomial}`: scalar parameters, `shape`, `dtype`;
//! * `_random_*_like`: the same with the shape and dtype of an input array;
//! * `_sample_*`: one distribution per element of NDArray parameters, output
//!   shape = parameter shape + `shape`;
//! * `_sample_multinomial` (with the log-probability of the draws, whose
//!   gradient flows to the probabilities, and its `_backward_` operator).
//!
//! Every sampler draws from the per-context generator (`Resource::Rng`) in
//! fixed blocks (see `random::fill_indexed`), so `mx.random.seed` reproduces
//! the numbers whatever the thread count. Algorithms: Marsaglia-Tsang for
//! gamma (with the `U^(1/alpha)` boost below alpha = 1), multiplication of
//! uniforms for Poisson rates below 10 and Hoermann's PTRS transformed
//! rejection above, negative binomials as gamma-Poisson mixtures.
use super::attrs::Attrs;
use super::pdf::lgamma;
use super::random::{fill_indexed, float_dtype, no_grad, parse_shape};
use super::registry::{
    infer_shape_same, Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params, Resource,
};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::random::Rng;
use crate::{dispatch_dtype, dispatch_float};

/// The distributions the samplers draw from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dist {
    /// (low, high)
    Uniform,
    /// (mean, standard deviation)
    Normal,
    /// (alpha = shape, beta = scale)
    Gamma,
    /// (lambda = rate)
    Exponential,
    /// (lambda = rate)
    Poisson,
    /// (k = failures limit, p = success probability of each trial)
    NegBinomial,
    /// (mu = mean, alpha = dispersion)
    GenNegBinomial,
}

/// Standard gamma variate (shape `a`, scale 1): Marsaglia and Tsang's
/// squeeze-and-reject method; below shape 1 a draw of shape `a + 1` is
/// scaled by `U^(1/a)`. Shape 0 is the point mass at 0.
pub(crate) fn std_gamma(r: &mut Rng, a: f64) -> f64 {
    if !(a > 0.0) {
        return 0.0;
    }
    if a < 1.0 {
        let u = 1.0 - r.uniform();
        return std_gamma(r, a + 1.0) * u.powf(1.0 / a);
    }
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (x, v) = loop {
            let x = r.normal();
            let v = 1.0 + c * x;
            if v > 0.0 {
                break (x, v * v * v);
            }
        };
        let u = 1.0 - r.uniform();
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// Poisson variate with rate `lam` (0 for a rate of 0): counting uniforms
/// whose running product stays above `exp(-lam)` for small rates, Hoermann's
/// PTRS (transformed rejection with squeeze, 1993) from rate 10 on.
pub(crate) fn poisson(r: &mut Rng, lam: f64) -> f64 {
    if !(lam > 0.0) {
        return 0.0;
    }
    if lam < 10.0 {
        let limit = (-lam).exp();
        let mut prod = 1.0;
        let mut k = 0.0;
        loop {
            prod *= r.uniform();
            if prod <= limit {
                return k;
            }
            k += 1.0;
        }
    }
    let slam = lam.sqrt();
    let loglam = lam.ln();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = r.uniform() - 0.5;
        let v = r.uniform();
        let us = 0.5 - u.abs();
        if us <= 0.0 {
            continue;
        }
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if (v * inv_alpha / (a / (us * us) + b)).ln() <= -lam + k * loglam - lgamma(k + 1.0) {
            return k;
        }
    }
}

impl Dist {
    /// One draw with parameters `(a, b)` (`b` unused by one-parameter
    /// distributions).
    pub fn draw(self, r: &mut Rng, a: f64, b: f64) -> f64 {
        match self {
            Dist::Uniform => a + (b - a) * r.uniform(),
            Dist::Normal => a + b * r.normal(),
            Dist::Gamma => std_gamma(r, a) * b,
            Dist::Exponential => -(1.0 - r.uniform()).ln() / a,
            Dist::Poisson => poisson(r, a),
            Dist::NegBinomial => {
                if a == 0.0 || b == 1.0 {
                    0.0
                } else {
                    let lam = std_gamma(r, a) * (1.0 - b) / b;
                    poisson(r, lam)
                }
            }
            Dist::GenNegBinomial => {
                if b == 0.0 {
                    poisson(r, a)
                } else {
                    let lam = std_gamma(r, 1.0 / b) * b * a;
                    poisson(r, lam)
                }
            }
        }
    }

    /// Whether `(a, b)` are valid parameters; `strict` for the scalar
    /// operators, which refuse degenerate values as MXNet does (a zero
    /// scale); the per-element samplers accept them (a zero-shape gamma
    /// draws 0, as in MXNet's own example).
    fn check(
        self,
        a: f64,
        b: f64,
        strict: bool,
        names: [&str; 2],
    ) -> std::result::Result<(), String> {
        let positive = |v: f64, n: &str| {
            if strict && !(v > 0.0) {
                Err(format!("{n} ({v}) must be positive"))
            } else if !(v >= 0.0) {
                Err(format!("{n} ({v}) must be non-negative"))
            } else {
                Ok(())
            }
        };
        let nonneg = |v: f64, n: &str| {
            if v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{n} ({v}) must be non-negative"))
            }
        };
        match self {
            Dist::Uniform => {
                if a <= b {
                    Ok(())
                } else {
                    Err(format!(
                        "{} ({a}) must not exceed {} ({b})",
                        names[0], names[1]
                    ))
                }
            }
            Dist::Normal => positive(b, names[1]),
            Dist::Gamma => positive(a, names[0]).and(positive(b, names[1])),
            Dist::Exponential => positive(a, names[0]),
            Dist::Poisson => nonneg(a, names[0]),
            Dist::NegBinomial => nonneg(a, names[0]).and(if b > 0.0 && b <= 1.0 {
                Ok(())
            } else {
                Err(format!("{} ({b}) must be in (0, 1]", names[1]))
            }),
            Dist::GenNegBinomial => nonneg(a, names[0]).and(nonneg(b, names[1])),
        }
    }

    /// The scalar operators' parameter names and defaults.
    fn scalar_params(self) -> [(&'static str, f64); 2] {
        match self {
            Dist::Uniform => [("low", 0.0), ("high", 1.0)],
            Dist::Normal => [("loc", 0.0), ("scale", 1.0)],
            Dist::Gamma => [("alpha", 1.0), ("beta", 1.0)],
            Dist::Exponential | Dist::Poisson => [("lam", 1.0), ("", 0.0)],
            Dist::NegBinomial => [("k", 1.0), ("p", 1.0)],
            Dist::GenNegBinomial => [("mu", 1.0), ("alpha", 1.0)],
        }
    }
}

/// Every element of a blob as f64.
pub(crate) fn to_f64(b: &Blob) -> Vec<f64> {
    dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64()).collect())
}

/// Write f64 values into a blob of any dtype.
pub(crate) fn write_f64(b: &Blob, v: &[f64]) {
    dispatch_dtype!(b.dtype, T => {
        for (o, x) in b.data_mut::<T>().iter_mut().zip(v) {
            *o = T::from_f64(*x);
        }
    })
}

/// Fill a float blob with `f(rng, element index)`.
fn fill_f64(ctx: crate::Context, o: &Blob, f: impl Fn(&mut Rng, usize) -> f64 + Sync) {
    dispatch_float!(o.dtype, T => fill_indexed(ctx, o.data_mut::<T>(), |r, i| T::from_f64(f(r, i))))
}

fn not_float(op: &str, what: &str, d: DType) -> Error {
    Error::DType(format!(
        "{op}: {what} has dtype {}; only floating point types (float16, float32, float64) are supported",
        d.name()
    ))
}

// ---------------------------------------------------------------------------
// Scalar parameters: _random_<dist> and _random_<dist>_like
// ---------------------------------------------------------------------------

pub struct DistParam {
    dist: Dist,
    a: f64,
    b: f64,
    shape: Shape,
    dtype: DType,
}

fn parse_scalar(a: &Attrs, op: &str, dist: Dist, like: bool) -> Result<Params> {
    let p = a.p(op);
    let [(na, da), (nb, db)] = dist.scalar_params();
    let va = if dist == Dist::NegBinomial {
        p.i64("k", 1)? as f64
    } else {
        p.f64(na, da)?
    };
    let vb = if nb.is_empty() { 0.0 } else { p.f64(nb, db)? };
    dist.check(va, vb, true, [na, nb])
        .map_err(|m| Error::Param(format!("{op}: {m}")))?;
    let (shape, dtype) = if like {
        (Shape::new(), DType::F32)
    } else {
        (parse_shape(a, op)?, float_dtype(a, op)?)
    };
    Ok(Box::new(DistParam {
        dist,
        a: va,
        b: vb,
        shape,
        dtype,
    }) as Params)
}

fn scalar_kernel(c: &OpCall, _: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = c.p::<DistParam>();
    fill_f64(k.ctx, &o[0], |r, _| p.dist.draw(r, p.a, p.b));
    Ok(())
}

fn like_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let t = ins[0].or(outs[0]);
    if let Some(t) = t {
        if !t.is_float() {
            return Err(not_float(c.name(), "data", t));
        }
        ins[0] = Some(t);
        outs[0] = Some(t);
    }
    Ok(())
}

macro_rules! scalar_op {
    ($NAME:ident, $name:expr, $alias:expr, $dist:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$alias],
            doc: $doc,
            inputs: &[],
            parse: |a| parse_scalar(a, $name, $dist, false),
            infer_shape: |c, _, outs| {
                outs[0] = Some(c.p::<DistParam>().shape.clone());
                Ok(())
            },
            infer_type: |c, _, outs| {
                outs[0] = Some(c.p::<DistParam>().dtype);
                Ok(())
            },
            cpu: Some(scalar_kernel),
            grad: Some(no_grad),
            resources: &[Resource::Rng],
            ..OpDef::BASE
        };
    };
}

macro_rules! like_op {
    ($NAME:ident, $name:expr, $dist:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            doc: $doc,
            inputs: &["data"],
            parse: |a| parse_scalar(a, $name, $dist, true),
            infer_shape: infer_shape_same,
            infer_type: like_type,
            cpu: Some(scalar_kernel),
            grad: Some(no_grad),
            resources: &[Resource::Rng],
            ..OpDef::BASE
        };
    };
}

scalar_op!(
    EXPONENTIAL,
    "_random_exponential",
    "random_exponential",
    Dist::Exponential,
    "Samples from the exponential distribution with rate lam (> 0): an array of `shape` (dtype float32 unless `dtype` says float16 / float64)."
);
scalar_op!(
    GAMMA,
    "_random_gamma",
    "random_gamma",
    Dist::Gamma,
    "Samples from the gamma distribution with shape alpha (> 0) and scale beta (> 0): an array of `shape` (float32 unless `dtype` says otherwise)."
);
scalar_op!(
    POISSON,
    "_random_poisson",
    "random_poisson",
    Dist::Poisson,
    "Samples from the Poisson distribution with rate lam (>= 0), returned as floating point numbers: an array of `shape` (float32 unless `dtype` says otherwise)."
);
scalar_op!(
    NEG_BINOMIAL,
    "_random_negative_binomial",
    "random_negative_binomial",
    Dist::NegBinomial,
    "Samples from the negative binomial distribution: the number of failures before the k-th success (k an integer >= 0) when each trial succeeds with probability p (in (0, 1]); floating point numbers in an array of `shape`."
);
scalar_op!(
    GEN_NEG_BINOMIAL,
    "_random_generalized_negative_binomial",
    "random_generalized_negative_binomial",
    Dist::GenNegBinomial,
    "Samples from the generalized negative binomial distribution with mean mu (>= 0) and dispersion alpha (>= 0; variance mu + alpha mu^2, Poisson at alpha = 0); floating point numbers in an array of `shape`."
);

like_op!(
    UNIFORM_LIKE,
    "_random_uniform_like",
    Dist::Uniform,
    "Samples from the uniform distribution on [low, high) into an array of data's shape and dtype."
);
like_op!(
    NORMAL_LIKE,
    "_random_normal_like",
    Dist::Normal,
    "Samples from the normal distribution with mean loc and standard deviation scale into an array of data's shape and dtype."
);
like_op!(
    EXPONENTIAL_LIKE,
    "_random_exponential_like",
    Dist::Exponential,
    "Samples from the exponential distribution with rate lam into an array of data's shape and dtype."
);
like_op!(
    GAMMA_LIKE,
    "_random_gamma_like",
    Dist::Gamma,
    "Samples from the gamma distribution with shape alpha and scale beta into an array of data's shape and dtype."
);
like_op!(
    POISSON_LIKE,
    "_random_poisson_like",
    Dist::Poisson,
    "Samples from the Poisson distribution with rate lam into an array of data's shape and dtype."
);
like_op!(
    NEG_BINOMIAL_LIKE,
    "_random_negative_binomial_like",
    Dist::NegBinomial,
    "Samples from the negative binomial distribution (k failures limit, success probability p) into an array of data's shape and dtype."
);
like_op!(
    GEN_NEG_BINOMIAL_LIKE,
    "_random_generalized_negative_binomial_like",
    Dist::GenNegBinomial,
    "Samples from the generalized negative binomial distribution (mean mu, dispersion alpha) into an array of data's shape and dtype."
);

// ---------------------------------------------------------------------------
// NDArray parameters: _sample_<dist>
// ---------------------------------------------------------------------------

pub struct MultiParam {
    dist: Dist,
    shape: Shape,
    dtype: Option<DType>,
}

fn parse_multi(a: &Attrs, op: &str, dist: Dist) -> Result<Params> {
    let dtype = a.p(op).opt_dtype("dtype")?;
    if let Some(d) = dtype {
        if !d.is_float() {
            return Err(Error::DType(format!(
                "{op}: dtype {} is not supported (float16, float32 or float64)",
                d.name()
            )));
        }
    }
    Ok(Box::new(MultiParam {
        dist,
        shape: parse_shape(a, op)?,
        dtype,
    }) as Params)
}

fn multi_shape(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let names = c.def.inputs;
    let Some(first) = ins.iter().position(|s| s.is_some()) else {
        return Ok(());
    };
    let s = ins[first].clone().unwrap_or_default();
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(s.clone()),
            Some(t) if *t != s => {
                return Err(Error::Shape(format!(
                    "{}: {} has shape {}, but {} has shape {}; the parameter arrays must have the same shape",
                    c.name(),
                    names[i],
                    fmt_shape(t),
                    names[first],
                    fmt_shape(&s)
                )))
            }
            _ => {}
        }
    }
    let mut o = s;
    o.extend_from_slice(&c.p::<MultiParam>().shape);
    outs[0] = Some(o);
    Ok(())
}

fn multi_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let names = c.def.inputs;
    let known = ins.iter().position(|t| t.is_some());
    if let Some(first) = known {
        let t = ins[first].unwrap_or(DType::F32);
        for (i, x) in ins.iter_mut().enumerate() {
            match x {
                None => *x = Some(t),
                Some(u) if !u.is_float() => return Err(not_float(c.name(), names[i], *u)),
                Some(u) if *u != t => {
                    return Err(Error::DType(format!(
                        "{}: {} has dtype {}, but {} has dtype {}; the parameter arrays must have the same dtype",
                        c.name(),
                        names[i],
                        u.name(),
                        names[first],
                        t.name()
                    )))
                }
                _ => {}
            }
        }
    }
    outs[0] = Some(c.p::<MultiParam>().dtype.unwrap_or(DType::F32));
    Ok(())
}

fn multi_kernel(c: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = c.p::<MultiParam>();
    let names = c.def.inputs;
    let a = to_f64(&i[0]);
    let b = if i.len() > 1 {
        to_f64(&i[1])
    } else {
        vec![0.0; a.len()]
    };
    let nm = [names[0], names.get(1).copied().unwrap_or("")];
    for (j, (&x, &y)) in a.iter().zip(&b).enumerate() {
        p.dist
            .check(x, y, false, nm)
            .map_err(|m| Error::Param(format!("{}: {m} (parameter element {j})", c.name())))?;
    }
    let m: usize = p.shape.iter().product();
    fill_f64(k.ctx, &o[0], |r, t| {
        let j = t / m;
        p.dist.draw(r, a[j], b[j])
    });
    Ok(())
}

macro_rules! multi_op {
    ($NAME:ident, $name:expr, $alias:expr, $dist:expr, [$($inp:expr),*], $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$alias],
            doc: $doc,
            inputs: &[$($inp),*],
            parse: |a| parse_multi(a, $name, $dist),
            infer_shape: multi_shape,
            infer_type: multi_type,
            cpu: Some(multi_kernel),
            grad: Some(no_grad),
            resources: &[Resource::Rng],
            ..OpDef::BASE
        };
    };
}

multi_op!(
    SAMPLE_UNIFORM,
    "_sample_uniform",
    "sample_uniform",
    Dist::Uniform,
    ["low", "high"],
    "Samples from one uniform distribution on [low[i], high[i]) per element of the equally shaped arrays low and high: output shape = low.shape + shape (float32 unless dtype says otherwise)."
);
multi_op!(
    SAMPLE_NORMAL,
    "_sample_normal",
    "sample_normal",
    Dist::Normal,
    ["mu", "sigma"],
    "Samples from one normal distribution (mean mu[i], standard deviation sigma[i] >= 0) per element of mu and sigma: output shape = mu.shape + shape."
);
multi_op!(
    SAMPLE_GAMMA,
    "_sample_gamma",
    "sample_gamma",
    Dist::Gamma,
    ["alpha", "beta"],
    "Samples from one gamma distribution (shape alpha[i], scale beta[i]) per element of alpha and beta: output shape = alpha.shape + shape."
);
multi_op!(
    SAMPLE_EXPONENTIAL,
    "_sample_exponential",
    "sample_exponential",
    Dist::Exponential,
    ["lam"],
    "Samples from one exponential distribution (rate lam[i]) per element of lam: output shape = lam.shape + shape."
);
multi_op!(
    SAMPLE_POISSON,
    "_sample_poisson",
    "sample_poisson",
    Dist::Poisson,
    ["lam"],
    "Samples from one Poisson distribution (rate lam[i]) per element of lam, as floating point numbers: output shape = lam.shape + shape."
);
multi_op!(
    SAMPLE_NEG_BINOMIAL,
    "_sample_negative_binomial",
    "sample_negative_binomial",
    Dist::NegBinomial,
    ["k", "p"],
    "Samples from one negative binomial distribution (k[i] failures limit, success probability p[i]) per element of k and p: output shape = k.shape + shape."
);
multi_op!(
    SAMPLE_GEN_NEG_BINOMIAL,
    "_sample_generalized_negative_binomial",
    "sample_generalized_negative_binomial",
    Dist::GenNegBinomial,
    ["mu", "alpha"],
    "Samples from one generalized negative binomial distribution (mean mu[i], dispersion alpha[i]) per element of mu and alpha: output shape = mu.shape + shape."
);

// ---------------------------------------------------------------------------
// Multinomial
// ---------------------------------------------------------------------------

pub struct MultinomialParam {
    shape: Shape,
    get_prob: bool,
    dtype: DType,
}

const MULTINOMIAL: &str = "_sample_multinomial";

fn multinomial_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let Some(s) = &ins[0] else { return Ok(()) };
    if s.is_empty() || s[s.len() - 1] == 0 {
        return Err(Error::Shape(format!(
            "{MULTINOMIAL}: data of shape {} has no outcomes; its last axis holds the probabilities of k >= 1 outcomes",
            fmt_shape(s)
        )));
    }
    let mut o: Shape = s[..s.len() - 1].to_vec();
    o.extend_from_slice(&c.p::<MultinomialParam>().shape);
    if o.is_empty() {
        o.push(1);
    }
    for x in outs.iter_mut() {
        *x = Some(o.clone());
    }
    Ok(())
}

fn multinomial_kernel(c: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = c.p::<MultinomialParam>();
    let d = to_f64(&i[0]);
    let kk = *i[0].shape.last().unwrap_or(&1);
    let m: usize = p.shape.iter().product();
    let mut idx = vec![0u32; o[0].size()];
    fill_indexed(k.ctx, &mut idx, |r, t| {
        let row = &d[(t / m) * kk..(t / m + 1) * kk];
        let u = r.uniform();
        let mut acc = 0.0;
        for (j, &pj) in row.iter().enumerate() {
            acc += pj;
            if u < acc {
                return j as u32;
            }
        }
        (kk - 1) as u32
    });
    let v: Vec<f64> = idx.iter().map(|&j| j as f64).collect();
    write_f64(&o[0], &v);
    if p.get_prob {
        let lp: Vec<f64> = idx
            .iter()
            .enumerate()
            .map(|(t, &j)| d[(t / m) * kk + j as usize].ln())
            .collect();
        write_f64(&o[1], &lp);
    }
    Ok(())
}

fn multinomial_grad(
    c: &OpCall,
    b: &mut dyn GradBuilder,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    if !c.p::<MultinomialParam>().get_prob {
        return Ok(vec![None]);
    }
    Ok(vec![Some(b.op1(
        "_backward_sample_multinomial",
        &[],
        &[g[1], x[0], y[0]],
    )?)])
}

pub static SAMPLE_MULTINOMIAL: OpDef = OpDef {
    name: MULTINOMIAL,
    aliases: &["sample_multinomial"],
    doc: "Draws `shape` samples (one when shape is empty) from each multinomial distribution on the last axis of data (probabilities of k outcomes, summing to 1): output shape = data.shape[:-1] + shape, the outcome indices in dtype (int32 by default; float16, float32, float64, uint8). With get_prob=True a second output holds the log-probability of each draw; its gradient flows to data (d/dp log p = 1/p at the drawn outcome), as REINFORCE uses.",
    num_outputs: |c| if c.p::<MultinomialParam>().get_prob { 2 } else { 1 },
    parse: |a| {
        let p = a.p(MULTINOMIAL);
        let dtype = p.dtype("dtype", DType::I32)?;
        if !matches!(
            dtype,
            DType::F16 | DType::F32 | DType::F64 | DType::I32 | DType::U8
        ) {
            return Err(Error::DType(format!(
                "{MULTINOMIAL}: dtype {} is not supported (float16, float32, float64, int32 or uint8)",
                dtype.name()
            )));
        }
        Ok(Box::new(MultinomialParam {
            shape: parse_shape(a, MULTINOMIAL)?,
            get_prob: p.bool("get_prob", false)?,
            dtype,
        }) as Params)
    },
    infer_shape: multinomial_shape,
    infer_type: |c, ins, outs| {
        if let Some(t) = ins[0] {
            if !t.is_float() {
                return Err(not_float(c.name(), "data", t));
            }
            if outs.len() > 1 {
                outs[1] = Some(t);
            }
        }
        outs[0] = Some(c.p::<MultinomialParam>().dtype);
        Ok(())
    },
    cpu: Some(multinomial_kernel),
    grad: Some(multinomial_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static BACKWARD_MULTINOMIAL: OpDef = OpDef {
    name: "_backward_sample_multinomial",
    doc: "Gradient of _sample_multinomial's log-probability output with respect to data: ograd / data at each drawn outcome, summed over the draws (internal).",
    inputs: &["ograd", "data", "sample"],
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (g, d, s) = (to_f64(&i[0]), to_f64(&i[1]), to_f64(&i[2]));
        let kk = *i[1].shape.last().unwrap_or(&1);
        let rows = d.len().checked_div(kk).unwrap_or(0);
        let mut gd = vec![0.0; d.len()];
        if let Some(m) = g.len().checked_div(rows) {
            for (t, (&gt, &st)) in g.iter().zip(&s).enumerate() {
                let j = st as usize;
                if gt != 0.0 && j < kk {
                    let at = (t / m) * kk + j;
                    gd[at] += gt / d[at];
                }
            }
        }
        write_f64(&o[0], &gd);
        Ok(())
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &EXPONENTIAL,
    &GAMMA,
    &POISSON,
    &NEG_BINOMIAL,
    &GEN_NEG_BINOMIAL,
    &UNIFORM_LIKE,
    &NORMAL_LIKE,
    &EXPONENTIAL_LIKE,
    &GAMMA_LIKE,
    &POISSON_LIKE,
    &NEG_BINOMIAL_LIKE,
    &GEN_NEG_BINOMIAL_LIKE,
    &SAMPLE_UNIFORM,
    &SAMPLE_NORMAL,
    &SAMPLE_GAMMA,
    &SAMPLE_EXPONENTIAL,
    &SAMPLE_POISSON,
    &SAMPLE_NEG_BINOMIAL,
    &SAMPLE_GEN_NEG_BINOMIAL,
    &SAMPLE_MULTINOMIAL,
    &BACKWARD_MULTINOMIAL,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(f: impl Fn(&mut Rng) -> f64, n: usize) -> (f64, f64) {
        let mut r = Rng::seeded(12345);
        let v: Vec<f64> = (0..n).map(|_| f(&mut r)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var)
    }

    /// Mean within 5 standard errors, variance within 10% (n = 200000).
    fn assert_moments(name: &str, f: impl Fn(&mut Rng) -> f64, mean: f64, var: f64) {
        let n = 200_000;
        let (m, v) = moments(f, n);
        assert!(
            (m - mean).abs() < 5.0 * (var / n as f64).sqrt() + 1e-12,
            "{name}: mean {m}, expected {mean}"
        );
        assert!(
            (v - var).abs() < 0.1 * var + 1e-12,
            "{name}: variance {v}, expected {var}"
        );
    }

    #[test]
    fn gamma_poisson_moments() {
        for a in [0.3, 1.0, 2.5, 40.0] {
            assert_moments(&format!("gamma({a})"), |r| std_gamma(r, a), a, a);
        }
        for lam in [0.5, 3.0, 9.9, 10.0, 25.0, 1000.0] {
            assert_moments(&format!("poisson({lam})"), |r| poisson(r, lam), lam, lam);
        }
        assert_moments(
            "nb(3, 0.4)",
            |r| Dist::NegBinomial.draw(r, 3.0, 0.4),
            4.5,
            3.0 * 0.6 / 0.16,
        );
        assert_moments(
            "gnb(4, 0.5)",
            |r| Dist::GenNegBinomial.draw(r, 4.0, 0.5),
            4.0,
            4.0 + 0.5 * 16.0,
        );
        assert_moments("exp(2)", |r| Dist::Exponential.draw(r, 2.0, 0.0), 0.5, 0.25);
    }

    #[test]
    fn poisson_large_rate_frequencies() {
        // P(X = 30) for lam = 30 is 0.072608; PTRS must hit it within a few
        // standard errors.
        let mut r = Rng::seeded(7);
        let n = 200_000;
        let hits = (0..n).filter(|_| poisson(&mut r, 30.0) == 30.0).count() as f64 / n as f64;
        assert!((hits - 0.072608).abs() < 0.003, "{hits}");
    }
}
