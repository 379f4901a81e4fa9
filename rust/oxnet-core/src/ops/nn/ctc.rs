//! Connectionist Temporal Classification loss (Graves et al. 2006) with
//! MXNet 1.9.1's conventions: data (T, N, alphabet) of unnormalised
//! activations, label (N, L) padded with 0 (blank_label='first') or -1
//! ('last'), optional per-sample data and label lengths. The forward-backward
//! recursions run in log space in float64; the data gradient (softmax minus
//! the label occupancy, times the loss's head gradient) is recomputed by the
//! internal `_backward_CTCLoss`.
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpCall, OpDef, Params};

#[derive(Debug, Clone)]
pub struct CtcParam {
    pub use_data_lengths: bool,
    pub use_label_lengths: bool,
    /// blank_label='first' (blank 0, padding 0) or 'last' (blank A-1, padding -1).
    pub blank_first: bool,
}

fn parse_ctc(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(CtcParam {
        use_data_lengths: p.bool("use_data_lengths", false)?,
        use_label_lengths: p.bool("use_label_lengths", false)?,
        blank_first: p.choice("blank_label", "first", &["first", "last"])? == "first",
    }))
}

fn cp(c: &OpCall) -> &CtcParam {
    c.p::<CtcParam>()
}

fn n_inputs(c: &OpCall) -> usize {
    let p = cp(c);
    2 + p.use_data_lengths as usize + p.use_label_lengths as usize
}

/// Checks the input shapes (data, label, then the lengths in use); returns
/// the output shape (N,).
fn ctc_shapes(op: &str, p: &CtcParam, ins: &[Option<Vec<usize>>]) -> Result<Option<Vec<usize>>> {
    let Some(d) = &ins[0] else { return Ok(None) };
    if d.len() != 3 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be 3-D (sequence_length, batch_size, alphabet_size)",
            fmt_shape(d)
        )));
    }
    if d[2] < 2 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} needs an alphabet of at least 2 (one entry is the blank label)",
            fmt_shape(d)
        )));
    }
    let n = d[1];
    if let Some(l) = &ins[1] {
        if l.len() != 2 || l[0] != n {
            return Err(Error::Shape(format!(
                "{op}: label shape {} must be (batch_size, label_sequence_length) with batch_size {n} like \
                 data shape {}",
                fmt_shape(l),
                fmt_shape(d)
            )));
        }
    }
    let mut k = 2;
    for (used, what) in [
        (p.use_data_lengths, "data_lengths"),
        (p.use_label_lengths, "label_lengths"),
    ] {
        if used {
            if let Some(s) = &ins[k] {
                if *s != [n] {
                    return Err(Error::Shape(format!(
                        "{op}: {what} shape {} must be ({n},), one length per sample of data shape {}",
                        fmt_shape(s),
                        fmt_shape(d)
                    )));
                }
            }
            k += 1;
        }
    }
    Ok(Some(vec![n]))
}

/// Per-sample label sequences and data lengths, validated.
struct Batch {
    labels: Vec<Vec<usize>>,
    lengths: Vec<usize>,
}

fn batch(p: &CtcParam, ins: &[crate::ndarray::Blob]) -> Result<Batch> {
    let op = "CTCLoss";
    let (t, n, a) = (ins[0].shape[0], ins[0].shape[1], ins[0].shape[2]);
    let lab = super::to_f64_vec(&ins[1]);
    let width = ins[1].shape[1];
    let mut k = 2;
    let dl = if p.use_data_lengths {
        k += 1;
        Some(super::to_f64_vec(&ins[k - 1]))
    } else {
        None
    };
    let ll = if p.use_label_lengths {
        Some(super::to_f64_vec(&ins[k]))
    } else {
        None
    };
    let pad = if p.blank_first { 0.0 } else { -1.0 };
    let (lo, hi) = if p.blank_first {
        (1, a - 1)
    } else {
        (0, a - 2)
    };
    let mut labels = Vec::with_capacity(n);
    let mut lengths = Vec::with_capacity(n);
    for b in 0..n {
        let row = &lab[b * width..(b + 1) * width];
        let len = match &ll {
            Some(ll) => {
                let v = ll[b];
                if !(v >= 0.0 && v <= width as f64) || v.fract() != 0.0 {
                    return Err(Error::Index(format!(
                        "{op}: label_lengths[{b}] = {v} is not an integer in [0, {width}] (label width)"
                    )));
                }
                v as usize
            }
            // MXNet: the label ends at the first padding value.
            None => row.iter().position(|&v| v == pad).unwrap_or(width),
        };
        let mut seq = Vec::with_capacity(len);
        for (i, &v) in row[..len].iter().enumerate() {
            if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
                return Err(Error::Index(format!(
                    "{op}: label[{b}, {i}] = {v} is not a label id in [{lo}, {hi}] (alphabet_size {a}, \
                     blank_label='{}')",
                    if p.blank_first { "first" } else { "last" }
                )));
            }
            seq.push(v as usize);
        }
        labels.push(seq);
        let tl = match &dl {
            Some(dl) => {
                let v = dl[b];
                if !(v >= 0.0 && v <= t as f64) || v.fract() != 0.0 {
                    return Err(Error::Index(format!(
                        "{op}: data_lengths[{b}] = {v} is not an integer in [0, {t}] (sequence_length)"
                    )));
                }
                v as usize
            }
            None => t,
        };
        lengths.push(tl);
    }
    Ok(Batch { labels, lengths })
}

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Loss of one sample and, when `grad` is given (tl x a, row-major), the
/// gradient of the loss with respect to its activations. `act(t, k)` reads
/// the activations. An infeasible label (longer than the data allows)
/// gives loss 0 and gradient 0, as MXNet does.
fn ctc_one(
    act: &dyn Fn(usize, usize) -> f64,
    tl: usize,
    a: usize,
    blank: usize,
    label: &[usize],
    grad: Option<&mut [f64]>,
) -> f64 {
    let l = label.len();
    let repeats = label.windows(2).filter(|w| w[0] == w[1]).count();
    if l + repeats > tl {
        if let Some(g) = grad {
            g.fill(0.0);
        }
        return 0.0;
    }
    if tl == 0 {
        return 0.0;
    }
    // log-softmax of each step
    let mut lp = vec![0f64; tl * a];
    for t in 0..tl {
        let row = &mut lp[t * a..(t + 1) * a];
        for (k, v) in row.iter_mut().enumerate() {
            *v = act(t, k);
        }
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        let z = m + s.ln();
        row.iter_mut().for_each(|v| *v -= z);
    }
    let s_len = 2 * l + 1;
    let ext = |s: usize| {
        if s.is_multiple_of(2) {
            blank
        } else {
            label[s / 2]
        }
    };
    // s may come from s - 2 (skipping a blank) unless ext(s) is a blank or repeats ext(s - 2)
    let skip = |s: usize| s >= 2 && !s.is_multiple_of(2) && ext(s) != ext(s - 2);
    let ninf = f64::NEG_INFINITY;
    let mut alpha = vec![ninf; tl * s_len];
    alpha[0] = lp[blank];
    if s_len > 1 {
        alpha[1] = lp[ext(1)];
    }
    for t in 1..tl {
        for s in 0..s_len {
            let prev = &alpha[(t - 1) * s_len..t * s_len];
            let mut v = prev[s];
            if s >= 1 {
                v = log_add(v, prev[s - 1]);
            }
            if skip(s) {
                v = log_add(v, prev[s - 2]);
            }
            alpha[t * s_len + s] = if v == ninf {
                ninf
            } else {
                v + lp[t * a + ext(s)]
            };
        }
    }
    let last = &alpha[(tl - 1) * s_len..];
    let logp = if s_len > 1 {
        log_add(last[s_len - 1], last[s_len - 2])
    } else {
        last[0]
    };
    let Some(g) = grad else { return -logp };
    // beta[t][s]: log probability of the rest of the path after being in s at t
    let mut beta = vec![ninf; tl * s_len];
    beta[(tl - 1) * s_len + s_len - 1] = 0.0;
    if s_len > 1 {
        beta[(tl - 1) * s_len + s_len - 2] = 0.0;
    }
    for t in (0..tl - 1).rev() {
        for s in 0..s_len {
            let nx = |s2: usize| beta[(t + 1) * s_len + s2] + lp[(t + 1) * a + ext(s2)];
            let mut v = nx(s);
            if s + 1 < s_len {
                v = log_add(v, nx(s + 1));
            }
            if s + 2 < s_len && skip(s + 2) {
                v = log_add(v, nx(s + 2));
            }
            beta[t * s_len + s] = v;
        }
    }
    for t in 0..tl {
        let mut occ = vec![ninf; a];
        for s in 0..s_len {
            let v = alpha[t * s_len + s] + beta[t * s_len + s];
            occ[ext(s)] = log_add(occ[ext(s)], v);
        }
        for k in 0..a {
            g[t * a + k] = lp[t * a + k].exp() - (occ[k] - logp).exp();
        }
    }
    -logp
}

/// Runs every sample: losses, and gradients (T, N, A) times `ograd` when given.
fn ctc_run(
    p: &CtcParam,
    ins: &[crate::ndarray::Blob],
    ograd: Option<&[f64]>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let bt = batch(p, ins)?;
    let (t, n, a) = (ins[0].shape[0], ins[0].shape[1], ins[0].shape[2]);
    let x = super::to_f64_vec(&ins[0]);
    let blank = if p.blank_first { 0 } else { a - 1 };
    let mut losses = vec![0f64; n];
    let mut grad = if ograd.is_some() {
        vec![0f64; t * n * a]
    } else {
        Vec::new()
    };
    let mut g1 = Vec::new();
    for b in 0..n {
        let tl = bt.lengths[b];
        let act = |tt: usize, k: usize| x[(tt * n + b) * a + k];
        let gb = if ograd.is_some() {
            g1.clear();
            g1.resize(tl * a, 0.0);
            Some(g1.as_mut_slice())
        } else {
            None
        };
        losses[b] = ctc_one(&act, tl, a, blank, &bt.labels[b], gb);
        if let Some(og) = ograd {
            for tt in 0..tl {
                for k in 0..a {
                    grad[(tt * n + b) * a + k] = og[b] * g1[tt * a + k];
                }
            }
        }
    }
    Ok((losses, grad))
}

fn ctc_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    if let Some(t) = ins[0] {
        if !t.is_float() {
            return Err(Error::DType(format!(
                "{}: data dtype {} is not supported (float32, float64 or float16 only)",
                c.name(),
                t.name()
            )));
        }
        for x in ins.iter_mut().skip(1) {
            if x.is_none() {
                *x = Some(t);
            }
        }
        outs[0] = Some(t);
    }
    Ok(())
}

pub static CTC_LOSS: OpDef = OpDef {
    name: "CTCLoss",
    aliases: &["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"],
    doc: "Connectionist Temporal Classification loss. data (sequence_length, batch_size, alphabet_size) holds \
          unnormalised activations (softmax is applied inside); label (batch_size, label_sequence_length) holds \
          label ids. blank_label='first' reserves id 0 for the blank and pads labels with 0; 'last' reserves \
          alphabet_size-1 and pads with -1; a label ends at its first padding value unless use_label_lengths \
          (then label_lengths (batch_size,) gives the lengths). use_data_lengths: data_lengths (batch_size,) \
          gives each sequence's length (default: sequence_length). Returns the loss -log p(label | data) per \
          sample, shape (batch_size,); a label that cannot fit its sequence gives 0 (as MXNet). Gradient for \
          data only.",
    inputs: &["data", "label", "data_lengths", "label_lengths"],
    num_inputs: Some(n_inputs),
    parse: |a| parse_ctc(a, "CTCLoss"),
    infer_shape: |c, ins, outs| {
        if let Some(s) = ctc_shapes("CTCLoss", cp(c), ins)? {
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: ctc_type,
    cpu: Some(|c, i, o, _| {
        let (losses, _) = ctc_run(cp(c), i, None)?;
        super::write_f64(&o[0], &losses);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let mut ins = vec![g[0]];
        ins.extend_from_slice(x);
        let d = b.op1("_backward_CTCLoss", &super::fwd_attrs(c), &ins)?;
        let mut r = vec![Some(d)];
        r.resize(x.len(), None);
        Ok(r)
    }),
    ..OpDef::BASE
};

pub static BACKWARD_CTC_LOSS: OpDef = OpDef {
    name: "_backward_CTCLoss",
    doc: "Internal: data gradient of CTCLoss (softmax minus the label occupancy from the log-space \
          forward-backward recursions, times the output gradient per sample; zero past each data length). \
          Inputs: output gradient, then CTCLoss's inputs.",
    inputs: &["ograd", "data", "label", "data_lengths", "label_lengths"],
    num_inputs: Some(|c| n_inputs(c) + 1),
    parse: |a| parse_ctc(a, "_backward_CTCLoss"),
    infer_shape: |c, ins, outs| {
        if let Some(s) = ctc_shapes("_backward_CTCLoss", cp(c), &ins[1..])? {
            super::fill_shape("_backward_CTCLoss", "output gradient", &mut ins[0], s, "")?;
            outs[0] = ins[1].clone();
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        ctc_type(c, &mut ins[1..], outs)?;
        if ins[0].is_none() {
            ins[0] = outs[0];
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let og = super::to_f64_vec(&i[0]);
        let (_, g) = ctc_run(cp(c), &i[1..], Some(&og))?;
        super::write_f64(&o[0], &g);
        Ok(())
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    /// -log of the summed probability of every alignment collapsing to `label`.
    fn brute(x: &[f64], t: usize, a: usize, label: &[usize]) -> f64 {
        let mut total = 0.0;
        for code in 0..a.pow(t as u32) {
            let path: Vec<usize> = (0..t).map(|i| code / a.pow(i as u32) % a).collect();
            let mut out = Vec::new();
            for (i, &k) in path.iter().enumerate() {
                if k != 0 && (i == 0 || path[i - 1] != k) {
                    out.push(k);
                }
            }
            if out == label {
                let mut p = 1.0;
                for (i, &k) in path.iter().enumerate() {
                    let row = &x[i * a..(i + 1) * a];
                    let z: f64 = row.iter().map(|v| v.exp()).sum();
                    p *= row[k].exp() / z;
                }
                total += p;
            }
        }
        -total.ln()
    }

    #[test]
    fn loss_matches_enumeration_and_gradient() {
        let (t, a) = (4, 3);
        let x = vals(t * a, 1);
        for label in [vec![1.0, 2.0], vec![1.0, 1.0], vec![2.0, 0.0]] {
            let y = call("CTCLoss", &[], &[arr(&x, &[t, 1, a]), arr(&label, &[1, 2])]).unwrap();
            let want: Vec<usize> = label
                .iter()
                .filter(|&&v| v != 0.0)
                .map(|&v| v as usize)
                .collect();
            let got = y[0].to_vec::<f64>().unwrap()[0];
            assert!(
                (got - brute(&x, t, a, &want)).abs() < 1e-10,
                "{label:?}: {got}"
            );
        }
        check_grad(
            "CTCLoss",
            &[("use_data_lengths", "True")],
            &[
                (vals(t * 2 * a, 2), vec![t, 2, a]),
                (vec![1.0, 1.0, 2.0, 0.0], vec![2, 2]),
                (vec![4.0, 3.0], vec![2]),
            ],
            &[0],
        );
    }
}
