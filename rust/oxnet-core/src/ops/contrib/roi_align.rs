//! ROIAlign (Mask R-CNN): average of bilinearly interpolated samples in
//! every bin of each region of interest, without quantisation; optional
//! position-sensitive channels (R-FCN) and Detectron2's half-pixel
//! alignment. The data gradient applies the same sampling weights.
use crate::base::dtype::Elem;
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::nn::roi::{check_roi_inputs, pooled_size};
use crate::ops::nn::{fill_shape, fwd_attrs, infer_float_same, to_f64_vec};
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

/// One axis of a bin's sampling grid: for each of the `g` sample positions
/// `start + (k + 0.5) * step / g` inside the map (positions more than a
/// pixel outside are dropped), its two bilinear neighbours; the weights
/// summed per pixel, in increasing pixel order (the positions increase).
fn axis_weights(start: f64, step: f64, g: usize, n: usize) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(2 * g);
    let mut add = |i: usize, wt: f64| match out.last_mut() {
        Some(last) if last.0 == i => last.1 += wt,
        _ => out.push((i, wt)),
    };
    for k in 0..g {
        let v = start + (k as f64 + 0.5) * step / g as f64;
        if v < -1.0 || v > n as f64 {
            continue;
        }
        let mut v = v.max(0.0);
        let mut lo = v as usize;
        let hi = if lo >= n - 1 {
            lo = n - 1;
            v = lo as f64;
            lo
        } else {
            lo + 1
        };
        let l = v - lo as f64;
        add(lo, 1.0 - l);
        add(hi, l);
    }
    out
}

/// Sampling taps (h, w, weight) of bin (ph, pw) of one roi, one per
/// distinct pixel. A sample is dropped when either coordinate is more than
/// a pixel outside the map, and its bilinear weight is a product of one
/// weight per axis, so the bin's weights are the outer product of the two
/// axes' summed weights, over the sample count.
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
    let ys = axis_weights(y1 + ph as f64 * bh, bh, gh, h);
    let xs = axis_weights(x1 + pw as f64 * bw, bw, gw, w);
    let mut taps = Vec::with_capacity(ys.len() * xs.len());
    for &(y, wy) in &ys {
        for &(x, wx) in &xs {
            taps.push((y, x, wy * wx / count));
        }
    }
    taps
}

/// Every roi's sampling taps, bin by bin: `bins[(r * ph + i) * pw + j]`
/// holds (pixel offset y * w + x, summed weight) pairs, one per distinct
/// pixel (neighbouring samples share pixels: merged, the channel loops are
/// 2-3x shorter), and `batch[r]` the roi's image (None for a negative
/// batch index, whose outputs are 0).
struct Taps {
    batch: Vec<Option<usize>>,
    bins: Vec<Vec<(usize, f64)>>,
}

fn taps(p: &RoiAlign, ds: &[usize], rois: &[f64]) -> Result<Taps> {
    let (n, h, w) = (ds[0], ds[2], ds[3]);
    let (ph, pw) = p.pooled;
    let mut batch = Vec::with_capacity(rois.len() / 5);
    for (r, roi) in rois.chunks(5).enumerate() {
        batch.push(if roi[0] < 0.0 {
            None
        } else if (roi[0] as usize) < n {
            Some(roi[0] as usize)
        } else {
            return Err(Error::Index(format!(
                "_contrib_ROIAlign: roi {r} has batch_index {}, outside [0, {n}) for data shape {}",
                roi[0],
                fmt_shape(ds)
            )));
        });
    }
    let nb = ph * pw;
    let bins = crate::par::par_map(batch.len() * nb, |k| {
        let (r, i, j) = (k / nb, k % nb / pw, k % pw);
        if batch[r].is_none() {
            return vec![];
        }
        bin_taps(p, &rois[r * 5..r * 5 + 5], (h, w), i, j)
            .into_iter()
            .map(|(y, x, k)| (y * w + x, k))
            .collect()
    });
    Ok(Taps { batch, bins })
}

/// Data channel read by output channel `ch` of bin (i, j).
fn in_channel(p: &RoiAlign, ch: usize, i: usize, j: usize) -> usize {
    let (ph, pw) = p.pooled;
    if p.position_sensitive {
        (ch * ph + i) * pw + j
    } else {
        ch
    }
}

fn out_channels(p: &RoiAlign, c: usize) -> usize {
    let (ph, pw) = p.pooled;
    if p.position_sensitive {
        c / (ph * pw)
    } else {
        c
    }
}

/// The forward, in parallel over rois: each output is its taps' weighted
/// sum of the data channel.
fn forward<T: Elem>(p: &RoiAlign, ds: &[usize], x: &[T], rois: &[f64], y: &mut [T]) -> Result<()> {
    let (c, h, w) = (ds[1], ds[2], ds[3]);
    let (ph, pw) = p.pooled;
    let oc = out_channels(p, c);
    let tp = taps(p, ds, rois)?;
    crate::par::par_chunks_mut(y, (oc * ph * pw).max(1), |r, yr| {
        let Some(b) = tp.batch[r] else {
            yr.fill(T::from_f64(0.0));
            return;
        };
        for ch in 0..oc {
            for i in 0..ph {
                for j in 0..pw {
                    let plane = &x[(b * c + in_channel(p, ch, i, j)) * h * w..][..h * w];
                    let acc: f64 = tp.bins[(r * ph + i) * pw + j]
                        .iter()
                        .map(|&(o, k)| k * plane[o].to_f64())
                        .sum();
                    yr[(ch * ph + i) * pw + j] = T::from_f64(acc);
                }
            }
        }
    });
    Ok(())
}

/// The data gradient, in parallel over output channels (which write
/// disjoint data channels): each output gradient spread over its taps.
fn backward<T: Elem>(
    p: &RoiAlign,
    ds: &[usize],
    g: &[T],
    rois: &[f64],
    dx: &mut [T],
) -> Result<()> {
    let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
    let (ph, pw) = p.pooled;
    let oc = out_channels(p, c);
    let tp = taps(p, ds, rois)?;
    // each output channel's data channels accumulated in f64 (a scratch
    // per thread), then stored
    let per_ch = if p.position_sensitive { ph * pw } else { 1 };
    // output channel ch writes only data channels ch * per_ch ..
    // (ch + 1) * per_ch, disjoint between tasks
    let out = crate::par::SharedMut::new(dx);
    crate::par::par_for_init(
        oc,
        || vec![0f64; n * per_ch * h * w],
        |ch, acc| {
            acc.fill(0.0);
            for (r, b) in tp.batch.iter().enumerate() {
                let Some(b) = *b else { continue };
                for i in 0..ph {
                    for j in 0..pw {
                        let q = if p.position_sensitive { i * pw + j } else { 0 };
                        let plane = &mut acc[(b * per_ch + q) * h * w..][..h * w];
                        let gv = g[((r * oc + ch) * ph + i) * pw + j].to_f64();
                        for &(o, k) in &tp.bins[(r * ph + i) * pw + j] {
                            plane[o] += k * gv;
                        }
                    }
                }
            }
            for b in 0..n {
                for q in 0..per_ch {
                    let ic = ch * per_ch + q;
                    let src = &acc[(b * per_ch + q) * h * w..][..h * w];
                    // SAFETY: the plane lies inside dx, written by this task only
                    let dst = unsafe { out.slice((b * c + ic) * h * w, h * w) };
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = T::from_f64(v);
                    }
                }
            }
        },
    );
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
        let rois = to_f64_vec(&i[1]);
        crate::dispatch_float!(o[0].dtype, T => {
            forward(rp(c), &i[0].shape, i[0].data::<T>(), &rois, o[0].data_mut::<T>())
        })
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
        let rois = to_f64_vec(&i[2]);
        crate::dispatch_float!(o[0].dtype, T => {
            backward(rp(c), &i[1].shape, i[0].data::<T>(), &rois, o[0].data_mut::<T>())
        })
    }),
    ..OpDef::BASE
};
