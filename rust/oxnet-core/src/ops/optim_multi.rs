//! Multi-tensor optimizer updates (MXNet 1.9.1): one call updates
//! `num_weights` weights. Inputs are interleaved per tensor as MXNet orders
//! them (weight, grad[, mom][, weight32]), followed by the learning-rate and
//! weight-decay arrays for the `preloaded_*` forms (the others take `lrs` /
//! `wds` tuples). Output k is the new weight k (`out=[w0, w1, ...]` updates
//! in place, as MXNet's optimizer calls them); momenta and float32 master
//! weights are updated in place. Also `multi_sum_sq` and `multi_lars`, the
//! LARS learning rates from sums of squares. The updates have a zero
//! gradient; multi_sum_sq has none (as in MXNet).
use super::attrs::Attrs;
use super::kernels::PAR_GRAIN;
use super::optim::{f32v, Raw};
use super::registry::{KernelCtx, OpCall, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

/// Which of the SGD variants an operator is.
#[derive(Clone, Copy)]
struct Kind {
    mom: bool,
    mp: bool,
    preloaded: bool,
}

impl Kind {
    /// Inputs per tensor.
    fn stride(self) -> usize {
        2 + self.mom as usize + self.mp as usize
    }
    /// The name of input j of a tensor's group.
    fn role(self, j: usize) -> &'static str {
        match (j, self.mom) {
            (0, _) => "weight",
            (1, _) => "grad",
            (2, true) => "mom",
            _ => "weight32",
        }
    }
}

pub struct MultiParam {
    kind: Kind,
    num_weights: usize,
    lrs: Vec<f64>,
    wds: Vec<f64>,
    momentum: f64,
    rescale: f64,
    clip: f64,
}

/// MXNet raises on arguments an operator does not take; the variadic
/// operators have no entry in the Python signature table, so check here.
/// `num_args` is what oxnet's Python wrapper adds to every variadic call.
pub(super) fn check_known(a: &Attrs, op: &str, known: &[&str]) -> Result<()> {
    for (k, _) in &a.0 {
        let dunder = k.starts_with("__") && k.ends_with("__");
        if !dunder && k != "num_args" && !known.contains(&k.as_str()) {
            return Err(Error::Param(format!(
                "{op}: unknown argument '{k}'; it takes {}",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// The most tensors one call takes (MXNet's kernels take at most 60; a
/// bound keeps a mistyped count from building a huge input list).
const MAX_TENSORS: usize = 1 << 16;

pub(super) fn check_count(op: &str, key: &str, n: i64) -> Result<usize> {
    if n < 1 || n as u64 > MAX_TENSORS as u64 {
        return Err(Error::Param(format!(
            "{op}: {key} must be between 1 and {MAX_TENSORS}, got {n}"
        )));
    }
    Ok(n as usize)
}

fn parse_multi(a: &Attrs, op: &str, kind: Kind) -> Result<Params> {
    let mut known = vec!["num_weights", "rescale_grad", "clip_gradient"];
    if !kind.preloaded {
        known.extend(["lrs", "wds"]);
    }
    if kind.mom {
        known.push("momentum");
    }
    check_known(a, op, &known)?;
    let p = a.p(op);
    let num_weights = check_count(op, "num_weights", p.i64("num_weights", 1)?)?;
    let (mut lrs, mut wds) = (Vec::new(), Vec::new());
    if !kind.preloaded {
        for (key, what, v) in [
            ("lrs", "learning rates", &mut lrs),
            ("wds", "weight decays", &mut wds),
        ] {
            *v = p
                .floats(key)?
                .ok_or_else(|| Error::Param(format!("{op}: required argument '{key}' is missing")))?
                .into_iter()
                .map(f32v)
                .collect();
            if v.len() != num_weights {
                return Err(Error::Param(format!(
                    "{op}: '{key}' has {} {what}, expected num_weights = {num_weights}",
                    v.len()
                )));
            }
        }
    }
    Ok(Box::new(MultiParam {
        kind,
        num_weights,
        lrs,
        wds,
        momentum: f32v(p.f64("momentum", 0.0)?),
        rescale: f32v(p.f64("rescale_grad", 1.0)?),
        clip: f32v(p.f64("clip_gradient", -1.0)?),
    }))
}

fn n_inputs(c: &OpCall) -> usize {
    let p = c.p::<MultiParam>();
    p.num_weights * p.kind.stride() + if p.kind.preloaded { 2 } else { 0 }
}

fn n_outputs(c: &OpCall) -> usize {
    c.p::<MultiParam>().num_weights
}

/// The momenta and master weights of every tensor.
fn mutated(c: &OpCall) -> Vec<usize> {
    let p = c.p::<MultiParam>();
    let s = p.kind.stride();
    (0..p.num_weights)
        .flat_map(|k| (2..s).map(move |j| k * s + j))
        .collect()
}

/// "grad 1 (input 3)"
fn describe(p: &MultiParam, i: usize) -> String {
    let s = p.kind.stride();
    let nw = p.num_weights;
    if i >= nw * s {
        let name = if i == nw * s { "lrs" } else { "wds" };
        return format!("{name} (input {i})");
    }
    format!("{} {} (input {i})", p.kind.role(i % s), i / s)
}

fn infer_shape_multi(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<MultiParam>();
    let (s, nw) = (p.kind.stride(), p.num_weights);
    for (k, out) in outs.iter_mut().enumerate().take(nw) {
        let group = k * s..(k + 1) * s;
        let known = group.clone().find_map(|i| ins[i].clone());
        let Some(shape) = known.or_else(|| out.clone()) else {
            continue;
        };
        for i in group {
            match &ins[i] {
                None => ins[i] = Some(shape.clone()),
                Some(t) if *t != shape => {
                    return Err(Error::Shape(format!(
                        "{op}: {} has shape {}, expected {} like weight {k}",
                        describe(p, i),
                        fmt_shape(t),
                        fmt_shape(&shape)
                    )))
                }
                _ => {}
            }
        }
        *out = Some(shape);
    }
    if p.kind.preloaded {
        for i in [nw * s, nw * s + 1] {
            match &ins[i] {
                Some(t) if t.iter().product::<usize>() != nw || t.is_empty() => {
                    return Err(Error::Shape(format!(
                        "{op}: {} has shape {}, expected num_weights = {nw} values",
                        describe(p, i),
                        fmt_shape(t)
                    )))
                }
                None => ins[i] = Some(vec![nw]),
                _ => {}
            }
        }
    }
    Ok(())
}

fn infer_type_multi(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<MultiParam>();
    let (s, nw) = (p.kind.stride(), p.num_weights);
    let Some(w) = ins[0] else { return Ok(()) };
    if !w.is_float() {
        return Err(Error::DType(format!(
            "{op}: weight 0 has dtype {}, expected a float dtype",
            w.name()
        )));
    }
    for (i, t) in ins.iter_mut().enumerate() {
        let (want, like) = if i >= nw * s {
            (DType::F32, "(learning rates and weight decays are float32)")
        } else if p.kind.mp && i % s >= 2 {
            (DType::F32, "(mixed-precision states are float32)")
        } else {
            (w, "like weight 0")
        };
        match t {
            None => *t = Some(want),
            Some(u) if *u != want => {
                return Err(Error::DType(format!(
                    "{op}: {} has dtype {}, expected {} {like}",
                    describe(p, i),
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

#[inline]
fn clip(v: f64, c: f64) -> f64 {
    if c >= 0.0 {
        crate::ops::kernels::clip_nan(v, -c, c)
    } else {
        v
    }
}

/// mom = momentum * mom - lr * wd * w - lr * clip(rescale_grad * grad);
/// w += mom, with w the float32 master weight for the mixed-precision forms
/// (MultiSGDKernel's arithmetic).
fn multi_sgd_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<MultiParam>();
    let kind = p.kind;
    let (s, nw) = (kind.stride(), p.num_weights);
    let ins: Vec<Raw> = i.iter().map(|b| Raw(b.raw_ptr(), b.dtype)).collect();
    let outs: Vec<Raw> = o.iter().map(|b| Raw(b.raw_ptr(), b.dtype)).collect();
    // per tensor: lr and lr * wd (a float32 product from the preloaded
    // float32 arrays, as in MXNet)
    let rates: Vec<(f64, f64)> = (0..nw)
        .map(|k| {
            if kind.preloaded {
                // SAFETY: lrs and wds hold num_weights float32 values (infer_shape/type)
                let (lr, wd) = unsafe { (ins[nw * s].get(k), ins[nw * s + 1].get(k)) };
                (lr, (lr as f32 * wd as f32) as f64)
            } else {
                (p.lrs[k], p.lrs[k] * p.wds[k])
            }
        })
        .collect();
    let tensor = |k: usize, lo: usize, hi: usize| {
        let (lr, lrwd) = rates[k];
        let (w, g, out) = (&ins[k * s], &ins[k * s + 1], &outs[k]);
        let mom = kind.mom.then(|| &ins[k * s + 2]);
        let w32 = kind.mp.then(|| &ins[k * s + s - 1]);
        let run = SgdChunk {
            lr,
            lrwd,
            momentum: p.momentum,
            rescale: p.rescale,
            clip: p.clip,
            w,
            g,
            mom,
            w32,
            out,
        };
        // the dtypes fixed outside the element loop (it vectorises): the
        // weight's, and the momentum / master weight's (float32 when mixed)
        // SAFETY: as in SgdChunk::run
        crate::dispatch_float!(w.1, W => unsafe {
            if kind.mp {
                run.run::<W, f32>(lo, hi)
            } else {
                run.run::<W, W>(lo, hi)
            }
        })
    };
    // chunks of every tensor, run together
    let mut chunks = Vec::new();
    for (k, b) in o.iter().enumerate() {
        let n = b.size();
        let mut lo = 0;
        while lo < n {
            chunks.push((k, lo, (lo + PAR_GRAIN).min(n)));
            lo += PAR_GRAIN;
        }
    }
    if chunks.len() >= 2 {
        crate::par::par_for(chunks.len(), &|c| {
            let (k, lo, hi) = chunks[c];
            tensor(k, lo, hi)
        });
    } else {
        for &(k, lo, hi) in &chunks {
            tensor(k, lo, hi);
        }
    }
    Ok(())
}

/// One chunk of one tensor's SGD update (see [`multi_sgd_kernel`]).
struct SgdChunk<'a> {
    lr: f64,
    lrwd: f64,
    momentum: f64,
    rescale: f64,
    clip: f64,
    w: &'a Raw,
    g: &'a Raw,
    mom: Option<&'a Raw>,
    w32: Option<&'a Raw>,
    out: &'a Raw,
}

impl SgdChunk<'_> {
    /// Elements `lo..hi`, the weight and gradient of dtype `W`, the momentum
    /// and float32 master weight of dtype `M`.
    /// # Safety
    /// Every array of the tensor holds at least `hi` elements of its dtype
    /// (W or M as above); the engine gives this kernel exclusive access to
    /// the outputs and the mutated states; each element is read before it is
    /// written.
    #[inline(always)]
    unsafe fn run<W: Elem, M: Elem>(&self, lo: usize, hi: usize) {
        let rd = |r: &Raw, e: usize| (*(r.0 as *const W).add(e)).to_f64();
        let rdm = |r: &Raw, e: usize| (*(r.0 as *const M).add(e)).to_f64();
        for e in lo..hi {
            let wv = match self.w32 {
                Some(r) => rdm(r, e),
                None => rd(self.w, e),
            };
            let m0 = self.mom.map_or(0.0, |r| rdm(r, e));
            let m = self.momentum * m0
                - self.lrwd * wv
                - self.lr * clip(self.rescale * rd(self.g, e), self.clip);
            if let Some(r) = self.mom {
                *(r.0 as *mut M).add(e) = M::from_f64(m);
            }
            let nv = wv + m;
            if let Some(r) = self.w32 {
                *(r.0 as *mut M).add(e) = M::from_f64(nv);
            }
            *(self.out.0 as *mut W).add(e) = W::from_f64(nv);
        }
    }
}

macro_rules! multi_op {
    ($NAME:ident, $name:expr, mom: $mom:expr, mp: $mp:expr, preloaded: $pre:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            doc: $doc,
            inputs: &["data"],
            num_inputs: Some(n_inputs),
            num_outputs: n_outputs,
            parse: |a| {
                parse_multi(
                    a,
                    $name,
                    Kind {
                        mom: $mom,
                        mp: $mp,
                        preloaded: $pre,
                    },
                )
            },
            infer_shape: infer_shape_multi,
            infer_type: infer_type_multi,
            cpu: Some(multi_sgd_kernel),
            grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
            mutates_of: Some(mutated),
            ..OpDef::BASE
        };
    };
}

multi_op!(MULTI_SGD, "multi_sgd_update", mom: false, mp: false, preloaded: false,
"sgd_update of num_weights tensors in one call. Inputs: weight_0, grad_0, weight_1, grad_1, ...; \
 lrs and wds: tuples of num_weights floats. weight_k = weight_k - lrs[k] * (clip(rescale_grad * grad_k, \
 clip_gradient) + wds[k] * weight_k). Returns the num_weights new weights (out=[weights] updates in place).");

multi_op!(MULTI_SGD_MOM, "multi_sgd_mom_update", mom: true, mp: false, preloaded: false,
"sgd_mom_update of num_weights tensors in one call. Inputs: weight_0, grad_0, mom_0, weight_1, ...; \
 lrs and wds: tuples of num_weights floats. mom_k = momentum * mom_k - lrs[k] * wds[k] * weight_k - \
 lrs[k] * clip(rescale_grad * grad_k, clip_gradient) (in place); weight_k += mom_k. Returns the new weights.");

multi_op!(MULTI_MP_SGD, "multi_mp_sgd_update", mom: false, mp: true, preloaded: false,
"Mixed precision multi_sgd_update. Inputs: weight_0, grad_0, weight32_0, weight_1, ...; the float32 \
 master weights weight32_k are updated in place and the new weights are weight32_k cast to weight's dtype.");

multi_op!(MULTI_MP_SGD_MOM, "multi_mp_sgd_mom_update", mom: true, mp: true, preloaded: false,
"Mixed precision multi_sgd_mom_update. Inputs: weight_0, grad_0, mom_0, weight32_0, weight_1, ...; \
 float32 momenta and master weights are updated in place; the new weights are weight32_k cast.");

multi_op!(PRELOADED_MULTI_SGD, "preloaded_multi_sgd_update", mom: false, mp: false, preloaded: true,
"multi_sgd_update with the learning rates and weight decays as float32 arrays of num_weights values. \
 Inputs: weight_0, grad_0, weight_1, grad_1, ..., lrs, wds.");

multi_op!(PRELOADED_MULTI_SGD_MOM, "preloaded_multi_sgd_mom_update", mom: true, mp: false, preloaded: true,
"multi_sgd_mom_update with the learning rates and weight decays as float32 arrays of num_weights values. \
 Inputs: weight_0, grad_0, mom_0, weight_1, ..., lrs, wds.");

multi_op!(PRELOADED_MULTI_MP_SGD, "preloaded_multi_mp_sgd_update", mom: false, mp: true, preloaded: true,
"multi_mp_sgd_update with the learning rates and weight decays as float32 arrays of num_weights values. \
 Inputs: weight_0, grad_0, weight32_0, weight_1, ..., lrs, wds.");

multi_op!(PRELOADED_MULTI_MP_SGD_MOM, "preloaded_multi_mp_sgd_mom_update", mom: true, mp: true, preloaded: true,
"multi_mp_sgd_mom_update with the learning rates and weight decays as float32 arrays of num_weights \
 values. Inputs: weight_0, grad_0, mom_0, weight32_0, weight_1, ..., lrs, wds.");

// ---------------------------------------------------------------------------
// multi_lars
// ---------------------------------------------------------------------------

pub struct LarsParam {
    eta: f64,
    eps: f64,
    rescale: f64,
}

fn parse_lars(a: &Attrs) -> Result<Params> {
    let p = a.p("multi_lars");
    Ok(Box::new(LarsParam {
        eta: f32v(p.f64_req("eta")?),
        eps: f32v(p.f64_req("eps")?),
        rescale: f32v(p.f64("rescale_grad", 1.0)?),
    }))
}

/// Every input is float32 (MXNet's MultiLARS supports only float32).
fn infer_type_lars(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    for (i, t) in ins.iter_mut().enumerate() {
        match t {
            Some(u) if *u != DType::F32 => {
                return Err(Error::DType(format!(
                    "{}: {} has dtype {}, expected float32 (multi_lars supports float32 only, like MXNet)",
                    call.name(),
                    call.def.inputs[i],
                    u.name()
                )))
            }
            _ => *t = Some(DType::F32),
        }
    }
    outs[0] = Some(DType::F32);
    Ok(())
}

fn lars_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<LarsParam>();
    let (lrs, wss, gss, wds) = (
        i[0].data::<f32>(),
        i[1].data::<f32>(),
        i[2].data::<f32>(),
        i[3].data::<f32>(),
    );
    let out = o[0].data_mut::<f32>();
    for k in 0..out.len() {
        let (ws, gs) = (wss[k] as f64, gss[k] as f64);
        let w = ws.sqrt();
        let g = gs.sqrt() * p.rescale;
        let lars = if w > 0.0 && gs > 0.0 {
            p.eta * w / (g + wds[k] as f64 * w + p.eps)
        } else {
            1.0
        };
        out[k] = (lars * lrs[k] as f64) as f32;
    }
    Ok(())
}

pub static MULTI_LARS: OpDef = OpDef {
    name: "multi_lars",
    doc: "LARS learning rates from sums of squares (all float32, one value per weight): w = sqrt(weights_sum_sq), \
          g = sqrt(grads_sum_sq) * rescale_grad; returns lrs * eta * w / (g + wds * w + eps) where \
          weights_sum_sq > 0 and grads_sum_sq > 0, else lrs.",
    inputs: &["lrs", "weights_sum_sq", "grads_sum_sq", "wds"],
    parse: parse_lars,
    infer_type: infer_type_lars,
    cpu: Some(lars_kernel),
    grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// multi_sum_sq
// ---------------------------------------------------------------------------

fn parse_sum_sq(a: &Attrs) -> Result<Params> {
    check_known(a, "multi_sum_sq", &["num_arrays"])?;
    let p = a.p("multi_sum_sq");
    let n = check_count("multi_sum_sq", "num_arrays", p.i64_req("num_arrays")?)?;
    Ok(Box::new(n))
}

fn infer_shape_sum_sq(
    call: &OpCall,
    _: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    outs[0] = Some(vec![*call.p::<usize>()]);
    Ok(())
}

/// One float dtype for every array; the sums are float32.
fn infer_type_sum_sq(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let op = call.name();
    let Some(t) = ins.iter().flatten().next().copied() else {
        return Ok(());
    };
    if !t.is_float() {
        return Err(Error::DType(format!(
            "{op}: array 0 has dtype {}, expected a float dtype",
            t.name()
        )));
    }
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(t),
            Some(u) if *u != t => {
                return Err(Error::DType(format!(
                    "{op}: array {i} has dtype {}, expected {} like array 0",
                    u.name(),
                    t.name()
                )))
            }
            _ => {}
        }
    }
    outs[0] = Some(DType::F32);
    Ok(())
}

/// Each square is rounded to the arrays' dtype (float16 squares saturate as
/// in MXNet); the sums accumulate in float64.
fn sum_sq_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let out = Raw(o[0].raw_ptr(), o[0].dtype);
    let sum = |j: usize| {
        let (r, n) = (Raw(i[j].raw_ptr(), i[j].dtype), i[j].size());
        let mut acc = 0.0;
        for k in 0..n {
            // SAFETY: array j holds n elements of its dtype; the engine
            // gives this kernel read access to it and the output to itself.
            let v = unsafe { r.get(k) };
            acc += match r.1 {
                DType::F32 => f32v(v * v),
                DType::F16 => half::f16::from_f64(v * v).to_f64(),
                _ => v * v,
            };
        }
        // SAFETY: the output holds one float32 per array
        unsafe { out.set(j, acc) };
    };
    let total: usize = i.iter().map(|b| b.size()).sum();
    if i.len() > 1 && total >= 2 * PAR_GRAIN {
        crate::par::par_for(i.len(), &sum);
    } else {
        (0..i.len()).for_each(sum);
    }
    Ok(())
}

pub static MULTI_SUM_SQ: OpDef = OpDef {
    name: "multi_sum_sq",
    doc: "The sum of squares of each of num_arrays arrays (one float dtype): returns a float32 array of \
          num_arrays values, as multi_lars takes them.",
    inputs: &["data"],
    num_inputs: Some(|c| *c.p::<usize>()),
    parse: parse_sum_sq,
    infer_shape: infer_shape_sum_sq,
    infer_type: infer_type_sum_sq,
    cpu: Some(sum_sq_kernel),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &MULTI_SGD,
    &MULTI_SGD_MOM,
    &MULTI_MP_SGD,
    &MULTI_MP_SGD_MOM,
    &PRELOADED_MULTI_SGD,
    &PRELOADED_MULTI_SGD_MOM,
    &PRELOADED_MULTI_MP_SGD,
    &PRELOADED_MULTI_MP_SGD_MOM,
    &MULTI_LARS,
    &MULTI_SUM_SQ,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::arr;
    use crate::ops::registry::call_into;

    #[test]
    fn multi_sgd_mom_updates_weights_and_momenta_in_place() {
        let (w0, w1) = (arr(&[1.0, -2.0], &[2]), arr(&[0.5], &[1]));
        let (m0, m1) = (arr(&[0.5, 0.0], &[2]), arr(&[-1.0], &[1]));
        let (g0, g1) = (arr(&[0.25, 4.0], &[2]), arr(&[-0.5], &[1]));
        let attrs = [
            ("num_weights", "2"),
            ("lrs", "(0.5, 0.25)"),
            ("wds", "(0.0, 0.5)"),
            ("momentum", "0.5"),
            ("clip_gradient", "1.0"),
        ];
        let ins = [w0.clone(), g0, m0.clone(), w1.clone(), g1, m1.clone()];
        call_into(
            "multi_sgd_mom_update",
            &attrs,
            &ins,
            &[w0.clone(), w1.clone()],
        )
        .unwrap();
        // mom = 0.5 mom - lr wd w - lr clip(g, 1); w += mom
        let m0v = [0.25 - 0.125, 0.0 - 0.5];
        let m1v = [-0.5 - 0.25 * 0.5 * 0.5 + 0.125];
        assert_eq!(m0.to_vec::<f64>().unwrap(), m0v);
        assert_eq!(m1.to_vec::<f64>().unwrap(), m1v);
        assert_eq!(w0.to_vec::<f64>().unwrap(), [1.0 + m0v[0], -2.0 + m0v[1]]);
        assert_eq!(w1.to_vec::<f64>().unwrap(), [0.5 + m1v[0]]);
    }

    #[test]
    fn multi_lars_formula() {
        let one = |v: f32| {
            crate::ndarray::NDArray::from_vec(vec![v], &[1], crate::base::Context::cpu(0)).unwrap()
        };
        let r = crate::ops::registry::call(
            "multi_lars",
            &[("eta", "0.5"), ("eps", "0.25"), ("rescale_grad", "2")],
            &[one(0.5), one(4.0), one(1.0), one(0.25)],
        )
        .unwrap();
        // 0.5 * 0.5 * 2 / (1 * 2 + 0.25 * 2 + 0.25)
        let want = 0.5 * 0.5 * 2.0 / 2.75;
        assert!((r[0].to_vec::<f32>().unwrap()[0] as f64 - want).abs() < 1e-7);
    }
}
