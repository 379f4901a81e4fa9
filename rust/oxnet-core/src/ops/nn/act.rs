//! Activation, LeakyReLU, softmax / log_softmax / softmin and
//! SoftmaxActivation.
use super::{backward_op, fill_shape, infer_float_same};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, shape::norm_axis, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::ops::attrs::Attrs;
use crate::ops::elemwise::{fast_expf, fast_tanhf};
use crate::ops::kernels::{map1_wide, map2_wide, PAR_GRAIN};
use crate::ops::registry::{
    infer_shape_same, GradBuilder, KernelCtx, OpCall, OpDef, Params, Resource,
};
use crate::par::par_chunks_mut;

type B<'a> = &'a mut dyn GradBuilder;

/// y[i] = f(x[i]) computed in f64 for every float dtype.
fn map_f<T: Elem>(x: &[T], y: &mut [T], f: impl Fn(f64) -> f64 + Sync) {
    if y.len() >= 2 * PAR_GRAIN {
        par_chunks_mut(y, PAR_GRAIN, |c, yc| {
            for (o, &i) in yc.iter_mut().zip(&x[c * PAR_GRAIN..]) {
                *o = T::from_f64(f(i.to_f64()));
            }
        });
    } else {
        for (o, &i) in y.iter_mut().zip(x) {
            *o = T::from_f64(f(i.to_f64()));
        }
    }
}

/// o[i] = f(a[i], b[i]).
fn map_f2<T: Elem>(a: &[T], b: &[T], y: &mut [T], f: impl Fn(f64, f64) -> f64 + Sync) {
    if y.len() >= 2 * PAR_GRAIN {
        par_chunks_mut(y, PAR_GRAIN, |c, yc| {
            let s = c * PAR_GRAIN;
            for (j, o) in yc.iter_mut().enumerate() {
                *o = T::from_f64(f(a[s + j].to_f64(), b[s + j].to_f64()));
            }
        });
    } else {
        for ((o, &p), &q) in y.iter_mut().zip(a).zip(b) {
            *o = T::from_f64(f(p.to_f64(), q.to_f64()));
        }
    }
}

fn float_only(op: &str, d: DType) -> Result<()> {
    if d.is_float() {
        Ok(())
    } else {
        Err(Error::DType(format!(
            "{op}: dtype {} is not supported (float32, float64 or float16 only)",
            d.name()
        )))
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

use crate::ops::elemwise::erf64 as erf;

// ---------------------------------------------------------------------------
// Activation
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Act {
    Relu,
    Sigmoid,
    Tanh,
    SoftRelu,
    SoftSign,
    LogSigmoid,
    Mish,
}

fn parse_act(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let t = p
        .opt_str("act_type")
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'act_type' is missing")))?;
    let act = match t.as_str() {
        "relu" => Act::Relu,
        "sigmoid" => Act::Sigmoid,
        "tanh" => Act::Tanh,
        "softrelu" => Act::SoftRelu,
        "softsign" => Act::SoftSign,
        "log_sigmoid" => Act::LogSigmoid,
        "mish" => Act::Mish,
        _ => {
            return Err(Error::Param(format!(
                "{op}: act_type '{t}' is not one of relu, sigmoid, tanh, softrelu, softsign, log_sigmoid, mish"
            )))
        }
    };
    Ok(Box::new(act))
}

pub fn act_f(a: Act, x: f64) -> f64 {
    match a {
        Act::Relu => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        Act::Sigmoid => sigmoid(x),
        Act::Tanh => x.tanh(),
        Act::SoftRelu => softplus(x),
        Act::SoftSign => x / (1.0 + x.abs()),
        Act::LogSigmoid => -softplus(-x),
        Act::Mish => x * softplus(x).tanh(),
    }
}

pub fn act_df(a: Act, x: f64) -> f64 {
    match a {
        Act::Relu => {
            if x > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        Act::Sigmoid => {
            let s = sigmoid(x);
            s * (1.0 - s)
        }
        Act::Tanh => 1.0 - x.tanh().powi(2),
        Act::SoftRelu => sigmoid(x),
        Act::SoftSign => 1.0 / (1.0 + x.abs()).powi(2),
        Act::LogSigmoid => sigmoid(-x),
        Act::Mish => {
            let t = softplus(x).tanh();
            t + x * (1.0 - t * t) * sigmoid(x)
        }
    }
}

/// float32 relu / sigmoid / tanh in float32 arithmetic (the fast
/// transcendentals, ~2 ulp, on AVX2 where the CPU has it); false for the
/// other activations, which compute in float64.
fn act_f32(a: Act, x: &[f32], y: &mut [f32]) -> bool {
    match a {
        Act::Relu => map1_wide(x, y, |v: f32| if v > 0.0 || v.is_nan() { v } else { 0.0 }),
        Act::Sigmoid => map1_wide(x, y, |v: f32| 1.0 / (1.0 + fast_expf(-v))),
        Act::Tanh => map1_wide(x, y, fast_tanhf),
        _ => return false,
    }
    true
}

/// The matching gradients, `g * f'(x)`.
fn act_grad_f32(a: Act, g: &[f32], x: &[f32], y: &mut [f32]) -> bool {
    match a {
        Act::Relu => map2_wide(g, x, y, |g, v| if v > 0.0 { g } else { 0.0 }),
        Act::Sigmoid => map2_wide(g, x, y, |g, v| {
            let s = 1.0 / (1.0 + fast_expf(-v));
            g * s * (1.0 - s)
        }),
        Act::Tanh => map2_wide(g, x, y, |g, v| {
            let t = fast_tanhf(v);
            g * (1.0 - t * t)
        }),
        _ => return false,
    }
    true
}

pub static ACTIVATION: OpDef = OpDef {
    name: "Activation",
    doc: "Element-wise activation: relu, sigmoid, tanh, softrelu (log(1+exp(x))), softsign (x/(1+|x|)), \
          log_sigmoid, mish (x*tanh(softrelu(x))).",
    parse: |a| parse_act(a, "Activation"),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let a = *c.p::<Act>();
        float_only("Activation", i[0].dtype)?;
        if i[0].dtype == DType::F32 && act_f32(a, i[0].data::<f32>(), o[0].data_mut::<f32>()) {
            return Ok(());
        }
        dispatch_dtype!(i[0].dtype, T => map_f(i[0].data::<T>(), o[0].data_mut::<T>(), |x| act_f(a, x)));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| backward_op(c, b, "_backward_Activation", &[g[0], x[0]], &[true])),
    ..OpDef::BASE
};

pub static BACKWARD_ACTIVATION: OpDef = OpDef {
    name: "_backward_Activation",
    doc: "Internal: gradient of Activation. Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_act(a, "_backward_Activation"),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let a = *c.p::<Act>();
        float_only("_backward_Activation", i[0].dtype)?;
        if i[0].dtype == DType::F32
            && act_grad_f32(
                a,
                i[0].data::<f32>(),
                i[1].data::<f32>(),
                o[0].data_mut::<f32>(),
            )
        {
            return Ok(());
        }
        dispatch_dtype!(i[0].dtype, T => map_f2(i[0].data::<T>(), i[1].data::<T>(), o[0].data_mut::<T>(), |g, x| g * act_df(a, x)));
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// LeakyReLU
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaky {
    Leaky,
    Prelu,
    Elu,
    Selu,
    Gelu,
    Rrelu,
}

#[derive(Debug, Clone)]
pub struct LeakyParam {
    pub act: Leaky,
    pub slope: f64,
    pub lower: f64,
    pub upper: f64,
}

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;

fn parse_leaky(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let t = p.str("act_type", "leaky");
    let act = match t.as_str() {
        "leaky" => Leaky::Leaky,
        "prelu" => Leaky::Prelu,
        "elu" => Leaky::Elu,
        "selu" => Leaky::Selu,
        "gelu" => Leaky::Gelu,
        "rrelu" => Leaky::Rrelu,
        _ => {
            return Err(Error::Param(format!(
                "{op}: act_type '{t}' is not one of leaky, prelu, elu, selu, gelu, rrelu"
            )))
        }
    };
    let (lower, upper) = (p.f64("lower_bound", 0.125)?, p.f64("upper_bound", 0.334)?);
    if act == Leaky::Rrelu && lower > upper {
        return Err(Error::Param(format!(
            "{op}: lower_bound {lower} must not exceed upper_bound {upper}"
        )));
    }
    Ok(Box::new(LeakyParam {
        act,
        slope: p.f64("slope", 0.25)?,
        lower,
        upper,
    }))
}

fn leaky_f(p: &LeakyParam, x: f64, slope: f64) -> f64 {
    match p.act {
        Leaky::Leaky | Leaky::Prelu | Leaky::Rrelu => {
            if x > 0.0 {
                x
            } else {
                slope * x
            }
        }
        Leaky::Elu => {
            if x > 0.0 {
                x
            } else {
                slope * x.exp_m1()
            }
        }
        Leaky::Selu => SELU_LAMBDA * if x > 0.0 { x } else { SELU_ALPHA * x.exp_m1() },
        Leaky::Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
    }
}

fn leaky_df(p: &LeakyParam, x: f64, slope: f64) -> f64 {
    match p.act {
        Leaky::Leaky | Leaky::Prelu | Leaky::Rrelu => {
            if x > 0.0 {
                1.0
            } else {
                slope
            }
        }
        Leaky::Elu => {
            if x > 0.0 {
                1.0
            } else {
                slope * x.exp()
            }
        }
        Leaky::Selu => SELU_LAMBDA * if x > 0.0 { 1.0 } else { SELU_ALPHA * x.exp() },
        Leaky::Gelu => {
            let cdf = 0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2));
            cdf + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
        }
    }
}

/// Channel (axis 1) of each element for a PReLU gamma of `gsize` entries.
fn gamma_index(shape: &[usize], gsize: usize) -> impl Fn(usize) -> usize {
    let inner: usize = shape.iter().skip(2).product();
    let c = shape.get(1).copied().unwrap_or(1);
    move |i| {
        if gsize == 1 {
            0
        } else {
            (i / inner.max(1)) % c.max(1)
        }
    }
}

fn leaky_infer(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = c.p::<LeakyParam>();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    if p.act == Leaky::Prelu {
        match &ins[1] {
            None => {
                if d.len() < 2 {
                    return Err(Error::Shape(format!(
                        "LeakyReLU: prelu data shape {} needs a channel axis",
                        fmt_shape(&d)
                    )));
                }
                ins[1] = Some(vec![d[1]]);
            }
            Some(gs) => {
                let n: usize = gs.iter().product();
                if !(n == 1 || (d.len() >= 2 && gs.len() == 1 && gs[0] == d[1])) {
                    return Err(Error::Shape(format!(
                        "LeakyReLU: gamma shape {} must be (1,) or (channels,) = ({},) for data shape {}",
                        fmt_shape(gs),
                        d.get(1).copied().unwrap_or(1),
                        fmt_shape(&d)
                    )));
                }
            }
        }
    }
    outs[0] = Some(d);
    Ok(())
}

fn leaky_kernel(c: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = c.p::<LeakyParam>();
    float_only("LeakyReLU", i[0].dtype)?;
    dispatch_dtype!(i[0].dtype, T => {
        let x = i[0].data::<T>();
        let y = o[0].data_mut::<T>();
        match p.act {
            Leaky::Prelu => {
                let gm = i[1].data::<T>();
                let gi = gamma_index(&i[0].shape, gm.len());
                for (j, (o, &v)) in y.iter_mut().zip(x).enumerate() {
                    *o = T::from_f64(leaky_f(p, v.to_f64(), gm[gi(j)].to_f64()));
                }
            }
            Leaky::Rrelu if k.is_train => {
                let slopes: Vec<f64> = crate::random::with_rng(k.ctx, |r| {
                    (0..x.len()).map(|_| p.lower + (p.upper - p.lower) * r.uniform()).collect()
                });
                for ((o, &v), s) in y.iter_mut().zip(x).zip(slopes) {
                    *o = T::from_f64(leaky_f(p, v.to_f64(), s));
                }
            }
            Leaky::Rrelu => {
                let s = (p.lower + p.upper) / 2.0;
                map_f(x, y, |v| leaky_f(p, v, s));
            }
            _ => map_f(x, y, |v| leaky_f(p, v, p.slope)),
        }
    });
    Ok(())
}

/// Inputs (ograd, data, output[, gamma]); outputs (ddata[, dgamma]).
fn leaky_bwd_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<LeakyParam>();
    float_only("_backward_LeakyReLU", i[0].dtype)?;
    dispatch_dtype!(i[0].dtype, T => {
        let (g, x, y) = (i[0].data::<T>(), i[1].data::<T>(), i[2].data::<T>());
        let dx = o[0].data_mut::<T>();
        match p.act {
            Leaky::Prelu => {
                let gm = i[3].data::<T>();
                let gi = gamma_index(&i[1].shape, gm.len());
                let mut dg = vec![0f64; gm.len()];
                for j in 0..x.len() {
                    let (gv, xv, s) = (g[j].to_f64(), x[j].to_f64(), gm[gi(j)].to_f64());
                    dx[j] = T::from_f64(gv * leaky_df(p, xv, s));
                    if xv <= 0.0 {
                        dg[gi(j)] += gv * xv;
                    }
                }
                for (d, v) in o[1].data_mut::<T>().iter_mut().zip(dg) {
                    *d = T::from_f64(v);
                }
            }
            Leaky::Rrelu => {
                // The slope each element used is y / x (the output records it).
                let mean = (p.lower + p.upper) / 2.0;
                for j in 0..x.len() {
                    let (gv, xv, yv) = (g[j].to_f64(), x[j].to_f64(), y[j].to_f64());
                    let d = if xv > 0.0 { 1.0 } else if xv < 0.0 { yv / xv } else { mean };
                    dx[j] = T::from_f64(gv * d);
                }
            }
            _ => map_f2(g, x, dx, |gv, xv| gv * leaky_df(p, xv, p.slope)),
        }
    });
    Ok(())
}

pub static LEAKY_RELU: OpDef = OpDef {
    name: "LeakyReLU",
    doc: "Leaky rectifiers: leaky (slope), prelu (learned gamma per channel), elu (slope), selu, gelu, \
          rrelu (random slope in [lower_bound, upper_bound] while training, their mean otherwise).",
    inputs: &["data", "gamma"],
    num_inputs: Some(|c| if c.p::<LeakyParam>().act == Leaky::Prelu { 2 } else { 1 }),
    parse: |a| parse_leaky(a, "LeakyReLU"),
    infer_shape: leaky_infer,
    infer_type: infer_float_same,
    cpu: Some(leaky_kernel),
    grad: Some(|c, b, x, y, g| {
        let p = c.p::<LeakyParam>();
        if p.act == Leaky::Prelu {
            backward_op(c, b, "_backward_LeakyReLU", &[g[0], x[0], y[0], x[1]], &[true, true])
        } else {
            backward_op(c, b, "_backward_LeakyReLU", &[g[0], x[0], y[0]], &[true])
        }
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static BACKWARD_LEAKY_RELU: OpDef = OpDef {
    name: "_backward_LeakyReLU",
    doc: "Internal: gradient of LeakyReLU. Inputs: output gradient, data, output (and gamma for prelu).",
    inputs: &["ograd", "data", "output", "gamma"],
    num_inputs: Some(|c| if c.p::<LeakyParam>().act == Leaky::Prelu { 4 } else { 3 }),
    num_outputs: |c| if c.p::<LeakyParam>().act == Leaky::Prelu { 2 } else { 1 },
    parse: |a| parse_leaky(a, "_backward_LeakyReLU"),
    infer_shape: |c, ins, outs| {
        let prelu = c.p::<LeakyParam>().act == Leaky::Prelu;
        let (first, rest) = ins.split_at_mut(if prelu { 3 } else { ins.len() });
        infer_shape_same(c, first, &mut outs[..1])?;
        if prelu {
            if let Some(gs) = rest[0].clone() {
                outs[1] = Some(gs);
            }
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(leaky_bwd_kernel),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// softmax family
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SmKind {
    Softmax,
    LogSoftmax,
    Softmin,
}

#[derive(Debug, Clone)]
pub struct SmParam {
    pub kind: SmKind,
    pub axis: i64,
    pub temperature: f64,
    pub dtype: Option<DType>,
    pub use_length: bool,
    /// SoftmaxActivation(mode='instance'): softmax over all axes but the first.
    pub instance: bool,
}

fn parse_sm(a: &Attrs, op: &str, kind: SmKind) -> Result<SmParam> {
    let p = a.p(op);
    let temperature = p.f64("temperature", 1.0)?;
    if temperature == 0.0 {
        return Err(Error::Param(format!("{op}: temperature must be non-zero")));
    }
    let dtype = p.opt_dtype("dtype")?;
    if let Some(d) = dtype {
        if !d.is_float() {
            return Err(Error::Param(format!(
                "{op}: dtype must be float16, float32 or float64, got {}",
                d.name()
            )));
        }
    }
    Ok(SmParam {
        kind,
        axis: p.i64("axis", -1)?,
        temperature,
        dtype,
        use_length: p.bool("use_length", false)?,
        instance: false,
    })
}

fn kind_name(k: SmKind) -> &'static str {
    match k {
        SmKind::Softmax => "softmax",
        SmKind::LogSoftmax => "log_softmax",
        SmKind::Softmin => "softmin",
    }
}

/// (outer, n, inner) around the softmax axis.
fn sm_dims(p: &SmParam, s: &[usize], op: &str) -> Result<(usize, usize, usize, usize)> {
    if p.instance {
        if s.is_empty() {
            return Err(Error::Shape(format!(
                "{op}: data must have at least one dimension"
            )));
        }
        return Ok((s[0], s[1..].iter().product(), 1, 1));
    }
    let ax = norm_axis(op, p.axis, s.len())?;
    Ok((
        s[..ax].iter().product(),
        s.get(ax).copied().unwrap_or(1),
        s[ax + 1..].iter().product(),
        ax,
    ))
}

fn sm_infer(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    off: usize,
) -> Result<()> {
    let p = c.p::<SmParam>();
    let Some(d) = ins[off].clone() else {
        return Ok(());
    };
    let (_, _, _, ax) = sm_dims(p, &d, c.name())?;
    if p.use_length {
        let mut ls = d.clone();
        ls.remove(ax);
        fill_shape(
            c.name(),
            "length",
            &mut ins[off + 1],
            ls,
            &format!(" for data shape {} and axis {}", fmt_shape(&d), p.axis),
        )?;
    }
    for (i, s) in ins.iter().enumerate().take(off + 1) {
        if let Some(s) = s {
            if *s != d {
                return Err(Error::Shape(format!(
                    "{}: input {i} has shape {}, expected {}",
                    c.name(),
                    fmt_shape(s),
                    fmt_shape(&d)
                )));
            }
        }
    }
    outs[0] = Some(d);
    Ok(())
}

fn lengths(b: Option<&Blob>) -> Option<Vec<usize>> {
    b.map(|b| dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64().max(0.0) as usize).collect()))
}

/// e^d for d <= 0 in float32: `fast_expf`, with 0 below e^-87 (where the
/// float32 result would be subnormal or 0 anyway).
#[inline(always)]
fn exp_nonpos(d: f32) -> f32 {
    let e = fast_expf(d);
    if d < -87.0 {
        0.0
    } else {
        e
    }
}

/// The sum of `v` in 8 independent lanes (a float reduction in one
/// accumulator keeps its order and does not vectorise).
#[inline(always)]
fn sum8(v: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let mut it = v.chunks_exact(8);
    for c in &mut it {
        for l in 0..8 {
            acc[l] += c[l];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for &r in it.remainder() {
        s += r;
    }
    s
}

/// The dot product of `a` and `b` in 8 lanes.
#[inline(always)]
fn dot8(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (mut ia, mut ib) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ia).zip(&mut ib) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ia.remainder().iter().zip(ib.remainder()) {
        s += x * y;
    }
    s
}

/// One row of softmax / log_softmax in float32 (temperature `t`).
#[inline(always)]
fn sm_row_f32(x: &[f32], y: &mut [f32], t: f32, log: bool) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    let mut mx = [f32::NEG_INFINITY; 8];
    for c in x.chunks_exact(8) {
        for (m, &v) in mx.iter_mut().zip(c) {
            *m = m.max(v);
        }
    }
    let m = x.chunks_exact(8).remainder().iter().fold(
        mx.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v)),
        |a, &v| a.max(v),
    );
    if m == f32::NEG_INFINITY || m.is_nan() {
        // all -inf (or NaN): what the float64 loop gives, NaN
        y.fill(f32::NAN);
        return;
    }
    let inv_t = 1.0 / t;
    for (o, &v) in y.iter_mut().zip(x) {
        *o = exp_nonpos((v - m) * inv_t);
    }
    let s = sum8(y);
    if log {
        let ls = s.ln();
        for (o, &v) in y.iter_mut().zip(x) {
            *o = (v - m) * inv_t - ls;
        }
    } else {
        let r = 1.0 / s;
        for o in y.iter_mut() {
            *o *= r;
        }
    }
}

/// Its gradient from the output `y` and the output gradient `g`.
#[inline(always)]
fn sm_row_grad_f32(g: &[f32], y: &[f32], d: &mut [f32], t: f32, log: bool) {
    let n = g.len().min(y.len()).min(d.len());
    let (g, y, d) = (&g[..n], &y[..n], &mut d[..n]);
    let inv_t = 1.0 / t;
    if log {
        let s = sum8(g);
        for ((o, &gv), &yv) in d.iter_mut().zip(g).zip(y) {
            *o = (gv - exp_nonpos(yv) * s) * inv_t;
        }
    } else {
        let s = dot8(g, y);
        for ((o, &gv), &yv) in d.iter_mut().zip(g).zip(y) {
            *o = yv * (gv - s) * inv_t;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sm_rows_f32_avx2(x: &[f32], y: &mut [f32], n: usize, t: f32, log: bool) {
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        sm_row_f32(xr, yr, t, log);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sm_rows_grad_f32_avx2(g: &[f32], y: &[f32], d: &mut [f32], n: usize, t: f32, log: bool) {
    for ((gr, yr), dr) in g
        .chunks_exact(n)
        .zip(y.chunks_exact(n))
        .zip(d.chunks_exact_mut(n))
    {
        sm_row_grad_f32(gr, yr, dr, t, log);
    }
}

/// Softmax / log_softmax over the rows of one (n, inner) block, inner > 1
/// (an axis other than the last): the columns are computed side by side,
/// `COLS` at a time, so every loop runs along contiguous values and
/// vectorises. A column whose maximum is -inf or NaN gives NaN, as
/// [`sm_row_f32`] does for a row.
#[inline(always)]
fn sm_block_f32(x: &[f32], y: &mut [f32], n: usize, inner: usize, t: f32, log: bool) {
    const COLS: usize = 512;
    let inv_t = 1.0 / t;
    let (mut mb, mut sb) = ([0f32; COLS], [0f32; COLS]);
    let mut b0 = 0;
    while b0 < inner {
        let w = COLS.min(inner - b0);
        let (m, s) = (&mut mb[..w], &mut sb[..w]);
        m.fill(f32::NEG_INFINITY);
        for j in 0..n {
            for (mm, &v) in m.iter_mut().zip(&x[j * inner + b0..][..w]) {
                *mm = mm.max(v);
            }
        }
        s.fill(0.0);
        for j in 0..n {
            let (r, o) = (&x[j * inner + b0..][..w], &mut y[j * inner + b0..][..w]);
            for k in 0..w {
                let e = exp_nonpos((r[k] - m[k]) * inv_t);
                o[k] = e;
                s[k] += e;
            }
        }
        for v in s.iter_mut() {
            *v = if log { v.ln() } else { 1.0 / *v };
        }
        for j in 0..n {
            let (r, o) = (&x[j * inner + b0..][..w], &mut y[j * inner + b0..][..w]);
            for k in 0..w {
                o[k] = if log {
                    (r[k] - m[k]) * inv_t - s[k]
                } else {
                    o[k] * s[k]
                };
            }
        }
        for (k, &mk) in m.iter().enumerate() {
            if mk == f32::NEG_INFINITY || mk.is_nan() {
                for j in 0..n {
                    y[j * inner + b0 + k] = f32::NAN;
                }
            }
        }
        b0 += w;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sm_block_f32_avx2(x: &[f32], y: &mut [f32], n: usize, inner: usize, t: f32, log: bool) {
    sm_block_f32(x, y, n, inner, t, log)
}

fn sm_blocks_f32(x: &[f32], y: &mut [f32], n: usize, inner: usize, t: f32, log: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernels::wide_cpu() {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { sm_block_f32_avx2(x, y, n, inner, t, log) };
    }
    sm_block_f32(x, y, n, inner, t, log)
}

fn sm_rows_f32(x: &[f32], y: &mut [f32], n: usize, t: f32, log: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernels::wide_cpu() {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { sm_rows_f32_avx2(x, y, n, t, log) };
    }
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        sm_row_f32(xr, yr, t, log);
    }
}

fn sm_rows_grad_f32(g: &[f32], y: &[f32], d: &mut [f32], n: usize, t: f32, log: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernels::wide_cpu() {
        // SAFETY: the CPU has AVX2 and FMA
        return unsafe { sm_rows_grad_f32_avx2(g, y, d, n, t, log) };
    }
    for ((gr, yr), dr) in g
        .chunks_exact(n)
        .zip(y.chunks_exact(n))
        .zip(d.chunks_exact_mut(n))
    {
        sm_row_grad_f32(gr, yr, dr, t, log);
    }
}

/// The float32 fast path: softmax / log_softmax over the last axis (rows
/// contiguous), positive temperature, no length mask, float32 in and out.
/// Computes in float32
/// with `fast_expf` (~1 ulp), rows in parallel.
fn sm_fast_f32(p: &SmParam, n: usize, inner: usize, dts: &[DType]) -> bool {
    inner == 1
        && n > 0
        && p.temperature > 0.0
        && !p.use_length
        && matches!(p.kind, SmKind::Softmax | SmKind::LogSoftmax)
        && dts.iter().all(|&d| d == DType::F32)
}

/// Rows per parallel task: ~16K elements each.
fn sm_task(n: usize) -> usize {
    n * (16384 / n).max(1)
}

/// float32 softmax / log_softmax of (outer, n, inner) data along n, in
/// parallel: rows of `n` when inner == 1, else one (n, inner) block of
/// columns per outer index.
pub(crate) fn softmax_f32(x: &[f32], y: &mut [f32], n: usize, inner: usize, t: f32, log: bool) {
    if inner == 1 {
        par_chunks_mut(y, sm_task(n), |k, yc| {
            let s = k * sm_task(n);
            sm_rows_f32(&x[s..s + yc.len()], yc, n, t, log)
        });
    } else {
        par_chunks_mut(y, n * inner, |a, yc| {
            sm_blocks_f32(&x[a * n * inner..(a + 1) * n * inner], yc, n, inner, t, log)
        });
    }
}

/// Softmax over rows of `n` values with stride `inner`; masked tails are 0.
fn sm_fwd_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<SmParam>();
    let (_, n, inner, _) = sm_dims(p, &i[0].shape, c.name())?;
    // float32 on any axis (the inner extent does not matter forward)
    if sm_fast_f32(p, n, 1, &[i[0].dtype, o[0].dtype]) {
        let (t, log) = (p.temperature as f32, p.kind == SmKind::LogSoftmax);
        softmax_f32(i[0].data::<f32>(), o[0].data_mut::<f32>(), n, inner, t, log);
        return Ok(());
    }
    let x = super::to_f64_vec(&i[0]);
    let lens = if p.use_length {
        lengths(i.get(1))
    } else {
        None
    };
    let mut y = vec![0f64; x.len()];
    let t = p.temperature;
    par_chunks_mut(&mut y, n * inner, |a, yo| {
        for b in 0..inner {
            let len = lens.as_ref().map(|l| l[a * inner + b].min(n)).unwrap_or(n);
            let at = |j: usize| {
                let v = x[(a * n + j) * inner + b] / t;
                if p.kind == SmKind::Softmin {
                    -v
                } else {
                    v
                }
            };
            let m = (0..len).map(at).fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = (0..len).map(|j| (at(j) - m).exp()).sum();
            for j in 0..n {
                yo[j * inner + b] = if j >= len {
                    0.0
                } else if p.kind == SmKind::LogSoftmax {
                    at(j) - m - s.ln()
                } else {
                    (at(j) - m).exp() / s
                };
            }
        }
    });
    super::write_f64(&o[0], &y);
    Ok(())
}

/// Inputs (ograd, output, data[, length]); output ddata.
fn sm_bwd_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<SmParam>();
    let (_, n, inner, _) = sm_dims(p, &i[2].shape, c.name())?;
    if sm_fast_f32(p, n, inner, &[i[0].dtype, i[1].dtype, o[0].dtype]) {
        let (g, y) = (i[0].data::<f32>(), i[1].data::<f32>());
        let (t, log) = (p.temperature as f32, p.kind == SmKind::LogSoftmax);
        par_chunks_mut(o[0].data_mut::<f32>(), sm_task(n), |k, d| {
            let s = k * sm_task(n);
            sm_rows_grad_f32(&g[s..s + d.len()], &y[s..s + d.len()], d, n, t, log)
        });
        return Ok(());
    }
    let g = super::to_f64_vec(&i[0]);
    let y = super::to_f64_vec(&i[1]);
    let lens = if p.use_length {
        lengths(i.get(3))
    } else {
        None
    };
    let mut dx = vec![0f64; y.len()];
    let t = p.temperature;
    par_chunks_mut(&mut dx, n * inner, |a, d| {
        for b in 0..inner {
            let len = lens.as_ref().map(|l| l[a * inner + b].min(n)).unwrap_or(n);
            let idx = |j: usize| (a * n + j) * inner + b;
            match p.kind {
                SmKind::LogSoftmax => {
                    let s: f64 = (0..len).map(|j| g[idx(j)]).sum();
                    for j in 0..len {
                        d[j * inner + b] = (g[idx(j)] - y[idx(j)].exp() * s) / t;
                    }
                }
                _ => {
                    let s: f64 = (0..len).map(|j| g[idx(j)] * y[idx(j)]).sum();
                    let sign = if p.kind == SmKind::Softmin { -1.0 } else { 1.0 };
                    for j in 0..len {
                        d[j * inner + b] = sign * y[idx(j)] * (g[idx(j)] - s) / t;
                    }
                }
            }
        }
    });
    super::write_f64(&o[0], &dx);
    Ok(())
}

fn sm_infer_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let p = c.p::<SmParam>();
    if let Some(d) = ins[0] {
        float_only(c.name(), d)?;
        outs[0] = Some(p.dtype.unwrap_or(d));
    }
    Ok(())
}

fn sm_grad(c: &OpCall, b: B, x: &[usize], y: &[usize], g: &[usize]) -> Result<Vec<Option<usize>>> {
    let p = c.p::<SmParam>();
    let mut attrs = super::fwd_attrs(c);
    attrs.retain(|(k, _)| *k != "mode" && *k != "dtype");
    let kind = if p.instance {
        "instance".to_string()
    } else if c.name() == "SoftmaxActivation" {
        "channel".to_string()
    } else {
        kind_name(p.kind).to_string()
    };
    attrs.push(("__kind", kind));
    let mut ins = vec![g[0], y[0], x[0]];
    if p.use_length {
        ins.push(x[1]);
    }
    let d = b.op1("_backward_softmax", &attrs, &ins)?;
    Ok(if p.use_length {
        vec![Some(d), None]
    } else {
        vec![Some(d)]
    })
}

macro_rules! softmax_op {
    ($NAME:ident, $name:expr, $kind:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            doc: $doc,
            inputs: &["data", "length"],
            num_inputs: Some(|c| if c.p::<SmParam>().use_length { 2 } else { 1 }),
            parse: |a| Ok(Box::new(parse_sm(a, $name, $kind)?)),
            infer_shape: |c, i, o| sm_infer(c, i, o, 0),
            infer_type: sm_infer_type,
            cpu: Some(sm_fwd_kernel),
            grad: Some(sm_grad),
            ..OpDef::BASE
        };
    };
}

softmax_op!(SOFTMAX, "softmax", SmKind::Softmax, "exp(x/T) / sum(exp(x/T)) along axis (default -1); with use_length, only the first length[i] entries take part and the rest are 0.");
softmax_op!(
    LOG_SOFTMAX,
    "log_softmax",
    SmKind::LogSoftmax,
    "log(softmax(x)) along axis, computed stably."
);
softmax_op!(
    SOFTMIN,
    "softmin",
    SmKind::Softmin,
    "softmax(-x) along axis."
);

pub static BACKWARD_SOFTMAX: OpDef = OpDef {
    name: "_backward_softmax",
    doc:
        "Internal: gradient of softmax / log_softmax / softmin / SoftmaxActivation. Inputs: output \
          gradient, output, data (and length).",
    inputs: &["ograd", "output", "data", "length"],
    num_inputs: Some(|c| if c.p::<SmParam>().use_length { 4 } else { 3 }),
    parse: |a| {
        let p = a.p("_backward_softmax");
        let k = p.choice(
            "__kind",
            "softmax",
            &["softmax", "log_softmax", "softmin", "instance", "channel"],
        )?;
        let kind = match k.as_str() {
            "log_softmax" => SmKind::LogSoftmax,
            "softmin" => SmKind::Softmin,
            _ => SmKind::Softmax,
        };
        let mut s = parse_sm(a, "_backward_softmax", kind)?;
        if k == "instance" {
            s.instance = true;
        } else if k == "channel" {
            s.axis = 1;
        }
        Ok(Box::new(s))
    },
    infer_shape: |c, i, o| {
        let d = i[2].clone();
        if let Some(d) = d {
            fill_shape(c.name(), "output gradient", &mut i[0], d.clone(), "")?;
            fill_shape(c.name(), "output", &mut i[1], d.clone(), "")?;
            o[0] = Some(d);
        }
        Ok(())
    },
    infer_type: |c, i, o| {
        if let Some(d) = i[2] {
            float_only(c.name(), d)?;
            o[0] = Some(d);
        }
        Ok(())
    },
    cpu: Some(sm_bwd_kernel),
    ..OpDef::BASE
};

pub static SOFTMAX_ACTIVATION: OpDef = OpDef {
    name: "SoftmaxActivation",
    doc: "Softmax over all axes but the first (mode='instance', default) or over axis 1 (mode='channel').",
    parse: |a| {
        let p = a.p("SoftmaxActivation");
        let mode = p.choice("mode", "instance", &["instance", "channel"])?;
        Ok(Box::new(SmParam {
            kind: SmKind::Softmax,
            axis: 1,
            temperature: 1.0,
            dtype: None,
            use_length: false,
            instance: mode == "instance",
        }))
    },
    infer_shape: |c, i, o| {
        if let Some(d) = &i[0] {
            if !c.p::<SmParam>().instance && d.len() < 2 {
                return Err(Error::Shape(format!("SoftmaxActivation: mode='channel' needs data with at least 2 dimensions, got {}", fmt_shape(d))));
            }
        }
        sm_infer(c, i, o, 0)
    },
    infer_type: infer_float_same,
    cpu: Some(sm_fwd_kernel),
    grad: Some(sm_grad),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn activations_values_and_grads() {
        let x = vals(12, 1);
        for (t, f) in [
            ("relu", (|v: f64| v.max(0.0)) as fn(f64) -> f64),
            ("sigmoid", |v| 1.0 / (1.0 + (-v).exp())),
            ("tanh", |v| v.tanh()),
            ("softrelu", |v| (1.0 + v.exp()).ln()),
            ("softsign", |v| v / (1.0 + v.abs())),
            ("log_sigmoid", |v| -(1.0 + (-v).exp()).ln()),
            ("mish", |v| v * (1.0 + v.exp()).ln().tanh()),
        ] {
            let y = call("Activation", &[("act_type", t)], &[arr(&x, &[3, 4])]).unwrap()[0]
                .to_vec::<f64>()
                .unwrap();
            for (a, b) in y.iter().zip(&x) {
                assert!((a - f(*b)).abs() < 1e-12, "{t}");
            }
            check_grad(
                "Activation",
                &[("act_type", t)],
                &[(x.clone(), vec![3, 4])],
                &[0],
            );
        }
        for t in ["leaky", "elu", "selu", "gelu", "rrelu"] {
            check_grad(
                "LeakyReLU",
                &[("act_type", t), ("slope", "0.3")],
                &[(x.clone(), vec![3, 4])],
                &[0],
            );
        }
        check_grad(
            "LeakyReLU",
            &[("act_type", "prelu")],
            &[(x.clone(), vec![2, 3, 2]), (vals(3, 2), vec![3])],
            &[0, 1],
        );
        let y = call(
            "LeakyReLU",
            &[("act_type", "rrelu")],
            &[arr(&[-1.0, 2.0], &[2])],
        )
        .unwrap()[0]
            .to_vec::<f64>()
            .unwrap();
        assert!((y[0] + (0.125 + 0.334) / 2.0).abs() < 1e-12 && y[1] == 2.0);
    }

    #[test]
    fn softmax_family() {
        let x = vals(24, 3);
        for op in ["softmax", "log_softmax", "softmin"] {
            for ax in ["-1", "1", "0"] {
                check_grad(
                    op,
                    &[("axis", ax), ("temperature", "1.5")],
                    &[(x.clone(), vec![2, 3, 4])],
                    &[0],
                );
            }
        }
        let y = call("softmax", &[("axis", "1")], &[arr(&x, &[2, 3, 4])]).unwrap()[0]
            .to_vec::<f64>()
            .unwrap();
        for a in 0..2 {
            for b in 0..4 {
                let s: f64 = (0..3).map(|j| y[(a * 3 + j) * 4 + b]).sum();
                assert!((s - 1.0).abs() < 1e-12);
            }
        }
        let l = [2.0, 3.0];
        let y = call(
            "softmax",
            &[("use_length", "True")],
            &[arr(&x[..8], &[2, 4]), arr(&l, &[2])],
        )
        .unwrap()[0]
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(y[2], 0.0);
        assert_eq!(y[3], 0.0);
        assert!((y[0] + y[1] - 1.0).abs() < 1e-12);
        check_grad(
            "softmax",
            &[("use_length", "True")],
            &[(x[..8].to_vec(), vec![2, 4]), (l.to_vec(), vec![2])],
            &[0],
        );
        check_grad(
            "SoftmaxActivation",
            &[],
            &[(x.clone(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "SoftmaxActivation",
            &[("mode", "channel")],
            &[(x.clone(), vec![2, 3, 4])],
            &[0],
        );
    }
}
