//! Resizing and pooling of NCHW images: BilinearResize2D and
//! AdaptiveAvgPooling2D, each with an internal backward operator that
//! applies the adjoint of the same interpolation / averaging weights.
use crate::base::dtype::Elem;
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::nn::{fill_shape, fwd_attrs, infer_float_same};
use crate::ops::registry::{OpCall, OpDef, Params};

fn four_d(op: &str, s: &[usize]) -> Result<()> {
    if s.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(s)
        )));
    }
    Ok(())
}

/// One output position's interpolation: (low index, high index, weight of high).
type Tap = (usize, usize, f64);

/// Every output pixel's taps as (offset h * iw + w in the input plane,
/// weight), row by row.
fn all_taps(
    (iw, oh, ow): (usize, usize, usize),
    taps: &dyn Fn(usize, usize) -> Vec<(usize, usize, f64)>,
) -> Vec<Vec<(usize, f64)>> {
    (0..oh * ow)
        .map(|k| {
            taps(k / ow, k % ow)
                .into_iter()
                .map(|(h, w, t)| (h * iw + w, t))
                .collect()
        })
        .collect()
}

/// The gradient of a linear operator on the last two axes given as
/// per-output-pixel weighted taps (bilinear resizing, adaptive pooling):
/// `dx` (planes, ih, iw) from `g` (planes, oh, ow), each output gradient
/// spread over its taps, accumulated in float64 per plane, in parallel
/// over the planes.
fn apply_adjoint<T: Elem>(
    g: &[T],
    dx: &mut [T],
    (ih, iw): (usize, usize),
    (oh, ow): (usize, usize),
    taps: &dyn Fn(usize, usize) -> Vec<(usize, usize, f64)>,
) {
    let t = all_taps((iw, oh, ow), taps);
    crate::par::par_chunks_mut(dx, (ih * iw).max(1), |p, dp| {
        let gp = &g[p * oh * ow..(p + 1) * oh * ow];
        let mut acc = vec![0f64; ih * iw];
        for (gv, tk) in gp.iter().zip(&t) {
            let gv = gv.to_f64();
            for &(q, k) in tk {
                acc[q] += k * gv;
            }
        }
        for (d, a) in dp.iter_mut().zip(acc) {
            *d = T::from_f64(a);
        }
    });
}

// ---------------------------------------------------------------------------
// BilinearResize2D
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Size,
    Like,
    OddScale,
    EvenDown,
    EvenUp,
    OddDown,
    OddUp,
}

pub struct Resize {
    height: i64,
    width: i64,
    scale: Option<(f64, f64)>,
    mode: Mode,
    align: bool,
}

fn parse_resize(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let mode = match p
        .choice(
            "mode",
            "size",
            &[
                "like",
                "odd_scale",
                "size",
                "to_even_down",
                "to_even_up",
                "to_odd_down",
                "to_odd_up",
            ],
        )?
        .as_str()
    {
        "like" => Mode::Like,
        "odd_scale" => Mode::OddScale,
        "to_even_down" => Mode::EvenDown,
        "to_even_up" => Mode::EvenUp,
        "to_odd_down" => Mode::OddDown,
        "to_odd_up" => Mode::OddUp,
        _ => Mode::Size,
    };
    let scale = match (p.opt_f64("scale_height")?, p.opt_f64("scale_width")?) {
        (Some(h), Some(w)) => {
            if h <= 0.0 || w <= 0.0 {
                return Err(Error::Param(format!(
                    "{op}: scale_height {h} and scale_width {w} must be positive"
                )));
            }
            Some((h, w))
        }
        (None, None) => None,
        _ => {
            return Err(Error::Param(format!(
                "{op}: scale_height and scale_width must be given together"
            )))
        }
    };
    if mode == Mode::OddScale && scale.is_none() {
        return Err(Error::Param(format!(
            "{op}: mode 'odd_scale' needs scale_height and scale_width"
        )));
    }
    Ok(Box::new(Resize {
        height: p.i64("height", 1)?,
        width: p.i64("width", 1)?,
        scale,
        mode,
        align: p.bool("align_corners", true)?,
    }))
}

fn resize_out(op: &str, p: &Resize, d: &[usize], like: Option<&[usize]>) -> Result<(usize, usize)> {
    four_d(op, d)?;
    let (h, w) = (d[2], d[3]);
    if h == 0 || w == 0 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} has no pixels to interpolate",
            fmt_shape(d)
        )));
    }
    let (oh, ow) = match p.mode {
        Mode::Size => match p.scale {
            Some((sh, sw)) => ((h as f64 * sh) as i64, (w as f64 * sw) as i64),
            None => (p.height, p.width),
        },
        Mode::Like => {
            let l = like.ok_or_else(|| {
                Error::Param(format!("{op}: mode 'like' needs the second input 'like'"))
            })?;
            four_d(op, l)?;
            (l[2] as i64, l[3] as i64)
        }
        Mode::OddScale => {
            let (sh, sw) = p.scale.unwrap_or((1.0, 1.0));
            let f = |n: usize, s: f64| {
                if n % 2 == 1 {
                    ((n - 1) as f64 * s + 1.0) as i64
                } else {
                    (n as f64 * s) as i64
                }
            };
            (f(h, sh), f(w, sw))
        }
        Mode::EvenDown => ((h - h % 2) as i64, (w - w % 2) as i64),
        Mode::EvenUp => ((h + h % 2) as i64, (w + w % 2) as i64),
        Mode::OddDown => ((h - (1 - h % 2)) as i64, (w - (1 - w % 2)) as i64),
        Mode::OddUp => ((h + (1 - h % 2)) as i64, (w + (1 - w % 2)) as i64),
    };
    if oh < 1 || ow < 1 {
        return Err(Error::Param(format!(
            "{op}: the output size ({oh}, {ow}) for data shape {} must be positive",
            fmt_shape(d)
        )));
    }
    Ok((oh as usize, ow as usize))
}

/// MXNet's source coordinate for each output index along one axis.
fn axis_taps(n_in: usize, n_out: usize, align: bool) -> Vec<Tap> {
    let r = if n_out > 1 {
        if align {
            (n_in as f64 - 1.0) / (n_out as f64 - 1.0)
        } else {
            n_in as f64 / n_out as f64
        }
    } else {
        0.0
    };
    (0..n_out)
        .map(|o| {
            let src = if align {
                r * o as f64
            } else {
                (r * (o as f64 + 0.5) - 0.5).max(0.0)
            };
            let lo = (src.floor() as usize).min(n_in - 1);
            let hi = (lo + 1).min(n_in - 1);
            (lo, hi, src - lo as f64)
        })
        .collect()
}

/// The forward: along x within the two source rows, then along y, in
/// parallel over the planes.
fn bilinear<T: Elem>(x: &[T], y: &mut [T], (ih, iw): (usize, usize), th: &[Tap], tw: &[Tap]) {
    let (oh, ow) = (th.len(), tw.len());
    crate::par::par_chunks_mut(y, (oh * ow).max(1), |p, yp| {
        let src = &x[p * ih * iw..(p + 1) * ih * iw];
        for (i, &(h0, h1, lh)) in th.iter().enumerate() {
            let (r0, r1) = (&src[h0 * iw..(h0 + 1) * iw], &src[h1 * iw..(h1 + 1) * iw]);
            for (o, &(w0, w1, lw)) in yp[i * ow..(i + 1) * ow].iter_mut().zip(tw) {
                let top = r0[w0].to_f64() * (1.0 - lw) + r0[w1].to_f64() * lw;
                let bot = r1[w0].to_f64() * (1.0 - lw) + r1[w1].to_f64() * lw;
                *o = T::from_f64(top * (1.0 - lh) + bot * lh);
            }
        }
    });
}

fn resize_taps(
    p: &Resize,
    ih: usize,
    iw: usize,
    oh: usize,
    ow: usize,
) -> impl Fn(usize, usize) -> Vec<(usize, usize, f64)> {
    let th = axis_taps(ih, oh, p.align);
    let tw = axis_taps(iw, ow, p.align);
    move |i, j| {
        let (h0, h1, lh) = th[i];
        let (w0, w1, lw) = tw[j];
        vec![
            (h0, w0, (1.0 - lh) * (1.0 - lw)),
            (h0, w1, (1.0 - lh) * lw),
            (h1, w0, lh * (1.0 - lw)),
            (h1, w1, lh * lw),
        ]
    }
}

fn rp(c: &OpCall) -> &Resize {
    c.p::<Resize>()
}

fn resize_inputs(c: &OpCall) -> usize {
    if rp(c).mode == Mode::Like {
        2
    } else {
        1
    }
}

pub static BILINEAR_RESIZE_2D: OpDef = OpDef {
    name: "_contrib_BilinearResize2D",
    doc: "Bilinear resizing of data (N, C, H, W) to (N, C, height, width). mode 'size' (default): height and \
          width, or int(H * scale_height) and int(W * scale_width) when both scales are given; 'like': the \
          height and width of the second input like; 'odd_scale': (H - 1) * scale + 1 for odd sizes, H * \
          scale for even ones; 'to_even_down' / 'to_even_up' / 'to_odd_down' / 'to_odd_up': the nearest even \
          or odd size below or above. align_corners (default True) maps the corner pixels onto each other \
          (source = i * (H - 1) / (height - 1)); without it source = max((i + 0.5) * H / height - 0.5, 0). A \
          size-1 output samples the first pixel, as MXNet 1.9.1. Gradient to data (like gets none).",
    inputs: &["data", "like"],
    num_inputs: Some(resize_inputs),
    parse: |a| parse_resize(a, "_contrib_BilinearResize2D"),
    infer_shape: |c, ins, outs| {
        const OP: &str = "_contrib_BilinearResize2D";
        if let Some(d) = &ins[0] {
            let like = if ins.len() > 1 { ins[1].as_deref() } else { None };
            if rp(c).mode == Mode::Like && like.is_none() {
                return Ok(());
            }
            let (oh, ow) = resize_out(OP, rp(c), d, like)?;
            outs[0] = Some(vec![d[0], d[1], oh, ow]);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut o = [None];
        infer_float_same(c, &mut ins[..1], &mut o)?;
        if ins.len() > 1 && ins[1].is_none() {
            ins[1] = ins[0];
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let s = &i[0].shape;
        let (oh, ow) = (o[0].shape[2], o[0].shape[3]);
        let (th, tw) = (axis_taps(s[2], oh, rp(c).align), axis_taps(s[3], ow, rp(c).align));
        crate::dispatch_float!(o[0].dtype, T => {
            bilinear(i[0].data::<T>(), o[0].data_mut::<T>(), (s[2], s[3]), &th, &tw)
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1(
            "_backward_contrib_BilinearResize2D",
            &fwd_attrs(c),
            &[g[0], x[0]],
        )?;
        let mut v = vec![Some(d)];
        if x.len() > 1 {
            v.push(None);
        }
        Ok(v)
    }),
    ..OpDef::BASE
};

pub static BACKWARD_BILINEAR_RESIZE_2D: OpDef = OpDef {
    name: "_backward_contrib_BilinearResize2D",
    doc: "Internal: data gradient of BilinearResize2D (the output gradient spread back with the \
          interpolation weights). Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_resize(a, "_backward_contrib_BilinearResize2D"),
    infer_shape: |_, ins, outs| {
        if let (Some(g), Some(d)) = (&ins[0], &ins[1]) {
            four_d("_backward_contrib_BilinearResize2D", g)?;
            four_d("_backward_contrib_BilinearResize2D", d)?;
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let (gs, s) = (&i[0].shape, &i[1].shape);
        let taps = resize_taps(rp(c), s[2], s[3], gs[2], gs[3]);
        crate::dispatch_float!(o[0].dtype, T => {
            apply_adjoint(i[0].data::<T>(), o[0].data_mut::<T>(), (s[2], s[3]), (gs[2], gs[3]), &taps)
        });
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// AdaptiveAvgPooling2D
// ---------------------------------------------------------------------------

fn parse_adaptive(a: &Attrs, op: &str) -> Result<Params> {
    let v = a.p(op).ints_or("output_size", &[])?;
    let (h, w) = match v.as_slice() {
        [] => (1, 1),
        [s] => (*s, *s),
        [h, w] => (*h, *w),
        _ => {
            return Err(Error::Param(format!(
                "{op}: output_size {v:?} must be an integer or a (height, width) pair"
            )))
        }
    };
    if h < 1 || w < 1 {
        return Err(Error::Param(format!(
            "{op}: output_size ({h}, {w}) must be positive"
        )));
    }
    Ok(Box::new((h as usize, w as usize)))
}

/// Output (i, j)'s bin along one axis: [floor(i * n_in / n_out),
/// ceil((i + 1) * n_in / n_out)).
fn pool_bins(n_in: usize, n_out: usize) -> Vec<(usize, usize)> {
    (0..n_out)
        .map(|o| ((o * n_in) / n_out, ((o + 1) * n_in).div_ceil(n_out)))
        .collect()
}

/// The forward: each output the mean of its bin, summed row by row over
/// the bin's contiguous columns, in parallel over the planes.
fn adaptive_pool<T: Elem>(
    x: &[T],
    y: &mut [T],
    (ih, iw): (usize, usize),
    (oh, ow): (usize, usize),
) {
    let (bh, bw) = (pool_bins(ih, oh), pool_bins(iw, ow));
    crate::par::par_chunks_mut(y, (oh * ow).max(1), |p, yp| {
        let src = &x[p * ih * iw..(p + 1) * ih * iw];
        for (i, &(h0, h1)) in bh.iter().enumerate() {
            for (j, &(w0, w1)) in bw.iter().enumerate() {
                let mut acc = 0f64;
                for h in h0..h1 {
                    acc += src[h * iw + w0..h * iw + w1]
                        .iter()
                        .map(|v| v.to_f64())
                        .sum::<f64>();
                }
                yp[i * ow + j] = T::from_f64(acc / ((h1 - h0) * (w1 - w0)) as f64);
            }
        }
    });
}

fn pool_taps(
    ih: usize,
    iw: usize,
    oh: usize,
    ow: usize,
) -> impl Fn(usize, usize) -> Vec<(usize, usize, f64)> {
    let (bh, bw) = (pool_bins(ih, oh), pool_bins(iw, ow));
    move |i, j| {
        let ((h0, h1), (w0, w1)) = (bh[i], bw[j]);
        let k = 1.0 / ((h1 - h0) * (w1 - w0)) as f64;
        let mut t = Vec::with_capacity((h1 - h0) * (w1 - w0));
        for h in h0..h1 {
            for w in w0..w1 {
                t.push((h, w, k));
            }
        }
        t
    }
}

pub static ADAPTIVE_AVG_POOLING_2D: OpDef = OpDef {
    name: "_contrib_AdaptiveAvgPooling2D",
    doc: "Adaptive average pooling of data (N, C, H, W) to (N, C, h, w) with output_size = h (square) or (h, \
          w) (default 1): output (i, j) averages rows floor(i * H / h) .. ceil((i + 1) * H / h) - 1 and the \
          columns likewise. Gradient to data.",
    parse: |a| parse_adaptive(a, "_contrib_AdaptiveAvgPooling2D"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            four_d("_contrib_AdaptiveAvgPooling2D", d)?;
            let (h, w) = *c.p::<(usize, usize)>();
            outs[0] = Some(vec![d[0], d[1], h, w]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let s = &i[0].shape;
        let (oh, ow) = *c.p::<(usize, usize)>();
        crate::dispatch_float!(o[0].dtype, T => {
            adaptive_pool(i[0].data::<T>(), o[0].data_mut::<T>(), (s[2], s[3]), (oh, ow))
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1(
            "_backward_contrib_AdaptiveAvgPooling2D",
            &fwd_attrs(c),
            &[g[0], x[0]],
        )?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_ADAPTIVE_AVG_POOLING_2D: OpDef = OpDef {
    name: "_backward_contrib_AdaptiveAvgPooling2D",
    doc: "Internal: data gradient of AdaptiveAvgPooling2D (each output gradient shared equally by its bin). \
          Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_adaptive(a, "_backward_contrib_AdaptiveAvgPooling2D"),
    infer_shape: |c, ins, outs| {
        const OP: &str = "_backward_contrib_AdaptiveAvgPooling2D";
        if let Some(d) = ins[1].clone() {
            four_d(OP, &d)?;
            let (h, w) = *c.p::<(usize, usize)>();
            fill_shape(OP, "output gradient", &mut ins[0], vec![d[0], d[1], h, w], "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let s = &i[1].shape;
        let (oh, ow) = *c.p::<(usize, usize)>();
        let taps = pool_taps(s[2], s[3], oh, ow);
        crate::dispatch_float!(o[0].dtype, T => {
            apply_adjoint(i[0].data::<T>(), o[0].data_mut::<T>(), (s[2], s[3]), (oh, ow), &taps)
        });
        Ok(())
    }),
    ..OpDef::BASE
};
