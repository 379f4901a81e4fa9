//! Indexing and ordering: take, pick, one_hot, sort, argsort, topk, and the
//! internal ops their gradients use (`_take_grad`, `_pick_grad`,
//! `_gather_along_axis`, `_scatter_add_along_axis`), each with its own
//! gradient so second-order differentiation works.
//!
//! Index inputs may have any dtype; float indices are truncated towards
//! zero (C cast), as in MXNet 1.x.
use super::kernels::PAR_GRAIN;
use super::reduce::reduce_axis_plan;
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef};
use crate::base::dtype::Elem;
use crate::base::shape::{norm_axis, numel};
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::par::par_chunks_mut;
use std::cmp::Ordering;

type B<'a> = &'a mut dyn GradBuilder;

const NO_GRAD: Option<super::registry::GradFn> = Some(|_, _, i, _, _| Ok(vec![None; i.len()]));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Clip,
    Wrap,
    Raise,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Clip => "clip",
            Mode::Wrap => "wrap",
            Mode::Raise => "raise",
        }
    }
    fn parse(op: &str, a: &super::attrs::Attrs, allowed: &[&str]) -> Result<Mode> {
        Ok(match a.p(op).choice("mode", "clip", allowed)?.as_str() {
            "clip" => Mode::Clip,
            "wrap" => Mode::Wrap,
            _ => Mode::Raise,
        })
    }
}

/// (elements before axis, extent of axis, elements after axis).
fn split3(s: &[usize], ax: usize) -> (usize, usize, usize) {
    (
        s[..ax].iter().product(),
        s[ax],
        s[ax + 1..].iter().product(),
    )
}

/// Read index values as f64 (any dtype).
fn index_values(b: &Blob) -> Vec<f64> {
    dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64()).collect())
}

/// Map index values to positions in [0, n) according to `mode`.
fn resolve(op: &str, vals: &[f64], n: usize, mode: Mode) -> Result<Vec<usize>> {
    if n == 0 {
        if vals.is_empty() {
            return Ok(Vec::new());
        }
        return Err(Error::Index(format!(
            "{op}: cannot index an axis of size 0"
        )));
    }
    let ni = n as i64;
    vals.iter()
        .map(|&v| {
            let j = v as i64; // truncation towards zero, like a C cast
            Ok(match mode {
                Mode::Clip => j.clamp(0, ni - 1) as usize,
                Mode::Wrap => j.rem_euclid(ni) as usize,
                Mode::Raise => {
                    if v.is_nan() || v < 0.0 || v > (ni - 1) as f64 {
                        return Err(Error::Index(format!(
                            "{op}: index {v} is out of bounds for an axis of size {n} (mode='raise')"
                        )));
                    }
                    j as usize
                }
            })
        })
        .collect()
}

fn fill_index_type(ins: &mut [Option<DType>], k: usize) {
    if ins[k].is_none() {
        ins[k] = Some(DType::F32);
    }
}

/// Inputs (data, index, ...): the index defaults to float32, the output has
/// the data's dtype.
fn data_index_type(
    _: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    fill_index_type(ins, 1);
    outs[0] = ins[0];
    Ok(())
}

// ---------------------------------------------------------------------------
// take
// ---------------------------------------------------------------------------

pub struct TakeParam {
    axis: i64,
    mode: Mode,
}

fn parse_take(op: &str, a: &super::attrs::Attrs) -> Result<TakeParam> {
    Ok(TakeParam {
        axis: a.p(op).i64("axis", 0)?,
        mode: Mode::parse(op, a, &["clip", "wrap", "raise"])?,
    })
}

fn take_attrs(p: &TakeParam) -> Vec<(&'static str, String)> {
    vec![
        ("axis", p.axis.to_string()),
        ("mode", p.mode.name().to_string()),
    ]
}

fn take_shape(op: &str, a: &[usize], idx: &[usize], axis: i64) -> Result<(usize, Shape)> {
    if a.is_empty() {
        return Err(Error::Shape(format!(
            "{op}: data must have at least one dimension, got shape ()"
        )));
    }
    let ax = norm_axis(op, axis, a.len()).map_err(|_| {
        Error::Param(format!(
            "{op}: axis {axis} is out of range for data of shape {} ({} dimensions)",
            fmt_shape(a),
            a.len()
        ))
    })?;
    let mut out = a[..ax].to_vec();
    out.extend_from_slice(idx);
    out.extend_from_slice(&a[ax + 1..]);
    Ok((ax, out))
}

pub static TAKE: OpDef = OpDef {
    name: "take",
    doc: "Take elements of a along axis at the given indices (mode clip, wrap or raise for out-of-range indices).",
    inputs: &["a", "indices"],
    parse: |a| Ok(Box::new(parse_take("take", a)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(a), Some(i)) = (&ins[0], &ins[1]) {
            outs[0] = Some(take_shape("take", a, i, c.p::<TakeParam>().axis)?.1);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 1);
        if ins[0].is_none() {
            ins[0] = outs[0];
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<TakeParam>();
        let (a, ib, y) = (&i[0], &i[1], &o[0]);
        let (ax, _) = take_shape("take", &a.shape, &ib.shape, p.axis)?;
        let (pre, n, post) = split3(&a.shape, ax);
        let idx = resolve("take", &index_values(ib), n, p.mode)?;
        let ni = idx.len();
        let row = post * a.dtype.size();
        if row == 0 || ni == 0 || pre == 0 {
            return Ok(());
        }
        let (src, dst) = (a.bytes(), y.bytes_mut());
        let copy = |r: usize, d: &mut [u8]| {
            let (pi, k) = (r / ni, r % ni);
            let s = (pi * n + idx[k]) * row;
            d.copy_from_slice(&src[s..s + row]);
        };
        if y.nbytes() >= 8 * PAR_GRAIN {
            let rows = (PAR_GRAIN / row).max(1);
            par_chunks_mut(dst, rows * row, |c, d| {
                for (j, dr) in d.chunks_mut(row).enumerate() {
                    copy(c * rows + j, dr);
                }
            });
        } else {
            dst.chunks_mut(row).enumerate().for_each(|(r, d)| copy(r, d));
        }
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let a = take_attrs(c.p::<TakeParam>());
        Ok(vec![Some(b.op1("_take_grad", &a, &[g[0], x[1], x[0]])?), None])
    }),
    ..OpDef::BASE
};

pub static TAKE_GRAD: OpDef = OpDef {
    name: "_take_grad",
    doc: "Gradient of take: scatter-add ograd into zeros of data's shape at the taken positions.",
    inputs: &["ograd", "indices", "data"],
    parse: |a| Ok(Box::new(parse_take("_take_grad", a)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(i)) = (ins[2].clone(), ins[1].clone()) {
            let (d, i) = (&d, &i);
            let (_, ts) = take_shape("_take_grad", d, i, c.p::<TakeParam>().axis)?;
            match &ins[0] {
                None => ins[0] = Some(ts),
                Some(g) if *g != ts => {
                    return Err(Error::Shape(format!(
                        "_take_grad: ograd shape {} does not match take's output shape {} (data {}, indices {})",
                        fmt_shape(g),
                        fmt_shape(&ts),
                        fmt_shape(d),
                        fmt_shape(i)
                    )))
                }
                _ => {}
            }
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 1);
        if ins[0].is_none() {
            ins[0] = outs[0].or(ins[2]);
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<TakeParam>();
        let (g, ib, y) = (&i[0], &i[1], &o[0]);
        let (ax, _) = take_shape("_take_grad", &y.shape, &ib.shape, p.axis)?;
        let (pre, n, post) = split3(&y.shape, ax);
        let idx = resolve("_take_grad", &index_values(ib), n, p.mode)?;
        let ni = idx.len();
        dispatch_dtype!(g.dtype, T => {
            let gv = g.data::<T>();
            let yv = y.data_mut::<T>();
            let block = |pi: usize, yb: &mut [T]| {
                let mut acc = vec![0f64; n * post];
                for (k, &j) in idx.iter().enumerate() {
                    let gs = &gv[(pi * ni + k) * post..(pi * ni + k + 1) * post];
                    for (a, &v) in acc[j * post..(j + 1) * post].iter_mut().zip(gs) {
                        *a += v.to_f64();
                    }
                }
                for (yv, a) in yb.iter_mut().zip(acc) {
                    *yv = T::from_f64(a);
                }
            };
            let blk = n * post;
            if blk == 0 {
                return Ok(());
            }
            if g.size() + y.size() >= 2 * PAR_GRAIN && pre > 1 {
                par_chunks_mut(yv, blk, block);
            } else {
                yv.chunks_mut(blk).enumerate().for_each(|(pi, yb)| block(pi, yb));
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let a = take_attrs(c.p::<TakeParam>());
        Ok(vec![Some(b.op1("take", &a, &[g[0], x[1]])?), None, None])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// pick
// ---------------------------------------------------------------------------

pub struct PickParam {
    axis: i64,
    keepdims: bool,
    mode: Mode,
}

fn parse_pick(op: &str, a: &super::attrs::Attrs) -> Result<PickParam> {
    let p = a.p(op);
    if a.raw("axis").map(|v| v.trim() == "None").unwrap_or(false) {
        return Err(Error::Param(format!(
            "{op}: axis=None is not supported (as in MXNet 1.x); give an integer axis"
        )));
    }
    Ok(PickParam {
        axis: p.i64("axis", -1)?,
        keepdims: p.bool("keepdims", false)?,
        mode: Mode::parse(op, a, &["clip", "wrap"])?,
    })
}

fn pick_attrs(p: &PickParam) -> Vec<(&'static str, String)> {
    vec![
        ("axis", p.axis.to_string()),
        (
            "keepdims",
            if p.keepdims { "True" } else { "False" }.to_string(),
        ),
        ("mode", p.mode.name().to_string()),
    ]
}

/// Returns ((pre, n, post), output shape, accepted index shape).
fn pick_plan(
    op: &str,
    d: &[usize],
    idx: Option<&[usize]>,
    p: &PickParam,
) -> Result<((usize, usize, usize), Shape, Shape)> {
    let (dims, out) = reduce_axis_plan(op, d, Some(p.axis), p.keepdims)?;
    // The index may come with or without the picked axis kept (size 1).
    let want = |keep: bool| -> Result<Shape> { Ok(reduce_axis_plan(op, d, Some(p.axis), keep)?.1) };
    let ishape = match idx {
        Some(i) if i.len() == d.len() => want(true)?,
        Some(_) | None => want(p.keepdims)?,
    };
    if let Some(i) = idx {
        if i != ishape.as_slice() && !(numel(i) == numel(&ishape) && want(!p.keepdims)? == i) {
            return Err(Error::Shape(format!(
                "{op}: index shape {} does not match data shape {} with axis={} (expected {})",
                fmt_shape(i),
                fmt_shape(d),
                p.axis,
                fmt_shape(&ishape)
            )));
        }
    }
    Ok((dims, out, ishape))
}

pub static PICK: OpDef = OpDef {
    name: "pick",
    aliases: &["choose_element_0index"],
    doc: "Pick one element per position along axis, at the given index (mode clip or wrap).",
    inputs: &["data", "index"],
    parse: |a| Ok(Box::new(parse_pick("pick", a)?)),
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            let (_, out, ishape) = pick_plan("pick", d, ins[1].as_deref(), c.p::<PickParam>())?;
            if ins[1].is_none() {
                ins[1] = Some(ishape);
            }
            outs[0] = Some(out);
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 1);
        if ins[0].is_none() {
            ins[0] = outs[0];
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<PickParam>();
        let (d, ib, y) = (&i[0], &i[1], &o[0]);
        let ((_, n, post), _, _) = pick_plan("pick", &d.shape, Some(&ib.shape), p)?;
        let idx = resolve("pick", &index_values(ib), n, p.mode)?;
        dispatch_dtype!(d.dtype, T => {
            let (dv, yv) = (d.data::<T>(), y.data_mut::<T>());
            for (r, (yv, &j)) in yv.iter_mut().zip(&idx).enumerate() {
                let (pi, q) = (r / post, r % post);
                *yv = dv[(pi * n + j) * post + q];
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let a = pick_attrs(c.p::<PickParam>());
        Ok(vec![
            Some(b.op1("_pick_grad", &a, &[g[0], x[1], x[0]])?),
            None,
        ])
    }),
    ..OpDef::BASE
};

pub static PICK_GRAD: OpDef = OpDef {
    name: "_pick_grad",
    doc: "Gradient of pick: ograd placed at the picked positions of zeros shaped like data.",
    inputs: &["ograd", "index", "data"],
    parse: |a| Ok(Box::new(parse_pick("_pick_grad", a)?)),
    infer_shape: |c, ins, outs| {
        if let Some(d) = ins[2].clone() {
            let d = &d;
            let (_, out, ishape) =
                pick_plan("_pick_grad", d, ins[1].as_deref(), c.p::<PickParam>())?;
            if ins[1].is_none() {
                ins[1] = Some(ishape);
            }
            match &ins[0] {
                None => ins[0] = Some(out),
                Some(g) if *g != out => {
                    return Err(Error::Shape(format!(
                        "_pick_grad: ograd shape {} does not match pick's output shape {} for data shape {}",
                        fmt_shape(g),
                        fmt_shape(&out),
                        fmt_shape(d)
                    )))
                }
                _ => {}
            }
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 1);
        if ins[0].is_none() {
            ins[0] = outs[0].or(ins[2]);
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<PickParam>();
        let (g, ib, y) = (&i[0], &i[1], &o[0]);
        let ((_, n, post), _, _) = pick_plan("_pick_grad", &y.shape, Some(&ib.shape), p)?;
        let idx = resolve("_pick_grad", &index_values(ib), n, p.mode)?;
        y.bytes_mut().fill(0);
        dispatch_dtype!(g.dtype, T => {
            let (gv, yv) = (g.data::<T>(), y.data_mut::<T>());
            for (r, (&gv, &j)) in gv.iter().zip(&idx).enumerate() {
                let (pi, q) = (r / post, r % post);
                let t = &mut yv[(pi * n + j) * post + q];
                *t = T::from_f64(t.to_f64() + gv.to_f64());
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let a = pick_attrs(c.p::<PickParam>());
        Ok(vec![Some(b.op1("pick", &a, &[g[0], x[1]])?), None, None])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// one_hot
// ---------------------------------------------------------------------------

pub struct OneHotParam {
    depth: usize,
    on: f64,
    off: f64,
    dtype: DType,
}

pub static ONE_HOT: OpDef = OpDef {
    name: "one_hot",
    doc: "One-hot encoding: output[..., i] = on_value where i == indices[...], else off_value; indices outside [0, depth) give an all-off row.",
    inputs: &["indices"],
    parse: |a| {
        let p = a.p("one_hot");
        let depth = p.i64_req("depth")?;
        if depth < 0 {
            return Err(Error::Param(format!("one_hot: argument 'depth' must be non-negative, got {depth}")));
        }
        Ok(Box::new(OneHotParam {
            depth: depth as usize,
            on: p.f64("on_value", 1.0)?,
            off: p.f64("off_value", 0.0)?,
            dtype: p.dtype("dtype", DType::F32)?,
        }))
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            let mut o = s.clone();
            o.push(c.p::<OneHotParam>().depth);
            outs[0] = Some(o);
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        fill_index_type(ins, 0);
        outs[0] = Some(c.p::<OneHotParam>().dtype);
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<OneHotParam>();
        let vals = index_values(&i[0]);
        let d = p.depth;
        dispatch_dtype!(o[0].dtype, T => {
            let y = o[0].data_mut::<T>();
            y.fill(T::from_f64(p.off));
            let on = T::from_f64(p.on);
            for (r, &v) in vals.iter().enumerate() {
                let j = v as i64;
                if j >= 0 && (j as usize) < d {
                    y[r * d + j as usize] = on;
                }
            }
        });
        Ok(())
    }),
    grad: NO_GRAD,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// sort, argsort, topk
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ret {
    Value,
    Indices,
    Mask,
    Both,
}

pub struct TopkParam {
    /// None = over the flattened input.
    axis: Option<i64>,
    /// 0 = all elements along the axis.
    k: i64,
    ret: Ret,
    ascend: bool,
    dtype: DType,
}

/// `axis` absent means `default`; "None" means flatten.
fn opt_axis(op: &str, a: &super::attrs::Attrs, default: i64) -> Result<Option<i64>> {
    match a.raw("axis") {
        Some(v) if v.trim() == "None" => Ok(None),
        _ => Ok(Some(a.p(op).i64("axis", default)?)),
    }
}

fn index_dtype(op: &str, a: &super::attrs::Attrs) -> Result<DType> {
    let t = a.p(op).dtype("dtype", DType::F32)?;
    if !matches!(
        t,
        DType::F16 | DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::U8
    ) {
        return Err(Error::Param(format!(
            "{op}: argument 'dtype' must be one of float16, float32, float64, int32, int64, uint8, got '{}'",
            t.name()
        )));
    }
    Ok(t)
}

fn axis_attr(a: Option<i64>) -> String {
    a.map(|v| v.to_string())
        .unwrap_or_else(|| "None".to_string())
}

/// ((pre, n, post), k, value/indices shape).
fn topk_plan(
    op: &str,
    s: &[usize],
    p: &TopkParam,
) -> Result<((usize, usize, usize), usize, Shape)> {
    let (dims, ax) = match p.axis {
        None => ((1, numel(s), 1), None),
        Some(a) => {
            if s.is_empty() {
                return Err(Error::Shape(format!(
                    "{op}: data must have at least one dimension, got shape ()"
                )));
            }
            let ax = norm_axis(op, a, s.len()).map_err(|_| {
                Error::Param(format!(
                    "{op}: axis {a} is out of range for data of shape {} ({} dimensions)",
                    fmt_shape(s),
                    s.len()
                ))
            })?;
            (split3(s, ax), Some(ax))
        }
    };
    let n = dims.1;
    let k = if p.k <= 0 { n } else { p.k as usize };
    if k > n {
        return Err(Error::Param(format!(
            "{op}: k={} exceeds the {} elements along the axis (data shape {}, axis={})",
            p.k,
            n,
            fmt_shape(s),
            axis_attr(p.axis)
        )));
    }
    let vshape = match ax {
        None => vec![k],
        Some(ax) => {
            let mut v = s.to_vec();
            v[ax] = k;
            v
        }
    };
    Ok((dims, k, vshape))
}

#[inline]
fn cmp_nan_last(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Positions (along the axis) of the first k elements in sorted order, laid
/// out [pre][k][post]. Ties keep the lower index first (stable); NaN sorts
/// as the largest value.
fn topk_perm<T: Elem>(
    x: &[T],
    (pre, n, post): (usize, usize, usize),
    k: usize,
    ascend: bool,
) -> Vec<usize> {
    let mut perm = vec![0usize; pre * k * post];
    if k == 0 {
        return perm;
    }
    // the sort order of elements (value, position): value, then position
    let order = |va: f64, ia: usize, vb: f64, ib: usize| {
        let o = if ascend {
            cmp_nan_last(va, vb)
        } else {
            cmp_nan_last(vb, va)
        };
        o.then(ia.cmp(&ib))
    };
    let before = |va: f64, ia: usize, vb: f64, ib: usize| order(va, ia, vb, ib) == Ordering::Less;
    // scratch per task: the line's values and positions
    let block = |pi: usize, pb: &mut [usize], vals: &mut Vec<f64>, ids: &mut Vec<usize>| {
        vals.resize(n, 0.0);
        for q in 0..post {
            for (i, v) in vals.iter_mut().enumerate() {
                *v = x[(pi * n + i) * post + q].to_f64();
            }
            if k <= 16 && k * 8 <= n {
                // a few of many: insert each element into a sorted top-k
                // (scanning in index order keeps ties stable)
                ids.clear();
                for (i, &v) in vals.iter().enumerate() {
                    if ids.len() == k {
                        let last = ids[k - 1];
                        if !before(v, i, vals[last], last) {
                            continue;
                        }
                        ids.pop();
                    }
                    let at = ids
                        .iter()
                        .position(|&j| before(v, i, vals[j], j))
                        .unwrap_or(ids.len());
                    ids.insert(at, i);
                }
            } else {
                ids.clear();
                ids.extend(0..n);
                let cmp = |a: &usize, b: &usize| order(vals[*a], *a, vals[*b], *b);
                if k < n && k * 8 <= n {
                    ids.select_nth_unstable_by(k - 1, cmp);
                    ids[..k].sort_unstable_by(cmp);
                } else {
                    ids.sort_unstable_by(cmp);
                }
            }
            for j in 0..k {
                pb[j * post + q] = ids[j];
            }
        }
    };
    let blk = k * post;
    if pre * n * post >= 2 * PAR_GRAIN && pre > 1 {
        // blocks in groups of about PAR_GRAIN input elements per task
        let group = (PAR_GRAIN / (n * post).max(1)).max(1);
        par_chunks_mut(&mut perm, blk * group, |gi, pg| {
            let (mut vals, mut ids) = (Vec::new(), Vec::with_capacity(n));
            for (j, pb) in pg.chunks_mut(blk).enumerate() {
                block(gi * group + j, pb, &mut vals, &mut ids);
            }
        });
    } else {
        let (mut vals, mut ids) = (Vec::new(), Vec::with_capacity(n));
        for (pi, pb) in perm.chunks_mut(blk).enumerate() {
            block(pi, pb, &mut vals, &mut ids);
        }
    }
    perm
}

fn topk_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<TopkParam>();
    let x = &i[0];
    let (dims, k, _) = topk_plan(c.name(), &x.shape, p)?;
    let (_, n, post) = dims;
    dispatch_dtype!(x.dtype, T => {
        let xv = x.data::<T>();
        let perm = topk_perm(xv, dims, k, p.ascend);
        // Element r of a [pre][k][post] output, and its source position.
        let src = |r: usize| {
            let (pi, rest) = (r / (k * post), r % (k * post));
            (pi * n + perm[r]) * post + rest % post
        };
        let write_values = |y: &Blob| {
            let yv = y.data_mut::<T>();
            for (r, v) in yv.iter_mut().enumerate() {
                *v = xv[src(r)];
            }
        };
        let write_indices = |y: &Blob| {
            dispatch_dtype!(y.dtype, O => {
                for (v, &j) in y.data_mut::<O>().iter_mut().zip(&perm) {
                    *v = O::from_f64(j as f64);
                }
            })
        };
        match p.ret {
            Ret::Value => write_values(&o[0]),
            Ret::Indices => write_indices(&o[0]),
            Ret::Both => {
                write_values(&o[0]);
                write_indices(&o[1]);
            }
            Ret::Mask => {
                let yv = o[0].data_mut::<T>();
                yv.fill(T::from_f64(0.0));
                let one = T::from_f64(1.0);
                for r in 0..perm.len() {
                    yv[src(r)] = one;
                }
            }
        }
    });
    Ok(())
}

fn topk_infer_shape(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let Some(s) = &ins[0] {
        let p = c.p::<TopkParam>();
        let (_, _, vs) = topk_plan(c.name(), s, p)?;
        match p.ret {
            Ret::Mask => outs[0] = Some(s.clone()),
            Ret::Both => {
                outs[0] = Some(vs.clone());
                outs[1] = Some(vs);
            }
            _ => outs[0] = Some(vs),
        }
    }
    Ok(())
}

fn topk_infer_type(
    c: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let p = c.p::<TopkParam>();
    if let Some(t) = ins[0] {
        if t == DType::Bool {
            return Err(Error::DType(format!(
                "{}: dtype bool is not supported",
                c.name()
            )));
        }
    }
    match p.ret {
        Ret::Indices => outs[0] = Some(p.dtype),
        Ret::Both => {
            outs[0] = ins[0];
            outs[1] = Some(p.dtype);
        }
        _ => outs[0] = ins[0],
    }
    Ok(())
}

/// Gradient of the sorted values: scatter ograd back through the indices.
fn grad_values(
    c: &OpCall,
    b: B,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<TopkParam>();
    let axis = axis_attr(p.axis);
    let idx = match p.ret {
        Ret::Both => y[1],
        Ret::Value => b.op1(
            "topk",
            &[
                ("axis", axis.clone()),
                ("k", p.k.to_string()),
                ("ret_typ", "indices".to_string()),
                (
                    "is_ascend",
                    if p.ascend { "True" } else { "False" }.to_string(),
                ),
                ("dtype", "int64".to_string()),
            ],
            &[x[0]],
        )?,
        Ret::Indices | Ret::Mask => return Ok(vec![None]),
    };
    Ok(vec![Some(b.op1(
        "_scatter_add_along_axis",
        &[("axis", axis)],
        &[g[0], idx, x[0]],
    )?)])
}

pub static TOPK: OpDef = OpDef {
    name: "topk",
    doc: "The k largest (or smallest with is_ascend) elements along axis: their values, indices, a 0/1 mask, or both values and indices.",
    num_outputs: |c| if c.p::<TopkParam>().ret == Ret::Both { 2 } else { 1 },
    parse: |a| {
        let p = a.p("topk");
        let ret = match p.choice("ret_typ", "indices", &["value", "indices", "mask", "both"])?.as_str() {
            "value" => Ret::Value,
            "indices" => Ret::Indices,
            "mask" => Ret::Mask,
            _ => Ret::Both,
        };
        Ok(Box::new(TopkParam {
            axis: opt_axis("topk", a, -1)?,
            k: p.i64("k", 1)?,
            ret,
            ascend: p.bool("is_ascend", false)?,
            dtype: index_dtype("topk", a)?,
        }))
    },
    infer_shape: topk_infer_shape,
    infer_type: topk_infer_type,
    cpu: Some(topk_kernel),
    grad: Some(grad_values),
    ..OpDef::BASE
};

pub static SORT: OpDef = OpDef {
    name: "sort",
    doc: "Sort along axis (flattened when axis=None), ascending unless is_ascend=False.",
    parse: |a| {
        let p = a.p("sort");
        Ok(Box::new(TopkParam {
            axis: opt_axis("sort", a, -1)?,
            k: 0,
            ret: Ret::Value,
            ascend: p.bool("is_ascend", true)?,
            dtype: DType::F32,
        }))
    },
    infer_shape: topk_infer_shape,
    infer_type: topk_infer_type,
    cpu: Some(topk_kernel),
    grad: Some(grad_values),
    ..OpDef::BASE
};

pub static ARGSORT: OpDef = OpDef {
    name: "argsort",
    doc: "Indices that sort data along axis (flattened when axis=None), as dtype (float32 by default).",
    parse: |a| {
        let p = a.p("argsort");
        Ok(Box::new(TopkParam {
            axis: opt_axis("argsort", a, -1)?,
            k: 0,
            ret: Ret::Indices,
            ascend: p.bool("is_ascend", true)?,
            dtype: index_dtype("argsort", a)?,
        }))
    },
    infer_shape: topk_infer_shape,
    infer_type: topk_infer_type,
    cpu: Some(topk_kernel),
    grad: NO_GRAD,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// _gather_along_axis / _scatter_add_along_axis
// ---------------------------------------------------------------------------

/// Checks index against data for an along-axis gather; returns
/// ((pre, n, post), k) where the index is [pre][k][post].
fn along_plan(
    op: &str,
    d: &[usize],
    i: &[usize],
    axis: Option<i64>,
) -> Result<((usize, usize, usize), usize)> {
    let bad = || {
        Error::Shape(format!(
            "{op}: index shape {} does not fit data shape {} along axis={}",
            fmt_shape(i),
            fmt_shape(d),
            axis_attr(axis)
        ))
    };
    match axis {
        None => {
            if i.len() != 1 {
                return Err(bad());
            }
            Ok(((1, numel(d), 1), i[0]))
        }
        Some(a) => {
            if d.is_empty() || i.len() != d.len() {
                return Err(bad());
            }
            let ax = norm_axis(op, a, d.len())?;
            if (0..d.len()).any(|t| t != ax && d[t] != i[t]) {
                return Err(bad());
            }
            Ok((split3(d, ax), i[ax]))
        }
    }
}

fn along_positions(
    op: &str,
    ib: &Blob,
    (pre, n, post): (usize, usize, usize),
    k: usize,
) -> Result<Vec<usize>> {
    let vals = index_values(ib);
    let mut out = Vec::with_capacity(vals.len());
    for (r, &v) in vals.iter().enumerate() {
        if !(v >= 0.0 && v < n as f64) {
            return Err(Error::Index(format!(
                "{op}: index {v} is out of bounds for an axis of size {n}"
            )));
        }
        let (pi, rest) = (r / (k * post), r % (k * post));
        out.push((pi * n + v as usize) * post + rest % post);
    }
    debug_assert!(out.len() == pre * k * post);
    Ok(out)
}

fn parse_axis_only(op: &str, a: &super::attrs::Attrs) -> Result<Option<i64>> {
    match a.raw("axis") {
        None => Err(Error::Param(format!(
            "{op}: required argument 'axis' is missing (an integer or None)"
        ))),
        Some(v) if v.trim() == "None" => Ok(None),
        Some(_) => Ok(Some(a.p(op).i64_req("axis")?)),
    }
}

pub static GATHER_ALONG_AXIS: OpDef = OpDef {
    name: "_gather_along_axis",
    doc: "out[..., j, ...] = data[..., index[..., j, ...], ...] along axis (data flattened when axis=None).",
    inputs: &["data", "index"],
    parse: |a| Ok(Box::new(parse_axis_only("_gather_along_axis", a)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(i)) = (&ins[0], &ins[1]) {
            along_plan(c.name(), d, i, *c.p::<Option<i64>>())?;
            outs[0] = Some(i.clone());
        }
        Ok(())
    },
    infer_type: data_index_type,
    cpu: Some(|c, i, o, _| {
        let (d, ib, y) = (&i[0], &i[1], &o[0]);
        let (dims, k) = along_plan(c.name(), &d.shape, &ib.shape, *c.p::<Option<i64>>())?;
        let pos = along_positions(c.name(), ib, dims, k)?;
        dispatch_dtype!(d.dtype, T => {
            let (dv, yv) = (d.data::<T>(), y.data_mut::<T>());
            for (v, &s) in yv.iter_mut().zip(&pos) {
                *v = dv[s];
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let axis = axis_attr(*c.p::<Option<i64>>());
        Ok(vec![Some(b.op1("_scatter_add_along_axis", &[("axis", axis)], &[g[0], x[1], x[0]])?), None])
    }),
    ..OpDef::BASE
};

pub static SCATTER_ADD_ALONG_AXIS: OpDef = OpDef {
    name: "_scatter_add_along_axis",
    doc: "Zeros shaped like data with ograd added at data[..., index[..., j, ...], ...] along axis (flattened when axis=None).",
    inputs: &["ograd", "index", "data"],
    parse: |a| Ok(Box::new(parse_axis_only("_scatter_add_along_axis", a)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(i)) = (ins[2].clone(), ins[1].clone()) {
            let (d, i) = (&d, &i);
            along_plan(c.name(), d, i, *c.p::<Option<i64>>())?;
            match &ins[0] {
                None => ins[0] = Some(i.clone()),
                Some(g) if g != i => {
                    return Err(Error::Shape(format!(
                        "_scatter_add_along_axis: ograd shape {} must equal index shape {}",
                        fmt_shape(g),
                        fmt_shape(i)
                    )))
                }
                _ => {}
            }
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 1);
        if ins[0].is_none() {
            ins[0] = outs[0].or(ins[2]);
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let (g, ib, y) = (&i[0], &i[1], &o[0]);
        let (dims, k) = along_plan(c.name(), &y.shape, &ib.shape, *c.p::<Option<i64>>())?;
        let pos = along_positions(c.name(), ib, dims, k)?;
        dispatch_dtype!(g.dtype, T => {
            let gv = g.data::<T>();
            let mut acc = vec![0f64; y.size()];
            for (&v, &s) in gv.iter().zip(&pos) {
                acc[s] += v.to_f64();
            }
            for (t, a) in y.data_mut::<T>().iter_mut().zip(acc) {
                *t = T::from_f64(a);
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let axis = axis_attr(*c.p::<Option<i64>>());
        Ok(vec![Some(b.op1("_gather_along_axis", &[("axis", axis)], &[g[0], x[1]])?), None, None])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// gather_nd / scatter_nd (MXNet's advanced indexing)
// ---------------------------------------------------------------------------

/// `indices` (M, Y...) address the first M axes of `data`: returns
/// (M, K = prod(Y), inner = prod(data[M..]), output shape Y + data[M..]).
fn nd_plan(op: &str, data: &[usize], idx: &[usize]) -> Result<(usize, usize, usize, Shape)> {
    if idx.is_empty() || idx[0] == 0 || idx[0] > data.len() {
        return Err(Error::Shape(format!(
            "{op}: indices of shape {} must have a first axis of size 1..={} (the dimensions of data {})",
            fmt_shape(idx),
            data.len(),
            fmt_shape(data)
        )));
    }
    let m = idx[0];
    let k = numel(&idx[1..]);
    let inner = numel(&data[m..]);
    let mut out: Shape = idx[1..].to_vec();
    out.extend_from_slice(&data[m..]);
    Ok((m, k, inner, out))
}

/// Row (in units of `inner`) of each of the K index tuples; negative indices
/// count from the end, others out of range raise.
fn nd_rows(op: &str, data: &[usize], idx: &Blob) -> Result<Vec<usize>> {
    let (m, k, _, _) = nd_plan(op, data, &idx.shape)?;
    let vals = index_values(idx);
    let mut rows = vec![0usize; k];
    for (a, &n) in data[..m].iter().enumerate() {
        for (y, r) in rows.iter_mut().enumerate() {
            let v = vals[a * k + y];
            let j = v as i64;
            let n_i = n as i64;
            if v.is_nan() || j < -n_i || j >= n_i {
                return Err(Error::Index(format!(
                    "{op}: index {v} is out of bounds for axis {a} of size {n} (data shape {})",
                    fmt_shape(data)
                )));
            }
            *r = *r * n + j.rem_euclid(n_i) as usize;
        }
    }
    Ok(rows)
}

struct NdParam {
    shape: Option<Shape>,
}

fn parse_nd(op: &str, a: &super::attrs::Attrs, need_shape: bool) -> Result<NdParam> {
    let shape = a.p(op).shape("shape")?;
    if need_shape && shape.is_none() {
        return Err(Error::Param(format!(
            "{op}: required argument 'shape' is missing"
        )));
    }
    Ok(NdParam { shape })
}

fn nd_shape_attr(c: &OpCall) -> Vec<(&'static str, String)> {
    match &c.p::<NdParam>().shape {
        Some(s) => vec![("shape", super::attrs::shape_attr(s))],
        None => vec![],
    }
}

/// Check that `data` has the shape the indices select from `shape`.
fn nd_check_data(op: &str, shape: &[usize], idx: &[usize], data: &[usize]) -> Result<()> {
    let (_, _, _, want) = nd_plan(op, shape, idx)?;
    if want != data {
        return Err(Error::Shape(format!(
            "{op}: data has shape {}, indices {} on shape {} select {}",
            fmt_shape(data),
            fmt_shape(idx),
            fmt_shape(shape),
            fmt_shape(&want)
        )));
    }
    Ok(())
}

pub static GATHER_ND: OpDef = OpDef {
    name: "gather_nd",
    doc: "out[y, ...] = data[indices[0, y], ..., indices[M-1, y], ...] for indices of shape (M, Y...); \
          output shape Y + data.shape[M:]. Negative indices count from the end.",
    inputs: &["data", "indices"],
    parse: |a| Ok(Box::new(parse_nd("gather_nd", a, false)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(i)) = (&ins[0], &ins[1]) {
            outs[0] = Some(nd_plan(c.name(), d, i)?.3);
        }
        Ok(())
    },
    infer_type: data_index_type,
    cpu: Some(|c, i, o, _| {
        let (d, ib, y) = (&i[0], &i[1], &o[0]);
        let (_, _, inner, _) = nd_plan(c.name(), &d.shape, &ib.shape)?;
        let rows = nd_rows(c.name(), &d.shape, ib)?;
        dispatch_dtype!(d.dtype, T => {
            let (dv, yv) = (d.data::<T>(), y.data_mut::<T>());
            for (r, dst) in rows.iter().zip(yv.chunks_mut(inner.max(1))) {
                dst.copy_from_slice(&dv[r * inner..(r + 1) * inner]);
            }
        });
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        let gd = b.op1("_backward_gather_nd_like", &[], &[g[0], x[1], x[0]])?;
        Ok(vec![Some(gd), None])
    }),
    ..OpDef::BASE
};

/// Scatter `data` rows into zeros of `shape` (add: accumulate duplicates).
fn scatter_rows(c: &OpCall, data: &Blob, idx: &Blob, y: &Blob, add: bool) -> Result<()> {
    let (_, _, inner, _) = nd_plan(c.name(), &y.shape, &idx.shape)?;
    let rows = nd_rows(c.name(), &y.shape, idx)?;
    dispatch_dtype!(y.dtype, T => {
        let (dv, yv) = (data.data::<T>(), y.data_mut::<T>());
        for (k, &r) in rows.iter().enumerate() {
            let src = &dv[k * inner..(k + 1) * inner];
            let dst = &mut yv[r * inner..(r + 1) * inner];
            if add {
                for (t, s) in dst.iter_mut().zip(src) {
                    *t = T::from_f64(t.to_f64() + s.to_f64());
                }
            } else {
                dst.copy_from_slice(src);
            }
        }
    });
    Ok(())
}

pub static SCATTER_ND: OpDef = OpDef {
    name: "scatter_nd",
    doc: "Zeros of `shape` with out[indices[0, y], ..., indices[M-1, y], ...] = data[y, ...] \
          (the inverse of gather_nd; with duplicate indices the last write wins).",
    inputs: &["data", "indices"],
    parse: |a| Ok(Box::new(parse_nd("scatter_nd", a, true)?)),
    infer_shape: |c, ins, outs| {
        let shape = c.p::<NdParam>().shape.clone().unwrap_or_default();
        if let (Some(d), Some(i)) = (&ins[0], &ins[1]) {
            nd_check_data(c.name(), &shape, i, d)?;
        }
        outs[0] = Some(shape);
        Ok(())
    },
    infer_type: data_index_type,
    cpu: Some(|c, i, o, _| {
        o[0].bytes_mut().fill(0);
        scatter_rows(c, &i[0], &i[1], &o[0], false)
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(b.op1("gather_nd", &[], &[g[0], x[1]])?), None])),
    ..OpDef::BASE
};

/// Internal: the gradient of gather_nd — zeros shaped like `like` with
/// `data` added at the indexed rows (duplicates accumulate).
pub static BACKWARD_GATHER_ND_LIKE: OpDef = OpDef {
    name: "_backward_gather_nd_like",
    doc: "Zeros shaped like `like` with data added at the rows gather_nd reads (duplicates accumulate).",
    inputs: &["data", "indices", "like"],
    parse: |_| Ok(Box::new(NdParam { shape: None })),
    infer_shape: |c, ins, outs| {
        if let (Some(d), Some(i), Some(l)) = (&ins[0], &ins[1], &ins[2]) {
            nd_check_data(c.name(), l, i, d)?;
            outs[0] = Some(l.clone());
        }
        Ok(())
    },
    infer_type: data_index_type,
    cpu: Some(|c, i, o, _| {
        o[0].bytes_mut().fill(0);
        scatter_rows(c, &i[0], &i[1], &o[0], true)
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(b.op1("gather_nd", &[], &[g[0], x[1]])?), None, None])),
    ..OpDef::BASE
};

/// `lhs` with the rows addressed by `indices` set to `rhs` (MXNet's
/// `_scatter_set_nd`, used by `a[idx_array] = v`; works in place with out=lhs).
pub static SCATTER_SET_ND: OpDef = OpDef {
    name: "_scatter_set_nd",
    doc: "lhs with out[indices[0, y], ..., indices[M-1, y], ...] = rhs[y, ...]; `shape` (optional) must be lhs's shape.",
    inputs: &["lhs", "rhs", "indices"],
    parse: |a| Ok(Box::new(parse_nd("_scatter_set_nd", a, false)?)),
    infer_shape: |c, ins, outs| {
        if let (Some(l), Some(r), Some(i)) = (&ins[0], &ins[1], &ins[2]) {
            if let Some(s) = &c.p::<NdParam>().shape {
                if s != l {
                    return Err(Error::Shape(format!(
                        "_scatter_set_nd: shape {} differs from lhs shape {}",
                        fmt_shape(s),
                        fmt_shape(l)
                    )));
                }
            }
            nd_check_data(c.name(), l, i, r)?;
            outs[0] = Some(l.clone());
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        fill_index_type(ins, 2);
        if let (Some(a), Some(b)) = (ins[0], ins[1]) {
            if a != b {
                return Err(Error::DType(format!(
                    "_scatter_set_nd: rhs dtype {} differs from lhs dtype {}",
                    b.name(),
                    a.name()
                )));
            }
        }
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        if i[0].raw_ptr() != o[0].raw_ptr() {
            o[0].bytes_mut().copy_from_slice(i[0].bytes());
        }
        scatter_rows(c, &i[1], &i[2], &o[0], false)
    }),
    grad: Some(|c, b, x, _, g| {
        let z = b.op1("zeros_like", &[], &[x[1]])?;
        let gl = b.op1("_scatter_set_nd", &nd_shape_attr(c), &[g[0], z, x[2]])?;
        let gr = b.op1("gather_nd", &[], &[g[0], x[2]])?;
        Ok(vec![Some(gl), Some(gr), None])
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &TAKE,
    &TAKE_GRAD,
    &PICK,
    &PICK_GRAD,
    &ONE_HOT,
    &TOPK,
    &SORT,
    &ARGSORT,
    &GATHER_ALONG_AXIS,
    &SCATTER_ADD_ALONG_AXIS,
    &GATHER_ND,
    &SCATTER_ND,
    &BACKWARD_GATHER_ND_LIKE,
    &SCATTER_SET_ND,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::test_util::*;
    use crate::NDArray;

    fn iarr(v: Vec<i64>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape, Default::default()).unwrap()
    }

    #[test]
    fn take_modes_axes_and_shapes() {
        let a = arr((0..12).map(|v| v as f64).collect(), &[3, 4]);
        let i = arr(vec![2.0, 0.0, 2.7], &[3]);
        let y = run1("take", &[], &[a.clone(), i.clone()]);
        assert_eq!(y.shape, vec![3, 4]);
        assert_eq!(
            vals(&y),
            vec![8., 9., 10., 11., 0., 1., 2., 3., 8., 9., 10., 11.]
        );
        // 2-D indices along axis 1 (and -1): shape a[:1] + idx + a[2:]
        let i2 = iarr(vec![3, 0, 1, 1], &[2, 2]);
        for ax in ["1", "-1"] {
            let y = run1("take", &[("axis", ax)], &[a.clone(), i2.clone()]);
            assert_eq!(y.shape, vec![3, 2, 2]);
            assert_eq!(
                vals(&y),
                vec![3., 0., 1., 1., 7., 4., 5., 5., 11., 8., 9., 9.]
            );
        }
        let oob = arr(vec![-1.0, 5.0, 4.0, -5.0], &[4]);
        assert_eq!(
            vals(&run1("take", &[("axis", "1")], &[a.clone(), oob.clone()]))[..4],
            [0., 3., 3., 0.]
        );
        assert_eq!(
            vals(&run1(
                "take",
                &[("axis", "1"), ("mode", "wrap")],
                &[a.clone(), oob.clone()]
            ))[..4],
            [3., 1., 0., 3.]
        );
        let e = err(
            "take",
            &[("axis", "1"), ("mode", "raise")],
            &[a.clone(), oob],
        );
        assert!(
            e.contains("take") && e.contains("out of bounds") && e.contains("size 4"),
            "{e}"
        );
        assert_eq!(
            vals(&run1(
                "take",
                &[("mode", "raise")],
                &[a.clone(), iarr(vec![1], &[1])]
            )),
            vec![4., 5., 6., 7.]
        );
        let e = err("take", &[("axis", "2")], &[a.clone(), i.clone()]);
        assert!(
            e.contains("take") && e.contains("axis 2") && e.contains("(3, 4)"),
            "{e}"
        );
        let e = err("take", &[("mode", "bogus")], &[a.clone(), i.clone()]);
        assert!(e.contains("take") && e.contains("mode"), "{e}");
        // integer data keeps its dtype
        let ai = iarr(vec![5, 6, 7], &[3]);
        assert_eq!(
            run1("take", &[], &[ai, i]).to_vec::<i64>().unwrap(),
            vec![7, 5, 7]
        );
    }

    #[test]
    fn take_large_parallel_copy() {
        let (n, d) = (1000, 300);
        let a = arr32(&(0..n * d).map(|v| v as f32).collect::<Vec<_>>(), &[n, d]);
        let idx: Vec<i64> = (0..2000).map(|k| (k * 7919 % n) as i64).collect();
        let y = run1("take", &[], &[a, iarr(idx.clone(), &[2000])]);
        let yv = y.to_vec::<f32>().unwrap();
        for (k, &j) in idx.iter().enumerate() {
            assert_eq!(yv[k * d + 5], (j as usize * d + 5) as f32);
        }
    }

    #[test]
    fn take_gradients() {
        let a = arr(rnd(12, 3), &[3, 4]);
        let i = arr(vec![1.0, 1.0, 3.0, -2.0, 9.0], &[5]);
        for mode in ["clip", "wrap"] {
            for ax in ["0", "1", "-1"] {
                check_grad(
                    "take",
                    &[("axis", ax), ("mode", mode)],
                    &[a.clone(), i.clone()],
                    &[0],
                );
                let y = run1(
                    "take",
                    &[("axis", ax), ("mode", mode)],
                    &[a.clone(), i.clone()],
                );
                let g = arr(rnd(y.size(), 4), &y.shape);
                check_grad(
                    "_take_grad",
                    &[("axis", ax), ("mode", mode)],
                    &[g, i.clone(), a.clone()],
                    &[0],
                );
            }
        }
        // repeated indices accumulate
        let (_, g) = grads(
            "take",
            &[],
            &[arr(vec![0.0; 3], &[3]), arr(vec![1.0, 1.0, 2.0], &[3])],
            &[arr(vec![1.0, 2.0, 4.0], &[3])],
        );
        assert_eq!(g[0].as_ref().unwrap(), &vec![0.0, 3.0, 4.0]);
        assert!(g[1].is_none());
    }

    #[test]
    fn pick_axes_keepdims_modes() {
        let x = arr((0..12).map(|v| v as f64).collect(), &[3, 4]);
        let y = run1("pick", &[], &[x.clone(), arr(vec![0.0, 3.0, 9.0], &[3])]);
        assert_eq!((y.shape.clone(), vals(&y)), (vec![3], vec![0., 7., 11.]));
        let y = run1(
            "pick",
            &[("mode", "wrap")],
            &[x.clone(), arr(vec![-1.0, 5.0, 2.0], &[3])],
        );
        assert_eq!(vals(&y), vec![3., 5., 10.]);
        let y = run1(
            "pick",
            &[("axis", "0"), ("keepdims", "True")],
            &[x.clone(), arr(vec![2.0, 1.0, 0.0, -4.0], &[1, 4])],
        );
        assert_eq!(
            (y.shape.clone(), vals(&y)),
            (vec![1, 4], vec![8., 5., 2., 3.])
        );
        // index given with the kept axis while keepdims=False
        let y = run1(
            "pick",
            &[("axis", "1")],
            &[x.clone(), arr(vec![1.0, 1.0, 1.0], &[3, 1])],
        );
        assert_eq!((y.shape.clone(), vals(&y)), (vec![3], vec![1., 5., 9.]));
        let e = err(
            "pick",
            &[("axis", "None")],
            &[x.clone(), arr(vec![0.0; 3], &[3])],
        );
        assert!(e.contains("pick") && e.contains("axis=None"), "{e}");
        let e = err(
            "pick",
            &[("axis", "0")],
            &[x.clone(), arr(vec![0.0; 3], &[3])],
        );
        assert!(
            e.contains("pick") && e.contains("index shape (3,)") && e.contains("(4,)"),
            "{e}"
        );
        let e = err(
            "pick",
            &[("mode", "raise")],
            &[x.clone(), arr(vec![0.0; 3], &[3])],
        );
        assert!(e.contains("pick") && e.contains("mode"), "{e}");
        let e = err(
            "pick",
            &[("axis", "2")],
            &[x.clone(), arr(vec![0.0; 3], &[3])],
        );
        assert!(e.contains("pick") && e.contains("axis 2"), "{e}");
        // 3-D, middle axis
        let x3 = arr((0..24).map(|v| v as f64).collect(), &[2, 3, 4]);
        let idx = arr(vec![0., 1., 2., 0., 2., 2., 1., 1.], &[2, 4]);
        let y = run1("pick", &[("axis", "1")], &[x3.clone(), idx.clone()]);
        assert_eq!(vals(&y), vec![0., 5., 10., 3., 20., 21., 18., 19.]);
        for keep in ["False", "True"] {
            let idx = if keep == "True" {
                arr(vals(&idx), &[2, 1, 4])
            } else {
                idx.clone()
            };
            let at = [("axis", "1"), ("keepdims", keep)];
            check_grad("pick", &at, &[x3.clone(), idx.clone()], &[0]);
            let y = run1("pick", &at, &[x3.clone(), idx.clone()]);
            check_grad(
                "_pick_grad",
                &at,
                &[arr(rnd(y.size(), 2), &y.shape), idx, x3.clone()],
                &[0],
            );
        }
    }

    #[test]
    fn one_hot_values() {
        let i = arr32(&[1.0, 0.0, 3.0, -1.0, 2.9, 2.0], &[2, 3]);
        let y = run1("one_hot", &[("depth", "3")], &[i.clone()]);
        assert_eq!((y.shape.clone(), y.dtype()), (vec![2, 3, 3], DType::F32));
        assert_eq!(
            vals(&y),
            vec![0., 1., 0., 1., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 1., 0., 0., 1.]
        );
        let y = run1(
            "one_hot",
            &[
                ("depth", "2"),
                ("on_value", "5"),
                ("off_value", "-1"),
                ("dtype", "int32"),
            ],
            &[iarr(vec![1, 0], &[2])],
        );
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![-1, 5, 5, -1]);
        let e = err("one_hot", &[], &[i.clone()]);
        assert!(e.contains("one_hot") && e.contains("depth"), "{e}");
    }

    /// Reference: stable sort of each line, NaN last.
    fn ref_sort(x: &[f64], shape: &[usize], axis: usize, asc: bool) -> (Vec<f64>, Vec<f64>) {
        let (pre, n, post) = split3(shape, axis);
        let (mut v, mut ix) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        for p in 0..pre {
            for q in 0..post {
                let mut ids: Vec<usize> = (0..n).collect();
                let at = |i: usize| x[(p * n + i) * post + q];
                ids.sort_by(|&a, &b| {
                    if asc {
                        cmp_nan_last(at(a), at(b))
                    } else {
                        cmp_nan_last(at(b), at(a))
                    }
                });
                for (j, &i) in ids.iter().enumerate() {
                    v[(p * n + j) * post + q] = at(i);
                    ix[(p * n + j) * post + q] = i as f64;
                }
            }
        }
        (v, ix)
    }

    #[test]
    fn sort_argsort_against_reference() {
        let shape = [3, 5, 4];
        // include ties
        let x: Vec<f64> = rnd(60, 8).iter().map(|v| (v * 4.0).round()).collect();
        let xa = arr(x.clone(), &shape);
        for axis in 0..3 {
            for asc in [true, false] {
                let (v, ix) = ref_sort(&x, &shape, axis, asc);
                let at = [("axis", axis.to_string()), ("is_ascend", asc.to_string())];
                let at: Vec<(&str, &str)> = at.iter().map(|(k, v)| (*k, v.as_str())).collect();
                assert_eq!(
                    vals(&run1("sort", &at, &[xa.clone()])),
                    v,
                    "sort axis {axis} asc {asc}"
                );
                let y = run1("argsort", &at, &[xa.clone()]);
                assert_eq!(y.dtype(), DType::F32);
                assert_eq!(vals(&y), ix, "argsort axis {axis} asc {asc}");
                let neg = (axis as i64 - 3).to_string();
                let at2 = [("axis", neg.as_str()), at[1]];
                assert_eq!(vals(&run1("argsort", &at2, &[xa.clone()])), ix);
            }
        }
        // defaults: last axis, ascending; axis=None flattens
        let (v, _) = ref_sort(&x, &shape, 2, true);
        assert_eq!(vals(&run1("sort", &[], &[xa.clone()])), v);
        let y = run1("sort", &[("axis", "None")], &[xa.clone()]);
        let (v, _) = ref_sort(&x, &[60], 0, true);
        assert_eq!((y.shape.clone(), vals(&y)), (vec![60], v));
        let y = run1(
            "argsort",
            &[("axis", "None"), ("dtype", "int32")],
            &[xa.clone()],
        );
        assert_eq!((y.shape.clone(), y.dtype()), (vec![60], DType::I32));
        let nanx = arr(vec![2.0, f64::NAN, -1.0], &[3]);
        assert_eq!(
            vals(&run1("argsort", &[], &[nanx.clone()])),
            vec![2.0, 0.0, 1.0]
        );
        assert_eq!(
            vals(&run1("argsort", &[("is_ascend", "False")], &[nanx])),
            vec![1.0, 0.0, 2.0]
        );
        let e = err("sort", &[("axis", "3")], &[xa.clone()]);
        assert!(
            e.contains("sort") && e.contains("axis 3") && e.contains("(3, 5, 4)"),
            "{e}"
        );
        let e = err("argsort", &[("dtype", "bool")], &[xa.clone()]);
        assert!(e.contains("argsort") && e.contains("dtype"), "{e}");
    }

    #[test]
    fn topk_ret_types() {
        let x = arr32(&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], &[2, 4]);
        // default: k=1, indices of the largest, float32
        let y = run1("topk", &[], &[x.clone()]);
        assert_eq!(
            (y.shape.clone(), y.dtype(), vals(&y)),
            (vec![2, 1], DType::F32, vec![2.0, 1.0])
        );
        let y = run1("topk", &[("k", "2"), ("ret_typ", "value")], &[x.clone()]);
        assert_eq!(vals(&y), vec![4.0, 3.0, 9.0, 6.0]);
        let y = run1(
            "topk",
            &[("k", "2"), ("ret_typ", "value"), ("is_ascend", "True")],
            &[x.clone()],
        );
        assert_eq!(vals(&y), vec![1.0, 1.0, 2.0, 5.0]);
        let y = run1("topk", &[("k", "2"), ("ret_typ", "mask")], &[x.clone()]);
        assert_eq!(
            (y.shape.clone(), vals(&y)),
            (vec![2, 4], vec![1., 0., 1., 0., 0., 1., 0., 1.])
        );
        let o = crate::ops::call(
            "topk",
            &[
                ("k", "3"),
                ("ret_typ", "both"),
                ("axis", "0"),
                ("dtype", "int64"),
            ],
            &[arr32(&[1., 7., 3., 2., 5., 0.], &[3, 2])],
        )
        .unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(
            (o[0].shape.clone(), vals(&o[0])),
            (vec![3, 2], vec![5., 7., 3., 2., 1., 0.])
        );
        assert_eq!(
            (o[1].dtype(), vals(&o[1])),
            (DType::I64, vec![2., 0., 1., 1., 0., 2.])
        );
        let y = run1(
            "topk",
            &[("axis", "None"), ("k", "3"), ("ret_typ", "value")],
            &[x.clone()],
        );
        assert_eq!((y.shape.clone(), vals(&y)), (vec![3], vec![9., 6., 5.]));
        let y = run1("topk", &[("k", "0"), ("ret_typ", "value")], &[x.clone()]);
        assert_eq!(vals(&y), vec![4., 3., 1., 1., 9., 6., 5., 2.]);
        let e = err("topk", &[("k", "5")], &[x.clone()]);
        assert!(
            e.contains("topk") && e.contains("k=5") && e.contains("(2, 4)"),
            "{e}"
        );
        let e = err("topk", &[("ret_typ", "values")], &[x.clone()]);
        assert!(e.contains("topk") && e.contains("ret_typ"), "{e}");
        // large k partial-selection path vs full sort agree
        let big = arr(rnd(4000, 12), &[2, 2000]);
        let y = run1("topk", &[("k", "10"), ("ret_typ", "value")], &[big.clone()]);
        let full = vals(&run1("sort", &[("is_ascend", "False")], &[big]));
        assert_eq!(vals(&y), [&full[..10], &full[2000..2010]].concat());
    }

    #[test]
    fn ordering_gradients() {
        let x = arr(rnd(24, 21), &[2, 3, 4]);
        for at in [
            vec![],
            vec![("axis", "1")],
            vec![("axis", "0"), ("is_ascend", "False")],
            vec![("axis", "None")],
        ] {
            check_grad("sort", &at, &[x.clone()], &[0]);
        }
        for at in [
            vec![("k", "2"), ("ret_typ", "value")],
            vec![("k", "2"), ("ret_typ", "both"), ("axis", "1")],
            vec![
                ("k", "3"),
                ("ret_typ", "value"),
                ("axis", "None"),
                ("is_ascend", "True"),
            ],
        ] {
            check_grad("topk", &at, &[x.clone()], &[0]);
        }
        let (_, g) = grads(
            "argsort",
            &[],
            &[x.clone()],
            &[arr(vec![1.0; 24], &[2, 3, 4])],
        );
        assert!(g[0].is_none());
        let (_, g) = grads(
            "topk",
            &[("ret_typ", "mask")],
            &[x.clone()],
            &[arr(vec![1.0; 24], &[2, 3, 4])],
        );
        assert!(g[0].is_none());
        let (_, g) = grads(
            "one_hot",
            &[("depth", "2")],
            &[arr(vec![0.0], &[1])],
            &[arr(vec![1.0; 2], &[1, 2])],
        );
        assert!(g[0].is_none());
        // the internal gather/scatter pair, each differentiated
        let idx = iarr(vec![0, 2, 2, 1, 0, 0, 1, 1], &[2, 1, 4]);
        let d = arr(rnd(24, 4), &[2, 3, 4]);
        check_grad(
            "_gather_along_axis",
            &[("axis", "1")],
            &[d.clone(), idx.clone()],
            &[0],
        );
        check_grad(
            "_scatter_add_along_axis",
            &[("axis", "1")],
            &[arr(rnd(8, 5), &[2, 1, 4]), idx.clone(), d.clone()],
            &[0],
        );
        let e = err(
            "_gather_along_axis",
            &[("axis", "0")],
            &[d.clone(), idx.clone()],
        );
        assert!(
            e.contains("_gather_along_axis") && e.contains("index shape (2, 1, 4)"),
            "{e}"
        );
        let e = err(
            "_gather_along_axis",
            &[("axis", "1")],
            &[d, iarr(vec![0, 3, 0, 0, 0, 0, 0, 0], &[2, 1, 4])],
        );
        assert!(e.contains("out of bounds"), "{e}");
    }
}
