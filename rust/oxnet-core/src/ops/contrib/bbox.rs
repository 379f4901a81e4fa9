//! Bounding-box operators of MXNet's contrib namespace: box_iou, box_nms,
//! bipartite_matching, box_encode, box_decode and MultiBoxPrior. Boxes are
//! "corner" [xmin, ymin, xmax, ymax] or "center" [x, y, width, height];
//! areas of boxes with negative width or height are 0 and an IoU whose
//! union is not positive is 0, as in MXNet.
use super::zero_grads;
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::nn::{fwd_attrs, infer_float_same, to_f64_vec, write_f64};
use crate::ops::registry::{OpCall, OpDef, Params};

fn parse_format(a: &Attrs, op: &str, key: &str, default: &str) -> Result<bool> {
    Ok(a.p(op).choice(key, default, &["center", "corner"])? == "corner")
}

/// A box as corners.
fn corners(b: &[f64], corner: bool) -> [f64; 4] {
    if corner {
        [b[0], b[1], b[2], b[3]]
    } else {
        [
            b[0] - b[2] / 2.0,
            b[1] - b[3] / 2.0,
            b[0] + b[2] / 2.0,
            b[1] + b[3] / 2.0,
        ]
    }
}

fn area(b: &[f64; 4]) -> f64 {
    let (w, h) = (b[2] - b[0], b[3] - b[1]);
    if w < 0.0 || h < 0.0 {
        0.0
    } else {
        w * h
    }
}

fn iou(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let i = w * h;
    let u = area(a) + area(b) - i;
    if u > 0.0 {
        i / u
    } else {
        0.0
    }
}

fn last_is_4(op: &str, what: &str, s: &[usize]) -> Result<()> {
    if s.last() != Some(&4) {
        return Err(Error::Shape(format!(
            "{op}: {what} shape {} must end with 4 box coordinates",
            fmt_shape(s)
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// box_iou
// ---------------------------------------------------------------------------

pub static BOX_IOU: OpDef = OpDef {
    name: "_contrib_box_iou",
    doc: "Intersection over union of every pair of boxes: lhs (a1, ..., an, 4), rhs (b1, ..., bm, 4) give \
          (a1, ..., an, b1, ..., bm). format 'corner' (default, [xmin, ymin, xmax, ymax]) or 'center' ([x, \
          y, width, height]). Zero gradients, as MXNet.",
    inputs: &["lhs", "rhs"],
    parse: |a| Ok(Box::new(parse_format(a, "_contrib_box_iou", "format", "corner")?) as Params),
    infer_shape: |_, ins, outs| {
        if let (Some(l), Some(r)) = (&ins[0], &ins[1]) {
            last_is_4("_contrib_box_iou", "lhs", l)?;
            last_is_4("_contrib_box_iou", "rhs", r)?;
            let mut o = l[..l.len() - 1].to_vec();
            o.extend_from_slice(&r[..r.len() - 1]);
            outs[0] = Some(o);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let corner = *c.p::<bool>();
        let l: Vec<[f64; 4]> = to_f64_vec(&i[0])
            .chunks(4)
            .map(|b| corners(b, corner))
            .collect();
        let r: Vec<[f64; 4]> = to_f64_vec(&i[1])
            .chunks(4)
            .map(|b| corners(b, corner))
            .collect();
        let mut y = Vec::with_capacity(l.len() * r.len());
        for a in &l {
            for b in &r {
                y.push(iou(a, b));
            }
        }
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// box_nms
// ---------------------------------------------------------------------------

pub struct Nms {
    overlap: f64,
    valid: f64,
    topk: i64,
    coord: usize,
    score: usize,
    id: Option<usize>,
    background: i64,
    force: bool,
    in_corner: bool,
    out_corner: bool,
}

fn parse_nms(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let idx = |k: &str, d: i64| -> Result<i64> { p.i64(k, d) };
    let coord = idx("coord_start", 2)?;
    let score = idx("score_index", 1)?;
    let id = idx("id_index", -1)?;
    if coord < 0 || score < 0 {
        return Err(Error::Param(format!(
            "{op}: coord_start {coord} and score_index {score} must be non-negative"
        )));
    }
    Ok(Box::new(Nms {
        overlap: p.f64("overlap_thresh", 0.5)?,
        valid: p.f64("valid_thresh", 0.0)?,
        topk: p.i64("topk", -1)?,
        coord: coord as usize,
        score: score as usize,
        id: (id >= 0).then_some(id as usize),
        background: p.i64("background_id", -1)?,
        force: p.bool("force_suppress", false)?,
        in_corner: parse_format(a, op, "in_format", "corner")?,
        out_corner: parse_format(a, op, "out_format", "corner")?,
    }))
}

fn nms_check(op: &str, p: &Nms, s: &[usize]) -> Result<()> {
    if s.len() < 2 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must have at least 2 dimensions (..., num_boxes, width)",
            fmt_shape(s)
        )));
    }
    let k = s[s.len() - 1];
    let worst = [
        ("coord_start + 3", p.coord + 3),
        ("score_index", p.score),
        ("id_index", p.id.unwrap_or(0)),
    ];
    for (what, v) in worst {
        if v >= k {
            return Err(Error::Shape(format!(
                "{op}: {what} = {v} is outside the rows of data shape {} (width {k})",
                fmt_shape(s)
            )));
        }
    }
    Ok(())
}

/// For each batch, the data rows of the output rows in order (the kept
/// boxes by descending score; the rest of the output is -1).
fn nms_rows(p: &Nms, x: &[f64], s: &[usize]) -> Vec<Vec<usize>> {
    let k = s[s.len() - 1];
    let n = s[s.len() - 2];
    let batches = x.len().checked_div(n * k).unwrap_or(0);
    (0..batches)
        .map(|b| {
            let row = |r: usize| &x[(b * n + r) * k..(b * n + r + 1) * k];
            let mut order: Vec<usize> = (0..n)
                .filter(|&r| {
                    let v = row(r);
                    v[p.score] > p.valid
                        && p.id
                            .is_none_or(|i| p.background < 0 || v[i] != p.background as f64)
                })
                .collect();
            order.sort_by(|&a, &b| {
                row(b)[p.score]
                    .partial_cmp(&row(a)[p.score])
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            if p.topk > 0 {
                order.truncate(p.topk as usize);
            }
            let boxes: Vec<[f64; 4]> = order
                .iter()
                .map(|&r| corners(&row(r)[p.coord..p.coord + 4], p.in_corner))
                .collect();
            let mut keep = vec![true; order.len()];
            for i in 0..order.len() {
                if !keep[i] {
                    continue;
                }
                for j in i + 1..order.len() {
                    if !keep[j] {
                        continue;
                    }
                    let same = match p.id {
                        Some(c) if !p.force => row(order[i])[c] == row(order[j])[c],
                        _ => true,
                    };
                    if same && iou(&boxes[i], &boxes[j]) > p.overlap {
                        keep[j] = false;
                    }
                }
            }
            order
                .into_iter()
                .zip(keep)
                .filter_map(|(r, k)| k.then_some(r))
                .collect()
        })
        .collect()
}

fn nms_infer_shape(op: &str, c: &OpCall, d: &[usize]) -> Result<Vec<usize>> {
    nms_check(op, c.p::<Nms>(), d)?;
    Ok(d.to_vec())
}

pub static BOX_NMS: OpDef = OpDef {
    name: "_contrib_box_nms",
    aliases: &["_contrib_box_non_maximum_suppression"],
    doc: "Non-maximum suppression of boxes. data (..., N, K): rows hold a score at score_index, 4 coordinates \
          from coord_start (in_format 'corner' or 'center') and optionally a class id at id_index. Rows with \
          score <= valid_thresh, or whose id is background_id, are dropped; the rest are sorted by descending \
          score, only the first topk kept (topk > 0), and greedily a row suppresses later rows whose IoU with \
          it exceeds overlap_thresh (only rows of its class when id_index is given and force_suppress is \
          false). Output: data's shape, the kept rows sorted by descending score (coordinates written in \
          out_format), then rows of -1. Gradient: each output row's gradient goes to the data row it came \
          from; suppressed rows get 0.",
    parse: |a| parse_nms(a, "_contrib_box_nms"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(nms_infer_shape("_contrib_box_nms", c, d)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Nms>();
        let s = &i[0].shape;
        let x = to_f64_vec(&i[0]);
        let (n, k) = (s[s.len() - 2], s[s.len() - 1]);
        let mut y = vec![-1f64; x.len()];
        for (b, rows) in nms_rows(p, &x, s).into_iter().enumerate() {
            for (q, r) in rows.into_iter().enumerate() {
                let dst = &mut y[(b * n + q) * k..(b * n + q + 1) * k];
                dst.copy_from_slice(&x[(b * n + r) * k..(b * n + r + 1) * k]);
                if p.in_corner != p.out_corner {
                    let v = &mut dst[p.coord..p.coord + 4];
                    let (a0, a1, a2, a3) = (v[0], v[1], v[2], v[3]);
                    if p.out_corner {
                        v.copy_from_slice(&corners(&[a0, a1, a2, a3], false));
                    } else {
                        v.copy_from_slice(&[
                            (a0 + a2) / 2.0,
                            (a1 + a3) / 2.0,
                            a2 - a0,
                            a3 - a1,
                        ]);
                    }
                }
            }
        }
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_contrib_box_nms", &fwd_attrs(c), &[g[0], x[0]])?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_BOX_NMS: OpDef = OpDef {
    name: "_backward_contrib_box_nms",
    doc: "Internal: data gradient of box_nms (each output row's gradient copied to the data row it came \
          from). Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_nms(a, "_backward_contrib_box_nms"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            let s = nms_infer_shape("_backward_contrib_box_nms", c, &d)?;
            crate::ops::nn::fill_shape(
                "_backward_contrib_box_nms",
                "output gradient",
                &mut ins[0],
                s.clone(),
                "",
            )?;
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let s = &i[1].shape;
        let g = to_f64_vec(&i[0]);
        let x = to_f64_vec(&i[1]);
        let (n, k) = (s[s.len() - 2], s[s.len() - 1]);
        let mut dx = vec![0f64; x.len()];
        for (b, rows) in nms_rows(c.p::<Nms>(), &x, s).into_iter().enumerate() {
            for (q, r) in rows.into_iter().enumerate() {
                dx[(b * n + r) * k..(b * n + r + 1) * k]
                    .copy_from_slice(&g[(b * n + q) * k..(b * n + q + 1) * k]);
            }
        }
        write_f64(&o[0], &dx);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// bipartite_matching
// ---------------------------------------------------------------------------

struct Bipartite {
    ascend: bool,
    threshold: f64,
    topk: i64,
}

pub static BIPARTITE_MATCHING: OpDef = OpDef {
    name: "_contrib_bipartite_matching",
    doc: "Greedy bipartite matching of a score matrix data (..., N, M): repeatedly match the best remaining \
          (row, column) pair (highest score, or lowest with is_ascend) whose row and column are both free, \
          stopping at the first score below threshold (above it with is_ascend). With topk > 0 matching \
          stops once more than topk pairs are matched (MXNet 1.9.1 thus makes at most topk + 1 matches). \
          Returns the matched column of every row (..., N) and the matched row of every column (..., M), -1 \
          where unmatched, in data's dtype. Zero gradients.",
    parse: |a| {
        let p = a.p("_contrib_bipartite_matching");
        Ok(Box::new(Bipartite {
            ascend: p.bool("is_ascend", false)?,
            threshold: p.f64_req("threshold")?,
            topk: p.i64("topk", -1)?,
        }) as Params)
    },
    num_outputs: |_| 2,
    infer_shape: |_, ins, outs| {
        if let Some(s) = &ins[0] {
            if s.len() < 2 {
                return Err(Error::Shape(format!(
                    "_contrib_bipartite_matching: data shape {} must have at least 2 dimensions (..., N, M)",
                    fmt_shape(s)
                )));
            }
            let m = s[s.len() - 1];
            outs[0] = Some(s[..s.len() - 1].to_vec());
            let mut c = s[..s.len() - 2].to_vec();
            c.push(m);
            outs[1] = Some(c);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut o = [None];
        infer_float_same(c, ins, &mut o)?;
        outs[0] = ins[0];
        outs[1] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Bipartite>();
        let s = &i[0].shape;
        let (n, m) = (s[s.len() - 2], s[s.len() - 1]);
        let x = to_f64_vec(&i[0]);
        let batches = x.len().checked_div(n * m).unwrap_or(0);
        let mut rows = vec![-1f64; batches * n];
        let mut cols = vec![-1f64; batches * m];
        for b in 0..batches {
            let sc = &x[b * n * m..(b + 1) * n * m];
            let mut order: Vec<usize> = (0..n * m).collect();
            order.sort_by(|&u, &v| {
                let o = sc[u]
                    .partial_cmp(&sc[v])
                    .unwrap_or(std::cmp::Ordering::Equal);
                if p.ascend {
                    o
                } else {
                    o.reverse()
                }
            });
            let (rr, cc) = (&mut rows[b * n..(b + 1) * n], &mut cols[b * m..(b + 1) * m]);
            let mut count = 0i64;
            for f in order {
                let (r, col) = (f / m, f % m);
                if rr[r] != -1.0 || cc[col] != -1.0 {
                    continue;
                }
                if p.topk > 0 && count > p.topk {
                    break;
                }
                let v = sc[f];
                if (p.ascend && v > p.threshold) || (!p.ascend && v < p.threshold) {
                    break;
                }
                rr[r] = col as f64;
                cc[col] = r as f64;
                count += 1;
            }
        }
        write_f64(&o[0], &rows);
        write_f64(&o[1], &cols);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// box_encode / box_decode
// ---------------------------------------------------------------------------

fn center_of(b: &[f64]) -> [f64; 4] {
    let (w, h) = (b[2] - b[0], b[3] - b[1]);
    [b[0] + w / 2.0, b[1] + h / 2.0, w, h]
}

pub static BOX_ENCODE: OpDef = OpDef {
    name: "_contrib_box_encode",
    doc: "Encode training targets of matched boxes as normalised center offsets. samples (B, N): > 0.5 marks \
          a positive anchor; matches (B, N): the ref row each anchor matches; anchors (B, N, 4) and refs (B, \
          M, 4) in corner format; means (4,) and stds (4,). For a positive anchor a matched to ref g (both as \
          centers): ((gx - ax) / aw, (gy - ay) / ah, log(gw / aw), log(gh / ah)), minus means, divided by \
          stds. Returns targets (B, N, 4) and masks (B, N, 4): 1 for positive anchors, 0 (and target 0) \
          otherwise. Zero gradients.",
    inputs: &["samples", "matches", "anchors", "refs", "means", "stds"],
    num_outputs: |_| 2,
    infer_shape: |_, ins, outs| {
        const OP: &str = "_contrib_box_encode";
        if let (Some(s), Some(mt), Some(a), Some(r)) = (
            ins[0].clone(),
            ins[1].clone(),
            ins[2].clone(),
            ins[3].clone(),
        ) {
            let ok = s.len() == 2
                && mt == s
                && a.len() == 3
                && a[..2] == s[..]
                && a[2] == 4
                && r.len() == 3
                && r[0] == s[0]
                && r[2] == 4;
            if !ok {
                return Err(Error::Shape(format!(
                    "{OP}: expected samples (B, N), matches (B, N), anchors (B, N, 4), refs (B, M, 4); got \
                     samples {}, matches {}, anchors {}, refs {}",
                    fmt_shape(&s),
                    fmt_shape(&mt),
                    fmt_shape(&a),
                    fmt_shape(&r)
                )));
            }
            for k in [4, 5] {
                crate::ops::nn::fill_shape(
                    OP,
                    if k == 4 { "means" } else { "stds" },
                    &mut ins[k],
                    vec![4],
                    "",
                )?;
            }
            outs[0] = Some(a.clone());
            outs[1] = Some(a.clone());
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut o = [None];
        infer_float_same(c, &mut ins[2..4], &mut o)?;
        for k in [0, 1, 4, 5] {
            if ins[k].is_none() {
                ins[k] = ins[2];
            }
        }
        outs[0] = ins[2];
        outs[1] = ins[2];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (samples, matches, anchors, refs) = (
            to_f64_vec(&i[0]),
            to_f64_vec(&i[1]),
            to_f64_vec(&i[2]),
            to_f64_vec(&i[3]),
        );
        let (means, stds) = (to_f64_vec(&i[4]), to_f64_vec(&i[5]));
        let (bn, n) = (i[0].shape[0], i[0].shape[1]);
        let m = i[3].shape[1];
        let mut t = vec![0f64; bn * n * 4];
        let mut mask = vec![0f64; bn * n * 4];
        for b in 0..bn {
            for j in 0..n {
                let f = b * n + j;
                if samples[f] <= 0.5 {
                    continue;
                }
                let g = matches[f];
                if !(g >= 0.0 && (g as usize) < m) {
                    return Err(Error::Index(format!(
                        "_contrib_box_encode: matches[{b}, {j}] = {g} is not a row of refs (M = {m})"
                    )));
                }
                let a = center_of(&anchors[f * 4..f * 4 + 4]);
                let r0 = (b * m + g as usize) * 4;
                let r = center_of(&refs[r0..r0 + 4]);
                let v = [
                    (r[0] - a[0]) / a[2],
                    (r[1] - a[1]) / a[3],
                    (r[2] / a[2]).ln(),
                    (r[3] / a[3]).ln(),
                ];
                for q in 0..4 {
                    t[f * 4 + q] = (v[q] - means[q]) / stds[q];
                    mask[f * 4 + q] = 1.0;
                }
            }
        }
        write_f64(&o[0], &t);
        write_f64(&o[1], &mask);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

struct Decode {
    std: [f64; 4],
    clip: f64,
    corner: bool,
}

pub static BOX_DECODE: OpDef = OpDef {
    name: "_contrib_box_decode",
    doc: "Decode predicted center offsets into corner boxes. data (B, N, 4) offsets (dx, dy, dw, dh), \
          anchors (1 or B, N, 4) in format 'center' (default) or 'corner'. With the anchor as center (ax, ay, \
          aw, ah): x = dx * std0 * aw + ax, y = dy * std1 * ah + ay, w = exp(min(dw * std2, clip)) * aw, h = \
          exp(min(dh * std3, clip)) * ah (clip applies when > 0); returns (B, N, 4) [x - w/2, y - h/2, x + \
          w/2, y + h/2]. Zero gradients, as MXNet.",
    inputs: &["data", "anchors"],
    parse: |a| {
        let op = "_contrib_box_decode";
        let p = a.p(op);
        Ok(Box::new(Decode {
            std: [
                p.f64("std0", 1.0)?,
                p.f64("std1", 1.0)?,
                p.f64("std2", 1.0)?,
                p.f64("std3", 1.0)?,
            ],
            clip: p.f64("clip", -1.0)?,
            corner: parse_format(a, op, "format", "center")?,
        }) as Params)
    },
    infer_shape: |_, ins, outs| {
        if let (Some(d), Some(a)) = (&ins[0], &ins[1]) {
            let ok = d.len() == 3
                && d[2] == 4
                && a.len() == 3
                && a[2] == 4
                && a[1] == d[1]
                && (a[0] == 1 || a[0] == d[0]);
            if !ok {
                return Err(Error::Shape(format!(
                    "_contrib_box_decode: expected data (B, N, 4) and anchors (1 or B, N, 4); got data {}, \
                     anchors {}",
                    fmt_shape(d),
                    fmt_shape(a)
                )));
            }
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Decode>();
        let d = to_f64_vec(&i[0]);
        let an = to_f64_vec(&i[1]);
        let (n, ab) = (i[0].shape[1], i[1].shape[0]);
        let mut y = vec![0f64; d.len()];
        for (f, (dv, yv)) in d.chunks(4).zip(y.chunks_mut(4)).enumerate() {
            let k = if ab == 1 { f % n } else { f };
            let av = &an[k * 4..k * 4 + 4];
            let a = if p.corner {
                center_of(av)
            } else {
                [av[0], av[1], av[2], av[3]]
            };
            let x = dv[0] * p.std[0] * a[2] + a[0];
            let yy = dv[1] * p.std[1] * a[3] + a[1];
            let (mut dw, mut dh) = (dv[2] * p.std[2], dv[3] * p.std[3]);
            if p.clip > 0.0 {
                dw = dw.min(p.clip);
                dh = dh.min(p.clip);
            }
            let (w, h) = (dw.exp() * a[2] / 2.0, dh.exp() * a[3] / 2.0);
            yv.copy_from_slice(&[x - w, yy - h, x + w, yy + h]);
        }
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// MultiBoxPrior
// ---------------------------------------------------------------------------

struct Prior {
    sizes: Vec<f64>,
    ratios: Vec<f64>,
    clip: bool,
    steps: (f64, f64),
    offsets: (f64, f64),
}

fn pair(op: &str, k: &str, v: Option<Vec<f64>>, d: (f64, f64)) -> Result<(f64, f64)> {
    match v {
        None => Ok(d),
        Some(v) if v.len() == 2 => Ok((v[0], v[1])),
        Some(v) => Err(Error::Param(format!(
            "{op}: argument '{k}' must have 2 values (y, x), got {v:?}"
        ))),
    }
}

pub static MULTIBOX_PRIOR: OpDef = OpDef {
    name: "_contrib_MultiBoxPrior",
    doc: "Anchor boxes for every pixel of data (N, C, H, W): at pixel (i, j) the center is ((j + offsets[1]) \
          * steps[1], (i + offsets[0]) * steps[0]) (steps -1: 1/W and 1/H); one box per size with ratios[0], \
          then one per further ratio with sizes[0]; a box of size s and ratio r has width s * H / W * \
          sqrt(r) and height s / sqrt(r). Returns (1, H * W * (len(sizes) + len(ratios) - 1), 4) corner \
          boxes, clipped to [0, 1] when clip. float32 only, as MXNet. Zero gradients.",
    parse: |a| {
        let op = "_contrib_MultiBoxPrior";
        let p = a.p(op);
        let sizes = p.floats("sizes")?.unwrap_or_else(|| vec![1.0]);
        let ratios = p.floats("ratios")?.unwrap_or_else(|| vec![1.0]);
        if sizes.is_empty() || ratios.is_empty() {
            return Err(Error::Param(format!(
                "{op}: sizes and ratios must not be empty"
            )));
        }
        if sizes.iter().chain(&ratios).any(|&v| v <= 0.0) {
            return Err(Error::Param(format!(
                "{op}: sizes {sizes:?} and ratios {ratios:?} must be positive"
            )));
        }
        Ok(Box::new(Prior {
            clip: p.bool("clip", false)?,
            steps: pair(op, "steps", p.floats("steps")?, (-1.0, -1.0))?,
            offsets: pair(op, "offsets", p.floats("offsets")?, (0.5, 0.5))?,
            sizes,
            ratios,
        }) as Params)
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            if s.len() != 4 {
                return Err(Error::Shape(format!(
                    "_contrib_MultiBoxPrior: data shape {} must be 4-D (N, C, H, W)",
                    fmt_shape(s)
                )));
            }
            let p = c.p::<Prior>();
            let a = p.sizes.len() + p.ratios.len() - 1;
            outs[0] = Some(vec![1, s[2] * s[3] * a, 4]);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if let Some(t) = ins[0] {
            if t != DType::F32 {
                return Err(Error::DType(format!(
                    "_contrib_MultiBoxPrior: dtype {} is not supported (float32 only, as MXNet)",
                    t.name()
                )));
            }
        }
        outs[0] = Some(DType::F32);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Prior>();
        let (h, w) = (i[0].shape[2], i[0].shape[3]);
        let sy = if p.steps.0 > 0.0 {
            p.steps.0
        } else {
            1.0 / h as f64
        };
        let sx = if p.steps.1 > 0.0 {
            p.steps.1
        } else {
            1.0 / w as f64
        };
        let aspect = h as f64 / w as f64;
        let mut shapes: Vec<(f64, f64)> = Vec::new();
        let r0 = p.ratios[0].sqrt();
        for &s in &p.sizes {
            shapes.push((s * aspect * r0 / 2.0, s / r0 / 2.0));
        }
        for &r in &p.ratios[1..] {
            let r = r.sqrt();
            shapes.push((p.sizes[0] * aspect * r / 2.0, p.sizes[0] / r / 2.0));
        }
        let mut y = Vec::with_capacity(h * w * shapes.len() * 4);
        for r in 0..h {
            let cy = (r as f64 + p.offsets.0) * sy;
            for col in 0..w {
                let cx = (col as f64 + p.offsets.1) * sx;
                for &(hw, hh) in &shapes {
                    let b = [cx - hw, cy - hh, cx + hw, cy + hh];
                    y.extend(b.iter().map(|&v| if p.clip { v.clamp(0.0, 1.0) } else { v }));
                }
            }
        }
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// MultiBoxDetection
// ---------------------------------------------------------------------------

struct Detect {
    clip: bool,
    threshold: f64,
    nms: f64,
    force: bool,
    var: [f64; 4],
    topk: i64,
}

fn variances(op: &str, a: &Attrs) -> Result<[f64; 4]> {
    match a.p(op).floats("variances")? {
        None => Ok([0.1, 0.1, 0.2, 0.2]),
        Some(v) if v.len() == 4 => Ok([v[0], v[1], v[2], v[3]]),
        Some(v) => Err(Error::Param(format!(
            "{op}: argument 'variances' must have 4 values, got {v:?}"
        ))),
    }
}

pub static MULTIBOX_DETECTION: OpDef = OpDef {
    name: "_contrib_MultiBoxDetection",
    doc: "Turn multibox predictions into detections. cls_prob (B, C, A) class probabilities with class 0 the \
          background, loc_pred (B, A * 4) offsets, anchor (1, A, 4) corner boxes. Each anchor takes its most \
          probable non-background class (kept when the probability is >= threshold) and its box decoded like \
          box_decode with stds = variances (clipped to [0, 1] when clip). Rows [class - 1, score, xmin, ymin, \
          xmax, ymax] of the kept anchors are sorted by descending score (with nms_topk > 0 only the first \
          nms_topk, the others keeping their place with id -1, as MXNet 1.9.1), then non-maximum suppression \
          at nms_threshold (per class unless force_suppress) sets the id of suppressed rows to -1; unused rows \
          are -1. Output (B, A, 6). background_id is accepted but, as in MXNet 1.9.1, class 0 is the \
          background. Zero gradients.",
    inputs: &["cls_prob", "loc_pred", "anchor"],
    parse: |a| {
        let op = "_contrib_MultiBoxDetection";
        let p = a.p(op);
        p.i64("background_id", 0)?;
        Ok(Box::new(Detect {
            clip: p.bool("clip", true)?,
            threshold: p.f64("threshold", 0.01)?,
            nms: p.f64("nms_threshold", 0.5)?,
            force: p.bool("force_suppress", false)?,
            var: variances(op, a)?,
            topk: p.i64("nms_topk", -1)?,
        }) as Params)
    },
    infer_shape: |_, ins, outs| {
        if let (Some(cp), Some(l), Some(an)) = (&ins[0], &ins[1], &ins[2]) {
            let ok = cp.len() == 3
                && cp[1] >= 1
                && l.len() == 2
                && l[0] == cp[0]
                && l[1] == cp[2] * 4
                && an.len() == 3
                && an[0] == 1
                && an[1] == cp[2]
                && an[2] == 4;
            if !ok {
                return Err(Error::Shape(format!(
                    "_contrib_MultiBoxDetection: expected cls_prob (B, C, A), loc_pred (B, A * 4), anchor (1, \
                     A, 4); got cls_prob {}, loc_pred {}, anchor {}",
                    fmt_shape(cp),
                    fmt_shape(l),
                    fmt_shape(an)
                )));
            }
            outs[0] = Some(vec![cp[0], cp[2], 6]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Detect>();
        let (bn, nc, na) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
        let (cp, lp, an) = (to_f64_vec(&i[0]), to_f64_vec(&i[1]), to_f64_vec(&i[2]));
        let mut y = vec![-1f64; bn * na * 6];
        for b in 0..bn {
            let out = &mut y[b * na * 6..(b + 1) * na * 6];
            let mut rows: Vec<[f64; 6]> = Vec::new();
            for a in 0..na {
                let (mut score, mut id) = (-1f64, 0usize);
                for j in 1..nc {
                    let v = cp[(b * nc + j) * na + a];
                    if v > score {
                        score = v;
                        id = j;
                    }
                }
                if id == 0 || score < p.threshold {
                    continue;
                }
                let ab = center_of(&an[a * 4..a * 4 + 4]);
                let d = &lp[(b * na + a) * 4..(b * na + a) * 4 + 4];
                let x = d[0] * p.var[0] * ab[2] + ab[0];
                let yy = d[1] * p.var[1] * ab[3] + ab[1];
                let w = (d[2] * p.var[2]).exp() * ab[2] / 2.0;
                let h = (d[3] * p.var[3]).exp() * ab[3] / 2.0;
                let mut bx = [x - w, yy - h, x + w, yy + h];
                if p.clip {
                    bx.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
                }
                rows.push([(id - 1) as f64, score, bx[0], bx[1], bx[2], bx[3]]);
            }
            for (k, r) in rows.iter().enumerate() {
                out[k * 6..k * 6 + 6].copy_from_slice(r);
            }
            let mut nkeep = rows.len();
            if p.topk > 0 && (p.topk as usize) < nkeep {
                nkeep = p.topk as usize;
                for k in nkeep..rows.len() {
                    out[k * 6] = -1.0;
                }
            }
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by(|&u, &v| {
                rows[v][1]
                    .partial_cmp(&rows[u][1])
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            for (k, &r) in order.iter().take(nkeep).enumerate() {
                out[k * 6..k * 6 + 6].copy_from_slice(&rows[r]);
            }
            for u in 0..nkeep {
                if out[u * 6] < 0.0 {
                    continue;
                }
                for v in u + 1..nkeep {
                    if out[v * 6] < 0.0 || (!p.force && out[v * 6] != out[u * 6]) {
                        continue;
                    }
                    let bu = [out[u * 6 + 2], out[u * 6 + 3], out[u * 6 + 4], out[u * 6 + 5]];
                    let bv = [out[v * 6 + 2], out[v * 6 + 3], out[v * 6 + 4], out[v * 6 + 5]];
                    if iou(&bu, &bv) > p.nms {
                        out[v * 6] = -1.0;
                    }
                }
            }
        }
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// MultiBoxTarget
// ---------------------------------------------------------------------------

struct Target {
    overlap: f64,
    ignore: f64,
    ratio: f64,
    mining_thresh: f64,
    var: [f64; 4],
}

pub static MULTIBOX_TARGET: OpDef = OpDef {
    name: "_contrib_MultiBoxTarget",
    doc: "Training targets for multibox detection. anchor (1, A, 4) corner boxes, label (B, L, W >= 5) rows \
          [class, xmin, ymin, xmax, ymax, ...] ending at the first row whose class is -1, cls_pred (B, C, A) \
          class scores (used for negative mining). Anchors are matched greedily to ground truths by highest \
          IoU (each ground truth gets its best free anchor), then every other anchor whose best IoU exceeds \
          overlap_threshold matches its best ground truth. Matched anchors are positive: cls_target = class + \
          1, loc_target = the box_encode offsets divided by variances, loc_mask = 1. Without mining \
          (negative_mining_ratio <= 0) all other anchors are negatives (cls_target 0); with it, only the \
          int(positives * negative_mining_ratio) unmatched anchors whose best IoU is below \
          negative_mining_thresh and whose softmax background probability is lowest are negatives, the rest \
          get ignore_label. A sample without ground truth gets ignore_label everywhere. \
          minimum_negative_samples is accepted and, as in MXNet 1.9.1's CPU kernel, has no effect; when \
          fewer anchors qualify than the ratio asks, all of them are negatives (MXNet raises). Returns \
          loc_target (B, A * 4), loc_mask (B, A * 4), cls_target (B, A). Zero gradients.",
    inputs: &["anchor", "label", "cls_pred"],
    num_outputs: |_| 3,
    parse: |a| {
        let op = "_contrib_MultiBoxTarget";
        let p = a.p(op);
        p.i64("minimum_negative_samples", 0)?;
        Ok(Box::new(Target {
            overlap: p.f64("overlap_threshold", 0.5)?,
            ignore: p.f64("ignore_label", -1.0)?,
            ratio: p.f64("negative_mining_ratio", -1.0)?,
            mining_thresh: p.f64("negative_mining_thresh", 0.5)?,
            var: variances(op, a)?,
        }) as Params)
    },
    infer_shape: |_, ins, outs| {
        if let (Some(an), Some(l), Some(cp)) = (&ins[0], &ins[1], &ins[2]) {
            let ok = an.len() == 3
                && an[0] == 1
                && an[2] == 4
                && l.len() == 3
                && l[2] >= 5
                && cp.len() == 3
                && cp[0] == l[0]
                && cp[2] == an[1];
            if !ok {
                return Err(Error::Shape(format!(
                    "_contrib_MultiBoxTarget: expected anchor (1, A, 4), label (B, L, W >= 5), cls_pred (B, C, \
                     A); got anchor {}, label {}, cls_pred {}",
                    fmt_shape(an),
                    fmt_shape(l),
                    fmt_shape(cp)
                )));
            }
            let (b, a) = (l[0], an[1]);
            outs[0] = Some(vec![b, a * 4]);
            outs[1] = Some(vec![b, a * 4]);
            outs[2] = Some(vec![b, a]);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut o = [None];
        infer_float_same(c, ins, &mut o)?;
        for x in outs.iter_mut() {
            *x = ins[0];
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Target>();
        let (an, lab, cp) = (to_f64_vec(&i[0]), to_f64_vec(&i[1]), to_f64_vec(&i[2]));
        let na = i[0].shape[1];
        let (bn, nl, lw) = (i[1].shape[0], i[1].shape[1], i[1].shape[2]);
        let nc = i[2].shape[1];
        let anchors: Vec<[f64; 4]> = an.chunks(4).map(|b| [b[0], b[1], b[2], b[3]]).collect();
        let mut loc = vec![0f64; bn * na * 4];
        let mut mask = vec![0f64; bn * na * 4];
        let mut cls = vec![p.ignore; bn * na];
        for b in 0..bn {
            let rows = &lab[b * nl * lw..(b + 1) * nl * lw];
            let ng = (0..nl).take_while(|&g| rows[g * lw] != -1.0).count();
            if ng == 0 {
                continue;
            }
            let gts: Vec<[f64; 4]> = (0..ng)
                .map(|g| {
                    let r = &rows[g * lw + 1..g * lw + 5];
                    [r[0], r[1], r[2], r[3]]
                })
                .collect();
            let ov: Vec<f64> = anchors
                .iter()
                .flat_map(|a| gts.iter().map(move |g| iou(a, g)))
                .collect();
            // -1: unassigned, 1: positive, 0: negative
            let mut flag = vec![-1i8; na];
            let mut matched = vec![usize::MAX; na];
            let mut gt_done = vec![false; ng];
            loop {
                let mut best = (1e-6, usize::MAX, usize::MAX);
                for a in 0..na {
                    if flag[a] == 1 {
                        continue;
                    }
                    for (g, &done) in gt_done.iter().enumerate() {
                        if !done && ov[a * ng + g] > best.0 {
                            best = (ov[a * ng + g], a, g);
                        }
                    }
                }
                if best.1 == usize::MAX {
                    break;
                }
                flag[best.1] = 1;
                matched[best.1] = best.2;
                gt_done[best.2] = true;
            }
            let best_gt = |a: usize| -> (f64, usize) {
                (0..ng).fold((-1.0, 0), |m, g| {
                    if ov[a * ng + g] > m.0 {
                        (ov[a * ng + g], g)
                    } else {
                        m
                    }
                })
            };
            if p.overlap > 0.0 {
                for a in 0..na {
                    let (v, g) = best_gt(a);
                    if flag[a] != 1 && v > p.overlap {
                        flag[a] = 1;
                        matched[a] = g;
                    }
                }
            }
            if p.ratio > 0.0 {
                let npos = flag.iter().filter(|&&f| f == 1).count();
                let nneg = ((npos as f64 * p.ratio) as usize).min(na - npos);
                let mut cand: Vec<(f64, usize)> = (0..na)
                    .filter(|&a| flag[a] != 1 && best_gt(a).0 < p.mining_thresh)
                    .map(|a| {
                        let s: Vec<f64> = (0..nc).map(|k| cp[(b * nc + k) * na + a]).collect();
                        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                        ((s[0] - m).exp() / z, a)
                    })
                    .collect();
                cand.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
                for &(_, a) in cand.iter().take(nneg) {
                    flag[a] = 0;
                }
            } else {
                flag.iter_mut().filter(|f| **f != 1).for_each(|f| *f = 0);
            }
            for a in 0..na {
                let f = b * na + a;
                match flag[a] {
                    1 => {
                        let g = matched[a];
                        cls[f] = rows[g * lw] + 1.0;
                        let ac = center_of(&anchors[a]);
                        let gc = center_of(&gts[g]);
                        let t = [
                            (gc[0] - ac[0]) / ac[2] / p.var[0],
                            (gc[1] - ac[1]) / ac[3] / p.var[1],
                            (gc[2] / ac[2]).ln() / p.var[2],
                            (gc[3] / ac[3]).ln() / p.var[3],
                        ];
                        loc[f * 4..f * 4 + 4].copy_from_slice(&t);
                        mask[f * 4..f * 4 + 4].fill(1.0);
                    }
                    0 => cls[f] = 0.0,
                    _ => {}
                }
            }
        }
        write_f64(&o[0], &loc);
        write_f64(&o[1], &mask);
        write_f64(&o[2], &cls);
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};
