//! Partial shapes: in MXNet 1.x a 0 dimension of a variable's shape means
//! "unknown" (`var('a', shape=(0, 10))`: batch size not known yet). The
//! operators' own inference works on whole shapes; these rules carry the
//! known dimensions of partial shapes through the common operators
//! (element-wise, FullyConnected, Convolution, Concat, SliceChannel, dot,
//! batch_dot, Embedding, transpose, pick) in both directions, as MXNet's
//! inference does, so `infer_shape` completes a shape from its parts.
use crate::base::{fmt_shape, Shape};
use crate::error::{Error, Result};
use crate::ops::registry::{infer_shape_same, OpCall};

/// A shape with a 0 dimension (unknown in MXNet 1.x's symbols).
pub fn is_partial(s: &Shape) -> bool {
    s.contains(&0)
}

/// Dimension-wise merge of two shapes of one rank (0 = unknown).
pub fn merge(a: &Shape, b: &Shape) -> Option<Shape> {
    if a.len() != b.len() {
        return None;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x, y) {
            (0, y) => Some(y),
            (x, 0) => Some(x),
            (x, y) if x == y => Some(x),
            _ => None,
        })
        .collect()
}

/// Sets `slot` to `new` merged with what it holds; errors on a conflict.
fn put(op: &OpCall, slot: &mut Option<Shape>, new: Shape) -> Result<()> {
    match slot {
        None => *slot = Some(new),
        Some(old) => match merge(old, &new) {
            Some(m) => *old = m,
            None => {
                return Err(Error::Shape(format!(
                    "{}: shape {} does not fit {}",
                    op.name(),
                    fmt_shape(old),
                    fmt_shape(&new)
                )))
            }
        },
    }
    Ok(())
}

fn usize_attr(c: &OpCall, k: &str, default: usize) -> usize {
    c.attrs
        .raw(k)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn bool_attr(c: &OpCall, k: &str, default: bool) -> bool {
    match c.attrs.raw(k).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "true" || v == "1" => true,
        Some(v) if v == "false" || v == "0" => false,
        _ => default,
    }
}

fn tuple_attr(c: &OpCall, k: &str) -> Option<Vec<usize>> {
    let d = super::infer::parse_dims(c.attrs.raw(k)?)?;
    d.iter()
        .all(|&v| v >= 0)
        .then(|| d.iter().map(|&v| v as usize).collect())
}

/// Operators whose inputs and outputs all have one shape (not the
/// broadcasting ones).
fn is_same_shape_op(c: &OpCall) -> bool {
    type F = crate::ops::registry::InferShapeFn;
    std::ptr::fn_addr_eq(c.def.infer_shape, infer_shape_same as F)
        || std::ptr::fn_addr_eq(
            c.def.infer_shape,
            crate::ops::elemwise::infer_elemwise2 as F,
        )
        || matches!(
            c.def.name,
            "Activation" | "LeakyReLU" | "Dropout" | "BlockGrad" | "Cast"
        )
}

/// Applies the operator's partial-shape rule, if it has one.
pub fn apply(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if is_same_shape_op(c) {
        return same_shape(c, ins, outs);
    }
    match c.def.name {
        "FullyConnected" => fully_connected(c, ins, outs),
        "Convolution" => convolution(c, ins, outs),
        "Concat" => concat(c, ins, outs),
        "SliceChannel" => slice_channel(c, ins, outs),
        "dot" | "batch_dot" => dot(c, ins, outs),
        "Embedding" => {
            let od = usize_attr(c, "output_dim", 0);
            if let Some(d) = ins[0].clone() {
                let mut s = d;
                s.push(od);
                put(c, &mut outs[0], s)?;
            }
            Ok(())
        }
        "transpose" => {
            let (Some(d), Some(axes)) = (ins[0].clone(), tuple_attr(c, "axes")) else {
                return Ok(());
            };
            if axes.len() == d.len() && axes.iter().all(|&a| a < d.len()) {
                put(c, &mut outs[0], axes.iter().map(|&a| d[a]).collect())?;
            }
            Ok(())
        }
        "pick" => {
            let Some(d) = ins[0].clone() else {
                return Ok(());
            };
            let axis = c
                .attrs
                .raw("axis")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(-1);
            let ax = if axis < 0 {
                d.len() as i64 + axis
            } else {
                axis
            };
            if ax >= 0 && (ax as usize) < d.len() && !bool_attr(c, "keepdims", false) {
                let mut s = d;
                s.remove(ax as usize);
                put(c, &mut outs[0], s)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn same_shape(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let mut merged: Option<Shape> = None;
    for s in ins.iter().chain(outs.iter()).flatten() {
        merged = Some(match merged {
            None => s.clone(),
            Some(m) => match merge(&m, s) {
                Some(x) => x,
                // ranks differ (a scalar-like input): leave it to the op
                None if m.len() != s.len() => return Ok(()),
                None => {
                    return Err(Error::Shape(format!(
                        "{}: shapes {} and {} do not match",
                        c.name(),
                        fmt_shape(&m),
                        fmt_shape(s)
                    )))
                }
            },
        });
    }
    if let Some(m) = merged {
        for slot in ins.iter_mut().chain(outs.iter_mut()) {
            put(c, slot, m.clone())?;
        }
    }
    Ok(())
}

fn fully_connected(
    c: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let nh = usize_attr(c, "num_hidden", 0);
    let flatten = bool_attr(c, "flatten", true);
    if let Some(d) = ins[0].clone() {
        if d.is_empty() {
            return Ok(());
        }
        let (lead, feat): (Shape, Vec<usize>) = if flatten {
            (vec![d[0]], d[1..].to_vec())
        } else {
            (d[..d.len() - 1].to_vec(), vec![d[d.len() - 1]])
        };
        let mut o = lead;
        o.push(nh);
        put(c, &mut outs[0], o)?;
        if !feat.contains(&0) {
            put(c, &mut ins[1], vec![nh, feat.iter().product()])?;
        }
    }
    if ins.len() > 2 {
        put(c, &mut ins[2], vec![nh])?;
    }
    // the batch (leading) dimensions from the output
    if let (Some(o), Some(d)) = (outs[0].clone(), ins[0].clone()) {
        if flatten && !d.is_empty() && !o.is_empty() && d[0] == 0 {
            let mut nd = d.clone();
            nd[0] = o[0];
            put(c, &mut ins[0], nd)?;
        }
    }
    Ok(())
}

fn convolution(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(kernel) = tuple_attr(c, "kernel") else {
        return Ok(());
    };
    let k = kernel.len();
    let nf = usize_attr(c, "num_filter", 0);
    let groups = usize_attr(c, "num_group", 1).max(1);
    let one = |n: &str, dflt: usize| {
        tuple_attr(c, n)
            .filter(|v| v.len() == k)
            .unwrap_or(vec![dflt; k])
    };
    let (stride, dilate, pad) = (one("stride", 1), one("dilate", 1), one("pad", 0));
    if let Some(d) = ins[0].clone() {
        if d.len() != k + 2 {
            return Ok(());
        }
        let mut o = vec![d[0], nf];
        for i in 0..k {
            let span = dilate[i] * (kernel[i] - 1) + 1;
            o.push(if d[2 + i] == 0 || d[2 + i] + 2 * pad[i] < span {
                0
            } else {
                (d[2 + i] + 2 * pad[i] - span) / stride[i] + 1
            });
        }
        put(c, &mut outs[0], o)?;
        if d[1] != 0 {
            let mut w = vec![nf, d[1] / groups];
            w.extend(&kernel);
            put(c, &mut ins[1], w)?;
        }
    }
    if ins.len() > 2 && !bool_attr(c, "no_bias", false) {
        put(c, &mut ins[2], vec![nf])?;
    }
    // batch size, and (with stride 1) the spatial size, from the output
    if let (Some(o), Some(d)) = (outs[0].clone(), ins[0].clone()) {
        if o.len() == k + 2 && d.len() == k + 2 {
            let mut nd = d.clone();
            nd[0] = if d[0] == 0 { o[0] } else { d[0] };
            for i in 0..k {
                let span = dilate[i] * (kernel[i] - 1) + 1;
                if nd[2 + i] == 0
                    && o[2 + i] != 0
                    && stride[i] == 1
                    && o[2 + i] + span > 2 * pad[i] + 1
                {
                    nd[2 + i] = o[2 + i] + span - 1 - 2 * pad[i];
                }
            }
            put(c, &mut ins[0], nd)?;
        }
    }
    Ok(())
}

fn concat(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let rank = ins
        .iter()
        .chain(outs.iter())
        .flatten()
        .map(|s| s.len())
        .next();
    let Some(rank) = rank else { return Ok(()) };
    let dim = c
        .attrs
        .raw("dim")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(1);
    let dim = if dim < 0 { dim + rank as i64 } else { dim };
    if dim < 0 || dim as usize >= rank {
        return Ok(());
    }
    let dim = dim as usize;
    // every dimension but `dim` is shared
    let mut other = vec![0usize; rank];
    for s in ins.iter().chain(outs.iter()).flatten() {
        if s.len() != rank {
            return Ok(());
        }
        for (i, &v) in s.iter().enumerate() {
            if i != dim && v != 0 {
                other[i] = v;
            }
        }
    }
    for slot in ins.iter_mut().chain(outs.iter_mut()) {
        let mut s = slot.clone().unwrap_or(vec![0; rank]);
        for i in 0..rank {
            if i != dim {
                s[i] = other[i];
            }
        }
        if slot.is_some() || s.iter().enumerate().any(|(i, &v)| i != dim && v != 0) {
            put(c, slot, s)?;
        }
    }
    let parts: Vec<usize> = ins
        .iter()
        .map(|s| s.as_ref().map(|s| s[dim]).unwrap_or(0))
        .collect();
    if let Some(o) = outs[0].as_mut() {
        if !parts.contains(&0) {
            o[dim] = parts.iter().sum();
        } else if o[dim] != 0 && parts.iter().filter(|&&p| p == 0).count() == 1 {
            let known: usize = parts.iter().sum();
            let miss = parts.iter().position(|&p| p == 0).expect("one unknown");
            if let Some(s) = ins[miss].as_mut() {
                s[dim] = o[dim].saturating_sub(known);
            }
        }
    }
    Ok(())
}

fn slice_channel(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let n = usize_attr(c, "num_outputs", 1).max(1);
    let squeeze = bool_attr(c, "squeeze_axis", false);
    let axis = c
        .attrs
        .raw("axis")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(1);
    let rank = match (&ins[0], outs.iter().flatten().next()) {
        (Some(d), _) => d.len(),
        (None, Some(o)) => o.len() + squeeze as usize,
        _ => return Ok(()),
    };
    let ax = if axis < 0 { axis + rank as i64 } else { axis };
    if ax < 0 || ax as usize >= rank {
        return Ok(());
    }
    let ax = ax as usize;
    // the input as seen from the outputs
    let mut from_out = vec![0usize; rank];
    for o in outs.iter().flatten() {
        let full: Shape = if squeeze {
            let mut s = o.clone();
            s.insert(ax.min(s.len()), 1);
            s
        } else {
            o.clone()
        };
        if full.len() != rank {
            return Ok(());
        }
        from_out = merge(&from_out, &full).unwrap_or(from_out);
    }
    from_out[ax] = if from_out[ax] == 0 {
        0
    } else {
        from_out[ax] * n
    };
    if squeeze {
        from_out[ax] = n;
    }
    put(c, &mut ins[0], from_out)?;
    if let Some(d) = ins[0].clone() {
        let mut o = d.clone();
        o[ax] = if d[ax] == 0 { 0 } else { d[ax] / n };
        if squeeze {
            o.remove(ax);
        }
        for slot in outs.iter_mut() {
            put(c, slot, o.clone())?;
        }
    }
    Ok(())
}

fn dot(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (Some(a), Some(b)) = (ins[0].clone(), ins[1].clone()) else {
        return Ok(());
    };
    let ta = bool_attr(c, "transpose_a", false);
    let tb = bool_attr(c, "transpose_b", false);
    if c.def.name == "batch_dot" {
        if a.len() != 3 || b.len() != 3 {
            return Ok(());
        }
        let (m, ka) = if ta { (a[2], a[1]) } else { (a[1], a[2]) };
        let (kb, n) = if tb { (b[2], b[1]) } else { (b[1], b[2]) };
        if ka == 0 || kb == 0 || ka != kb {
            return Ok(());
        }
        let batch = merge(&vec![a[0]], &vec![b[0]]).map(|v| v[0]).unwrap_or(0);
        return put(c, &mut outs[0], vec![batch, m, n]);
    }
    if a.is_empty() || b.is_empty() || ta || tb {
        return Ok(());
    }
    let mut o = a[..a.len() - 1].to_vec();
    o.extend(&b[1..]);
    put(c, &mut outs[0], o)
}
