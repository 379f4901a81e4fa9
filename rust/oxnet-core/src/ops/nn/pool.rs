//! Pooling (max / avg / sum / lp; 1-D, 2-D, 3-D; channel-first or
//! channel-last) and UpSampling (nearest).
use super::{fill_shape, infer_float_same};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::ops::attrs::Attrs;
use crate::ops::registry::{KernelCtx, OpDef, Params};
use crate::par::par_chunks_mut;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PoolType {
    Max,
    Avg,
    Sum,
    Lp,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Convention {
    Valid,
    Full,
    Same,
}

#[derive(Debug, Clone)]
pub struct PoolParam {
    pub kernel: Vec<usize>,
    pub pool_type: PoolType,
    pub global: bool,
    pub conv: Convention,
    pub stride: Vec<usize>,
    pub pad: Vec<usize>,
    pub p_value: f64,
    pub count_include_pad: bool,
    pub channel_last: bool,
}

fn parse_pool(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let global = p.bool("global_pool", false)?;
    let kernel = p.ints("kernel")?.unwrap_or_default();
    if kernel.is_empty() && !global {
        return Err(Error::Param(format!(
            "{op}: argument 'kernel' is required unless global_pool=True"
        )));
    }
    if kernel.len() > 3 || kernel.iter().any(|&k| k < 1) {
        return Err(Error::Param(format!(
            "{op}: kernel {kernel:?} must have 1 to 3 positive entries"
        )));
    }
    let nd = kernel.len();
    let tup = |k: &str, def: i64, min: i64| -> Result<Vec<usize>> {
        let v = p.ints(k)?.unwrap_or_default();
        if v.is_empty() {
            return Ok(vec![def as usize; nd]);
        }
        if (v.len() != nd && !global) || v.iter().any(|&x| x < min) {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must have {nd} entries >= {min} like kernel {kernel:?}"
            )));
        }
        Ok(v.into_iter().map(|x| x as usize).collect())
    };
    let pool_type = match p.str("pool_type", "max").as_str() {
        "max" => PoolType::Max,
        "avg" => PoolType::Avg,
        "sum" => PoolType::Sum,
        "lp" => PoolType::Lp,
        t => {
            return Err(Error::Param(format!(
                "{op}: pool_type '{t}' is not one of max, avg, sum, lp"
            )))
        }
    };
    let conv = match p.str("pooling_convention", "valid").as_str() {
        "valid" => Convention::Valid,
        "full" => Convention::Full,
        "same" => Convention::Same,
        t => {
            return Err(Error::Param(format!(
                "{op}: pooling_convention '{t}' is not one of valid, full, same"
            )))
        }
    };
    // MXNet: "Same pooling convention disables the use of pad parameter": any number of zero
    // entries is accepted, a non-zero one is an error.
    let pad = if conv == Convention::Same && !global {
        let v = p.ints("pad")?.unwrap_or_default();
        if v.iter().any(|&x| x != 0) {
            return Err(Error::Param(format!(
                "{op}: pooling_convention 'same' disables the pad parameter (got pad {v:?}; \
                 the padding is implied by the output size ceil(x / stride))"
            )));
        }
        vec![0; nd]
    } else {
        tup("pad", 0, 0)?
    };
    let p_value = p.f64("p_value", 2.0)?;
    if pool_type == PoolType::Lp && p_value <= 0.0 {
        return Err(Error::Param(format!(
            "{op}: p_value must be positive, got {p_value}"
        )));
    }
    let _ = p.bool("cudnn_off", false)?;
    let layout = p.opt_str("layout");
    let channel_last = match layout.as_deref() {
        None | Some("NCW") | Some("NCHW") | Some("NCDHW") => false,
        Some("NWC") | Some("NHWC") | Some("NDHWC") => true,
        Some(l) => return Err(Error::Param(format!("{op}: layout '{l}' is not supported"))),
    };
    if let Some(l) = &layout {
        if !global && l.len() != nd + 2 {
            return Err(Error::Param(format!(
                "{op}: layout '{l}' does not fit a {nd}-D kernel {kernel:?}"
            )));
        }
    }
    Ok(Box::new(PoolParam {
        kernel: kernel.iter().map(|&k| k as usize).collect(),
        pool_type,
        global,
        conv,
        stride: tup("stride", 1, 1)?,
        pad,
        p_value,
        count_include_pad: p.bool("count_include_pad", true)?,
        channel_last,
    }))
}

/// Resolved geometry on channel-first data: (N*C planes) x 3-D spatial.
#[derive(Debug, Clone, Copy)]
struct PGeo {
    planes: usize,
    xs: [usize; 3],
    ys: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    p: [usize; 3],
}

fn pool_geo(pp: &PoolParam, shape: &[usize], op: &str) -> Result<(PGeo, Vec<usize>)> {
    if shape.len() < 3 || shape.len() > 5 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must have 3 to 5 dimensions",
            fmt_shape(shape)
        )));
    }
    let nd = shape.len() - 2;
    if !pp.global && pp.kernel.len() != nd {
        return Err(Error::Shape(format!(
            "{op}: kernel {} has {} dimensions but data shape {} has {nd} spatial dimensions",
            fmt_shape(&pp.kernel),
            pp.kernel.len(),
            fmt_shape(shape)
        )));
    }
    let cf = super::conv::to_cf_pub(shape, pp.channel_last);
    let sp = &cf[2..];
    let (k, s, pad): (Vec<usize>, Vec<usize>, Vec<usize>) = if pp.global {
        (sp.to_vec(), vec![1; nd], vec![0; nd])
    } else {
        (pp.kernel.clone(), pp.stride.clone(), pp.pad.clone())
    };
    let mut out = vec![0; nd];
    let mut padv = pad.clone();
    for i in 0..nd {
        let xp = sp[i] + 2 * pad[i];
        out[i] = if pp.global {
            1
        } else {
            if xp < k[i] {
                return Err(Error::Shape(format!(
                    "{op}: kernel {} is larger than the padded data shape {} (pad {})",
                    fmt_shape(&k),
                    fmt_shape(shape),
                    fmt_shape(&pad)
                )));
            }
            match pp.conv {
                // MXNet's 'same': ceil(x / stride) windows starting at 0, the last ones cut
                // off at the end of the data (no padding before the first element).
                Convention::Same => {
                    padv[i] = 0;
                    sp[i].div_ceil(s[i])
                }
                Convention::Valid => (xp - k[i]) / s[i] + 1,
                Convention::Full => (xp - k[i]).div_ceil(s[i]) + 1,
            }
        };
    }
    let p3 = |v: &[usize], f: usize| {
        let mut r = [f; 3];
        r[3 - v.len()..].copy_from_slice(v);
        r
    };
    let mut ocf = vec![cf[0], cf[1]];
    ocf.extend_from_slice(&out);
    let g = PGeo {
        planes: cf[0] * cf[1],
        xs: p3(sp, 1),
        ys: p3(&out, 1),
        k: p3(&k, 1),
        s: p3(&s, 1),
        p: p3(&padv, 0),
    };
    Ok((g, super::conv::from_cf_pub(&ocf, pp.channel_last)))
}

/// Window bounds along one axis, as MXNet computes them: (clipped start,
/// clipped end, span counting padding for count_include_pad).
#[inline]
fn win(o: usize, k: usize, s: usize, p: usize, x: usize) -> (usize, usize, usize) {
    let start = (o * s) as isize - p as isize;
    let end_p = (start + k as isize).min((x + p) as isize).max(start);
    let span = (end_p - start) as usize;
    let a = start.max(0) as usize;
    let b = end_p.min(x as isize).max(a as isize) as usize;
    (a, b, span)
}

/// Call f(out_index, list of input offsets in the window, divisor) per output.
fn for_windows(
    g: &PGeo,
    pp: &PoolParam,
    plane: usize,
    mut f: impl FnMut(usize, &mut dyn Iterator<Item = usize>, f64),
) {
    let [xd, xh, xw] = g.xs;
    let [yd, yh, yw] = g.ys;
    let base = plane * xd * xh * xw;
    let mut oi = plane * yd * yh * yw;
    for a in 0..yd {
        let (d0, d1, ds) = win(a, g.k[0], g.s[0], g.p[0], xd);
        for b in 0..yh {
            let (h0, h1, hs) = win(b, g.k[1], g.s[1], g.p[1], xh);
            for c in 0..yw {
                let (w0, w1, ws) = win(c, g.k[2], g.s[2], g.p[2], xw);
                let div = if pp.count_include_pad {
                    (ds * hs * ws) as f64
                } else {
                    ((d1 - d0) * (h1 - h0) * (w1 - w0)) as f64
                };
                let mut it = (d0..d1).flat_map(move |i| {
                    (h0..h1).flat_map(move |j| (w0..w1).map(move |k| base + (i * xh + j) * xw + k))
                });
                f(oi, &mut it, div);
                oi += 1;
            }
        }
    }
}

fn pool_fwd(g: &PGeo, pp: &PoolParam, x: &[f64]) -> Vec<f64> {
    let ysz = g.ys.iter().product::<usize>();
    let mut y = vec![0f64; g.planes * ysz];
    par_chunks_mut(&mut y, ysz, |pl, yp| {
        let off = pl * ysz;
        for_windows(g, pp, pl, |oi, it, div| {
            let v = match pp.pool_type {
                PoolType::Max => it.map(|i| x[i]).fold(f64::NEG_INFINITY, f64::max),
                PoolType::Sum => it.map(|i| x[i]).sum(),
                PoolType::Avg => {
                    let s: f64 = it.map(|i| x[i]).sum();
                    if div > 0.0 {
                        s / div
                    } else {
                        0.0
                    }
                }
                PoolType::Lp => {
                    let s: f64 = it.map(|i| x[i].powf(pp.p_value)).sum();
                    s.powf(1.0 / pp.p_value)
                }
            };
            yp[oi - off] = v;
        });
    });
    y
}

fn pool_bwd(g: &PGeo, pp: &PoolParam, dy: &[f64], x: &[f64], y: &[f64]) -> Vec<f64> {
    let xsz = g.xs.iter().product::<usize>();
    let mut dx = vec![0f64; g.planes * xsz];
    par_chunks_mut(&mut dx, xsz, |pl, dp| {
        let off = pl * xsz;
        for_windows(g, pp, pl, |oi, it, div| {
            let gv = dy[oi];
            match pp.pool_type {
                PoolType::Max => {
                    // The first maximum takes the gradient.
                    let mut best: Option<(usize, f64)> = None;
                    for i in it {
                        if best.map(|(_, v)| x[i] > v).unwrap_or(true) {
                            best = Some((i, x[i]));
                        }
                    }
                    if let Some((i, _)) = best {
                        dp[i - off] += gv;
                    }
                }
                PoolType::Sum => it.for_each(|i| dp[i - off] += gv),
                PoolType::Avg => {
                    if div > 0.0 {
                        it.for_each(|i| dp[i - off] += gv / div)
                    }
                }
                PoolType::Lp => {
                    let p = pp.p_value;
                    let yv = y[oi];
                    it.for_each(|i| {
                        let d = if yv == 0.0 {
                            0.0
                        } else {
                            (x[i] / yv).powf(p - 1.0)
                        };
                        dp[i - off] += gv * d;
                    });
                }
            }
        });
    });
    dx
}

/// The fast path: max / avg / sum pooling on channel-first float32 or
/// float64 data, computed in place on the typed buffers (no f64 copies, no
/// per-window iterator objects), in parallel over planes. Results equal the
/// reference path's up to float rounding of sums.
fn fast_path(pp: &PoolParam, dt: DType) -> bool {
    !pp.channel_last && pp.pool_type != PoolType::Lp && matches!(dt, DType::F32 | DType::F64)
}

/// Window bounds of every output position along the three axes.
fn wins3(g: &PGeo) -> [Vec<(usize, usize, usize)>; 3] {
    std::array::from_fn(|ax| {
        (0..g.ys[ax])
            .map(|o| win(o, g.k[ax], g.s[ax], g.p[ax], g.xs[ax]))
            .collect()
    })
}

fn divisor(pp: &PoolParam, w: [(usize, usize, usize); 3]) -> f64 {
    if pp.count_include_pad {
        (w[0].2 * w[1].2 * w[2].2) as f64
    } else {
        ((w[0].1 - w[0].0) * (w[1].1 - w[1].0) * (w[2].1 - w[2].0)) as f64
    }
}

/// 2-D pooling with 2x2 windows at stride 2, no padding, every window
/// inside the input (LeNet's, VGG's and ResNet's pooling): straight-line
/// loops over row pairs, same results as the general window loops.
fn is_2x2_s2(g: &PGeo) -> bool {
    g.xs[0] == 1
        && g.ys[0] == 1
        && g.k == [1, 2, 2]
        && g.s[1..] == [2, 2]
        && g.p == [0, 0, 0]
        && 2 * g.ys[1] <= g.xs[1]
        && 2 * g.ys[2] <= g.xs[2]
}

/// The running maximum of the window loops: NaN never wins.
#[inline(always)]
fn nan_losing_max<T: PartialOrd + Copy>(m: T, v: T) -> T {
    #[allow(clippy::eq_op)]
    if v > m || m != m {
        v
    } else {
        m
    }
}

/// Planes per parallel task of the 2x2 kernels: at least ~16K elements of
/// work each (one LeNet plane is only 576).
fn planes_per_task(plane: usize) -> usize {
    (16384 / plane.max(1)).max(1)
}

fn pool_fwd_2x2<T: Elem + PartialOrd + std::ops::Add<Output = T>>(
    g: &PGeo,
    ty: PoolType,
    x: &[T],
    y: &mut [T],
) {
    let (xh, xw, yh, yw) = (g.xs[1], g.xs[2], g.ys[1], g.ys[2]);
    let (xpl, ypl) = (xh * xw, (yh * yw).max(1));
    let per = planes_per_task(xpl);
    par_chunks_mut(y, ypl * per, |t, ys| {
        for (k, yp) in ys.chunks_exact_mut(ypl).enumerate() {
            let pl = t * per + k;
            let xp = &x[pl * xpl..(pl + 1) * xpl];
            for (oh, yr) in yp.chunks_exact_mut(yw).enumerate() {
                let r0 = &xp[2 * oh * xw..][..2 * yw];
                let r1 = &xp[(2 * oh + 1) * xw..][..2 * yw];
                let quads = yr
                    .iter_mut()
                    .zip(r0.chunks_exact(2).zip(r1.chunks_exact(2)));
                match ty {
                    PoolType::Max => {
                        let lo = T::from_f64(f64::NEG_INFINITY);
                        for (o, (a, b)) in quads {
                            let m = nan_losing_max(nan_losing_max(lo, a[0]), a[1]);
                            *o = nan_losing_max(nan_losing_max(m, b[0]), b[1]);
                        }
                    }
                    PoolType::Avg => {
                        for (o, (a, b)) in quads {
                            *o = T::from_f64((a[0] + a[1] + b[0] + b[1]).to_f64() / 4.0);
                        }
                    }
                    _ => {
                        for (o, (a, b)) in quads {
                            *o = a[0] + a[1] + b[0] + b[1];
                        }
                    }
                }
            }
        }
    });
}

fn pool_bwd_2x2<T: Elem + PartialOrd + std::ops::Add<Output = T>>(
    g: &PGeo,
    ty: PoolType,
    dy: &[T],
    x: &[T],
    dx: &mut [T],
) {
    let (xh, xw, yh, yw) = (g.xs[1], g.xs[2], g.ys[1], g.ys[2]);
    let zero = T::from_f64(0.0);
    let xpl = (xh * xw).max(1);
    let per = planes_per_task(xpl);
    par_chunks_mut(dx, xpl * per, |t, dps| {
        for (k, dp) in dps.chunks_exact_mut(xpl).enumerate() {
            let pl = t * per + k;
            let xp = &x[pl * xpl..(pl + 1) * xpl];
            let gp = &dy[pl * yh * yw..(pl + 1) * yh * yw];
            if 2 * yh < xh || 2 * yw < xw {
                dp.fill(zero); // rows / columns no window covers
            }
            for (oh, gr) in gp.chunks_exact(yw.max(1)).enumerate().take(yh) {
                // the two input rows of this output row, each written once
                let (d0, rest) = dp[2 * oh * xw..].split_at_mut(xw);
                let d1 = &mut rest[..xw];
                let x0 = &xp[2 * oh * xw..][..2 * yw];
                let x1 = &xp[(2 * oh + 1) * xw..][..2 * yw];
                let quads = gr
                    .iter()
                    .zip(d0.chunks_exact_mut(2).zip(d1.chunks_exact_mut(2)))
                    .zip(x0.chunks_exact(2).zip(x1.chunks_exact(2)));
                match ty {
                    PoolType::Max => {
                        // the first maximum in window order takes the
                        // gradient; selects, not branches (random data
                        // mispredicts every other comparison)
                        for ((&gv, (e0, e1)), (a, b)) in quads {
                            // integer selects and indexed loads/stores only
                            // (float selects compile back into branches)
                            let w = [a[0], a[1], b[0], b[1]];
                            let i = (w[1] > w[0]) as usize;
                            let i = if w[2] > w[i] { 2 } else { i };
                            let i = if w[3] > w[i] { 3 } else { i };
                            let mut q = [zero; 4];
                            q[i] = gv;
                            e0.copy_from_slice(&q[..2]);
                            e1.copy_from_slice(&q[2..]);
                        }
                    }
                    PoolType::Avg => {
                        for ((&gv, (e0, e1)), _) in quads {
                            let q = T::from_f64(gv.to_f64() / 4.0);
                            e0.fill(q);
                            e1.fill(q);
                        }
                    }
                    _ => {
                        for ((&gv, (e0, e1)), _) in quads {
                            e0.fill(gv);
                            e1.fill(gv);
                        }
                    }
                }
            }
        }
    });
}

fn pool_fwd_fast<T: Elem + PartialOrd + std::ops::Add<Output = T>>(
    g: &PGeo,
    pp: &PoolParam,
    x: &[T],
    y: &mut [T],
) {
    let [xd, xh, xw] = g.xs;
    let xsz = xd * xh * xw;
    let ysz: usize = g.ys.iter().product();
    if is_2x2_s2(g) {
        return pool_fwd_2x2(g, pp.pool_type, x, y);
    }
    let ws = wins3(g);
    par_chunks_mut(y, ysz.max(1), |pl, yp| {
        let xp = &x[pl * xsz..(pl + 1) * xsz];
        let mut oi = 0;
        for &wd in &ws[0] {
            for &wh in &ws[1] {
                for &ww in &ws[2] {
                    let v = match pp.pool_type {
                        PoolType::Max => {
                            let mut m = T::from_f64(f64::NEG_INFINITY);
                            for i in wd.0..wd.1 {
                                for j in wh.0..wh.1 {
                                    let row = &xp[(i * xh + j) * xw..][ww.0..ww.1];
                                    for &v in row {
                                        // f64::max semantics: NaN loses.
                                        #[allow(clippy::eq_op)]
                                        if v > m || m != m {
                                            m = v;
                                        }
                                    }
                                }
                            }
                            m
                        }
                        _ => {
                            let mut acc = T::from_f64(0.0);
                            for i in wd.0..wd.1 {
                                for j in wh.0..wh.1 {
                                    for &v in &xp[(i * xh + j) * xw..][ww.0..ww.1] {
                                        acc = acc + v;
                                    }
                                }
                            }
                            if pp.pool_type == PoolType::Avg {
                                let div = divisor(pp, [wd, wh, ww]);
                                T::from_f64(if div > 0.0 { acc.to_f64() / div } else { 0.0 })
                            } else {
                                acc
                            }
                        }
                    };
                    yp[oi] = v;
                    oi += 1;
                }
            }
        }
    });
}

fn pool_bwd_fast<T: Elem + PartialOrd + std::ops::Add<Output = T>>(
    g: &PGeo,
    pp: &PoolParam,
    dy: &[T],
    x: &[T],
    dx: &mut [T],
) {
    let [xd, xh, xw] = g.xs;
    let xsz = xd * xh * xw;
    let ysz: usize = g.ys.iter().product();
    if is_2x2_s2(g) {
        return pool_bwd_2x2(g, pp.pool_type, dy, x, dx);
    }
    let ws = wins3(g);
    par_chunks_mut(dx, xsz.max(1), |pl, dp| {
        dp.fill(T::from_f64(0.0));
        let xp = &x[pl * xsz..(pl + 1) * xsz];
        let gp = &dy[pl * ysz..(pl + 1) * ysz];
        let mut oi = 0;
        for &wd in &ws[0] {
            for &wh in &ws[1] {
                for &ww in &ws[2] {
                    let gv = gp[oi];
                    oi += 1;
                    match pp.pool_type {
                        PoolType::Max => {
                            // The first maximum takes the gradient.
                            let mut best: Option<(usize, T)> = None;
                            for i in wd.0..wd.1 {
                                for j in wh.0..wh.1 {
                                    let r0 = (i * xh + j) * xw;
                                    for k in ww.0..ww.1 {
                                        let v = xp[r0 + k];
                                        if best.map(|(_, b)| v > b).unwrap_or(true) {
                                            best = Some((r0 + k, v));
                                        }
                                    }
                                }
                            }
                            if let Some((i, _)) = best {
                                dp[i] = dp[i] + gv;
                            }
                        }
                        _ => {
                            let gv = if pp.pool_type == PoolType::Avg {
                                let div = divisor(pp, [wd, wh, ww]);
                                if div > 0.0 {
                                    T::from_f64(gv.to_f64() / div)
                                } else {
                                    continue;
                                }
                            } else {
                                gv
                            };
                            for i in wd.0..wd.1 {
                                for j in wh.0..wh.1 {
                                    for d in &mut dp[(i * xh + j) * xw..][ww.0..ww.1] {
                                        *d = *d + gv;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Channel-first f64 copy of a blob's data (N, C, spatial...).
fn cf_f64(b: &Blob, last: bool) -> Vec<f64> {
    let v = super::to_f64_vec(b);
    if !last {
        return v;
    }
    let s = &b.shape;
    let (n, c) = (s[0], s[s.len() - 1]);
    let sp = v.len().checked_div(n * c).unwrap_or(0);
    super::conv::relayout_pub(&v, n, c, sp, false)
}

fn store_cf(b: &Blob, v: Vec<f64>, last: bool) {
    if !last {
        return super::write_f64(b, &v);
    }
    let s = &b.shape;
    let (n, c) = (s[0], s[s.len() - 1]);
    let sp = v.len().checked_div(n * c).unwrap_or(0);
    super::write_f64(b, &super::conv::relayout_pub(&v, n, c, sp, true));
}

pub static POOLING: OpDef = OpDef {
    name: "Pooling",
    doc: "Pooling over 1-D/2-D/3-D windows: max, avg (count_include_pad), sum, lp (p_value); global_pool; \
          pooling_convention valid (floor), full (ceil) or same (ceil(x/stride) windows from the first element, the last cut off; no pad).",
    parse: |a| parse_pool(a, "Pooling"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(pool_geo(c.p::<PoolParam>(), d, "Pooling")?.1);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let pp = c.p::<PoolParam>();
        let (g, _) = pool_geo(pp, &i[0].shape, "Pooling")?;
        if fast_path(pp, i[0].dtype) {
            crate::dispatch_float!(i[0].dtype, T => pool_fwd_fast(&g, pp, i[0].data::<T>(), o[0].data_mut::<T>()));
            return Ok(());
        }
        let x = cf_f64(&i[0], pp.channel_last);
        store_cf(&o[0], pool_fwd(&g, pp, &x), pp.channel_last);
        Ok(())
    }),
    grad: Some(|c, b, x, y, g| super::backward_op(c, b, "_backward_Pooling", &[g[0], x[0], y[0]], &[true])),
    ..OpDef::BASE
};

pub static BACKWARD_POOLING: OpDef = OpDef {
    name: "_backward_Pooling",
    doc: "Internal: gradient of Pooling. Inputs: output gradient, data, output.",
    inputs: &["ograd", "data", "output"],
    parse: |a| parse_pool(a, "_backward_Pooling"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            let o = pool_geo(c.p::<PoolParam>(), &d, "_backward_Pooling")?.1;
            fill_shape(
                "_backward_Pooling",
                "output gradient",
                &mut ins[0],
                o.clone(),
                "",
            )?;
            fill_shape("_backward_Pooling", "output", &mut ins[2], o, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _: &KernelCtx| {
        let pp = c.p::<PoolParam>();
        let (g, _) = pool_geo(pp, &i[1].shape, "_backward_Pooling")?;
        if fast_path(pp, i[1].dtype) {
            crate::dispatch_float!(i[1].dtype, T => pool_bwd_fast(
                &g,
                pp,
                i[0].data::<T>(),
                i[1].data::<T>(),
                o[0].data_mut::<T>()
            ));
            return Ok(());
        }
        let (dy, x, y) = (
            cf_f64(&i[0], pp.channel_last),
            cf_f64(&i[1], pp.channel_last),
            cf_f64(&i[2], pp.channel_last),
        );
        store_cf(&o[0], pool_bwd(&g, pp, &dy, &x, &y), pp.channel_last);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// UpSampling
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct UpParam {
    pub scale: usize,
}

fn parse_up(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let scale = p.i64_req("scale")?;
    if scale < 1 {
        return Err(Error::Param(format!(
            "{op}: scale must be >= 1, got {scale}"
        )));
    }
    let st = p
        .opt_str("sample_type")
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'sample_type' is missing")))?;
    if st != "nearest" {
        return Err(Error::Param(format!(
            "{op}: sample_type='{st}' is not supported (only 'nearest')"
        )));
    }
    let n = p.i64("num_args", 1)?;
    if n != 1 {
        return Err(Error::Param(format!(
            "{op}: num_args={n} is not supported (only one input)"
        )));
    }
    let mode = p.str("multi_input_mode", "concat");
    if mode != "concat" && mode != "sum" {
        return Err(Error::Param(format!(
            "{op}: multi_input_mode must be concat or sum, got '{mode}'"
        )));
    }
    let _ = p.i64("num_filter", 0)?;
    let _ = p.i64("workspace", 512)?;
    Ok(Box::new(UpParam {
        scale: scale as usize,
    }))
}

fn up_shape(s: &[usize], k: usize) -> Result<Vec<usize>> {
    if s.len() != 4 {
        return Err(Error::Shape(format!(
            "UpSampling: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(s)
        )));
    }
    Ok(vec![s[0], s[1], s[2] * k, s[3] * k])
}

pub static UPSAMPLING: OpDef = OpDef {
    name: "UpSampling",
    doc: "Nearest-neighbour up-sampling of (N, C, H, W) data by an integer scale.",
    inputs: &["data"],
    parse: |a| parse_up(a, "UpSampling"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(up_shape(d, c.p::<UpParam>().scale)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let k = c.p::<UpParam>().scale;
        let s = &i[0].shape;
        let (h, w) = (s[2], s[3]);
        crate::dispatch_dtype!(i[0].dtype, T => {
            let x = i[0].data::<T>();
            let y = o[0].data_mut::<T>();
            par_chunks_mut(y, h * k * w * k, |pl, yp| {
                let xp = &x[pl * h * w..(pl + 1) * h * w];
                for (r, row) in yp.chunks_mut(w * k).enumerate() {
                    let src = &xp[(r / k) * w..][..w];
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = src[j / k];
                    }
                }
            });
        });
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| super::backward_op(c, b, "_backward_UpSampling", &[g[0]], &[true])),
    ..OpDef::BASE
};

pub static BACKWARD_UPSAMPLING: OpDef = OpDef {
    name: "_backward_UpSampling",
    doc: "Internal: gradient of nearest UpSampling (sums each scale x scale block).",
    inputs: &["ograd"],
    parse: |a| parse_up(a, "_backward_UpSampling"),
    infer_shape: |c, ins, outs| {
        let k = c.p::<UpParam>().scale;
        if let Some(d) = &ins[0] {
            if d.len() != 4 || d[2] % k != 0 || d[3] % k != 0 {
                return Err(Error::Shape(format!("_backward_UpSampling: gradient shape {} is not 4-D with H and W multiples of {k}", fmt_shape(d))));
            }
            outs[0] = Some(vec![d[0], d[1], d[2] / k, d[3] / k]);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let k = c.p::<UpParam>().scale;
        let s: Shape = o[0].shape.clone();
        let (h, w) = (s[2], s[3]);
        let g = super::to_f64_vec(&i[0]);
        let mut dx = vec![0f64; o[0].size()];
        par_chunks_mut(&mut dx, h * w, |pl, dp| {
            let gp = &g[pl * h * w * k * k..];
            for r in 0..h * k {
                for j in 0..w * k {
                    dp[(r / k) * w + j / k] += gp[r * w * k + j];
                }
            }
        });
        super::write_f64(&o[0], &dx);
        Ok(())
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn pooling_values_and_grads() {
        let x = vals(2 * 2 * 5 * 5, 1);
        // 2x2 max, stride 2, valid -> (2, 2, 2, 2)
        let y = call(
            "Pooling",
            &[("kernel", "(2, 2)"), ("stride", "(2, 2)")],
            &[arr(&x, &[2, 2, 5, 5])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![2, 2, 2, 2]);
        let got = y[0].to_vec::<f64>().unwrap();
        let want = [x[0], x[1], x[5], x[6]]
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(got[0], want);
        let y = call(
            "Pooling",
            &[
                ("kernel", "(2, 2)"),
                ("stride", "(2, 2)"),
                ("pooling_convention", "full"),
            ],
            &[arr(&x, &[2, 2, 5, 5])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![2, 2, 3, 3]);
        let y = call(
            "Pooling",
            &[
                ("kernel", "(3, 3)"),
                ("global_pool", "True"),
                ("pool_type", "avg"),
            ],
            &[arr(&x, &[2, 2, 5, 5])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![2, 2, 1, 1]);
        assert!(
            (y[0].to_vec::<f64>().unwrap()[0] - x[..25].iter().sum::<f64>() / 25.0).abs() < 1e-12
        );
        for pt in ["max", "avg", "sum"] {
            for (k, s, p, conv, cip) in [
                ("(2, 2)", "(1, 1)", "(0, 0)", "valid", "True"),
                ("(3, 2)", "(2, 1)", "(1, 1)", "full", "False"),
                ("(3, 3)", "(2, 2)", "(1, 1)", "valid", "True"),
            ] {
                let at = [
                    ("kernel", k),
                    ("stride", s),
                    ("pad", p),
                    ("pool_type", pt),
                    ("pooling_convention", conv),
                    ("count_include_pad", cip),
                ];
                check_grad("Pooling", &at, &[(x.clone(), vec![2, 2, 5, 5])], &[0]);
            }
        }
        let pos: Vec<f64> = x.iter().map(|v| v.abs() + 0.5).collect();
        check_grad(
            "Pooling",
            &[("kernel", "(2, 2)"), ("pool_type", "lp"), ("p_value", "3")],
            &[(pos.clone(), vec![2, 2, 5, 5])],
            &[0],
        );
        check_grad(
            "Pooling",
            &[("kernel", "(3,)"), ("pool_type", "avg"), ("stride", "(2,)")],
            &[(x[..20].to_vec(), vec![2, 2, 5])],
            &[0],
        );
        check_grad(
            "Pooling",
            &[("kernel", "(2, 2, 2)"), ("pool_type", "max")],
            &[(x[..72].to_vec(), vec![1, 2, 3, 4, 3])],
            &[0],
        );
    }

    #[test]
    fn upsampling() {
        let x = vals(8, 1);
        let y = call(
            "UpSampling",
            &[("scale", "2"), ("sample_type", "nearest")],
            &[arr(&x, &[1, 2, 2, 2])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![1, 2, 4, 4]);
        let v = y[0].to_vec::<f64>().unwrap();
        assert_eq!(v[0], x[0]);
        assert_eq!(v[5], x[0]);
        assert_eq!(v[2], x[1]);
        check_grad(
            "UpSampling",
            &[("scale", "3"), ("sample_type", "nearest")],
            &[(x, vec![1, 2, 2, 2])],
            &[0],
        );
        let e = call(
            "UpSampling",
            &[("scale", "2"), ("sample_type", "bilinear")],
            &[arr(&[1.0], &[1, 1, 1, 1])],
        )
        .err()
        .unwrap();
        assert!(e
            .message()
            .contains("sample_type='bilinear' is not supported"));
    }
}
