//! MXNet's interleaved multi-head attention matmuls (transformer.cc):
//! projections stored as (seq_length, batch, heads * parts * head_dim) with
//! the parts (queries / keys / values) interleaved per head, attention maps
//! as (batch * heads, query_length, key_length). Each operator has an
//! internal backward operator computing the gradients of its inputs.
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::nn::{fwd_attrs, infer_float_same, to_f64_vec, write_f64};
use crate::ops::registry::{OpCall, OpDef, Params};

fn parse_heads(a: &crate::ops::attrs::Attrs, op: &str) -> Result<Params> {
    let h = a.p(op).i64_req("heads")?;
    if h < 1 {
        return Err(Error::Param(format!(
            "{op}: heads must be a positive integer, got {h}"
        )));
    }
    Ok(Box::new(h as usize))
}

fn heads(c: &OpCall) -> usize {
    *c.p::<usize>()
}

/// A projection tensor (L, B, H * parts * D): the `part`-th slice of each head.
#[derive(Clone, Copy)]
struct Proj {
    l: usize,
    b: usize,
    h: usize,
    parts: usize,
    part: usize,
    d: usize,
}

impl Proj {
    fn new(op: &str, what: &str, s: &[usize], h: usize, parts: usize, part: usize) -> Result<Proj> {
        if s.len() != 3 || !s[2].is_multiple_of(h * parts) || s[2] == 0 {
            return Err(Error::Shape(format!(
                "{op}: {what} shape {} must be (seq_length, batch_size, heads * {parts} * head_dim) with \
                 heads = {h}",
                fmt_shape(s)
            )));
        }
        Ok(Proj {
            l: s[0],
            b: s[1],
            h,
            parts,
            part,
            d: s[2] / (h * parts),
        })
    }
    fn at(&self, l: usize, b: usize, h: usize, d: usize) -> usize {
        ((l * self.b + b) * self.h * self.parts + h * self.parts + self.part) * self.d + d
    }
}

/// out[bh, i, j] = scale * sum_d a(i, b, h, d) * k(j, b, h, d)
fn qk(a: &Proj, k: &Proj, x: &[f64], y: &[f64], scale: f64) -> Vec<f64> {
    let mut out = vec![0f64; a.b * a.h * a.l * k.l];
    for b in 0..a.b {
        for h in 0..a.h {
            for i in 0..a.l {
                for j in 0..k.l {
                    let s: f64 = (0..a.d)
                        .map(|d| x[a.at(i, b, h, d)] * y[k.at(j, b, h, d)])
                        .sum();
                    out[((b * a.h + h) * a.l + i) * k.l + j] = s * scale;
                }
            }
        }
    }
    out
}

/// Gradients of qk: (d a, d k) accumulated into `da` / `dk` (full tensors).
#[allow(clippy::too_many_arguments)]
fn qk_backward(
    a: &Proj,
    k: &Proj,
    x: &[f64],
    y: &[f64],
    g: &[f64],
    scale: f64,
    da: &mut [f64],
    dk: &mut [f64],
) {
    for b in 0..a.b {
        for h in 0..a.h {
            for i in 0..a.l {
                for j in 0..k.l {
                    let gv = g[((b * a.h + h) * a.l + i) * k.l + j] * scale;
                    for d in 0..a.d {
                        da[a.at(i, b, h, d)] += gv * y[k.at(j, b, h, d)];
                        dk[k.at(j, b, h, d)] += gv * x[a.at(i, b, h, d)];
                    }
                }
            }
        }
    }
}

/// out(i, b, h * D + d) = sum_j att[bh, i, j] * v(j, b, h, d); att is (B * H, lq, v.l)
fn valatt(v: &Proj, x: &[f64], att: &[f64], lq: usize) -> Vec<f64> {
    let mut out = vec![0f64; lq * v.b * v.h * v.d];
    for b in 0..v.b {
        for h in 0..v.h {
            for i in 0..lq {
                for j in 0..v.l {
                    let w = att[((b * v.h + h) * lq + i) * v.l + j];
                    for d in 0..v.d {
                        out[((i * v.b + b) * v.h + h) * v.d + d] += w * x[v.at(j, b, h, d)];
                    }
                }
            }
        }
    }
    out
}

fn valatt_backward(
    v: &Proj,
    x: &[f64],
    att: &[f64],
    g: &[f64],
    lq: usize,
    dv: &mut [f64],
    datt: &mut [f64],
) {
    for b in 0..v.b {
        for h in 0..v.h {
            for i in 0..lq {
                for j in 0..v.l {
                    let ai = ((b * v.h + h) * lq + i) * v.l + j;
                    let mut s = 0.0;
                    for d in 0..v.d {
                        let gv = g[((i * v.b + b) * v.h + h) * v.d + d];
                        dv[v.at(j, b, h, d)] += att[ai] * gv;
                        s += gv * x[v.at(j, b, h, d)];
                    }
                    datt[ai] += s;
                }
            }
        }
    }
}

fn check_att(op: &str, att: &[usize], bh: usize, lq: usize, lk: usize) -> Result<()> {
    if att != [bh, lq, lk] {
        return Err(Error::Shape(format!(
            "{op}: attention shape {} must be (batch_size * heads, query_length, key_length) = ({bh}, {lq}, \
             {lk})",
            fmt_shape(att)
        )));
    }
    Ok(())
}

fn same_batch(op: &str, a: &Proj, b: &Proj, sa: &[usize], sb: &[usize]) -> Result<()> {
    if a.b != b.b || a.d != b.d {
        return Err(Error::Shape(format!(
            "{op}: queries shape {} and keys_values shape {} must have one batch size and head_dim",
            fmt_shape(sa),
            fmt_shape(sb)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// self attention
// ---------------------------------------------------------------------------

const SQK: &str = "_contrib_interleaved_matmul_selfatt_qk";
const SVA: &str = "_contrib_interleaved_matmul_selfatt_valatt";
const EQK: &str = "_contrib_interleaved_matmul_encdec_qk";
const EVA: &str = "_contrib_interleaved_matmul_encdec_valatt";

pub static SELFATT_QK: OpDef = OpDef {
    name: SQK,
    doc: "Self-attention scores from interleaved projections queries_keys_values (L, B, heads * 3 * D) \
          (per head: query, key, value slices of size D): (B * heads, L, L) with entry [b * heads + h, i, j] \
          = q(i, b, h) . k(j, b, h) / sqrt(D). Gradient to queries_keys_values.",
    inputs: &["queries_keys_values"],
    parse: |a| parse_heads(a, SQK),
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            let q = Proj::new(SQK, "queries_keys_values", s, heads(c), 3, 0)?;
            outs[0] = Some(vec![q.b * q.h, q.l, q.l]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let q = Proj::new(SQK, "queries_keys_values", &i[0].shape, heads(c), 3, 0)?;
        let k = Proj { part: 1, ..q };
        let x = to_f64_vec(&i[0]);
        write_f64(&o[0], &qk(&q, &k, &x, &x, 1.0 / (q.d as f64).sqrt()));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_interleaved_matmul_selfatt_qk", &fwd_attrs(c), &[g[0], x[0]])?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SELFATT_QK: OpDef = OpDef {
    name: "_backward_interleaved_matmul_selfatt_qk",
    doc: "Internal: gradient of interleaved_matmul_selfatt_qk. Inputs: output gradient, queries_keys_values.",
    inputs: &["ograd", "queries_keys_values"],
    parse: |a| parse_heads(a, "_backward_interleaved_matmul_selfatt_qk"),
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let q = Proj::new(SQK, "queries_keys_values", &i[1].shape, heads(c), 3, 0)?;
        let k = Proj { part: 1, ..q };
        let x = to_f64_vec(&i[1]);
        let (mut da, mut dk) = (vec![0f64; x.len()], vec![0f64; x.len()]);
        qk_backward(&q, &k, &x, &x, &to_f64_vec(&i[0]), 1.0 / (q.d as f64).sqrt(), &mut da, &mut dk);
        let d: Vec<f64> = da.iter().zip(&dk).map(|(a, b)| a + b).collect();
        write_f64(&o[0], &d);
        Ok(())
    }),
    ..OpDef::BASE
};

pub static SELFATT_VALATT: OpDef = OpDef {
    name: SVA,
    doc: "Self-attention output: the value slices of queries_keys_values (L, B, heads * 3 * D) weighted by \
          attention (B * heads, L, L): (L, B, heads * D) with entry (i, b, h * D + d) = sum_j attention[b * \
          heads + h, i, j] * v(j, b, h, d). Gradients to both inputs.",
    inputs: &["queries_keys_values", "attention"],
    parse: |a| parse_heads(a, SVA),
    infer_shape: |c, ins, outs| {
        if let (Some(s), Some(att)) = (&ins[0], &ins[1]) {
            let v = Proj::new(SVA, "queries_keys_values", s, heads(c), 3, 2)?;
            check_att(SVA, att, v.b * v.h, v.l, v.l)?;
            outs[0] = Some(vec![v.l, v.b, v.h * v.d]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let v = Proj::new(SVA, "queries_keys_values", &i[0].shape, heads(c), 3, 2)?;
        write_f64(&o[0], &valatt(&v, &to_f64_vec(&i[0]), &to_f64_vec(&i[1]), v.l));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op(
            "_backward_interleaved_matmul_selfatt_valatt",
            &fwd_attrs(c),
            &[g[0], x[0], x[1]],
        )?;
        Ok(vec![Some(d[0]), Some(d[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_SELFATT_VALATT: OpDef = OpDef {
    name: "_backward_interleaved_matmul_selfatt_valatt",
    doc: "Internal: gradients of interleaved_matmul_selfatt_valatt. Inputs: output gradient, \
          queries_keys_values, attention; outputs their gradients.",
    inputs: &["ograd", "queries_keys_values", "attention"],
    num_outputs: |_| 2,
    parse: |a| parse_heads(a, "_backward_interleaved_matmul_selfatt_valatt"),
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        outs[1] = ins[2].clone();
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let v = Proj::new(SVA, "queries_keys_values", &i[1].shape, heads(c), 3, 2)?;
        let x = to_f64_vec(&i[1]);
        let att = to_f64_vec(&i[2]);
        let (mut dv, mut datt) = (vec![0f64; x.len()], vec![0f64; att.len()]);
        valatt_backward(&v, &x, &att, &to_f64_vec(&i[0]), v.l, &mut dv, &mut datt);
        write_f64(&o[0], &dv);
        write_f64(&o[1], &datt);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// encoder-decoder attention
// ---------------------------------------------------------------------------

pub static ENCDEC_QK: OpDef = OpDef {
    name: EQK,
    doc: "Encoder-decoder attention scores: queries (Lq, B, heads * D) against the key slices of keys_values \
          (Lk, B, heads * 2 * D) (per head: key, value): (B * heads, Lq, Lk) with entry [b * heads + h, i, j] \
          = q(i, b, h) . k(j, b, h) / sqrt(D). Gradients to both inputs.",
    inputs: &["queries", "keys_values"],
    parse: |a| parse_heads(a, EQK),
    infer_shape: |c, ins, outs| {
        if let (Some(qs), Some(ks)) = (&ins[0], &ins[1]) {
            let q = Proj::new(EQK, "queries", qs, heads(c), 1, 0)?;
            let k = Proj::new(EQK, "keys_values", ks, heads(c), 2, 0)?;
            same_batch(EQK, &q, &k, qs, ks)?;
            outs[0] = Some(vec![q.b * q.h, q.l, k.l]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let q = Proj::new(EQK, "queries", &i[0].shape, heads(c), 1, 0)?;
        let k = Proj::new(EQK, "keys_values", &i[1].shape, heads(c), 2, 0)?;
        let s = 1.0 / (q.d as f64).sqrt();
        write_f64(&o[0], &qk(&q, &k, &to_f64_vec(&i[0]), &to_f64_vec(&i[1]), s));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op(
            "_backward_interleaved_matmul_encdec_qk",
            &fwd_attrs(c),
            &[g[0], x[0], x[1]],
        )?;
        Ok(vec![Some(d[0]), Some(d[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_ENCDEC_QK: OpDef = OpDef {
    name: "_backward_interleaved_matmul_encdec_qk",
    doc: "Internal: gradients of interleaved_matmul_encdec_qk. Inputs: output gradient, queries, keys_values; \
          outputs their gradients.",
    inputs: &["ograd", "queries", "keys_values"],
    num_outputs: |_| 2,
    parse: |a| parse_heads(a, "_backward_interleaved_matmul_encdec_qk"),
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        outs[1] = ins[2].clone();
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let q = Proj::new(EQK, "queries", &i[1].shape, heads(c), 1, 0)?;
        let k = Proj::new(EQK, "keys_values", &i[2].shape, heads(c), 2, 0)?;
        let (x, y) = (to_f64_vec(&i[1]), to_f64_vec(&i[2]));
        let (mut dq, mut dk) = (vec![0f64; x.len()], vec![0f64; y.len()]);
        let s = 1.0 / (q.d as f64).sqrt();
        qk_backward(&q, &k, &x, &y, &to_f64_vec(&i[0]), s, &mut dq, &mut dk);
        write_f64(&o[0], &dq);
        write_f64(&o[1], &dk);
        Ok(())
    }),
    ..OpDef::BASE
};

pub static ENCDEC_VALATT: OpDef = OpDef {
    name: EVA,
    doc: "Encoder-decoder attention output: the value slices of keys_values (Lk, B, heads * 2 * D) weighted \
          by attention (B * heads, Lq, Lk): (Lq, B, heads * D) with entry (i, b, h * D + d) = sum_j \
          attention[b * heads + h, i, j] * v(j, b, h, d). Gradients to both inputs.",
    inputs: &["keys_values", "attention"],
    parse: |a| parse_heads(a, EVA),
    infer_shape: |c, ins, outs| {
        if let (Some(s), Some(att)) = (&ins[0], &ins[1]) {
            let v = Proj::new(EVA, "keys_values", s, heads(c), 2, 1)?;
            if att.len() != 3 {
                return check_att(EVA, att, v.b * v.h, 0, v.l);
            }
            check_att(EVA, att, v.b * v.h, att[1], v.l)?;
            outs[0] = Some(vec![att[1], v.b, v.h * v.d]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let v = Proj::new(EVA, "keys_values", &i[0].shape, heads(c), 2, 1)?;
        let lq = i[1].shape[1];
        write_f64(&o[0], &valatt(&v, &to_f64_vec(&i[0]), &to_f64_vec(&i[1]), lq));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op(
            "_backward_interleaved_matmul_encdec_valatt",
            &fwd_attrs(c),
            &[g[0], x[0], x[1]],
        )?;
        Ok(vec![Some(d[0]), Some(d[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_ENCDEC_VALATT: OpDef = OpDef {
    name: "_backward_interleaved_matmul_encdec_valatt",
    doc: "Internal: gradients of interleaved_matmul_encdec_valatt. Inputs: output gradient, keys_values, \
          attention; outputs their gradients.",
    inputs: &["ograd", "keys_values", "attention"],
    num_outputs: |_| 2,
    parse: |a| parse_heads(a, "_backward_interleaved_matmul_encdec_valatt"),
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        outs[1] = ins[2].clone();
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let v = Proj::new(EVA, "keys_values", &i[1].shape, heads(c), 2, 1)?;
        let x = to_f64_vec(&i[1]);
        let att = to_f64_vec(&i[2]);
        let (mut dv, mut datt) = (vec![0f64; x.len()], vec![0f64; att.len()]);
        valatt_backward(&v, &x, &att, &to_f64_vec(&i[0]), i[2].shape[1], &mut dv, &mut datt);
        write_f64(&o[0], &dv);
        write_f64(&o[1], &datt);
        Ok(())
    }),
    ..OpDef::BASE
};
