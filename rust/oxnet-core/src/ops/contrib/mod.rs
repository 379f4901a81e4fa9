//! MXNet's contrib operators (`_contrib_<name>`, exposed in Python as
//! `mx.nd.contrib.<name>`): small utilities in this file, detection and
//! resizing operators in their own files.
use super::elemwise::fmt_f64;
use super::nn::{infer_float_same, to_f64_vec, write_f64};
use super::registry::{OpCall, OpDef, Params};
use crate::base::{fmt_shape, shape::norm_axis, DType};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

pub mod attention;
pub mod bbox;
pub mod resize;
pub mod roi_align;

pub static OPS: &[&OpDef] = &[
    &ARANGE_LIKE,
    &INDEX_COPY,
    &INDEX_ARRAY,
    &DIV_SQRT_DIM,
    &QUADRATIC,
    &ALLCLOSE,
    &GRADIENT_MULTIPLIER,
    &ROUND_STE,
    &SIGN_STE,
    &bbox::BOX_IOU,
    &bbox::BOX_NMS,
    &bbox::BACKWARD_BOX_NMS,
    &bbox::BIPARTITE_MATCHING,
    &bbox::BOX_ENCODE,
    &bbox::BOX_DECODE,
    &bbox::MULTIBOX_PRIOR,
    &bbox::MULTIBOX_DETECTION,
    &bbox::MULTIBOX_TARGET,
    &resize::BILINEAR_RESIZE_2D,
    &resize::BACKWARD_BILINEAR_RESIZE_2D,
    &resize::ADAPTIVE_AVG_POOLING_2D,
    &resize::BACKWARD_ADAPTIVE_AVG_POOLING_2D,
    &roi_align::ROI_ALIGN,
    &roi_align::BACKWARD_ROI_ALIGN,
    &attention::SELFATT_QK,
    &attention::BACKWARD_SELFATT_QK,
    &attention::SELFATT_VALATT,
    &attention::BACKWARD_SELFATT_VALATT,
    &attention::ENCDEC_QK,
    &attention::BACKWARD_ENCDEC_QK,
    &attention::ENCDEC_VALATT,
    &attention::BACKWARD_ENCDEC_VALATT,
];

/// Zero gradients for every input (MXNet's `MakeZeroGradNodes`): autograd
/// fills zeros where a gradient function returns none.
pub(crate) fn zero_grads(
    c: &OpCall,
    _: &mut dyn super::registry::GradBuilder,
    x: &[super::registry::Entry],
    _: &[super::registry::Entry],
    _: &[super::registry::Entry],
) -> Result<Vec<Option<super::registry::Entry>>> {
    let _ = c;
    Ok(vec![None; x.len()])
}

/// Apply `f` to every element, in float64, writing the output's dtype.
fn map_f64(i: &Blob, o: &Blob, f: impl Fn(f64) -> f64) {
    let x = to_f64_vec(i);
    let y: Vec<f64> = x.into_iter().map(f).collect();
    write_f64(o, &y);
}

// ---------------------------------------------------------------------------
// arange_like
// ---------------------------------------------------------------------------

struct ArangeLike {
    start: f64,
    step: f64,
    repeat: usize,
    axis: Option<i64>,
}

fn arange_like_shape(op: &str, p: &ArangeLike, s: &[usize]) -> Result<Vec<usize>> {
    match p.axis {
        None => Ok(s.to_vec()),
        Some(a) => {
            let ax = norm_axis(op, a, s.len()).map_err(|_| {
                Error::Param(format!(
                    "{op}: axis {a} is out of range for data of shape {}",
                    fmt_shape(s)
                ))
            })?;
            Ok(vec![s[ax]])
        }
    }
}

pub static ARANGE_LIKE: OpDef = OpDef {
    name: "_contrib_arange_like",
    doc: "Evenly spaced values shaped like data: start + step * (i // repeat) for the flat index i. Without \
          axis the output has data's shape; with axis it is 1-D with the length of that axis (negative axes \
          count from the end). The output has data's dtype; ctx is accepted for MXNet compatibility (the \
          output is on data's context). The gradient to data is zero.",
    parse: |a| {
        let p = a.p("_contrib_arange_like");
        let repeat = p.i64("repeat", 1)?;
        if repeat < 1 {
            return Err(Error::Param(format!(
                "_contrib_arange_like: argument 'repeat' must be a positive integer, got {repeat}"
            )));
        }
        Ok(Box::new(ArangeLike {
            start: p.f64("start", 0.0)?,
            step: p.f64("step", 1.0)?,
            repeat: repeat as usize,
            axis: p.opt_i64("axis")?,
        }) as Params)
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(arange_like_shape(
                "_contrib_arange_like",
                c.p::<ArangeLike>(),
                s,
            )?);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, _, o, _| {
        let p = c.p::<ArangeLike>();
        let n = o[0].shape.iter().product::<usize>();
        let y: Vec<f64> = (0..n)
            .map(|i| p.start + p.step * (i / p.repeat) as f64)
            .collect();
        write_f64(&o[0], &y);
        Ok(())
    }),
    grad: Some(|_, b, x, _, _| Ok(vec![Some(b.op1("zeros_like", &[], &[x[0]])?)])),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// index_copy
// ---------------------------------------------------------------------------

pub static INDEX_COPY: OpDef = OpDef {
    name: "_contrib_index_copy",
    doc: "Copy the rows of new_tensor into a copy of old_tensor: row i of new_tensor goes to row \
          index_vector[i] of the output. index_vector is 1-D with one entry per row of new_tensor; \
          new_tensor's rows have old_tensor's row shape and it has at most as many rows. Indices outside \
          [0, old_tensor.shape[0]) raise at the wait. Gradients: old_tensor gets the output gradient with \
          the copied rows zeroed, new_tensor gets the output gradient's rows at index_vector, index_vector \
          none.",
    inputs: &["old_tensor", "index_vector", "new_tensor"],
    infer_shape: |_, ins, outs| {
        const OP: &str = "_contrib_index_copy";
        if let (Some(old), Some(idx), Some(new)) = (&ins[0], &ins[1], &ins[2]) {
            if old.is_empty() || new.is_empty() {
                return Err(Error::Shape(format!(
                    "{OP}: old_tensor {} and new_tensor {} must have at least one dimension",
                    fmt_shape(old),
                    fmt_shape(new)
                )));
            }
            if idx.len() != 1 || idx[0] != new[0] {
                return Err(Error::Shape(format!(
                    "{OP}: index_vector shape {} must be 1-D with one index per row of new_tensor {}",
                    fmt_shape(idx),
                    fmt_shape(new)
                )));
            }
            if old[1..] != new[1..] || new[0] > old[0] {
                return Err(Error::Shape(format!(
                    "{OP}: new_tensor shape {} must have old_tensor's row shape and at most its rows, \
                     old_tensor shape {}",
                    fmt_shape(new),
                    fmt_shape(old)
                )));
            }
            outs[0] = Some(old.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if ins[1].is_none() {
            ins[1] = Some(DType::F32);
        }
        if let (Some(a), Some(b)) = (ins[0], ins[2]) {
            if a != b {
                return Err(Error::DType(format!(
                    "_contrib_index_copy: new_tensor has dtype {}, old_tensor {}; they must match",
                    b.name(),
                    a.name()
                )));
            }
        }
        let t = ins[0].or(ins[2]);
        ins[0] = t;
        ins[2] = t;
        outs[0] = t;
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (old, idx, new, y) = (&i[0], &i[1], &i[2], &o[0]);
        let n = old.shape[0];
        let row = old.shape[1..].iter().product::<usize>() * old.dtype.size();
        let dst = y.bytes_mut();
        dst.copy_from_slice(old.bytes());
        let src = new.bytes();
        for (k, v) in to_f64_vec(idx).into_iter().enumerate() {
            if !(v >= 0.0 && (v as usize) < n) || v.fract() != 0.0 {
                return Err(Error::Index(format!(
                    "_contrib_index_copy: index_vector[{k}] = {v} is not a row of old_tensor (shape {})",
                    fmt_shape(&old.shape)
                )));
            }
            let r = v as usize;
            dst[r * row..(r + 1) * row].copy_from_slice(&src[k * row..(k + 1) * row]);
        }
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        let d_old = if b.needs_grad(0) {
            let z = b.op1("zeros_like", &[], &[x[2]])?;
            Some(b.op1("_contrib_index_copy", &[], &[g[0], x[1], z])?)
        } else {
            None
        };
        let d_new = if b.needs_grad(2) {
            Some(b.op1(
                "take",
                &[("axis", "0".into()), ("mode", "clip".into())],
                &[g[0], x[1]],
            )?)
        } else {
            None
        };
        Ok(vec![d_old, None, d_new])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// index_array
// ---------------------------------------------------------------------------

fn index_array_axes(c: &OpCall, s: &[usize]) -> Result<Vec<usize>> {
    match c.p::<Option<Vec<i64>>>() {
        None => Ok((0..s.len()).collect()),
        Some(ax) => ax
            .iter()
            .map(|&a| {
                norm_axis("_contrib_index_array", a, s.len()).map_err(|_| {
                    Error::Param(format!(
                        "_contrib_index_array: axis {a} in axes is out of range for data of shape {}",
                        fmt_shape(s)
                    ))
                })
            })
            .collect(),
    }
}

pub static INDEX_ARRAY: OpDef = OpDef {
    name: "_contrib_index_array",
    doc: "The index of every element: for data of shape (d1, ..., dn) an int64 array of shape (d1, ..., dn, \
          m) whose [i1, ..., in, j] entry is i_{axes[j]}; axes (negative values count from the end) defaults \
          to all n axes in order. Zero gradients.",
    parse: |a| Ok(Box::new(a.p("_contrib_index_array").ints("axes")?) as Params),
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            let ax = index_array_axes(c, s)?;
            let mut o = s.clone();
            o.push(ax.len());
            outs[0] = Some(o);
        }
        Ok(())
    },
    infer_type: |_, _, outs| {
        outs[0] = Some(DType::I64);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let s = &i[0].shape;
        let ax = index_array_axes(c, s)?;
        let n = s.iter().product::<usize>();
        let mut strides = vec![1usize; s.len()];
        for k in (0..s.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1] * s[k + 1];
        }
        let y = o[0].data_mut::<i64>();
        for f in 0..n {
            for (j, &a) in ax.iter().enumerate() {
                y[f * ax.len() + j] = ((f / strides[a]) % s[a]) as i64;
            }
        }
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// element-wise
// ---------------------------------------------------------------------------

pub static DIV_SQRT_DIM: OpDef = OpDef {
    name: "_contrib_div_sqrt_dim",
    doc: "data / sqrt(data.shape[-1]) (float dtypes). Gradient: the output gradient divided the same way.",
    infer_shape: |_, ins, outs| {
        if let Some(s) = &ins[0] {
            if s.is_empty() {
                return Err(Error::Shape(
                    "_contrib_div_sqrt_dim: data must have at least one dimension, got shape ()".into(),
                ));
            }
            outs[0] = Some(s.clone());
        }
        Ok(())
    },
    infer_type: infer_float_same,
    cpu: Some(|_, i, o, _| {
        let d = *i[0].shape.last().unwrap_or(&1) as f64;
        let s = d.sqrt();
        map_f64(&i[0], &o[0], |v| v / s);
        Ok(())
    }),
    grad: Some(|_, b, _, _, g| Ok(vec![Some(b.op1("_contrib_div_sqrt_dim", &[], &[g[0]])?)])),
    ..OpDef::BASE
};

struct Quad {
    a: f64,
    b: f64,
    c: f64,
}

pub static QUADRATIC: OpDef = OpDef {
    name: "_contrib_quadratic",
    doc: "a * data^2 + b * data + c element-wise (a, b, c default 0). Gradient: (2 a data + b) times the \
          output gradient.",
    parse: |a| {
        let p = a.p("_contrib_quadratic");
        Ok(Box::new(Quad {
            a: p.f64("a", 0.0)?,
            b: p.f64("b", 0.0)?,
            c: p.f64("c", 0.0)?,
        }) as Params)
    },
    cpu: Some(|c, i, o, _| {
        let q = c.p::<Quad>();
        map_f64(&i[0], &o[0], |x| q.a * x * x + q.b * x + q.c);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let q = c.p::<Quad>();
        let d = b.op1(
            "_contrib_quadratic",
            &[
                ("a", "0.0".into()),
                ("b", fmt_f64(2.0 * q.a)),
                ("c", fmt_f64(q.b)),
            ],
            &[x[0]],
        )?;
        Ok(vec![Some(b.op1("elemwise_mul", &[], &[d, g[0]])?)])
    }),
    ..OpDef::BASE
};

struct Close {
    rtol: f64,
    atol: f64,
    equal_nan: bool,
}

pub static ALLCLOSE: OpDef = OpDef {
    name: "_contrib_allclose",
    doc: "Whether every |a - b| <= atol + rtol * |b| (equal values, infinities included, always match; NaNs \
          match each other when equal_nan, the default). a and b have one shape and dtype; the result is a \
          uint8 array of shape () holding 1 or 0. rtol defaults to 1e-05, atol to 1e-08. Zero gradients.",
    inputs: &["a", "b"],
    parse: |a| {
        let p = a.p("_contrib_allclose");
        Ok(Box::new(Close {
            rtol: p.f64("rtol", 1e-5)?,
            atol: p.f64("atol", 1e-8)?,
            equal_nan: p.bool("equal_nan", true)?,
        }) as Params)
    },
    infer_shape: |_, ins, outs| {
        if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
            if a != b {
                return Err(Error::Shape(format!(
                    "_contrib_allclose: a shape {} and b shape {} must be equal",
                    fmt_shape(a),
                    fmt_shape(b)
                )));
            }
        }
        outs[0] = Some(vec![]);
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut o = [None];
        super::registry::infer_type_same(c, ins, &mut o)?;
        outs[0] = Some(DType::U8);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<Close>();
        let (a, b) = (to_f64_vec(&i[0]), to_f64_vec(&i[1]));
        let ok = a.iter().zip(&b).all(|(&x, &y)| {
            if x == y {
                true
            } else if x.is_nan() || y.is_nan() {
                p.equal_nan && x.is_nan() && y.is_nan()
            } else {
                (x - y).abs() <= p.atol + p.rtol * y.abs()
            }
        });
        o[0].data_mut::<u8>()[0] = ok as u8;
        Ok(())
    }),
    grad: Some(zero_grads),
    ..OpDef::BASE
};

pub static GRADIENT_MULTIPLIER: OpDef = OpDef {
    name: "_contrib_gradientmultiplier",
    doc: "Identity in the forward pass; the backward multiplies the output gradient by scalar (default 1). \
          is_int (default True) is accepted for MXNet compatibility and has no effect.",
    parse: |a| {
        let p = a.p("_contrib_gradientmultiplier");
        p.bool("is_int", true)?;
        Ok(Box::new(p.f64("scalar", 1.0)?) as Params)
    },
    cpu: Some(|_, i, o, _| {
        o[0].bytes_mut().copy_from_slice(i[0].bytes());
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let s = *c.p::<f64>();
        Ok(vec![Some(b.op1(
            "_mul_scalar",
            &[("scalar", fmt_f64(s))],
            &[g[0]],
        )?)])
    }),
    ..OpDef::BASE
};

pub static ROUND_STE: OpDef = OpDef {
    name: "_contrib_round_ste",
    doc: "Round to the nearest integer (halves away from zero) with a straight-through gradient: the \
          output gradient passes to data unchanged.",
    cpu: Some(|_, i, o, _| {
        map_f64(&i[0], &o[0], f64::round);
        Ok(())
    }),
    grad: Some(|_, _, _, _, g| Ok(vec![Some(g[0])])),
    ..OpDef::BASE
};

pub static SIGN_STE: OpDef = OpDef {
    name: "_contrib_sign_ste",
    doc: "Sign (-1, 0 or 1) with a straight-through gradient: the output gradient passes to data unchanged.",
    cpu: Some(|_, i, o, _| {
        map_f64(&i[0], &o[0], |v| {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        });
        Ok(())
    }),
    grad: Some(|_, _, _, _, g| Ok(vec![Some(g[0])])),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;

    #[test]
    fn box_nms_layout_and_gradient() {
        // MXNet 1.9.1's documented behaviour: kept rows by descending score, then -1 rows
        let x = [
            0.0, 0.5, 0.1, 0.1, 0.2, 0.2, //
            1.0, 0.4, 0.1, 0.1, 0.2, 0.2, //
            0.0, 0.3, 0.1, 0.1, 0.14, 0.14, //
            2.0, 0.6, 0.5, 0.5, 0.7, 0.8, //
            1.0, 0.9, 0.11, 0.1, 0.2, 0.21,
        ];
        let y = call("_contrib_box_nms", &[], &[arr(&x, &[5, 6])]).unwrap();
        let y = y[0].to_vec::<f64>().unwrap();
        assert_eq!(&y[..6], &x[24..30]);
        assert_eq!(&y[6..12], &x[18..24]);
        assert_eq!(&y[12..18], &x[12..18]);
        assert!(y[18..].iter().all(|&v| v == -1.0));
        check_grad("_contrib_box_nms", &[], &[(x.to_vec(), vec![5, 6])], &[0]);
    }

    #[test]
    fn resize_pool_roi_attention_gradients() {
        let img = (vals(2 * 2 * 4 * 5, 3), vec![2, 2, 4, 5]);
        for align in ["True", "False"] {
            check_grad(
                "_contrib_BilinearResize2D",
                &[("height", "3"), ("width", "7"), ("align_corners", align)],
                std::slice::from_ref(&img),
                &[0],
            );
        }
        check_grad(
            "_contrib_AdaptiveAvgPooling2D",
            &[("output_size", "(3, 2)")],
            std::slice::from_ref(&img),
            &[0],
        );
        let rois = vec![0.0, 0.5, 0.2, 3.1, 2.8, 1.0, -1.0, 0.0, 2.0, 5.0];
        check_grad(
            "_contrib_ROIAlign",
            &[("pooled_size", "(2, 2)"), ("spatial_scale", "1.0")],
            &[img.clone(), (rois, vec![2, 5])],
            &[0],
        );
        check_grad(
            "_contrib_interleaved_matmul_selfatt_valatt",
            &[("heads", "2")],
            &[
                (vals(3 * 2 * 12, 4), vec![3, 2, 12]),
                (vals(4 * 3 * 3, 5), vec![4, 3, 3]),
            ],
            &[0, 1],
        );
        check_grad(
            "_contrib_interleaved_matmul_encdec_qk",
            &[("heads", "2")],
            &[
                (vals(3 * 2 * 4, 6), vec![3, 2, 4]),
                (vals(5 * 2 * 8, 7), vec![5, 2, 8]),
            ],
            &[0, 1],
        );
    }

    #[test]
    fn small_operator_gradients() {
        check_grad(
            "_contrib_quadratic",
            &[("a", "1.5"), ("b", "-2"), ("c", "0.5")],
            &[(vals(6, 8), vec![2, 3])],
            &[0],
        );
        check_grad(
            "_contrib_index_copy",
            &[],
            &[
                (vals(8, 9), vec![4, 2]),
                (vec![3.0, 0.0], vec![2]),
                (vals(4, 10), vec![2, 2]),
            ],
            &[0, 2],
        );
    }
}
