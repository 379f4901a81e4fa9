//! Sequence operators over a time axis (0: (T, B, ...), 1: (B, T, ...)):
//! SequenceMask, SequenceLast, SequenceReverse. With
//! `use_sequence_length=True` a second input `sequence_length` (B,) gives
//! each sequence's valid length; otherwise every sequence has length T and
//! the operator takes only `data`.
use super::attrs::Attrs;
use super::elemwise::fmt_f64;
use super::registry::{Entry, OpCall, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;

pub struct SeqParam {
    use_len: bool,
    value: f64,
    axis: usize,
}

fn parse_seq(a: &Attrs, op: &str, allow_axis1: bool) -> Result<SeqParam> {
    let p = a.p(op);
    let axis = p.i64("axis", 0)?;
    let ok = axis == 0 || (allow_axis1 && axis == 1);
    if !ok {
        return Err(Error::Param(format!(
            "{op}: axis must be {}, got {axis}",
            if allow_axis1 { "0 or 1" } else { "0" }
        )));
    }
    Ok(SeqParam {
        use_len: p.bool("use_sequence_length", false)?,
        value: p.f64("value", 0.0)?,
        axis: axis as usize,
    })
}

fn seq_attrs(p: &SeqParam) -> Vec<(&'static str, String)> {
    vec![
        (
            "use_sequence_length",
            if p.use_len { "True" } else { "False" }.to_string(),
        ),
        ("value", fmt_f64(p.value)),
        ("axis", p.axis.to_string()),
    ]
}

fn n_in(c: &OpCall) -> usize {
    if c.p::<SeqParam>().use_len {
        2
    } else {
        1
    }
}

/// (T, B, rest) of data for the time axis, after checking shapes.
fn seq_dims(op: &str, p: &SeqParam, d: &[usize]) -> Result<(usize, usize, usize)> {
    if d.len() < 2 {
        return Err(Error::Shape(format!(
            "{op}: data must have at least 2 dimensions (time and batch), got shape {}",
            fmt_shape(d)
        )));
    }
    let (t, b) = if p.axis == 0 {
        (d[0], d[1])
    } else {
        (d[1], d[0])
    };
    Ok((t, b, d[2..].iter().product()))
}

fn check_len(op: &str, b: usize, ins: &mut [Option<Shape>], k: usize) -> Result<()> {
    if ins.len() > k {
        match &ins[k] {
            None => ins[k] = Some(vec![b]),
            Some(s) if *s != vec![b] => {
                return Err(Error::Shape(format!(
                    "{op}: sequence_length has shape {}, expected ({b},) for a batch of {b}",
                    fmt_shape(s)
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Valid length of each sequence, clamped to [0, T].
fn lengths(p: &SeqParam, i: &[Blob], k: usize, t: usize, b: usize) -> Vec<usize> {
    if !p.use_len {
        return vec![t; b];
    }
    let l = &i[k];
    dispatch_dtype!(l.dtype, L => l.data::<L>().iter().map(|v| {
        let f = v.to_f64();
        if f.is_nan() || f <= 0.0 { 0 } else { (f as usize).min(t) }
    }).collect())
}

/// Flat offset of (time step, batch) row of `rest` elements.
#[inline]
fn row(p: &SeqParam, t_idx: usize, b_idx: usize, tn: usize, bn: usize, rest: usize) -> usize {
    if p.axis == 0 {
        (t_idx * bn + b_idx) * rest
    } else {
        (b_idx * tn + t_idx) * rest
    }
}

fn infer_type_first(
    _: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    if let Some(t) = ins[0] {
        if ins.len() > 1 && ins[1].is_none() {
            ins[1] = Some(t);
        }
        outs[0] = Some(t);
    }
    Ok(())
}

// ---------------------------------------------------------------------------

pub static SEQUENCE_MASK: OpDef = OpDef {
    name: "SequenceMask",
    doc: "Sets the steps of each sequence at or beyond its length to `value` (time axis 0 or 1).",
    inputs: &["data", "sequence_length"],
    num_inputs: Some(n_in),
    parse: |a| Ok(Box::new(parse_seq(a, "SequenceMask", true)?) as Params),
    infer_shape: |call, ins, outs| {
        let Some(d) = ins[0].clone() else {
            return Ok(());
        };
        let (_, b, _) = seq_dims(call.name(), call.p::<SeqParam>(), &d)?;
        check_len(call.name(), b, ins, 1)?;
        outs[0] = Some(d);
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<SeqParam>();
        let (x, y) = (&i[0], &o[0]);
        let (tn, bn, rest) = seq_dims("SequenceMask", p, &x.shape)?;
        let len = lengths(p, i, 1, tn, bn);
        dispatch_dtype!(x.dtype, T => {
            let (xv, yv) = (x.data::<T>(), y.data_mut::<T>());
            let fill = T::from_f64(p.value);
            for t in 0..tn {
                for (b, &lb) in len.iter().enumerate() {
                    let r = row(p, t, b, tn, bn, rest);
                    let dst = &mut yv[r..r + rest];
                    if t < lb {
                        dst.copy_from_slice(&xv[r..r + rest]);
                    } else {
                        dst.fill(fill);
                    }
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<SeqParam>();
        let mut attrs = seq_attrs(p);
        attrs[1].1 = "0.0".into();
        let ins: Vec<Entry> = std::iter::once(g[0])
            .chain(x.iter().skip(1).copied())
            .collect();
        let r = b.op1("SequenceMask", &attrs, &ins)?;
        let mut out = vec![Some(r)];
        out.extend(std::iter::repeat_n(None, x.len() - 1));
        Ok(out)
    }),
    ..OpDef::BASE
};

pub static SEQUENCE_LAST: OpDef = OpDef {
    name: "SequenceLast",
    doc: "The last valid step of each sequence: data (T, B, ...) -> (B, ...) (axis 0 or 1).",
    inputs: &["data", "sequence_length"],
    num_inputs: Some(n_in),
    parse: |a| Ok(Box::new(parse_seq(a, "SequenceLast", true)?) as Params),
    infer_shape: |call, ins, outs| {
        let Some(d) = ins[0].clone() else {
            return Ok(());
        };
        let p = call.p::<SeqParam>();
        let (_, b, _) = seq_dims(call.name(), p, &d)?;
        check_len(call.name(), b, ins, 1)?;
        let mut s = d.clone();
        s.remove(p.axis);
        outs[0] = Some(s);
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<SeqParam>();
        let (x, y) = (&i[0], &o[0]);
        let (tn, bn, rest) = seq_dims("SequenceLast", p, &x.shape)?;
        let len = lengths(p, i, 1, tn, bn);
        dispatch_dtype!(x.dtype, T => {
            let (xv, yv) = (x.data::<T>(), y.data_mut::<T>());
            for (b, &lb) in len.iter().enumerate() {
                let dst = &mut yv[b * rest..(b + 1) * rest];
                if lb == 0 {
                    // MXNet reads step -1 (undefined); an empty sequence gives zeros here.
                    dst.fill(T::from_f64(0.0));
                } else {
                    let r = row(p, lb - 1, b, tn, bn, rest);
                    dst.copy_from_slice(&xv[r..r + rest]);
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<SeqParam>();
        let mut ins = vec![g[0], x[0]];
        ins.extend(x.iter().skip(1).copied());
        let r = b.op1("_sequence_last_grad", &seq_attrs(p), &ins)?;
        let mut out = vec![Some(r)];
        out.extend(std::iter::repeat_n(None, x.len() - 1));
        Ok(out)
    }),
    ..OpDef::BASE
};

/// Scatter (B, ...) gradients back to the last valid step of (T, B, ...).
pub static SEQUENCE_LAST_GRAD: OpDef = OpDef {
    name: "_sequence_last_grad",
    doc: "Gradient of SequenceLast: (ograd, data[, sequence_length]) -> zeros like data with ograd at each last step.",
    inputs: &["ograd", "data", "sequence_length"],
    num_inputs: Some(|c| n_in(c) + 1),
    parse: |a| Ok(Box::new(parse_seq(a, "SequenceLast", true)?) as Params),
    infer_shape: |call, ins, outs| {
        let Some(d) = ins[1].clone() else { return Ok(()) };
        let (_, b, _) = seq_dims("SequenceLast", call.p::<SeqParam>(), &d)?;
        check_len("SequenceLast", b, ins, 2)?;
        outs[0] = Some(d);
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0].or(ins[1]);
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let p = call.p::<SeqParam>();
        let (g, y) = (&i[0], &o[0]);
        let (tn, bn, rest) = seq_dims("SequenceLast", p, &y.shape)?;
        let len = lengths(p, i, 2, tn, bn);
        y.bytes_mut().fill(0);
        dispatch_dtype!(y.dtype, T => {
            let (gv, yv) = (g.data::<T>(), y.data_mut::<T>());
            for (b, &lb) in len.iter().enumerate() {
                if lb > 0 {
                    let r = row(p, lb - 1, b, tn, bn, rest);
                    yv[r..r + rest].copy_from_slice(&gv[b * rest..(b + 1) * rest]);
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let ins: Vec<Entry> = std::iter::once(g[0]).chain(x.iter().skip(2).copied()).collect();
        let r = b.op1("SequenceLast", &seq_attrs(c.p::<SeqParam>()), &ins)?;
        let mut out = vec![Some(r)];
        out.extend(std::iter::repeat_n(None, x.len() - 1));
        Ok(out)
    }),
    ..OpDef::BASE
};

pub static SEQUENCE_REVERSE: OpDef = OpDef {
    name: "SequenceReverse",
    doc: "Reverses the first sequence_length steps of each sequence along axis 0; later steps are kept.",
    inputs: &["data", "sequence_length"],
    num_inputs: Some(n_in),
    parse: |a| Ok(Box::new(parse_seq(a, "SequenceReverse", false)?) as Params),
    infer_shape: |call, ins, outs| {
        let Some(d) = ins[0].clone() else { return Ok(()) };
        let (_, b, _) = seq_dims(call.name(), call.p::<SeqParam>(), &d)?;
        check_len(call.name(), b, ins, 1)?;
        outs[0] = Some(d);
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<SeqParam>();
        let (x, y) = (&i[0], &o[0]);
        let (tn, bn, rest) = seq_dims("SequenceReverse", p, &x.shape)?;
        let len = lengths(p, i, 1, tn, bn);
        dispatch_dtype!(x.dtype, T => {
            let (xv, yv) = (x.data::<T>(), y.data_mut::<T>());
            for t in 0..tn {
                for (b, &lb) in len.iter().enumerate() {
                    let src_t = if t < lb { lb - 1 - t } else { t };
                    let (rd, rs) = (row(p, t, b, tn, bn, rest), row(p, src_t, b, tn, bn, rest));
                    yv[rd..rd + rest].copy_from_slice(&xv[rs..rs + rest]);
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let ins: Vec<Entry> = std::iter::once(g[0]).chain(x.iter().skip(1).copied()).collect();
        let r = b.op1("SequenceReverse", &seq_attrs(c.p::<SeqParam>()), &ins)?;
        let mut out = vec![Some(r)];
        out.extend(std::iter::repeat_n(None, x.len() - 1));
        Ok(out)
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &SEQUENCE_MASK,
    &SEQUENCE_LAST,
    &SEQUENCE_LAST_GRAD,
    &SEQUENCE_REVERSE,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::{arr, check_grad, vals};
    use crate::ops::registry::call;

    #[test]
    fn mask_last_reverse() {
        // (T=3, B=2)
        let x = arr(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
        let l = arr(&[1., 3.], &[2]);
        let on = [("use_sequence_length", "True"), ("value", "-1")];
        let m = call("SequenceMask", &on, &[x.clone(), l.clone()])
            .unwrap()
            .remove(0);
        assert_eq!(m.to_vec::<f64>().unwrap(), vec![1., 2., -1., 4., -1., 6.]);
        let last = call("SequenceLast", &on[..1], &[x.clone(), l.clone()])
            .unwrap()
            .remove(0);
        assert_eq!(last.to_vec::<f64>().unwrap(), vec![1., 6.]);
        let r = call("SequenceReverse", &on[..1], &[x.clone(), l.clone()])
            .unwrap()
            .remove(0);
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![1., 6., 3., 4., 5., 2.]);
        let e = call("SequenceReverse", &[("axis", "1")], &[x])
            .err()
            .unwrap()
            .message();
        assert!(e.contains("SequenceReverse") && e.contains("axis"), "{e}");
    }

    #[test]
    fn gradients() {
        let d = vals(12, 5);
        let l = (vec![2., 1.], vec![2]);
        for op in ["SequenceMask", "SequenceLast", "SequenceReverse"] {
            check_grad(
                op,
                &[("use_sequence_length", "True")],
                &[(d.clone(), vec![3, 2, 2]), l.clone()],
                &[0],
            );
        }
        check_grad(
            "SequenceLast",
            &[("use_sequence_length", "True"), ("axis", "1")],
            &[(d, vec![2, 3, 2]), l],
            &[0],
        );
    }
}
