//! Subgraph nodes: a node whose operator is a whole graph (MXNet's
//! `_CachedOp` node with `subgraphs`, which the subgraph API's partitioners
//! make). Shape and dtype inference go through the inner graph in both
//! directions; JSON keeps the inner graph; before binding, the executor
//! inlines every subgraph node (`inline_subgraphs`), so gradients, fusion
//! and memory planning see one flat graph.
use super::{infer, IndexedGraph, Node, NodeEntry, Symbol};
use crate::base::{DType, Shape};
use crate::error::{Error, Result};
use crate::ops::attrs::Attrs;
use crate::ops::registry::{OpCall, OpDef, Params};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

/// The inner graph of a subgraph node.
pub struct Subgraph {
    pub sym: Symbol,
    pub n_inputs: usize,
    /// Inputs the inner graph writes in place (its auxiliary states).
    pub mutated: Vec<usize>,
}

fn sub(c: &OpCall) -> &Subgraph {
    c.p::<Subgraph>()
}

fn n_in(c: &OpCall) -> usize {
    sub(c).n_inputs
}

fn n_out(c: &OpCall) -> usize {
    sub(c).sym.outputs.len()
}

fn mutated(c: &OpCall) -> Vec<usize> {
    sub(c).mutated.clone()
}

fn no_parse(_: &Attrs) -> Result<Params> {
    Err(Error::Param(
        "_CachedOp nodes come with their subgraph (from a partitioner or a symbol file)".into(),
    ))
}

/// Runs one kind of inference through the inner graph: the node's known
/// inputs go to the inner variables, and what the inner graph learns comes
/// back to the node's inputs and outputs.
fn through<T: Clone>(
    c: &OpCall,
    ins: &mut [Option<T>],
    outs: &mut [Option<T>],
    run: impl Fn(&IndexedGraph, &[(usize, T)]) -> Result<Vec<Option<T>>>,
) -> Result<()> {
    let g = sub(c).sym.indexed();
    let given: Vec<(usize, T)> = g
        .input_nodes
        .iter()
        .zip(ins.iter())
        .filter_map(|(&n, v)| v.clone().map(|v| (n, v)))
        .collect();
    let v = run(&g, &given)?;
    for (slot, &n) in ins.iter_mut().zip(&g.input_nodes) {
        if slot.is_none() {
            *slot = v[g.entry(n, 0)].clone();
        }
    }
    for (slot, &(n, k)) in outs.iter_mut().zip(&g.heads) {
        if slot.is_none() {
            *slot = v[g.entry(n, k)].clone();
        }
    }
    Ok(())
}

fn infer_shape(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    through(c, ins, outs, |g, given| {
        infer::infer_shapes(g, given, false)
    })
}

fn infer_type(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    through(c, ins, outs, infer::infer_types)
}

/// Not in the registry's table: partitioners and symbol files make its calls.
pub static SUBGRAPH_OP: OpDef = OpDef {
    name: "_CachedOp",
    doc: "A node running a subgraph (made by the subgraph API's partitioners).",
    inputs: &["data"],
    num_inputs: Some(n_in),
    num_outputs: n_out,
    parse: no_parse,
    infer_shape,
    infer_type,
    mutates_of: Some(mutated),
    ..OpDef::BASE
};

/// A `_CachedOp` call running `inner`, whose inputs (in its `list_inputs`
/// order) are the node's inputs.
pub fn subgraph_call(inner: Symbol) -> OpCall {
    let g = inner.indexed();
    let mutated = g
        .input_nodes
        .iter()
        .enumerate()
        .filter(|(_, &n)| g.aux[n])
        .map(|(i, _)| i)
        .collect();
    OpCall {
        def: &SUBGRAPH_OP,
        params: Box::new(Subgraph {
            n_inputs: g.input_nodes.len(),
            sym: inner,
            mutated,
        }),
        attrs: Attrs::new(),
    }
}

/// The inner graph of a call, if it is a subgraph node.
pub fn inner(c: &OpCall) -> Option<&Symbol> {
    std::ptr::eq(c.def, &SUBGRAPH_OP).then(|| &sub(c).sym)
}

impl Symbol {
    /// A subgraph node over `inputs` (one per inner input, in order).
    pub fn subgraph(inner: Symbol, inputs: Vec<Symbol>, name: &str) -> Result<Symbol> {
        let call = subgraph_call(inner);
        let want = n_in(&call);
        if inputs.len() != want {
            return Err(Error::Param(format!(
                "subgraph node {name}: the subgraph has {want} inputs, got {}",
                inputs.len()
            )));
        }
        let mut ins = Vec::with_capacity(want);
        for s in inputs {
            if s.outputs.len() != 1 {
                return Err(Error::Param(format!(
                    "subgraph node {name}: an input is a group of {} outputs",
                    s.outputs.len()
                )));
            }
            ins.push(s.outputs[0].clone());
        }
        let node = Arc::new(Node {
            op: Some(Arc::new(call)),
            name: name.to_string(),
            attrs: RwLock::new(Default::default()),
            inputs: ins,
        });
        Ok(Symbol {
            outputs: (0..node.num_outputs())
                .map(|index| NodeEntry {
                    node: node.clone(),
                    index,
                })
                .collect(),
        })
    }

    pub fn has_subgraphs(&self) -> bool {
        self.indexed()
            .nodes
            .iter()
            .any(|n| n.op.as_ref().is_some_and(|c| inner(c).is_some()))
    }

    /// The same computation with every subgraph node replaced by its inner
    /// graph (recursively).
    pub fn inline_subgraphs(&self) -> Result<Symbol> {
        if !self.has_subgraphs() {
            return Ok(self.clone());
        }
        let g = self.indexed();
        // per node, its outputs in the new graph
        let mut outs: Vec<Vec<NodeEntry>> = Vec::with_capacity(g.nodes.len());
        for (i, n) in g.nodes.iter().enumerate() {
            let ins: Vec<NodeEntry> = g.inputs[i]
                .iter()
                .map(|&(s, k)| outs[s][k].clone())
                .collect();
            let Some(call) = &n.op else {
                outs.push(vec![NodeEntry {
                    node: n.clone(),
                    index: 0,
                }]);
                continue;
            };
            if let Some(sym) = inner(call) {
                let flat = sym.inline_subgraphs()?;
                let ig = flat.indexed();
                let mut subs = HashMap::new();
                for (&v, e) in ig.input_nodes.iter().zip(&ins) {
                    subs.insert(
                        ig.nodes[v].name.clone(),
                        Symbol {
                            outputs: vec![e.clone()],
                        },
                    );
                }
                outs.push(flat.compose(&subs)?.outputs);
                continue;
            }
            let same = ins.iter().zip(&n.inputs).all(|(a, b)| a.key() == b.key());
            let node = if same {
                n.clone()
            } else {
                Arc::new(Node {
                    op: n.op.clone(),
                    name: n.name.clone(),
                    attrs: RwLock::new(n.attrs.read().clone()),
                    inputs: ins,
                })
            };
            outs.push(
                (0..node.num_outputs())
                    .map(|index| NodeEntry {
                        node: node.clone(),
                        index,
                    })
                    .collect(),
            );
        }
        Ok(Symbol {
            outputs: g.heads.iter().map(|&(s, k)| outs[s][k].clone()).collect(),
        })
    }
}
