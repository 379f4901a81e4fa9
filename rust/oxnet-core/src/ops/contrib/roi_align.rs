//! ROIAlign (Mask R-CNN): average of bilinearly interpolated samples in
//! every bin of each region of interest, without quantisation; optional
//! position-sensitive channels (R-FCN) and Detectron2's half-pixel
//! alignment. The data gradient applies the same sampling weights.
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::nn::roi::{check_roi_inputs, pooled_size};
use crate::ops::nn::{fill_shape, fwd_attrs, infer_float_same, to_f64_vec, write_f64};
use crate::ops::registry::{OpCall, OpDef, Params};

pub struct RoiAlign {
    pooled: (usize, usize),
    scale: f64,
    sample_ratio: i64,
    position_sensitive: bool,
    aligned: bool,
}

fn parse(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    Ok(Box::new(RoiAlign {
        pooled: pooled_size(a, op)?,
        scale: p.f64_req("spatial_scale")?,
        sample_ratio: p.i64("sample_ratio", -1)?,
        position_sensitive: p.bool("position_sensitive", false)?,
        aligned: p.bool("aligned", false)?,
    }))
}

fn rp(c: &OpCall) -> &RoiAlign {
    c.p::<RoiAlign>()
}

fn out_shape(op: &str, p: &RoiAlign, d: &[usize], r: &[usize]) -> Result<Vec<usize>> {
    check_roi_inputs(op, d, r)?;
    let (ph, pw) = p.pooled;
    let c = if p.position_sensitive {
        if !d[1].is_multiple_of(ph * pw) {
            return Err(Error::Shape(format!(
                "{op}: with position_sensitive the channels of data shape {} must be a multiple of \
                 pooled_size h * w = {}",
                fmt_shape(d),
                ph * pw
            )));
        }
        d[1] / (ph * pw)
    } else {
        d[1]
    };
    Ok(vec![r[0], c, ph, pw])
}

/// Sampling taps (batch, h, w, weight) of bin (ph, pw) of one roi, or none
/// for a roi with a negative batch index.
fn bin_taps(
    p: &RoiAlign,
    roi: &[f64],
    (h, w): (usize, usize),
    ph: usize,
    pw: usize,
) -> Vec<(usize, usize, f64)> {
    let off = if p.aligned { 0.5 } else { 0.0 };
    let (x1, y1) = (roi[1] * p.scale - off, roi[2] * p.scale - off);
    let (x2, y2) = (roi[3] * p.scale - off, roi[4] * p.scale - off);
    let (mut rw, mut rh) = (x2 - x1, y2 - y1);
    if !p.aligned {
        rw = rw.max(1.0);
        rh = rh.max(1.0);
    }
    let (bh, bw) = (rh / p.pooled.0 as f64, rw / p.pooled.1 as f64);
    let (gh, gw) = if p.sample_ratio > 0 {
        (p.sample_ratio as usize, p.sample_ratio as usize)
    } else {
        (
            (rh / p.pooled.0 as f64).ceil().max(0.0) as usize,
            (rw / p.pooled.1 as f64).ceil().max(0.0) as usize,
        )
    };
    let count = ((gh * gw) as f64).max(1.0);
    let mut taps = Vec::with_capacity(gh * gw * 4);
    for iy in 0..gh {
        let y = y1 + ph as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
        for ix in 0..gw {
            let x = x1 + pw as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
            if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
                continue;
            }
            let (mut y, mut x) = (y.max(0.0), x.max(0.0));
            let (mut yl, mut xl) = (y as usize, x as usize);
            let yh = if yl >= h - 1 {
                yl = h - 1;
                y = yl as f64;
                yl
            } else {
                yl + 1
            };
            let xh = if xl >= w - 1 {
                xl = w - 1;
                x = xl as f64;
                xl
            } else {
                xl + 1
            };
            let (ly, lx) = (y - yl as f64, x - xl as f64);
            let (hy, hx) = (1.0 - ly, 1.0 - lx);
            taps.push((yl, xl, hy * hx / count));
            taps.push((yl, xh, hy * lx / count));
            taps.push((yh, xl, ly * hx / count));
            taps.push((yh, xh, ly * lx / count));
        }
    }
    taps
}

/// Calls `f(output index, data index, weight)` for every tap of every output.
fn for_each_tap(
    p: &RoiAlign,
    ds: &[usize],
    rois: &[f64],
    mut f: impl FnMut(usize, usize, f64),
) -> Result<()> {
    let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
    let (ph, pw) = p.pooled;
    let oc = if p.position_sensitive {
        c / (ph * pw)
    } else {
        c
    };
    for (r, roi) in rois.chunks(5).enumerate() {
        if roi[0] < 0.0 {
            continue;
        }
        let b = roi[0] as usize;
        if b >= n {
            return Err(Error::Index(format!(
                "_contrib_ROIAlign: roi {r} has batch_index {}, outside [0, {n}) for data shape {}",
                roi[0],
                fmt_shape(ds)
            )));
        }
        for i in 0..ph {
            for j in 0..pw {
                let taps = bin_taps(p, roi, (h, w), i, j);
                for ch in 0..oc {
                    let ic = if p.position_sensitive {
                        (ch * ph + i) * pw + j
                    } else {
                        ch
                    };
                    let o = ((r * oc + ch) * ph + i) * pw + j;
                    let base = (b * c + ic) * h * w;
                    for &(y, x, k) in &taps {
                        f(o, base + y * w + x, k);
                    }
                }
            }
        }
    }
    Ok(())
}

pub static ROI_ALIGN: OpDef = OpDef {
    name: "_contrib_ROIAlign",
    doc: "Region-of-interest align: data (N, C, H, W), rois (R, 5) rows of [batch_index, x1, y1, x2, y2] in \
          image coordinates, scaled by spatial_scale (minus half a pixel when aligned; without aligned the roi \
          is at least 1x1). Each of the pooled_size (h, w) bins averages sample_ratio x sample_ratio bilinear \
          samples (sample_ratio <= 0: ceil(roi size / bins) per axis); samples more than a pixel outside the \
          map count as 0. With position_sensitive, output channel c of bin (i, j) reads data channel (c * h + \
          i) * w + j and the output has C / (h * w) channels. Output (R, C', h, w); a roi with a negative \
          batch_index gives 0. Gradient to data only.",
    inputs: &["data", "rois"],
    parse: |a| parse(a, "_contrib_ROIAlign"),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(r)) = (&ins[0], &ins[1]) {
            outs[0] = Some(out_shape("_contrib_ROIAlign", rp(c), d, r)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let x = to_f64_vec(&i[0]);
        let mut y = vec![0f64; o[0].shape.iter().product()];
        for_each_tap(rp(c), &i[0].shape, &to_f64_vec(&i[1]), |oi, di, k| {
            y[oi] += k * x[di]
        })?;
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_contrib_ROIAlign", &fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![Some(d), None])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_ROI_ALIGN: OpDef = OpDef {
    name: "_backward_contrib_ROIAlign",
    doc: "Internal: data gradient of ROIAlign (each output gradient spread over its samples' pixels with the \
          bilinear weights). Inputs: output gradient, data, rois.",
    inputs: &["ograd", "data", "rois"],
    parse: |a| parse(a, "_backward_contrib_ROIAlign"),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(r)) = (ins[1].clone(), ins[2].clone()) {
            let want = out_shape("_backward_contrib_ROIAlign", rp(c), &d, &r)?;
            fill_shape("_backward_contrib_ROIAlign", "output gradient", &mut ins[0], want, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let g = to_f64_vec(&i[0]);
        let mut dx = vec![0f64; i[1].shape.iter().product()];
        for_each_tap(rp(c), &i[1].shape, &to_f64_vec(&i[2]), |oi, di, k| {
            dx[di] += k * g[oi]
        })?;
        write_f64(&o[0], &dx);
        Ok(())
    }),
    ..OpDef::BASE
};
