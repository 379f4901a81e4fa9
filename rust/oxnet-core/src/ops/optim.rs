//! Single-call optimizer updates (MXNet 1.9.1 formulas). The new weight is
//! the output (use `out=weight` to update in place); optimizer states
//! (momentum, mean/var, ...) are inputs written in place (`OpDef.mutates`).
//! The SGD family, adam, rmsprop, ftrl, signum and adagrad take
//! rescale_grad, clip_gradient (< 0: off), wd and lazy_update (dense arrays:
//! lazy updates are ordinary updates); ftml_update and LAMB's two phases take
//! MXNet's own parameter sets. LAMB's phase 1 returns the direction g, not a
//! weight. The updates are not differentiable: their gradient is None. The
//! multi-tensor updates are in optim_multi.rs. sgd_update, sgd_mom_update,
//! adam_update, ftrl_update and adagrad_update also answer to MXNet's
//! `_sparse_<name>` aliases (the names `mx.nd.sparse.<name>` calls; on dense
//! arrays they are the same update).
use super::attrs::Attrs;
use super::kernels::PAR_GRAIN;
use super::registry::{infer_shape_same, KernelCtx, OpCall, OpDef, Params};
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use half::f16;

pub struct OptParam {
    lr: f64,
    wd: f64,
    rescale: f64,
    clip: f64,
    momentum: f64,
    beta1: f64,
    beta2: f64,
    epsilon: f64,
    gamma1: f64,
    gamma2: f64,
    clip_weights: f64,
    lamda1: f64,
    beta: f64,
    wd_lh: f64,
    /// The update count (ftml_update, lamb_update_phase1).
    t: f64,
    bias_correction: bool,
    lower_bound: f64,
    upper_bound: f64,
}

impl OptParam {
    /// MXNet's defaults of the parameters a rule does not take.
    fn new(lr: f64) -> OptParam {
        OptParam {
            lr,
            wd: 0.0,
            rescale: 1.0,
            clip: -1.0,
            momentum: 0.0,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            gamma1: 0.95,
            gamma2: 0.9,
            clip_weights: -1.0,
            lamda1: 0.01,
            beta: 1.0,
            wd_lh: 0.0,
            t: 0.0,
            bias_correction: true,
            lower_bound: -1.0,
            upper_bound: -1.0,
        }
    }
}

fn parse_opt(a: &Attrs, op: &str, eps_default: f64) -> Result<OptParam> {
    let p = a.p(op);
    let _lazy = p.bool("lazy_update", true)?;
    let param = OptParam {
        lr: p.f64_req("lr")?,
        wd: p.f64("wd", 0.0)?,
        rescale: p.f64("rescale_grad", 1.0)?,
        clip: p.f64("clip_gradient", -1.0)?,
        momentum: p.f64("momentum", 0.0)?,
        beta1: p.f64("beta1", 0.9)?,
        beta2: p.f64("beta2", 0.999)?,
        epsilon: p.f64("epsilon", eps_default)?,
        gamma1: p.f64("gamma1", 0.95)?,
        gamma2: p.f64("gamma2", 0.9)?,
        clip_weights: p.f64("clip_weights", -1.0)?,
        lamda1: p.f64("lamda1", 0.01)?,
        beta: p.f64("beta", 1.0)?,
        wd_lh: p.f64("wd_lh", 0.0)?,
        ..OptParam::new(0.0)
    };
    // MXNet's adagrad kernel has no weight decay and rejects it.
    if op == "adagrad_update" && param.wd != 0.0 {
        return Err(Error::Param(format!(
            "{op}: wd={} is not supported (adagrad_update has no weight decay; apply it to the gradient)",
            param.wd
        )));
    }
    Ok(param.into_f32())
}

/// MXNet declares the updates' parameters `float` (ftml's epsilon excepted):
/// the rules use the float32 value, as MXNet's kernels do (1 - beta2
/// amplifies the rounding of beta2 = 0.999 to 1e-5).
pub(super) fn f32v(v: f64) -> f64 {
    v as f32 as f64
}

impl OptParam {
    /// Every float parameter rounded to float32, as MXNet's kernels see them.
    fn into_f32(mut self) -> OptParam {
        for v in [
            &mut self.lr,
            &mut self.wd,
            &mut self.rescale,
            &mut self.clip,
            &mut self.momentum,
            &mut self.beta1,
            &mut self.beta2,
            &mut self.epsilon,
            &mut self.gamma1,
            &mut self.gamma2,
            &mut self.clip_weights,
            &mut self.lamda1,
            &mut self.beta,
            &mut self.wd_lh,
            &mut self.lower_bound,
            &mut self.upper_bound,
        ] {
            *v = f32v(*v);
        }
        self
    }
}

/// ftml_update: its clip parameter is `clip_grad`, beta1 defaults to 0.6
/// and the update count `t` is required.
fn parse_ftml(a: &Attrs) -> Result<Params> {
    let p = a.p("ftml_update");
    let param = OptParam {
        wd: p.f64("wd", 0.0)?,
        rescale: p.f64("rescale_grad", 1.0)?,
        clip: p.f64("clip_grad", -1.0)?,
        beta1: p.f64("beta1", 0.6)?,
        beta2: p.f64("beta2", 0.999)?,
        t: p.i64_req("t")? as f64,
        ..OptParam::new(p.f64_req("lr")?)
    };
    // epsilon is a double in MXNet
    Ok(Box::new(OptParam {
        epsilon: p.f64("epsilon", 1e-8)?,
        ..param.into_f32()
    }))
}

/// lamb_update_phase1 and mp_lamb_update_phase1: no learning rate; t and wd
/// are required.
fn parse_lamb1(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(
        OptParam {
            wd: p.f64_req("wd")?,
            rescale: p.f64("rescale_grad", 1.0)?,
            clip: p.f64("clip_gradient", -1.0)?,
            beta1: p.f64("beta1", 0.9)?,
            beta2: p.f64("beta2", 0.999)?,
            epsilon: p.f64("epsilon", 1e-6)?,
            t: p.i64_req("t")? as f64,
            bias_correction: p.bool("bias_correction", true)?,
            ..OptParam::new(0.0)
        }
        .into_f32(),
    ))
}

/// lamb_update_phase2 and mp_lamb_update_phase2.
fn parse_lamb2(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(
        OptParam {
            lower_bound: p.f64("lower_bound", -1.0)?,
            upper_bound: p.f64("upper_bound", -1.0)?,
            ..OptParam::new(p.f64_req("lr")?)
        }
        .into_f32(),
    ))
}

#[inline]
fn clip(v: f64, c: f64) -> f64 {
    if c >= 0.0 {
        crate::ops::kernels::clip_nan(v, -c, c)
    } else {
        v
    }
}

#[inline]
fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

// One element's update (the last argument of `opt_op!`): `v` holds the
// input values (weight, grad, states...) and receives the new states; it
// returns the new weight.

#[derive(Clone, Copy)]
pub(super) struct Raw(pub(super) *mut u8, pub(super) DType);
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

impl Raw {
    #[inline]
    pub(super) unsafe fn get(&self, k: usize) -> f64 {
        match self.1 {
            DType::F32 => *(self.0 as *const f32).add(k) as f64,
            DType::F64 => *(self.0 as *const f64).add(k),
            DType::F16 => (*(self.0 as *const f16).add(k)).to_f64(),
            _ => unreachable!("float dtypes only (checked by infer_type)"),
        }
    }
    #[inline]
    pub(super) unsafe fn set(&self, k: usize, v: f64) {
        match self.1 {
            DType::F32 => *(self.0 as *mut f32).add(k) = v as f32,
            DType::F64 => *(self.0 as *mut f64).add(k) = v,
            DType::F16 => *(self.0 as *mut f16).add(k) = f16::from_f64(v),
            _ => unreachable!("float dtypes only (checked by infer_type)"),
        }
    }
}

/// Bit j set: input j is updated in place (`mutates`), as a const.
const fn mut_mask(m: &[usize]) -> u8 {
    let mut mask = 0u8;
    let mut k = 0;
    while k < m.len() {
        mask |= 1 << m[k];
        k += 1;
    }
    mask
}

/// The all-float32 update over elements lo..hi with the input count and the
/// mutated set known at compile time, through slices (no aliasing between
/// them, the output being the weight or a separate array), so the loop
/// vectorises: the rule still computes in float64 per element.
///
/// # Safety
/// `ins` and `out` hold at least `hi` float32 each, the inputs are pairwise
/// distinct buffers, `out` is either input 0 or distinct from all, and
/// nothing else accesses them meanwhile.
#[inline(always)]
unsafe fn rule_f32<const N: usize, const MUT: u8, R: Fn(&OptParam, &mut [f64; 6]) -> f64>(
    p: &OptParam,
    ins: [*mut f32; N],
    out: *mut f32,
    lo: usize,
    hi: usize,
    rule: &R,
) {
    let len = hi - lo;
    let mut s: [&mut [f32]; N] = ins.map(|q| std::slice::from_raw_parts_mut(q.add(lo), len));
    // element k: load, apply the rule, store the mutated states; the
    // result goes where the caller's loop says
    #[inline(always)]
    unsafe fn step<const N: usize, const MUT: u8, R: Fn(&OptParam, &mut [f64; 6]) -> f64>(
        p: &OptParam,
        s: &mut [&mut [f32]; N],
        k: usize,
        rule: &R,
    ) -> f32 {
        let mut v = [0f64; 6];
        for j in 0..N {
            v[j] = *s[j].get_unchecked(k) as f64;
        }
        let w = rule(p, &mut v);
        for j in 1..N {
            if MUT & (1 << j) != 0 {
                *s[j].get_unchecked_mut(k) = v[j] as f32;
            }
        }
        w as f32
    }
    // two loops so that each has one store target for the result
    if out == ins[0] {
        for k in 0..len {
            let w = step::<N, MUT, R>(p, &mut s, k, rule);
            *s[0].get_unchecked_mut(k) = w;
        }
    } else {
        let sep = std::slice::from_raw_parts_mut(out.add(lo), len);
        for k in 0..len {
            *sep.get_unchecked_mut(k) = step::<N, MUT, R>(p, &mut s, k, rule);
        }
    }
}

fn run_rule<const N: usize, const MUT: u8, R: Fn(&OptParam, &mut [f64; 6]) -> f64 + Sync>(
    call: &OpCall,
    i: &[Blob],
    o: &[Blob],
    rule: R,
) -> Result<()> {
    let p = call.p::<OptParam>();
    let ins: Vec<Raw> = i.iter().map(|b| Raw(b.raw_ptr(), b.dtype)).collect();
    let out = Raw(o[0].raw_ptr(), o[0].dtype);
    let muts = call.def.mutates;
    let n = o[0].size();
    let all_f32 = out.1 == DType::F32 && ins.iter().all(|r| r.1 == DType::F32);
    // the slice loop needs distinct input buffers (the output may be the
    // weight); an op called with one array twice takes the general loop
    let distinct = ins.len() == N
        && (0..N).all(|a| (a + 1..N).all(|b| ins[a].0 != ins[b].0))
        && (out.0 == ins[0].0 || ins.iter().all(|r| r.0 != out.0));
    let fast = all_f32 && distinct;
    let chunk = |lo: usize, hi: usize| {
        if fast {
            let ptrs: [*mut f32; N] = std::array::from_fn(|j| ins[j].0 as *mut f32);
            // SAFETY: checked above: float32 buffers of n elements, distinct
            // inputs, the output the weight or separate; the engine gives
            // this kernel exclusive access to what it writes.
            unsafe { rule_f32::<N, MUT, R>(p, ptrs, out.0 as *mut f32, lo, hi, &rule) };
            return;
        }
        // SAFETY (both loops): all buffers hold n elements of their dtype;
        // the engine gives this kernel exclusive access to outputs and
        // mutated inputs; each element is read before it is written.
        if all_f32 {
            // the common case, without a dtype match per element and value
            let mut ptr = [std::ptr::null_mut::<f32>(); 6];
            for (j, r) in ins.iter().enumerate() {
                ptr[j] = r.0 as *mut f32;
            }
            let (nin, po) = (ins.len(), out.0 as *mut f32);
            let mut v = [0f64; 6];
            for k in lo..hi {
                unsafe {
                    for j in 0..nin {
                        v[j] = *ptr[j].add(k) as f64;
                    }
                    let w = rule(p, &mut v);
                    for &m in muts {
                        *ptr[m].add(k) = v[m] as f32;
                    }
                    *po.add(k) = w as f32;
                }
            }
            return;
        }
        let mut v = [0f64; 6];
        for k in lo..hi {
            unsafe {
                for (j, r) in ins.iter().enumerate() {
                    v[j] = r.get(k);
                }
                let w = rule(p, &mut v);
                for &m in muts {
                    ins[m].set(k, v[m]);
                }
                out.set(k, w);
            }
        }
    };
    if n >= 2 * PAR_GRAIN {
        crate::par::par_for(n.div_ceil(PAR_GRAIN), &|c| {
            chunk(c * PAR_GRAIN, ((c + 1) * PAR_GRAIN).min(n))
        });
    } else {
        chunk(0, n);
    }
    Ok(())
}

/// weight and grad share a dtype; states default to it, except `f32_states`
/// (the float32 master weight and momentum of the mixed-precision updates).
fn infer_type_opt(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
    f32_from: usize,
) -> Result<()> {
    let op = call.name();
    let names = call.def.inputs;
    let Some(w) = ins[0] else { return Ok(()) };
    for (k, t) in ins.iter_mut().enumerate() {
        let want = if k >= f32_from { DType::F32 } else { w };
        match t {
            None => *t = Some(want),
            Some(u) if *u != want => {
                return Err(Error::DType(format!(
                    "{op}: {} has dtype {}, expected {}",
                    names.get(k).copied().unwrap_or("input"),
                    u.name(),
                    want.name()
                )))
            }
            _ => {}
        }
    }
    if !w.is_float() {
        return Err(Error::DType(format!(
            "{op}: weight has dtype {}, expected a float dtype",
            w.name()
        )));
    }
    outs[0] = Some(w);
    Ok(())
}

macro_rules! opt_op {
    ($NAME:ident, $name:expr, [$($alias:expr),*], [$($inp:expr),*], mutates: $m:expr, f32_from: $f32:expr, eps: $eps:expr, $doc:expr, $rule:expr) => {
        opt_op!($NAME, $name, [$($alias),*], [$($inp),*], mutates: $m,
            parse: |a| Ok(Box::new(parse_opt(a, $name, $eps)?) as Params),
            infer_type: |c, i, o| infer_type_opt(c, i, o, $f32), $doc, $rule);
    };
    ($NAME:ident, $name:expr, [$($alias:expr),*], [$($inp:expr),*], mutates: $m:expr, parse: $parse:expr, infer_type: $it:expr, $doc:expr, $rule:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$($alias),*],
            doc: $doc,
            inputs: &[$($inp),*],
            parse: $parse,
            infer_shape: infer_shape_same,
            infer_type: $it,
            cpu: Some(|c, i, o, _| {
                run_rule::<{ [$($inp),*].len() }, { mut_mask($m) }, _>(c, i, o, $rule)
            }),
            grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
            mutates: $m,
            ..OpDef::BASE
        };
    };
}

opt_op!(SGD, "sgd_update", ["_sparse_sgd_update"], ["weight", "grad"], mutates: &[], f32_from: 9, eps: 1e-8,
    "weight = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad, clip_gradient).",
    |p, v| (1.0 - p.lr * p.wd) * v[0] - p.lr * clip(p.rescale * v[1], p.clip));

opt_op!(SGD_MOM, "sgd_mom_update", ["_sparse_sgd_mom_update"], ["weight", "grad", "mom"], mutates: &[2], f32_from: 9, eps: 1e-8,
"mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad, clip_gradient); weight += mom.",
|p, v| {
    v[2] = p.momentum * v[2] - p.lr * p.wd * v[0] - p.lr * clip(p.rescale * v[1], p.clip);
    v[0] + v[2]
});

opt_op!(MP_SGD, "mp_sgd_update", [], ["weight", "grad", "weight32"], mutates: &[2], f32_from: 2, eps: 1e-8,
"Mixed precision sgd_update: the float32 master weight32 is updated in place and weight = weight32 cast.",
|p, v| {
    v[2] = (1.0 - p.lr * p.wd) * v[2] - p.lr * clip(p.rescale * v[1], p.clip);
    v[2]
});

opt_op!(MP_SGD_MOM, "mp_sgd_mom_update", [], ["weight", "grad", "mom", "weight32"], mutates: &[2, 3], f32_from: 2, eps: 1e-8,
"Mixed precision sgd_mom_update with float32 mom and master weight32.",
|p, v| {
    v[2] = p.momentum * v[2] - p.lr * p.wd * v[3] - p.lr * clip(p.rescale * v[1], p.clip);
    v[3] += v[2];
    v[3]
});

opt_op!(NAG_MOM, "nag_mom_update", [], ["weight", "grad", "mom"], mutates: &[2], f32_from: 9, eps: 1e-8,
"Nesterov momentum (MXNet >= 1.6): g = clip(rescale_grad * grad) + wd * weight; \
 mom = momentum * mom - lr * g; weight += momentum * mom - lr * g.",
|p, v| {
    let g = clip(p.rescale * v[1], p.clip) + p.wd * v[0];
    v[2] = p.momentum * v[2] - p.lr * g;
    v[0] + p.momentum * v[2] - p.lr * g
});

opt_op!(ADAM, "adam_update", ["_sparse_adam_update"], ["weight", "grad", "mean", "var"], mutates: &[2, 3], f32_from: 9, eps: 1e-8,
"g = clip(rescale_grad * grad + wd * weight); mean = beta1 * mean + (1 - beta1) * g; \
 var = beta2 * var + (1 - beta2) * g^2; weight -= lr * mean / (sqrt(var) + epsilon).",
|p, v| {
    let g = clip(p.rescale * v[1] + p.wd * v[0], p.clip);
    v[2] = p.beta1 * v[2] + (1.0 - p.beta1) * g;
    v[3] = p.beta2 * v[3] + (1.0 - p.beta2) * g * g;
    v[0] - p.lr * v[2] / (v[3].sqrt() + p.epsilon)
});

opt_op!(RMSPROP, "rmsprop_update", [], ["weight", "grad", "n"], mutates: &[2], f32_from: 9, eps: 1e-8,
"g = clip(rescale_grad * grad + wd * weight); n = (1 - gamma1) * g^2 + gamma1 * n; \
 weight -= lr * g / sqrt(n + epsilon), clipped to clip_weights when >= 0.",
|p, v| {
    let g = clip(p.rescale * v[1] + p.wd * v[0], p.clip);
    v[2] = (1.0 - p.gamma1) * g * g + p.gamma1 * v[2];
    clip(v[0] - p.lr * g / (v[2] + p.epsilon).sqrt(), p.clip_weights)
});

opt_op!(RMSPROP_ALEX, "rmspropalex_update", [], ["weight", "grad", "n", "g", "delta"], mutates: &[2, 3, 4], f32_from: 9, eps: 1e-8,
"Centered RMSProp (Graves): n = (1-gamma1) g^2 + gamma1 n; g_avg = (1-gamma1) g + gamma1 g_avg; \
 delta = gamma2 delta - lr g / sqrt(n - g_avg^2 + epsilon); weight += delta (clip_weights when >= 0).",
|p, v| {
    let g = clip(p.rescale * v[1] + p.wd * v[0], p.clip);
    v[2] = (1.0 - p.gamma1) * g * g + p.gamma1 * v[2];
    v[3] = (1.0 - p.gamma1) * g + p.gamma1 * v[3];
    v[4] = p.gamma2 * v[4] - p.lr * g / (v[2] - v[3] * v[3] + p.epsilon).sqrt();
    clip(v[0] + v[4], p.clip_weights)
});

opt_op!(FTRL, "ftrl_update", ["_sparse_ftrl_update"], ["weight", "grad", "z", "n"], mutates: &[2, 3], f32_from: 9, eps: 1e-8,
"FTRL-proximal: g = clip(rescale_grad * grad); z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr; \
 n += g^2; weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1, else 0.",
|p, v| {
    let g = clip(p.rescale * v[1], p.clip);
    v[2] += g - ((v[3] + g * g).sqrt() - v[3].sqrt()) * v[0] / p.lr;
    v[3] += g * g;
    // NaN z (from a NaN gradient) takes the first branch: NaN, as MXNet
    if !(v[2].abs() <= p.lamda1) {
        (sign(v[2]) * p.lamda1 - v[2]) / ((p.beta + v[3].sqrt()) / p.lr + p.wd)
    } else {
        0.0
    }
});

opt_op!(SIGNSGD, "signsgd_update", [], ["weight", "grad"], mutates: &[], f32_from: 9, eps: 1e-8,
    "weight = (1 - lr * wd) * weight - lr * sign(grad).",
    |p, v| (1.0 - p.lr * p.wd) * v[0] - p.lr * sign(v[1]));

opt_op!(SIGNUM, "signum_update", [], ["weight", "grad", "mom"], mutates: &[2], f32_from: 9, eps: 1e-8,
"mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad)); \
 weight = (1 - lr * wd_lh) * weight + lr * sign(mom).",
|p, v| {
    let g = clip(p.rescale * v[1], p.clip);
    v[2] = p.momentum * v[2] - (1.0 - p.momentum) * p.wd * v[0] - (1.0 - p.momentum) * g;
    (1.0 - p.lr * p.wd_lh) * v[0] + p.lr * sign(v[2])
});

opt_op!(ADAGRAD, "adagrad_update", ["_sparse_adagrad_update"], ["weight", "grad", "history"], mutates: &[2], f32_from: 9, eps: 1e-7,
"g = clip(rescale_grad * grad); history += g^2; weight -= lr * g / (sqrt(history) + epsilon). wd must be 0.",
|p, v| {
    let g = clip(p.rescale * v[1], p.clip);
    v[2] += g * g;
    v[0] - p.lr * g / (v[2].sqrt() + p.epsilon)
});

opt_op!(MP_NAG_MOM, "mp_nag_mom_update", [], ["weight", "grad", "mom", "weight32"], mutates: &[2, 3],
f32_from: 2, eps: 1e-8,
"Mixed precision nag_mom_update with float32 mom and master weight32 (MXNet 1.9.1's order): \
 g = clip(rescale_grad * grad); weight32 += momentum^2 * mom - (1 + momentum) * lr * (g + wd * weight32); \
 then mom = momentum * mom - lr * (g + wd * weight32) with the updated weight32; weight = weight32 cast.",
|p, v| {
    let g = clip(p.rescale * v[1], p.clip);
    let m = p.momentum * v[2];
    let w = v[3] - m + (p.momentum + 1.0) * (m - p.lr * (g + p.wd * v[3]));
    // MXNet 1.9.1 decays the momentum with the already updated weight
    v[2] = m - p.lr * (g + p.wd * w);
    v[3] = w;
    w
});

opt_op!(FTML, "ftml_update", [], ["weight", "grad", "d", "v", "z"], mutates: &[2, 3, 4],
parse: parse_ftml, infer_type: |c, i, o| infer_type_opt(c, i, o, 9),
"FTML (Follow the Moving Leader) step t: g = clip(rescale_grad * grad + wd * weight, clip_grad); \
 v = beta2 * v + (1 - beta2) * g^2; d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon); \
 z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight; d = d_t; weight = -z / d_t (z decays with 1 - beta1 as in the paper and MXNet's kernel; MXNet's doc writes 1 - beta1^t).",
|p, v| {
    let g = clip(p.rescale * v[1] + p.wd * v[0], p.clip);
    v[3] = p.beta2 * v[3] + (1.0 - p.beta2) * g * g;
    let d = (1.0 - f32v(p.beta1.powf(p.t))) / p.lr
        * ((v[3] / (1.0 - f32v(p.beta2.powf(p.t)))).sqrt() + p.epsilon);
    v[4] = p.beta1 * v[4] + (1.0 - p.beta1) * g - (d - p.beta1 * v[2]) * v[0];
    v[2] = d;
    -v[4] / d
});

/// LAMB phase 1 on element values: `w` the weight (or float32 master weight).
#[inline]
fn lamb1(p: &OptParam, w: f64, grad: f64, mean: &mut f64, var: &mut f64) -> f64 {
    let g = clip(p.rescale * grad, p.clip);
    *mean = p.beta1 * *mean + (1.0 - p.beta1) * g;
    *var = p.beta2 * *var + (1.0 - p.beta2) * g * g;
    if p.bias_correction {
        // beta^t as MXNet's float32 kernels hold it
        let m = *mean / (1.0 - f32v(p.beta1.powf(p.t)));
        let v = *var / (1.0 - f32v(p.beta2.powf(p.t)));
        m / (v.sqrt() + p.epsilon) + p.wd * w
    } else {
        *mean / (var.sqrt() + p.epsilon) + p.wd * w
    }
}

opt_op!(LAMB1, "lamb_update_phase1", [], ["weight", "grad", "mean", "var"], mutates: &[2, 3],
parse: |a| parse_lamb1(a, "lamb_update_phase1"), infer_type: |c, i, o| infer_type_opt(c, i, o, 9),
"Phase 1 of LAMB (step t): g = clip(rescale_grad * grad, clip_gradient); mean = beta1 * mean + (1 - beta1) * g; \
 var = beta2 * var + (1 - beta2) * g^2; returns mean_hat / (sqrt(var_hat) + epsilon) + wd * weight, with \
 mean_hat = mean / (1 - beta1^t) and var_hat = var / (1 - beta2^t) when bias_correction (else mean and var). \
 mean and var are updated in place; the result goes to lamb_update_phase2.",
|p, v| {
    let (mut m, mut s) = (v[2], v[3]);
    let r = lamb1(p, v[0], v[1], &mut m, &mut s);
    v[2] = m;
    v[3] = s;
    r
});

opt_op!(MP_LAMB1, "mp_lamb_update_phase1", [], ["weight", "grad", "mean", "var", "weight32"], mutates: &[2, 3],
parse: |a| parse_lamb1(a, "mp_lamb_update_phase1"),
infer_type: |c, i, o| {
    infer_type_opt(c, i, o, 2)?;
    if o[0].is_some() {
        o[0] = Some(DType::F32);
    }
    Ok(())
},
"Mixed precision lamb_update_phase1: float32 mean, var and master weight32 (used for the weight decay); \
 returns the float32 g for mp_lamb_update_phase2.",
|p, v| {
    let (mut m, mut s) = (v[2], v[3]);
    let r = lamb1(p, v[4], v[1], &mut m, &mut s);
    v[2] = m;
    v[3] = s;
    r
});

/// weight, g (and weight32) share a shape; r1 and r2 hold one value each.
fn infer_shape_lamb2(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    for k in [2, 3] {
        if let Some(s) = &ins[k] {
            if s.iter().product::<usize>() != 1 || s.is_empty() {
                return Err(Error::Shape(format!(
                    "{op}: {} must hold one value (shape (1,)), got shape {}",
                    call.def.inputs[k],
                    fmt_shape(s)
                )));
            }
        }
    }
    let mut same: Vec<usize> = vec![0, 1];
    if ins.len() > 4 {
        same.push(4);
    }
    let known = same.iter().find_map(|&k| ins[k].clone());
    let Some(s) = known.or_else(|| outs[0].clone()) else {
        return Ok(());
    };
    for &k in &same {
        match &ins[k] {
            None => ins[k] = Some(s.clone()),
            Some(t) if *t != s => {
                return Err(Error::Shape(format!(
                    "{op}: {} has shape {}, expected {} like weight",
                    call.def.inputs[k],
                    fmt_shape(t),
                    fmt_shape(&s)
                )))
            }
            _ => {}
        }
    }
    outs[0] = Some(s);
    Ok(())
}

/// LAMB phase 2: lr scaled by the trust ratio r1 / r2 (r1 bounded to
/// [lower_bound, upper_bound] where they are >= 0; lr unchanged when r1 or
/// r2 is 0); returns weight - lr * g (weight32 - lr * g for the mixed
/// precision form, which leaves weight32 as it is, like MXNet 1.9.1).
fn lamb2_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<OptParam>();
    let ins: Vec<Raw> = i.iter().map(|b| Raw(b.raw_ptr(), b.dtype)).collect();
    let out = Raw(o[0].raw_ptr(), o[0].dtype);
    // SAFETY: r1 and r2 hold one element each (infer_shape)
    let (mut r1, r2) = unsafe { (ins[2].get(0), ins[3].get(0)) };
    if p.lower_bound >= 0.0 {
        r1 = r1.max(p.lower_bound);
    }
    if p.upper_bound >= 0.0 {
        r1 = r1.min(p.upper_bound);
    }
    let lr = if r1 == 0.0 || r2 == 0.0 {
        p.lr
    } else {
        p.lr * r1 / r2
    };
    let master = ins.len() > 4;
    let n = o[0].size();
    let chunk = |lo: usize, hi: usize| {
        for k in lo..hi {
            // SAFETY: weight, g, weight32 and the output hold n elements of
            // their dtypes; the engine gives this kernel exclusive access to
            // the output; each element is read before it is written.
            unsafe {
                if master {
                    out.set(k, ins[4].get(k) - lr * ins[1].get(k));
                } else {
                    out.set(k, ins[0].get(k) - lr * ins[1].get(k));
                }
            }
        }
    };
    if n >= 2 * PAR_GRAIN {
        crate::par::par_for(n.div_ceil(PAR_GRAIN), &|c| {
            chunk(c * PAR_GRAIN, ((c + 1) * PAR_GRAIN).min(n))
        });
    } else {
        chunk(0, n);
    }
    Ok(())
}

pub static LAMB2: OpDef = OpDef {
    name: "lamb_update_phase2",
    doc: "Phase 2 of LAMB: r1 = max(r1, lower_bound) if lower_bound >= 0, r1 = min(r1, upper_bound) if \
          upper_bound >= 0; lr' = lr if r1 == 0 or r2 == 0, else lr * r1 / r2; weight = weight - lr' * g. \
          g comes from lamb_update_phase1, r1 and r2 (shape (1,)) are the norms of weight and g.",
    inputs: &["weight", "g", "r1", "r2"],
    parse: |a| parse_lamb2(a, "lamb_update_phase2"),
    infer_shape: infer_shape_lamb2,
    infer_type: |c, i, o| infer_type_opt(c, i, o, 9),
    cpu: Some(lamb2_kernel),
    grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
    ..OpDef::BASE
};

pub static MP_LAMB2: OpDef = OpDef {
    name: "mp_lamb_update_phase2",
    doc: "Mixed precision lamb_update_phase2: float32 g, r1, r2 and master weight32; returns \
          weight32 - lr' * g cast to weight's dtype. As in MXNet 1.9.1, weight32 itself is not \
          updated (MXNet's kernel only reads it; its documentation says otherwise).",
    inputs: &["weight", "g", "r1", "r2", "weight32"],
    parse: |a| parse_lamb2(a, "mp_lamb_update_phase2"),
    infer_shape: infer_shape_lamb2,
    infer_type: |c, i, o| infer_type_opt(c, i, o, 1),
    cpu: Some(lamb2_kernel),
    grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &SGD,
    &SGD_MOM,
    &MP_SGD,
    &MP_SGD_MOM,
    &NAG_MOM,
    &ADAM,
    &RMSPROP,
    &RMSPROP_ALEX,
    &FTRL,
    &SIGNSGD,
    &SIGNUM,
    &ADAGRAD,
    &MP_NAG_MOM,
    &FTML,
    &LAMB1,
    &MP_LAMB1,
    &LAMB2,
    &MP_LAMB2,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::arr;
    use crate::ops::registry::call_into;

    #[test]
    fn sgd_mom_in_place_over_steps() {
        let w = arr(&[1.0, -2.0], &[2]);
        let mom = arr(&[0.0, 0.0], &[2]);
        let (mut rw, mut rm) = ([1.0f64, -2.0], [0.0f64, 0.0]);
        for step in 0..3 {
            let g = [0.5 + step as f64, -1.5];
            let attrs = [
                ("lr", "0.1"),
                ("momentum", "0.9"),
                ("wd", "0.01"),
                ("clip_gradient", "1.0"),
            ];
            call_into(
                "sgd_mom_update",
                &attrs,
                &[w.clone(), arr(&g, &[2]), mom.clone()],
                &[w.clone()],
            )
            .unwrap();
            // the parameters as float32, like MXNet's
            let (lr, m, wd) = (0.1f32 as f64, 0.9f32 as f64, 0.01f32 as f64);
            for k in 0..2 {
                rm[k] = m * rm[k] - lr * wd * rw[k] - lr * g[k].clamp(-1.0, 1.0);
                rw[k] += rm[k];
            }
        }
        let (gw, gm) = (w.to_vec::<f64>().unwrap(), mom.to_vec::<f64>().unwrap());
        for k in 0..2 {
            assert!((gw[k] - rw[k]).abs() < 1e-12 && (gm[k] - rm[k]).abs() < 1e-12);
        }
    }

    #[test]
    fn adam_one_step_and_errors() {
        let w = arr(&[1.0], &[1]);
        let (m, v) = (arr(&[0.0], &[1]), arr(&[0.0], &[1]));
        call_into(
            "adam_update",
            &[("lr", "0.01")],
            &[w.clone(), arr(&[2.0], &[1]), m.clone(), v.clone()],
            &[w.clone()],
        )
        .unwrap();
        // beta1, beta2, epsilon and lr as float32, like MXNet's
        let f = |v: f32| v as f64;
        let (mm, vv) = ((1.0 - f(0.9)) * 2.0, (1.0 - f(0.999)) * 4.0);
        let want = 1.0 - f(0.01) * mm / (vv.sqrt() + f(1e-8));
        assert!((w.to_vec::<f64>().unwrap()[0] - want).abs() < 1e-12);
        let e = call_into("sgd_update", &[], &[w.clone(), w.clone()], &[w.clone()])
            .err()
            .unwrap()
            .message();
        assert!(e.contains("sgd_update") && e.contains("'lr'"), "{e}");
    }
}
