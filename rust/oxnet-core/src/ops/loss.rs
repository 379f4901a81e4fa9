//! Loss heads with MXNet's backward semantics: SoftmaxOutput,
//! Linear/Logistic/MAE RegressionOutput and MakeLoss compute their input
//! gradient from the forward values alone and ignore the incoming head
//! gradient (as MXNet does); make_loss's gradient is ones.
//! softmax_cross_entropy and smooth_l1 are ordinary differentiable ops.
use super::attrs::Attrs;
use super::elemwise::fmt_f64;
use super::kernels::map1;
use super::registry::{infer_shape_same, Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_float;
use crate::error::{Error, Result};
use crate::ndarray::Blob;

type B<'a> = &'a mut dyn GradBuilder;

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

fn float_only(op: &str, what: &str, t: DType) -> Result<()> {
    if !t.is_float() {
        return Err(Error::DType(format!(
            "{op}: {what} has dtype {}, expected float16, float32 or float64",
            t.name()
        )));
    }
    Ok(())
}

/// Output has the data's dtype; the label defaults to it.
fn infer_type_data_label(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    if let Some(t) = ins[0] {
        float_only(call.name(), "data", t)?;
        if ins.len() > 1 && ins[1].is_none() {
            ins[1] = Some(t);
        }
        outs[0] = Some(t);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// SoftmaxOutput
// ---------------------------------------------------------------------------

pub struct SmParam {
    grad_scale: f64,
    ignore_label: f64,
    multi_output: bool,
    use_ignore: bool,
    preserve_shape: bool,
    normalization: String,
    out_grad: bool,
    smooth_alpha: f64,
}

fn parse_sm(a: &Attrs) -> Result<Params> {
    let p = a.p("SoftmaxOutput");
    Ok(Box::new(SmParam {
        grad_scale: p.f64("grad_scale", 1.0)?,
        ignore_label: p.f64("ignore_label", -1.0)?,
        multi_output: p.bool("multi_output", false)?,
        use_ignore: p.bool("use_ignore", false)?,
        preserve_shape: p.bool("preserve_shape", false)?,
        normalization: p.choice("normalization", "null", &["null", "batch", "valid"])?,
        out_grad: p.bool("out_grad", false)?,
        smooth_alpha: p.f64("smooth_alpha", 0.0)?,
    }))
}

fn sm_attrs(p: &SmParam) -> Vec<(&'static str, String)> {
    vec![
        ("grad_scale", fmt_f64(p.grad_scale)),
        ("ignore_label", fmt_f64(p.ignore_label)),
        ("multi_output", py_bool(p.multi_output)),
        ("use_ignore", py_bool(p.use_ignore)),
        ("preserve_shape", py_bool(p.preserve_shape)),
        ("normalization", p.normalization.clone()),
        ("out_grad", py_bool(p.out_grad)),
        ("smooth_alpha", fmt_f64(p.smooth_alpha)),
    ]
}

/// (outer, classes, inner) view of the data and the expected label shape.
fn sm_layout(op: &str, p: &SmParam, d: &[usize]) -> Result<((usize, usize, usize), Shape)> {
    if d.is_empty() {
        return Err(Error::Shape(format!(
            "{op}: data must have at least 1 dimension"
        )));
    }
    if p.multi_output {
        if d.len() < 2 {
            return Err(Error::Shape(format!(
                "{op}: multi_output needs data of shape (N, C, ...), got {}",
                fmt_shape(d)
            )));
        }
        let inner: usize = d[2..].iter().product();
        let mut l = vec![d[0]];
        l.extend_from_slice(&d[2..]);
        Ok(((d[0], d[1], inner), l))
    } else if p.preserve_shape {
        let outer: usize = d[..d.len() - 1].iter().product();
        Ok(((outer, d[d.len() - 1], 1), d[..d.len() - 1].to_vec()))
    } else {
        let rest: usize = d[1..].iter().product();
        Ok(((d[0], rest, 1), vec![d[0]]))
    }
}

fn sm_infer_shape(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    let (_, ls) = sm_layout(op, call.p::<SmParam>(), &d)?;
    if let Some(l) = &ins[1] {
        let ok = *l == ls
            || (l.iter().product::<usize>() == ls.iter().product::<usize>()
                && !call.p::<SmParam>().multi_output
                && l.len() <= 2);
        if !ok {
            return Err(Error::Shape(format!(
                "{op}: label shape {} does not match data shape {} (expected label shape {})",
                fmt_shape(l),
                fmt_shape(&d),
                fmt_shape(&ls)
            )));
        }
    } else {
        ins[1] = Some(ls);
    }
    outs[0] = Some(d);
    Ok(())
}

fn softmax_rows<T: Elem>(x: &[T], y: &mut [T], (outer, k, inner): (usize, usize, usize)) {
    let mut buf = vec![0f64; k];
    for o in 0..outer {
        for i in 0..inner {
            let at = |c: usize| (o * k + c) * inner + i;
            let mut mx = f64::NEG_INFINITY;
            for (c, b) in buf.iter_mut().enumerate() {
                *b = x[at(c)].to_f64();
                mx = mx.max(*b);
            }
            let mut s = 0f64;
            for b in buf.iter_mut() {
                *b = (*b - mx).exp();
                s += *b;
            }
            for (c, b) in buf.iter().enumerate() {
                y[at(c)] = T::from_f64(b / s);
            }
        }
    }
}

pub static SOFTMAX_OUTPUT: OpDef = OpDef {
    name: "SoftmaxOutput",
    aliases: &["Softmax"],
    doc: "Softmax of data (over all but the first axis; axis 1 with multi_output; the last axis \
          with preserve_shape) as a loss head: its gradient is (softmax - one_hot(label)) * \
          grad_scale / normalisation, ignoring the head gradient (unless out_grad). use_ignore \
          zeroes the gradient where label == ignore_label.",
    inputs: &["data", "label"],
    parse: parse_sm,
    infer_shape: sm_infer_shape,
    infer_type: infer_type_data_label,
    cpu: Some(|call, i, o, _| {
        let (lay, _) = sm_layout("SoftmaxOutput", call.p::<SmParam>(), &i[0].shape)?;
        let (_, k, inner) = lay;
        if i[0].dtype == DType::F32 && k > 0 {
            // softmax's float32 paths (rows or column blocks, in parallel)
            let (x, y) = (i[0].data::<f32>(), o[0].data_mut::<f32>());
            crate::ops::nn::act::softmax_f32(x, y, k, inner, 1.0, false);
            return Ok(());
        }
        dispatch_float!(i[0].dtype, T => softmax_rows(i[0].data::<T>(), o[0].data_mut::<T>(), lay));
        Ok(())
    }),
    grad: Some(|c, b, x, y, g| {
        let r = b.op1(
            "_softmax_output_grad",
            &sm_attrs(c.p::<SmParam>()),
            &[y[0], x[1], g[0]],
        )?;
        Ok(vec![Some(r), None])
    }),
    ..OpDef::BASE
};

pub static SOFTMAX_OUTPUT_GRAD: OpDef = OpDef {
    name: "_softmax_output_grad",
    doc: "Gradient of SoftmaxOutput from (output, label, ograd); ograd is used only with out_grad.",
    inputs: &["output", "label", "ograd"],
    parse: parse_sm,
    infer_shape: |call, ins, outs| {
        let mut v = [ins[0].clone(), ins[1].clone()];
        sm_infer_shape(call, &mut v, outs)
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let p = call.p::<SmParam>();
        let (y, label, og, dx) = (&i[0], &i[1], &i[2], &o[0]);
        let ((outer, k, inner), _) = sm_layout("SoftmaxOutput", p, &y.shape)?;
        let lab: Vec<f64> = crate::dispatch_dtype!(label.dtype, L => label.data::<L>().iter().map(|v| v.to_f64()).collect());
        let nlab = lab.len();
        let valid = lab.iter().filter(|&&l| l != p.ignore_label).count().max(1) as f64;
        let norm = match p.normalization.as_str() {
            "batch" => outer as f64,
            "valid" => valid,
            _ => 1.0,
        };
        // MXNet divides by the spatial size too for multi_output unless 'valid'.
        let spatial = if p.multi_output && p.normalization != "valid" {
            inner as f64
        } else {
            1.0
        };
        let scale = p.grad_scale / norm / spatial;
        let alpha = p.smooth_alpha;
        let off = if k > 1 { alpha / (k - 1) as f64 } else { 0.0 };
        dispatch_float!(y.dtype, T => {
            let (yv, gv, dv) = (y.data::<T>(), og.data::<T>(), dx.data_mut::<T>());
            for oo in 0..outer {
                for ii in 0..inner {
                    let li = oo * inner + ii;
                    let l = if li < nlab { lab[li] } else { -1.0 };
                    let ignored = p.use_ignore && l == p.ignore_label;
                    let t = if l >= 0.0 && (l as usize) < k { l as usize } else { usize::MAX };
                    for c in 0..k {
                        let at = (oo * k + c) * inner + ii;
                        let v = if ignored {
                            0.0
                        } else {
                            let target = if c == t { 1.0 - alpha } else { off };
                            let mut v = (yv[at].to_f64() - target) * scale;
                            if p.out_grad {
                                v *= gv[at].to_f64();
                            }
                            v
                        };
                        dv[at] = T::from_f64(v);
                    }
                }
            }
        });
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Regression outputs
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Reg {
    Linear,
    Logistic,
    Mae,
}

pub struct RegParam {
    kind: Reg,
    grad_scale: f64,
}

const fn reg_name(k: Reg) -> &'static str {
    match k {
        Reg::Linear => "LinearRegressionOutput",
        Reg::Logistic => "LogisticRegressionOutput",
        Reg::Mae => "MAERegressionOutput",
    }
}

fn parse_reg(a: &Attrs, kind: Reg) -> Result<Params> {
    Ok(Box::new(RegParam {
        kind,
        grad_scale: a.p(reg_name(kind)).f64("grad_scale", 1.0)?,
    }))
}

fn reg_infer_shape(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    match &ins[1] {
        None => ins[1] = Some(d.clone()),
        Some(l) => {
            let squeezed = d.len() == 2 && d[1] == 1 && *l == vec![d[0]];
            if *l != d && !squeezed {
                return Err(Error::Shape(format!(
                    "{op}: label shape {} does not match data shape {}",
                    fmt_shape(l),
                    fmt_shape(&d)
                )));
            }
        }
    }
    outs[0] = Some(d);
    Ok(())
}

fn reg_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let logistic = call.p::<RegParam>().kind == Reg::Logistic;
    dispatch_float!(i[0].dtype, T => {
        map1(i[0].data::<T>(), o[0].data_mut::<T>(), |v| {
            if logistic { T::from_f64(1.0 / (1.0 + (-v.to_f64()).exp())) } else { v }
        })
    });
    Ok(())
}

fn reg_grad(c: &OpCall, b: B, x: &[Entry], y: &[Entry], _: &[Entry]) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<RegParam>();
    let kind = match p.kind {
        Reg::Linear => "linear",
        Reg::Logistic => "logistic",
        Reg::Mae => "mae",
    };
    let r = b.op1(
        "_regression_output_grad",
        &[
            ("kind", kind.to_string()),
            ("grad_scale", fmt_f64(p.grad_scale)),
        ],
        &[y[0], x[1]],
    )?;
    Ok(vec![Some(r), None])
}

macro_rules! reg_op {
    ($NAME:ident, $kind:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: reg_name($kind),
            doc: $doc,
            inputs: &["data", "label"],
            parse: |a| parse_reg(a, $kind),
            infer_shape: reg_infer_shape,
            infer_type: infer_type_data_label,
            cpu: Some(reg_kernel),
            grad: Some(reg_grad),
            ..OpDef::BASE
        };
    };
}

reg_op!(
    LINEAR_REG,
    Reg::Linear,
    "Identity forward; gradient (out - label) * grad_scale / num_output, where num_output is the \
     label size per sample; the head gradient is ignored."
);
reg_op!(LOGISTIC_REG, Reg::Logistic,
    "Sigmoid forward; gradient (out - label) * grad_scale / num_output; the head gradient is ignored.");
reg_op!(MAE_REG, Reg::Mae,
    "Identity forward; gradient sign(out - label) * grad_scale / num_output; the head gradient is ignored.");

pub static REG_GRAD: OpDef = OpDef {
    name: "_regression_output_grad",
    doc: "Gradient of the regression outputs from (output, label); kind=linear|logistic|mae.",
    inputs: &["output", "label"],
    parse: |a| {
        let p = a.p("_regression_output_grad");
        let kind = match p
            .choice("kind", "linear", &["linear", "logistic", "mae"])?
            .as_str()
        {
            "linear" => Reg::Linear,
            "logistic" => Reg::Logistic,
            _ => Reg::Mae,
        };
        Ok(Box::new(RegParam {
            kind,
            grad_scale: p.f64("grad_scale", 1.0)?,
        }) as Params)
    },
    infer_shape: reg_infer_shape,
    infer_type: infer_type_data_label,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<RegParam>();
        let (y, l) = (&i[0], &i[1]);
        let n0 = l.shape.first().copied().unwrap_or(1).max(1);
        let num_output = (l.size() / n0).max(1) as f64;
        let s = p.grad_scale / num_output;
        let lab: Vec<f64> = crate::dispatch_dtype!(l.dtype, L => l.data::<L>().iter().map(|v| v.to_f64()).collect());
        dispatch_float!(y.dtype, T => {
            for ((d, v), t) in o[0].data_mut::<T>().iter_mut().zip(y.data::<T>()).zip(&lab) {
                let e = v.to_f64() - t;
                let g = if p.kind == Reg::Mae { if e > 0.0 { 1.0 } else if e < 0.0 { -1.0 } else { 0.0 } } else { e };
                *d = T::from_f64(g * s);
            }
        });
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// MakeLoss, make_loss
// ---------------------------------------------------------------------------

pub struct MakeLossParam {
    grad_scale: f64,
    valid_thresh: f64,
    normalization: String,
}

fn copy_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    o[0].bytes_mut().copy_from_slice(i[0].bytes());
    Ok(())
}

pub static MAKE_LOSS: OpDef = OpDef {
    name: "MakeLoss",
    doc:
        "Identity forward that marks a loss: its gradient is grad_scale (divided by the batch size \
          with normalization='batch', or by the number of elements above valid_thresh with \
          'valid'), ignoring the head gradient.",
    parse: |a| {
        let p = a.p("MakeLoss");
        Ok(Box::new(MakeLossParam {
            grad_scale: p.f64("grad_scale", 1.0)?,
            valid_thresh: p.f64("valid_thresh", 0.0)?,
            normalization: p.choice("normalization", "null", &["null", "batch", "valid"])?,
        }) as Params)
    },
    infer_type: |call, ins, outs| {
        if let Some(t) = ins[0] {
            float_only(call.name(), "data", t)?;
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(copy_kernel),
    grad: Some(|c, b, x, _, _| {
        let p = c.p::<MakeLossParam>();
        let r = b.op1(
            "_make_loss_grad",
            &[
                ("grad_scale", fmt_f64(p.grad_scale)),
                ("valid_thresh", fmt_f64(p.valid_thresh)),
                ("normalization", p.normalization.clone()),
            ],
            &[x[0]],
        )?;
        Ok(vec![Some(r)])
    }),
    ..OpDef::BASE
};

pub static MAKE_LOSS_GRAD: OpDef = OpDef {
    name: "_make_loss_grad",
    doc: "Gradient of MakeLoss: grad_scale / normalisation, with the shape of data.",
    parse: MAKE_LOSS.parse,
    infer_type: MAKE_LOSS.infer_type,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<MakeLossParam>();
        let x = &i[0];
        dispatch_float!(x.dtype, T => {
            let xv = x.data::<T>();
            let norm = match p.normalization.as_str() {
                "batch" => x.shape.first().copied().unwrap_or(1).max(1) as f64,
                "valid" => xv.iter().filter(|v| v.to_f64() > p.valid_thresh).count().max(1) as f64,
                _ => 1.0,
            };
            o[0].data_mut::<T>().fill(T::from_f64(p.grad_scale / norm));
        });
        Ok(())
    }),
    grad: Some(|_, _, x, _, _| Ok(vec![None; x.len()])),
    ..OpDef::BASE
};

pub static MAKE_LOSS_LOWER: OpDef = OpDef {
    name: "make_loss",
    doc: "Identity forward that marks a loss: its gradient is ones, ignoring the head gradient.",
    parse: |a| {
        if let Some((k, _)) = a.0.first() {
            return Err(Error::Param(format!(
                "make_loss: unknown argument '{k}' (make_loss takes none; see MakeLoss)"
            )));
        }
        Ok(Box::new(()) as Params)
    },
    infer_type: MAKE_LOSS.infer_type,
    cpu: Some(copy_kernel),
    grad: Some(|_, b, x, _, _| Ok(vec![Some(b.op1("ones_like", &[], &[x[0]])?)])),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// softmax_cross_entropy
// ---------------------------------------------------------------------------

fn sce_check(op: &str, d: &Shape, l: &Shape) -> Result<()> {
    if d.len() != 2 || *l != vec![d[0]] {
        return Err(Error::Shape(format!(
            "{op}: data must be 2-D (batch, classes) and label 1-D (batch,), got data {} and label {}",
            fmt_shape(d),
            fmt_shape(l)
        )));
    }
    Ok(())
}

pub static SOFTMAX_CE: OpDef = OpDef {
    name: "softmax_cross_entropy",
    doc: "Sum over the batch of -log(softmax(data)[label]) for data (batch, classes) and label (batch,); \
          output shape (1,).",
    inputs: &["data", "label"],
    infer_shape: |call, ins, outs| {
        let Some(d) = ins[0].clone() else { return Ok(()) };
        if d.len() != 2 {
            return Err(Error::Shape(format!("{}: data must be 2-D (batch, classes), got {}", call.name(), fmt_shape(&d))));
        }
        let l = ins[1].get_or_insert_with(|| vec![d[0]]).clone();
        sce_check(call.name(), &d, &l)?;
        outs[0] = Some(vec![1]);
        Ok(())
    },
    infer_type: infer_type_data_label,
    cpu: Some(|_, i, o, _| {
        let (x, l) = (&i[0], &i[1]);
        let (n, k) = (x.shape[0], x.shape[1]);
        let lab: Vec<f64> = crate::dispatch_dtype!(l.dtype, L => l.data::<L>().iter().map(|v| v.to_f64()).collect());
        dispatch_float!(x.dtype, T => {
            let xv = x.data::<T>();
            let mut total = 0f64;
            for r in 0..n {
                let row = &xv[r * k..(r + 1) * k];
                let mx = row.iter().fold(f64::NEG_INFINITY, |m, v| m.max(v.to_f64()));
                let lse = row.iter().map(|v| (v.to_f64() - mx).exp()).sum::<f64>().ln() + mx;
                let t = (lab[r].max(0.0) as usize).min(k - 1);
                total += lse - row[t].to_f64();
            }
            o[0].data_mut::<T>()[0] = T::from_f64(total);
        });
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        let r = b.op1("_softmax_cross_entropy_grad", &[], &[g[0], x[0], x[1]])?;
        Ok(vec![Some(r), None])
    }),
    ..OpDef::BASE
};

pub static SOFTMAX_CE_GRAD: OpDef = OpDef {
    name: "_softmax_cross_entropy_grad",
    doc: "Gradient of softmax_cross_entropy: ograd * (softmax(data) - one_hot(label)).",
    inputs: &["ograd", "data", "label"],
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (g, x, l) = (&i[0], &i[1], &i[2]);
        let (n, k) = (x.shape[0], x.shape[1]);
        let lab: Vec<f64> = crate::dispatch_dtype!(l.dtype, L => l.data::<L>().iter().map(|v| v.to_f64()).collect());
        dispatch_float!(x.dtype, T => {
            let gs = g.data::<T>()[0].to_f64();
            softmax_rows(x.data::<T>(), o[0].data_mut::<T>(), (n, k, 1));
            let dv = o[0].data_mut::<T>();
            for r in 0..n {
                let t = (lab[r].max(0.0) as usize).min(k - 1);
                for c in 0..k {
                    let v = dv[r * k + c].to_f64() - if c == t { 1.0 } else { 0.0 };
                    dv[r * k + c] = T::from_f64(v * gs);
                }
            }
        });
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// smooth_l1
// ---------------------------------------------------------------------------

fn smooth_l1_scalar(c: &OpCall) -> f64 {
    *c.p::<f64>()
}

pub static SMOOTH_L1: OpDef = OpDef {
    name: "smooth_l1",
    doc: "Smooth L1: 0.5 * (sigma * x)^2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2 (sigma = scalar).",
    parse: |a| Ok(Box::new(a.p("smooth_l1").f64("scalar", 1.0)?) as Params),
    infer_shape: infer_shape_same,
    infer_type: |call, ins, outs| {
        if let Some(t) = ins[0] {
            float_only(call.name(), "data", t)?;
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let s2 = smooth_l1_scalar(call).powi(2);
        dispatch_float!(i[0].dtype, T => map1(i[0].data::<T>(), o[0].data_mut::<T>(), |v| {
            let x = v.to_f64();
            T::from_f64(if x.abs() < 1.0 / s2 { 0.5 * x * x * s2 } else { x.abs() - 0.5 / s2 })
        }));
        Ok(())
    }),
    // d/dx = sigma^2 x inside, sign(x) outside: built from public ops.
    grad: Some(|c, b, x, _, g| {
        let s2 = smooth_l1_scalar(c).powi(2);
        let a = b.op1("abs", &[], &[x[0]])?;
        let inside = b.op1("_lesser_scalar", &[("scalar", fmt_f64(1.0 / s2))], &[a])?;
        let lin = b.op1("_mul_scalar", &[("scalar", fmt_f64(s2))], &[x[0]])?;
        let sg = b.op1("sign", &[], &[x[0]])?;
        let d = b.op1("where", &[], &[inside, lin, sg])?;
        Ok(vec![Some(b.op1("elemwise_mul", &[], &[g[0], d])?)])
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &SOFTMAX_OUTPUT,
    &SOFTMAX_OUTPUT_GRAD,
    &LINEAR_REG,
    &LOGISTIC_REG,
    &MAE_REG,
    &REG_GRAD,
    &MAKE_LOSS,
    &MAKE_LOSS_GRAD,
    &MAKE_LOSS_LOWER,
    &SOFTMAX_CE,
    &SOFTMAX_CE_GRAD,
    &SMOOTH_L1,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::{arr, check_grad, vals};
    use crate::ops::registry::call;

    #[test]
    fn softmax_output_forward_and_head_gradient() {
        let x = arr(&[0., 0., 0., 1., 1., 1.], &[2, 3]);
        let l = arr(&[2., 0.], &[2]);
        let y = call("SoftmaxOutput", &[], &[x.clone(), l.clone()])
            .unwrap()
            .remove(0);
        assert!(y
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .all(|p| (p - 1.0 / 3.0).abs() < 1e-12));
        let g = call(
            "_softmax_output_grad",
            &[("grad_scale", "3")],
            &[y.clone(), l, y],
        )
        .unwrap()
        .remove(0);
        let third = 1.0 / 3.0;
        let want = [third, third, third - 1.0, third - 1.0, third, third].map(|v| v * 3.0);
        for (a, b) in g.to_vec::<f64>().unwrap().iter().zip(want) {
            assert!((a - b).abs() < 1e-12);
        }
        let e = call("SoftmaxOutput", &[], &[x, arr(&[1., 2., 3.], &[3])])
            .err()
            .unwrap()
            .message();
        assert!(e.contains("SoftmaxOutput: label shape (3,)"), "{e}");
    }

    #[test]
    fn regression_gradient_scales_by_outputs_per_sample() {
        let y = arr(&[1., 2., 3., 4.], &[2, 2]);
        let l = arr(&[0., 0., 0., 0.], &[2, 2]);
        let g = call(
            "_regression_output_grad",
            &[("kind", "linear"), ("grad_scale", "2")],
            &[y, l],
        )
        .unwrap()
        .remove(0);
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![1., 2., 3., 4.]);
    }

    #[test]
    fn differentiable_losses() {
        let d = vals(8, 9);
        check_grad(
            "softmax_cross_entropy",
            &[],
            &[(d.clone(), vec![2, 4]), (vec![1., 3.], vec![2])],
            &[0],
        );
        let z: Vec<f64> = d.iter().map(|v| v * 3.0).collect();
        check_grad("smooth_l1", &[("scalar", "1.5")], &[(z, vec![8])], &[0]);
    }
}
