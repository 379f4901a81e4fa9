//! im2col and col2im: sliding blocks of an (N, C, *spatial) array as
//! columns (N, C * prod(kernel), L) and their accumulation back. Each is
//! the other's gradient.
use super::infer_float_same;
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, Shape};
use crate::dispatch_float;
use crate::error::{Error, Result};
use crate::ops::attrs::{shape_attr, Attrs};
use crate::ops::registry::{OpCall, OpDef, Params};

#[derive(Debug, Clone)]
pub struct ColParam {
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilate: Vec<usize>,
    pub pad: Vec<usize>,
    /// col2im only: the spatial size of the image.
    pub output_size: Vec<usize>,
}

fn parse_col(a: &Attrs, op: &str, col2im: bool) -> Result<Params> {
    let p = a.p(op);
    let tuple = |k: &str, req: bool, def: usize, n: usize| -> Result<Vec<usize>> {
        let v = match p.ints(k)? {
            Some(v) if !v.is_empty() => v,
            _ if req => {
                return Err(Error::Param(format!(
                    "{op}: required argument '{k}' is missing"
                )))
            }
            _ => vec![def as i64; n],
        };
        if n != 0 && v.len() != n {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must have the same number of dimensions as kernel ({n})"
            )));
        }
        let min = if k == "pad" { 0 } else { 1 };
        if v.iter().any(|&x| x < min) {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must be {}",
                if min == 0 { "non-negative" } else { "positive" }
            )));
        }
        Ok(v.into_iter().map(|x| x as usize).collect())
    };
    let kernel = tuple("kernel", true, 0, 0)?;
    if kernel.is_empty() || kernel.len() > 3 {
        return Err(Error::Param(format!(
            "{op}: kernel {kernel:?} must have 1, 2 or 3 dimensions"
        )));
    }
    let n = kernel.len();
    let output_size = if col2im {
        tuple("output_size", true, 0, n)?
    } else {
        Vec::new()
    };
    Ok(Box::new(ColParam {
        stride: tuple("stride", false, 1, n)?,
        dilate: tuple("dilate", false, 1, n)?,
        pad: tuple("pad", false, 0, n)?,
        kernel,
        output_size,
    }))
}

/// The number of block positions along each spatial axis.
fn blocks(op: &str, p: &ColParam, spatial: &[usize]) -> Result<Vec<usize>> {
    (0..p.kernel.len())
        .map(|d| {
            let ext = p.dilate[d] * (p.kernel[d] - 1) + 1;
            let padded = spatial[d] + 2 * p.pad[d];
            if ext > padded {
                return Err(Error::Shape(format!(
                    "{op}: dilated kernel size {ext} on spatial axis {d} exceeds the padded input size {padded} \
                     (spatial shape {}, kernel {:?}, dilate {:?}, pad {:?})",
                    fmt_shape(spatial),
                    p.kernel,
                    p.dilate,
                    p.pad
                )));
            }
            Ok((padded - ext) / p.stride[d] + 1)
        })
        .collect()
}

/// (N, C, spatial) of the image side, checked against the kernel.
fn image_dims<'a>(op: &str, p: &ColParam, d: &'a [usize]) -> Result<(usize, usize, &'a [usize])> {
    if d.len() != p.kernel.len() + 2 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must have {} dimensions (N, C and {} spatial axes for kernel {:?})",
            fmt_shape(d),
            p.kernel.len() + 2,
            p.kernel.len(),
            p.kernel
        )));
    }
    Ok((d[0], d[1], &d[2..]))
}

fn col_shape(op: &str, p: &ColParam, img: &[usize]) -> Result<Shape> {
    let (n, c, sp) = image_dims(op, p, img)?;
    let l: usize = blocks(op, p, sp)?.iter().product();
    let kk: usize = p.kernel.iter().product();
    Ok(vec![n, c * kk, l])
}

fn img_shape_from_col(op: &str, p: &ColParam, col: &[usize]) -> Result<Shape> {
    let kk: usize = p.kernel.iter().product();
    if col.len() != 3 || !col[1].is_multiple_of(kk) {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must be (N, C * {kk}, L) for kernel {:?}",
            fmt_shape(col),
            p.kernel
        )));
    }
    let mut img = vec![col[0], col[1] / kk];
    img.extend_from_slice(&p.output_size);
    let want = col_shape(op, p, &img)?;
    if want[2] != col[2] {
        return Err(Error::Shape(format!(
            "{op}: data shape {} has {} blocks, but output_size {:?} with kernel {:?}, stride {:?}, dilate {:?}, \
             pad {:?} gives {}",
            fmt_shape(col),
            col[2],
            p.output_size,
            p.kernel,
            p.stride,
            p.dilate,
            p.pad,
            want[2]
        )));
    }
    Ok(img)
}

/// Padded to three spatial axes (leading axes of size 1).
fn geo3(p: &ColParam, sp: &[usize]) -> [[usize; 3]; 6] {
    let lead = 3 - sp.len();
    let get = |v: &[usize], d: usize, def: usize| if d < lead { def } else { v[d - lead] };
    let out = blocks("", p, sp).unwrap_or_default();
    let src: [(&[usize], usize); 6] = [
        (sp, 1),
        (&p.kernel, 1),
        (&p.stride, 1),
        (&p.dilate, 1),
        (&p.pad, 0),
        (&out, 1),
    ];
    let mut g = [[0usize; 3]; 6];
    for (row, (v, def)) in g.iter_mut().zip(src) {
        for (d, slot) in row.iter_mut().enumerate() {
            *slot = get(v, d, def);
        }
    }
    g
}

/// For each (block row r = (c, kernel offset), block l), the flat image
/// index within one image, or None where the block reads padding; calls
/// `f(col_index, Some(img_index))`.
fn walk(p: &ColParam, c: usize, sp: &[usize], mut f: impl FnMut(usize, Option<usize>)) {
    let [s, k, st, dl, pd, o] = geo3(p, sp);
    let plane = s[0] * s[1] * s[2];
    let nl = o[0] * o[1] * o[2];
    let kk = k[0] * k[1] * k[2];
    let coord = |od: usize, kd: usize, d: usize| -> Option<usize> {
        let v = (od * st[d] + kd * dl[d]) as isize - pd[d] as isize;
        (v >= 0 && (v as usize) < s[d]).then_some(v as usize)
    };
    for ch in 0..c {
        for kz in 0..k[0] {
            for ky in 0..k[1] {
                for kx in 0..k[2] {
                    let row = ch * kk + (kz * k[1] + ky) * k[2] + kx;
                    let mut l = 0;
                    for oz in 0..o[0] {
                        let z = coord(oz, kz, 0);
                        for oy in 0..o[1] {
                            let y = coord(oy, ky, 1);
                            for ox in 0..o[2] {
                                let x = coord(ox, kx, 2);
                                let src = match (z, y, x) {
                                    (Some(z), Some(y), Some(x)) => {
                                        Some(ch * plane + (z * s[1] + y) * s[2] + x)
                                    }
                                    _ => None,
                                };
                                f(row * nl + l, src);
                                l += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

fn im2col_typed<T: Elem>(p: &ColParam, img: &[usize], x: &[T], y: &mut [T]) {
    let (n, c, sp) = (img[0], img[1], &img[2..]);
    let per_img: usize = img[1..].iter().product();
    let per_col = y.len() / n.max(1);
    for b in 0..n {
        let xi = &x[b * per_img..(b + 1) * per_img];
        let yi = &mut y[b * per_col..(b + 1) * per_col];
        walk(p, c, sp, |ci, src| {
            yi[ci] = src.map_or(T::from_f64(0.0), |s| xi[s]);
        });
    }
}

fn col2im_typed<T: Elem>(p: &ColParam, img: &[usize], col: &[T], y: &mut [T]) {
    let (n, c, sp) = (img[0], img[1], &img[2..]);
    let per_img: usize = img[1..].iter().product();
    let per_col = col.len() / n.max(1);
    let mut acc = vec![0f64; per_img];
    for b in 0..n {
        acc.fill(0.0);
        let ci = &col[b * per_col..(b + 1) * per_col];
        walk(p, c, sp, |k, dst| {
            if let Some(d) = dst {
                acc[d] += ci[k].to_f64();
            }
        });
        for (o, a) in y[b * per_img..(b + 1) * per_img].iter_mut().zip(&acc) {
            *o = T::from_f64(*a);
        }
    }
}

/// The forward call's kernel/stride/dilate/pad, for the inverse operator.
fn geo_attrs(p: &ColParam) -> Vec<(&'static str, String)> {
    vec![
        ("kernel", shape_attr(&p.kernel)),
        ("stride", shape_attr(&p.stride)),
        ("dilate", shape_attr(&p.dilate)),
        ("pad", shape_attr(&p.pad)),
    ]
}

fn param(c: &OpCall) -> &ColParam {
    c.p::<ColParam>()
}

pub static IM2COL: OpDef = OpDef {
    name: "im2col",
    doc: "Extract sliding blocks from data (N, C, *spatial) with 1, 2 or 3 spatial axes into columns \
          (N, C * prod(kernel), L), where L is the number of block positions (the spatial size of a \
          convolution's output with the same kernel, stride, dilate and pad). Row index = (channel, kernel \
          offset), column index = block position; padding reads as zero. Gradient: col2im.",
    parse: |a| parse_col(a, "im2col", false),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(col_shape("im2col", param(c), d)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        dispatch_float!(i[0].dtype, T => im2col_typed(param(c), &i[0].shape, i[0].data::<T>(), o[0].data_mut::<T>()));
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let d = b.op1("_backward_im2col", &super::fwd_attrs(c), &[g[0], x[0]])?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

pub static BACKWARD_IM2COL: OpDef = OpDef {
    name: "_backward_im2col",
    doc: "Internal: gradient of im2col, i.e. col2im of the output gradient into an array shaped like data. \
          Inputs: output gradient, data.",
    inputs: &["ograd", "data"],
    parse: |a| parse_col(a, "_backward_im2col", false),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[1].clone() {
            let want = col_shape("_backward_im2col", param(c), &d)?;
            super::fill_shape("_backward_im2col", "output gradient", &mut ins[0], want, "")?;
            outs[0] = Some(d);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        dispatch_float!(i[0].dtype, T => col2im_typed(param(c), &i[1].shape, i[0].data::<T>(), o[0].data_mut::<T>()));
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let d = b.op1("im2col", &geo_attrs(param(c)), &[g[0]])?;
        Ok(vec![Some(d), None])
    }),
    ..OpDef::BASE
};

pub static COL2IM: OpDef = OpDef {
    name: "col2im",
    doc: "Accumulate (sum) columns data (N, C * prod(kernel), L) back into an image (N, C, *output_size), \
          the inverse layout of im2col with the same kernel, stride, dilate and pad; overlapping blocks add \
          up, so col2im is the gradient of im2col and vice versa.",
    parse: |a| parse_col(a, "col2im", true),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            outs[0] = Some(img_shape_from_col("col2im", param(c), d)?);
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| {
        let p = param(c);
        let img = img_shape_from_col("col2im", p, &i[0].shape)?;
        dispatch_float!(i[0].dtype, T => col2im_typed(p, &img, i[0].data::<T>(), o[0].data_mut::<T>()));
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let d = b.op1("im2col", &geo_attrs(param(c)), &[g[0]])?;
        Ok(vec![Some(d)])
    }),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn im2col_layout_and_gradients() {
        // one channel, 3x3 image, 2x2 kernel: 4 rows (kernel offsets) x 4 blocks
        let x: Vec<f64> = (0..9).map(f64::from).collect();
        let y = call("im2col", &[("kernel", "(2, 2)")], &[arr(&x, &[1, 1, 3, 3])]).unwrap();
        assert_eq!(y[0].shape, vec![1, 4, 4]);
        let v = y[0].to_vec::<f64>().unwrap();
        assert_eq!(&v[..4], &[0.0, 1.0, 3.0, 4.0]);
        assert_eq!(&v[12..], &[4.0, 5.0, 7.0, 8.0]);
        let at = [
            ("kernel", "(2, 3)"),
            ("stride", "(2, 1)"),
            ("dilate", "(1, 2)"),
            ("pad", "(1, 1)"),
        ];
        check_grad(
            "im2col",
            &at,
            &[(vals(2 * 2 * 5 * 6, 1), vec![2, 2, 5, 6])],
            &[0],
        );
        let mut at2 = at.to_vec();
        at2.push(("output_size", "(5, 6)"));
        check_grad(
            "col2im",
            &at2,
            &[(vals(2 * 12 * 12, 2), vec![2, 12, 12])],
            &[0],
        );
        check_grad(
            "im2col",
            &[("kernel", "(3,)"), ("pad", "(1,)")],
            &[(vals(2 * 7, 3), vec![1, 2, 7])],
            &[0],
        );
    }
}
