//! SVMOutput (an identity forward whose backward is the hinge-loss
//! gradient, ignoring the head gradient like the other loss heads) and
//! IdentityAttachKLSparseReg (an identity forward whose backward adds a KL
//! sparseness penalty and updates its moving average in place, as MXNet
//! 1.9.1's backward does).
use super::{fill_shape, to_f64_vec, write_f64};
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpCall, OpDef, Params};

fn float_data(op: &str, t: DType) -> Result<()> {
    if !t.is_float() {
        return Err(Error::DType(format!(
            "{op}: data dtype {} is not supported (float32, float64 or float16 only)",
            t.name()
        )));
    }
    Ok(())
}

/// Output (and every gradient) has the data's dtype; other inputs default to it.
fn infer_type_data(
    c: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let first = if c.name().starts_with("_backward_IdentityAttach") {
        1
    } else {
        0
    };
    if let Some(t) = ins[first] {
        float_data(c.name(), t)?;
        for x in ins.iter_mut() {
            if x.is_none() {
                *x = Some(t);
            }
        }
        for o in outs.iter_mut() {
            *o = Some(t);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// SVMOutput
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct SvmParam {
    pub margin: f64,
    pub reg: f64,
    pub linear: bool,
}

fn parse_svm(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(SvmParam {
        margin: p.f64("margin", 1.0)?,
        reg: p.f64("regularization_coefficient", 1.0)?,
        linear: p.bool("use_linear", false)?,
    }))
}

fn svm_label_shape(op: &str, d: &[usize]) -> Result<Vec<usize>> {
    if d.len() < 2 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must have at least 2 dimensions (..., num_classes)",
            fmt_shape(d)
        )));
    }
    Ok(d[..d.len() - 1].to_vec())
}

fn svm_infer(
    c: &OpCall,
    ins: &mut [Option<Vec<usize>>],
    outs: &mut [Option<Vec<usize>>],
) -> Result<()> {
    if let Some(d) = ins[0].clone() {
        let l = svm_label_shape(c.name(), &d)?;
        fill_shape(
            c.name(),
            "label",
            &mut ins[1],
            l,
            &format!(" (data shape {} without its last axis)", fmt_shape(&d)),
        )?;
        outs[0] = Some(d);
    }
    Ok(())
}

/// d loss / d data of the (L1 or L2) one-vs-all hinge loss. A label that
/// is not a class index in range (after truncation) marks no class as the
/// target, as in MXNet.
fn svm_grad(p: &SvmParam, x: &[f64], label: &[f64], k: usize) -> Vec<f64> {
    let mut g = vec![0f64; x.len()];
    for (r, &lv) in label.iter().enumerate() {
        let t = lv.trunc();
        let target = (t >= 0.0 && t < k as f64).then_some(t as usize);
        for j in 0..k {
            let s = x[r * k + j];
            g[r * k + j] = if Some(j) == target {
                if p.margin > s {
                    if p.linear {
                        -p.reg
                    } else {
                        -2.0 * p.reg * (p.margin - s)
                    }
                } else {
                    0.0
                }
            } else if p.margin > -s {
                if p.linear {
                    p.reg
                } else {
                    2.0 * p.reg * (p.margin + s)
                }
            } else {
                0.0
            };
        }
    }
    g
}

pub static SVM_OUTPUT: OpDef = OpDef {
    name: "SVMOutput",
    doc: "Support vector machine output layer: the forward returns data (..., num_classes) unchanged; the \
          backward ignores the head gradient and returns the gradient of the one-vs-all hinge loss for label \
          (data's shape without the last axis, class indices): L2-SVM by default, regularization_coefficient * \
          (-2 (margin - x) for the label's class where x < margin, 2 (margin + x) for the other classes where \
          x > -margin); use_linear gives L1-SVM (-regularization_coefficient and +regularization_coefficient).",
    inputs: &["data", "label"],
    parse: |a| parse_svm(a, "SVMOutput"),
    infer_shape: svm_infer,
    infer_type: infer_type_data,
    cpu: Some(|_, i, o, _| {
        write_f64(&o[0], &to_f64_vec(&i[0]));
        Ok(())
    }),
    grad: Some(|c, b, x, _, _| {
        let d = b.op1("_backward_SVMOutput", &super::fwd_attrs(c), &[x[0], x[1]])?;
        Ok(vec![Some(d), None])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SVM_OUTPUT: OpDef = OpDef {
    name: "_backward_SVMOutput",
    doc: "Internal: the hinge-loss gradient of SVMOutput from data and label (the head gradient is not used).",
    inputs: &["data", "label"],
    parse: |a| parse_svm(a, "_backward_SVMOutput"),
    infer_shape: svm_infer,
    infer_type: infer_type_data,
    cpu: Some(|c, i, o, _| {
        let k = *i[0].shape.last().unwrap_or(&1);
        let g = svm_grad(c.p::<SvmParam>(), &to_f64_vec(&i[0]), &to_f64_vec(&i[1]), k);
        write_f64(&o[0], &g);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// IdentityAttachKLSparseReg
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct KlParam {
    pub target: f64,
    pub penalty: f64,
    pub momentum: f64,
}

fn parse_kl(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    // MXNet's defaults are float32 values.
    Ok(Box::new(KlParam {
        target: p.f64("sparseness_target", 0.1f32 as f64)?,
        penalty: p.f64("penalty", 0.001f32 as f64)?,
        momentum: p.f64("momentum", 0.9f32 as f64)?,
    }))
}

/// data (N, C) and moving_avg (C,).
fn kl_infer(op: &str, d: &Option<Vec<usize>>, m: &mut Option<Vec<usize>>) -> Result<()> {
    if let Some(d) = d {
        if d.len() != 2 {
            return Err(Error::Shape(format!(
                "{op}: data shape {} must be 2-D (batch, units) (MXNet 1.9.1's backward handles no other rank)",
                fmt_shape(d)
            )));
        }
        fill_shape(
            op,
            "moving_avg",
            m,
            vec![d[1]],
            &format!(" (one entry per unit of data shape {})", fmt_shape(d)),
        )?;
    }
    Ok(())
}

pub static IDENTITY_ATTACH_KL_SPARSE_REG: OpDef = OpDef {
    name: "IdentityAttachKLSparseReg",
    doc: "Identity on data (batch, units) (the output of a sigmoid) that attaches a KL-divergence sparseness \
          penalty to its gradient. moving_avg (units,) is MXNet's auxiliary state, passed as the second input: \
          the backward first updates it in place, moving_avg = momentum * moving_avg + (1 - momentum) * \
          mean(data, axis=0), then returns ograd + penalty * (-sparseness_target / moving_avg + (1 - \
          sparseness_target) / (1 - moving_avg)). The forward leaves moving_avg unchanged.",
    inputs: &["data", "moving_avg"],
    parse: |a| parse_kl(a, "IdentityAttachKLSparseReg"),
    infer_shape: |c, ins, outs| {
        let (d, m) = ins.split_at_mut(1);
        kl_infer(c.name(), &d[0], &mut m[0])?;
        outs[0] = ins[0].clone();
        Ok(())
    },
    infer_type: infer_type_data,
    cpu: Some(|_, i, o, _| {
        write_f64(&o[0], &to_f64_vec(&i[0]));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_IdentityAttachKLSparseReg", &super::fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![Some(d), None])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_IDENTITY_ATTACH_KL_SPARSE_REG: OpDef = OpDef {
    name: "_backward_IdentityAttachKLSparseReg",
    doc: "Internal: backward of IdentityAttachKLSparseReg. Inputs: output gradient, data, moving_avg (updated \
          in place with data's batch mean before the penalty is computed).",
    inputs: &["ograd", "data", "moving_avg"],
    parse: |a| parse_kl(a, "_backward_IdentityAttachKLSparseReg"),
    infer_shape: |c, ins, outs| {
        let (d, m) = ins.split_at_mut(2);
        kl_infer(c.name(), &d[1], &mut m[0])?;
        if let Some(s) = ins[1].clone() {
            fill_shape(c.name(), "output gradient", &mut ins[0], s.clone(), "")?;
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: infer_type_data,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<KlParam>();
        let (n, u) = (i[1].shape[0], i[1].shape[1]);
        let x = to_f64_vec(&i[1]);
        let mut avg = to_f64_vec(&i[2]);
        for (j, a) in avg.iter_mut().enumerate() {
            let mean = (0..n).map(|r| x[r * u + j]).sum::<f64>() / n as f64;
            *a = p.momentum * *a + (1.0 - p.momentum) * mean;
        }
        write_f64(&i[2], &avg);
        let g = to_f64_vec(&i[0]);
        let pen: Vec<f64> = avg
            .iter()
            .map(|&a| p.penalty * (-p.target / a + (1.0 - p.target) / (1.0 - a)))
            .collect();
        let dx: Vec<f64> = g.iter().enumerate().map(|(k, v)| v + pen[k % u.max(1)]).collect();
        write_f64(&o[0], &dx);
        Ok(())
    }),
    mutates: &[2],
    ..OpDef::BASE
};
