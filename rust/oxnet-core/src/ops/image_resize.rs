//! `_image_resize` (`mx.nd.image.resize`): MXNet resizes with OpenCV's
//! `cv::resize`, so this follows OpenCV's conventions: pixel centres at
//! half-integers (source x = (dst x + 0.5) * scale - 0.5), edge pixels
//! replicated, separable horizontal-then-vertical passes, and for uint8
//! images OpenCV's fixed-point arithmetic (weights in 1/2048ths, rounded
//! results); float images are computed in their own precision.
use super::registry::{OpCall, OpDef, Params};
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

pub struct ResizeParam {
    /// (width, height) or (size,).
    size: Vec<usize>,
    keep_ratio: bool,
    interp: Interp,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Interp {
    Nearest,
    Linear,
    Cubic,
    Lanczos,
    Area,
}

const OP: &str = "_image_resize";

fn parse(a: &super::attrs::Attrs) -> Result<Params> {
    let p = a.p(OP);
    let size = p.ints("size")?.unwrap_or_default();
    if size.len() != 1 && size.len() != 2 {
        return Err(Error::Param(format!(
            "{OP}: argument 'size' must hold 1 value (size) or 2 (width, height), got {size:?}"
        )));
    }
    if size[0] <= 0 {
        return Err(Error::Param(format!(
            "{OP}: the width in 'size' must be greater than 0, got {}",
            size[0]
        )));
    }
    if size.len() == 2 && size[1] <= 0 {
        return Err(Error::Param(format!(
            "{OP}: the height in 'size' must be greater than 0, got {}",
            size[1]
        )));
    }
    let interp = match p.i64("interp", 1)? {
        0 => Interp::Nearest,
        1 => Interp::Linear,
        2 => Interp::Cubic,
        3 => Interp::Area,
        4 => Interp::Lanczos,
        v => {
            return Err(Error::Param(format!(
                "{OP}: argument 'interp' must be 0 (nearest), 1 (bilinear), 2 (bicubic), \
                 3 (area) or 4 (Lanczos), got {v}"
            )))
        }
    };
    Ok(Box::new(ResizeParam {
        size: size.iter().map(|&v| v as usize).collect(),
        keep_ratio: p.bool("keep_ratio", false)?,
        interp,
    }) as Params)
}

/// Output (height, width) for an input (h, w).
fn out_hw(p: &ResizeParam, h: usize, w: usize) -> (usize, usize) {
    if p.size.len() == 2 {
        return (p.size[1], p.size[0]);
    }
    let s = p.size[0];
    if !p.keep_ratio {
        return (s, s);
    }
    if h > w {
        (h * s / w.max(1), s)
    } else {
        (s, w * s / h.max(1))
    }
}

/// Per output position, `k` (source index, weight) taps along one axis.
struct Taps {
    k: usize,
    idx: Vec<usize>,
    w: Vec<f32>,
}

fn cubic_weights(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

fn lanczos_weights(x: f32) -> [f32; 8] {
    let mut c = [0f32; 8];
    if x < f32::EPSILON {
        c[3] = 1.0;
        return c;
    }
    let sinc = |t: f64| {
        let y = t * std::f64::consts::PI;
        y.sin() / y
    };
    let mut sum = 0f32;
    for (i, v) in c.iter_mut().enumerate() {
        let t = x as f64 + 3.0 - i as f64;
        *v = (sinc(t) * sinc(t / 4.0)) as f32;
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in c.iter_mut() {
        *v *= inv;
    }
    c
}

/// `vertical`: OpenCV clamps the bilinear weights at the image edges along
/// x only; along y it clamps the row indices and keeps the weights.
fn taps(src: usize, dst: usize, interp: Interp, vertical: bool) -> Taps {
    // OpenCV: scale = 1 / (dst / src), in double
    let scale = 1.0 / (dst as f64 / src as f64);
    let last = src as isize - 1;
    let clamp = |i: isize| i.clamp(0, last) as usize;
    let mut t = Taps {
        k: match interp {
            Interp::Nearest => 1,
            Interp::Linear | Interp::Area => 2,
            Interp::Cubic => 4,
            Interp::Lanczos => 8,
        },
        idx: Vec::new(),
        w: Vec::new(),
    };
    for d in 0..dst {
        if interp == Interp::Nearest {
            let s = ((d as f64 * scale).floor() as usize).min(src - 1);
            t.idx.push(s);
            t.w.push(1.0);
            continue;
        }
        let (mut s, mut fx) = if interp == Interp::Area {
            // area when enlarging: linear between the source pixels an
            // output pixel straddles, else the one it lies in
            let s = (d as f64 * scale).floor();
            let f = ((d as f64 + 1.0) - (s + 1.0) / scale) as f32;
            (s as isize, if f <= 0.0 { 0.0 } else { f - f.floor() })
        } else {
            let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let s = f.floor();
            (s as isize, f - s)
        };
        match interp {
            Interp::Linear | Interp::Area => {
                if !vertical && s < 0 {
                    s = 0;
                    fx = 0.0;
                }
                if !vertical && s >= last {
                    s = last;
                    fx = 0.0;
                }
                t.idx.push(clamp(s));
                t.idx.push(clamp(s + 1));
                t.w.push(1.0 - fx);
                t.w.push(fx);
            }
            Interp::Cubic => {
                let w = cubic_weights(fx);
                for (j, wj) in w.iter().enumerate() {
                    t.idx.push(clamp(s - 1 + j as isize));
                    t.w.push(*wj);
                }
            }
            Interp::Lanczos => {
                let w = lanczos_weights(fx);
                for (j, wj) in w.iter().enumerate() {
                    t.idx.push(clamp(s - 3 + j as isize));
                    t.w.push(*wj);
                }
            }
            Interp::Nearest => unreachable!(),
        }
    }
    t
}

/// OpenCV's area taps for shrinking: each output cell averages the source
/// pixels it covers, partly covered ones weighted by the covered part.
fn area_taps(src: usize, dst: usize) -> Vec<Vec<(usize, f32)>> {
    let scale = 1.0 / (dst as f64 / src as f64);
    (0..dst)
        .map(|d| {
            let f1 = d as f64 * scale;
            let f2 = f1 + scale;
            let cell = scale.min(src as f64 - f1);
            let s2 = (f2.floor() as usize).min(src - 1);
            let s1 = (f1.ceil() as usize).min(s2);
            let mut t = Vec::new();
            if s1 as f64 - f1 > 1e-3 {
                t.push((s1 - 1, ((s1 as f64 - f1) / cell) as f32));
            }
            for k in s1..s2 {
                t.push((k, (1.0 / cell) as f32));
            }
            if f2 - s2 as f64 > 1e-3 {
                t.push((s2, ((f2 - s2 as f64).min(1.0).min(cell) / cell) as f32));
            }
            t
        })
        .collect()
}

/// How an area resize of (h, w) to (oh, ow) runs in OpenCV.
enum AreaMode {
    /// Both scales are integers >= 1: block means.
    Fast(usize, usize),
    /// Shrinking both ways: [`area_taps`].
    Shrink,
    /// Otherwise: bilinear with the area rule for the weights.
    Enlarge,
}

fn area_mode(hw: (usize, usize), ohw: (usize, usize)) -> AreaMode {
    let sx = 1.0 / (ohw.1 as f64 / hw.1 as f64);
    let sy = 1.0 / (ohw.0 as f64 / hw.0 as f64);
    if sx >= 1.0 && sy >= 1.0 {
        let (ix, iy) = (sx.round(), sy.round());
        if (sx - ix).abs() < f64::EPSILON && (sy - iy).abs() < f64::EPSILON {
            return AreaMode::Fast(ix as usize, iy as usize);
        }
        return AreaMode::Shrink;
    }
    AreaMode::Enlarge
}

/// Area shrink in float (`round` rounds uint8 results to nearest, ties to even).
fn area_shrink<T: Copy>(
    src: &[T],
    dst: &mut [T],
    hw: (usize, usize),
    ohw: (usize, usize),
    c: usize,
    get: impl Fn(T) -> f64,
    put: impl Fn(f64) -> T,
    f32_math: bool,
) {
    let ((h, w), (oh, ow)) = (hw, ohw);
    let (xt, yt) = (area_taps(w, ow), area_taps(h, oh));
    let rw = ow * c;
    let round = |v: f64| if f32_math { v as f32 as f64 } else { v };
    let mut rows = vec![0f64; h * rw];
    for r in 0..h {
        let s = &src[r * w * c..(r + 1) * w * c];
        for (x, taps) in xt.iter().enumerate() {
            for ch in 0..c {
                let mut acc = 0f64;
                for &(k, wt) in taps {
                    acc = round(acc + round(get(s[k * c + ch]) * wt as f64));
                }
                rows[r * rw + x * c + ch] = acc;
            }
        }
    }
    for (y, taps) in yt.iter().enumerate() {
        for x in 0..rw {
            let mut acc = 0f64;
            for &(k, wt) in taps {
                acc = round(acc + round(rows[k * rw + x] * wt as f64));
            }
            dst[y * rw + x] = put(acc);
        }
    }
}

/// Block means for integer shrink factors (kx, ky).
fn area_fast<T: Copy>(
    src: &[T],
    dst: &mut [T],
    w: usize,
    ohw: (usize, usize),
    c: usize,
    (kx, ky): (usize, usize),
    mean: impl Fn(f64, usize) -> T,
    get: impl Fn(T) -> f64,
) {
    let (oh, ow) = ohw;
    for y in 0..oh {
        for x in 0..ow {
            for ch in 0..c {
                let mut sum = 0f64;
                for dy in 0..ky {
                    for dx in 0..kx {
                        sum += get(src[((y * ky + dy) * w + x * kx + dx) * c + ch]);
                    }
                }
                dst[(y * ow + x) * c + ch] = mean(sum, kx * ky);
            }
        }
    }
}

/// OpenCV's `saturate_cast<short>(w * 2048)`: rounded to nearest, ties to even.
fn fixed(w: f32) -> i32 {
    (w * 2048.0).round_ties_even() as i32
}

/// One image (h, w, c) to (oh, ow, c), uint8 in OpenCV's fixed point.
fn resize_u8(
    src: &[u8],
    dst: &mut [u8],
    hw: (usize, usize),
    ohw: (usize, usize),
    c: usize,
    interp: Interp,
) {
    let ((h, w), (oh, ow)) = (hw, ohw);
    if interp == Interp::Area {
        match area_mode(hw, ohw) {
            AreaMode::Fast(kx, ky) => {
                // OpenCV's vectorised 2x2 mean rounds halves up; the others
                // multiply by 1/area in float and round to nearest even
                let vec2 = kx == 2 && ky == 2 && matches!(c, 1 | 3 | 4);
                let mean = |sum: f64, n: usize| {
                    if vec2 {
                        ((sum as u32 + 2) >> 2) as u8
                    } else {
                        (sum as f32 * (1.0 / n as f32))
                            .round_ties_even()
                            .clamp(0.0, 255.0) as u8
                    }
                };
                area_fast(src, dst, w, ohw, c, (kx, ky), mean, |v| v as f64);
                return;
            }
            AreaMode::Shrink => {
                let put = |v: f64| (v as f32).round_ties_even().clamp(0.0, 255.0) as u8;
                area_shrink(src, dst, hw, ohw, c, |v| v as f64, put, true);
                return;
            }
            AreaMode::Enlarge => {}
        }
    }
    let (xt, yt) = (taps(w, ow, interp, false), taps(h, oh, interp, true));
    if interp == Interp::Nearest {
        for y in 0..oh {
            let sr = &src[yt.idx[y] * w * c..];
            for x in 0..ow {
                let sx = xt.idx[x];
                dst[(y * ow + x) * c..(y * ow + x + 1) * c]
                    .copy_from_slice(&sr[sx * c..sx * c + c]);
            }
        }
        return;
    }
    let xw: Vec<i32> = xt.w.iter().map(|&v| fixed(v)).collect();
    let yw: Vec<i32> = yt.w.iter().map(|&v| fixed(v)).collect();
    let (kx, ky) = (xt.k, yt.k);
    let hrow = |s: &[u8], o: &mut [i32]| {
        for x in 0..ow {
            let (ix, wx) = (&xt.idx[x * kx..(x + 1) * kx], &xw[x * kx..(x + 1) * kx]);
            for ch in 0..c {
                o[x * c + ch] = if kx == 2 {
                    s[ix[0] * c + ch] as i32 * wx[0] + s[ix[1] * c + ch] as i32 * wx[1]
                } else {
                    (0..kx).map(|j| s[ix[j] * c + ch] as i32 * wx[j]).sum()
                };
            }
        }
    };
    let vrow = |rs: &[&[i32]], y: usize, o: &mut [u8]| {
        let b = &yw[y * ky..(y + 1) * ky];
        if matches!(interp, Interp::Linear | Interp::Area) {
            // OpenCV's vectorised path: rows scaled down by 16, multiplied
            // by the weight keeping the high 16 bits, then rounded by 4
            let (r0, r1) = (rs[0], rs[1]);
            for ((v, &p0), &p1) in o.iter_mut().zip(r0).zip(r1) {
                let a = ((p0 >> 4) * b[0]) >> 16;
                let bb = ((p1 >> 4) * b[1]) >> 16;
                *v = ((a + bb + 2) >> 2).clamp(0, 255) as u8;
            }
        } else {
            for (x, v) in o.iter_mut().enumerate() {
                let mut acc = 0i64;
                for (j, r) in rs.iter().enumerate() {
                    acc += r[x] as i64 * b[j] as i64;
                }
                *v = ((acc + (1 << 21)) >> 22).clamp(0, 255) as u8;
            }
        }
    };
    separable(src, dst, (w, c), (oh, ow * c), &yt, hrow, vrow);
}

/// The separable resize's two passes, in parallel over bands of output
/// rows. `hrow` filters one source row (w x c) horizontally into a row of
/// `rw` values; `vrow` blends the `yt.k` filtered rows output row `y`
/// reads. A band filters only the source rows its output rows read, each
/// once (consecutive output rows share rows when enlarging).
fn separable<S: Sync, R: Copy + Default + Send, D: Send>(
    src: &[S],
    dst: &mut [D],
    (w, c): (usize, usize),
    (oh, rw): (usize, usize),
    yt: &Taps,
    hrow: impl Fn(&[S], &mut [R]) + Sync,
    vrow: impl Fn(&[&[R]], usize, &mut [D]) + Sync,
) {
    if oh == 0 || rw == 0 {
        return;
    }
    let ky = yt.k;
    let band = oh.div_ceil(2 * crate::par::num_threads()).max(1);
    crate::par::par_chunks_mut(dst, band * rw, |bi, out| {
        // filtered rows kept: (source row, values)
        let mut kept: Vec<(usize, Vec<R>)> = Vec::new();
        for (yy, o) in out.chunks_mut(rw).enumerate() {
            let y = bi * band + yy;
            let need = &yt.idx[y * ky..(y + 1) * ky];
            kept.retain(|(r, _)| need.contains(r));
            for &r in need {
                if !kept.iter().any(|(q, _)| *q == r) {
                    let mut v = vec![R::default(); rw];
                    hrow(&src[r * w * c..(r + 1) * w * c], &mut v);
                    kept.push((r, v));
                }
            }
            let rs: Vec<&[R]> = need
                .iter()
                .map(|r| {
                    let (_, v) = kept
                        .iter()
                        .find(|(q, _)| q == r)
                        .expect("row filtered above");
                    &v[..]
                })
                .collect();
            vrow(&rs, y, o);
        }
    });
}

/// One image (h, w, c) to (oh, ow, c) for float32 (in f32) and float64.
fn resize_float<T: Copy + Into<f64> + FromF64 + Default + Send + Sync>(
    src: &[T],
    dst: &mut [T],
    hw: (usize, usize),
    ohw: (usize, usize),
    c: usize,
    interp: Interp,
) {
    let ((h, w), (oh, ow)) = (hw, ohw);
    if interp == Interp::Area {
        let f32_math = std::mem::size_of::<T>() == 4;
        match area_mode(hw, ohw) {
            AreaMode::Fast(kx, ky) => {
                let mean = |sum: f64, n: usize| {
                    if f32_math {
                        T::from_f64((sum as f32 * (1.0 / n as f32)) as f64)
                    } else {
                        T::from_f64(sum * (1.0 / n as f64))
                    }
                };
                area_fast(src, dst, w, ohw, c, (kx, ky), mean, |v| v.into());
                return;
            }
            AreaMode::Shrink => {
                area_shrink(src, dst, hw, ohw, c, |v| v.into(), T::from_f64, f32_math);
                return;
            }
            AreaMode::Enlarge => {}
        }
    }
    let (xt, yt) = (taps(w, ow, interp, false), taps(h, oh, interp, true));
    let hrow = |s: &[T], o: &mut [T]| {
        for x in 0..ow {
            for ch in 0..c {
                let mut acc = T::from_f64(0.0);
                for j in 0..xt.k {
                    acc = T::mul_add(s[xt.idx[x * xt.k + j] * c + ch], xt.w[x * xt.k + j], acc);
                }
                o[x * c + ch] = acc;
            }
        }
    };
    let vrow = |rs: &[&[T]], y: usize, o: &mut [T]| {
        for (x, v) in o.iter_mut().enumerate() {
            let mut acc = T::from_f64(0.0);
            for (j, r) in rs.iter().enumerate() {
                acc = T::mul_add(r[x], yt.w[y * yt.k + j], acc);
            }
            *v = acc;
        }
    };
    separable(src, dst, (w, c), (oh, ow * c), &yt, hrow, vrow);
}

/// Float arithmetic in the element's own precision (f32 for float32).
trait FromF64: Copy {
    fn from_f64(v: f64) -> Self;
    /// acc + a * w (two roundings, no fused multiply-add).
    fn mul_add(a: Self, w: f32, acc: Self) -> Self;
}

impl FromF64 for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn mul_add(a: Self, w: f32, acc: Self) -> Self {
        acc + a * w
    }
}

impl FromF64 for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn mul_add(a: Self, w: f32, acc: Self) -> Self {
        acc + a * w as f64
    }
}

fn kernel(c: &OpCall, i: &[Blob], o: &[Blob]) -> Result<()> {
    let p = c.p::<ResizeParam>();
    let s = &i[0].shape;
    let k = s.len();
    let (n, h, w, ch) = (if k == 4 { s[0] } else { 1 }, s[k - 3], s[k - 2], s[k - 1]);
    let os = &o[0].shape;
    let (oh, ow) = (os[k - 3], os[k - 2]);
    let (ins, outs) = (h * w * ch, oh * ow * ch);
    for b in 0..n {
        match i[0].dtype {
            DType::U8 => resize_u8(
                &i[0].data::<u8>()[b * ins..(b + 1) * ins],
                &mut o[0].data_mut::<u8>()[b * outs..(b + 1) * outs],
                (h, w),
                (oh, ow),
                ch,
                p.interp,
            ),
            DType::F32 => resize_float(
                &i[0].data::<f32>()[b * ins..(b + 1) * ins],
                &mut o[0].data_mut::<f32>()[b * outs..(b + 1) * outs],
                (h, w),
                (oh, ow),
                ch,
                p.interp,
            ),
            DType::F64 => resize_float(
                &i[0].data::<f64>()[b * ins..(b + 1) * ins],
                &mut o[0].data_mut::<f64>()[b * outs..(b + 1) * outs],
                (h, w),
                (oh, ow),
                ch,
                p.interp,
            ),
            d => unreachable!("type inference refuses {}", d.name()),
        }
    }
    Ok(())
}

pub static RESIZE: OpDef = OpDef {
    name: "_image_resize",
    doc: "Resizes an image of shape (H, W, C) or a batch (N, H, W, C) (uint8, float32 or \
          float64; any number of channels) with OpenCV's conventions, as MXNet does. size is \
          (width, height), or one number: both sides, or with keep_ratio=True the short side \
          (the long side scaled and truncated). interp: 0 nearest, 1 bilinear (default), \
          2 bicubic, 3 area, 4 Lanczos. Same dtype out; no gradient (MXNet's is broken).",
    parse,
    infer_shape: |c, ins, outs| {
        let Some(s) = ins[0].clone() else {
            return Ok(());
        };
        if s.len() != 3 && s.len() != 4 {
            return Err(Error::Shape(format!(
                "{}: input image must have 3 dimensions (H, W, C) or 4 (N, H, W, C), but got \
                 shape {}",
                c.name(),
                fmt_shape(&s)
            )));
        }
        let k = s.len();
        let (h, w) = (s[k - 3], s[k - 2]);
        if h == 0 || w == 0 {
            return Err(Error::Shape(format!(
                "{}: cannot resize an empty image of shape {}",
                c.name(),
                fmt_shape(&s)
            )));
        }
        let (oh, ow) = out_hw(c.p::<ResizeParam>(), h, w);
        let mut o: Shape = s.clone();
        o[k - 3] = oh;
        o[k - 2] = ow;
        outs[0] = Some(o);
        Ok(())
    },
    infer_type: |c, ins, outs| {
        if let Some(t) = ins[0] {
            if !matches!(t, DType::U8 | DType::F32 | DType::F64) {
                return Err(Error::DType(format!(
                    "{}: dtype {} is not supported (uint8, float32 or float64)",
                    c.name(),
                    t.name()
                )));
            }
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| kernel(c, i, o)),
    ..OpDef::BASE
};
