//! Probability densities (and masses) of MXNet 1.9.1's distributions:
//! `_random_pdf_{uniform, normal, gamma, exponential, poisson,
//! negative_binomial, generalized_negative_binomial, dirichlet}`.
//!
//! `sample` has the shape of the parameters followed by any number of extra
//! axes (for Dirichlet the last axis of both holds the k components); each
//! sample is evaluated with the parameters at its leading index. `is_log`
//! returns the log-density. The formulas are MXNet's (no support checks
//! beyond theirs: the uniform density is 1/(high-low) everywhere, the
//! exponential one lam*exp(-lam*x) also for x < 0, the gamma density uses
//! beta as a rate; Poisson and negative binomials are 0 below 0 and use
//! lgamma, so non-integer samples get the continuous extension).
//! Gradients flow to the sample (0 for the discrete distributions, as in
//! MXNet) and to every parameter through the `_backward_pdf_*` operators.
use super::attrs::Attrs;
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params};
use super::sample::{to_f64, write_f64};
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

/// ln |Gamma(x)| (+inf at 0 and the negative integers).
pub(crate) use super::special::lgamma64 as lgamma;

/// The digamma function psi(x) = d/dx ln Gamma(x); NaN at its poles (0 and
/// the negative integers), where the densities' gradients are undefined
/// (gammaln's gradient keeps MXNet's largest-float64 convention there).
pub(crate) fn digamma(x: f64) -> f64 {
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    super::special::digamma64(x)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pdf {
    Uniform,
    Normal,
    Gamma,
    Exponential,
    Poisson,
    NegBinomial,
    GenNegBinomial,
    Dirichlet,
}

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

fn nb_log(s: f64, k: f64, p: f64) -> f64 {
    lgamma(s + k) - lgamma(s + 1.0) - lgamma(k) + k * p.ln() + s * (1.0 - p).ln()
}

impl Pdf {
    /// (log density, density) of sample `s` with parameters `(a, b)`.
    fn eval(self, s: f64, a: f64, b: f64) -> (f64, f64) {
        let from_log = |l: f64| (l, l.exp());
        match self {
            Pdf::Uniform => (-(b - a).ln(), 1.0 / (b - a)),
            Pdf::Normal => {
                let z = (s - a) / b;
                (
                    -0.5 * z * z - b.ln() - LN_SQRT_2PI,
                    (-0.5 * z * z).exp() / (b * (2.0 * std::f64::consts::PI).sqrt()),
                )
            }
            Pdf::Exponential => (a.ln() - a * s, a * (-a * s).exp()),
            Pdf::Gamma => from_log(a * b.ln() + (a - 1.0) * s.ln() - b * s - lgamma(a)),
            Pdf::Poisson => {
                if s < 0.0 {
                    (f64::NEG_INFINITY, 0.0)
                } else {
                    from_log(s * a.ln() - a - lgamma(s + 1.0))
                }
            }
            Pdf::NegBinomial => {
                if s < 0.0 {
                    (f64::NEG_INFINITY, 0.0)
                } else {
                    from_log(nb_log(s, a, b))
                }
            }
            Pdf::GenNegBinomial => {
                if s < 0.0 {
                    (f64::NEG_INFINITY, 0.0)
                } else {
                    from_log(nb_log(s, 1.0 / b, 1.0 / (1.0 + a * b)))
                }
            }
            Pdf::Dirichlet => unreachable!("Dirichlet has its own kernel"),
        }
    }

    /// d log density / d (sample, a, b).
    fn dlog(self, s: f64, a: f64, b: f64) -> (f64, f64, f64) {
        match self {
            Pdf::Uniform => (0.0, 1.0 / (b - a), -1.0 / (b - a)),
            Pdf::Normal => {
                let d = s - a;
                let v = b * b;
                (-d / v, d / v, -1.0 / b + d * d / (v * b))
            }
            Pdf::Exponential => (-a, 1.0 / a - s, 0.0),
            Pdf::Gamma => ((a - 1.0) / s - b, b.ln() + s.ln() - digamma(a), a / b - s),
            Pdf::Poisson => {
                if s < 0.0 {
                    (0.0, 0.0, 0.0)
                } else {
                    (0.0, s / a - 1.0, 0.0)
                }
            }
            Pdf::NegBinomial => {
                if s < 0.0 {
                    (0.0, 0.0, 0.0)
                } else {
                    (
                        0.0,
                        digamma(s + a) - digamma(a) + b.ln(),
                        a / b - s / (1.0 - b),
                    )
                }
            }
            Pdf::GenNegBinomial => {
                if s < 0.0 {
                    (0.0, 0.0, 0.0)
                } else {
                    let k = 1.0 / b;
                    let q = 1.0 + a * b;
                    let dk = digamma(s + k) - digamma(k) - q.ln();
                    (0.0, (s - a) / (a * q), -dk / (b * b) + (s - a) / (b * q))
                }
            }
            Pdf::Dirichlet => unreachable!("Dirichlet has its own kernel"),
        }
    }

    fn backward_name(self) -> &'static str {
        match self {
            Pdf::Uniform => "_backward_pdf_uniform",
            Pdf::Normal => "_backward_pdf_normal",
            Pdf::Gamma => "_backward_pdf_gamma",
            Pdf::Exponential => "_backward_pdf_exponential",
            Pdf::Poisson => "_backward_pdf_poisson",
            Pdf::NegBinomial => "_backward_pdf_negative_binomial",
            Pdf::GenNegBinomial => "_backward_pdf_generalized_negative_binomial",
            Pdf::Dirichlet => "_backward_pdf_dirichlet",
        }
    }
}

pub struct PdfParam {
    dist: Pdf,
    is_log: bool,
}

fn parse_pdf(a: &Attrs, op: &str, dist: Pdf) -> Result<Params> {
    Ok(Box::new(PdfParam {
        dist,
        is_log: a.p(op).bool("is_log", false)?,
    }) as Params)
}

/// Check the sample against the parameters (inputs `first..` of `ins`);
/// return the sample's shape.
fn check_shapes(c: &OpCall, ins: &mut [Option<Shape>], first: usize) -> Result<Option<Shape>> {
    let op = c.name();
    let names = c.def.inputs;
    let params = first + 1;
    // Every parameter has one shape.
    let Some(pi) = (params..ins.len()).find(|&i| ins[i].is_some()) else {
        return Ok(ins[first].clone());
    };
    let ps = ins[pi].clone().unwrap_or_default();
    for i in params..ins.len() {
        match &ins[i] {
            None => ins[i] = Some(ps.clone()),
            Some(t) if *t != ps => {
                return Err(Error::Shape(format!(
                    "{op}: {} has shape {}, but {} has shape {}; the parameter arrays must have the same shape",
                    names[i],
                    fmt_shape(t),
                    names[pi],
                    fmt_shape(&ps)
                )))
            }
            _ => {}
        }
    }
    let Some(ss) = ins[first].clone() else {
        return Ok(None);
    };
    let dirichlet = c.p::<PdfParam>().dist == Pdf::Dirichlet;
    if dirichlet && (ps.is_empty() || ss.is_empty() || ps[ps.len() - 1] != ss[ss.len() - 1]) {
        return Err(Error::Shape(format!(
            "{op}: sample of shape {} and alpha of shape {} must both end with the k components of the distribution",
            fmt_shape(&ss),
            fmt_shape(&ps)
        )));
    }
    let lead = if dirichlet { ps.len() - 1 } else { ps.len() };
    let slead = if dirichlet { ss.len() - 1 } else { ss.len() };
    if lead > slead || ss[..lead] != ps[..lead] {
        return Err(Error::Shape(format!(
            "{op}: sample shape {} must start with the parameters' shape {} (the parameters of each sample come first, extra sample axes follow)",
            fmt_shape(&ss),
            fmt_shape(&ps)
        )));
    }
    Ok(Some(ss))
}

fn pdf_shape(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if let Some(ss) = check_shapes(c, ins, 0)? {
        outs[0] = Some(if c.p::<PdfParam>().dist == Pdf::Dirichlet {
            // One k-component sample gives shape (1,), as in MXNet.
            if ss.len() == 1 {
                vec![1]
            } else {
                ss[..ss.len() - 1].to_vec()
            }
        } else {
            ss
        });
    }
    Ok(())
}

fn float_same(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let names = c.def.inputs;
    let Some(first) = ins.iter().position(|t| t.is_some()) else {
        return Ok(());
    };
    let t = ins[first].unwrap_or(DType::F32);
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(t),
            Some(u) if !u.is_float() => {
                return Err(Error::DType(format!(
                    "{}: {} has dtype {}; only floating point types (float16, float32, float64) are supported",
                    c.name(),
                    names[i],
                    u.name()
                )))
            }
            Some(u) if *u != t => {
                return Err(Error::DType(format!(
                    "{}: {} has dtype {}, but {} has dtype {}; the inputs must have one dtype",
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
    for o in outs.iter_mut() {
        *o = Some(t);
    }
    Ok(())
}

/// Inputs as f64: sample, a, b (b empty for one-parameter distributions);
/// `m` samples per parameter element.
struct Args {
    s: Vec<f64>,
    a: Vec<f64>,
    b: Vec<f64>,
    m: usize,
}

fn args(i: &[Blob]) -> Args {
    let s = to_f64(&i[0]);
    let a = to_f64(&i[1]);
    let b = if i.len() > 2 {
        to_f64(&i[2])
    } else {
        vec![0.0; a.len()]
    };
    let m = if a.is_empty() { 0 } else { s.len() / a.len() };
    Args { s, a, b, m }
}

fn pdf_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<PdfParam>();
    if p.dist == Pdf::Dirichlet {
        return dirichlet_kernel(p.is_log, i, o);
    }
    let x = args(i);
    let out: Vec<f64> =
        x.s.iter()
            .enumerate()
            .map(|(t, &s)| {
                let j = t / x.m;
                let (l, v) = p.dist.eval(s, x.a[j], x.b[j]);
                if p.is_log {
                    l
                } else {
                    v
                }
            })
            .collect();
    write_f64(&o[0], &out);
    Ok(())
}

/// Inputs: ograd, sample, parameters; outputs: the gradients of sample and
/// of each parameter.
fn pdf_backward_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<PdfParam>();
    let g = to_f64(&i[0]);
    if p.dist == Pdf::Dirichlet {
        return dirichlet_backward(p.is_log, &g, &i[1..], o);
    }
    let x = args(&i[1..]);
    let mut gs = vec![0.0; x.s.len()];
    let mut ga = vec![0.0; x.a.len()];
    let mut gb = vec![0.0; x.a.len()];
    for (t, &s) in x.s.iter().enumerate() {
        if g[t] == 0.0 {
            continue;
        }
        let j = t / x.m;
        let (a, b) = (x.a[j], x.b[j]);
        let f = if p.is_log {
            g[t]
        } else {
            g[t] * p.dist.eval(s, a, b).1
        };
        if f == 0.0 {
            continue;
        }
        let (ds, da, db) = p.dist.dlog(s, a, b);
        gs[t] = f * ds;
        ga[j] += f * da;
        gb[j] += f * db;
    }
    write_f64(&o[0], &gs);
    write_f64(&o[1], &ga);
    if o.len() > 2 {
        write_f64(&o[2], &gb);
    }
    Ok(())
}

/// Dirichlet log-density of `x` (k components) with concentrations `al`.
fn dirichlet_log(x: &[f64], al: &[f64]) -> f64 {
    let sum: f64 = al.iter().sum();
    let mut l = lgamma(sum);
    for (&xi, &ai) in x.iter().zip(al) {
        l += (ai - 1.0) * xi.ln() - lgamma(ai);
    }
    l
}

fn dirichlet_dims(i: &[Blob]) -> (usize, usize, usize) {
    let k = *i[1].shape.last().unwrap_or(&1);
    let ns = i[0].size().checked_div(k).unwrap_or(0);
    let np = i[1].size().checked_div(k).unwrap_or(0);
    let m = ns.checked_div(np).unwrap_or(0);
    (k, ns, m)
}

fn dirichlet_kernel(is_log: bool, i: &[Blob], o: &[Blob]) -> Result<()> {
    let (x, al) = (to_f64(&i[0]), to_f64(&i[1]));
    let (k, ns, m) = dirichlet_dims(i);
    let out: Vec<f64> = (0..ns)
        .map(|t| {
            let j = t / m;
            let l = dirichlet_log(&x[t * k..(t + 1) * k], &al[j * k..(j + 1) * k]);
            if is_log {
                l
            } else {
                l.exp()
            }
        })
        .collect();
    write_f64(&o[0], &out);
    Ok(())
}

fn dirichlet_backward(is_log: bool, g: &[f64], i: &[Blob], o: &[Blob]) -> Result<()> {
    let (x, al) = (to_f64(&i[0]), to_f64(&i[1]));
    let (k, ns, m) = dirichlet_dims(i);
    let mut gx = vec![0.0; x.len()];
    let mut ga = vec![0.0; al.len()];
    for t in 0..ns {
        if g[t] == 0.0 {
            continue;
        }
        let j = t / m;
        let (xs, als) = (&x[t * k..(t + 1) * k], &al[j * k..(j + 1) * k]);
        let f = if is_log {
            g[t]
        } else {
            g[t] * dirichlet_log(xs, als).exp()
        };
        if f == 0.0 {
            continue;
        }
        let ds = digamma(als.iter().sum());
        for c in 0..k {
            gx[t * k + c] = f * (als[c] - 1.0) / xs[c];
            ga[j * k + c] += f * (ds - digamma(als[c]) + xs[c].ln());
        }
    }
    write_f64(&o[0], &gx);
    write_f64(&o[1], &ga);
    Ok(())
}

fn pdf_grad(
    c: &OpCall,
    b: &mut dyn GradBuilder,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<PdfParam>();
    let mut ins = vec![g[0]];
    ins.extend_from_slice(x);
    let is_log = if p.is_log { "True" } else { "False" };
    let r = b.op(
        p.dist.backward_name(),
        &[("is_log", is_log.to_string())],
        &ins,
    )?;
    Ok(r.into_iter().map(Some).collect())
}

macro_rules! pdf_op {
    ($NAME:ident, $BW:ident, $name:expr, $alias:expr, $bw:expr, $dist:expr, [$($inp:expr),*], $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$alias],
            doc: $doc,
            inputs: &["sample", $($inp),*],
            parse: |a| parse_pdf(a, $name, $dist),
            infer_shape: pdf_shape,
            infer_type: float_same,
            cpu: Some(pdf_kernel),
            grad: Some(pdf_grad),
            ..OpDef::BASE
        };
        pub static $BW: OpDef = OpDef {
            name: $bw,
            doc: concat!(
                "Gradient of ",
                $name,
                " with respect to the sample and the parameters: inputs ograd, sample and the parameters; one output per input after ograd (internal)."
            ),
            inputs: &["ograd", "sample", $($inp),*],
            num_outputs: |c| c.def.inputs.len() - 1,
            parse: |a| parse_pdf(a, $bw, $dist),
            infer_shape: |c, ins, outs| {
                check_shapes(c, ins, 1)?;
                for (o, i) in outs.iter_mut().zip(&ins[1..]) {
                    *o = i.clone();
                }
                Ok(())
            },
            infer_type: float_same,
            cpu: Some(pdf_backward_kernel),
            ..OpDef::BASE
        };
    };
}

pdf_op!(
    PDF_UNIFORM,
    BW_PDF_UNIFORM,
    "_random_pdf_uniform",
    "random_pdf_uniform",
    "_backward_pdf_uniform",
    Pdf::Uniform,
    ["low", "high"],
    "Density of the uniform distributions on [low, high) at sample (MXNet's formula: 1/(high-low), not checked against the interval); sample's shape starts with the parameters' shape; is_log gives the log-density. Returns an array of sample's shape."
);
pdf_op!(
    PDF_NORMAL,
    BW_PDF_NORMAL,
    "_random_pdf_normal",
    "random_pdf_normal",
    "_backward_pdf_normal",
    Pdf::Normal,
    ["mu", "sigma"],
    "Density of the normal distributions (mean mu, standard deviation sigma) at sample; sample's shape starts with the parameters' shape; is_log gives the log-density. Returns an array of sample's shape."
);
pdf_op!(
    PDF_GAMMA,
    BW_PDF_GAMMA,
    "_random_pdf_gamma",
    "random_pdf_gamma",
    "_backward_pdf_gamma",
    Pdf::Gamma,
    ["alpha", "beta"],
    "Density of the gamma distributions with shape alpha and rate beta (as MXNet's pdf: beta^alpha x^(alpha-1) exp(-beta x) / Gamma(alpha)) at sample; sample's shape starts with the parameters' shape; is_log gives the log-density."
);
pdf_op!(
    PDF_EXPONENTIAL,
    BW_PDF_EXPONENTIAL,
    "_random_pdf_exponential",
    "random_pdf_exponential",
    "_backward_pdf_exponential",
    Pdf::Exponential,
    ["lam"],
    "Density lam exp(-lam x) of the exponential distributions with rate lam at sample; sample's shape starts with lam's shape; is_log gives the log-density."
);
pdf_op!(
    PDF_POISSON,
    BW_PDF_POISSON,
    "_random_pdf_poisson",
    "random_pdf_poisson",
    "_backward_pdf_poisson",
    Pdf::Poisson,
    ["lam"],
    "Probability lam^x exp(-lam) / Gamma(x+1) of the Poisson distributions with rate lam at sample (0 below 0); sample's shape starts with lam's shape; is_log gives the log-probability. The gradient with respect to the sample is 0."
);
pdf_op!(
    PDF_NEG_BINOMIAL,
    BW_PDF_NEG_BINOMIAL,
    "_random_pdf_negative_binomial",
    "random_pdf_negative_binomial",
    "_backward_pdf_negative_binomial",
    Pdf::NegBinomial,
    ["k", "p"],
    "Probability Gamma(x+k) / (Gamma(x+1) Gamma(k)) p^k (1-p)^x of the negative binomial distributions (k failures limit, success probability p) at sample (0 below 0); is_log gives the log-probability. The gradient with respect to the sample is 0."
);
pdf_op!(
    PDF_GEN_NEG_BINOMIAL,
    BW_PDF_GEN_NEG_BINOMIAL,
    "_random_pdf_generalized_negative_binomial",
    "random_pdf_generalized_negative_binomial",
    "_backward_pdf_generalized_negative_binomial",
    Pdf::GenNegBinomial,
    ["mu", "alpha"],
    "Probability of the generalized negative binomial distributions (mean mu, dispersion alpha: the negative binomial with k = 1/alpha, p = 1/(1 + alpha mu)) at sample (0 below 0); is_log gives the log-probability. The gradient with respect to the sample is 0."
);
pdf_op!(
    PDF_DIRICHLET,
    BW_PDF_DIRICHLET,
    "_random_pdf_dirichlet",
    "random_pdf_dirichlet",
    "_backward_pdf_dirichlet",
    Pdf::Dirichlet,
    ["alpha"],
    "Density of the Dirichlet distributions with concentrations alpha (last axis: the k components) at sample (last axis: k components); sample's leading axes start with alpha's leading axes. Returns an array of sample's shape without the last axis; is_log gives the log-density."
);

pub static OPS: &[&OpDef] = &[
    &PDF_UNIFORM,
    &PDF_NORMAL,
    &PDF_GAMMA,
    &PDF_EXPONENTIAL,
    &PDF_POISSON,
    &PDF_NEG_BINOMIAL,
    &PDF_GEN_NEG_BINOMIAL,
    &PDF_DIRICHLET,
    &BW_PDF_UNIFORM,
    &BW_PDF_NORMAL,
    &BW_PDF_GAMMA,
    &BW_PDF_EXPONENTIAL,
    &BW_PDF_POISSON,
    &BW_PDF_NEG_BINOMIAL,
    &BW_PDF_GEN_NEG_BINOMIAL,
    &BW_PDF_DIRICHLET,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lgamma_and_digamma_values() {
        // ln Gamma(n) = ln (n-1)!
        let mut f = 1.0f64;
        for n in 1..30 {
            assert!(
                (lgamma(n as f64) - f.ln()).abs() < 1e-12 * f.ln().abs().max(1.0),
                "{n}"
            );
            f *= n as f64;
        }
        assert!((lgamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        assert!((lgamma(-0.5) - (2.0 * std::f64::consts::PI.sqrt()).ln()).abs() < 1e-13);
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-14);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-13);
        // psi(x + 1) = psi(x) + 1 / x, and the derivative of lgamma.
        for x in [0.01, 0.3, 2.5, 7.0, 40.0, -0.5, -2.3] {
            assert!(
                (digamma(x + 1.0) - digamma(x) - 1.0 / x).abs() < 1e-10,
                "{x}"
            );
            let h = 1e-5;
            let num = (lgamma(x + h) - lgamma(x - h)) / (2.0 * h);
            assert!(
                (num - digamma(x)).abs() < 1e-6 * digamma(x).abs().max(1.0),
                "{x}"
            );
        }
    }
}
