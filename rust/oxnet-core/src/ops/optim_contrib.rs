//! MXNet 1.9.1's contrib optimizer updates: AdamW (`_adamw_update`,
//! `_mp_adamw_update` and their multi-tensor forms `_multi_adamw_update`,
//! `_multi_mp_adamw_update`), multi-tensor LAMB (`_multi_lamb_update`,
//! `_multi_mp_lamb_update`) and `_contrib_group_adagrad_update`. Python's
//! `mx.nd.contrib.adamw_update` & co. (python/oxnet/ndarray/contrib.py) call
//! them as MXNet's wrappers do.
//!
//! As in optim.rs the new weight is the output (`out=weight` updates in
//! place) and the states are written in place; parameters are float32 as
//! MXNet declares them. The AdamW forms take rescale_grad as a float32 array
//! input (its first value; MXNet's contrib wrappers make it from a float):
//! when it is NaN, infinite or 0 the update is skipped (the states stay and
//! the output is the weight). MXNet 1.9.1's `_adamw_update` also writes
//! rescale_grad * grad into its grad input; oxnet leaves grad as it is (it is
//! not a state of the optimizer). The updates have a zero gradient.
use super::attrs::Attrs;
use super::kernels::PAR_GRAIN;
use super::optim::{f32v, Raw};
use super::optim_multi::{check_count, check_known};
use super::registry::{KernelCtx, OpCall, OpDef, Params};
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    AdamW,
    Lamb,
}

pub struct ContribParam {
    rule: Rule,
    /// float32 master weights (weight32) after each tensor's states
    mp: bool,
    /// the variadic multi-tensor form (inputs `data`, per-tensor tuples)
    multi: bool,
    n: usize,
    lrs: Vec<f64>,
    wds: Vec<f64>,
    etas: Vec<f64>,
    steps: Vec<f64>,
    beta1: f64,
    beta2: f64,
    epsilon: f64,
    clip: f64,
    /// LAMB's rescale_grad (AdamW's is an input)
    rescale: f64,
    lower_bound: f64,
    upper_bound: f64,
    bias_correction: bool,
}

const ROLES: [&str; 5] = ["weight", "grad", "mean", "var", "weight32"];

impl ContribParam {
    /// Inputs per tensor.
    fn stride(&self) -> usize {
        4 + self.mp as usize
    }
    fn n_inputs(&self) -> usize {
        self.n * self.stride() + (self.rule == Rule::AdamW) as usize
    }
    /// "grad 1 (input 5)" (multi-tensor forms) or "grad".
    fn describe(&self, i: usize) -> String {
        let s = self.stride();
        if i >= self.n * s {
            return if self.multi {
                format!("rescale_grad (input {i})")
            } else {
                "rescale_grad".to_string()
            };
        }
        if self.multi {
            format!("{} {} (input {i})", ROLES[i % s], i / s)
        } else {
            ROLES[i % s].to_string()
        }
    }
}

/// A tuple parameter of one float32 value per tensor.
fn per_tensor(a: &Attrs, op: &str, key: &str, n: usize) -> Result<Vec<f64>> {
    let v = a
        .p(op)
        .floats(key)?
        .ok_or_else(|| Error::Param(format!("{op}: required argument '{key}' is missing")))?;
    if v.len() != n {
        return Err(Error::Param(format!(
            "{op}: '{key}' has {} values, expected one per tensor ({n})",
            v.len()
        )));
    }
    Ok(v.into_iter().map(f32v).collect())
}

fn parse_adamw(a: &Attrs, op: &str, mp: bool, multi: bool) -> Result<Params> {
    let mut known = vec!["beta1", "beta2", "epsilon", "clip_gradient"];
    if multi {
        known.extend(["lrs", "wds", "etas", "num_weights"]);
    } else {
        known.extend(["lr", "wd", "eta"]);
    }
    check_known(a, op, &known)?;
    let p = a.p(op);
    let (n, lrs, wds, etas) = if multi {
        let n = check_count(op, "num_weights", p.i64("num_weights", 1)?)?;
        (
            n,
            per_tensor(a, op, "lrs", n)?,
            per_tensor(a, op, "wds", n)?,
            per_tensor(a, op, "etas", n)?,
        )
    } else {
        (
            1,
            vec![f32v(p.f64_req("lr")?)],
            vec![f32v(p.f64("wd", 0.0)?)],
            vec![f32v(p.f64_req("eta")?)],
        )
    };
    Ok(Box::new(ContribParam {
        rule: Rule::AdamW,
        mp,
        multi,
        n,
        lrs,
        wds,
        etas,
        steps: Vec::new(),
        beta1: f32v(p.f64("beta1", 0.9)?),
        beta2: f32v(p.f64("beta2", 0.999)?),
        epsilon: f32v(p.f64("epsilon", 1e-8)?),
        clip: f32v(p.f64("clip_gradient", -1.0)?),
        rescale: 1.0,
        lower_bound: -1.0,
        upper_bound: -1.0,
        bias_correction: true,
    }))
}

fn parse_lamb(a: &Attrs, op: &str, mp: bool) -> Result<Params> {
    check_known(
        a,
        op,
        &[
            "learning_rates",
            "beta1",
            "beta2",
            "epsilon",
            "wds",
            "rescale_grad",
            "lower_bound",
            "upper_bound",
            "clip_gradient",
            "bias_correction",
            "step_count",
            "num_tensors",
        ],
    )?;
    let p = a.p(op);
    let n = check_count(op, "num_tensors", p.i64("num_tensors", 1)?)?;
    let steps = p
        .ints("step_count")?
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'step_count' is missing")))?;
    if steps.len() != n {
        return Err(Error::Param(format!(
            "{op}: 'step_count' has {} values, expected one per tensor ({n})",
            steps.len()
        )));
    }
    Ok(Box::new(ContribParam {
        rule: Rule::Lamb,
        mp,
        multi: true,
        n,
        lrs: per_tensor(a, op, "learning_rates", n)?,
        wds: per_tensor(a, op, "wds", n)?,
        etas: Vec::new(),
        steps: steps.into_iter().map(|t| t as f64).collect(),
        beta1: f32v(p.f64("beta1", 0.9)?),
        beta2: f32v(p.f64("beta2", 0.999)?),
        epsilon: f32v(p.f64("epsilon", 1e-6)?),
        clip: f32v(p.f64("clip_gradient", -1.0)?),
        rescale: f32v(p.f64("rescale_grad", 1.0)?),
        lower_bound: f32v(p.f64("lower_bound", -1.0)?),
        upper_bound: f32v(p.f64("upper_bound", -1.0)?),
        bias_correction: p.bool("bias_correction", true)?,
    }))
}

/// The arrays of a tensor share its weight's shape; rescale_grad holds at
/// least one value (the first is used).
fn infer_shape_contrib(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<ContribParam>();
    let s = p.stride();
    for (k, out) in outs.iter_mut().enumerate().take(p.n) {
        let group = k * s..(k + 1) * s;
        let known = group.clone().find_map(|i| ins[i].clone());
        let Some(shape) = known.or_else(|| out.clone()) else {
            continue;
        };
        for i in group {
            match &ins[i] {
                None => ins[i] = Some(shape.clone()),
                Some(t) if *t != shape => {
                    let like = if p.multi {
                        format!("weight {k}")
                    } else {
                        "weight".to_string()
                    };
                    return Err(Error::Shape(format!(
                        "{op}: {} has shape {}, expected {} like {like}",
                        p.describe(i),
                        fmt_shape(t),
                        fmt_shape(&shape)
                    )));
                }
                _ => {}
            }
        }
        *out = Some(shape);
    }
    if p.rule == Rule::AdamW {
        let i = p.n * s;
        match &ins[i] {
            None => ins[i] = Some(vec![1]),
            Some(t) if t.iter().product::<usize>() == 0 => {
                return Err(Error::Shape(format!(
                    "{op}: {} has shape {}, expected one value (shape (1,))",
                    p.describe(i),
                    fmt_shape(t)
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Weights and grads share a float dtype; mean and var have it too, except
/// in the mixed-precision forms where they and weight32 are float32;
/// rescale_grad is float32 (_multi_adamw_update: float32 or weight's dtype).
fn infer_type_contrib(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<ContribParam>();
    let s = p.stride();
    let Some(w) = ins[0] else { return Ok(()) };
    if !w.is_float() {
        return Err(Error::DType(format!(
            "{op}: {} has dtype {}, expected a float dtype",
            p.describe(0),
            w.name()
        )));
    }
    // MXNet's _multi_adamw_update takes rescale_grad in weight's dtype; its
    // Python wrapper (and every other form) passes float32: take both.
    let scale_like_weight = p.multi && !p.mp && p.rule == Rule::AdamW;
    for (i, t) in ins.iter_mut().enumerate() {
        let (want, why) = if i >= p.n * s && scale_like_weight {
            match *t {
                Some(DType::F32) => (DType::F32, ""),
                _ => (w, "(or float32)"),
            }
        } else if i >= p.n * s {
            (DType::F32, "(rescale_grad is float32)")
        } else if p.mp && i % s >= 2 {
            (DType::F32, "(mixed-precision states are float32)")
        } else if p.multi {
            (w, "like weight 0")
        } else {
            (w, "like weight")
        };
        match t {
            None => *t = Some(want),
            Some(u) if *u != want => {
                return Err(Error::DType(format!(
                    "{op}: {} has dtype {}, expected {} {why}",
                    p.describe(i),
                    u.name(),
                    want.name()
                )))
            }
            _ => {}
        }
    }
    for o in outs.iter_mut() {
        *o = Some(w);
    }
    Ok(())
}

/// One tensor's arrays: weight, grad, mean, var, (weight32), output.
#[derive(Clone, Copy)]
struct Tensor {
    w: Raw,
    g: Raw,
    mean: Raw,
    var: Raw,
    w32: Option<Raw>,
    out: Raw,
}

fn tensors(p: &ContribParam, i: &[Blob], o: &[Blob]) -> Vec<(Tensor, usize)> {
    let s = p.stride();
    let raw = |b: &Blob| Raw(b.raw_ptr(), b.dtype);
    (0..p.n)
        .map(|k| {
            let t = Tensor {
                w: raw(&i[k * s]),
                g: raw(&i[k * s + 1]),
                mean: raw(&i[k * s + 2]),
                var: raw(&i[k * s + 3]),
                w32: p.mp.then(|| raw(&i[k * s + 4])),
                out: raw(&o[k]),
            };
            (t, o[k].size())
        })
        .collect()
}

/// Runs `f(tensor, lo, hi)` over chunks of every tensor, in parallel when
/// there is enough work.
fn for_chunks(sizes: &[usize], f: &(dyn Fn(usize, usize, usize) + Sync)) {
    let mut chunks = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let mut lo = 0;
        while lo < n {
            chunks.push((k, lo, (lo + PAR_GRAIN).min(n)));
            lo += PAR_GRAIN;
        }
    }
    if chunks.len() >= 2 {
        crate::par::par_for(chunks.len(), &|c| {
            let (k, lo, hi) = chunks[c];
            f(k, lo, hi)
        });
    } else {
        for &(k, lo, hi) in &chunks {
            f(k, lo, hi);
        }
    }
}

/// AdamW (MXNet's AdamW kernels): g = clip(rescale_grad * grad);
/// mean = beta1 mean + (1 - beta1) g; var = beta2 var + (1 - beta2) g^2;
/// w -= eta (lr mean / (sqrt(var) + epsilon) + wd w), w the float32 master
/// weight in the mixed-precision forms. Computed as MXNet's kernels do (see
/// `adamw_step`), so the results equal MXNet 1.9.1's bit for bit in the
/// cases tests/python/test_optim_contrib.py checks.
fn adamw_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<ContribParam>();
    let ts = tensors(p, i, o);
    let scale = &i[p.n * p.stride()];
    // SAFETY: rescale_grad holds at least one float32 (infer_shape/type)
    let r = unsafe { Raw(scale.raw_ptr(), scale.dtype).get(0) };
    let skip = !r.is_finite() || r == 0.0;
    let sizes: Vec<usize> = ts.iter().map(|t| t.1).collect();
    // MXNet's arithmetic type: float32 with master weights, else the
    // weights' dtype
    let a = Arith(if p.mp { DType::F32 } else { i[0].dtype });
    for_chunks(&sizes, &|k, lo, hi| {
        let t = ts[k].0;
        let (lr, wd, eta) = (p.lrs[k], p.wds[k], p.etas[k]);
        for e in lo..hi {
            // SAFETY: every array of tensor k holds its size elements of its
            // dtype (infer_shape/type); the engine gives this kernel
            // exclusive access to the outputs and the states; each element
            // is read before it is written.
            unsafe {
                if skip {
                    t.out.set(e, t.w.get(e));
                    continue;
                }
                let w = match t.w32 {
                    Some(m) => m.get(e),
                    None => t.w.get(e),
                };
                let (m, v, nw) = adamw_step(
                    p,
                    a,
                    [r, lr, wd, eta],
                    [w, t.g.get(e), t.mean.get(e), t.var.get(e)],
                );
                t.mean.set(e, m);
                t.var.set(e, v);
                if let Some(m32) = t.w32 {
                    m32.set(e, nw);
                }
                t.out.set(e, nw);
            }
        }
    });
    Ok(())
}

/// One element of AdamW in MXNet's arithmetic type `a` (every parameter
/// held in it and every operation rounded to it: float16 arrays without
/// master weights compute in float16, where epsilon = 1e-8 becomes 0).
/// `s`: rescale_grad, lr, wd, eta; `x`: weight (or weight32), grad, mean,
/// var. Returns the new mean, var and weight.
#[inline]
fn adamw_step(p: &ContribParam, a: Arith, s: [f64; 4], x: [f64; 4]) -> (f64, f64, f64) {
    let [r, lr, wd, eta] = s;
    let [w, grad, mean, var] = x;
    let mut g = a.op(a.rd(r) * grad);
    if p.clip >= 0.0 {
        let c = a.rd(p.clip);
        g = crate::ops::kernels::clip_nan(g, -c, c);
    }
    let g2 = a.op(g * g);
    let (m, v) = if p.multi {
        // MXNet's multi-tensor kernel: beta (state - x) + x
        (
            a.op(a.op(a.rd(p.beta1) * a.op(mean - g)) + g),
            a.op(a.op(a.rd(p.beta2) * a.op(var - g2)) + g2),
        )
    } else {
        (
            a.op(a.op(a.rd(p.beta1) * mean) + a.op(a.rd(1.0 - p.beta1) * g)),
            a.op(a.op(a.rd(p.beta2) * var) + a.op(a.rd(1.0 - p.beta2) * g2)),
        )
    };
    let step = a.op(a.op(a.rd(lr) * m) / a.op(a.op(v.sqrt()) + a.rd(p.epsilon)));
    let nw = a.op(w - a.op(a.rd(eta) * a.op(step + a.op(a.rd(wd) * w))));
    (m, v, nw)
}

/// The sum of squares of n values as MXNet's CPU multi_sum_sq computes it
/// inside LAMB: each square in the arrays' dtype, summed in order into a
/// float32.
fn sum_sq(n: usize, dt: DType, get: impl Fn(usize) -> f64) -> f64 {
    let a = Arith(dt);
    let mut acc = 0.0;
    for e in 0..n {
        let v = get(e);
        acc = f32v(acc + a.op(v * v));
    }
    acc
}

/// The arithmetic type of MXNet's LAMB kernel: float32 for the
/// mixed-precision form, the weight's dtype otherwise. Every operation is
/// computed in float32 (float64 for float64) and its result rounded to the
/// type, as MXNet's float16 type does.
#[derive(Clone, Copy)]
struct Arith(DType);

impl Arith {
    /// A value held in the type.
    #[inline]
    fn rd(self, x: f64) -> f64 {
        match self.0 {
            DType::F16 => half::f16::from_f64(x).to_f64(),
            DType::F64 => x,
            _ => f32v(x),
        }
    }
    /// A value as float arithmetic gives it (float64 for float64).
    #[inline]
    fn fl(self, x: f64) -> f64 {
        if self.0 == DType::F64 {
            x
        } else {
            f32v(x)
        }
    }
    /// The result of one operation.
    #[inline]
    fn op(self, x: f64) -> f64 {
        self.rd(self.fl(x))
    }
}

/// Multi-tensor LAMB (MXNet's MultiLAMB): per tensor k, with t = step_count[k]:
/// g = clip(rescale_grad * grad); mean, var as Adam; d = mean_hat /
/// (sqrt(var_hat) + epsilon) + wds[k] w (mean_hat = mean / (1 - beta1^t),
/// var_hat = var / (1 - beta2^t) with bias_correction, else mean and var),
/// held in float32; r1 = ||weight|| bounded to [lower_bound, upper_bound]
/// where >= 0, r2 = ||d||; w -= lr' d with lr' = lr (r1 or r2 zero) or
/// lr r1 / r2. w is the float32 master weight in the mixed-precision form
/// (updated in place); r1 is the norm of the weight array itself, as in
/// MXNet. Computed in MXNet's arithmetic type (see `Arith`).
fn lamb_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<ContribParam>();
    let ts = tensors(p, i, o);
    let one = |k: usize| {
        let (t, n) = ts[k];
        let a = Arith(if p.mp { DType::F32 } else { t.w.1 });
        // SAFETY (all blocks below): every array of tensor k holds n
        // elements of its dtype (infer_shape/type); the engine gives this
        // kernel exclusive access to the outputs and states; the weight is
        // read (phase 1 and 2) before the output, which may be the weight,
        // is written element by element.
        let r1sq = sum_sq(n, t.w.1, |e| unsafe { t.w.get(e) });
        let step = p.steps[k];
        let (b1, b2) = (a.rd(p.beta1), a.rd(p.beta2));
        let (c1, c2) = (
            a.op(1.0 - a.op(b1.powf(step))),
            a.op(1.0 - a.op(b2.powf(step))),
        );
        let (d1, d2) = (a.op(1.0 - b1), a.op(1.0 - b2));
        let (clip_t, wd) = (a.rd(p.clip), p.wds[k]);
        let master = |e: usize| unsafe {
            match t.w32 {
                Some(m) => m.get(e),
                None => t.w.get(e),
            }
        };
        let d: Vec<f64> = (0..n)
            .map(|e| unsafe {
                let w = master(e);
                let mut g = a.op(t.g.get(e) * p.rescale);
                if p.clip >= 0.0 {
                    g = crate::ops::kernels::clip_nan(g, -clip_t, clip_t);
                }
                let m = a.op(a.op(b1 * t.mean.get(e)) + a.op(d1 * g));
                let v = a.op(a.op(b2 * t.var.get(e)) + a.op(a.op(d2 * g) * g));
                t.mean.set(e, m);
                t.var.set(e, v);
                let (m, v) = if p.bias_correction {
                    (a.op(m / c1), a.op(v / c2))
                } else {
                    (m, v)
                };
                let den = a.fl(a.fl(v.sqrt()) + p.epsilon);
                // MXNet keeps d in float32
                f32v(a.op(a.op(m / den) + a.op(wd * w)))
            })
            .collect();
        let r2sq = sum_sq(n, DType::F32, |e| d[e]);
        let mut r1 = f32v(f32v(r1sq).sqrt());
        let r2 = f32v(f32v(r2sq).sqrt());
        if p.lower_bound >= 0.0 {
            r1 = r1.max(p.lower_bound);
        }
        if p.upper_bound >= 0.0 {
            r1 = r1.min(p.upper_bound);
        }
        let ratio = a.rd(if r1 == 0.0 || r2 == 0.0 {
            1.0
        } else {
            f32v(r1 / r2)
        });
        let lr = a.op(p.lrs[k] * ratio);
        for (e, de) in d.iter().enumerate() {
            let nw = a.op(master(e) - a.op(lr * de));
            unsafe {
                if let Some(m) = t.w32 {
                    m.set(e, nw);
                }
                t.out.set(e, nw);
            }
        }
    };
    let total: usize = ts.iter().map(|t| t.1).sum();
    if p.n > 1 && total >= 2 * PAR_GRAIN {
        crate::par::par_for(p.n, &one);
    } else {
        (0..p.n).for_each(one);
    }
    Ok(())
}

macro_rules! contrib_op {
    ($NAME:ident, $name:expr, $inputs:expr, mutates: $m:expr, multi: $multi:expr, parse: $parse:expr,
     cpu: $cpu:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            doc: $doc,
            inputs: $inputs,
            num_inputs: if $multi {
                Some(|c| c.p::<ContribParam>().n_inputs())
            } else {
                None
            },
            num_outputs: |c| c.p::<ContribParam>().n,
            parse: $parse,
            infer_shape: infer_shape_contrib,
            infer_type: infer_type_contrib,
            cpu: Some($cpu),
            grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
            mutates: $m,
            mutates_of: if $multi { Some(mutated) } else { None },
            ..OpDef::BASE
        };
    };
}

/// Every tensor's mean, var (and weight32).
fn mutated(c: &OpCall) -> Vec<usize> {
    let p = c.p::<ContribParam>();
    let s = p.stride();
    (0..p.n)
        .flat_map(|k| (2..s).map(move |j| k * s + j))
        .collect()
}

contrib_op!(ADAMW, "_adamw_update", &["weight", "grad", "mean", "var", "rescale_grad"],
mutates: &[2, 3], multi: false, parse: |a| parse_adamw(a, "_adamw_update", false, false), cpu: adamw_kernel,
"AdamW (Adam with decoupled weight decay), mx.nd.contrib.adamw_update: g = clip(rescale_grad * grad, \
 clip_gradient); mean = beta1 * mean + (1 - beta1) * g; var = beta2 * var + (1 - beta2) * g^2 (mean and var \
 in place); weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight). rescale_grad is a float32 array \
 (its first value); NaN, Inf or 0 skips the update (the result is weight). Takes lr and eta (required), beta1=0.9, \
 beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1 (< 0: off). float16 arrays are updated in float16 \
 arithmetic, as MXNet does (epsilon rounds to float16 too). Returns the new weight.");

contrib_op!(MP_ADAMW, "_mp_adamw_update", &["weight", "grad", "mean", "var", "weight32", "rescale_grad"],
mutates: &[2, 3, 4], multi: false, parse: |a| parse_adamw(a, "_mp_adamw_update", true, false), cpu: adamw_kernel,
"Mixed precision AdamW, mx.nd.contrib.mp_adamw_update: _adamw_update on the float32 master weight32 with \
 float32 mean and var (all updated in place); returns weight32 cast to weight's dtype.");

contrib_op!(MULTI_ADAMW, "_multi_adamw_update", &["data"],
mutates: &[], multi: true, parse: |a| parse_adamw(a, "_multi_adamw_update", false, true), cpu: adamw_kernel,
"_adamw_update of num_weights tensors in one call (mx.nd.contrib.multi_adamw_update). Inputs: weight_0, grad_0, \
 mean_0, var_0, weight_1, ..., then rescale_grad (a float32 array; NaN, Inf or 0 skips the update); lrs, wds and \
 etas: tuples of num_weights floats; beta1, beta2, epsilon, clip_gradient as _adamw_update. Returns the \
 num_weights new weights (out=[weights] updates in place).");

contrib_op!(MULTI_MP_ADAMW, "_multi_mp_adamw_update", &["data"],
mutates: &[], multi: true, parse: |a| parse_adamw(a, "_multi_mp_adamw_update", true, true), cpu: adamw_kernel,
"Mixed precision _multi_adamw_update (mx.nd.contrib.multi_mp_adamw_update). Inputs: weight_0, grad_0, mean_0, \
 var_0, weight32_0, weight_1, ..., rescale_grad; float32 means, variances and master weights are updated in place; \
 the new weights are weight32_k cast to weight's dtype.");

contrib_op!(MULTI_LAMB, "_multi_lamb_update", &["data"],
mutates: &[], multi: true, parse: |a| parse_lamb(a, "_multi_lamb_update", false), cpu: lamb_kernel,
"LAMB of num_tensors tensors in one call (mx.nd.contrib.multi_lamb_update). Inputs: weight_0, grad_0, mean_0, \
 var_0, weight_1, ...; learning_rates, wds and step_count: one per tensor. Per tensor: g = clip(rescale_grad * grad, \
 clip_gradient); mean = beta1 * mean + (1 - beta1) * g; var = beta2 * var + (1 - beta2) * g^2 (in place); \
 d = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight with mean_hat = mean / (1 - beta1^t), var_hat = \
 var / (1 - beta2^t) (t = step_count; mean and var without bias_correction); r1 = ||weight||, bounded by \
 lower_bound / upper_bound where >= 0; r2 = ||d||; weight -= lr' * d with lr' = lr * r1 / r2 (lr where r1 or r2 is \
 0). Defaults: beta1=0.9, beta2=0.999, epsilon=1e-6, rescale_grad=1, lower_bound=upper_bound=clip_gradient=-1, \
 bias_correction=True. Returns the new weights.");

contrib_op!(MULTI_MP_LAMB, "_multi_mp_lamb_update", &["data"],
mutates: &[], multi: true, parse: |a| parse_lamb(a, "_multi_mp_lamb_update", true), cpu: lamb_kernel,
"Mixed precision _multi_lamb_update (mx.nd.contrib.multi_mp_lamb_update). Inputs: weight_0, grad_0, mean_0, var_0, \
 weight32_0, weight_1, ...; the update runs on the float32 master weights (updated in place) with float32 mean and \
 var; r1 is the norm of weight_k itself, as in MXNet. Returns weight32_k cast to weight's dtype.");

// ---------------------------------------------------------------------------
// group_adagrad_update
// ---------------------------------------------------------------------------

pub struct GroupAdagradParam {
    lr: f64,
    rescale: f64,
    clip: f64,
    epsilon: f64,
}

fn parse_group_adagrad(a: &Attrs) -> Result<Params> {
    let op = "_contrib_group_adagrad_update";
    check_known(a, op, &["lr", "rescale_grad", "clip_gradient", "epsilon"])?;
    let p = a.p(op);
    Ok(Box::new(GroupAdagradParam {
        lr: f32v(p.f64_req("lr")?),
        rescale: f32v(p.f64("rescale_grad", 1.0)?),
        clip: f32v(p.f64("clip_gradient", -1.0)?),
        epsilon: f32v(p.f64("epsilon", 1e-5)?),
    }))
}

/// grad has weight's shape (at least one dimension); history holds one
/// value per row: shape (rows,) or (rows, 1).
fn infer_shape_group_adagrad(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let Some(w) = ins[0]
        .clone()
        .or_else(|| ins[1].clone())
        .or_else(|| outs[0].clone())
    else {
        return Ok(());
    };
    if w.is_empty() {
        return Err(Error::Shape(format!(
            "{op}: weight must have at least one dimension (rows), got shape ()"
        )));
    }
    for k in [0, 1] {
        match &ins[k] {
            None => ins[k] = Some(w.clone()),
            Some(t) if *t != w => {
                return Err(Error::Shape(format!(
                    "{op}: {} has shape {}, expected {} like weight",
                    call.def.inputs[k],
                    fmt_shape(t),
                    fmt_shape(&w)
                )))
            }
            _ => {}
        }
    }
    match &ins[2] {
        None => ins[2] = Some(vec![w[0], 1]),
        Some(h) if h.is_empty() || h[0] != w[0] || h.iter().product::<usize>() != w[0] => {
            return Err(Error::Shape(format!(
                "{op}: history has shape {}, expected one value per row of weight {}: ({}, 1)",
                fmt_shape(h),
                fmt_shape(&w),
                w[0]
            )))
        }
        _ => {}
    }
    outs[0] = Some(w);
    Ok(())
}

/// weight, grad and history share a float dtype.
fn infer_type_group_adagrad(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let op = call.name();
    let Some(w) = ins[0] else { return Ok(()) };
    if !w.is_float() {
        return Err(Error::DType(format!(
            "{op}: weight has dtype {}, expected a float dtype",
            w.name()
        )));
    }
    for (k, t) in ins.iter_mut().enumerate() {
        match t {
            None => *t = Some(w),
            Some(u) if *u != w => {
                return Err(Error::DType(format!(
                    "{op}: {} has dtype {}, expected {} like weight",
                    call.def.inputs[k],
                    u.name(),
                    w.name()
                )))
            }
            _ => {}
        }
    }
    outs[0] = Some(w);
    Ok(())
}

fn group_adagrad_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<GroupAdagradParam>();
    let (w, g, h) = (
        Raw(i[0].raw_ptr(), i[0].dtype),
        Raw(i[1].raw_ptr(), i[1].dtype),
        Raw(i[2].raw_ptr(), i[2].dtype),
    );
    let out = Raw(o[0].raw_ptr(), o[0].dtype);
    let rows = i[2].size();
    let len = i[0].size().checked_div(rows).unwrap_or(0);
    // MXNet's kernel computes in the arrays' dtype: each operation rounded
    let a = Arith(i[0].dtype);
    let (lr, eps, scale, cl) = (a.rd(p.lr), a.rd(p.epsilon), a.rd(p.rescale), a.rd(p.clip));
    let row = |r: usize| {
        // SAFETY: weight, grad and the output hold rows * len elements and
        // history rows (infer_shape); the engine gives this kernel exclusive
        // access to the output and history; each element is read before it
        // is written.
        unsafe {
            let gv = |j: usize| {
                let x = a.op(g.get(r * len + j) * scale);
                if cl >= 0.0 {
                    crate::ops::kernels::clip_nan(x, -cl, cl)
                } else {
                    x
                }
            };
            let mut ssq = 0.0;
            for j in 0..len {
                ssq = a.op(ssq + a.op(gv(j) * gv(j)));
            }
            let hist = a.op(h.get(r) + a.op(ssq / len as f64));
            h.set(r, hist);
            let denom = a.op(a.op(hist + eps).sqrt());
            for j in 0..len {
                let div = a.op(a.op(lr * gv(j)) / denom);
                out.set(r * len + j, a.op(w.get(r * len + j) - div));
            }
        }
    };
    if i[0].size() >= 2 * PAR_GRAIN && rows > 1 {
        crate::par::par_for(rows, &row);
    } else {
        (0..rows).for_each(row);
    }
    Ok(())
}

pub static GROUP_ADAGRAD: OpDef = OpDef {
    name: "_contrib_group_adagrad_update",
    doc: "Group AdaGrad (mx.nd.contrib.group_adagrad_update): one adaptive learning rate per row of weight. \
          g = clip(rescale_grad * grad, clip_gradient); history += mean(g^2 over each row) (in place; shape \
          (rows, 1)); weight -= lr * g / sqrt(history + epsilon). Takes lr (required), rescale_grad=1, \
          clip_gradient=-1 (< 0: off), epsilon=1e-5; no weight decay. Returns the new weight. MXNet 1.9.1 runs it \
          only with a row_sparse grad (rows without gradient are left as they are); for dense arrays every row \
          is updated.",
    inputs: &["weight", "grad", "history"],
    parse: parse_group_adagrad,
    infer_shape: infer_shape_group_adagrad,
    infer_type: infer_type_group_adagrad,
    cpu: Some(group_adagrad_kernel),
    grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
    mutates: &[2],
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &ADAMW,
    &MP_ADAMW,
    &MULTI_ADAMW,
    &MULTI_MP_ADAMW,
    &MULTI_LAMB,
    &MULTI_MP_LAMB,
    &GROUP_ADAGRAD,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::arr;
    use crate::ops::registry::call_into;

    fn f32_arr(v: f32) -> crate::ndarray::NDArray {
        crate::ndarray::NDArray::from_vec(vec![v], &[1], crate::base::Context::cpu(0)).unwrap()
    }

    #[test]
    fn adamw_one_step_and_skip() {
        let attrs = [("lr", "0.5"), ("eta", "0.5"), ("wd", "0.25")];
        let (w, m, v) = (arr(&[1.0], &[1]), arr(&[0.0], &[1]), arr(&[0.0], &[1]));
        for scale in [0.0f32, f32::NAN] {
            let ins = [
                w.clone(),
                arr(&[2.0], &[1]),
                m.clone(),
                v.clone(),
                f32_arr(scale),
            ];
            call_into("_adamw_update", &attrs, &ins, &[w.clone()]).unwrap();
            assert_eq!(w.to_vec::<f64>().unwrap(), [1.0]);
            assert_eq!(m.to_vec::<f64>().unwrap(), [0.0]);
        }
        let ins = [
            w.clone(),
            arr(&[2.0], &[1]),
            m.clone(),
            v.clone(),
            f32_arr(0.5),
        ];
        call_into("_adamw_update", &attrs, &ins, &[w.clone()]).unwrap();
        // g = 1; mean = 0.1; var = 0.001; w -= 0.5 (0.5 * 0.1 / (sqrt(0.001) + 1e-8) + 0.25)
        let f = |x: f32| x as f64;
        let (mm, vv) = (1.0 - f(0.9), 1.0 - f(0.999));
        let want = 1.0 - 0.5 * (0.5 * mm / (vv.sqrt() + f(1e-8)) + 0.25);
        assert!((w.to_vec::<f64>().unwrap()[0] - want).abs() < 1e-12);
        assert!((m.to_vec::<f64>().unwrap()[0] - mm).abs() < 1e-12);
    }

    #[test]
    fn multi_lamb_trust_ratio() {
        // one tensor, no bias correction, beta1 = beta2 = 0: d = g / (|g| + eps) + wd w
        let (w, g) = (arr(&[3.0, 4.0], &[2]), arr(&[2.0, -2.0], &[2]));
        let (m, v) = (arr(&[0.0, 0.0], &[2]), arr(&[0.0, 0.0], &[2]));
        let attrs = [
            ("num_tensors", "1"),
            ("learning_rates", "(0.5,)"),
            ("wds", "(0.0,)"),
            ("step_count", "(1,)"),
            ("beta1", "0"),
            ("beta2", "0"),
            ("epsilon", "0"),
            ("bias_correction", "False"),
        ];
        call_into(
            "_multi_lamb_update",
            &attrs,
            &[w.clone(), g, m.clone(), v],
            &[w.clone()],
        )
        .unwrap();
        // d = (1, -1); r1 = 5, r2 = sqrt(2); w -= 0.5 * 5 / sqrt(2) * d
        let s = 2.5 / 2f64.sqrt();
        let got = w.to_vec::<f64>().unwrap();
        assert!((got[0] - (3.0 - s)).abs() < 1e-6 && (got[1] - (4.0 + s)).abs() < 1e-6);
        assert_eq!(m.to_vec::<f64>().unwrap(), [2.0, -2.0]);
    }
}
