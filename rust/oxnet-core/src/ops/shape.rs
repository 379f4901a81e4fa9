//! Shape manipulation: Reshape, reshape_like, transpose, SwapAxis,
//! expand_dims, squeeze, Flatten, Concat, stack, SliceChannel, tile, repeat,
//! reverse, slice, slice_axis, slice_like, shape_array, size_array, diag.
//!
//! Kernels that only move elements work on raw words of the element size
//! (u8/u16/u32/u64), so one monomorphised loop serves every dtype.
use super::attrs::Attrs;
use super::kernels::{map2, reduce_to, PAR_GRAIN};
use super::registry::{infer_type_same, Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params};
use crate::base::shape::{norm_axis, numel, strides};
use crate::base::{fmt_shape, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::par::par_chunks_mut;

type B<'a> = &'a mut dyn GradBuilder;

// ---------------------------------------------------------------------------
// Raw element access and shared helpers
// ---------------------------------------------------------------------------

fn raw<T: Copy>(b: &Blob) -> &[T] {
    assert_eq!(
        std::mem::size_of::<T>(),
        b.dtype.size(),
        "element size mismatch"
    );
    unsafe { std::slice::from_raw_parts(b.raw_ptr() as *const T, b.size()) }
}

#[allow(clippy::mut_from_ref)]
fn raw_mut<T: Copy>(b: &Blob) -> &mut [T] {
    assert_eq!(
        std::mem::size_of::<T>(),
        b.dtype.size(),
        "element size mismatch"
    );
    unsafe { std::slice::from_raw_parts_mut(b.raw_ptr() as *mut T, b.size()) }
}

/// Run `$body` with `$T` an unsigned word as wide as one element of `$dt`.
macro_rules! by_size {
    ($dt:expr, $T:ident => $body:expr) => {{
        match $dt.size() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    }};
}

fn copy_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    o[0].bytes_mut().copy_from_slice(i[0].bytes());
    Ok(())
}

fn tf(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

fn fmt_ints(v: &[i64]) -> String {
    let s: Vec<String> = v
        .iter()
        .map(|x| {
            if *x == i64::MIN {
                "None".to_string()
            } else {
                x.to_string()
            }
        })
        .collect();
    if s.len() == 1 {
        format!("({},)", s[0])
    } else {
        format!("({})", s.join(", "))
    }
}

fn g_reshape_like(b: B, g: Entry, like: Entry) -> Result<Entry> {
    b.op1("reshape_like", &[], &[g, like])
}

fn grad_reshape_like(
    _: &OpCall,
    b: B,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    Ok(vec![Some(g_reshape_like(b, g[0], x[0])?)])
}

fn no_grad(_: &OpCall, _: B, x: &[Entry], _: &[Entry], _: &[Entry]) -> Result<Vec<Option<Entry>>> {
    Ok(vec![None; x.len()])
}

/// Output dtype follows input 0; other inputs may have any dtype.
fn infer_type_first(
    _: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    if let Some(t) = ins[0] {
        for o in outs.iter_mut() {
            *o = Some(t);
        }
    }
    Ok(())
}

fn first_only_shape(ins: &[Option<Shape>]) -> Option<&Shape> {
    ins.first().and_then(|s| s.as_ref())
}

// ---------------------------------------------------------------------------
// Reshape family
// ---------------------------------------------------------------------------

pub struct ReshapeParam {
    shape: Vec<i64>,
    reverse: bool,
}

/// MXNet's Reshape inference with the special values 0, -1, -2, -3, -4.
pub fn infer_reshape(dshape: &[usize], param: &[i64], reverse: bool) -> Result<Shape> {
    let mut ds: Vec<usize> = dshape.to_vec();
    let mut ps: Vec<i64> = param.to_vec();
    if reverse {
        ds.reverse();
        ps.reverse();
    }
    let bad = |msg: String| {
        Error::Shape(format!(
            "Reshape: {msg} (input shape {}, shape={})",
            fmt_shape(dshape),
            fmt_ints(param)
        ))
    };
    let mut out: Vec<usize> = Vec::new();
    let mut src = 0usize;
    let mut inf: Option<usize> = None;
    let mut i = 0usize;
    while i < ps.len() {
        let p = ps[i];
        match p {
            0 => {
                let d = *ds.get(src).ok_or_else(|| {
                    bad(format!("0 at position {i} has no input dimension to copy"))
                })?;
                out.push(d);
                src += 1;
            }
            -1 => {
                if inf.is_some() {
                    return Err(bad("only one dimension can be -1".into()));
                }
                inf = Some(out.len());
                out.push(1);
                src += 1;
            }
            -2 => {
                while src < ds.len() {
                    out.push(ds[src]);
                    src += 1;
                }
            }
            -3 => {
                if src + 1 >= ds.len() {
                    return Err(bad(format!(
                        "-3 at position {i} needs two input dimensions to merge"
                    )));
                }
                out.push(ds[src] * ds[src + 1]);
                src += 2;
            }
            -4 => {
                if i + 2 >= ps.len() {
                    return Err(bad("-4 must be followed by two values".into()));
                }
                let d0 = *ds.get(src).ok_or_else(|| {
                    bad(format!(
                        "-4 at position {i} has no input dimension to split"
                    ))
                })?;
                src += 1;
                let (mut d1, mut d2) = (ps[i + 1], ps[i + 2]);
                i += 2;
                if d1 == -1 && d2 == -1 {
                    return Err(bad("-4 split factors cannot both be -1".into()));
                }
                if d1 < -1 || d2 < -1 || d1 == 0 || d2 == 0 {
                    return Err(bad(format!(
                        "-4 split factors must be positive or -1, got {d1} and {d2}"
                    )));
                }
                if d1 == -1 {
                    d1 = (d0 as i64) / d2;
                }
                if d2 == -1 {
                    d2 = (d0 as i64) / d1;
                }
                if (d1 * d2) as usize != d0 {
                    return Err(bad(format!("cannot split dimension {d0} into {d1} x {d2}")));
                }
                out.push(d1 as usize);
                out.push(d2 as usize);
            }
            p if p > 0 => {
                out.push(p as usize);
                src += 1;
            }
            p => return Err(bad(format!("invalid value {p} in shape"))),
        }
        i += 1;
    }
    let total = numel(dshape);
    if let Some(k) = inf {
        let known: usize = out
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, d)| *d)
            .product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(bad(format!(
                "cannot infer -1: {total} elements do not divide into {known}"
            )));
        }
        out[k] = total / known;
    }
    if reverse {
        out.reverse();
    }
    if numel(&out) != total {
        return Err(Error::Shape(format!(
            "Reshape: cannot reshape array of shape {} into shape {} (shape={})",
            fmt_shape(dshape),
            fmt_shape(&out),
            fmt_ints(param)
        )));
    }
    Ok(out)
}

pub static RESHAPE: OpDef = OpDef {
    name: "Reshape",
    aliases: &["reshape"],
    doc: "Reshape with MXNet's special values: 0 copies a dimension, -1 infers one, -2 copies the rest, \
          -3 merges two, -4 splits one into the next two values; reverse=True matches from the right.",
    parse: |a| {
        let p = a.p("Reshape");
        if let Some(t) = p.ints("target_shape")? {
            if !t.is_empty() && t.iter().any(|&d| d != 0) {
                return Err(Error::Param(format!(
                    "Reshape: the legacy argument target_shape={} is not supported; use shape=",
                    fmt_ints(&t)
                )));
            }
        }
        if p.bool("keep_highest", false)? {
            return Err(Error::Param("Reshape: the legacy argument keep_highest=True is not supported; use shape=".into()));
        }
        let shape = p.ints("shape")?.ok_or_else(|| Error::Param("Reshape: required argument 'shape' is missing".into()))?;
        Ok(Box::new(ReshapeParam { shape, reverse: p.bool("reverse", false)? }) as Params)
    },
    infer_shape: |c, ins, outs| {
        let p = c.p::<ReshapeParam>();
        if let Some(s) = &ins[0] {
            outs[0] = Some(infer_reshape(s, &p.shape, p.reverse)?);
        }
        Ok(())
    },
    cpu: Some(copy_kernel),
    grad: Some(grad_reshape_like),
    ..OpDef::BASE
};

pub struct ReshapeLikeParam {
    lb: Option<i64>,
    le: Option<i64>,
    rb: Option<i64>,
    re: Option<i64>,
}

fn range_of(
    op: &str,
    what: &str,
    b: Option<i64>,
    e: Option<i64>,
    nd: usize,
) -> Result<(usize, usize)> {
    let norm = |v: i64, name: &str| -> Result<usize> {
        let x = if v < 0 { v + nd as i64 } else { v };
        if x < 0 || x > nd as i64 {
            return Err(Error::Param(format!(
                "{op}: {what}_{name}={v} is out of range for {nd} dimensions"
            )));
        }
        Ok(x as usize)
    };
    let bb = norm(b.unwrap_or(0), "begin")?;
    let ee = match e {
        Some(v) => norm(v, "end")?,
        None => nd,
    };
    if bb > ee {
        return Err(Error::Param(format!(
            "{op}: {what}_begin ({bb}) must not exceed {what}_end ({ee})"
        )));
    }
    Ok((bb, ee))
}

pub static RESHAPE_LIKE: OpDef = OpDef {
    name: "reshape_like",
    doc: "Reshape lhs to the shape of rhs (or replace lhs axes [lhs_begin, lhs_end) with rhs axes [rhs_begin, rhs_end)).",
    inputs: &["lhs", "rhs"],
    parse: |a| {
        let p = a.p("reshape_like");
        Ok(Box::new(ReshapeLikeParam {
            lb: p.opt_i64("lhs_begin")?,
            le: p.opt_i64("lhs_end")?,
            rb: p.opt_i64("rhs_begin")?,
            re: p.opt_i64("rhs_end")?,
        }))
    },
    infer_shape: |c, ins, outs| {
        let p = c.p::<ReshapeLikeParam>();
        if let (Some(l), Some(r)) = (&ins[0], &ins[1]) {
            let (lb, le) = range_of("reshape_like", "lhs", p.lb, p.le, l.len())?;
            let (rb, re) = range_of("reshape_like", "rhs", p.rb, p.re, r.len())?;
            let mut out: Shape = l[..lb].to_vec();
            out.extend_from_slice(&r[rb..re]);
            out.extend_from_slice(&l[le..]);
            if numel(&out) != numel(l) {
                return Err(Error::Shape(format!(
                    "reshape_like: lhs shape {} has {} elements, the target shape {} (from rhs shape {}) has {}",
                    fmt_shape(l),
                    numel(l),
                    fmt_shape(&out),
                    fmt_shape(r),
                    numel(&out)
                )));
            }
            outs[0] = Some(out);
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(copy_kernel),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(g_reshape_like(b, g[0], x[0])?), None])),
    ..OpDef::BASE
};

pub static EXPAND_DIMS: OpDef = OpDef {
    name: "expand_dims",
    doc: "Insert a size-1 axis at position `axis` (in [-ndim-1, ndim]).",
    parse: |a| Ok(Box::new(a.p("expand_dims").i64_req("axis")?)),
    infer_shape: |c, ins, outs| {
        let ax = *c.p::<i64>();
        if let Some(s) = &ins[0] {
            let n = s.len() as i64;
            let a = if ax < 0 { ax + n + 1 } else { ax };
            if a < 0 || a > n {
                return Err(Error::Param(format!(
                    "expand_dims: axis {ax} is out of range for an input of shape {} (expected [-{}, {}])",
                    fmt_shape(s),
                    n + 1,
                    n
                )));
            }
            let mut out = s.clone();
            out.insert(a as usize, 1);
            outs[0] = Some(out);
        }
        Ok(())
    },
    cpu: Some(copy_kernel),
    grad: Some(grad_reshape_like),
    ..OpDef::BASE
};

pub static SQUEEZE: OpDef = OpDef {
    name: "squeeze",
    doc: "Remove size-1 axes (all of them, or those in `axis`). A result with no axes has shape (1,).",
    parse: |a| Ok(Box::new(a.p("squeeze").ints("axis")?)),
    infer_shape: |c, ins, outs| {
        let axes = c.p::<Option<Vec<i64>>>();
        if let Some(s) = &ins[0] {
            let mut keep = vec![true; s.len()];
            match axes {
                None => {
                    for (k, d) in s.iter().enumerate() {
                        keep[k] = *d != 1;
                    }
                }
                Some(ax) => {
                    for &a in ax {
                        let k = norm_axis("squeeze", a, s.len())?;
                        if s[k] != 1 {
                            return Err(Error::Shape(format!(
                                "squeeze: axis {a} of shape {} has size {}, only size-1 axes can be squeezed",
                                fmt_shape(s),
                                s[k]
                            )));
                        }
                        keep[k] = false;
                    }
                }
            }
            let mut out: Shape = s.iter().zip(&keep).filter(|(_, k)| **k).map(|(d, _)| *d).collect();
            if out.is_empty() {
                out.push(1);
            }
            outs[0] = Some(out);
        }
        Ok(())
    },
    cpu: Some(copy_kernel),
    grad: Some(grad_reshape_like),
    ..OpDef::BASE
};

pub static FLATTEN: OpDef = OpDef {
    name: "Flatten",
    aliases: &["flatten"],
    doc: "Flatten to 2-D: (d0, d1 * ... * dn).",
    infer_shape: |_, ins, outs| {
        if let Some(s) = &ins[0] {
            if s.is_empty() {
                return Err(Error::Shape(
                    "Flatten: the input must have at least one dimension, got shape ()".into(),
                ));
            }
            outs[0] = Some(vec![s[0], numel(&s[1..])]);
        }
        Ok(())
    },
    cpu: Some(copy_kernel),
    grad: Some(grad_reshape_like),
    ..OpDef::BASE
};

pub static SHAPE_ARRAY: OpDef = OpDef {
    name: "shape_array",
    doc: "The shape of data as a 1-D int64 array.",
    infer_shape: |_, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(vec![s.len()]);
        }
        Ok(())
    },
    infer_type: |_, _, outs| {
        outs[0] = Some(DType::I64);
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        for (v, d) in o[0].data_mut::<i64>().iter_mut().zip(&i[0].shape) {
            *v = *d as i64;
        }
        Ok(())
    }),
    grad: Some(no_grad),
    ..OpDef::BASE
};

pub static SIZE_ARRAY: OpDef = OpDef {
    name: "size_array",
    doc: "The number of elements of data as a (1,) int64 array.",
    infer_shape: |_, ins, outs| {
        if ins[0].is_some() {
            outs[0] = Some(vec![1]);
        }
        Ok(())
    },
    infer_type: |_, _, outs| {
        outs[0] = Some(DType::I64);
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        o[0].data_mut::<i64>()[0] = i[0].size() as i64;
        Ok(())
    }),
    grad: Some(no_grad),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// transpose / SwapAxis
// ---------------------------------------------------------------------------

/// dst = src with axes permuted: dst axis j is src axis perm[j].
pub fn permute<T: Copy + Send + Sync>(src: &[T], shape: &[usize], perm: &[usize], dst: &mut [T]) {
    let n = src.len();
    if n == 0 {
        return;
    }
    // Drop size-1 axes, then merge input axes that stay adjacent.
    let keep: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] != 1).collect();
    let remap = |a: usize| keep.iter().position(|&k| k == a);
    let p1: Vec<usize> = perm.iter().filter_map(|&a| remap(a)).collect();
    let s1: Vec<usize> = keep.iter().map(|&a| shape[a]).collect();
    // groups of consecutive output axes that are consecutive input axes
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &a in &p1 {
        match groups.last_mut() {
            Some(g) if *g.last().unwrap() + 1 == a => g.push(a),
            _ => groups.push(vec![a]),
        }
    }
    // input order of the groups
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&g| groups[g][0]);
    let in_shape: Vec<usize> = order
        .iter()
        .map(|&g| groups[g].iter().map(|&a| s1[a]).product())
        .collect();
    let in_st = strides(&in_shape);
    let pos_in: Vec<usize> = (0..groups.len())
        .map(|g| order.iter().position(|&o| o == g).unwrap())
        .collect();
    let osh: Vec<usize> = (0..groups.len()).map(|g| in_shape[pos_in[g]]).collect();
    let ist: Vec<usize> = (0..groups.len()).map(|g| in_st[pos_in[g]]).collect();
    let nd = osh.len();
    if nd <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    // Batched 2-D transpose: the last two output axes are swapped input axes.
    if ist[nd - 2] == 1
        && ist[nd - 1] == osh[nd - 2]
        && (nd == 2 || (nd == 3 && ist[0] == osh[1] * osh[2]))
    {
        let (r, c) = (osh[nd - 2], osh[nd - 1]); // dst block is r x c, src block is c x r
        let blk = r * c;
        let go = |b: usize, d: &mut [T]| {
            let s = &src[b * blk..(b + 1) * blk];
            assert!(d.len() == blk);
            const T_: usize = 32;
            for i0 in (0..r).step_by(T_) {
                for j0 in (0..c).step_by(T_) {
                    let (i1, j1) = ((i0 + T_).min(r), (j0 + T_).min(c));
                    for i in i0..i1 {
                        for j in j0..j1 {
                            // SAFETY: i < r and j < c, so both indices are
                            // below r * c = blk, the length of s and d
                            unsafe {
                                *d.get_unchecked_mut(i * c + j) = *s.get_unchecked(j * r + i)
                            };
                        }
                    }
                }
            }
        };
        if n >= 2 * PAR_GRAIN && n / blk > 1 {
            par_chunks_mut(dst, blk, go);
        } else if n >= 2 * PAR_GRAIN {
            // one big matrix: split over row bands
            let band = 64usize;
            par_chunks_mut(dst, band * c, |bi, d| {
                let rows = d.len() / c;
                for j0 in (0..c).step_by(32) {
                    for i in 0..rows {
                        let gi = bi * band + i;
                        for j in j0..(j0 + 32).min(c) {
                            d[i * c + j] = src[j * r + gi];
                        }
                    }
                }
            });
        } else {
            for (b, d) in dst.chunks_mut(blk).enumerate() {
                go(b, d);
            }
        }
        return;
    }
    // General: walk output rows; the inner axis reads with stride ist[nd-1].
    let inner = osh[nd - 1];
    let si = ist[nd - 1];
    let row = |r: usize, d: &mut [T]| {
        let (mut off, mut rem) = (0usize, r);
        for k in (0..nd - 1).rev() {
            off += (rem % osh[k]) * ist[k];
            rem /= osh[k];
        }
        if si == 1 {
            d.copy_from_slice(&src[off..off + inner]);
        } else {
            for (j, v) in d.iter_mut().enumerate() {
                *v = src[off + j * si];
            }
        }
    };
    if n >= 2 * PAR_GRAIN {
        par_chunks_mut(dst, inner, row);
    } else {
        for (r, d) in dst.chunks_mut(inner).enumerate() {
            row(r, d);
        }
    }
}

fn permute_blob(x: &Blob, perm: &[usize], y: &Blob) {
    by_size!(x.dtype, T => permute(raw::<T>(x), &x.shape, perm, raw_mut::<T>(y)))
}

fn transpose_perm(axes: &[i64], nd: usize) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..nd).rev().collect());
    }
    if axes.len() != nd {
        return Err(Error::Param(format!(
            "transpose: axes {} must list all {nd} axes of the input",
            fmt_ints(axes)
        )));
    }
    let mut seen = vec![false; nd];
    let mut perm = Vec::with_capacity(nd);
    for &a in axes {
        let k = norm_axis("transpose", a, nd)?;
        if seen[k] {
            return Err(Error::Param(format!(
                "transpose: axes {} repeat axis {k}",
                fmt_ints(axes)
            )));
        }
        seen[k] = true;
        perm.push(k);
    }
    Ok(perm)
}

pub static TRANSPOSE: OpDef = OpDef {
    name: "transpose",
    doc: "Permute axes (default: reverse them).",
    parse: |a| Ok(Box::new(a.p("transpose").ints_or("axes", &[])?)),
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            let perm = transpose_perm(c.p::<Vec<i64>>(), s.len())?;
            outs[0] = Some(perm.iter().map(|&a| s[a]).collect());
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let perm = transpose_perm(c.p::<Vec<i64>>(), i[0].ndim())?;
        permute_blob(&i[0], &perm, &o[0]);
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let axes = c.p::<Vec<i64>>();
        if axes.is_empty() {
            return Ok(vec![Some(b.op1("transpose", &[], &[g[0]])?)]);
        }
        let perm = transpose_perm(axes, axes.len())?;
        let mut inv = vec![0i64; perm.len()];
        for (j, &a) in perm.iter().enumerate() {
            inv[a] = j as i64;
        }
        Ok(vec![Some(b.op1(
            "transpose",
            &[("axes", fmt_ints(&inv))],
            &[g[0]],
        )?)])
    }),
    ..OpDef::BASE
};

fn swap_perm(d: &(i64, i64), nd: usize) -> Result<Vec<usize>> {
    let a = norm_axis("SwapAxis", d.0, nd)?;
    let b = norm_axis("SwapAxis", d.1, nd)?;
    let mut perm: Vec<usize> = (0..nd).collect();
    perm.swap(a, b);
    Ok(perm)
}

pub static SWAPAXIS: OpDef = OpDef {
    name: "SwapAxis",
    aliases: &["swapaxes"],
    doc: "Swap axes dim1 and dim2.",
    parse: |a| {
        let p = a.p("SwapAxis");
        Ok(Box::new((p.i64("dim1", 0)?, p.i64("dim2", 0)?)))
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            let perm = swap_perm(c.p::<(i64, i64)>(), s.len())?;
            outs[0] = Some(perm.iter().map(|&a| s[a]).collect());
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let perm = swap_perm(c.p::<(i64, i64)>(), i[0].ndim())?;
        permute_blob(&i[0], &perm, &o[0]);
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let d = c.p::<(i64, i64)>();
        Ok(vec![Some(b.op1(
            "SwapAxis",
            &[("dim1", d.0.to_string()), ("dim2", d.1.to_string())],
            &[g[0]],
        )?)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Concat / stack / SliceChannel and the internal _split_like
// ---------------------------------------------------------------------------

/// Copy `parts` (each outer x inner_i) into `out` (outer x sum inner_i),
/// or the reverse when `split`.
/// `parts` are element pointers of blobs holding outer x inners[k] values
/// (distinct outputs when `split`; possibly repeated inputs otherwise).
fn join_blocks<T: Copy>(
    parts: &[*mut T],
    out: &mut [T],
    outer: usize,
    inners: &[usize],
    split: bool,
) {
    let total: usize = inners.iter().sum();
    if total == 0 {
        return;
    }
    let mut start = vec![0usize; inners.len()];
    for k in 1..inners.len() {
        start[k] = start[k - 1] + inners[k - 1];
    }
    for o in 0..outer {
        let orow = &mut out[o * total..(o + 1) * total];
        for (k, &p) in parts.iter().enumerate() {
            let w = inners[k];
            unsafe {
                if split {
                    std::slice::from_raw_parts_mut(p.add(o * w), w)
                        .copy_from_slice(&orow[start[k]..start[k] + w]);
                } else {
                    orow[start[k]..start[k] + w]
                        .copy_from_slice(std::slice::from_raw_parts(p.add(o * w), w));
                }
            }
        }
    }
}

fn join_blobs(parts: &[Blob], out: &Blob, axis: usize, split: bool) {
    let outer: usize = numel(&out.shape[..axis]);
    let inners: Vec<usize> = parts
        .iter()
        .map(|p| numel(&p.shape).checked_div(outer).unwrap_or(0))
        .collect();
    by_size!(out.dtype, T => {
        let ps: Vec<*mut T> = parts.iter().map(|p| p.raw_ptr() as *mut T).collect();
        join_blocks(&ps, raw_mut::<T>(out), outer, &inners, split)
    })
}

pub struct ConcatParam {
    num_args: usize,
    dim: i64,
}

fn parse_concat(a: &Attrs, op: &str, axis_key: &str, default_axis: i64) -> Result<Params> {
    let p = a.p(op);
    let num_args = p.usize("num_args", 0)?;
    if num_args == 0 {
        return Err(Error::Param(format!(
            "{op}: required argument 'num_args' must be at least 1"
        )));
    }
    Ok(Box::new(ConcatParam {
        num_args,
        dim: p.i64(axis_key, default_axis)?,
    }))
}

fn concat_out(op: &str, shapes: &[&Shape], dim: i64) -> Result<(usize, Shape)> {
    let s0 = shapes[0];
    let ax = norm_axis(op, dim, s0.len())?;
    let mut out = s0.clone();
    out[ax] = 0;
    for (k, s) in shapes.iter().enumerate() {
        let ok = s.len() == s0.len() && (0..s.len()).all(|j| j == ax || s[j] == s0[j]);
        if !ok {
            return Err(Error::Shape(format!(
                "{op}: input {k} has shape {}, which does not match input 0's shape {} outside dimension {ax}",
                fmt_shape(s),
                fmt_shape(s0)
            )));
        }
        out[ax] += s[ax];
    }
    Ok((ax, out))
}

pub static CONCAT: OpDef = OpDef {
    name: "Concat",
    aliases: &["concat", "_rnn_param_concat"],
    doc: "Join num_args arrays along dimension `dim` (default 1).",
    inputs: &["arg"],
    num_inputs: Some(|c| c.p::<ConcatParam>().num_args),
    parse: |a| parse_concat(a, "Concat", "dim", 1),
    infer_shape: |c, ins, outs| {
        if ins.iter().all(|s| s.is_some()) {
            let shapes: Vec<&Shape> = ins.iter().map(|s| s.as_ref().unwrap()).collect();
            outs[0] = Some(concat_out("Concat", &shapes, c.p::<ConcatParam>().dim)?.1);
        }
        Ok(())
    },
    infer_type: infer_type_same,
    cpu: Some(|c, i, o, _| {
        let ax = norm_axis("Concat", c.p::<ConcatParam>().dim, o[0].ndim())?;
        join_blobs(i, &o[0], ax, false);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<ConcatParam>();
        let mut ins = vec![g[0]];
        ins.extend_from_slice(x);
        let parts = b.op(
            "_split_like",
            &[
                ("num_args", p.num_args.to_string()),
                ("dim", p.dim.to_string()),
            ],
            &ins,
        )?;
        Ok(parts.into_iter().map(Some).collect())
    }),
    ..OpDef::BASE
};

/// Internal: split data along `dim` into pieces shaped like the `num_args`
/// like-inputs (the gradient of Concat; its own gradient is Concat).
pub static SPLIT_LIKE: OpDef = OpDef {
    name: "_split_like",
    doc: "Split data along dim into pieces with the shapes of like0..like{num_args-1}.",
    inputs: &["data", "like"],
    num_inputs: Some(|c| c.p::<ConcatParam>().num_args + 1),
    num_outputs: |c| c.p::<ConcatParam>().num_args,
    parse: |a| parse_concat(a, "_split_like", "dim", 1),
    infer_shape: |c, ins, outs| {
        if ins[1..].iter().all(|s| s.is_some()) {
            let shapes: Vec<&Shape> = ins[1..].iter().map(|s| s.as_ref().unwrap()).collect();
            let (_, total) = concat_out("_split_like", &shapes, c.p::<ConcatParam>().dim)?;
            if let Some(d) = &ins[0] {
                if *d != total {
                    return Err(Error::Shape(format!(
                        "_split_like: data shape {} is not the concatenation {} of the like shapes",
                        fmt_shape(d),
                        fmt_shape(&total)
                    )));
                }
            }
            for (o, s) in outs.iter_mut().zip(shapes) {
                *o = Some(s.clone());
            }
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let ax = norm_axis("_split_like", c.p::<ConcatParam>().dim, i[0].ndim())?;
        join_blobs(o, &i[0], ax, true);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<ConcatParam>();
        let whole = b.op1(
            "Concat",
            &[
                ("num_args", p.num_args.to_string()),
                ("dim", p.dim.to_string()),
            ],
            g,
        )?;
        let mut r = vec![Some(whole)];
        r.extend(std::iter::repeat_n(None, x.len() - 1));
        Ok(r)
    }),
    ..OpDef::BASE
};

fn stack_axis(a: i64, nd_in: usize) -> Result<usize> {
    let n = nd_in as i64 + 1;
    let x = if a < 0 { a + n } else { a };
    if x < 0 || x >= n {
        return Err(Error::Param(format!(
            "stack: axis {a} is out of range for inputs of {nd_in} dimensions"
        )));
    }
    Ok(x as usize)
}

pub static STACK: OpDef = OpDef {
    name: "stack",
    doc: "Join num_args arrays of the same shape along a new axis `axis` (default 0).",
    inputs: &["arg"],
    num_inputs: Some(|c| c.p::<ConcatParam>().num_args),
    parse: |a| parse_concat(a, "stack", "axis", 0),
    infer_shape: |c, ins, outs| {
        if ins.iter().all(|s| s.is_some()) {
            let s0 = ins[0].clone().unwrap();
            for (k, s) in ins.iter().enumerate() {
                let s = s.as_ref().unwrap();
                if *s != s0 {
                    return Err(Error::Shape(format!(
                        "stack: input {k} has shape {}, input 0 has shape {}; all must be equal",
                        fmt_shape(s),
                        fmt_shape(&s0)
                    )));
                }
            }
            let p = c.p::<ConcatParam>();
            let ax = stack_axis(p.dim, s0.len())?;
            let mut out = s0;
            out.insert(ax, p.num_args);
            outs[0] = Some(out);
        }
        Ok(())
    },
    infer_type: infer_type_same,
    cpu: Some(|c, i, o, _| {
        let ax = stack_axis(c.p::<ConcatParam>().dim, i[0].ndim())?;
        join_blobs(i, &o[0], ax, false);
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let p = c.p::<ConcatParam>();
        let parts = b.op(
            "SliceChannel",
            &[
                ("num_outputs", p.num_args.to_string()),
                ("axis", p.dim.to_string()),
                ("squeeze_axis", tf(true)),
            ],
            &[g[0]],
        )?;
        Ok(parts.into_iter().map(Some).collect())
    }),
    ..OpDef::BASE
};

pub struct SplitParam {
    num_outputs: usize,
    axis: i64,
    squeeze: bool,
}

pub static SLICE_CHANNEL: OpDef = OpDef {
    name: "SliceChannel",
    aliases: &["split"],
    doc: "Split along `axis` (default 1) into num_outputs equal parts; squeeze_axis drops the split axis when it becomes size 1.",
    num_outputs: |c| c.p::<SplitParam>().num_outputs,
    parse: |a| {
        let p = a.p("SliceChannel");
        let num_outputs = p.usize("num_outputs", 0)?;
        if num_outputs == 0 {
            return Err(Error::Param("SliceChannel: required argument 'num_outputs' must be at least 1".into()));
        }
        Ok(Box::new(SplitParam { num_outputs, axis: p.i64("axis", 1)?, squeeze: p.bool("squeeze_axis", false)? }) as Params)
    },
    infer_shape: |c, ins, outs| {
        let p = c.p::<SplitParam>();
        if let Some(s) = first_only_shape(ins) {
            let ax = norm_axis("SliceChannel", p.axis, s.len())?;
            if s[ax] % p.num_outputs != 0 {
                return Err(Error::Shape(format!(
                    "SliceChannel: axis {ax} of shape {} has size {}, which does not split evenly into num_outputs={}",
                    fmt_shape(s),
                    s[ax],
                    p.num_outputs
                )));
            }
            let mut out = s.clone();
            out[ax] /= p.num_outputs;
            if p.squeeze {
                if out[ax] != 1 {
                    return Err(Error::Shape(format!(
                        "SliceChannel: squeeze_axis=True needs axis {ax} of shape {} to equal num_outputs={}",
                        fmt_shape(s),
                        p.num_outputs
                    )));
                }
                out.remove(ax);
            }
            for o in outs.iter_mut() {
                *o = Some(out.clone());
            }
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let ax = norm_axis("SliceChannel", c.p::<SplitParam>().axis, i[0].ndim())?;
        join_blobs(o, &i[0], ax, true);
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let p = c.p::<SplitParam>();
        let parts: Vec<Entry> = if p.squeeze {
            g.iter().map(|&e| b.op1("expand_dims", &[("axis", p.axis.to_string())], &[e])).collect::<Result<_>>()?
        } else {
            g.to_vec()
        };
        Ok(vec![Some(b.op1("Concat", &[("num_args", p.num_outputs.to_string()), ("dim", p.axis.to_string())], &parts)?)])
    }),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// tile / repeat (and their internal summing gradients)
// ---------------------------------------------------------------------------

/// (input viewed, output viewed) shapes: tile as a broadcast of
/// (1, s0, 1, s1, ...) to (r0, s0, r1, s1, ...).
fn tile_views(s: &[usize], reps: &[usize]) -> (Shape, Shape, Shape) {
    let nd = s.len().max(reps.len());
    let sp: Vec<usize> = std::iter::repeat_n(1, nd - s.len())
        .chain(s.iter().copied())
        .collect();
    let rp: Vec<usize> = std::iter::repeat_n(1, nd - reps.len())
        .chain(reps.iter().copied())
        .collect();
    let mut iv = Vec::with_capacity(2 * nd);
    let mut ov = Vec::with_capacity(2 * nd);
    for k in 0..nd {
        iv.push(1);
        iv.push(sp[k]);
        ov.push(rp[k]);
        ov.push(sp[k]);
    }
    let out: Shape = (0..nd).map(|k| sp[k] * rp[k]).collect();
    (iv, ov, out)
}

fn bcast_copy_blob(x: &Blob, xv: &[usize], y: &Blob, yv: &[usize]) {
    by_size!(x.dtype, T => {
        let z = [0 as T];
        map2(raw::<T>(x), xv, &z, &[1], raw_mut::<T>(y), yv, |a, _| a)
    })
}

fn sum_to_blob(g: &Blob, gv: &[usize], y: &Blob, yv: &[usize]) {
    dispatch_dtype!(g.dtype, T => reduce_to(g.data::<T>(), gv, y.data_mut::<T>(), yv))
}

fn parse_reps(a: &Attrs) -> Result<Params> {
    let reps = a
        .p("tile")
        .ints("reps")?
        .ok_or_else(|| Error::Param("tile: required argument 'reps' is missing".into()))?;
    if reps.iter().any(|&r| r < 0) {
        return Err(Error::Param(format!(
            "tile: reps {} must be non-negative",
            fmt_ints(&reps)
        )));
    }
    Ok(Box::new(
        reps.into_iter().map(|r| r as usize).collect::<Vec<usize>>(),
    ))
}

fn reps_attr(r: &[usize]) -> String {
    fmt_ints(&r.iter().map(|&v| v as i64).collect::<Vec<_>>())
}

pub static TILE: OpDef = OpDef {
    name: "tile",
    doc: "Repeat the whole array `reps` times along each axis (NumPy tile).",
    parse: parse_reps,
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(tile_views(s, c.p::<Vec<usize>>()).2);
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let (iv, ov, _) = tile_views(&i[0].shape, c.p::<Vec<usize>>());
        if o[0].size() > 0 {
            bcast_copy_blob(&i[0], &iv, &o[0], &ov);
        }
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_tile_sum",
            &[("reps", reps_attr(c.p::<Vec<usize>>()))],
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

/// Internal: the gradient of tile — sums the tiles of data back to the shape of like.
pub static TILE_SUM: OpDef = OpDef {
    name: "_tile_sum",
    doc: "Sum the reps tiles of data (shaped like tile(like, reps)) into the shape of like.",
    inputs: &["data", "like"],
    parse: parse_reps,
    infer_shape: |c, ins, outs| {
        if let Some(l) = &ins[1] {
            let want = tile_views(l, c.p::<Vec<usize>>()).2;
            if let Some(d) = &ins[0] {
                if *d != want {
                    return Err(Error::Shape(format!(
                        "_tile_sum: data shape {} is not tile({}, reps) = {}",
                        fmt_shape(d),
                        fmt_shape(l),
                        fmt_shape(&want)
                    )));
                }
            }
            outs[0] = Some(l.clone());
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let (iv, ov, _) = tile_views(&o[0].shape, c.p::<Vec<usize>>());
        if i[0].size() == 0 {
            o[0].bytes_mut().fill(0);
        } else {
            sum_to_blob(&i[0], &ov, &o[0], &iv);
        }
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        Ok(vec![
            Some(b.op1("tile", &[("reps", reps_attr(c.p::<Vec<usize>>()))], &[g[0]])?),
            None,
        ])
    }),
    ..OpDef::BASE
};

pub struct RepeatParam {
    repeats: usize,
    axis: Option<i64>,
}

fn parse_repeat(a: &Attrs) -> Result<Params> {
    let p = a.p("repeat");
    let r = p.i64_req("repeats")?;
    if r < 0 {
        return Err(Error::Param(format!(
            "repeat: repeats={r} must be non-negative"
        )));
    }
    Ok(Box::new(RepeatParam {
        repeats: r as usize,
        axis: p.opt_i64("axis")?,
    }))
}

/// (input viewed, output viewed, output) shapes of repeat:
/// (outer, d, 1, inner) broadcast to (outer, d, r, inner).
fn repeat_views(s: &[usize], p: &RepeatParam) -> Result<(Shape, Shape, Shape)> {
    let r = p.repeats;
    match p.axis {
        None => {
            let n = numel(s);
            Ok((vec![n, 1], vec![n, r], vec![n * r]))
        }
        Some(a) => {
            let ax = norm_axis("repeat", a, s.len())?;
            let (outer, d, inner) = (numel(&s[..ax]), s[ax], numel(&s[ax + 1..]));
            let mut out = s.to_vec();
            out[ax] *= r;
            Ok((vec![outer, d, 1, inner], vec![outer, d, r, inner], out))
        }
    }
}

fn repeat_attrs(p: &RepeatParam) -> Vec<(&'static str, String)> {
    vec![
        ("repeats", p.repeats.to_string()),
        (
            "axis",
            p.axis
                .map(|a| a.to_string())
                .unwrap_or_else(|| "None".into()),
        ),
    ]
}

pub static REPEAT: OpDef = OpDef {
    name: "repeat",
    doc:
        "Repeat each element `repeats` times along `axis` (the flattened array when axis is None).",
    parse: parse_repeat,
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(repeat_views(s, c.p::<RepeatParam>())?.2);
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let (iv, ov, _) = repeat_views(&i[0].shape, c.p::<RepeatParam>())?;
        if o[0].size() > 0 {
            bcast_copy_blob(&i[0], &iv, &o[0], &ov);
        }
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_repeat_sum",
            &repeat_attrs(c.p::<RepeatParam>()),
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

/// Internal: the gradient of repeat — sums the copies back to the shape of like.
pub static REPEAT_SUM: OpDef = OpDef {
    name: "_repeat_sum",
    doc: "Sum the repeated copies in data (shaped like repeat(like, repeats, axis)) into the shape of like.",
    inputs: &["data", "like"],
    parse: parse_repeat,
    infer_shape: |c, ins, outs| {
        if let Some(l) = &ins[1] {
            let want = repeat_views(l, c.p::<RepeatParam>())?.2;
            if let Some(d) = &ins[0] {
                if *d != want {
                    return Err(Error::Shape(format!(
                        "_repeat_sum: data shape {} is not the shape {} of repeat on {}",
                        fmt_shape(d),
                        fmt_shape(&want),
                        fmt_shape(l)
                    )));
                }
            }
            outs[0] = Some(l.clone());
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let (iv, ov, _) = repeat_views(&o[0].shape, c.p::<RepeatParam>())?;
        if i[0].size() == 0 {
            o[0].bytes_mut().fill(0);
        } else {
            sum_to_blob(&i[0], &ov, &o[0], &iv);
        }
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| Ok(vec![Some(b.op1("repeat", &repeat_attrs(c.p::<RepeatParam>()), &[g[0]])?), None])),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Strided windows: reverse, slice, slice_axis, slice_like, _slice_scatter
// ---------------------------------------------------------------------------

/// Per input axis: first index, step and number of elements taken.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Win {
    pub begin: i64,
    pub step: i64,
    pub len: usize,
}

fn full_wins(s: &[usize]) -> Vec<Win> {
    s.iter()
        .map(|&d| Win {
            begin: 0,
            step: 1,
            len: d,
        })
        .collect()
}

/// Walk the window row by row: `f(row_index, src_offset, src_step)` for each
/// output row of length `wins.last().len`.
fn win_rows(shape: &[usize], wins: &[Win], mut f: impl FnMut(usize, isize, isize)) {
    let nd = shape.len();
    let st = strides(shape);
    if nd == 0 {
        f(0, 0, 1);
        return;
    }
    let rows: usize = wins[..nd - 1].iter().map(|w| w.len).product();
    let inner_step = wins[nd - 1].step as isize * st[nd - 1] as isize;
    for r in 0..rows {
        let (mut off, mut rem) = (wins[nd - 1].begin as isize * st[nd - 1] as isize, r);
        for k in (0..nd - 1).rev() {
            let i = rem % wins[k].len;
            rem /= wins[k].len;
            off += (wins[k].begin + i as i64 * wins[k].step) as isize * st[k] as isize;
        }
        f(r, off, inner_step);
    }
}

fn gather<T: Copy>(src: &[T], shape: &[usize], wins: &[Win], dst: &mut [T]) {
    let inner = wins.last().map(|w| w.len).unwrap_or(1);
    if dst.is_empty() {
        return;
    }
    win_rows(shape, wins, |r, off, step| {
        let d = &mut dst[r * inner..(r + 1) * inner];
        if step == 1 {
            d.copy_from_slice(&src[off as usize..off as usize + inner]);
        } else {
            for (j, v) in d.iter_mut().enumerate() {
                *v = src[(off + j as isize * step) as usize];
            }
        }
    });
}

fn scatter<T: Copy>(src: &[T], shape: &[usize], wins: &[Win], dst: &mut [T]) {
    let inner = wins.last().map(|w| w.len).unwrap_or(1);
    if src.is_empty() {
        return;
    }
    win_rows(shape, wins, |r, off, step| {
        let s = &src[r * inner..(r + 1) * inner];
        if step == 1 {
            dst[off as usize..off as usize + inner].copy_from_slice(s);
        } else {
            for (j, v) in s.iter().enumerate() {
                dst[(off + j as isize * step) as usize] = *v;
            }
        }
    });
}

fn gather_blob(x: &Blob, wins: &[Win], y: &Blob) {
    by_size!(x.dtype, T => gather(raw::<T>(x), &x.shape, wins, raw_mut::<T>(y)))
}

fn scatter_blob(g: &Blob, wins: &[Win], y: &Blob) {
    y.bytes_mut().fill(0);
    by_size!(g.dtype, T => scatter(raw::<T>(g), &y.shape, wins, raw_mut::<T>(y)))
}

/// A window description shared by reverse, slice, slice_axis, slice_like.
#[derive(Debug, Clone)]
pub enum SliceSpec {
    Reverse(Vec<i64>),
    Slice {
        begin: Vec<i64>,
        end: Vec<i64>,
        step: Vec<i64>,
    },
    Axis {
        axis: i64,
        begin: i64,
        end: Option<i64>,
    },
    Like(Vec<i64>),
}

const NONE: i64 = i64::MIN;

impl SliceSpec {
    fn op(&self) -> &'static str {
        match self {
            SliceSpec::Reverse(_) => "reverse",
            SliceSpec::Slice { .. } => "slice",
            SliceSpec::Axis { .. } => "slice_axis",
            SliceSpec::Like(_) => "slice_like",
        }
    }

    /// Windows over `s`; `like` is the shape_like input of slice_like.
    fn wins(&self, s: &[usize], like: Option<&[usize]>) -> Result<Vec<Win>> {
        let mut w = full_wins(s);
        match self {
            SliceSpec::Reverse(axes) => {
                let mut seen = vec![false; s.len()];
                for &a in axes {
                    let k = norm_axis("reverse", a, s.len())?;
                    if seen[k] {
                        return Err(Error::Param(format!(
                            "reverse: axis {k} is listed twice in {}",
                            fmt_ints(axes)
                        )));
                    }
                    seen[k] = true;
                    w[k] = Win {
                        begin: s[k] as i64 - 1,
                        step: -1,
                        len: s[k],
                    };
                }
            }
            SliceSpec::Slice { begin, end, step } => {
                if begin.len() > s.len() {
                    return Err(Error::Param(format!(
                        "slice: begin {} has more entries than the input shape {} has dimensions",
                        fmt_ints(begin),
                        fmt_shape(s)
                    )));
                }
                for k in 0..begin.len() {
                    let len = s[k] as i64;
                    let st = if step.is_empty() || step[k] == NONE {
                        1
                    } else {
                        step[k]
                    };
                    if st == 0 {
                        return Err(Error::Param(format!("slice: step[{k}] must not be 0")));
                    }
                    let mut b = if begin[k] == NONE {
                        if st < 0 {
                            len - 1
                        } else {
                            0
                        }
                    } else if begin[k] < 0 {
                        begin[k] + len
                    } else {
                        begin[k]
                    };
                    let mut e = if end[k] == NONE {
                        if st < 0 {
                            -1
                        } else {
                            len
                        }
                    } else if end[k] < 0 {
                        end[k] + len
                    } else {
                        end[k]
                    };
                    if b < 0 && st > 0 {
                        b = 0;
                    }
                    if b > len - 1 && st < 0 {
                        b = len - 1;
                    }
                    if b < 0 || b > len - 1 {
                        b = -1;
                    }
                    e = e.max(-1).min(len);
                    let n = if b >= 0 && e != b {
                        if st > 0 {
                            if e > b {
                                (e - b - 1) / st + 1
                            } else {
                                0
                            }
                        } else if e < b {
                            (b - e - 1) / (-st) + 1
                        } else {
                            0
                        }
                    } else {
                        0
                    };
                    w[k] = Win {
                        begin: b.max(0),
                        step: st,
                        len: n as usize,
                    };
                }
            }
            SliceSpec::Axis { axis, begin, end } => {
                let k = norm_axis("slice_axis", *axis, s.len())?;
                let len = s[k] as i64;
                let b = if *begin < 0 { begin + len } else { *begin };
                let e = match end {
                    None => len,
                    Some(e) if *e < 0 => e + len,
                    Some(e) => *e,
                };
                if b < 0 || e > len || b >= e {
                    return Err(Error::Param(format!(
                        "slice_axis: begin={begin}, end={} do not select a non-empty range of axis {k} (size {len}) of shape {}",
                        end.map(|v| v.to_string()).unwrap_or_else(|| "None".into()),
                        fmt_shape(s)
                    )));
                }
                w[k] = Win {
                    begin: b,
                    step: 1,
                    len: (e - b) as usize,
                };
            }
            SliceSpec::Like(axes) => {
                let l = like.expect("slice_like has a shape_like input");
                let ks: Vec<usize> = if axes.is_empty() {
                    (0..l.len()).collect()
                } else {
                    axes.iter()
                        .map(|&a| norm_axis("slice_like", a, s.len()))
                        .collect::<Result<_>>()?
                };
                if l.len() > s.len() && axes.is_empty() || l.len() != s.len() && !axes.is_empty() {
                    return Err(Error::Shape(format!(
                        "slice_like: shape_like {} does not have the dimensions of data {} to slice along",
                        fmt_shape(l),
                        fmt_shape(s)
                    )));
                }
                for k in ks {
                    if l[k] > s[k] {
                        return Err(Error::Shape(format!(
                            "slice_like: axis {k} of shape_like {} ({}) is larger than that of data {} ({})",
                            fmt_shape(l),
                            l[k],
                            fmt_shape(s),
                            s[k]
                        )));
                    }
                    w[k] = Win {
                        begin: 0,
                        step: 1,
                        len: l[k],
                    };
                }
            }
        }
        Ok(w)
    }

    fn attrs(&self) -> Vec<(&'static str, String)> {
        match self {
            SliceSpec::Reverse(a) => vec![("axis", fmt_ints(a))],
            SliceSpec::Slice { begin, end, step } => {
                let mut v = vec![("begin", fmt_ints(begin)), ("end", fmt_ints(end))];
                if !step.is_empty() {
                    v.push(("step", fmt_ints(step)));
                }
                v
            }
            SliceSpec::Axis { axis, begin, end } => vec![
                ("axis", axis.to_string()),
                ("begin", begin.to_string()),
                (
                    "end",
                    end.map(|e| e.to_string()).unwrap_or_else(|| "None".into()),
                ),
            ],
            SliceSpec::Like(a) => vec![("axes", fmt_ints(a))],
        }
    }
}

fn parse_spec(a: &Attrs, kind: &str) -> Result<SliceSpec> {
    let p = a.p(kind);
    Ok(match kind {
        "reverse" => {
            SliceSpec::Reverse(p.ints("axis")?.ok_or_else(|| {
                Error::Param("reverse: required argument 'axis' is missing".into())
            })?)
        }
        "slice" => {
            let begin = p.ints("begin")?.ok_or_else(|| {
                Error::Param("slice: required argument 'begin' is missing".into())
            })?;
            let end = p
                .ints("end")?
                .ok_or_else(|| Error::Param("slice: required argument 'end' is missing".into()))?;
            let step = p.ints("step")?.unwrap_or_default();
            if end.len() != begin.len() || (!step.is_empty() && step.len() != begin.len()) {
                return Err(Error::Param(format!(
                    "slice: begin {}, end {} and step {} must have the same length",
                    fmt_ints(&begin),
                    fmt_ints(&end),
                    fmt_ints(&step)
                )));
            }
            SliceSpec::Slice { begin, end, step }
        }
        "slice_axis" => SliceSpec::Axis {
            axis: p.i64_req("axis")?,
            begin: p.i64_req("begin")?,
            end: p.opt_i64("end")?,
        },
        "slice_like" => SliceSpec::Like(p.ints_or("axes", &[])?),
        _ => {
            return Err(Error::Param(format!(
            "_slice_scatter: mode '{kind}' must be one of reverse, slice, slice_axis, slice_like"
        )))
        }
    })
}

fn spec_shape(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let spec = c.p::<SliceSpec>();
    let like = if matches!(spec, SliceSpec::Like(_)) {
        match &ins[1] {
            Some(l) => Some(l.clone()),
            None => return Ok(()),
        }
    } else {
        None
    };
    if let Some(s) = &ins[0] {
        let w = spec.wins(s, like.as_deref())?;
        outs[0] = Some(w.iter().map(|w| w.len).collect());
    }
    Ok(())
}

fn spec_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let spec = c.p::<SliceSpec>();
    let like = i.get(1).map(|b| b.shape.as_slice());
    let w = spec.wins(&i[0].shape, like)?;
    gather_blob(&i[0], &w, &o[0]);
    Ok(())
}

fn spec_grad(
    c: &OpCall,
    b: B,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let spec = c.p::<SliceSpec>();
    if let SliceSpec::Reverse(_) = spec {
        return Ok(vec![Some(b.op1("reverse", &spec.attrs(), &[g[0]])?)]);
    }
    let mut attrs = spec.attrs();
    attrs.push(("mode", spec.op().to_string()));
    let gx = b.op1("_slice_scatter", &attrs, &[g[0], x[0]])?;
    let mut r = vec![Some(gx)];
    if x.len() > 1 {
        r.push(None);
    }
    Ok(r)
}

pub static REVERSE: OpDef = OpDef {
    name: "reverse",
    aliases: &["flip"],
    doc: "Reverse the order of elements along the axes in `axis`.",
    parse: |a| Ok(Box::new(parse_spec(a, "reverse")?)),
    infer_shape: spec_shape,
    cpu: Some(spec_kernel),
    grad: Some(spec_grad),
    ..OpDef::BASE
};

pub static SLICE: OpDef = OpDef {
    name: "slice",
    aliases: &["crop"],
    doc: "Slice with begin, end and step per leading axis (None entries take the defaults; negative values count from the end).",
    parse: |a| Ok(Box::new(parse_spec(a, "slice")?)),
    infer_shape: spec_shape,
    cpu: Some(spec_kernel),
    grad: Some(spec_grad),
    ..OpDef::BASE
};

pub static SLICE_AXIS: OpDef = OpDef {
    name: "slice_axis",
    doc: "Slice [begin, end) along one axis (end None = to the end).",
    parse: |a| Ok(Box::new(parse_spec(a, "slice_axis")?)),
    infer_shape: spec_shape,
    cpu: Some(spec_kernel),
    grad: Some(spec_grad),
    ..OpDef::BASE
};

pub static SLICE_LIKE: OpDef = OpDef {
    name: "slice_like",
    doc: "Slice data to the shape of shape_like along `axes` (all axes of shape_like when empty), from index 0.",
    inputs: &["data", "shape_like"],
    parse: |a| Ok(Box::new(parse_spec(a, "slice_like")?)),
    infer_shape: spec_shape,
    infer_type: infer_type_first,
    cpu: Some(spec_kernel),
    grad: Some(spec_grad),
    ..OpDef::BASE
};

/// Internal: the gradient of slice, slice_axis and slice_like — zeros of the
/// shape of like with data written into the window. Its gradient slices.
pub static SLICE_SCATTER: OpDef = OpDef {
    name: "_slice_scatter",
    doc: "Zeros shaped like `like` with data written into the window of a slice (mode = slice, slice_axis or slice_like).",
    inputs: &["data", "like"],
    parse: |a| {
        let mode = a.p("_slice_scatter").choice("mode", "slice", &["slice", "slice_axis", "slice_like"])?;
        Ok(Box::new(parse_spec(a, &mode)?))
    },
    infer_shape: |c, ins, outs| {
        let spec = c.p::<SliceSpec>();
        if let (Some(d), Some(l)) = (&ins[0], &ins[1]) {
            let w = spec.wins(l, Some(d))?;
            let ws: Shape = w.iter().map(|w| w.len).collect();
            if ws != *d {
                return Err(Error::Shape(format!(
                    "_slice_scatter: data shape {} is not the window shape {} of {} on {}",
                    fmt_shape(d),
                    fmt_shape(&ws),
                    spec.op(),
                    fmt_shape(l)
                )));
            }
        }
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let spec = c.p::<SliceSpec>();
        let w = spec.wins(&o[0].shape, Some(&i[0].shape))?;
        scatter_blob(&i[0], &w, &o[0]);
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let spec = c.p::<SliceSpec>();
        let ge = match spec {
            SliceSpec::Like(_) => b.op1("slice_like", &spec.attrs(), &[g[0], x[0]])?,
            _ => b.op1(spec.op(), &spec.attrs(), &[g[0]])?,
        };
        Ok(vec![Some(ge), None])
    }),
    ..OpDef::BASE
};

/// Parameters of `_slice_assign` / `_slice_assign_scalar`: a `slice`
/// window and, for the scalar form, the value.
struct SliceAssign {
    spec: SliceSpec,
    scalar: f64,
}

fn parse_slice_assign(a: &Attrs, op: &str, with_scalar: bool) -> Result<SliceAssign> {
    let spec = parse_spec(a, "slice").map_err(|e| e.in_op(op))?;
    let scalar = if with_scalar {
        a.p(op).f64("scalar", 0.0)?
    } else {
        0.0
    };
    Ok(SliceAssign { spec, scalar })
}

/// Copy lhs to the output unless they are the same memory (`out=lhs`, as
/// NDArray.__setitem__ calls it).
fn copy_unless_aliased(x: &Blob, y: &Blob) {
    if x.raw_ptr() != y.raw_ptr() {
        y.bytes_mut().copy_from_slice(x.bytes());
    }
}

fn slice_assign_attrs(c: &OpCall) -> Vec<(&'static str, String)> {
    c.p::<SliceAssign>().spec.attrs()
}

/// `lhs` with the window of `slice(begin, end, step)` replaced by `rhs`
/// (MXNet's `_slice_assign`, used by `a[1:3, ::2] = b`).
pub static SLICE_ASSIGN: OpDef = OpDef {
    name: "_slice_assign",
    aliases: &["_crop_assign"],
    doc:
        "lhs with the window slice(begin, end, step) replaced by rhs (rhs has the window's shape).",
    inputs: &["lhs", "rhs"],
    parse: |a| Ok(Box::new(parse_slice_assign(a, "_slice_assign", false)?)),
    infer_shape: |c, ins, outs| {
        let p = c.p::<SliceAssign>();
        if let Some(l) = ins[0].clone() {
            let ws: Shape = p
                .spec
                .wins(&l, None)
                .map_err(|e| e.in_op("_slice_assign"))?
                .iter()
                .map(|w| w.len)
                .collect();
            if let Some(r) = &ins[1] {
                if *r != ws {
                    return Err(Error::Shape(format!(
                        "_slice_assign: rhs has shape {}, the window {} of lhs {} has shape {}",
                        fmt_shape(r),
                        attrs_text(&p.spec.attrs()),
                        fmt_shape(&l),
                        fmt_shape(&ws)
                    )));
                }
            } else {
                ins[1] = Some(ws);
            }
            outs[0] = Some(l);
        }
        Ok(())
    },
    infer_type: infer_type_same,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<SliceAssign>();
        let w = p.spec.wins(&o[0].shape, None)?;
        copy_unless_aliased(&i[0], &o[0]);
        by_size!(i[1].dtype, T => scatter(raw::<T>(&i[1]), &o[0].shape, &w, raw_mut::<T>(&o[0])));
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let attrs = slice_assign_attrs(c);
        let gl = b.op1("_slice_assign_scalar", &attrs, &[g[0]])?;
        let gr = b.op1("slice", &attrs, &[g[0]])?;
        Ok(vec![Some(gl), Some(gr)])
    }),
    ..OpDef::BASE
};

/// `data` with the window of `slice(begin, end, step)` set to `scalar`.
pub static SLICE_ASSIGN_SCALAR: OpDef = OpDef {
    name: "_slice_assign_scalar",
    aliases: &["_crop_assign_scalar"],
    doc: "data with the window slice(begin, end, step) set to scalar (default 0).",
    parse: |a| {
        Ok(Box::new(parse_slice_assign(
            a,
            "_slice_assign_scalar",
            true,
        )?))
    },
    infer_shape: |c, ins, outs| {
        if let Some(d) = &ins[0] {
            c.p::<SliceAssign>()
                .spec
                .wins(d, None)
                .map_err(|e| e.in_op("_slice_assign_scalar"))?;
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<SliceAssign>();
        let w = p.spec.wins(&o[0].shape, None)?;
        copy_unless_aliased(&i[0], &o[0]);
        let n: usize = w.iter().map(|w| w.len).product();
        dispatch_dtype!(o[0].dtype, T => {
            let fillv = vec![<T as crate::base::dtype::Elem>::from_f64(p.scalar); n];
            scatter(&fillv, &o[0].shape, &w, o[0].data_mut::<T>());
        });
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let gl = b.op1("_slice_assign_scalar", &slice_assign_attrs(c), &[g[0]])?;
        Ok(vec![Some(gl)])
    }),
    ..OpDef::BASE
};

fn attrs_text(a: &[(&'static str, String)]) -> String {
    a.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------
// diag
// ---------------------------------------------------------------------------

pub struct DiagParam {
    k: i64,
    axis1: i64,
    axis2: i64,
}

/// For an N-d input (N >= 2): (a1, a2, diagonal length, start offset).
fn diag_geom(s: &[usize], p: &DiagParam) -> Result<(usize, usize, usize, usize)> {
    let a1 = norm_axis("diag", p.axis1, s.len())?;
    let a2 = norm_axis("diag", p.axis2, s.len())?;
    if a1 == a2 {
        return Err(Error::Param(format!(
            "diag: axis1 and axis2 must differ, both are {a1}"
        )));
    }
    let st = strides(s);
    let (n1, n2) = (s[a1] as i64, s[a2] as i64);
    // MXNet: k from -n1 to n2 (the ends give an empty diagonal); beyond, no diagonal exists.
    if p.k > n2 || p.k < -n1 {
        return Err(Error::Param(format!(
            "diag: diagonal k={} does not exist for axes ({a1}, {a2}) of shape {} (k must be in \
             [{}, {n2}])",
            p.k,
            fmt_shape(s),
            -n1
        )));
    }
    let (len, start) = if p.k >= 0 {
        ((n1.min(n2 - p.k)).max(0), p.k as usize * st[a2])
    } else {
        ((n2.min(n1 + p.k)).max(0), (-p.k) as usize * st[a1])
    };
    Ok((a1, a2, len as usize, if len > 0 { start } else { 0 }))
}

fn diag_shape(s: &[usize], p: &DiagParam) -> Result<Shape> {
    if s.is_empty() {
        return Err(Error::Shape(
            "diag: the input must have at least one dimension, got shape ()".into(),
        ));
    }
    if s.len() == 1 {
        let n = s[0] + p.k.unsigned_abs() as usize;
        return Ok(vec![n, n]);
    }
    let (a1, a2, len, _) = diag_geom(s, p)?;
    let mut out: Shape = (0..s.len())
        .filter(|&k| k != a1 && k != a2)
        .map(|k| s[k])
        .collect();
    out.push(len);
    Ok(out)
}

pub static DIAG: OpDef = OpDef {
    name: "diag",
    doc: "1-D input: a square matrix with data on diagonal k. N-d input: the k-th diagonal of the axis1/axis2 planes, as the last axis.",
    parse: |a| {
        let p = a.p("diag");
        Ok(Box::new(DiagParam { k: p.i64("k", 0)?, axis1: p.i64("axis1", 0)?, axis2: p.i64("axis2", 1)? }))
    },
    infer_shape: |c, ins, outs| {
        if let Some(s) = &ins[0] {
            outs[0] = Some(diag_shape(s, c.p::<DiagParam>())?);
        }
        Ok(())
    },
    cpu: Some(|c, i, o, _| {
        let p = c.p::<DiagParam>();
        let (x, y) = (&i[0], &o[0]);
        by_size!(x.dtype, T => {
            let (src, dst) = (raw::<T>(x), raw_mut::<T>(y));
            if x.ndim() == 1 {
                dst.fill(0 as T);
                let n = y.shape[0];
                for (j, &v) in src.iter().enumerate() {
                    let (r, cc) = if p.k >= 0 { (j, j + p.k as usize) } else { (j + (-p.k) as usize, j) };
                    dst[r * n + cc] = v;
                }
            } else {
                let (a1, a2, len, start) = diag_geom(&x.shape, p)?;
                let st = strides(&x.shape);
                let step = st[a1] + st[a2];
                let rest: Vec<usize> = (0..x.ndim()).filter(|&k| k != a1 && k != a2).collect();
                let rsh: Vec<usize> = rest.iter().map(|&k| x.shape[k]).collect();
                let outer = numel(&rsh);
                for r in 0..outer {
                    let (mut off, mut rem) = (start, r);
                    for (q, &k) in rest.iter().enumerate().rev() {
                        off += (rem % rsh[q]) * st[k];
                        rem /= rsh[q];
                    }
                    for j in 0..len {
                        dst[r * len + j] = src[off + j * step];
                    }
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<DiagParam>();
        let attrs = [("k", p.k.to_string()), ("axis1", p.axis1.to_string()), ("axis2", p.axis2.to_string())];
        Ok(vec![Some(b.op1("_diag_scatter", &attrs, &[g[0], x[0]])?)])
    }),
    ..OpDef::BASE
};

/// Internal: the gradient of diag — the adjoint of diag(like): for a 1-D
/// like, the k-th diagonal of data; otherwise zeros shaped like `like`
/// with data written on the diagonal.
pub static DIAG_SCATTER: OpDef = OpDef {
    name: "_diag_scatter",
    doc: "Adjoint of diag for an input shaped like `like`.",
    inputs: &["data", "like"],
    parse: |a| {
        let p = a.p("_diag_scatter");
        Ok(Box::new(DiagParam {
            k: p.i64("k", 0)?,
            axis1: p.i64("axis1", 0)?,
            axis2: p.i64("axis2", 1)?,
        }))
    },
    infer_shape: |c, ins, outs| {
        if let Some(l) = &ins[1] {
            let want = diag_shape(l, c.p::<DiagParam>())?;
            if let Some(d) = &ins[0] {
                if *d != want {
                    return Err(Error::Shape(format!(
                        "_diag_scatter: data shape {} is not diag's output shape {} for {}",
                        fmt_shape(d),
                        fmt_shape(&want),
                        fmt_shape(l)
                    )));
                }
            }
            outs[0] = Some(l.clone());
        }
        Ok(())
    },
    infer_type: infer_type_first,
    cpu: Some(|c, i, o, _| {
        let p = c.p::<DiagParam>();
        let (g, y) = (&i[0], &o[0]);
        by_size!(g.dtype, T => {
            let (src, dst) = (raw::<T>(g), raw_mut::<T>(y));
            if y.ndim() == 1 {
                let n = g.shape[0];
                for (j, v) in dst.iter_mut().enumerate() {
                    let (r, cc) = if p.k >= 0 { (j, j + p.k as usize) } else { (j + (-p.k) as usize, j) };
                    *v = src[r * n + cc];
                }
            } else {
                dst.fill(0 as T);
                let (a1, a2, len, start) = diag_geom(&y.shape, p)?;
                let st = strides(&y.shape);
                let step = st[a1] + st[a2];
                let rest: Vec<usize> = (0..y.ndim()).filter(|&k| k != a1 && k != a2).collect();
                let rsh: Vec<usize> = rest.iter().map(|&k| y.shape[k]).collect();
                for r in 0..numel(&rsh) {
                    let (mut off, mut rem) = (start, r);
                    for (q, &k) in rest.iter().enumerate().rev() {
                        off += (rem % rsh[q]) * st[k];
                        rem /= rsh[q];
                    }
                    for j in 0..len {
                        dst[off + j * step] = src[r * len + j];
                    }
                }
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, _, _, g| {
        let p = c.p::<DiagParam>();
        let attrs = [
            ("k", p.k.to_string()),
            ("axis1", p.axis1.to_string()),
            ("axis2", p.axis2.to_string()),
        ];
        Ok(vec![Some(b.op1("diag", &attrs, &[g[0]])?), None])
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &RESHAPE,
    &RESHAPE_LIKE,
    &EXPAND_DIMS,
    &SQUEEZE,
    &FLATTEN,
    &SHAPE_ARRAY,
    &SIZE_ARRAY,
    &TRANSPOSE,
    &SWAPAXIS,
    &CONCAT,
    &SPLIT_LIKE,
    &STACK,
    &SLICE_CHANNEL,
    &TILE,
    &TILE_SUM,
    &REPEAT,
    &REPEAT_SUM,
    &REVERSE,
    &SLICE,
    &SLICE_AXIS,
    &SLICE_LIKE,
    &SLICE_SCATTER,
    &SLICE_ASSIGN,
    &SLICE_ASSIGN_SCALAR,
    &DIAG,
    &DIAG_SCATTER,
];

#[cfg(test)]
mod tests {
    use crate::base::shape::{numel, strides};
    use crate::ops::matrix::testutil::{arr, check_grad, vals};
    use crate::ops::registry::call;
    use crate::{Context, NDArray};

    fn iota(shape: &[usize]) -> NDArray {
        let v: Vec<f64> = (0..numel(shape)).map(|x| x as f64).collect();
        arr(&v, shape)
    }

    fn run(op: &str, attrs: &[(&str, &str)], ins: &[NDArray]) -> (Vec<usize>, Vec<f64>) {
        let o = call(op, attrs, ins).unwrap().remove(0);
        (o.shape.clone(), o.to_vec::<f64>().unwrap())
    }

    fn err(op: &str, attrs: &[(&str, &str)], ins: &[NDArray]) -> String {
        call(op, attrs, ins).err().expect("an error").message()
    }

    /// Reference: all multi-indices of `shape` in row-major order.
    fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
        let n = numel(shape);
        (0..n)
            .map(|mut r| {
                let mut idx = vec![0; shape.len()];
                for k in (0..shape.len()).rev() {
                    idx[k] = r % shape[k];
                    r /= shape[k];
                }
                idx
            })
            .collect()
    }

    fn off(shape: &[usize], idx: &[usize]) -> usize {
        strides(shape).iter().zip(idx).map(|(s, i)| s * i).sum()
    }

    fn ref_permute(x: &[f64], shape: &[usize], perm: &[usize]) -> Vec<f64> {
        let os: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
        indices(&os)
            .iter()
            .map(|oi| {
                let mut ii = vec![0; shape.len()];
                for (j, &a) in perm.iter().enumerate() {
                    ii[a] = oi[j];
                }
                x[off(shape, &ii)]
            })
            .collect()
    }

    #[test]
    fn reshape_special_values() {
        let cases: &[(&[usize], &str, bool, &[usize])] = &[
            (&[2, 3, 4], "(4, 0, 2)", false, &[4, 3, 2]),
            (&[2, 3, 4], "(2, 0, 0)", false, &[2, 3, 4]),
            (&[2, 3, 4], "(6, 1, -1)", false, &[6, 1, 4]),
            (&[2, 3, 4], "(3, -1, 8)", false, &[3, 1, 8]),
            (&[2, 3, 4], "(-1,)", false, &[24]),
            (&[2, 3, 4], "(-2,)", false, &[2, 3, 4]),
            (&[2, 3, 4], "(2, -2)", false, &[2, 3, 4]),
            (&[2, 3, 4], "(-2, 1, 1)", false, &[2, 3, 4, 1, 1]),
            (&[2, 3, 4], "(-3, 4)", false, &[6, 4]),
            (&[2, 3, 4, 5], "(-3, -3)", false, &[6, 20]),
            (&[2, 3, 4], "(0, -3)", false, &[2, 12]),
            (&[2, 3, 4], "(-3, -2)", false, &[6, 4]),
            (&[2, 3, 4], "(-4, 1, 2, -2)", false, &[1, 2, 3, 4]),
            (&[2, 3, 4], "(2, -4, -1, 3, -2)", false, &[2, 1, 3, 4]),
            (&[10, 5, 4], "(-1, 0)", false, &[40, 5]),
            (&[10, 5, 4], "(-1, 0)", true, &[50, 4]),
            (&[7], "(-1, 0)", true, &[1, 7]),
            (&[7], "(0, -1)", false, &[7, 1]),
        ];
        for (ins, shape, rev, want) in cases {
            let x = iota(ins);
            let (s, v) = run(
                "Reshape",
                &[
                    ("shape", shape),
                    ("reverse", if *rev { "True" } else { "False" }),
                ],
                &[x],
            );
            assert_eq!(s, want.to_vec(), "{ins:?} {shape} reverse={rev}");
            assert_eq!(v, (0..numel(ins)).map(|x| x as f64).collect::<Vec<_>>());
        }
        let m = err("reshape", &[("shape", "(5, -1)")], &[iota(&[2, 3, 4])]);
        assert!(m.starts_with("Reshape: cannot infer -1"), "{m}");
        let m = err("reshape", &[("shape", "(5, 5)")], &[iota(&[2, 3, 4])]);
        assert_eq!(
            m,
            "Reshape: cannot reshape array of shape (2, 3, 4) into shape (5, 5) (shape=(5, 5))"
        );
        let m = err(
            "Reshape",
            &[("target_shape", "(4, 6)")],
            &[iota(&[2, 3, 4])],
        );
        assert!(m.contains("target_shape=(4, 6) is not supported"), "{m}");
        let m = err("Reshape", &[("shape", "(-1, -1)")], &[iota(&[2, 3, 4])]);
        assert!(m.contains("only one dimension can be -1"), "{m}");
    }

    #[test]
    fn reshape_like_and_ranges() {
        let (s, v) = run("reshape_like", &[], &[iota(&[2, 6]), iota(&[3, 4])]);
        assert_eq!(s, vec![3, 4]);
        assert_eq!(v.len(), 12);
        let (s, _) = run(
            "reshape_like",
            &[
                ("lhs_begin", "1"),
                ("lhs_end", "None"),
                ("rhs_begin", "-2"),
                ("rhs_end", "None"),
            ],
            &[iota(&[5, 6]), iota(&[9, 2, 3])],
        );
        assert_eq!(s, vec![5, 2, 3]);
        let m = err("reshape_like", &[], &[iota(&[2, 6]), iota(&[5])]);
        assert!(m.contains("lhs shape (2, 6) has 12 elements"), "{m}");
    }

    #[test]
    fn expand_squeeze_flatten_shape_size() {
        assert_eq!(
            run("expand_dims", &[("axis", "1")], &[iota(&[2, 3])]).0,
            vec![2, 1, 3]
        );
        assert_eq!(
            run("expand_dims", &[("axis", "-1")], &[iota(&[2, 3])]).0,
            vec![2, 3, 1]
        );
        assert!(err("expand_dims", &[("axis", "3")], &[iota(&[2, 3])])
            .contains("axis 3 is out of range"));
        assert_eq!(run("squeeze", &[], &[iota(&[1, 2, 1, 3])]).0, vec![2, 3]);
        assert_eq!(
            run("squeeze", &[("axis", "(2,)")], &[iota(&[1, 2, 1, 3])]).0,
            vec![1, 2, 3]
        );
        assert_eq!(run("squeeze", &[], &[iota(&[1, 1])]).0, vec![1]);
        assert!(err("squeeze", &[("axis", "1")], &[iota(&[1, 2])])
            .contains("axis 1 of shape (1, 2) has size 2"));
        assert_eq!(run("Flatten", &[], &[iota(&[2, 3, 4])]).0, vec![2, 12]);
        assert_eq!(run("flatten", &[], &[iota(&[5])]).0, vec![5, 1]);
        let o = call("shape_array", &[], &[iota(&[2, 3, 4])])
            .unwrap()
            .remove(0);
        assert_eq!(o.to_vec::<i64>().unwrap(), vec![2, 3, 4]);
        let o = call("size_array", &[], &[iota(&[2, 3, 4])])
            .unwrap()
            .remove(0);
        assert_eq!(
            (o.shape.clone(), o.to_vec::<i64>().unwrap()),
            (vec![1], vec![24])
        );
    }

    #[test]
    fn transpose_and_swapaxis_match_reference() {
        let shapes: &[(&[usize], &[usize])] = &[
            (&[2, 3, 4], &[1, 2, 0]),
            (&[2, 3, 4], &[2, 0, 1]),
            (&[2, 3, 4], &[0, 2, 1]),
            (&[2, 1, 3, 4], &[3, 1, 0, 2]),
            (&[300, 301], &[1, 0]),
            (&[4, 130, 150], &[0, 2, 1]),
            (&[40, 50, 60], &[2, 1, 0]),
            (&[3, 4, 5, 6], &[0, 1, 3, 2]),
            (&[3, 4, 5, 6], &[2, 3, 0, 1]),
        ];
        for (s, perm) in shapes {
            let x = iota(s);
            let axes = format!(
                "({})",
                perm.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let (os, v) = run("transpose", &[("axes", &axes)], &[x.clone()]);
            let xv = x.to_vec::<f64>().unwrap();
            assert_eq!(os, perm.iter().map(|&a| s[a]).collect::<Vec<_>>());
            assert_eq!(v, ref_permute(&xv, s, perm), "transpose {s:?} {perm:?}");
        }
        // default reverses the axes; negative axes
        let x = iota(&[2, 3, 4]);
        let xv = x.to_vec::<f64>().unwrap();
        assert_eq!(
            run("transpose", &[], &[x.clone()]).1,
            ref_permute(&xv, &[2, 3, 4], &[2, 1, 0])
        );
        assert_eq!(
            run("transpose", &[("axes", "(-1, 0, 1)")], &[x.clone()]).1,
            ref_permute(&xv, &[2, 3, 4], &[2, 0, 1])
        );
        assert!(err("transpose", &[("axes", "(0, 0, 1)")], &[x.clone()]).contains("repeat axis 0"));
        assert!(
            err("transpose", &[("axes", "(0, 1)")], &[x.clone()]).contains("must list all 3 axes")
        );
        let (os, v) = run("SwapAxis", &[("dim1", "0"), ("dim2", "2")], &[x.clone()]);
        assert_eq!(os, vec![4, 3, 2]);
        assert_eq!(v, ref_permute(&xv, &[2, 3, 4], &[2, 1, 0]));
        assert_eq!(
            run("swapaxes", &[("dim1", "1"), ("dim2", "-1")], &[x]).1,
            ref_permute(&xv, &[2, 3, 4], &[0, 2, 1])
        );
        // other element sizes go through the same word kernels
        let ctx = Context::cpu(0);
        let h: Vec<half::f16> = (0..6).map(|v| half::f16::from_f32(v as f32)).collect();
        let o = call(
            "transpose",
            &[],
            &[NDArray::from_vec(h, &[2, 3], ctx).unwrap()],
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            o.to_vec::<half::f16>()
                .unwrap()
                .iter()
                .map(|v| v.to_f32())
                .collect::<Vec<_>>(),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        let o = call(
            "transpose",
            &[],
            &[NDArray::from_vec(vec![0u8, 1, 2, 3, 4, 5], &[3, 2], ctx).unwrap()],
        )
        .unwrap()
        .remove(0);
        assert_eq!(o.to_vec::<u8>().unwrap(), vec![0, 2, 4, 1, 3, 5]);
        let o = call(
            "transpose",
            &[],
            &[NDArray::from_vec(vec![0i32, 1, 2, 3, 4, 5], &[3, 2], ctx).unwrap()],
        )
        .unwrap()
        .remove(0);
        assert_eq!(o.to_vec::<i32>().unwrap(), vec![0, 2, 4, 1, 3, 5]);
    }

    #[test]
    fn concat_stack_split() {
        let a = iota(&[2, 2]);
        let b = arr(&[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], &[2, 3]);
        let (s, v) = run("Concat", &[("num_args", "2")], &[a.clone(), b.clone()]);
        assert_eq!(s, vec![2, 5]);
        assert_eq!(
            v,
            vec![0.0, 1.0, 10.0, 11.0, 12.0, 2.0, 3.0, 13.0, 14.0, 15.0]
        );
        let (s, v) = run(
            "concat",
            &[("num_args", "2"), ("dim", "0")],
            &[a.clone(), arr(&[7.0, 8.0], &[1, 2])],
        );
        assert_eq!(s, vec![3, 2]);
        assert_eq!(v, vec![0.0, 1.0, 2.0, 3.0, 7.0, 8.0]);
        let m = err(
            "Concat",
            &[("num_args", "2"), ("dim", "0")],
            &[a.clone(), b.clone()],
        );
        assert_eq!(m, "Concat: input 1 has shape (2, 3), which does not match input 0's shape (2, 2) outside dimension 0");
        assert!(err("Concat", &[("num_args", "3")], &[a.clone(), b.clone()])
            .contains("expected 3 input(s)"));

        let c = arr(&[4.0, 5.0, 6.0, 7.0], &[2, 2]);
        let (s, v) = run(
            "stack",
            &[("num_args", "2"), ("axis", "1")],
            &[a.clone(), c.clone()],
        );
        assert_eq!(s, vec![2, 2, 2]);
        assert_eq!(v, vec![0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
        let (s, v) = run(
            "stack",
            &[("num_args", "2"), ("axis", "-1")],
            &[a.clone(), c.clone()],
        );
        assert_eq!(s, vec![2, 2, 2]);
        assert_eq!(v, vec![0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0]);
        let (s, v) = run("stack", &[("num_args", "2")], &[a.clone(), c]);
        assert_eq!(s, vec![2, 2, 2]);
        assert_eq!(v, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        assert!(err("stack", &[("num_args", "2")], &[a.clone(), b.clone()])
            .contains("input 1 has shape (2, 3)"));

        let x = iota(&[2, 6]);
        let outs = call("SliceChannel", &[("num_outputs", "3")], &[x.clone()]).unwrap();
        assert_eq!(outs.len(), 3);
        assert_eq!(outs[1].shape, vec![2, 2]);
        assert_eq!(outs[1].to_vec::<f64>().unwrap(), vec![2.0, 3.0, 8.0, 9.0]);
        let outs = call(
            "split",
            &[
                ("num_outputs", "2"),
                ("axis", "0"),
                ("squeeze_axis", "True"),
            ],
            &[x.clone()],
        )
        .unwrap();
        assert_eq!(outs[1].shape, vec![6]);
        assert_eq!(
            outs[1].to_vec::<f64>().unwrap(),
            vec![6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
        );
        assert!(err("split", &[("num_outputs", "4")], &[x.clone()])
            .contains("does not split evenly into num_outputs=4"));
        assert!(err(
            "split",
            &[("num_outputs", "3"), ("squeeze_axis", "1")],
            &[x]
        )
        .contains("squeeze_axis=True"));
    }

    #[test]
    fn tile_and_repeat() {
        let x = iota(&[2, 3]);
        let (s, v) = run("tile", &[("reps", "(2, 2)")], &[x.clone()]);
        assert_eq!(s, vec![4, 6]);
        let want: Vec<f64> = indices(&[4, 6])
            .iter()
            .map(|i| ((i[0] % 2) * 3 + i[1] % 3) as f64)
            .collect();
        assert_eq!(v, want);
        let (s, v) = run("tile", &[("reps", "(2,)")], &[x.clone()]);
        assert_eq!(s, vec![2, 6]);
        assert_eq!(
            v,
            vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
        );
        let (s, v) = run("tile", &[("reps", "(2, 1, 1)")], &[x.clone()]);
        assert_eq!(s, vec![2, 2, 3]);
        assert_eq!(v, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0].repeat(2));
        let (s, v) = run("repeat", &[("repeats", "2")], &[x.clone()]);
        assert_eq!(s, vec![12]);
        assert_eq!(
            v,
            vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0]
        );
        let (s, v) = run("repeat", &[("repeats", "2"), ("axis", "0")], &[x.clone()]);
        assert_eq!(s, vec![4, 3]);
        assert_eq!(
            v,
            vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
        );
        let (s, v) = run("repeat", &[("repeats", "3"), ("axis", "-1")], &[x.clone()]);
        assert_eq!(s, vec![2, 9]);
        assert_eq!(&v[..9], &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
        assert!(err("repeat", &[("repeats", "2"), ("axis", "2")], &[x])
            .contains("axis 2 is out of range"));
    }

    /// CPython's slice.indices.
    fn py_range(len: i64, b: Option<i64>, e: Option<i64>, s: i64) -> Vec<i64> {
        let (lo, hi) = if s < 0 { (-1, len - 1) } else { (0, len) };
        let fix = |v: Option<i64>, d: i64| match v {
            None => d,
            Some(v) if v < 0 => (v + len).max(lo),
            Some(v) => v.min(hi),
        };
        let b = fix(b, if s < 0 { hi } else { lo });
        let e = fix(e, if s < 0 { lo } else { hi });
        let mut r = vec![];
        let mut i = b;
        while (s > 0 && i < e) || (s < 0 && i > e) {
            r.push(i);
            i += s;
        }
        r
    }

    #[test]
    fn slice_matches_python_slicing() {
        let opts = [
            None,
            Some(-7),
            Some(-2),
            Some(0),
            Some(1),
            Some(3),
            Some(5),
            Some(9),
        ];
        let x = iota(&[5]);
        for b in opts {
            for e in opts {
                for s in [1i64, 2, 3, -1, -2] {
                    let f =
                        |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_else(|| "None".into());
                    let (bs, es, ss) = (
                        format!("({},)", f(b)),
                        format!("({},)", f(e)),
                        format!("({s},)"),
                    );
                    let (shape, v) = run(
                        "slice",
                        &[("begin", &bs), ("end", &es), ("step", &ss)],
                        &[x.clone()],
                    );
                    let want: Vec<f64> =
                        py_range(5, b, e, s).into_iter().map(|i| i as f64).collect();
                    assert_eq!(shape, vec![want.len()], "slice b={b:?} e={e:?} s={s}");
                    assert_eq!(v, want, "slice b={b:?} e={e:?} s={s}");
                }
            }
        }
        // multi-axis with a trailing untouched axis
        let x = iota(&[4, 5, 3]);
        let (s, v) = run(
            "crop",
            &[
                ("begin", "(1, None)"),
                ("end", "(None, 0)"),
                ("step", "(2, -2)"),
            ],
            &[x.clone()],
        );
        assert_eq!(s, vec![2, 2, 3]);
        let xv = x.to_vec::<f64>().unwrap();
        let mut want = vec![];
        for i in [1, 3] {
            for j in [4, 2] {
                for k in 0..3 {
                    want.push(xv[i * 15 + j * 3 + k]);
                }
            }
        }
        assert_eq!(v, want);
        assert!(err(
            "slice",
            &[("begin", "(0, 0)"), ("end", "(1,)")],
            &[x.clone()]
        )
        .contains("same length"));
        assert!(err(
            "slice",
            &[("begin", "(0,)"), ("end", "(1,)"), ("step", "(0,)")],
            &[x]
        )
        .contains("step[0] must not be 0"));
    }

    #[test]
    fn slice_axis_like_reverse() {
        let x = iota(&[3, 4]);
        let (s, v) = run(
            "slice_axis",
            &[("axis", "1"), ("begin", "1"), ("end", "3")],
            &[x.clone()],
        );
        assert_eq!(s, vec![3, 2]);
        assert_eq!(v, vec![1.0, 2.0, 5.0, 6.0, 9.0, 10.0]);
        let (s, v) = run(
            "slice_axis",
            &[("axis", "-2"), ("begin", "-1"), ("end", "None")],
            &[x.clone()],
        );
        assert_eq!(s, vec![1, 4]);
        assert_eq!(v, vec![8.0, 9.0, 10.0, 11.0]);
        assert!(err(
            "slice_axis",
            &[("axis", "0"), ("begin", "2"), ("end", "1")],
            &[x.clone()]
        )
        .contains("non-empty range"));
        let (s, v) = run("slice_like", &[], &[x.clone(), iota(&[2, 3])]);
        assert_eq!(s, vec![2, 3]);
        assert_eq!(v, vec![0.0, 1.0, 2.0, 4.0, 5.0, 6.0]);
        let (s, _) = run(
            "slice_like",
            &[("axes", "(1,)")],
            &[x.clone(), iota(&[1, 2])],
        );
        assert_eq!(s, vec![3, 2]);
        assert!(err("slice_like", &[], &[x.clone(), iota(&[4, 4])]).contains("larger than"));
        let (s, v) = run("reverse", &[("axis", "(0, 1)")], &[x.clone()]);
        assert_eq!(s, vec![3, 4]);
        assert_eq!(v, (0..12).rev().map(|i| i as f64).collect::<Vec<_>>());
        let (_, v) = run("flip", &[("axis", "1")], &[x]);
        assert_eq!(&v[..4], &[3.0, 2.0, 1.0, 0.0]);
    }

    #[test]
    fn diag_values() {
        let (s, v) = run("diag", &[("k", "1")], &[arr(&[1.0, 2.0], &[2])]);
        assert_eq!(s, vec![3, 3]);
        assert_eq!(v, vec![0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]);
        let (_, v) = run("diag", &[("k", "-1")], &[arr(&[1.0, 2.0], &[2])]);
        assert_eq!(v, vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
        let x = iota(&[3, 4]);
        assert_eq!(run("diag", &[], &[x.clone()]).1, vec![0.0, 5.0, 10.0]);
        assert_eq!(run("diag", &[("k", "2")], &[x.clone()]).1, vec![2.0, 7.0]);
        assert_eq!(run("diag", &[("k", "-2")], &[x.clone()]).1, vec![8.0]);
        // MXNet: k in [-rows, cols]; the ends give an empty diagonal, beyond is an error
        assert_eq!(run("diag", &[("k", "4")], &[x.clone()]).0, vec![0]);
        assert_eq!(run("diag", &[("k", "-3")], &[x.clone()]).0, vec![0]);
        assert!(err("diag", &[("k", "5")], &[x.clone()]).contains("does not exist"));
        assert!(err("diag", &[("k", "-4")], &[x]).contains("does not exist"));
        let x = iota(&[2, 3, 3]);
        let (s, v) = run("diag", &[("axis1", "1"), ("axis2", "2")], &[x]);
        assert_eq!(s, vec![2, 3]);
        assert_eq!(v, vec![0.0, 4.0, 8.0, 9.0, 13.0, 17.0]);
    }

    #[test]
    fn gradients() {
        let v24 = || vals(24, 1);
        check_grad(
            "Reshape",
            &[("shape", "(4, -1)")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "reshape_like",
            &[],
            &[(v24(), vec![2, 3, 4]), (vals(24, 2), vec![6, 4])],
            &[0],
        );
        check_grad(
            "transpose",
            &[("axes", "(1, 2, 0)")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "transpose",
            &[("axes", "(-1, 0, 1)")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad("transpose", &[], &[(v24(), vec![2, 3, 4])], &[0]);
        check_grad(
            "SwapAxis",
            &[("dim1", "0"), ("dim2", "2")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "expand_dims",
            &[("axis", "1")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad("squeeze", &[], &[(vals(6, 1), vec![2, 1, 3])], &[0]);
        check_grad("Flatten", &[], &[(v24(), vec![2, 3, 4])], &[0]);
        check_grad(
            "Concat",
            &[("num_args", "3"), ("dim", "-1")],
            &[
                (vals(4, 1), vec![2, 2]),
                (vals(6, 2), vec![2, 3]),
                (vals(2, 3), vec![2, 1]),
            ],
            &[0, 1, 2],
        );
        check_grad(
            "stack",
            &[("num_args", "2"), ("axis", "1")],
            &[(vals(6, 1), vec![2, 3]), (vals(6, 2), vec![2, 3])],
            &[0, 1],
        );
        check_grad(
            "stack",
            &[("num_args", "2"), ("axis", "-1")],
            &[(vals(6, 1), vec![2, 3]), (vals(6, 2), vec![2, 3])],
            &[0, 1],
        );
        check_grad(
            "SliceChannel",
            &[("num_outputs", "3"), ("axis", "-1")],
            &[(vals(12, 1), vec![2, 6])],
            &[0],
        );
        check_grad(
            "SliceChannel",
            &[
                ("num_outputs", "2"),
                ("axis", "0"),
                ("squeeze_axis", "True"),
            ],
            &[(vals(6, 1), vec![2, 3])],
            &[0],
        );
        check_grad(
            "tile",
            &[("reps", "(2, 1, 3)")],
            &[(vals(6, 1), vec![2, 3])],
            &[0],
        );
        check_grad(
            "tile",
            &[("reps", "(2,)")],
            &[(vals(6, 1), vec![2, 3])],
            &[0],
        );
        check_grad(
            "repeat",
            &[("repeats", "3"), ("axis", "1")],
            &[(vals(6, 1), vec![2, 3])],
            &[0],
        );
        check_grad(
            "repeat",
            &[("repeats", "2")],
            &[(vals(6, 1), vec![2, 3])],
            &[0],
        );
        check_grad(
            "reverse",
            &[("axis", "(0, 2)")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "slice",
            &[
                ("begin", "(1, None)"),
                ("end", "(None, 0)"),
                ("step", "(1, -2)"),
            ],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "slice_axis",
            &[("axis", "-1"), ("begin", "1"), ("end", "3")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        check_grad(
            "slice_like",
            &[("axes", "(0, 2)")],
            &[(v24(), vec![2, 3, 4]), (vals(8, 2), vec![1, 4, 2])],
            &[0],
        );
        check_grad("diag", &[("k", "1")], &[(vals(12, 1), vec![3, 4])], &[0]);
        check_grad("diag", &[("k", "-1")], &[(vals(3, 1), vec![3])], &[0]);
        check_grad(
            "diag",
            &[("axis1", "2"), ("axis2", "0")],
            &[(v24(), vec![2, 3, 4])],
            &[0],
        );
        // internal ops are differentiable too
        check_grad(
            "_split_like",
            &[("num_args", "2"), ("dim", "1")],
            &[
                (vals(10, 1), vec![2, 5]),
                (vals(4, 2), vec![2, 2]),
                (vals(6, 3), vec![2, 3]),
            ],
            &[0],
        );
        check_grad(
            "_tile_sum",
            &[("reps", "(2, 2)")],
            &[(v24(), vec![4, 6]), (vals(6, 2), vec![2, 3])],
            &[0],
        );
        check_grad(
            "_repeat_sum",
            &[("repeats", "2"), ("axis", "0")],
            &[(vals(12, 1), vec![4, 3]), (vals(6, 2), vec![2, 3])],
            &[0],
        );
        check_grad(
            "_slice_scatter",
            &[
                ("mode", "slice_axis"),
                ("axis", "1"),
                ("begin", "1"),
                ("end", "None"),
            ],
            &[(vals(4, 1), vec![2, 2]), (vals(6, 2), vec![2, 3])],
            &[0],
        );
        check_grad(
            "_diag_scatter",
            &[("k", "0")],
            &[(vals(3, 1), vec![3]), (vals(12, 2), vec![3, 4])],
            &[0],
        );
        check_grad(
            "_dot_flat_out",
            &[],
            &[
                (v24(), vec![2, 3, 4]),
                (vals(12, 2), vec![2, 3, 2]),
                (vals(8, 3), vec![2, 4]),
            ],
            &[0],
        );
    }
}
