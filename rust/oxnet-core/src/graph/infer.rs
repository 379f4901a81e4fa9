//! Shape and dtype inference over a graph, in both directions: each
//! operator's inference fills what it can of its outputs *and* inputs, so a
//! variable's shape is learned from the operator it feeds (FullyConnected's
//! weight from data and num_hidden). Sweeps alternate forward and backward
//! until nothing new is learned.
use super::IndexedGraph;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};

/// The integers of a tuple attribute ("(2, 3)", "[2,3]", "(2L, 3L)");
/// None if one is not an integer. The one parser of shape-like attributes.
pub fn parse_dims(s: &str) -> Option<Vec<i64>> {
    let t = s
        .trim()
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']']);
    t.split(',')
        .map(|p| p.trim().trim_end_matches('L'))
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect()
}

/// Parses a `__shape__` attribute: "(2, 3)"; a 0 or -1 dimension means
/// "unknown" in MXNet 1.x, which makes the whole shape unknown here.
pub fn parse_shape_attr(s: &str) -> Option<Shape> {
    let dims = parse_dims(s)?;
    dims.iter()
        .all(|&v| v > 0)
        .then(|| dims.iter().map(|&v| v as usize).collect())
}

/// The dtype named by a `__dtype__` attribute (MXNet writes the type flag
/// number: 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8,
/// 6 int64, 7 bool) or a dtype name.
pub fn parse_dtype_attr(s: &str) -> Option<DType> {
    if let Ok(flag) = s.trim().parse::<i32>() {
        return DType::from_flag(flag).ok();
    }
    DType::from_name(s.trim()).ok()
}

trait Slot: Clone + PartialEq {
    fn describe(&self) -> String;
}
impl Slot for Shape {
    fn describe(&self) -> String {
        fmt_shape(self)
    }
}
impl Slot for DType {
    fn describe(&self) -> String {
        self.name().to_string()
    }
}

/// The inference of one kind (shape or dtype) over the whole graph.
/// `known[e]` holds entry `e`'s value where known; returns the entries.
fn infer_entries<T: Slot>(
    g: &IndexedGraph,
    mut known: Vec<Option<T>>,
    what: &str,
    combine: fn(&T, &T) -> Option<T>,
    f: impl Fn(usize, &mut [Option<T>], &mut [Option<T>]) -> Result<()>,
) -> Result<Vec<Option<T>>> {
    let n = g.nodes.len();
    // a few sweeps reach the fixed point for every real network; the bound
    // only guards against an operator whose inference oscillates
    for sweep in 0..8 {
        let mut changed = false;
        let order: Box<dyn Iterator<Item = usize>> = if sweep % 2 == 0 {
            Box::new(0..n)
        } else {
            Box::new((0..n).rev())
        };
        for i in order {
            let node = &g.nodes[i];
            if node.is_variable() {
                continue;
            }
            let mut ins: Vec<Option<T>> = g.inputs[i]
                .iter()
                .map(|&(s, k)| known[g.entry(s, k)].clone())
                .collect();
            let n_out = node.num_outputs();
            let mut outs: Vec<Option<T>> =
                (0..n_out).map(|k| known[g.entry(i, k)].clone()).collect();
            let before_in = ins.clone();
            f(i, &mut ins, &mut outs).map_err(|e| in_node(g, i, e))?;
            for (k, v) in ins.into_iter().enumerate() {
                let (s, o) = g.inputs[i][k];
                let e = g.entry(s, o);
                if let (Some(new), true) = (v, before_in[k].is_some() || known[e].is_none()) {
                    let merged = match &known[e] {
                        None => new,
                        Some(old) => {
                            combine(old, &new).ok_or_else(|| conflict(g, i, what, k, old, &new))?
                        }
                    };
                    if known[e].as_ref() != Some(&merged) {
                        known[e] = Some(merged);
                        changed = true;
                    }
                }
            }
            for (k, v) in outs.into_iter().enumerate() {
                let e = g.entry(i, k);
                let Some(new) = v else { continue };
                let merged = match &known[e] {
                    None => new,
                    Some(old) => {
                        combine(old, &new).ok_or_else(|| out_conflict(g, i, what, k, old, &new))?
                    }
                };
                if known[e].as_ref() != Some(&merged) {
                    known[e] = Some(merged);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    Ok(known)
}

fn in_node(g: &IndexedGraph, i: usize, e: Error) -> Error {
    let node = &g.nodes[i];
    let op = node.def().map(|d| d.name).unwrap_or("null");
    let prefix = format!("{op}(name={})", node.name);
    match e {
        Error::Shape(m) => Error::Shape(format!("{prefix}: {m}")),
        Error::DType(m) => Error::DType(format!("{prefix}: {m}")),
        Error::Param(m) => Error::Param(format!("{prefix}: {m}")),
        other => Error::Param(format!("{prefix}: {}", other.message())),
    }
}

fn conflict<T: Slot>(g: &IndexedGraph, i: usize, what: &str, k: usize, old: &T, new: &T) -> Error {
    let node = &g.nodes[i];
    let names = node.input_names();
    let (s, _) = g.inputs[i][k];
    let msg = format!(
        "{}(name={}): input '{}' (from '{}') has {what} {}, but the operator needs {}",
        node.def().map(|d| d.name).unwrap_or("null"),
        node.name,
        names.get(k).cloned().unwrap_or_else(|| k.to_string()),
        g.nodes[s].name,
        old.describe(),
        new.describe()
    );
    if what == "shape" {
        Error::Shape(msg)
    } else {
        Error::DType(msg)
    }
}

fn out_conflict<T: Slot>(
    g: &IndexedGraph,
    i: usize,
    what: &str,
    k: usize,
    old: &T,
    new: &T,
) -> Error {
    let node = &g.nodes[i];
    let msg = format!(
        "{}(name={}): output {k} has {what} {} by its own inference, but {} from the operators that read it",
        node.def().map(|d| d.name).unwrap_or("null"),
        node.name,
        new.describe(),
        old.describe()
    );
    if what == "shape" {
        Error::Shape(msg)
    } else {
        Error::DType(msg)
    }
}

fn exact<T: Clone + PartialEq>(a: &T, b: &T) -> Option<T> {
    (a == b).then(|| a.clone())
}

/// Entry shapes, given the shapes of some variables (by node index).
/// Variables' `__shape__` attributes count as known. With `partial`, a 0
/// dimension (in a given shape or a `__shape__`) means "unknown", as in
/// MXNet 1.x's `infer_shape`; without, shapes are exact (a bound array of
/// shape (0, 3) is empty).
pub fn infer_shapes(
    g: &IndexedGraph,
    given: &[(usize, Shape)],
    partial: bool,
) -> Result<Vec<Option<Shape>>> {
    let mut known: Vec<Option<Shape>> = vec![None; g.num_entries()];
    for &v in &g.input_nodes {
        let attr = g.nodes[v].attr("__shape__");
        let s = match (&attr, partial) {
            (Some(a), true) => parse_partial_attr(a),
            (Some(a), false) => parse_shape_attr(a),
            (None, _) => None,
        };
        if let Some(s) = s {
            known[g.entry(v, 0)] = Some(s);
        }
    }
    for (v, s) in given {
        known[g.entry(*v, 0)] = Some(s.clone());
    }
    let combine: fn(&Shape, &Shape) -> Option<Shape> = if partial {
        super::partial::merge
    } else {
        exact
    };
    infer_entries(g, known, "shape", combine, |i, ins, outs| {
        let call = g.nodes[i].op.as_ref().expect("operator node");
        if deferred_shape(call) {
            // learned from the consumers (MXNet 1.x: 0 means unknown)
            return Ok(());
        }
        if !partial {
            return (call.def.infer_shape)(call, ins, outs);
        }
        // the operator sees whole shapes; the partial rule the rest
        let keep_in: Vec<Option<Shape>> = ins.to_vec();
        let keep_out: Vec<Option<Shape>> = outs.to_vec();
        for x in ins.iter_mut().chain(outs.iter_mut()) {
            if x.as_ref().is_some_and(super::partial::is_partial) {
                *x = None;
            }
        }
        (call.def.infer_shape)(call, ins, outs)?;
        for (x, k) in ins
            .iter_mut()
            .zip(keep_in)
            .chain(outs.iter_mut().zip(keep_out))
        {
            if x.is_none() {
                *x = k;
            }
        }
        super::partial::apply(call, ins, outs)
    })
}

/// A `__shape__` attribute with 0 (or -1) for unknown dimensions.
fn parse_partial_attr(s: &str) -> Option<Shape> {
    Some(parse_dims(s)?.iter().map(|&v| v.max(0) as usize).collect())
}

/// An operator without inputs whose `shape` parameter has a 0 dimension:
/// in a graph (as in MXNet 1.x symbols) the 0 means "unknown", and the
/// shape is learned from the operators that read the output (Gluon's RNN
/// layers make their begin states with `F.zeros(shape=(L, 0, H))`).
pub fn deferred_shape(call: &crate::ops::registry::OpCall) -> bool {
    call.def.n_inputs(call) == 0
        && call
            .attrs
            .raw("shape")
            .and_then(parse_dims)
            .is_some_and(|d| d.contains(&0))
}

/// Entry dtypes, given the dtypes of some variables (by node index).
pub fn infer_types(g: &IndexedGraph, given: &[(usize, DType)]) -> Result<Vec<Option<DType>>> {
    let mut known: Vec<Option<DType>> = vec![None; g.num_entries()];
    for &v in &g.input_nodes {
        if let Some(t) = g.nodes[v]
            .attr("__dtype__")
            .and_then(|s| parse_dtype_attr(&s))
        {
            known[g.entry(v, 0)] = Some(t);
        }
    }
    for (v, t) in given {
        known[g.entry(*v, 0)] = Some(*t);
    }
    infer_entries(g, known, "dtype", exact, |i, ins, outs| {
        let call = g.nodes[i].op.as_ref().expect("operator node");
        (call.def.infer_type)(call, ins, outs)
    })
}
