//! MXNet 1.9.1's image operators (`_image_*`, Python `mx.nd.image.*`): the
//! ones Gluon's vision transforms call. Images are HWC (or NHWC where MXNet
//! accepts a batch); `to_tensor` turns them into CHW float32 and `normalize`
//! works on CHW / NCHW.
//!
//! The colour operators compute in float32 and store through a saturating,
//! truncating cast (MXNet's `saturate_cast`: 34.7 -> 34, 300 -> 255 for
//! uint8; floats are not clipped). The random ones draw their factors from
//! the context's generator (`Resource::Rng`), so `mx.random.seed` repeats
//! them.
use super::attrs::Attrs;
use super::registry::{Entry, GradBuilder, OpCall, OpDef, Params, Resource};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::random::with_rng;

// ---------------------------------------------------------------------------
// shape checks
// ---------------------------------------------------------------------------

/// An HWC image (or an NHWC batch when `batch`), with 1 or 3 channels when
/// `rgb`. Returns (N, H, W, C) with N = 1 for a single image.
fn hwc(op: &str, s: &[usize], batch: bool, rgb: bool) -> Result<(usize, usize, usize, usize)> {
    let ok = s.len() == 3 || (batch && s.len() == 4);
    if !ok {
        let want = if batch {
            "(height, width, channels) or (N, height, width, channels)"
        } else {
            "(height, width, channels)"
        };
        return Err(Error::Shape(format!(
            "{op}: input image must have shape {want}, but got {}",
            fmt_shape(s)
        )));
    }
    let c = s[s.len() - 1];
    if rgb && c != 1 && c != 3 {
        return Err(Error::Shape(format!(
            "{op}: the last dimension of the input image must be the channel dimension with \
             either 1 or 3 elements, but got input with shape {}",
            fmt_shape(s)
        )));
    }
    let n = if s.len() == 4 { s[0] } else { 1 };
    let k = s.len();
    Ok((n, s[k - 3], s[k - 2], c))
}

fn known(ins: &[Option<Shape>]) -> Option<Shape> {
    ins.first().cloned().flatten()
}

/// Shape of a single-image HWC operator (C is 1 or 3) whose output has
/// the input's shape.
fn same_rgb_image(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if let Some(s) = known(ins) {
        hwc(c.name(), &s, false, true)?;
        outs[0] = Some(s);
    }
    Ok(())
}

fn type_same(_: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    if let Some(t) = ins[0] {
        outs[0] = Some(t);
    }
    Ok(())
}

/// Run `f` with the blob's elements as `T` for any dtype but bool.
fn numeric(op: &str, t: DType) -> Result<()> {
    if t == DType::Bool {
        return Err(Error::DType(format!(
            "{op}: dtype bool is not supported (an image is uint8, integer or floating point)"
        )));
    }
    Ok(())
}

fn type_numeric(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    if let Some(t) = ins[0] {
        numeric(c.name(), t)?;
        outs[0] = Some(t);
    }
    Ok(())
}

fn copy_all(i: &Blob, o: &Blob) {
    o.bytes_mut().copy_from_slice(i.bytes());
}

// ---------------------------------------------------------------------------
// to_tensor
// ---------------------------------------------------------------------------

/// (N, H, W, C) to (N, C, H, W) / 255, in parallel over pieces of the
/// output (a piece may span planes).
fn to_tensor_kernel<T: Elem>(x: &[T], y: &mut [f32], hw: usize, c: usize) {
    if hw == 0 || c == 0 {
        return;
    }
    crate::par::par_chunks_mut(y, 1 << 16, |ci, piece| {
        let mut g = ci << 16;
        let mut rest = piece;
        while !rest.is_empty() {
            // output plane (b, k), from pixel p on
            let (plane, p) = (g / hw, g % hw);
            let (b, k) = (plane / c, plane % c);
            let len = rest.len().min(hw - p);
            let (seg, tail) = rest.split_at_mut(len);
            let src = &x[(b * hw + p) * c + k..];
            for (j, d) in seg.iter_mut().enumerate() {
                *d = src[j * c].to_f32() / 255.0;
            }
            rest = tail;
            g += len;
        }
    });
}

pub static TO_TENSOR: OpDef = OpDef {
    name: "_image_to_tensor",
    doc: "Converts an image of shape (H, W, C) or a batch (N, H, W, C) with values in [0, 255] \
          to a float32 tensor of shape (C, H, W) or (N, C, H, W) with values in [0, 1] \
          (each value divided by 255). Any numeric input dtype; no gradient (MXNet's is broken).",
    infer_shape: |c, ins, outs| {
        if let Some(s) = known(ins) {
            let (n, h, w, ch) = hwc(c.name(), &s, true, false)?;
            outs[0] = Some(if s.len() == 4 {
                vec![n, ch, h, w]
            } else {
                vec![ch, h, w]
            });
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        if let Some(t) = ins[0] {
            numeric(c.name(), t)?;
        }
        outs[0] = Some(DType::F32);
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let s = &i[0].shape;
        let k = s.len();
        let (hw, c) = (s[k - 3] * s[k - 2], s[k - 1]);
        dispatch_dtype!(i[0].dtype, T => to_tensor_kernel(i[0].data::<T>(), o[0].data_mut::<f32>(), hw, c));
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// normalize
// ---------------------------------------------------------------------------

pub struct NormalizeParam {
    mean: Vec<f32>,
    std: Vec<f32>,
}

fn fmt_floats(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
    format!("({})", parts.join(", "))
}

fn normalize_kernel<T: Elem>(x: &[T], y: &mut [T], p: &NormalizeParam, n: usize, c: usize) {
    let plane = x.len() / (n * c).max(1);
    for b in 0..n {
        for k in 0..c {
            let m = if p.mean.len() == 1 {
                p.mean[0]
            } else {
                p.mean[k]
            };
            let s = if p.std.len() == 1 { p.std[0] } else { p.std[k] };
            let at = (b * c + k) * plane;
            let (xs, ys) = (&x[at..at + plane], &mut y[at..at + plane]);
            if T::DTYPE == DType::F64 {
                // float64 in float64 (its gradient is checked in float64)
                let (m, s) = (m as f64, s as f64);
                for (o, v) in ys.iter_mut().zip(xs) {
                    *o = T::from_f64((v.to_f64() - m) / s);
                }
            } else {
                for (o, v) in ys.iter_mut().zip(xs) {
                    *o = T::from_f32((v.to_f32() - m) / s);
                }
            }
        }
    }
}

pub static NORMALIZE: OpDef = OpDef {
    name: "_image_normalize",
    doc: "Normalizes a tensor of shape (C, H, W) or (N, C, H, W) (C is 1 or 3) per channel: \
          output[c] = (input[c] - mean[c]) / std[c]. mean and std hold 1 value (used for every \
          channel) or C values; their defaults (0, 0, 0, 0) and (1, 1, 1, 1) have 4 and must be \
          given for real inputs, as in MXNet. Same dtype out; gradient: out_grad / std.",
    parse: |a| {
        let p = a.p("_image_normalize");
        let mean: Vec<f32> = p
            .floats("mean")?
            .unwrap_or_else(|| vec![0.0; 4])
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let std: Vec<f32> = p
            .floats("std")?
            .unwrap_or_else(|| vec![1.0; 4])
            .into_iter()
            .map(|v| v as f32)
            .collect();
        Ok(Box::new(NormalizeParam { mean, std }) as Params)
    },
    infer_shape: |c, ins, outs| {
        let Some(s) = known(ins) else { return Ok(()) };
        let op = c.name();
        if s.len() != 3 && s.len() != 4 {
            return Err(Error::Shape(format!(
                "{op}: input tensor must have shape (channels, height, width) or \
                 (N, channels, height, width), but got {}",
                fmt_shape(&s)
            )));
        }
        let ch = s[s.len() - 3];
        if ch != 1 && ch != 3 {
            return Err(Error::Shape(format!(
                "{op}: the channel dimension of the input tensor must have 1 or 3 elements, \
                 but got input with shape {}",
                fmt_shape(&s)
            )));
        }
        let p = c.p::<NormalizeParam>();
        for (name, v) in [("mean", &p.mean), ("std", &p.std)] {
            if v.len() != 1 && v.len() != ch {
                return Err(Error::Param(format!(
                    "{op}: argument '{name}' must have 1 or {ch} elements for input with shape \
                     {}, but got {}",
                    fmt_shape(&s),
                    fmt_floats(v)
                )));
            }
        }
        outs[0] = Some(s);
        Ok(())
    },
    infer_type: type_numeric,
    cpu: Some(|c, i, o, _| {
        let s = &i[0].shape;
        let (n, ch) = if s.len() == 4 {
            (s[0], s[1])
        } else {
            (1, s[0])
        };
        let p = c.p::<NormalizeParam>();
        dispatch_dtype!(i[0].dtype, T => normalize_kernel(i[0].data::<T>(), o[0].data_mut::<T>(), p, n, ch));
        Ok(())
    }),
    // d out / d in = 1 / std: normalize the output gradient with mean 0
    grad: Some(|c, b, _, _, g| {
        let std = fmt_floats(&c.p::<NormalizeParam>().std);
        let r = b.op1(
            "_image_normalize",
            &[("mean", "(0.0,)".to_string()), ("std", std)],
            &[g[0]],
        )?;
        Ok(vec![Some(r)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// crop
// ---------------------------------------------------------------------------

pub struct CropParam {
    x: usize,
    y: usize,
    width: usize,
    height: usize,
}

fn parse_crop(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let (x, y) = (p.i64_req("x")?, p.i64_req("y")?);
    let (w, h) = (p.i64_req("width")?, p.i64_req("height")?);
    if w <= 0 || h <= 0 {
        return Err(Error::Param(format!(
            "{op}: width ({w}) and height ({h}) must be greater than 0"
        )));
    }
    if x < 0 || y < 0 {
        return Err(Error::Param(format!(
            "{op}: x ({x}) and y ({y}) must not be negative"
        )));
    }
    Ok(Box::new(CropParam {
        x: x as usize,
        y: y as usize,
        width: w as usize,
        height: h as usize,
    }) as Params)
}

/// Checks the crop box against an HWC / NHWC shape; returns the output shape.
fn crop_shape(op: &str, p: &CropParam, s: &[usize]) -> Result<Shape> {
    if s.len() != 3 && s.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: expects an input of 3 dimensions (h, w, c) or 4 (n, h, w, c), but got shape {}",
            fmt_shape(s)
        )));
    }
    let (_, h, w, c) = hwc(op, s, true, false)?;
    if c != 1 && c != 3 {
        return Err(Error::Shape(format!(
            "{op}: expects an image with 1 or 3 channels, but got shape {}",
            fmt_shape(s)
        )));
    }
    if p.x + p.width > w {
        return Err(Error::Shape(format!(
            "{op}: x + width ({} + {}) is greater than the input width {w} (shape {})",
            p.x,
            p.width,
            fmt_shape(s)
        )));
    }
    if p.y + p.height > h {
        return Err(Error::Shape(format!(
            "{op}: y + height ({} + {}) is greater than the input height {h} (shape {})",
            p.y,
            p.height,
            fmt_shape(s)
        )));
    }
    let mut o = s.to_vec();
    let k = o.len();
    o[k - 3] = p.height;
    o[k - 2] = p.width;
    Ok(o)
}

/// Copies the box between the big image (`big`, HWC/NHWC) and the crop
/// (`small`): `into_small` picks the direction.
fn crop_copy(p: &CropParam, big: &Blob, small: &Blob, into_small: bool) {
    let s = &big.shape;
    let k = s.len();
    let (n, h, w, c) = (if k == 4 { s[0] } else { 1 }, s[k - 3], s[k - 2], s[k - 1]);
    let es = big.dtype.size();
    let row = p.width * c * es;
    let (bb, sb) = (big.bytes_mut(), small.bytes_mut());
    for b in 0..n {
        for r in 0..p.height {
            let bo = (((b * h) + p.y + r) * w + p.x) * c * es;
            let so = ((b * p.height) + r) * row;
            if into_small {
                sb[so..so + row].copy_from_slice(&bb[bo..bo + row]);
            } else {
                bb[bo..bo + row].copy_from_slice(&sb[so..so + row]);
            }
        }
    }
}

fn crop_attrs(c: &OpCall) -> Vec<(&'static str, String)> {
    let p = c.p::<CropParam>();
    vec![
        ("x", p.x.to_string()),
        ("y", p.y.to_string()),
        ("width", p.width.to_string()),
        ("height", p.height.to_string()),
    ]
}

pub static CROP: OpDef = OpDef {
    name: "_image_crop",
    doc: "Crops an image of shape (H, W, C) or a batch (N, H, W, C) (C is 1 or 3) to the box \
          with top-left corner (x, y) and size width x height; returns (height, width, C) or \
          (N, height, width, C) of the input's dtype. The box must lie inside the image.",
    parse: |a| parse_crop(a, "_image_crop"),
    infer_shape: |c, ins, outs| {
        if let Some(s) = known(ins) {
            outs[0] = Some(crop_shape(c.name(), c.p::<CropParam>(), &s)?);
        }
        Ok(())
    },
    infer_type: type_numeric,
    cpu: Some(|c, i, o, _| {
        crop_copy(c.p::<CropParam>(), &i[0], &o[0], true);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let attrs = crop_attrs(c);
        let a: Vec<(&str, String)> = attrs.iter().map(|(k, v)| (*k, v.clone())).collect();
        let r = b.op1("_backward_image_crop", &a, &[g[0], x[0]])?;
        Ok(vec![Some(r)])
    }),
    ..OpDef::BASE
};

pub static CROP_BACKWARD: OpDef = OpDef {
    name: "_backward_image_crop",
    doc: "Gradient of _image_crop: the output gradient placed in the crop box of an array \
          shaped like data, zeros elsewhere.",
    inputs: &["ograd", "data"],
    parse: |a| parse_crop(a, "_backward_image_crop"),
    infer_shape: |c, ins, outs| {
        if let (Some(g), Some(s)) = (ins[0].clone(), ins[1].clone()) {
            let want = crop_shape(c.name(), c.p::<CropParam>(), &s)?;
            if g != want {
                return Err(Error::Shape(format!(
                    "{}: ograd has shape {}, expected {}",
                    c.name(),
                    fmt_shape(&g),
                    fmt_shape(&want)
                )));
            }
            outs[0] = Some(s);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if let Some(t) = ins[1].or(ins[0]) {
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        o[0].bytes_mut().fill(0);
        crop_copy(c.p::<CropParam>(), &o[0], &i[0], false);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// flips
// ---------------------------------------------------------------------------

fn flip(i: &Blob, o: &Blob, left_right: bool) {
    let s = &i.shape;
    let (h, w, c) = (s[0], s[1], s[2]);
    let px = c * i.dtype.size();
    let (src, dst) = (i.bytes(), o.bytes_mut());
    for r in 0..h {
        let sr = if left_right { r } else { h - 1 - r };
        let srow = &src[sr * w * px..(sr + 1) * w * px];
        let drow = &mut dst[r * w * px..(r + 1) * w * px];
        if left_right {
            for x in 0..w {
                drow[x * px..(x + 1) * px].copy_from_slice(&srow[(w - 1 - x) * px..(w - x) * px]);
            }
        } else {
            drow.copy_from_slice(srow);
        }
    }
}

fn flip_grad(
    c: &OpCall,
    b: &mut dyn GradBuilder,
    _: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    Ok(vec![Some(b.op1(c.name(), &[], &[g[0]])?)])
}

pub static FLIP_LEFT_RIGHT: OpDef = OpDef {
    name: "_image_flip_left_right",
    doc: "Flips an image of shape (H, W, C) (C is 1 or 3) horizontally (reverses the width \
          axis). Gradient: the output gradient flipped back (MXNet passes it unflipped).",
    infer_shape: same_rgb_image,
    infer_type: type_same,
    cpu: Some(|_, i, o, _| {
        flip(&i[0], &o[0], true);
        Ok(())
    }),
    grad: Some(flip_grad),
    ..OpDef::BASE
};

pub static FLIP_TOP_BOTTOM: OpDef = OpDef {
    name: "_image_flip_top_bottom",
    doc: "Flips an image of shape (H, W, C) (C is 1 or 3) vertically (reverses the height \
          axis). Gradient: the output gradient flipped back (MXNet passes it unflipped).",
    infer_shape: same_rgb_image,
    infer_type: type_same,
    cpu: Some(|_, i, o, _| {
        flip(&i[0], &o[0], false);
        Ok(())
    }),
    grad: Some(flip_grad),
    ..OpDef::BASE
};

fn coin(ctx: crate::Context) -> bool {
    with_rng(ctx, |r| r.uniform() < 0.5)
}

pub static RANDOM_FLIP_LEFT_RIGHT: OpDef = OpDef {
    name: "_image_random_flip_left_right",
    doc: "Flips an image of shape (H, W, C) (C is 1 or 3) horizontally with probability 0.5, \
          else copies it. No gradient (which flip was drawn is not kept).",
    infer_shape: same_rgb_image,
    infer_type: type_same,
    cpu: Some(|_, i, o, k| {
        if coin(k.ctx) {
            flip(&i[0], &o[0], true)
        } else {
            copy_all(&i[0], &o[0])
        }
        Ok(())
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static RANDOM_FLIP_TOP_BOTTOM: OpDef = OpDef {
    name: "_image_random_flip_top_bottom",
    doc: "Flips an image of shape (H, W, C) (C is 1 or 3) vertically with probability 0.5, \
          else copies it. No gradient (which flip was drawn is not kept).",
    infer_shape: same_rgb_image,
    infer_type: type_same,
    cpu: Some(|_, i, o, k| {
        if coin(k.ctx) {
            flip(&i[0], &o[0], false)
        } else {
            copy_all(&i[0], &o[0])
        }
        Ok(())
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// colour adjustments (in place on the output, HWC, C = 1 or 3)
// ---------------------------------------------------------------------------

const GRAY: [f32; 3] = [0.299, 0.587, 0.114];

fn brightness<T: Elem>(d: &mut [T], alpha: f32) {
    for v in d.iter_mut() {
        *v = T::from_f32(v.to_f32() * alpha);
    }
}

fn contrast<T: Elem>(d: &mut [T], c: usize, alpha: f32) {
    let pixels = d.len() / c.max(1);
    let mut sum = 0f32;
    if c == 3 {
        for p in d.chunks_exact(3) {
            for k in 0..3 {
                sum += p[k].to_f32() * GRAY[k];
            }
        }
    } else {
        for v in d.iter() {
            sum += v.to_f32();
        }
    }
    let mean = sum / pixels as f32;
    let beta = (1.0 - alpha) * mean;
    for v in d.iter_mut() {
        *v = T::from_f32(v.to_f32() * alpha + beta);
    }
}

/// MXNet 1.9.1's saturation: the "gray" it blends with is 0.114 * blue
/// (its loop assigns instead of summing the three weighted channels).
fn saturation<T: Elem>(d: &mut [T], c: usize, alpha: f32) {
    if c != 3 {
        return;
    }
    let keep = 1.0 - alpha;
    for p in d.chunks_exact_mut(3) {
        let gray = p[2].to_f32() * GRAY[2] * keep;
        for v in p.iter_mut() {
            *v = T::from_f32(gray + v.to_f32() * alpha);
        }
    }
}

/// RGB in [0, 255] to (hue in degrees, lightness, saturation) in [0, 1].
fn rgb_to_hls(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let (r, g, b) = (r / 255.0, g / 255.0, b / 255.0);
    let vmax = r.max(g).max(b);
    let vmin = r.min(g).min(b);
    let diff = vmax - vmin;
    let l = (vmax + vmin) * 0.5;
    let (mut h, mut s) = (0f32, 0f32);
    if diff > f32::EPSILON {
        s = if l < 0.5 {
            diff / (vmax + vmin)
        } else {
            diff / (2.0 - vmax - vmin)
        };
        let k = 60.0 / diff;
        h = if vmax == r {
            (g - b) * k
        } else if vmax == g {
            (b - r) * k + 120.0
        } else {
            (r - g) * k + 240.0
        };
        if h < 0.0 {
            h += 360.0;
        }
    }
    (h, l, s)
}

/// The inverse of [`rgb_to_hls`] (any hue, wrapped to [0, 360)), RGB in [0, 255].
fn hls_to_rgb(h: f32, l: f32, s: f32) -> (f32, f32, f32) {
    if s == 0.0 {
        return (l * 255.0, l * 255.0, l * 255.0);
    }
    let hi = if l <= 0.5 {
        l * (1.0 + s)
    } else {
        l + s - l * s
    };
    let lo = 2.0 * l - hi;
    // (times 1/60 rather than divided by 60: MXNet's rounding)
    let mut h = h * (1.0 / 60.0);
    while h < 0.0 {
        h += 6.0;
    }
    while h >= 6.0 {
        h -= 6.0;
    }
    let sector = (h as usize).min(5);
    let f = h - sector as f32;
    let down = lo + (hi - lo) * (1.0 - f);
    let up = lo + (hi - lo) * f;
    // (r, g, b) per 60-degree sector
    let (r, g, b) = match sector {
        0 => (hi, up, lo),
        1 => (down, hi, lo),
        2 => (lo, hi, up),
        3 => (lo, down, hi),
        4 => (up, lo, hi),
        _ => (hi, lo, down),
    };
    (r * 255.0, g * 255.0, b * 255.0)
}

/// Rotates the hue by alpha * 360 degrees (HLS space); 1-channel images
/// are left as they are.
fn hue<T: Elem>(d: &mut [T], c: usize, alpha: f32) {
    if c != 3 {
        return;
    }
    for p in d.chunks_exact_mut(3) {
        let (h, l, s) = rgb_to_hls(p[0].to_f32(), p[1].to_f32(), p[2].to_f32());
        let (r, g, b) = hls_to_rgb(h + alpha * 360.0, l, s);
        p[0] = T::from_f32(r);
        p[1] = T::from_f32(g);
        p[2] = T::from_f32(b);
    }
}

/// AlexNet's PCA lighting: eigenvalue-scaled eigenvectors of ImageNet's
/// RGB covariance, as MXNet writes them.
const EIG: [[f32; 3]; 3] = [
    [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
];

fn lighting<T: Elem>(d: &mut [T], c: usize, alpha: [f32; 3]) {
    if c != 3 {
        return;
    }
    let add: Vec<f32> = EIG
        .iter()
        .map(|e| e[0] * alpha[0] + e[1] * alpha[1] + e[2] * alpha[2])
        .collect();
    for p in d.chunks_exact_mut(3) {
        for k in 0..3 {
            p[k] = T::from_f32(p[k].to_f32() + add[k]);
        }
    }
}

#[derive(Clone, Copy)]
enum Adjust {
    Brightness(f32),
    Contrast(f32),
    Saturation(f32),
    Hue(f32),
    Lighting([f32; 3]),
}

fn apply<T: Elem>(d: &mut [T], c: usize, a: Adjust) {
    match a {
        Adjust::Brightness(x) => brightness(d, x),
        Adjust::Contrast(x) => contrast(d, c, x),
        Adjust::Saturation(x) => saturation(d, c, x),
        Adjust::Hue(x) => hue(d, c, x),
        Adjust::Lighting(x) => lighting(d, c, x),
    }
}

/// Copies the input to the output, then applies the adjustments in order
/// (each one stores through the dtype, as MXNet's chain does).
fn adjust(i: &Blob, o: &Blob, steps: &[Adjust]) {
    copy_all(i, o);
    let c = i.shape[i.ndim() - 1];
    dispatch_dtype!(o.dtype, T => {
        let d = o.data_mut::<T>();
        for s in steps {
            apply(d, c, *s);
        }
    });
}

pub struct FactorParam {
    min: f32,
    max: f32,
}

fn parse_factors(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let (min, max) = (p.f64_req("min_factor")?, p.f64_req("max_factor")?);
    for (k, v) in [("min_factor", min), ("max_factor", max)] {
        if !(v >= 0.0) {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' must be greater than or equal to 0, got {v}"
            )));
        }
    }
    Ok(Box::new(FactorParam {
        min: min as f32,
        max: max as f32,
    }) as Params)
}

fn draw_factor(c: &OpCall, ctx: crate::Context) -> f32 {
    let p = c.p::<FactorParam>();
    with_rng(ctx, |r| p.min + (p.max - p.min) * r.uniform_f32())
}

macro_rules! random_factor_op {
    ($id:ident, $name:literal, $variant:ident, $doc:literal) => {
        pub static $id: OpDef = OpDef {
            name: $name,
            doc: $doc,
            parse: |a| parse_factors(a, $name),
            infer_shape: same_rgb_image,
            infer_type: type_numeric,
            cpu: Some(|c, i, o, k| {
                let f = draw_factor(c, k.ctx);
                adjust(&i[0], &o[0], &[Adjust::$variant(f)]);
                Ok(())
            }),
            resources: &[Resource::Rng],
            ..OpDef::BASE
        };
    };
}

random_factor_op!(
    RANDOM_BRIGHTNESS,
    "_image_random_brightness",
    Brightness,
    "Multiplies an image of shape (H, W, C) (C is 1 or 3) by a factor drawn uniformly from \
     [min_factor, max_factor]. Same dtype out (uint8 saturates). No gradient."
);
random_factor_op!(
    RANDOM_CONTRAST,
    "_image_random_contrast",
    Contrast,
    "Blends an image of shape (H, W, C) (C is 1 or 3) with its mean gray level (weights 0.299, \
     0.587, 0.114; the plain mean for 1 channel): out = alpha * x + (1 - alpha) * mean, alpha \
     drawn uniformly from [min_factor, max_factor]. Same dtype out. No gradient."
);
random_factor_op!(
    RANDOM_SATURATION,
    "_image_random_saturation",
    Saturation,
    "Changes the saturation of an image of shape (H, W, C) (C is 1 or 3) by a factor alpha drawn \
     uniformly from [min_factor, max_factor]: out = alpha * x + (1 - alpha) * gray, where \
     gray is 0.114 * blue as MXNet 1.9.1 computes it. 1-channel images are copied. No gradient."
);
random_factor_op!(
    RANDOM_HUE,
    "_image_random_hue",
    Hue,
    "Rotates the hue of an RGB image of shape (H, W, 3) by alpha * 360 degrees in HLS space, \
     alpha drawn uniformly from [min_factor, max_factor]; 1-channel images are copied. No \
     gradient."
);

pub struct JitterParam {
    brightness: f32,
    contrast: f32,
    saturation: f32,
    hue: f32,
}

pub static RANDOM_COLOR_JITTER: OpDef = OpDef {
    name: "_image_random_color_jitter",
    doc: "Applies brightness, contrast, saturation and hue jitter to an image of shape (H, W, C) \
          (C is 1 or 3) in a random order: factors 1 + U(-brightness, brightness), \
          1 + U(-contrast, contrast), 1 + U(-saturation, saturation) and a hue shift \
          U(-hue, hue); a jitter whose amount is not positive is skipped. No gradient.",
    parse: |a| {
        let p = a.p("_image_random_color_jitter");
        Ok(Box::new(JitterParam {
            brightness: p.f64_req("brightness")? as f32,
            contrast: p.f64_req("contrast")? as f32,
            saturation: p.f64_req("saturation")? as f32,
            hue: p.f64_req("hue")? as f32,
        }) as Params)
    },
    infer_shape: same_rgb_image,
    infer_type: type_numeric,
    cpu: Some(|c, i, o, k| {
        let p = c.p::<JitterParam>();
        let steps = with_rng(k.ctx, |r| {
            let mut order = [0usize, 1, 2, 3];
            for j in (1..4).rev() {
                order.swap(j, r.below(j as u64 + 1) as usize);
            }
            let mut u = |a: f32| -a + 2.0 * a * r.uniform_f32();
            let mut steps = Vec::new();
            for j in order {
                match j {
                    0 if p.brightness > 0.0 => {
                        steps.push(Adjust::Brightness(1.0 + u(p.brightness)))
                    }
                    1 if p.contrast > 0.0 => steps.push(Adjust::Contrast(1.0 + u(p.contrast))),
                    2 if p.saturation > 0.0 => {
                        steps.push(Adjust::Saturation(1.0 + u(p.saturation)))
                    }
                    3 if p.hue > 0.0 => steps.push(Adjust::Hue(u(p.hue))),
                    _ => {}
                }
            }
            steps
        });
        adjust(&i[0], &o[0], &steps);
        Ok(())
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

fn identity_grad(
    _: &OpCall,
    _: &mut dyn GradBuilder,
    _: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    Ok(vec![Some(g[0])])
}

pub struct LightingParam {
    alpha: [f32; 3],
}

pub static ADJUST_LIGHTING: OpDef = OpDef {
    name: "_image_adjust_lighting",
    doc: "Adds AlexNet-style PCA lighting noise to an RGB image of shape (H, W, 3): alpha holds \
          the weights of the three principal components of ImageNet's RGB covariance; \
          1-channel images are copied. Gradient: the identity (the added offset does not \
          depend on the input).",
    parse: |a| {
        let op = "_image_adjust_lighting";
        let v = a
            .p(op)
            .floats("alpha")?
            .ok_or_else(|| Error::Param(format!("{op}: required argument 'alpha' is missing")))?;
        if v.len() != 3 {
            return Err(Error::Param(format!(
                "{op}: argument 'alpha' must hold 3 values (one per principal component), got {}",
                v.len()
            )));
        }
        Ok(Box::new(LightingParam {
            alpha: [v[0] as f32, v[1] as f32, v[2] as f32],
        }) as Params)
    },
    infer_shape: same_rgb_image,
    infer_type: type_numeric,
    cpu: Some(|c, i, o, _| {
        adjust(
            &i[0],
            &o[0],
            &[Adjust::Lighting(c.p::<LightingParam>().alpha)],
        );
        Ok(())
    }),
    grad: Some(identity_grad),
    ..OpDef::BASE
};

pub struct RandomLightingParam {
    alpha_std: f32,
}

pub static RANDOM_LIGHTING: OpDef = OpDef {
    name: "_image_random_lighting",
    doc: "adjust_lighting with the three alphas drawn from N(0, alpha_std) (default 0.05). \
          Gradient: the identity.",
    parse: |a| {
        Ok(Box::new(RandomLightingParam {
            alpha_std: a.p("_image_random_lighting").f64("alpha_std", 0.05)? as f32,
        }) as Params)
    },
    infer_shape: same_rgb_image,
    infer_type: type_numeric,
    cpu: Some(|c, i, o, k| {
        let s = c.p::<RandomLightingParam>().alpha_std;
        let alpha = with_rng(k.ctx, |r| {
            [
                r.normal() as f32 * s,
                r.normal() as f32 * s,
                r.normal() as f32 * s,
            ]
        });
        adjust(&i[0], &o[0], &[Adjust::Lighting(alpha)]);
        Ok(())
    }),
    grad: Some(identity_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &TO_TENSOR,
    &NORMALIZE,
    &CROP,
    &CROP_BACKWARD,
    &FLIP_LEFT_RIGHT,
    &FLIP_TOP_BOTTOM,
    &RANDOM_FLIP_LEFT_RIGHT,
    &RANDOM_FLIP_TOP_BOTTOM,
    &RANDOM_BRIGHTNESS,
    &RANDOM_CONTRAST,
    &RANDOM_SATURATION,
    &RANDOM_HUE,
    &RANDOM_COLOR_JITTER,
    &ADJUST_LIGHTING,
    &RANDOM_LIGHTING,
    &super::image_resize::RESIZE,
];
