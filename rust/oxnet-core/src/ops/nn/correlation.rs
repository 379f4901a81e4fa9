//! Correlation (FlowNet): patch comparisons between two feature maps over
//! a neighbourhood of displacements, with MXNet 1.9.1's geometry.
use super::{fill_shape, infer_float_same, to_f64_vec, write_f64};
use crate::base::fmt_shape;
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpCall, OpDef, Params};

#[derive(Debug, Clone)]
pub struct CorrParam {
    pub kernel: usize,
    pub max_disp: usize,
    pub stride1: usize,
    pub stride2: usize,
    pub pad: usize,
    pub multiply: bool,
}

fn parse_corr(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let c = CorrParam {
        kernel: p.usize("kernel_size", 1)?,
        max_disp: p.usize("max_displacement", 1)?,
        stride1: p.usize("stride1", 1)?,
        stride2: p.usize("stride2", 1)?,
        pad: p.usize("pad_size", 0)?,
        multiply: p.bool("is_multiply", true)?,
    };
    if c.kernel.is_multiple_of(2) {
        return Err(Error::Param(format!(
            "{op}: kernel_size must be odd, got {}",
            c.kernel
        )));
    }
    if c.stride1 == 0 || c.stride2 == 0 {
        return Err(Error::Param(format!(
            "{op}: stride1 ({}) and stride2 ({}) must be positive",
            c.stride1, c.stride2
        )));
    }
    Ok(Box::new(c))
}

fn corr(c: &OpCall) -> &CorrParam {
    c.p::<CorrParam>()
}

/// Output geometry.
struct Geo {
    n: usize,
    c: usize,
    hp: usize,
    wp: usize,
    th: usize,
    tw: usize,
    /// Neighbourhood grid radius and width (output channels = gw * gw).
    gr: usize,
    gw: usize,
}

fn geo(op: &str, p: &CorrParam, d1: &[usize], d2: &[usize]) -> Result<Geo> {
    if d1.len() != 4 {
        return Err(Error::Shape(format!(
            "{op}: data1 shape {} must be 4-D (N, C, H, W)",
            fmt_shape(d1)
        )));
    }
    if d1 != d2 {
        return Err(Error::Shape(format!(
            "{op}: data1 shape {} and data2 shape {} must be equal",
            fmt_shape(d1),
            fmt_shape(d2)
        )));
    }
    let (hp, wp) = (d1[2] + 2 * p.pad, d1[3] + 2 * p.pad);
    let border = p.max_disp + (p.kernel - 1) / 2;
    let fits = hp > 2 * border && wp > 2 * border;
    if !fits {
        return Err(Error::Shape(format!(
            "{op}: the neighbourhood and kernel do not fit: padded size ({hp}, {wp}) of data shape {} must exceed \
             2 * (max_displacement + (kernel_size - 1) / 2) = {}",
            fmt_shape(d1),
            2 * border
        )));
    }
    let th = (hp - 2 * border).div_ceil(p.stride1);
    let tw = (wp - 2 * border).div_ceil(p.stride1);
    let gr = p.max_disp / p.stride2;
    Ok(Geo {
        n: d1[0],
        c: d1[1],
        hp,
        wp,
        th,
        tw,
        gr,
        gw: 2 * gr + 1,
    })
}

/// Zero-padded copy (N, C, Hp, Wp).
fn padded(x: &[f64], g: &Geo, h: usize, w: usize, pad: usize) -> Vec<f64> {
    let mut out = vec![0f64; g.n * g.c * g.hp * g.wp];
    for pl in 0..g.n * g.c {
        for y in 0..h {
            let src = &x[(pl * h + y) * w..(pl * h + y + 1) * w];
            let at = (pl * g.hp + y + pad) * g.wp + pad;
            out[at..at + w].copy_from_slice(src);
        }
    }
    out
}

fn unpad(xp: &[f64], g: &Geo, h: usize, w: usize, pad: usize) -> Vec<f64> {
    let mut out = vec![0f64; g.n * g.c * h * w];
    for pl in 0..g.n * g.c {
        for y in 0..h {
            let at = (pl * g.hp + y + pad) * g.wp + pad;
            out[(pl * h + y) * w..(pl * h + y + 1) * w].copy_from_slice(&xp[at..at + w]);
        }
    }
    out
}

/// Visits every (output index, data1 padded index, data2 padded index)
/// term of the correlation sums.
fn terms(p: &CorrParam, g: &Geo, mut f: impl FnMut(usize, usize, usize)) {
    let k = p.kernel;
    let plane = g.hp * g.wp;
    for b in 0..g.n {
        for tc in 0..g.gw * g.gw {
            let dx = (tc % g.gw) as isize - g.gr as isize;
            let dy = (tc / g.gw) as isize - g.gr as isize;
            let s2o = dx * p.stride2 as isize;
            let s2p = dy * p.stride2 as isize;
            for i in 0..g.th {
                let y1 = i * p.stride1 + p.max_disp;
                let y2 = (y1 as isize + s2p) as usize;
                for j in 0..g.tw {
                    let x1 = j * p.stride1 + p.max_disp;
                    let x2 = (x1 as isize + s2o) as usize;
                    let o = ((b * g.gw * g.gw + tc) * g.th + i) * g.tw + j;
                    for ch in 0..g.c {
                        let base = (b * g.c + ch) * plane;
                        for h in 0..k {
                            for w in 0..k {
                                f(
                                    o,
                                    base + (y1 + h) * g.wp + x1 + w,
                                    base + (y2 + h) * g.wp + x2 + w,
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

fn out_shape(g: &Geo) -> Vec<usize> {
    vec![g.n, g.gw * g.gw, g.th, g.tw]
}

pub static CORRELATION: OpDef = OpDef {
    name: "Correlation",
    doc: "Correlation of two feature maps data1, data2 (N, C, H, W) (FlowNet): for each position x1 of data1 \
          (zero-padded by pad_size, quantised by stride1) and each displacement q in a (2 r + 1)^2 neighbourhood \
          (r = max_displacement / stride2, steps of stride2), the sum over a kernel_size^2 patch and the channels \
          of data1 * data2 (is_multiply) or |data1 - data2|, divided by kernel_size^2 * C. Output (N, (2 r + 1)^2, \
          H', W') with H' = ceil((H + 2 pad_size - 2 (max_displacement + (kernel_size - 1) / 2)) / stride1). \
          Gradients for both inputs.",
    inputs: &["data1", "data2"],
    parse: |a| parse_corr(a, "Correlation"),
    infer_shape: |c, ins, outs| {
        let known = ins[0].clone().or_else(|| ins[1].clone());
        if let Some(d) = known {
            for s in ins.iter_mut() {
                if s.is_none() {
                    *s = Some(d.clone());
                }
            }
            let g = geo("Correlation", corr(c), ins[0].as_ref().unwrap(), ins[1].as_ref().unwrap())?;
            outs[0] = Some(out_shape(&g));
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = corr(c);
        let s = &i[0].shape;
        let g = geo("Correlation", p, s, &i[1].shape)?;
        let a = padded(&to_f64_vec(&i[0]), &g, s[2], s[3], p.pad);
        let b = padded(&to_f64_vec(&i[1]), &g, s[2], s[3], p.pad);
        let mut y = vec![0f64; o[0].size()];
        if p.multiply {
            terms(p, &g, |k, u, v| y[k] += a[u] * b[v]);
        } else {
            terms(p, &g, |k, u, v| y[k] += (a[u] - b[v]).abs());
        }
        let norm = (p.kernel * p.kernel * g.c) as f64;
        y.iter_mut().for_each(|v| *v /= norm);
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let r = b.op("_backward_Correlation", &super::fwd_attrs(c), &[g[0], x[0], x[1]])?;
        Ok(vec![Some(r[0]), Some(r[1])])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_CORRELATION: OpDef = OpDef {
    name: "_backward_Correlation",
    doc: "Internal: gradients of Correlation for data1 and data2. Inputs: output gradient, data1, data2.",
    inputs: &["ograd", "data1", "data2"],
    num_outputs: |_| 2,
    parse: |a| parse_corr(a, "_backward_Correlation"),
    infer_shape: |c, ins, outs| {
        if let (Some(d1), Some(d2)) = (ins[1].clone(), ins[2].clone()) {
            let g = geo("_backward_Correlation", corr(c), &d1, &d2)?;
            fill_shape("_backward_Correlation", "output gradient", &mut ins[0], out_shape(&g), "")?;
            outs[0] = Some(d1);
            outs[1] = Some(d2);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = corr(c);
        let s = &i[1].shape;
        let g = geo("_backward_Correlation", p, s, &i[2].shape)?;
        let norm = (p.kernel * p.kernel * g.c) as f64;
        let gy: Vec<f64> = to_f64_vec(&i[0]).iter().map(|v| v / norm).collect();
        let a = padded(&to_f64_vec(&i[1]), &g, s[2], s[3], p.pad);
        let b = padded(&to_f64_vec(&i[2]), &g, s[2], s[3], p.pad);
        let mut da = vec![0f64; a.len()];
        let mut db = vec![0f64; b.len()];
        if p.multiply {
            terms(p, &g, |k, u, v| {
                da[u] += gy[k] * b[v];
                db[v] += gy[k] * a[u];
            });
        } else {
            terms(p, &g, |k, u, v| {
                let sg = if a[u] > b[v] {
                    1.0
                } else if a[u] < b[v] {
                    -1.0
                } else {
                    0.0
                };
                da[u] += gy[k] * sg;
                db[v] -= gy[k] * sg;
            });
        }
        write_f64(&o[0], &unpad(&da, &g, s[2], s[3], p.pad));
        write_f64(&o[1], &unpad(&db, &g, s[2], s[3], p.pad));
        Ok(())
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;

    #[test]
    fn gradients() {
        for mult in ["True", "False"] {
            let at = [
                ("kernel_size", "3"),
                ("max_displacement", "2"),
                ("stride1", "2"),
                ("stride2", "1"),
                ("pad_size", "2"),
                ("is_multiply", mult),
            ];
            let s = vec![1, 2, 6, 7];
            check_grad(
                "Correlation",
                &at,
                &[(vals(84, 1), s.clone()), (vals(84, 2), s)],
                &[0, 1],
            );
        }
    }
}
