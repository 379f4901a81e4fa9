//! The one graph IR: `mx.sym` builds it, Gluon's `hybridize()` traces into
//! it, and the executor runs it (see `executor`).
//!
//! A [`Symbol`] is a list of output entries of an immutable DAG of
//! reference-counted [`Node`]s (nnvm's representation): composing symbols
//! shares nodes, and nothing is copied until a pass needs an indexed view.
//! [`IndexedGraph`] is that view: the nodes reachable from the heads in
//! topological (depth-first post-) order, which is also the order MXNet
//! lists arguments in. Every pass (inference, gradient, memory planning)
//! is a plain function over an `IndexedGraph`.
use crate::error::{Error, Result};
use crate::ops::registry::{self, OpCall, OpDef};
use crate::ops::Attrs;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub mod cse;
pub mod gradient;
pub mod indexed;
pub mod infer;
pub mod json;
pub mod partial;
pub mod subgraph;

pub use indexed::IndexedGraph;

/// A node: an operator call, or a variable (`op` is None).
pub struct Node {
    pub op: Option<Arc<OpCall>>,
    pub name: String,
    /// User attributes (`__shape__`, `lr_mult`, `__init__`, `ctx_group`,
    /// ...), kept apart from the operator's parameters and written to JSON
    /// beside them. Mutable in place, as MXNet's `_set_attr` is.
    pub attrs: RwLock<BTreeMap<String, String>>,
    pub inputs: Vec<NodeEntry>,
}

/// One output of a node.
#[derive(Clone)]
pub struct NodeEntry {
    pub node: Arc<Node>,
    pub index: usize,
}

impl NodeEntry {
    pub fn key(&self) -> (usize, usize) {
        (Arc::as_ptr(&self.node) as usize, self.index)
    }
}

/// Attribute names a user may set without double underscores (the rule
/// MXNet set in 0.9); everything else must be `__name__`.
pub const PLAIN_USER_ATTRS: &[&str] = &[
    "ctx_group",
    "lr_mult",
    "wd_mult",
    "force_mirroring",
    "mirror_stage",
];

/// Whether `key` is a user attribute rather than an operator parameter.
pub fn is_user_attr(key: &str) -> bool {
    (key.len() > 4 && key.starts_with("__") && key.ends_with("__"))
        || PLAIN_USER_ATTRS.contains(&key)
}

impl Node {
    pub fn variable(name: &str, attrs: BTreeMap<String, String>) -> Arc<Node> {
        Arc::new(Node {
            op: None,
            name: name.to_string(),
            attrs: RwLock::new(attrs),
            inputs: Vec::new(),
        })
    }
    pub fn is_variable(&self) -> bool {
        self.op.is_none()
    }
    pub fn def(&self) -> Option<&'static OpDef> {
        self.op.as_ref().map(|c| c.def)
    }
    /// Every output, hidden ones included (variables have one).
    pub fn num_outputs(&self) -> usize {
        match &self.op {
            Some(c) => c.def.n_outputs(c),
            None => 1,
        }
    }
    /// The outputs a user sees.
    pub fn num_visible(&self) -> usize {
        match &self.op {
            Some(c) => c.def.n_visible(c),
            None => 1,
        }
    }
    /// Input slots the operator writes in place (its auxiliary states).
    pub fn mutated_inputs(&self) -> Vec<usize> {
        match &self.op {
            Some(c) => c.def.mutated(c).to_vec(),
            None => Vec::new(),
        }
    }
    /// The names of the operator's inputs for this call.
    pub fn input_names(&self) -> Vec<String> {
        match &self.op {
            Some(c) => c.def.input_names(c),
            None => Vec::new(),
        }
    }
    pub fn attr(&self, key: &str) -> Option<String> {
        self.attrs.read().get(key).cloned()
    }
    /// Names of the visible outputs, MXNet's `{name}_output`, ...
    pub fn output_names(&self) -> Vec<String> {
        let n = self.num_visible();
        let Some(c) = &self.op else {
            return vec![self.name.clone()];
        };
        let names = output_suffixes(c.def.name, n);
        names
            .into_iter()
            .map(|s| format!("{}_{}", self.name, s))
            .collect()
    }
}

/// MXNet's `FListOutputNames` for the operators that declare them; the
/// default is `output` for one output and `output{i}` for several.
fn output_suffixes(op: &str, n: usize) -> Vec<String> {
    let named: &[&str] = match op {
        "BatchNorm" | "_contrib_SyncBatchNorm" | "BatchNorm_v1" => &["output", "mean", "var"],
        "LayerNorm" | "GroupNorm" => &["output", "mean", "std"],
        "RNN" => &["output", "state", "statecell"],
        "topk" => &["output0", "output1"],
        _ => &[],
    };
    if n == 1 && (named.is_empty() || named[0] == "output") {
        return vec!["output".into()];
    }
    (0..n)
        .map(|i| match named.get(i) {
            Some(s) => s.to_string(),
            None => format!("output{i}"),
        })
        .collect()
}

/// A list of outputs of the DAG: what `mx.sym.Symbol` holds.
#[derive(Clone)]
pub struct Symbol {
    pub outputs: Vec<NodeEntry>,
}

/// Splits an attribute map into the operator's parameters and the user's
/// attributes.
pub fn split_attrs(all: &[(String, String)]) -> (Attrs, BTreeMap<String, String>) {
    let mut params = Attrs::new();
    let mut user = BTreeMap::new();
    for (k, v) in all {
        if PLAIN_USER_ATTRS.contains(&k.as_str()) {
            // MXNet keeps both spellings (`lr_mult` and `__lr_mult__`)
            user.entry(format!("__{k}__")).or_insert_with(|| v.clone());
            user.insert(k.clone(), v.clone());
        } else if is_user_attr(k) {
            user.insert(k.clone(), v.clone());
        } else {
            params.0.push((k.clone(), v.clone()));
        }
    }
    (params, user)
}

impl Symbol {
    pub fn variable(name: &str, attrs: BTreeMap<String, String>) -> Symbol {
        Symbol {
            outputs: vec![NodeEntry {
                node: Node::variable(name, attrs),
                index: 0,
            }],
        }
    }

    /// An operator node. `inputs[i]` is the input in slot `i`; a `None`
    /// slot gets a new variable `{name}_{input name}` (MXNet's
    /// `fc1_weight`). Every input symbol must have one output.
    pub fn create(
        op: &str,
        params: Attrs,
        user: BTreeMap<String, String>,
        inputs: Vec<Option<Symbol>>,
        name: &str,
    ) -> Result<Symbol> {
        let def = registry::lookup(op)?;
        let call = Arc::new(registry::parse_call(def, params)?);
        let n_in = def.n_inputs(&call);
        let names = def.input_names(&call);
        if inputs.len() > n_in {
            return Err(Error::Param(format!(
                "{op}(name={name}): takes {n_in} input(s) ({}), got {}",
                names.join(", "),
                inputs.len()
            )));
        }
        let mut ins = Vec::with_capacity(n_in);
        for i in 0..n_in {
            match inputs.get(i).cloned().flatten() {
                Some(s) => {
                    if s.outputs.len() != 1 {
                        return Err(Error::Param(format!(
                            "{op}(name={name}): input '{}' is a group of {} outputs; \
                             pass one output (sym[i])",
                            names.get(i).cloned().unwrap_or_default(),
                            s.outputs.len()
                        )));
                    }
                    ins.push(s.outputs[0].clone());
                }
                None => {
                    // MXNet gives the variables it creates the node's attributes
                    let vname = format!("{name}_{}", names.get(i).cloned().unwrap_or_default());
                    let mut va: BTreeMap<String, String> = call.attrs.0.iter().cloned().collect();
                    va.extend(user.iter().map(|(k, v)| (k.clone(), v.clone())));
                    ins.push(NodeEntry {
                        node: Node::variable(&vname, va),
                        index: 0,
                    });
                }
            }
        }
        let node = Arc::new(Node {
            op: Some(call),
            name: name.to_string(),
            attrs: RwLock::new(user),
            inputs: ins,
        });
        let n = node.num_visible();
        Ok(Symbol {
            outputs: (0..n)
                .map(|index| NodeEntry {
                    node: node.clone(),
                    index,
                })
                .collect(),
        })
    }

    pub fn group(parts: &[Symbol]) -> Symbol {
        Symbol {
            outputs: parts.iter().flat_map(|s| s.outputs.clone()).collect(),
        }
    }

    pub fn indexed(&self) -> IndexedGraph {
        IndexedGraph::new(&self.outputs)
    }

    /// The symbol's name: its node's, when it has a single output.
    pub fn name(&self) -> Option<String> {
        if self.outputs.len() == 1 {
            Some(self.outputs[0].node.name.clone())
        } else {
            None
        }
    }

    pub fn list_outputs(&self) -> Vec<String> {
        self.outputs
            .iter()
            .map(|e| {
                if e.node.is_variable() {
                    e.node.name.clone()
                } else {
                    let names = e.node.output_names();
                    names
                        .get(e.index)
                        .cloned()
                        .unwrap_or_else(|| format!("{}_output{}", e.node.name, e.index))
                }
            })
            .collect()
    }

    /// Every output of every node (MXNet's `get_internals`): variables and
    /// the visible outputs of operators, in topological order.
    pub fn internals(&self) -> Symbol {
        let g = self.indexed();
        let mut outputs = Vec::new();
        for n in &g.nodes {
            for index in 0..n.num_visible() {
                outputs.push(NodeEntry {
                    node: n.clone(),
                    index,
                });
            }
        }
        Symbol { outputs }
    }

    /// The inputs of the head node (MXNet's `get_children`), or None for a
    /// variable.
    pub fn children(&self) -> Option<Symbol> {
        // each head node once (a multi-output node's inputs are listed once)
        let mut outputs = Vec::new();
        let mut seen = HashSet::new();
        for e in &self.outputs {
            if seen.insert(Arc::as_ptr(&e.node) as usize) {
                outputs.extend(e.node.inputs.iter().cloned());
            }
        }
        if outputs.is_empty() {
            None
        } else {
            Some(Symbol { outputs })
        }
    }

    /// Replaces variables by name with other symbols (each of one output),
    /// returning a new symbol; the replaced graph is copied along the paths
    /// that lead to a replaced variable, the rest is shared.
    pub fn compose(&self, subs: &HashMap<String, Symbol>) -> Result<Symbol> {
        for (k, s) in subs {
            if s.outputs.len() != 1 {
                return Err(Error::Param(format!(
                    "compose: the symbol for argument '{k}' has {} outputs; pass one output",
                    s.outputs.len()
                )));
            }
        }
        let g = self.indexed();
        let mut known: HashSet<&str> = HashSet::new();
        for &a in &g.input_nodes {
            known.insert(g.nodes[a].name.as_str());
        }
        for k in subs.keys() {
            if !known.contains(k.as_str()) {
                let mut names: Vec<&str> = known.iter().copied().collect();
                names.sort_unstable();
                return Err(Error::Param(format!(
                    "compose: '{k}' is not an input of the symbol (its inputs: {})",
                    names.join(", ")
                )));
            }
        }
        let mut new_nodes: Vec<Arc<Node>> = Vec::with_capacity(g.nodes.len());
        for (i, n) in g.nodes.iter().enumerate() {
            if n.is_variable() {
                match subs.get(&n.name) {
                    Some(s) => {
                        let e = &s.outputs[0];
                        // a variable becomes the replacement's node; its
                        // entry index is applied where it is consumed
                        new_nodes.push(e.node.clone());
                    }
                    None => new_nodes.push(n.clone()),
                }
                continue;
            }
            let ins: Vec<NodeEntry> = g.inputs[i]
                .iter()
                .map(|&(src, idx)| self::remap_entry(&g, &new_nodes, subs, src, idx))
                .collect();
            let changed = ins.iter().zip(&n.inputs).any(|(a, b)| a.key() != b.key());
            if changed {
                new_nodes.push(Arc::new(Node {
                    op: n.op.clone(),
                    name: n.name.clone(),
                    attrs: RwLock::new(n.attrs.read().clone()),
                    inputs: ins,
                }));
            } else {
                new_nodes.push(n.clone());
            }
        }
        let outputs = g
            .heads
            .iter()
            .map(|&(src, idx)| remap_entry(&g, &new_nodes, subs, src, idx))
            .collect();
        Ok(Symbol { outputs })
    }
}

fn remap_entry(
    g: &IndexedGraph,
    new_nodes: &[Arc<Node>],
    subs: &HashMap<String, Symbol>,
    src: usize,
    idx: usize,
) -> NodeEntry {
    let old = &g.nodes[src];
    if old.is_variable() {
        if let Some(s) = subs.get(&old.name) {
            return s.outputs[0].clone();
        }
    }
    NodeEntry {
        node: new_nodes[src].clone(),
        index: idx,
    }
}
