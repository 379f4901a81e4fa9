//! Common-subexpression elimination (MXNet's `MXNET_ELIMINATE_COMMON_EXPR`,
//! on unless set to 0): nodes with the same operator, parameters and
//! inputs are computed once. Operators that draw random numbers or write
//! their inputs are never merged. When merging makes two outputs of the
//! graph the same entry, the later one gets a `_copy` node so every output
//! stays an array of its own (as MXNet does).
use super::{IndexedGraph, Node, NodeEntry, Symbol};
use crate::error::Result;
use crate::ops::registry;
use crate::ops::Attrs;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub fn enabled() -> bool {
    std::env::var("MXNET_ELIMINATE_COMMON_EXPR")
        .map(|v| v != "0")
        .unwrap_or(true)
}

fn mergeable(n: &Node) -> bool {
    match &n.op {
        Some(c) => c.def.resources.is_empty() && c.def.mutated(c).is_empty() && c.def.cpu.is_some(),
        None => false,
    }
}

/// The graph with common subexpressions computed once.
pub fn eliminate(sym: &Symbol) -> Result<Symbol> {
    let g = IndexedGraph::new(&sym.outputs);
    // canonical node of each node, after merging
    let mut canon: Vec<usize> = (0..g.nodes.len()).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut changed = false;
    for (i, n) in g.nodes.iter().enumerate() {
        if !mergeable(n) {
            continue;
        }
        let call = n.op.as_ref().expect("operator node");
        let mut attrs = call.attrs.0.clone();
        attrs.sort();
        let ins: Vec<(usize, usize)> = g.inputs[i].iter().map(|&(s, k)| (canon[s], k)).collect();
        let key = format!("{}|{:?}|{:?}", call.def.name, attrs, ins);
        match seen.get(&key) {
            Some(&j) => {
                canon[i] = j;
                changed = true;
            }
            None => {
                seen.insert(key, i);
            }
        }
    }
    if !changed {
        return Ok(sym.clone());
    }
    // rebuild with the canonical nodes
    let mut new_nodes: Vec<Option<Arc<Node>>> = vec![None; g.nodes.len()];
    for i in 0..g.nodes.len() {
        if canon[i] != i {
            continue;
        }
        let n = &g.nodes[i];
        let ins: Vec<NodeEntry> = g.inputs[i]
            .iter()
            .map(|&(s, k)| NodeEntry {
                node: new_nodes[canon[s]].clone().expect("inputs come first"),
                index: k,
            })
            .collect();
        let same = ins.iter().zip(&n.inputs).all(|(a, b)| a.key() == b.key());
        new_nodes[i] = Some(if same {
            n.clone()
        } else {
            Arc::new(Node {
                op: n.op.clone(),
                name: n.name.clone(),
                attrs: RwLock::new(n.attrs.read().clone()),
                inputs: ins,
            })
        });
    }
    let copy = registry::lookup("_copy")?;
    let mut outputs: Vec<NodeEntry> = Vec::with_capacity(g.heads.len());
    for &(s, k) in &g.heads {
        let e = NodeEntry {
            node: new_nodes[canon[s]]
                .clone()
                .expect("every canonical node is built"),
            index: k,
        };
        if outputs.iter().any(|o| o.key() == e.key()) {
            let call = Arc::new(registry::parse_call(copy, Attrs::new())?);
            let name = format!("{}_copy{}", e.node.name, outputs.len());
            outputs.push(NodeEntry {
                node: Arc::new(Node {
                    op: Some(call),
                    name,
                    attrs: RwLock::new(BTreeMap::new()),
                    inputs: vec![e],
                }),
                index: 0,
            });
        } else {
            outputs.push(e);
        }
    }
    Ok(Symbol { outputs })
}
