//! The gradient pass: appends to a graph the nodes computing the gradients
//! of its heads with respect to some variables. Each operator's gradient
//! rule is the registry's `GradFn`, the same one imperative autograd runs,
//! here given a builder whose entries are graph entries.
use super::{IndexedGraph, Node, NodeEntry};
use crate::error::{Error, Result};
use crate::ops::registry::{self, Entry, GradBuilder};
use crate::ops::Attrs;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;

struct GraphBuilder<'a> {
    vals: Vec<NodeEntry>,
    need: &'a [bool],
    /// Name of the forward node whose gradient is being built.
    prefix: String,
    count: usize,
}

impl GraphBuilder<'_> {
    fn push(&mut self, e: NodeEntry) -> Entry {
        self.vals.push(e);
        self.vals.len() - 1
    }
    fn node(
        &mut self,
        name: &str,
        attrs: &[(&str, String)],
        inputs: Vec<NodeEntry>,
    ) -> Result<Arc<Node>> {
        let def = registry::lookup(name)?;
        let attrs = Attrs(
            attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        );
        let call = Arc::new(registry::parse_call(def, attrs)?);
        let nm = if self.count == 0 {
            format!("{}_backward", self.prefix)
        } else {
            format!("{}_backward{}", self.prefix, self.count)
        };
        self.count += 1;
        Ok(Arc::new(Node {
            op: Some(call),
            name: nm,
            attrs: RwLock::new(BTreeMap::new()),
            inputs,
        }))
    }
}

impl GradBuilder for GraphBuilder<'_> {
    fn op(&mut self, name: &str, attrs: &[(&str, String)], inputs: &[Entry]) -> Result<Vec<Entry>> {
        let ins = inputs.iter().map(|&e| self.vals[e].clone()).collect();
        let node = self.node(name, attrs, ins)?;
        let n = node.num_outputs();
        Ok((0..n)
            .map(|index| {
                self.push(NodeEntry {
                    node: node.clone(),
                    index,
                })
            })
            .collect())
    }
    fn needs_grad(&self, input: usize) -> bool {
        self.need.get(input).copied().unwrap_or(true)
    }
}

fn unary(name: &str, node_name: String, input: NodeEntry) -> Result<NodeEntry> {
    let def = registry::lookup(name)?;
    let call = Arc::new(registry::parse_call(def, Attrs::new())?);
    Ok(NodeEntry {
        node: Arc::new(Node {
            op: Some(call),
            name: node_name,
            attrs: RwLock::new(BTreeMap::new()),
            inputs: vec![input],
        }),
        index: 0,
    })
}

/// Sums gradient contributions (MXNet's `ElementWiseSum`, `add_n`).
fn sum(mut parts: Vec<NodeEntry>, name: String) -> Result<NodeEntry> {
    if parts.len() == 1 {
        return Ok(parts.remove(0));
    }
    let def = registry::lookup("add_n")?;
    let call = Arc::new(registry::parse_call(
        def,
        Attrs::from_pairs(&[("num_args", &parts.len().to_string())]),
    )?);
    Ok(NodeEntry {
        node: Arc::new(Node {
            op: Some(call),
            name,
            attrs: RwLock::new(BTreeMap::new()),
            inputs: parts,
        }),
        index: 0,
    })
}

/// Gradient entries of `heads` with respect to the variables `wrt` (node
/// indices of `g`), given one head-gradient entry per head. `None` where a
/// variable does not influence the heads (its gradient is zero).
pub fn gradient(
    g: &IndexedGraph,
    head_grads: &[NodeEntry],
    wrt: &[usize],
) -> Result<Vec<Option<NodeEntry>>> {
    let n = g.nodes.len();
    // which nodes depend on a variable we differentiate for
    let mut needs = vec![false; n];
    for &w in wrt {
        needs[w] = true;
    }
    for i in 0..n {
        if !needs[i] && g.inputs[i].iter().any(|&(s, _)| needs[s]) {
            needs[i] = true;
        }
    }
    let mut contrib: Vec<Vec<NodeEntry>> = vec![Vec::new(); g.num_entries()];
    for (h, hg) in g.heads.iter().zip(head_grads) {
        contrib[g.entry(h.0, h.1)].push(hg.clone());
    }
    for i in (0..n).rev() {
        let node = &g.nodes[i];
        if node.is_variable() || !needs[i] {
            continue;
        }
        let n_out = node.num_outputs();
        if (0..n_out).all(|k| contrib[g.entry(i, k)].is_empty()) {
            continue;
        }
        backward_node(g, i, &mut contrib, &needs)?;
    }
    wrt.iter()
        .map(|&w| {
            let parts = std::mem::take(&mut contrib[g.entry(w, 0)]);
            if parts.is_empty() {
                Ok(None)
            } else {
                sum(parts, format!("{}_grad_sum", g.nodes[w].name)).map(Some)
            }
        })
        .collect()
}

/// Runs node `i`'s gradient rule and adds its input gradients to `contrib`.
fn backward_node(
    g: &IndexedGraph,
    i: usize,
    contrib: &mut [Vec<NodeEntry>],
    needs: &[bool],
) -> Result<()> {
    let node = &g.nodes[i];
    let call = node.op.as_ref().expect("operator node");
    let gf = call.def.grad.ok_or_else(|| {
        Error::Param(format!(
            "{}(name={}): operator has no gradient",
            call.def.name, node.name
        ))
    })?;
    let need: Vec<bool> = g.inputs[i].iter().map(|&(s, _)| needs[s]).collect();
    let mut b = GraphBuilder {
        vals: Vec::new(),
        need: &need,
        prefix: node.name.clone(),
        count: 0,
    };
    let ie: Vec<Entry> = node.inputs.iter().map(|e| b.push(e.clone())).collect();
    let n_out = node.num_outputs();
    let oe: Vec<Entry> = (0..n_out)
        .map(|index| {
            b.push(NodeEntry {
                node: node.clone(),
                index,
            })
        })
        .collect();
    let mut ge = Vec::with_capacity(n_out);
    for k in 0..n_out {
        let parts = std::mem::take(&mut contrib[g.entry(i, k)]);
        let e = if parts.is_empty() {
            let out = NodeEntry {
                node: node.clone(),
                index: k,
            };
            unary("zeros_like", format!("{}_out{k}_zero_grad", node.name), out)?
        } else {
            sum(parts, format!("{}_out{k}_grad_sum", node.name))?
        };
        ge.push(b.push(e));
    }
    let res = gf(call, &mut b, &ie, &oe, &ge).map_err(|e| e.in_op(call.def.name))?;
    if res.len() != node.inputs.len() {
        return Err(Error::Op {
            op: call.def.name.to_string(),
            msg: format!(
                "gradient returned {} entries for {} inputs",
                res.len(),
                node.inputs.len()
            ),
        });
    }
    for (k, r) in res.into_iter().enumerate() {
        let (s, o) = g.inputs[i][k];
        if let (Some(r), true) = (r, needs[s]) {
            contrib[g.entry(s, o)].push(b.vals[r].clone());
        }
    }
    Ok(())
}
