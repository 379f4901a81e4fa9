//! ROIPooling: max pooling of regions of interest to a fixed size, with
//! MXNet's rounding of roi coordinates and bin boundaries (computed in the
//! data's precision: float32 arithmetic for float32 / float16, float64 for
//! float64).
use super::{fill_shape, to_f64_vec, write_f64};
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpCall, OpDef, Params};

#[derive(Debug, Clone)]
pub struct RoiParam {
    pub pooled: (usize, usize),
    pub scale: f64,
}

fn parse_roi(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let pooled = pooled_size(a, op)?;
    let scale = p.f64_req("spatial_scale")?;
    if !(0.0..=1.0).contains(&scale) {
        return Err(Error::Param(format!(
            "{op}: spatial_scale {scale} must be in [0, 1]"
        )));
    }
    Ok(Box::new(RoiParam { pooled, scale }))
}

/// The required `pooled_size` (h, w) of the roi pooling operators.
pub(crate) fn pooled_size(a: &Attrs, op: &str) -> Result<(usize, usize)> {
    let ps = a
        .p(op)
        .ints("pooled_size")?
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'pooled_size' is missing")))?;
    if ps.len() != 2 || ps.iter().any(|&v| v < 1) {
        return Err(Error::Param(format!(
            "{op}: pooled_size {ps:?} must be two positive integers (h, w)"
        )));
    }
    Ok((ps[0] as usize, ps[1] as usize))
}

/// Data (N, C, H, W) and rois (num_rois, 5) of the roi pooling operators.
pub(crate) fn check_roi_inputs(op: &str, d: &[usize], r: &[usize]) -> Result<()> {
    if d.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(d)
        )));
    }
    if r.len() != 2 || r[1] != 5 {
        return Err(Error::Shape(format!(
            "{op}: rois shape {} must be (num_rois, 5) rows of [batch_index, x1, y1, x2, y2]",
            fmt_shape(r)
        )));
    }
    Ok(())
}

fn rp(c: &OpCall) -> &RoiParam {
    c.p::<RoiParam>()
}

fn roi_shape(op: &str, p: &RoiParam, d: &[usize], r: &[usize]) -> Result<Vec<usize>> {
    check_roi_inputs(op, d, r)?;
    Ok(vec![r[0], d[1], p.pooled.0, p.pooled.1])
}

/// For every output element, the flat data index of its maximum (None for
/// an empty bin, whose output is 0).
fn roi_argmax(
    p: &RoiParam,
    x: &[f64],
    ds: &[usize],
    rois: &[f64],
    single: bool,
) -> Result<Vec<Option<usize>>> {
    let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
    let (ph, pw) = p.pooled;
    // Arithmetic in the data's precision, as MXNet does it.
    let q = |v: f64| if single { v as f32 as f64 } else { v };
    let scale = q(p.scale);
    let nr = rois.len() / 5;
    let mut out = Vec::with_capacity(nr * c * ph * pw);
    for r in 0..nr {
        let roi = &rois[r * 5..r * 5 + 5];
        let b = roi[0];
        if !(b >= 0.0 && (b as usize) < n) {
            return Err(Error::Index(format!(
                "ROIPooling: roi {r} has batch_index {b}, outside [0, {n}) for data shape {}",
                fmt_shape(ds)
            )));
        }
        let b = b as usize;
        let coord = |v: f64| q(q(v) * scale).round() as i64;
        let (sw, sh, ew, eh) = (coord(roi[1]), coord(roi[2]), coord(roi[3]), coord(roi[4]));
        let rh = (eh - sh + 1).max(1);
        let rw = (ew - sw + 1).max(1);
        let bh = q(rh as f64 / ph as f64);
        let bw = q(rw as f64 / pw as f64);
        let clamp = |v: i64, hi: usize| v.clamp(0, hi as i64) as usize;
        for ch in 0..c {
            let plane = &x[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
            for i in 0..ph {
                let hs = clamp(q(i as f64 * bh).floor() as i64 + sh, h);
                let he = clamp(q((i + 1) as f64 * bh).ceil() as i64 + sh, h);
                for j in 0..pw {
                    let ws = clamp(q(j as f64 * bw).floor() as i64 + sw, w);
                    let we = clamp(q((j + 1) as f64 * bw).ceil() as i64 + sw, w);
                    let mut best: Option<usize> = None;
                    for y in hs..he {
                        for xx in ws..we {
                            let k = y * w + xx;
                            if best.is_none_or(|m| plane[k] > plane[m]) {
                                best = Some(k);
                            }
                        }
                    }
                    out.push(best.map(|k| (b * c + ch) * h * w + k));
                }
            }
        }
    }
    Ok(out)
}

fn single(t: DType) -> bool {
    t != DType::F64
}

fn infer_roi_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    super::infer_float_same(c, ins, outs)
}

pub static ROI_POOLING: OpDef = OpDef {
    name: "ROIPooling",
    doc: "Region-of-interest max pooling: data (N, C, H, W), rois (R, 5) rows of [batch_index, x1, y1, x2, y2] \
          in input-image coordinates; each roi is scaled by spatial_scale (in [0, 1]) and rounded to whole \
          pixels, split into pooled_size (h, w) bins and max-pooled per bin; output (R, C, h, w), empty bins \
          give 0. Gradient to data only (to each bin's maximum); rois get none.",
    inputs: &["data", "rois"],
    parse: |a| parse_roi(a, "ROIPooling"),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(r)) = (&ins[0], &ins[1]) {
            outs[0] = Some(roi_shape("ROIPooling", rp(c), d, r)?);
        }
        Ok(())
    },
    infer_type: infer_roi_type,
    cpu: Some(|c, i, o, _| {
        let x = to_f64_vec(&i[0]);
        let am = roi_argmax(rp(c), &x, &i[0].shape, &to_f64_vec(&i[1]), single(i[0].dtype))?;
        let y: Vec<f64> = am.iter().map(|k| k.map_or(0.0, |k| x[k])).collect();
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_ROIPooling", &super::fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![Some(d), None])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_ROI_POOLING: OpDef = OpDef {
    name: "_backward_ROIPooling",
    doc: "Internal: data gradient of ROIPooling (each output gradient added to its bin's maximum). Inputs: \
          output gradient, data, rois.",
    inputs: &["ograd", "data", "rois"],
    parse: |a| parse_roi(a, "_backward_ROIPooling"),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(r)) = (ins[1].clone(), ins[2].clone()) {
            let want = roi_shape("_backward_ROIPooling", rp(c), &d, &r)?;
            fill_shape("_backward_ROIPooling", "output gradient", &mut ins[0], want, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_roi_type,
    cpu: Some(|c, i, o, _| {
        let x = to_f64_vec(&i[1]);
        let am = roi_argmax(rp(c), &x, &i[1].shape, &to_f64_vec(&i[2]), single(i[1].dtype))?;
        let g = to_f64_vec(&i[0]);
        let mut dx = vec![0f64; x.len()];
        for (gv, k) in g.iter().zip(am) {
            if let Some(k) = k {
                dx[k] += gv;
            }
        }
        write_f64(&o[0], &dx);
        Ok(())
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn documented_example_and_gradient() {
        let x: Vec<f64> = (0..48).map(f64::from).collect();
        let at = [("pooled_size", "(2, 2)"), ("spatial_scale", "0.7")];
        let y = call(
            "ROIPooling",
            &at,
            &[
                arr(&x, &[1, 1, 8, 6]),
                arr(&[0.0, 0.0, 0.0, 4.0, 4.0], &[1, 5]),
            ],
        )
        .unwrap();
        assert_eq!(y[0].to_vec::<f64>().unwrap(), vec![7.0, 9.0, 19.0, 21.0]);
        let rois = [0.0, 0.0, 0.0, 4.0, 4.0, 0.0, -3.0, -2.0, 1.5, 2.5];
        check_grad(
            "ROIPooling",
            &[("pooled_size", "(3, 2)"), ("spatial_scale", "1.0")],
            &[
                (vals(2 * 6 * 5, 1), vec![1, 2, 6, 5]),
                (rois.to_vec(), vec![2, 5]),
            ],
            &[0],
        );
    }
}
