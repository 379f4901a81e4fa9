//! MXNet 1.x `-symbol.json`: written as MXNet writes it (node `op`, `name`,
//! `attrs`, `inputs`; `arg_nodes`, `node_row_ptr`, `heads`,
//! `attrs.mxnet_version`) and read in that form and the pre-1.0 forms
//! MXNet still loads (`param` / `attr` keys, `backward_source_id`).
use super::{split_attrs, IndexedGraph, Node, NodeEntry, Symbol};
use crate::error::{Error, Result};
use crate::ops::registry::{self, OpCall};
use parking_lot::RwLock;
use serde_json::Value;
use std::fmt::Write;
use std::sync::Arc;

/// The version MXNet 1.9.1 stamps on its files.
pub const MXNET_VERSION: i64 = 10901;

fn q(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

fn write_attrs(out: &mut String, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        return;
    }
    out.push_str(",\n      \"attrs\": {");
    for (k, (key, v)) in pairs.iter().enumerate() {
        let sep = if k == 0 { "" } else { ", " };
        let _ = write!(out, "{sep}\n        {}: {}", q(key), q(v));
    }
    out.push_str("\n      }");
}

fn ints(v: &[String]) -> String {
    format!("[{}]", v.join(", "))
}

/// The symbol as MXNet's JSON (indented by two spaces, as MXNet does).
pub fn to_json(sym: &Symbol) -> String {
    let g = IndexedGraph::new(&sym.outputs);
    let mut out = String::from("{\n  \"nodes\": [");
    for (i, n) in g.nodes.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let op = n.def().map(|d| d.name).unwrap_or("null");
        let _ = write!(
            out,
            "{sep}\n    {{\n      \"op\": {},\n      \"name\": {}",
            q(op),
            q(&n.name)
        );
        let mut pairs: Vec<(String, String)> = match &n.op {
            Some(c) => c.attrs.0.clone(),
            None => Vec::new(),
        };
        let user = n.attrs.read();
        // MXNet's files carry `__lr_mult__`, never the plain spelling (MXNet
        // refuses to load an operator node with a plain `lr_mult`)
        pairs.extend(
            user.iter()
                .filter(|(k, _)| {
                    !(super::PLAIN_USER_ATTRS.contains(&k.as_str())
                        && user.contains_key(&format!("__{k}__")))
                })
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        drop(user);
        // sorted, as MXNet writes them (a loaded graph writes the same text)
        pairs.sort();
        write_attrs(&mut out, &pairs);
        let ins: Vec<String> = g.inputs[i]
            .iter()
            .map(|&(s, k)| format!("[{s}, {k}, 0]"))
            .collect();
        let _ = write!(out, ",\n      \"inputs\": {}", ints(&ins));
        if let Some(inner) = n.op.as_ref().and_then(|c| super::subgraph::inner(c)) {
            let _ = write!(out, ",\n      \"subgraphs\": [{}]", to_json(inner));
        }
        out.push_str("\n    }");
    }
    out.push_str("\n  ], \n");
    let args: Vec<String> = g.input_nodes.iter().map(|i| i.to_string()).collect();
    let rows: Vec<String> = g.entry_start.iter().map(|i| i.to_string()).collect();
    let heads: Vec<String> = g
        .heads
        .iter()
        .map(|&(s, k)| format!("[{s}, {k}, 0]"))
        .collect();
    let _ = write!(
        out,
        "  \"arg_nodes\": {}, \n  \"node_row_ptr\": {}, \n  \"heads\": {}, \n  \"attrs\": {{\"mxnet_version\": [\"int\", {MXNET_VERSION}]}}\n}}",
        ints(&args),
        ints(&rows),
        ints(&heads)
    );
    out
}

fn bad(msg: String) -> Error {
    Error::Param(format!("symbol JSON: {msg}"))
}

fn str_map(v: Option<&Value>, node: &str, key: &str) -> Result<Vec<(String, String)>> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("node '{node}': '{key}' must be an object")))?;
    obj.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Ok((k.clone(), s))
        })
        .collect()
}

fn entry_ref(v: &Value, what: &str) -> Result<(usize, usize)> {
    let a = v
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad(format!("{what} must be [node, index, version]")))?;
    let n = a[0]
        .as_u64()
        .ok_or_else(|| bad(format!("{what}: node id must be a non-negative integer")))?;
    let k = a.get(1).and_then(|x| x.as_u64()).unwrap_or(0);
    Ok((n as usize, k as usize))
}

/// Parses MXNet's JSON into a symbol; a malformed file or an unknown
/// operator raises naming the node.
pub fn from_json(text: &str) -> Result<Symbol> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    from_value(&root)
}

fn from_value(root: &Value) -> Result<Symbol> {
    let nodes_v = root
        .get("nodes")
        .and_then(|v| v.as_array())
        .ok_or_else(|| bad("no 'nodes' list".into()))?;
    let mut nodes: Vec<Arc<Node>> = Vec::with_capacity(nodes_v.len());
    for (i, nv) in nodes_v.iter().enumerate() {
        let name = nv
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad(format!("node {i} has no name")))?
            .to_string();
        let op = nv
            .get("op")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad(format!("node {i} ('{name}') has no op")))?;
        let mut pairs = str_map(nv.get("attrs"), &name, "attrs")?;
        pairs.extend(str_map(nv.get("attr"), &name, "attr")?);
        pairs.extend(str_map(nv.get("param"), &name, "param")?);
        let (params, mut user) = split_attrs(&pairs);
        let inputs = read_inputs(nv, i, &name, &nodes)?;
        let op = if op == "null" {
            // a variable keeps every attribute as a user attribute
            for (k, v) in params.0 {
                user.insert(k, v);
            }
            None
        } else {
            Some(Arc::new(read_call(nv, i, &name, op, params, inputs.len())?))
        };
        nodes.push(Arc::new(Node {
            op,
            name,
            attrs: RwLock::new(user),
            inputs,
        }));
    }
    let heads_v = root
        .get("heads")
        .and_then(|v| v.as_array())
        .ok_or_else(|| bad("no 'heads' list".into()))?;
    let mut outputs = Vec::with_capacity(heads_v.len());
    for hv in heads_v {
        let (src, k) = entry_ref(hv, "a head")?;
        let node = nodes
            .get(src)
            .ok_or_else(|| bad(format!("head refers to node {src}, past the last node")))?;
        if k >= node.num_outputs() {
            return Err(bad(format!(
                "head reads output {k} of '{}', which has {} output(s)",
                node.name,
                node.num_outputs()
            )));
        }
        outputs.push(NodeEntry {
            node: node.clone(),
            index: k,
        });
    }
    Ok(Symbol { outputs })
}

/// The inputs of node `i`: entries of earlier nodes (a graph file lists its
/// nodes in topological order).
fn read_inputs(nv: &Value, i: usize, name: &str, nodes: &[Arc<Node>]) -> Result<Vec<NodeEntry>> {
    let empty = Vec::new();
    let ins_v = nv
        .get("inputs")
        .map(|v| {
            v.as_array()
                .ok_or_else(|| bad(format!("node '{name}': inputs must be a list")))
        })
        .transpose()?
        .unwrap_or(&empty);
    let mut inputs = Vec::with_capacity(ins_v.len());
    for iv in ins_v {
        let (src, k) = entry_ref(iv, &format!("node '{name}': input"))?;
        if src >= i {
            return Err(bad(format!(
                "node {i} ('{name}') reads node {src}, which does not come before it \
                 (a cycle or a forward reference: nodes must be in topological order)"
            )));
        }
        let s = &nodes[src];
        if k >= s.num_outputs() {
            return Err(bad(format!(
                "node '{name}' reads output {k} of '{}', which has {} output(s)",
                s.name,
                s.num_outputs()
            )));
        }
        inputs.push(NodeEntry {
            node: s.clone(),
            index: k,
        });
    }
    Ok(inputs)
}

/// The operator call of node `i`: a registered operator with its
/// parameters, or a `_CachedOp` with its subgraph; it must take `n_in` inputs.
fn read_call(
    nv: &Value,
    i: usize,
    name: &str,
    op: &str,
    params: crate::ops::Attrs,
    n_in: usize,
) -> Result<OpCall> {
    if op == "_CachedOp" {
        let inner = nv
            .get("subgraphs")
            .and_then(|v| v.as_array())
            .and_then(|v| v.first())
            .ok_or_else(|| bad(format!("node '{name}' (_CachedOp) has no subgraph")))?;
        let inner = from_value(inner)
            .map_err(|e| bad(format!("in the subgraph of '{name}': {}", e.message())))?;
        let call = super::subgraph::subgraph_call(inner);
        let want = call.def.n_inputs(&call);
        if want != n_in {
            return Err(bad(format!(
                "node '{name}' (_CachedOp) has {n_in} input(s); its subgraph takes {want}"
            )));
        }
        return Ok(call);
    }
    let def = registry::lookup(op).map_err(|_| {
        bad(format!(
            "node {i} ('{name}') uses operator '{op}', which oxnet does not have"
        ))
    })?;
    let call = registry::parse_call(def, params)
        .map_err(|e| bad(format!("node '{name}': {}", e.message())))?;
    let want = def.n_inputs(&call);
    if want != n_in {
        return Err(bad(format!(
            "node '{name}' ({op}) has {n_in} input(s); the operator takes {want} ({})",
            def.input_names(&call).join(", ")
        )));
    }
    Ok(call)
}
