//! MXNet 1.9.1's remaining tensor operators: khatri_rao, the legacy
//! batch_take / fill_element_0index / _onehot_encode (behind
//! `mx.nd.onehot_encode`), the mixed-precision helpers all_finite,
//! multi_all_finite, reset_arrays, amp_cast and amp_multicast.
//! (choose_element_0index is MXNet's alias of pick.)
use super::attrs::Attrs;
use super::kernels::cast_blob;
use super::registry::{OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::shape::numel;
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;

fn float_only(op: &str, what: &str, t: DType) -> Result<()> {
    if t.is_float() {
        Ok(())
    } else {
        Err(Error::DType(format!(
            "{op}: {what} has dtype {}; this operator only supports floating point types \
             (float16, float32, float64)",
            t.name()
        )))
    }
}

fn values(b: &Blob) -> Vec<f64> {
    dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64()).collect())
}

fn count_param(a: &Attrs, op: &str, key: &str, default: Option<usize>) -> Result<usize> {
    let p = a.p(op);
    let n = match default {
        Some(d) => p.i64(key, d as i64)?,
        None => p.i64_req(key)?,
    };
    if n < 1 {
        return Err(Error::Param(format!(
            "{op}: argument '{key}' must be at least 1, got {n}"
        )));
    }
    Ok(n as usize)
}

// ---------------------------------------------------------------------------
// khatri_rao and its gradient
// ---------------------------------------------------------------------------

fn kr_shapes(op: &str, shapes: &[Shape]) -> Result<(Vec<usize>, usize)> {
    let mut rows = Vec::with_capacity(shapes.len());
    let mut cols = None;
    for (i, s) in shapes.iter().enumerate() {
        if s.len() != 2 {
            return Err(Error::Shape(format!(
                "{op}: input {i} has shape {}, expected a matrix (2-D)",
                fmt_shape(s)
            )));
        }
        match cols {
            None => cols = Some(s[1]),
            Some(c) if c != s[1] => {
                return Err(Error::Shape(format!(
                "{op}: input {i} has shape {} with {} columns, expected {c} columns like input 0",
                fmt_shape(s),
                s[1]
            )))
            }
            _ => {}
        }
        rows.push(s[0]);
    }
    Ok((rows, cols.unwrap_or(0)))
}

fn kr_types(op: &str, ins: &mut [Option<DType>]) -> Result<Option<DType>> {
    let Some(t) = ins.iter().flatten().next().copied() else {
        return Ok(None);
    };
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(t),
            Some(u) if *u != t => {
                return Err(Error::DType(format!(
                    "{op}: input {i} has dtype {}, expected {} like the other inputs",
                    u.name(),
                    t.name()
                )))
            }
            _ => {}
        }
    }
    float_only(op, "the input", t)?;
    Ok(Some(t))
}

/// Row r of the product: the row index of each factor (first factor most
/// significant).
fn kr_index(mut r: usize, rows: &[usize], idx: &mut [usize]) {
    for j in (0..rows.len()).rev() {
        idx[j] = r % rows[j];
        r /= rows[j];
    }
}

pub static KHATRI_RAO: OpDef = OpDef {
    name: "khatri_rao",
    doc: "Column-wise Khatri-Rao product of num_args matrices A_i (M_i, N): the result \
          (M_1 * ... * M_n, N) has as column k the Kronecker product of the k-th columns (the \
          first matrix varies slowest). Float inputs of one dtype.",
    inputs: &["args"],
    num_inputs: Some(|c| *c.p::<usize>()),
    parse: |a| Ok(Box::new(count_param(a, "khatri_rao", "num_args", Some(1))?) as Params),
    infer_shape: |_, ins, outs| {
        if ins.iter().any(|s| s.is_none()) {
            return Ok(());
        }
        let shapes: Vec<Shape> = ins.iter().flatten().cloned().collect();
        let (rows, n) = kr_shapes("khatri_rao", &shapes)?;
        outs[0] = Some(vec![rows.iter().product(), n]);
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if let Some(t) = kr_types("khatri_rao", ins)? {
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let shapes: Vec<Shape> = i.iter().map(|b| b.shape.clone()).collect();
        let (rows, n) = kr_shapes("khatri_rao", &shapes)?;
        let mats: Vec<Vec<f64>> = i.iter().map(values).collect();
        let mut idx = vec![0; rows.len()];
        dispatch_dtype!(o[0].dtype, T => {
            for (r, orow) in o[0].data_mut::<T>().chunks_mut(n.max(1)).enumerate() {
                kr_index(r, &rows, &mut idx);
                for (k, y) in orow.iter_mut().enumerate() {
                    let mut p = 1.0;
                    for (m, &ij) in mats.iter().zip(&idx) {
                        p *= m[ij * n + k];
                    }
                    *y = T::from_f64(p);
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let n = *c.p::<usize>();
        let mut ins = vec![g[0]];
        ins.extend_from_slice(x);
        let gs = b.op("_backward_khatri_rao", &[("num_args", n.to_string())], &ins)?;
        Ok(gs.into_iter().map(Some).collect())
    }),
    ..OpDef::BASE
};

pub static KHATRI_RAO_GRAD: OpDef = OpDef {
    name: "_backward_khatri_rao",
    doc: "Gradient of khatri_rao: for each factor A_j, d[i, k] = sum over the product's rows \
          r that use row i of A_j of ograd[r, k] times the other factors' entries.",
    inputs: &["ograd", "args"],
    num_inputs: Some(|c| *c.p::<usize>() + 1),
    num_outputs: |c| *c.p::<usize>(),
    parse: |a| Ok(Box::new(count_param(a, "_backward_khatri_rao", "num_args", Some(1))?) as Params),
    infer_shape: |_, ins, outs| {
        for (o, s) in outs.iter_mut().zip(ins[1..].iter()) {
            *o = s.clone();
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        for (o, t) in outs.iter_mut().zip(ins[1..].iter()) {
            *o = *t;
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let shapes: Vec<Shape> = i[1..].iter().map(|b| b.shape.clone()).collect();
        let (rows, n) = kr_shapes("_backward_khatri_rao", &shapes)?;
        let gv = values(&i[0]);
        let mats: Vec<Vec<f64>> = i[1..].iter().map(values).collect();
        let mut acc: Vec<Vec<f64>> = mats.iter().map(|m| vec![0.0; m.len()]).collect();
        let mut idx = vec![0; rows.len()];
        let total: usize = rows.iter().product();
        for r in 0..total {
            kr_index(r, &rows, &mut idx);
            for k in 0..n {
                let gk = gv[r * n + k];
                for j in 0..mats.len() {
                    let mut p = gk;
                    for (l, m) in mats.iter().enumerate() {
                        if l != j {
                            p *= m[idx[l] * n + k];
                        }
                    }
                    acc[j][idx[j] * n + k] += p;
                }
            }
        }
        for (ob, a) in o.iter().zip(acc) {
            dispatch_dtype!(ob.dtype, T => {
                for (y, v) in ob.data_mut::<T>().iter_mut().zip(a) {
                    *y = T::from_f64(v);
                }
            });
        }
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// batch_take, fill_element_0index, _onehot_encode (legacy)
// ---------------------------------------------------------------------------

pub static BATCH_TAKE: OpDef = OpDef {
    name: "batch_take",
    doc: "Deprecated (use pick): output[i] = a[i, indices[i]] for a of shape (d0, d1) and \
          int32 indices of d0 elements (any shape; the output has the indices' shape). Indices \
          are clipped to [0, d1). An N-d `a` is read as rows of its last dimension. Not \
          differentiable (as in MXNet).",
    inputs: &["a", "indices"],
    infer_shape: |_, ins, outs| {
        let (Some(a), Some(ix)) = (&ins[0], &ins[1]) else {
            return Ok(());
        };
        let last = a.last().copied().unwrap_or(1);
        let rows = numel(a).checked_div(last).unwrap_or(0);
        if a.is_empty() || rows != numel(ix) {
            return Err(Error::Shape(format!(
                "batch_take: indices shape {} has {} elements, expected {rows} (one per row of a, \
                 shape {}, excluding its last dimension)",
                fmt_shape(ix),
                numel(ix),
                fmt_shape(a)
            )));
        }
        outs[0] = Some(ix.clone());
        Ok(())
    },
    infer_type: |_, ins, outs| {
        match ins[1] {
            None => ins[1] = Some(DType::I32),
            Some(DType::I32) => {}
            Some(t) => {
                return Err(Error::DType(format!(
                    "batch_take: indices has dtype {}, expected int32",
                    t.name()
                )))
            }
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (a, ix) = (&i[0], i[1].data::<i32>());
        let m = a.shape.last().copied().unwrap_or(1);
        dispatch_dtype!(a.dtype, T => {
            let (av, yv) = (a.data::<T>(), o[0].data_mut::<T>());
            for (r, (y, &j)) in yv.iter_mut().zip(ix).enumerate() {
                let j = (j.max(0) as usize).min(m - 1);
                *y = av[r * m + j];
            }
        });
        Ok(())
    }),
    ..OpDef::BASE
};

pub static FILL_ELEMENT_0INDEX: OpDef = OpDef {
    name: "fill_element_0index",
    doc: "Copy of the matrix lhs (n, m) with lhs[i, rhs[i]] = mhs[i] for each row i (rhs holds \
          0-based column indices, truncated to integers; rows whose index is outside [0, m) \
          stay unchanged). mhs has lhs's dtype. Not differentiable (as in MXNet).",
    inputs: &["lhs", "mhs", "rhs"],
    infer_shape: |_, ins, outs| {
        let (Some(l), Some(m), Some(r)) = (&ins[0], &ins[1], &ins[2]) else {
            return Ok(());
        };
        if l.len() != 2 || m.len() != 1 || r.len() != 1 {
            return Err(Error::Shape(format!(
                "fill_element_0index: expects a matrix lhs, 1-D mhs and 1-D rhs, got shapes {}, {}, {}",
                fmt_shape(l),
                fmt_shape(m),
                fmt_shape(r)
            )));
        }
        if l[0] != m[0] || m[0] != r[0] {
            return Err(Error::Shape(format!(
                "fill_element_0index: lhs {}, mhs {} and rhs {} must have the same number of rows",
                fmt_shape(l),
                fmt_shape(m),
                fmt_shape(r)
            )));
        }
        outs[0] = Some(l.clone());
        Ok(())
    },
    infer_type: |_, ins, outs| {
        if let (Some(l), Some(m)) = (ins[0], ins[1]) {
            if l != m {
                return Err(Error::DType(format!(
                    "fill_element_0index: mhs has dtype {}, expected lhs's dtype {}",
                    m.name(),
                    l.name()
                )));
            }
        }
        if ins[2].is_none() {
            ins[2] = ins[0];
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (l, m, r) = (&i[0], &i[1], &i[2]);
        let ncol = l.shape[1];
        let idx = values(r);
        o[0].bytes_mut().copy_from_slice(l.bytes());
        dispatch_dtype!(l.dtype, T => {
            let (mv, yv) = (m.data::<T>(), o[0].data_mut::<T>());
            for (row, (&v, &j)) in mv.iter().zip(&idx).enumerate() {
                let j = j.trunc();
                if j >= 0.0 && j < ncol as f64 {
                    yv[row * ncol + j as usize] = v;
                }
            }
        });
        Ok(())
    }),
    ..OpDef::BASE
};

pub static ONEHOT_ENCODE: OpDef = OpDef {
    name: "_onehot_encode",
    doc: "Deprecated (use one_hot): the one-hot encoding of the 1-D float32 indices lhs (n,) \
          as a float32 matrix shaped like rhs (n, depth): row i is 1 at column int(lhs[i]) and \
          0 elsewhere (all 0 for an index outside [0, depth)). mx.nd.onehot_encode(indices, \
          out) writes it into out.",
    inputs: &["lhs", "rhs"],
    infer_shape: |_, ins, outs| {
        let (Some(ix), Some(p)) = (&ins[0], &ins[1]) else {
            return Ok(());
        };
        if ix.len() != 1 || p.len() != 2 {
            return Err(Error::Shape(format!(
                "_onehot_encode: expects 1-D indices and a matrix, got shapes {} and {}",
                fmt_shape(ix),
                fmt_shape(p)
            )));
        }
        if ix[0] != p[0] {
            return Err(Error::Shape(format!(
                "_onehot_encode: {} indices for a matrix of {} rows (shape {})",
                ix[0],
                p[0],
                fmt_shape(p)
            )));
        }
        outs[0] = Some(p.clone());
        Ok(())
    },
    infer_type: |_, ins, outs| {
        for (k, nm) in ["lhs", "rhs"].iter().enumerate() {
            match ins[k] {
                None => ins[k] = Some(DType::F32),
                Some(DType::F32) => {}
                Some(t) => {
                    return Err(Error::DType(format!(
                        "_onehot_encode: {nm} has dtype {}, only float32 is supported",
                        t.name()
                    )))
                }
            }
        }
        outs[0] = Some(DType::F32);
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let depth = o[0].shape[1];
        let y = o[0].data_mut::<f32>();
        y.fill(0.0);
        for (row, &v) in i[0].data::<f32>().iter().enumerate() {
            let j = v.trunc();
            if j >= 0.0 && (j as f64) < depth as f64 {
                y[row * depth + j as usize] = 1.0;
            }
        }
        Ok(())
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// all_finite, multi_all_finite, reset_arrays
// ---------------------------------------------------------------------------

fn all_finite_blob(b: &Blob) -> bool {
    dispatch_dtype!(b.dtype, T => b.data::<T>().iter().all(|v| v.to_f64().is_finite()))
}

pub struct FiniteParam {
    num_arrays: usize,
    init_output: bool,
}

fn finite_types(op: &str, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    for (i, t) in ins.iter().enumerate() {
        if let Some(t) = t {
            float_only(op, &format!("input {i}"), *t)?;
        }
    }
    outs[0] = Some(DType::F32);
    Ok(())
}

/// The output (1,) float32: set to 1 first when init_output, then to 0 if
/// any value is NaN or infinite; with init_output=False it keeps its value
/// otherwise (pass out= to accumulate over several calls).
fn finite_kernel(p: &FiniteParam, ins: &[Blob], out: &Blob) {
    let y = out.data_mut::<f32>();
    if p.init_output {
        y[0] = 1.0;
    }
    if !ins.iter().all(all_finite_blob) {
        y[0] = 0.0;
    }
}

pub static ALL_FINITE: OpDef = OpDef {
    name: "all_finite",
    doc: "Whether all values of data (a float array) are finite, as a (1,) float32 array: 1 or \
          0 (used by AMP). init_output (default True) sets the output to 1 first; with False the \
          output (pass out=) keeps its value unless a NaN or infinity is found.",
    parse: |a| {
        let p = a.p("all_finite");
        Ok(Box::new(FiniteParam {
            num_arrays: 1,
            init_output: p.bool("init_output", true)?,
        }) as Params)
    },
    infer_shape: |_, _, outs| {
        outs[0] = Some(vec![1]);
        Ok(())
    },
    infer_type: |_, ins, outs| finite_types("all_finite", ins, outs),
    cpu: Some(|c, i, o, _| {
        finite_kernel(c.p::<FiniteParam>(), i, &o[0]);
        Ok(())
    }),
    ..OpDef::BASE
};

pub static MULTI_ALL_FINITE: OpDef = OpDef {
    name: "multi_all_finite",
    doc: "Whether all values of the num_arrays float arrays are finite, as a (1,) float32 \
          array: 1 or 0 (used by AMP). init_output as in all_finite.",
    inputs: &["data"],
    num_inputs: Some(|c| c.p::<FiniteParam>().num_arrays),
    parse: |a| {
        let op = "multi_all_finite";
        Ok(Box::new(FiniteParam {
            num_arrays: count_param(a, op, "num_arrays", Some(1))?,
            init_output: a.p(op).bool("init_output", true)?,
        }) as Params)
    },
    infer_shape: |_, _, outs| {
        outs[0] = Some(vec![1]);
        Ok(())
    },
    infer_type: |_, ins, outs| finite_types("multi_all_finite", ins, outs),
    cpu: Some(|c, i, o, _| {
        finite_kernel(c.p::<FiniteParam>(), i, &o[0]);
        Ok(())
    }),
    ..OpDef::BASE
};

pub static RESET_ARRAYS: OpDef = OpDef {
    name: "reset_arrays",
    doc: "Set the num_arrays float arrays to zero in place (no output; returns an empty list).",
    inputs: &["data"],
    num_inputs: Some(|c| *c.p::<usize>()),
    num_outputs: |_| 0,
    parse: |a| {
        let n = count_param(a, "reset_arrays", "num_arrays", None)?;
        Ok(Box::new(n) as Params)
    },
    infer_shape: |_, _, _| Ok(()),
    infer_type: |_, ins, _| {
        for (i, t) in ins.iter().enumerate() {
            if let Some(t) = t {
                float_only("reset_arrays", &format!("input {i}"), *t)?;
            }
        }
        Ok(())
    },
    cpu: Some(|_, i, _, _| {
        for b in i {
            b.bytes_mut().fill(0);
        }
        Ok(())
    }),
    mutates_of: Some(|c| (0..*c.p::<usize>()).collect()),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// amp_cast, amp_multicast
// ---------------------------------------------------------------------------

fn is_amp_float(t: DType) -> bool {
    matches!(t, DType::F32 | DType::F16)
}

fn parse_amp_dtype(a: &Attrs) -> Result<DType> {
    let op = "amp_cast";
    let p = a.p(op);
    let Some(s) = p.opt_str("dtype") else {
        return Err(Error::Param(format!(
            "{op}: required argument 'dtype' is missing"
        )));
    };
    match s.as_str() {
        "float16" | "float32" | "float64" | "int32" | "int64" | "int8" | "uint8" => {
            DType::from_name(&s)
        }
        "bfloat16" => Err(Error::Param(format!(
            "{op}: dtype 'bfloat16' is not supported by oxnet (no bfloat16 arrays)"
        ))),
        _ => Err(Error::Param(format!(
            "{op}: argument 'dtype' must be one of 'bfloat16', 'float16', 'float32', 'float64', \
             'int32', 'int64', 'int8', 'uint8', got '{s}'"
        ))),
    }
}

fn cast_back(b: &mut dyn super::registry::GradBuilder, g: usize, x: usize) -> Result<usize> {
    b.op1("_cast_like", &[], &[g, x])
}

pub static AMP_CAST: OpDef = OpDef {
    name: "amp_cast",
    doc: "Cast used by AMP: a float32 or float16 input is cast to dtype; any other input is \
          returned unchanged (its dtype kept). The gradient is cast back to the input's dtype.",
    parse: |a| Ok(Box::new(parse_amp_dtype(a)?) as Params),
    infer_type: |c, ins, outs| {
        if let Some(t) = ins[0] {
            outs[0] = Some(if is_amp_float(t) { *c.p::<DType>() } else { t });
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        cast_blob(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(cast_back(b, g[0], x[0])?)])),
    ..OpDef::BASE
};

pub struct MulticastParam {
    num_outputs: usize,
    cast_narrow: bool,
}

pub static AMP_MULTICAST: OpDef = OpDef {
    name: "amp_multicast",
    doc: "Cast used by AMP: the float32 and float16 inputs among num_outputs arrays are cast \
          to the widest of their types (float32 if any is float32; with cast_narrow=True the \
          narrowest: float16 if any is float16); other inputs are returned unchanged. One \
          output per input; gradients are cast back to the inputs' dtypes.",
    inputs: &["data"],
    num_inputs: Some(|c| c.p::<MulticastParam>().num_outputs),
    num_outputs: |c| c.p::<MulticastParam>().num_outputs,
    parse: |a| {
        let op = "amp_multicast";
        Ok(Box::new(MulticastParam {
            num_outputs: count_param(a, op, "num_outputs", None)?,
            cast_narrow: a.p(op).bool("cast_narrow", false)?,
        }) as Params)
    },
    infer_shape: |_, ins, outs| {
        for (o, s) in outs.iter_mut().zip(ins.iter()) {
            if o.is_none() {
                *o = s.clone();
            }
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<MulticastParam>();
        if ins.iter().any(|t| t.is_none()) {
            return Ok(());
        }
        let types: Vec<DType> = ins.iter().flatten().copied().collect();
        let target = if p.cast_narrow {
            if types.contains(&DType::F16) {
                DType::F16
            } else {
                DType::F32
            }
        } else if types.contains(&DType::F32) {
            DType::F32
        } else {
            DType::F16
        };
        for (o, &t) in outs.iter_mut().zip(&types) {
            *o = Some(if is_amp_float(t) { target } else { t });
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        for (x, y) in i.iter().zip(o) {
            cast_blob(x, y);
        }
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        x.iter()
            .zip(g)
            .map(|(&xi, &gi)| cast_back(b, gi, xi).map(Some))
            .collect()
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &KHATRI_RAO,
    &KHATRI_RAO_GRAD,
    &BATCH_TAKE,
    &FILL_ELEMENT_0INDEX,
    &ONEHOT_ENCODE,
    &ALL_FINITE,
    &MULTI_ALL_FINITE,
    &RESET_ARRAYS,
    &AMP_CAST,
    &AMP_MULTICAST,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::arr;
    use crate::ops::registry::call;

    #[test]
    fn khatri_rao_doc_example() {
        let a = arr(&[1.0, -1.0, 2.0, -3.0], &[2, 2]);
        let b = arr(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0], &[3, 2]);
        let y = call("khatri_rao", &[("num_args", "2")], &[a, b]).unwrap();
        assert_eq!(y[0].shape, vec![6, 2]);
        assert_eq!(
            y[0].to_vec::<f64>().unwrap(),
            vec![1.0, -4.0, 2.0, -5.0, 3.0, -6.0, 2.0, -12.0, 4.0, -15.0, 6.0, -18.0]
        );
    }

    #[test]
    fn reset_and_finite() {
        let a = arr(&[1.0, 2.0], &[2]);
        let b = arr(&[f64::NAN, 2.0], &[2]);
        let f = call(
            "multi_all_finite",
            &[("num_arrays", "2")],
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert_eq!(f[0].to_vec::<f32>().unwrap(), vec![0.0]);
        let r = call(
            "reset_arrays",
            &[("num_arrays", "2")],
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert!(r.is_empty());
        assert_eq!(a.to_vec::<f64>().unwrap(), vec![0.0, 0.0]);
        assert_eq!(b.to_vec::<f64>().unwrap(), vec![0.0, 0.0]);
        let e = call("reset_arrays", &[], &[a]).err().unwrap().message();
        assert!(
            e.contains("reset_arrays") && e.contains("num_arrays"),
            "{e}"
        );
    }
}
