//! Pointwise fusion: a tree of float32 element-wise nodes of one shape,
//! whose intermediate results nobody else reads, becomes one node running
//! `ops::fused` (one pass over memory instead of one per operator).
//! `MXNET_USE_FUSION=0` turns it off (MXNet's variable).
use crate::base::{DType, Shape};
use crate::graph::IndexedGraph;
use crate::ops::fused::{fused_call, Pointwise, Program, Step};
use crate::ops::registry::OpCall;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub struct Fusion {
    /// Nodes folded into a fused node (they no longer run).
    pub removed: HashSet<usize>,
    /// Per fused node (the tree's root): its call and its inputs.
    pub roots: HashMap<usize, (Arc<OpCall>, Vec<(usize, usize)>)>,
}

pub fn enabled() -> bool {
    std::env::var("MXNET_USE_FUSION")
        .map(|v| v != "0")
        .unwrap_or(true)
}

fn fusable(g: &IndexedGraph, i: usize, shapes: &[Shape], dtypes: &[DType]) -> bool {
    let n = &g.nodes[i];
    let Some(call) = &n.op else { return false };
    if call.def.pointwise.is_none() || n.num_outputs() != 1 {
        return false;
    }
    let out = g.entry(i, 0);
    dtypes[out] == DType::F32
        && g.inputs[i].iter().all(|&(s, k)| {
            let e = g.entry(s, k);
            dtypes[e] == DType::F32 && shapes[e] == shapes[out]
        })
}

pub fn fuse(g: &IndexedGraph, fwd_nodes: &[usize], shapes: &[Shape], dtypes: &[DType]) -> Fusion {
    let mut fusion = Fusion {
        removed: HashSet::new(),
        roots: HashMap::new(),
    };
    let mut readers = vec![0usize; g.num_entries()];
    for &i in fwd_nodes {
        for &(s, k) in &g.inputs[i] {
            readers[g.entry(s, k)] += 1;
        }
    }
    for &(n, k) in &g.heads {
        // an output of the graph must exist as an array of its own
        readers[g.entry(n, k)] += 2;
    }
    let pos: HashMap<usize, usize> = fwd_nodes.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    let mut taken: HashSet<usize> = HashSet::new();
    for &root in fwd_nodes.iter().rev() {
        if taken.contains(&root) || !fusable(g, root, shapes, dtypes) {
            continue;
        }
        let mut members = vec![root];
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            for &(s, k) in &g.inputs[i] {
                let e = g.entry(s, k);
                if readers[e] == 1
                    && !taken.contains(&s)
                    && !members.contains(&s)
                    && fusable(g, s, shapes, dtypes)
                {
                    members.push(s);
                    stack.push(s);
                }
            }
        }
        taken.extend(members.iter().copied());
        if members.len() < 2 {
            continue;
        }
        members.sort_by_key(|m| pos[m]);
        let (call, inputs) = program(g, &members);
        fusion
            .removed
            .extend(members.iter().copied().filter(|&m| m != root));
        fusion.roots.insert(root, (Arc::new(call), inputs));
    }
    fusion
}

/// The fused call of `members` (in topological order, the root last) and
/// the entries it reads.
fn program(g: &IndexedGraph, members: &[usize]) -> (OpCall, Vec<(usize, usize)>) {
    let mut inputs: Vec<(usize, usize)> = Vec::new();
    for &m in members {
        for &(s, k) in &g.inputs[m] {
            if !members.contains(&s) && !inputs.contains(&(s, k)) {
                inputs.push((s, k));
            }
        }
    }
    let n_in = inputs.len();
    let reg = |(s, k): (usize, usize)| -> usize {
        match members.iter().position(|&m| m == s) {
            Some(p) => n_in + p,
            None => inputs
                .iter()
                .position(|&x| x == (s, k))
                .expect("an input of the group"),
        }
    };
    let mut steps = Vec::with_capacity(members.len());
    let mut names = Vec::with_capacity(members.len());
    for &m in members {
        let call = g.nodes[m].op.as_ref().expect("operator node");
        let ins = &g.inputs[m];
        names.push(call.def.name);
        steps.push(match call.def.pointwise.expect("fusable") {
            Pointwise::Unary(f) => Step::Unary(f, reg(ins[0])),
            Pointwise::Binary(f) => Step::Binary(f, reg(ins[0]), reg(ins[1])),
            Pointwise::Scalar(f, scalar) => Step::Scalar(f, scalar(call) as f32, reg(ins[0])),
        });
    }
    let call = fused_call(Program {
        n_inputs: n_in,
        steps,
        names,
    });
    (call, inputs)
}
