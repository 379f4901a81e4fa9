//! Embedding, Pad and the legacy Crop operator.
use super::{fill_shape, infer_float_same};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, shape::strides, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpDef, Params};

// ---------------------------------------------------------------------------
// Embedding
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct EmbParam {
    pub input_dim: usize,
    pub output_dim: usize,
    pub dtype: DType,
}

fn parse_emb(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let (i, o) = (p.i64_req("input_dim")?, p.i64_req("output_dim")?);
    if i < 1 || o < 1 {
        return Err(Error::Param(format!(
            "{op}: input_dim ({i}) and output_dim ({o}) must be positive"
        )));
    }
    if p.bool("sparse_grad", false)? {
        return Err(Error::Param(format!(
            "{op}: sparse_grad=True is not supported (dense gradients only)"
        )));
    }
    let dtype = p.dtype("dtype", DType::F32)?;
    Ok(Box::new(EmbParam {
        input_dim: i as usize,
        output_dim: o as usize,
        dtype,
    }))
}

fn emb_index(v: f64, n: usize) -> usize {
    // MXNet clips out-of-range indices.
    let r = v.round();
    if r.is_nan() || r < 0.0 {
        0
    } else {
        (r as usize).min(n - 1)
    }
}

pub static EMBEDDING: OpDef = OpDef {
    name: "Embedding",
    doc: "Look up rows of weight (input_dim, output_dim) for the indices in data (clipped to range); \
          output shape data.shape + (output_dim,).",
    inputs: &["data", "weight"],
    parse: |a| parse_emb(a, "Embedding"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<EmbParam>();
        fill_shape("Embedding", "weight", &mut ins[1], vec![p.input_dim, p.output_dim], &format!(" for input_dim={}, output_dim={}", p.input_dim, p.output_dim))?;
        if let Some(d) = &ins[0] {
            let mut o = d.clone();
            o.push(p.output_dim);
            outs[0] = Some(o);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<EmbParam>();
        let t = ins[1].unwrap_or(p.dtype);
        if !t.is_float() {
            return Err(Error::DType(format!("Embedding: weight dtype {} is not supported (floating point only)", t.name())));
        }
        ins[1] = Some(t);
        if ins[0].is_none() {
            ins[0] = Some(t);
        }
        outs[0] = Some(t);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<EmbParam>();
        let idx = super::to_f64_vec(&i[0]);
        let od = p.output_dim;
        dispatch_dtype!(i[1].dtype, T => {
            let w = i[1].data::<T>();
            let y = o[0].data_mut::<T>();
            for (r, &v) in idx.iter().enumerate() {
                let k = emb_index(v, p.input_dim);
                y[r * od..(r + 1) * od].copy_from_slice(&w[k * od..(k + 1) * od]);
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let w = b.op1("_backward_Embedding", &super::fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![None, Some(w)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_EMBEDDING: OpDef = OpDef {
    name: "_backward_Embedding",
    doc: "Internal: weight gradient of Embedding (scatter-add of output-gradient rows). Inputs: output gradient, data, weight.",
    inputs: &["ograd", "data", "weight"],
    parse: |a| parse_emb(a, "_backward_Embedding"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<EmbParam>();
        outs[0] = Some(vec![p.input_dim, p.output_dim]);
        let _ = ins;
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[2].or(ins[0]);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<EmbParam>();
        let idx = super::to_f64_vec(&i[1]);
        let g = super::to_f64_vec(&i[0]);
        let od = p.output_dim;
        let mut dw = vec![0f64; p.input_dim * od];
        for (r, &v) in idx.iter().enumerate() {
            let k = emb_index(v, p.input_dim);
            for j in 0..od {
                dw[k * od + j] += g[r * od + j];
            }
        }
        super::write_f64(&o[0], &dw);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PadMode {
    Constant,
    Edge,
    Reflect,
}

#[derive(Debug, Clone)]
pub struct PadParam {
    pub mode: PadMode,
    pub width: Vec<usize>,
    pub value: f64,
}

fn parse_pad(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let mode = match p.str("mode", "constant").as_str() {
        "constant" => PadMode::Constant,
        "edge" => PadMode::Edge,
        "reflect" => PadMode::Reflect,
        m => {
            return Err(Error::Param(format!(
                "{op}: mode '{m}' is not one of constant, edge, reflect"
            )))
        }
    };
    let w = p
        .ints("pad_width")?
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'pad_width' is missing")))?;
    if w.iter().any(|&v| v < 0) || w.len() % 2 != 0 {
        return Err(Error::Param(format!(
            "{op}: pad_width {w:?} must be non-negative (before, after) pairs"
        )));
    }
    Ok(Box::new(PadParam {
        mode,
        width: w.into_iter().map(|v| v as usize).collect(),
        value: p.f64("constant_value", 0.0)?,
    }))
}

fn pad_shape(p: &PadParam, d: &[usize]) -> Result<Shape> {
    if p.width.len() != 2 * d.len() {
        return Err(Error::Shape(format!(
            "Pad: pad_width has {} entries but data shape {} needs {} (one (before, after) pair per axis)",
            p.width.len(),
            fmt_shape(d),
            2 * d.len()
        )));
    }
    for (i, &n) in d.iter().enumerate() {
        let (a, b) = (p.width[2 * i], p.width[2 * i + 1]);
        if p.mode == PadMode::Reflect && (a >= n.max(1) || b >= n.max(1)) && (a > 0 || b > 0) {
            return Err(Error::Shape(format!(
                "Pad: reflect padding ({a}, {b}) on axis {i} must be smaller than the axis size {n} (data shape {})",
                fmt_shape(d)
            )));
        }
        if p.mode == PadMode::Edge && n == 0 && (a > 0 || b > 0) {
            return Err(Error::Shape(format!(
                "Pad: edge padding of an empty axis {i} (data shape {})",
                fmt_shape(d)
            )));
        }
    }
    Ok(d.iter()
        .enumerate()
        .map(|(i, &n)| n + p.width[2 * i] + p.width[2 * i + 1])
        .collect())
}

/// Source index along one axis for output position o (None: constant).
fn pad_src(mode: PadMode, o: usize, before: usize, n: usize) -> Option<usize> {
    let i = o as isize - before as isize;
    if i >= 0 && (i as usize) < n {
        return Some(i as usize);
    }
    match mode {
        PadMode::Constant => None,
        PadMode::Edge => Some(if i < 0 { 0 } else { n - 1 }),
        PadMode::Reflect => {
            let n = n as isize;
            let r = if i < 0 { -i } else { 2 * (n - 1) - i };
            Some(r as usize)
        }
    }
}

/// For every output element, the flat source index (or None).
fn pad_map(p: &PadParam, d: &[usize]) -> Result<Vec<Option<usize>>> {
    let o = pad_shape(p, d)?;
    let ist = strides(d);
    let total: usize = o.iter().product();
    let nd = d.len();
    let mut res = Vec::with_capacity(total);
    let mut idx = vec![0usize; nd];
    for _ in 0..total {
        let mut src = Some(0usize);
        for ax in 0..nd {
            src = match (src, pad_src(p.mode, idx[ax], p.width[2 * ax], d[ax])) {
                (Some(s), Some(j)) => Some(s + j * ist[ax]),
                _ => None,
            };
        }
        res.push(src);
        for ax in (0..nd).rev() {
            idx[ax] += 1;
            if idx[ax] < o[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
    Ok(res)
}

pub static PAD: OpDef = OpDef {
    name: "Pad",
    aliases: &["pad"],
    doc: "Pad an array: pad_width holds (before, after) per axis; mode constant (constant_value), edge or reflect.",
    parse: |a| parse_pad(a, "Pad"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(pad_shape(c.p::<PadParam>(), d)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<PadParam>();
        let m = pad_map(p, &i[0].shape)?;
        dispatch_dtype!(i[0].dtype, T => {
            let x = i[0].data::<T>();
            let cv = T::from_f64(p.value);
            for (y, s) in o[0].data_mut::<T>().iter_mut().zip(m) {
                *y = match s { Some(s) => x[s], None => cv };
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| super::backward_op(c, b, "_backward_Pad", &[g[0], x[0]], &[true])),
    ..OpDef::BASE
};

pub static BACKWARD_PAD: OpDef = OpDef {
    name: "_backward_Pad",
    doc: "Internal: gradient of Pad (scatter-add back to the source elements). Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_pad(a, "_backward_Pad"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            fill_shape("_backward_Pad", "output gradient", &mut ins[0], pad_shape(c.p::<PadParam>(), &d)?, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<PadParam>();
        let m = pad_map(p, &i[1].shape)?;
        let g = super::to_f64_vec(&i[0]);
        let mut dx = vec![0f64; o[0].size()];
        for (gv, s) in g.iter().zip(m) {
            if let Some(s) = s {
                dx[s] += gv;
            }
        }
        super::write_f64(&o[0], &dx);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Crop (legacy)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct CropParam {
    pub num_args: usize,
    pub offset: (usize, usize),
    pub h_w: (usize, usize),
    pub center: bool,
}

fn parse_crop(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let n = p.i64_req("num_args")?;
    if n != 1 && n != 2 {
        return Err(Error::Param(format!(
            "{op}: num_args must be 1 or 2, got {n}"
        )));
    }
    let pair = |k: &str| -> Result<(usize, usize)> {
        let v = p.ints_or(k, &[0, 0])?;
        if v.len() != 2 || v.iter().any(|&x| x < 0) {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must be two non-negative integers"
            )));
        }
        Ok((v[0] as usize, v[1] as usize))
    };
    Ok(Box::new(CropParam {
        num_args: n as usize,
        offset: pair("offset")?,
        h_w: pair("h_w")?,
        center: p.bool("center_crop", false)?,
    }))
}

/// (top, left, out shape) of a crop of `d` (to `like` or h_w).
fn crop_geo(p: &CropParam, d: &[usize], like: Option<&[usize]>) -> Result<(usize, usize, Shape)> {
    if d.len() != 4 {
        return Err(Error::Shape(format!(
            "Crop: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(d)
        )));
    }
    let (h, w) = match like {
        Some(l) => {
            if l.len() < 2 {
                return Err(Error::Shape(format!(
                    "Crop: crop_like shape {} needs at least 2 dimensions",
                    fmt_shape(l)
                )));
            }
            (l[l.len() - 2], l[l.len() - 1])
        }
        None => p.h_w,
    };
    if h > d[2] || w > d[3] {
        return Err(Error::Shape(format!(
            "Crop: crop size ({h}, {w}) is larger than data shape {}",
            fmt_shape(d)
        )));
    }
    let (t, l) = if p.center {
        ((d[2] - h) / 2, (d[3] - w) / 2)
    } else {
        p.offset
    };
    if t + h > d[2] || l + w > d[3] {
        return Err(Error::Shape(format!(
            "Crop: offset ({t}, {l}) with crop size ({h}, {w}) exceeds data shape {}",
            fmt_shape(d)
        )));
    }
    Ok((t, l, vec![d[0], d[1], h, w]))
}

#[allow(clippy::too_many_arguments)]
fn crop_copy<T: Elem>(
    x: &mut [T],
    y: &mut [T],
    d: &[usize],
    t: usize,
    l: usize,
    h: usize,
    w: usize,
    back: bool,
) {
    let planes = d[0] * d[1];
    for pl in 0..planes {
        for r in 0..h {
            let xs = pl * d[2] * d[3] + (t + r) * d[3] + l;
            let ys = (pl * h + r) * w;
            if back {
                x[xs..xs + w].copy_from_slice(&y[ys..ys + w]);
            } else {
                y[ys..ys + w].copy_from_slice(&x[xs..xs + w]);
            }
        }
    }
}

pub static CROP: OpDef = OpDef {
    name: "Crop",
    doc: "Legacy Crop of (N, C, H, W) data to h_w (num_args=1) or to the last two axes of a second input \
          (num_args=2), at offset or centred (center_crop).",
    inputs: &["arg"],
    num_inputs: Some(|c| c.p::<CropParam>().num_args),
    parse: |a| parse_crop(a, "Crop"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            let like = if ins.len() > 1 { ins[1].as_deref() } else { None };
            if ins.len() > 1 && like.is_none() {
                return Ok(());
            }
            outs[0] = Some(crop_geo(c.p::<CropParam>(), d, like)?.2);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let like = i.get(1).map(|b| b.shape.as_slice());
        let (t, l, s) = crop_geo(c.p::<CropParam>(), &i[0].shape, like)?;
        dispatch_dtype!(i[0].dtype, T => {
            let x = i[0].data_mut::<T>();
            crop_copy(x, o[0].data_mut::<T>(), &i[0].shape, t, l, s[2], s[3], false);
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let mut ins = vec![g[0], x[0]];
        if x.len() > 1 {
            ins.push(x[1]);
        }
        let d = b.op1("_backward_Crop", &super::fwd_attrs(c), &ins)?;
        Ok(if x.len() > 1 { vec![Some(d), None] } else { vec![Some(d)] })
    }),
    ..OpDef::BASE
};

pub static BACKWARD_CROP: OpDef = OpDef {
    name: "_backward_Crop",
    doc:
        "Internal: gradient of Crop (the output gradient placed in a zero array shaped like data). \
          Inputs: output gradient, data (and crop_like).",
    inputs: &["ograd", "data", "crop_like"],
    num_inputs: Some(|c| c.p::<CropParam>().num_args + 1),
    parse: |a| parse_crop(a, "_backward_Crop"),
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let like = i.get(2).map(|b| b.shape.as_slice());
        let (t, l, s) = crop_geo(c.p::<CropParam>(), &i[1].shape, like)?;
        dispatch_dtype!(o[0].dtype, T => {
            let dx = o[0].data_mut::<T>();
            dx.fill(T::from_f64(0.0));
            crop_copy(dx, i[0].data_mut::<T>(), &i[1].shape, t, l, s[2], s[3], true);
        });
        Ok(())
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn embedding() {
        let w = vals(12, 1);
        let y = call(
            "Embedding",
            &[("input_dim", "4"), ("output_dim", "3")],
            &[arr(&[1.0, 3.0, 1.0], &[3]), arr(&w, &[4, 3])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![3, 3]);
        let v = y[0].to_vec::<f64>().unwrap();
        assert_eq!(&v[..3], &w[3..6]);
        assert_eq!(&v[3..6], &w[9..12]);
        check_grad(
            "Embedding",
            &[("input_dim", "4"), ("output_dim", "3")],
            &[(vec![1.0, 3.0, 1.0, 0.0], vec![2, 2]), (w, vec![4, 3])],
            &[1],
        );
    }

    #[test]
    fn pad_modes() {
        let x = vals(2 * 2 * 3 * 3, 1);
        for mode in ["constant", "edge", "reflect"] {
            let at = [
                ("mode", mode),
                ("pad_width", "(0, 0, 0, 0, 1, 2, 2, 1)"),
                ("constant_value", "0.5"),
            ];
            let y = call("Pad", &at, &[arr(&x, &[2, 2, 3, 3])]).unwrap();
            assert_eq!(y[0].shape, vec![2, 2, 6, 6]);
            let v = y[0].to_vec::<f64>().unwrap();
            // interior
            assert_eq!(v[6 + 2], x[0]);
            let corner = match mode {
                "constant" => 0.5,
                "edge" => x[0],
                _ => x[3 + 2],
            };
            assert_eq!(v[0], corner, "{mode}");
            check_grad("Pad", &at, &[(x.clone(), vec![2, 2, 3, 3])], &[0]);
        }
    }

    #[test]
    fn crop() {
        let x = vals(2 * 5 * 6, 1);
        let y = call(
            "Crop",
            &[("num_args", "1"), ("h_w", "(2, 3)"), ("offset", "(1, 2)")],
            &[arr(&x, &[1, 2, 5, 6])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![1, 2, 2, 3]);
        assert_eq!(y[0].to_vec::<f64>().unwrap()[0], x[6 + 2]);
        check_grad(
            "Crop",
            &[
                ("num_args", "1"),
                ("h_w", "(2, 3)"),
                ("center_crop", "True"),
            ],
            &[(x.clone(), vec![1, 2, 5, 6])],
            &[0],
        );
        let y = call(
            "Crop",
            &[("num_args", "2"), ("center_crop", "True")],
            &[arr(&x, &[1, 2, 5, 6]), arr(&[0.0; 4], &[1, 1, 2, 2])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![1, 2, 2, 2]);
        assert_eq!(y[0].to_vec::<f64>().unwrap()[0], x[6 + 2]);
    }
}
