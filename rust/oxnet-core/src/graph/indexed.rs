//! An indexed view of the nodes reachable from a list of heads.
use super::{Node, NodeEntry};
use std::collections::HashMap;
use std::sync::Arc;

pub struct IndexedGraph {
    /// Topological order: depth-first post-order from the heads, inputs in
    /// order (nnvm's `DFSVisit`, hence MXNet's argument order).
    pub nodes: Vec<Arc<Node>>,
    /// Per node, its inputs as (node index, output index).
    pub inputs: Vec<Vec<(usize, usize)>>,
    /// Entry id of (node, 0); entry (n, i) is `entry_start[n] + i`. One
    /// more element than nodes (MXNet's `node_row_ptr`).
    pub entry_start: Vec<usize>,
    pub heads: Vec<(usize, usize)>,
    /// Every variable, in order.
    pub input_nodes: Vec<usize>,
    /// Variables written in place by an operator (auxiliary states).
    pub aux: Vec<bool>,
}

impl IndexedGraph {
    pub fn new(heads: &[NodeEntry]) -> IndexedGraph {
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut nodes: Vec<Arc<Node>> = Vec::new();
        for h in heads {
            visit(&h.node, &mut index, &mut nodes);
        }
        let id = |n: &Arc<Node>| index[&(Arc::as_ptr(n) as usize)];
        let inputs: Vec<Vec<(usize, usize)>> = nodes
            .iter()
            .map(|n| n.inputs.iter().map(|e| (id(&e.node), e.index)).collect())
            .collect();
        let mut entry_start = Vec::with_capacity(nodes.len() + 1);
        let mut acc = 0;
        for n in &nodes {
            entry_start.push(acc);
            acc += n.num_outputs();
        }
        entry_start.push(acc);
        let mut aux = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            for m in n.mutated_inputs() {
                if let Some(&(src, _)) = inputs[i].get(m) {
                    if nodes[src].is_variable() {
                        aux[src] = true;
                    }
                }
            }
        }
        let input_nodes = (0..nodes.len())
            .filter(|&i| nodes[i].is_variable())
            .collect();
        let heads = heads.iter().map(|e| (id(&e.node), e.index)).collect();
        IndexedGraph {
            nodes,
            inputs,
            entry_start,
            heads,
            input_nodes,
            aux,
        }
    }

    pub fn num_entries(&self) -> usize {
        *self.entry_start.last().unwrap_or(&0)
    }
    pub fn entry(&self, node: usize, index: usize) -> usize {
        self.entry_start[node] + index
    }
    /// Variables that are arguments (not auxiliary states), in order.
    pub fn arg_nodes(&self) -> Vec<usize> {
        self.input_nodes
            .iter()
            .copied()
            .filter(|&i| !self.aux[i])
            .collect()
    }
    pub fn aux_nodes(&self) -> Vec<usize> {
        self.input_nodes
            .iter()
            .copied()
            .filter(|&i| self.aux[i])
            .collect()
    }
    /// Per node, the index of the last node that reads one of its outputs
    /// (heads count as read by a node past the end).
    pub fn node_of(&self, node: &Arc<Node>) -> Option<usize> {
        self.nodes.iter().position(|n| Arc::ptr_eq(n, node))
    }
}

/// Iterative post-order DFS (graphs can be thousands of nodes deep).
fn visit(root: &Arc<Node>, index: &mut HashMap<usize, usize>, nodes: &mut Vec<Arc<Node>>) {
    let key = |n: &Arc<Node>| Arc::as_ptr(n) as usize;
    if index.contains_key(&key(root)) {
        return;
    }
    let mut stack: Vec<(Arc<Node>, usize)> = vec![(root.clone(), 0)];
    let mut on_stack = std::collections::HashSet::new();
    on_stack.insert(key(root));
    while let Some((n, next)) = stack.pop() {
        if next < n.inputs.len() {
            let child = n.inputs[next].node.clone();
            stack.push((n, next + 1));
            let k = key(&child);
            if !index.contains_key(&k) && on_stack.insert(k) {
                stack.push((child, 0));
            }
        } else {
            index.insert(key(&n), nodes.len());
            nodes.push(n);
        }
    }
}
