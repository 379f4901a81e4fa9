//! Spatial transformer family: GridGenerator (affine / warp sampling
//! grids), BilinearSampler (sampling NCHW data at grid points normalised to
//! [-1, 1], out-of-range corners contributing zero) and SpatialTransformer
//! (the two fused, affine + bilinear). Kernels compute in float64.
use super::{fill_shape, infer_float_same, to_f64_vec, write_f64};
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::attrs::{shape_attr, Attrs};
use crate::ops::registry::{OpCall, OpDef, Params};

// ---------------------------------------------------------------------------
// Grid generation
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    Affine,
    Warp,
}

#[derive(Debug, Clone)]
pub struct GridParam {
    pub kind: Transform,
    pub target: (usize, usize),
}

fn parse_target(a: &Attrs, op: &str) -> Result<(usize, usize)> {
    let v = a.p(op).ints_or("target_shape", &[0, 0])?;
    if v.len() != 2 || v.iter().any(|&x| x < 0) {
        return Err(Error::Param(format!(
            "{op}: target_shape {v:?} must be two non-negative integers (H, W)"
        )));
    }
    Ok((v[0] as usize, v[1] as usize))
}

fn parse_grid(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    if !p.has("transform_type") {
        return Err(Error::Param(format!(
            "{op}: required argument 'transform_type' is missing ('affine' or 'warp')"
        )));
    }
    let kind = match p
        .choice("transform_type", "affine", &["affine", "warp"])?
        .as_str()
    {
        "affine" => Transform::Affine,
        _ => Transform::Warp,
    };
    let target = parse_target(a, op)?;
    if kind == Transform::Affine && (target.0 == 0 || target.1 == 0) {
        return Err(Error::Param(format!(
            "{op}: transform_type='affine' needs a positive target_shape (H, W), got ({}, {})",
            target.0, target.1
        )));
    }
    Ok(Box::new(GridParam { kind, target }))
}

fn grid_shape(op: &str, p: &GridParam, d: &[usize]) -> Result<Vec<usize>> {
    match p.kind {
        Transform::Affine => {
            if d.len() != 2 || d[1] != 6 {
                return Err(Error::Shape(format!(
                    "{op}: transform_type='affine' needs data of shape (batch, 6) (a 2x3 affine matrix per \
                     sample), got {}",
                    fmt_shape(d)
                )));
            }
            Ok(vec![d[0], 2, p.target.0, p.target.1])
        }
        Transform::Warp => {
            if d.len() != 4 || d[1] != 2 {
                return Err(Error::Shape(format!(
                    "{op}: transform_type='warp' needs data of shape (batch, 2, H, W) (an optical flow), got {}",
                    fmt_shape(d)
                )));
            }
            Ok(d.to_vec())
        }
    }
}

/// Normalised target coordinates of column j / row i: -1 + 2 j / (W - 1)
/// (MXNet's formula: NaN for a size-1 axis, as MXNet gives).
fn norm_coord(j: usize, n: usize) -> f64 {
    -1.0 + j as f64 * 2.0 / (n as f64 - 1.0)
}

/// Affine grid: out[n, 0|1, i, j] = theta[n] (2x3) . (x_j, y_i, 1).
fn affine_grid(theta: &[f64], n: usize, h: usize, w: usize) -> Vec<f64> {
    let mut out = vec![0f64; n * 2 * h * w];
    for b in 0..n {
        let t = &theta[b * 6..b * 6 + 6];
        for i in 0..h {
            let y = norm_coord(i, h);
            for j in 0..w {
                let x = norm_coord(j, w);
                let at = b * 2 * h * w + i * w + j;
                out[at] = t[0] * x + t[1] * y + t[2];
                out[at + h * w] = t[3] * x + t[4] * y + t[5];
            }
        }
    }
    out
}

fn affine_grid_grad(g: &[f64], n: usize, h: usize, w: usize) -> Vec<f64> {
    let mut dt = vec![0f64; n * 6];
    for b in 0..n {
        for i in 0..h {
            let y = norm_coord(i, h);
            for j in 0..w {
                let x = norm_coord(j, w);
                let at = b * 2 * h * w + i * w + j;
                let (gx, gy) = (g[at], g[at + h * w]);
                let d = &mut dt[b * 6..b * 6 + 6];
                d[0] += gx * x;
                d[1] += gx * y;
                d[2] += gx;
                d[3] += gy * x;
                d[4] += gy * y;
                d[5] += gy;
            }
        }
    }
    dt
}

/// Warp grid: pixel position plus flow, normalised by (size - 1) / 2.
fn warp_grid(flow: &[f64], shape: &[usize], back: bool) -> Vec<f64> {
    let (n, h, w) = (shape[0], shape[2], shape[3]);
    let (sx, sy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
    let mut out = vec![0f64; flow.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                let at = b * 2 * h * w + i * w + j;
                let (fx, fy) = (flow[at], flow[at + h * w]);
                if back {
                    out[at] = fx / sx;
                    out[at + h * w] = fy / sy;
                } else {
                    out[at] = (fx + j as f64) / sx - 1.0;
                    out[at + h * w] = (fy + i as f64) / sy - 1.0;
                }
            }
        }
    }
    out
}

fn gp(c: &OpCall) -> &GridParam {
    c.p::<GridParam>()
}

pub static GRID_GENERATOR: OpDef = OpDef {
    name: "GridGenerator",
    doc: "Generate a 2-D sampling grid (batch, 2, H, W) for BilinearSampler, channel 0 holding x and channel 1 \
          y, normalised to [-1, 1]. transform_type='affine': data (batch, 6) is a 2x3 matrix per sample applied \
          to the target grid of size target_shape (H, W); 'warp': data (batch, 2, H, W) is an optical flow in \
          pixels added to each pixel's position (target_shape is ignored).",
    parse: |a| parse_grid(a, "GridGenerator"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(grid_shape("GridGenerator", gp(c), d)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = gp(c);
        let x = to_f64_vec(&i[0]);
        let s = &o[0].shape;
        let g = match p.kind {
            Transform::Affine => affine_grid(&x, s[0], s[2], s[3]),
            Transform::Warp => warp_grid(&x, s, false),
        };
        write_f64(&o[0], &g);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        super::backward_op(c, b, "_backward_GridGenerator", &[g[0], x[0]], &[true])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_GRID_GENERATOR: OpDef = OpDef {
    name: "_backward_GridGenerator",
    doc: "Internal: gradient of GridGenerator with respect to its data. Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_grid(a, "_backward_GridGenerator"),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            let want = grid_shape("_backward_GridGenerator", gp(c), &d)?;
            fill_shape("_backward_GridGenerator", "output gradient", &mut ins[0], want, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let g = to_f64_vec(&i[0]);
        let s = &i[0].shape;
        let d = match gp(c).kind {
            Transform::Affine => affine_grid_grad(&g, s[0], s[2], s[3]),
            Transform::Warp => warp_grid(&g, s, true),
        };
        write_f64(&o[0], &d);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Bilinear sampling
// ---------------------------------------------------------------------------

fn sampler_shapes(op: &str, d: &[usize], g: &[usize]) -> Result<Vec<usize>> {
    if d.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(d)
        )));
    }
    if g.len() != 4 || g[1] != 2 || g[0] != d[0] {
        return Err(Error::Shape(format!(
            "{op}: grid shape {} must be (N, 2, H', W') with N = {} like data shape {}",
            fmt_shape(g),
            d[0],
            fmt_shape(d)
        )));
    }
    Ok(vec![d[0], d[1], g[2], g[3]])
}

/// One sample point: the four corners (flat offsets within a plane, or
/// None outside the image) and their weights.
struct Tap {
    idx: [Option<usize>; 4],
    wt: [f64; 4],
    /// Unclamped position and fractional parts, for the grid gradient.
    fx: f64,
    fy: f64,
}

fn tap(gx: f64, gy: f64, h: usize, w: usize) -> Tap {
    let xr = (gx + 1.0) * (w as f64 - 1.0) / 2.0;
    let yr = (gy + 1.0) * (h as f64 - 1.0) / 2.0;
    let (x0, y0) = (xr.floor(), yr.floor());
    let (fx, fy) = (xr - x0, yr - y0);
    let inside = |x: f64, y: f64| -> Option<usize> {
        (x >= 0.0 && x <= w as f64 - 1.0 && y >= 0.0 && y <= h as f64 - 1.0)
            .then(|| y as usize * w + x as usize)
    };
    Tap {
        idx: [
            inside(x0, y0),
            inside(x0 + 1.0, y0),
            inside(x0, y0 + 1.0),
            inside(x0 + 1.0, y0 + 1.0),
        ],
        wt: [
            (1.0 - fx) * (1.0 - fy),
            fx * (1.0 - fy),
            (1.0 - fx) * fy,
            fx * fy,
        ],
        fx,
        fy,
    }
}

fn sample_fwd(x: &[f64], ds: &[usize], grid: &[f64], gs: &[usize]) -> Vec<f64> {
    let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
    let (oh, ow) = (gs[2], gs[3]);
    let plane = oh * ow;
    let mut out = vec![0f64; n * c * plane];
    for b in 0..n {
        for k in 0..plane {
            let g = b * 2 * plane + k;
            let t = tap(grid[g], grid[g + plane], h, w);
            for ch in 0..c {
                let src = &x[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                let v: f64 = (0..4)
                    .map(|q| t.idx[q].map_or(0.0, |s| src[s] * t.wt[q]))
                    .sum();
                out[(b * c + ch) * plane + k] = v;
            }
        }
    }
    out
}

/// (d data, d grid) of bilinear sampling.
fn sample_bwd(
    gy: &[f64],
    x: &[f64],
    ds: &[usize],
    grid: &[f64],
    gs: &[usize],
) -> (Vec<f64>, Vec<f64>) {
    let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
    let (oh, ow) = (gs[2], gs[3]);
    let plane = oh * ow;
    let mut dx = vec![0f64; x.len()];
    let mut dg = vec![0f64; grid.len()];
    let (sx, sy) = ((w as f64 - 1.0) / 2.0, (h as f64 - 1.0) / 2.0);
    for b in 0..n {
        for k in 0..plane {
            let g = b * 2 * plane + k;
            let t = tap(grid[g], grid[g + plane], h, w);
            let (mut ddx, mut ddy) = (0f64, 0f64);
            for ch in 0..c {
                let base = (b * c + ch) * h * w;
                let go = gy[(b * c + ch) * plane + k];
                let v: Vec<f64> = (0..4)
                    .map(|q| t.idx[q].map_or(0.0, |s| x[base + s]))
                    .collect();
                for q in 0..4 {
                    if let Some(s) = t.idx[q] {
                        dx[base + s] += go * t.wt[q];
                    }
                }
                // d out / d xr and d out / d yr of the bilinear form.
                ddx += go * ((v[1] - v[0]) * (1.0 - t.fy) + (v[3] - v[2]) * t.fy);
                ddy += go * ((v[2] - v[0]) * (1.0 - t.fx) + (v[3] - v[1]) * t.fx);
            }
            dg[g] = ddx * sx;
            dg[g + plane] = ddy * sy;
        }
    }
    (dx, dg)
}

fn parse_sampler(a: &Attrs, op: &str) -> Result<Params> {
    a.p(op).bool("cudnn_off", false)?;
    Ok(Box::new(()))
}

pub static BILINEAR_SAMPLER: OpDef = OpDef {
    name: "BilinearSampler",
    doc: "Bilinear sampling of data (N, C, H, W) at the points of grid (N, 2, H', W'), whose channels hold x \
          and y normalised to [-1, 1] (x = -1 is the first column, +1 the last): output (N, C, H', W'). Each of \
          the four neighbouring pixels outside the image contributes zero. Gradients for data and grid. \
          cudnn_off is accepted and ignored (CPU).",
    inputs: &["data", "grid"],
    parse: |a| parse_sampler(a, "BilinearSampler"),
    infer_shape: |_, ins, outs| {
        if let (Some(d), Some(g)) = (&ins[0], &ins[1]) {
            outs[0] = Some(sampler_shapes("BilinearSampler", d, g)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|_, i, o, _| {
        let y = sample_fwd(&to_f64_vec(&i[0]), &i[0].shape, &to_f64_vec(&i[1]), &i[1].shape);
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        let r = b.op("_backward_BilinearSampler", &[], &[g[0], x[0], x[1]])?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_BILINEAR_SAMPLER: OpDef = OpDef {
    name: "_backward_BilinearSampler",
    doc: "Internal: gradients of BilinearSampler for data and grid. Inputs: output gradient, data, grid; \
          outputs: d data, d grid.",
    inputs: &["ograd", "data", "grid"],
    num_outputs: |_| 2,
    parse: |a| parse_sampler(a, "_backward_BilinearSampler"),
    infer_shape: |_, ins, outs| {
        if let (Some(d), Some(g)) = (ins[1].clone(), ins[2].clone()) {
            let want = sampler_shapes("_backward_BilinearSampler", &d, &g)?;
            fill_shape("_backward_BilinearSampler", "output gradient", &mut ins[0], want, "")?;
            outs[0] = Some(d);
            outs[1] = Some(g);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|_, i, o, _| {
        let (dx, dg) = sample_bwd(
            &to_f64_vec(&i[0]),
            &to_f64_vec(&i[1]),
            &i[1].shape,
            &to_f64_vec(&i[2]),
            &i[2].shape,
        );
        write_f64(&o[0], &dx);
        write_f64(&o[1], &dg);
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// SpatialTransformer
// ---------------------------------------------------------------------------

fn parse_st(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    for (k, v) in [("transform_type", "affine"), ("sampler_type", "bilinear")] {
        if !p.has(k) {
            return Err(Error::Param(format!(
                "{op}: required argument '{k}' is missing ('{v}')"
            )));
        }
        p.choice(k, v, &[v])?;
    }
    p.bool("cudnn_off", false)?;
    let target = parse_target(a, op)?;
    Ok(Box::new(GridParam {
        kind: Transform::Affine,
        target,
    }))
}

fn st_shape(op: &str, p: &GridParam, d: &[usize], l: &[usize]) -> Result<Vec<usize>> {
    if d.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be 4-D (N, C, H, W)",
            fmt_shape(d)
        )));
    }
    if l.len() != 2 || l[0] != d[0] || l[1] != 6 {
        return Err(Error::Shape(format!(
            "{op}: loc shape {} must be (N, 6) with N = {} like data shape {} (a 2x3 affine matrix per sample)",
            fmt_shape(l),
            d[0],
            fmt_shape(d)
        )));
    }
    if p.target.0 == 0 || p.target.1 == 0 {
        return Err(Error::Param(format!(
            "{op}: target_shape ({}, {}) must be positive (H, W)",
            p.target.0, p.target.1
        )));
    }
    Ok(vec![d[0], d[1], p.target.0, p.target.1])
}

fn affine_attrs(p: &GridParam) -> Vec<(&'static str, String)> {
    vec![
        ("transform_type", "affine".to_string()),
        ("target_shape", shape_attr(&[p.target.0, p.target.1])),
    ]
}

pub static SPATIAL_TRANSFORMER: OpDef = OpDef {
    name: "SpatialTransformer",
    doc: "Spatial transformer: sample data (N, C, H, W) bilinearly on the affine grid of size target_shape \
          (H', W') given by loc (N, 6), a 2x3 matrix per sample acting on normalised target coordinates: \
          GridGenerator(loc, 'affine') followed by BilinearSampler. transform_type must be 'affine' and \
          sampler_type 'bilinear'; output (N, C, H', W'); gradients for data and loc.",
    inputs: &["data", "loc"],
    parse: |a| parse_st(a, "SpatialTransformer"),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(l)) = (&ins[0], &ins[1]) {
            outs[0] = Some(st_shape("SpatialTransformer", gp(c), d, l)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = gp(c);
        let n = i[0].shape[0];
        let grid = affine_grid(&to_f64_vec(&i[1]), n, p.target.0, p.target.1);
        let gs = [n, 2, p.target.0, p.target.1];
        let y = sample_fwd(&to_f64_vec(&i[0]), &i[0].shape, &grid, &gs);
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let at = affine_attrs(gp(c));
        let grid = b.op1("GridGenerator", &at, &[x[1]])?;
        let r = b.op("_backward_BilinearSampler", &[], &[g[0], x[0], grid])?;
        let dloc = b.op1("_backward_GridGenerator", &at, &[r[1], x[1]])?;
        Ok(vec![Some(r[0]), Some(dloc)])
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn identity_affine_grid_samples_the_image() {
        let x = vals(2 * 3 * 4 * 5, 1);
        let theta = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let at = [
            ("target_shape", "(4, 5)"),
            ("transform_type", "affine"),
            ("sampler_type", "bilinear"),
        ];
        let y = call(
            "SpatialTransformer",
            &at,
            &[arr(&x, &[2, 3, 4, 5]), arr(&theta, &[2, 6])],
        )
        .unwrap();
        for (a, b) in y[0].to_vec::<f64>().unwrap().iter().zip(&x) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn gradients() {
        let grid: Vec<f64> = vals(2 * 2 * 3 * 4, 2).iter().map(|v| v * 1.2).collect();
        check_grad(
            "BilinearSampler",
            &[],
            &[
                (vals(2 * 2 * 4 * 5, 1), vec![2, 2, 4, 5]),
                (grid, vec![2, 2, 3, 4]),
            ],
            &[0, 1],
        );
        check_grad(
            "GridGenerator",
            &[("transform_type", "warp")],
            &[(vals(2 * 2 * 3 * 4, 3), vec![2, 2, 3, 4])],
            &[0],
        );
        let theta = [0.83, 0.17, 0.07, -0.11, 1.07, -0.03];
        check_grad(
            "SpatialTransformer",
            &[
                ("target_shape", "(3, 4)"),
                ("transform_type", "affine"),
                ("sampler_type", "bilinear"),
            ],
            &[
                (vals(2 * 5 * 6, 4), vec![1, 2, 5, 6]),
                (theta.to_vec(), vec![1, 6]),
            ],
            &[0, 1],
        );
    }
}
