//! Runs a graph on arrays. A [`Plan`] is made once per bind (or per input
//! signature of a cached op): the gradient pass, shape/dtype inference and
//! memory planning. A [`State`] holds the arrays of one run; each operator
//! node is pushed to the engine with its reads and writes like any
//! imperative call, so independent branches run in parallel and the
//! Python thread returns at once.
use crate::autograd::GradReq;
use crate::base::{fmt_shape, Context, DType, Shape};
use crate::error::{Error, Result};
use crate::graph::{gradient::gradient, infer, IndexedGraph, Node, NodeEntry, Symbol};
use crate::ndarray::NDArray;
use crate::ops::registry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod cached;
mod fuse;
mod plan_memory;
pub use cached::CachedOp;
pub use plan_memory::MemoryPlan;

/// What a variable of the planned graph is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Arg(usize),
    Aux(usize),
    HeadGrad(usize),
}

/// How one argument's gradient reaches its array.
#[derive(Clone)]
pub enum GradOut {
    /// No gradient is wanted.
    Null,
    /// The argument does not influence the outputs: the gradient is zero.
    Zero,
    /// The gradient is this entry of the planned graph.
    Entry(usize),
}

pub struct Plan {
    pub graph: IndexedGraph,
    pub num_outputs: usize,
    pub ctx: Context,
    /// Operator nodes of the forward pass and of the backward pass, in order.
    pub fwd_nodes: Vec<usize>,
    pub bwd_nodes: Vec<usize>,
    pub roles: HashMap<usize, Role>,
    pub shapes: Vec<Shape>,
    pub dtypes: Vec<DType>,
    pub grad_out: Vec<GradOut>,
    pub grad_req: Vec<GradReq>,
    pub memory: MemoryPlan,
    pub arg_names: Vec<String>,
    pub aux_names: Vec<String>,
    /// Calls replaced at plan time (creation ops whose shape was deferred,
    /// fused nodes).
    pub calls: HashMap<usize, Arc<crate::ops::registry::OpCall>>,
    /// Per node, the entries it reads (a fused node reads its tree's inputs).
    pub node_inputs: Vec<Vec<(usize, usize)>>,
    /// The forward graph that runs (subgraphs inlined, common expressions
    /// eliminated): MXNet's `get_optimized_symbol`.
    pub optimized: Symbol,
}

/// The arrays of one run: one per entry of the planned graph.
pub struct State {
    pub entries: Vec<Option<NDArray>>,
}

fn known_or_err<T: Clone>(v: &[Option<T>], g: &IndexedGraph, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(v.len());
    for (n, _) in g.nodes.iter().enumerate() {
        for k in 0..g.nodes[n].num_outputs() {
            let e = g.entry(n, k);
            match &v[e] {
                Some(x) => out.push(x.clone()),
                None => {
                    let node = &g.nodes[n];
                    let what_node = if node.is_variable() {
                        format!("argument '{}'", node.name)
                    } else {
                        format!(
                            "output {k} of {}(name={})",
                            node.def().map(|d| d.name).unwrap_or("?"),
                            node.name
                        )
                    };
                    return Err(if what == "shape" {
                        Error::Shape(format!(
                            "cannot infer the shape of {what_node}: give the shapes of more inputs"
                        ))
                    } else {
                        Error::DType(format!("cannot infer the dtype of {what_node}"))
                    });
                }
            }
        }
    }
    Ok(out)
}

impl Plan {
    /// Plans `sym` for arguments and auxiliary states of the given shapes
    /// and dtypes (in `list_arguments` / `list_auxiliary_states` order) and
    /// a gradient request per argument.
    pub fn new(
        sym: &Symbol,
        ctx: Context,
        arg_shapes: &[Shape],
        arg_types: &[DType],
        aux_shapes: &[Shape],
        aux_types: &[DType],
        grad_req: &[GradReq],
    ) -> Result<Plan> {
        let og = sym.indexed();
        check_unique(&og)?;
        // the graph that runs: subgraph nodes inlined, common expressions once
        let mut flat = sym.inline_subgraphs()?;
        if crate::graph::cse::enabled() {
            flat = crate::graph::cse::eliminate(&flat)?;
        }
        let sym = &flat;
        let fg = sym.indexed();
        // arguments keep the bound symbol's order (names are unique)
        let by_name: HashMap<&str, usize> = fg
            .input_nodes
            .iter()
            .map(|&n| (fg.nodes[n].name.as_str(), n))
            .collect();
        let args: Vec<usize> = og
            .arg_nodes()
            .iter()
            .map(|&n| by_name[og.nodes[n].name.as_str()])
            .collect();
        let auxs: Vec<usize> = og
            .aux_nodes()
            .iter()
            .map(|&n| by_name[og.nodes[n].name.as_str()])
            .collect();
        check_len("arguments", args.len(), arg_shapes.len(), &fg, &args)?;
        check_len("auxiliary states", auxs.len(), aux_shapes.len(), &fg, &auxs)?;
        if grad_req.len() != args.len() {
            return Err(Error::Param(format!(
                "bind: {} grad_req values for {} arguments",
                grad_req.len(),
                args.len()
            )));
        }
        let wrt: Vec<usize> = (0..args.len())
            .filter(|&i| grad_req[i] != GradReq::Null)
            .map(|i| args[i])
            .collect();
        let mut heads = sym.outputs.clone();
        let mut head_grad_nodes = Vec::new();
        let mut grads = Vec::new();
        if !wrt.is_empty() {
            let hg: Vec<NodeEntry> = sym
                .outputs
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let node =
                        Node::variable(&format!("{}_head_grad{i}", e.node.name), BTreeMap::new());
                    head_grad_nodes.push(node.clone());
                    NodeEntry { node, index: 0 }
                })
                .collect();
            grads = gradient(&fg, &hg, &wrt)?;
            heads.extend(grads.iter().flatten().cloned());
        }
        let g = IndexedGraph::new(&heads);
        let mut roles = HashMap::new();
        let find = |n: &Arc<Node>| g.node_of(n);
        for (i, &a) in args.iter().enumerate() {
            if let Some(j) = find(&fg.nodes[a]) {
                roles.insert(j, Role::Arg(i));
            }
        }
        for (i, &a) in auxs.iter().enumerate() {
            if let Some(j) = find(&fg.nodes[a]) {
                roles.insert(j, Role::Aux(i));
            }
        }
        for (i, n) in head_grad_nodes.iter().enumerate() {
            if let Some(j) = find(n) {
                roles.insert(j, Role::HeadGrad(i));
            }
        }
        // shapes and dtypes: the forward graph first, for the head grads
        let given_s: Vec<(usize, Shape)> = args
            .iter()
            .zip(arg_shapes)
            .chain(auxs.iter().zip(aux_shapes))
            .map(|(&n, s)| (n, s.clone()))
            .collect();
        let given_t: Vec<(usize, DType)> = args
            .iter()
            .zip(arg_types)
            .chain(auxs.iter().zip(aux_types))
            .map(|(&n, t)| (n, *t))
            .collect();
        let fs = known_or_err(&infer::infer_shapes(&fg, &given_s, false)?, &fg, "shape")?;
        let ft = known_or_err(&infer::infer_types(&fg, &given_t)?, &fg, "dtype")?;
        let mut gs: Vec<(usize, Shape)> = Vec::new();
        let mut gt: Vec<(usize, DType)> = Vec::new();
        for (&j, role) in &roles {
            let (s, t) = match *role {
                Role::Arg(i) => (arg_shapes[i].clone(), arg_types[i]),
                Role::Aux(i) => (aux_shapes[i].clone(), aux_types[i]),
                Role::HeadGrad(i) => {
                    let (n, k) = fg.heads[i];
                    let e = fg.entry(n, k);
                    (fs[e].clone(), ft[e])
                }
            };
            gs.push((j, s));
            gt.push((j, t));
        }
        let shapes = known_or_err(&infer::infer_shapes(&g, &gs, false)?, &g, "shape")?;
        let dtypes = known_or_err(&infer::infer_types(&g, &gt)?, &g, "dtype")?;
        let fwd_set: std::collections::HashSet<usize> =
            fg.nodes.iter().filter_map(|n| find(n)).collect();
        let mut fwd_nodes = Vec::new();
        let mut bwd_nodes = Vec::new();
        for (i, n) in g.nodes.iter().enumerate() {
            if n.is_variable() {
                continue;
            }
            if fwd_set.contains(&i) {
                fwd_nodes.push(i);
            } else {
                bwd_nodes.push(i);
            }
        }
        let mut grad_out = Vec::with_capacity(args.len());
        let mut gi = grads.iter();
        for req in grad_req {
            if *req == GradReq::Null {
                grad_out.push(GradOut::Null);
                continue;
            }
            match gi.next().cloned().flatten() {
                None => grad_out.push(GradOut::Zero),
                Some(e) => {
                    let j = find(&e.node).expect("gradient entries are in the planned graph");
                    grad_out.push(GradOut::Entry(g.entry(j, e.index)));
                }
            }
        }
        let mut calls = HashMap::new();
        for &i in &fwd_nodes {
            let call = g.nodes[i].op.as_ref().expect("operator node");
            if infer::deferred_shape(call) {
                let mut attrs = call.attrs.clone();
                attrs.set("shape", fmt_shape(&shapes[g.entry(i, 0)]));
                calls.insert(i, Arc::new(registry::parse_call(call.def, attrs)?));
            }
        }
        let mut node_inputs = g.inputs.clone();
        if bwd_nodes.is_empty() && fuse::enabled() {
            let f = fuse::fuse(&g, &fwd_nodes, &shapes, &dtypes);
            fwd_nodes.retain(|i| !f.removed.contains(i));
            for (root, (call, ins)) in f.roots {
                calls.insert(root, call);
                node_inputs[root] = ins;
            }
        }
        let num_outputs = sym.outputs.len();
        let memory = MemoryPlan::new(&g, &node_inputs, &fwd_nodes, &bwd_nodes, &shapes, &dtypes);
        Ok(Plan {
            arg_names: args.iter().map(|&a| fg.nodes[a].name.clone()).collect(),
            aux_names: auxs.iter().map(|&a| fg.nodes[a].name.clone()).collect(),
            graph: g,
            num_outputs,
            ctx,
            fwd_nodes,
            bwd_nodes,
            roles,
            shapes,
            dtypes,
            grad_out,
            grad_req: grad_req.to_vec(),
            memory,
            calls,
            node_inputs,
            optimized: flat.clone(),
        })
    }

    /// Fresh arrays for one run: variables bound to `args` and `aux`, the
    /// rest planned (pooled storage is taken when the first kernel runs).
    pub fn new_state(&self, args: &[NDArray], aux: &[NDArray]) -> Result<State> {
        let g = &self.graph;
        let mut entries: Vec<Option<NDArray>> = vec![None; g.num_entries()];
        for (&j, role) in &self.roles {
            let e = g.entry(j, 0);
            match *role {
                Role::Arg(i) => {
                    entries[e] = Some(self.checked(&args[i], e, "argument", &self.arg_names[i])?)
                }
                Role::Aux(i) => {
                    entries[e] =
                        Some(self.checked(&aux[i], e, "auxiliary state", &self.aux_names[i])?)
                }
                Role::HeadGrad(_) => {}
            }
        }
        let slots = self.memory.allocate(self.ctx)?;
        for (e, slot) in self.memory.slot_of.iter().enumerate() {
            if let Some(s) = slot {
                entries[e] = Some(slots[*s].prefix_view(&self.shapes[e])?);
            }
        }
        for (e, v) in entries.iter_mut().enumerate() {
            if v.is_none() && self.memory.owned[e] {
                *v = Some(NDArray::empty(&self.shapes[e], self.dtypes[e], self.ctx)?);
            }
        }
        Ok(State { entries })
    }

    fn checked(&self, a: &NDArray, e: usize, what: &str, name: &str) -> Result<NDArray> {
        if a.shape != self.shapes[e] {
            return Err(Error::Shape(format!(
                "{what} '{name}' has shape {}, but the bound graph expects {}",
                fmt_shape(&a.shape),
                fmt_shape(&self.shapes[e])
            )));
        }
        if a.dtype() != self.dtypes[e] {
            return Err(Error::DType(format!(
                "{what} '{name}' has dtype {}, but the bound graph expects {}",
                a.dtype().name(),
                self.dtypes[e].name()
            )));
        }
        let mut b = a.clone();
        b.ag = None;
        Ok(b)
    }

    /// The arrays of the graph's outputs in a state.
    pub fn head_outputs(&self, st: &State) -> Vec<NDArray> {
        self.graph.heads[..self.num_outputs]
            .iter()
            .map(|&(n, k)| {
                st.entries[self.graph.entry(n, k)]
                    .clone()
                    .expect("heads are bound")
            })
            .collect()
    }

    fn run_nodes(&self, st: &State, nodes: &[usize], is_train: bool) -> Result<()> {
        let g = &self.graph;
        let prev_train = crate::autograd::set_training(is_train);
        let prev_rec = crate::autograd::set_recording(false);
        let res = (|| {
            for &i in nodes {
                let call = match self.calls.get(&i) {
                    Some(c) => c.clone(),
                    None => g.nodes[i].op.clone().expect("operator node"),
                };
                let ins: Vec<NDArray> = self.node_inputs[i]
                    .iter()
                    .map(|&(s, k)| entry_array(st, g, s, k))
                    .collect::<Result<_>>()?;
                let outs: Vec<NDArray> = (0..g.nodes[i].num_outputs())
                    .map(|k| entry_array(st, g, i, k))
                    .collect::<Result<_>>()?;
                registry::invoke(call, &ins, Some(outs), Some(self.ctx)).map_err(|e| {
                    let m = e.message();
                    let nm = &g.nodes[i].name;
                    if m.contains(&format!("name={nm}")) {
                        e
                    } else {
                        e.with_message(format!("node '{nm}': {m}"))
                    }
                })?;
            }
            Ok(())
        })();
        crate::autograd::set_training(prev_train);
        crate::autograd::set_recording(prev_rec);
        res
    }

    pub fn forward(&self, st: &State, is_train: bool) -> Result<()> {
        self.run_nodes(st, &self.fwd_nodes, is_train)
    }

    /// Runs the backward nodes with the given head gradients (None: ones,
    /// as MXNet seeds a loss output), and delivers each argument's
    /// gradient to `grads[i]` by its request.
    pub fn backward(
        &self,
        st: &mut State,
        head_grads: &[Option<NDArray>],
        grads: &[Option<NDArray>],
    ) -> Result<()> {
        self.run_backward(st, head_grads)?;
        self.deliver_grads(st, grads)
    }

    /// Binds the head gradients (None: ones) and runs the backward nodes.
    pub fn run_backward(&self, st: &mut State, head_grads: &[Option<NDArray>]) -> Result<()> {
        let g = &self.graph;
        for (&j, role) in &self.roles {
            if let Role::HeadGrad(i) = *role {
                let e = g.entry(j, 0);
                let hg = match head_grads.get(i).cloned().flatten() {
                    Some(a) => self.checked(&a, e, "head gradient", &format!("output {i}"))?,
                    None => {
                        let a = NDArray::empty(&self.shapes[e], self.dtypes[e], self.ctx)?;
                        registry::call_into(
                            "_ones",
                            &[
                                ("shape", &fmt_shape(&self.shapes[e])),
                                ("dtype", self.dtypes[e].name()),
                            ],
                            &[],
                            std::slice::from_ref(&a),
                        )?;
                        a
                    }
                };
                st.entries[e] = Some(hg);
            }
        }
        self.run_nodes(st, &self.bwd_nodes, true)
    }

    /// Each argument's gradient entry, where it has one.
    pub fn grad_entries(&self, st: &State) -> Vec<Option<NDArray>> {
        self.grad_out
            .iter()
            .map(|o| match o {
                GradOut::Entry(e) => st.entries[*e].clone(),
                _ => None,
            })
            .collect()
    }

    /// Delivers each argument's gradient to `grads[i]` by its request.
    pub fn deliver_grads(&self, st: &State, grads: &[Option<NDArray>]) -> Result<()> {
        for (i, out) in self.grad_out.iter().enumerate() {
            let Some(dst) = grads.get(i).cloned().flatten() else {
                continue;
            };
            let mut dst = dst;
            dst.ag = None;
            match (out, self.grad_req[i]) {
                (GradOut::Null, _) | (_, GradReq::Null) => {}
                (GradOut::Zero, GradReq::Write) => {
                    registry::call_into(
                        "zeros_like",
                        &[],
                        std::slice::from_ref(&dst),
                        std::slice::from_ref(&dst),
                    )?;
                }
                (GradOut::Zero, _) => {}
                (GradOut::Entry(e), req) => {
                    let src = st.entries[*e].clone().expect("gradient entries are bound");
                    if src.shape != dst.shape {
                        return Err(Error::Shape(format!(
                            "the gradient array of argument '{}' has shape {}, the gradient has {}",
                            self.arg_names[i],
                            fmt_shape(&dst.shape),
                            fmt_shape(&src.shape)
                        )));
                    }
                    if req == GradReq::Add {
                        registry::call_into(
                            "elemwise_add",
                            &[],
                            &[dst.clone(), src],
                            std::slice::from_ref(&dst),
                        )?;
                    } else if !src.same_chunk(&dst) {
                        registry::call_into("_copy", &[], &[src], std::slice::from_ref(&dst))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Binds the gradient entries with request `write` straight to the
    /// user's gradient arrays, so backward writes them without a copy.
    pub fn bind_grads_in_place(&self, st: &mut State, grads: &[Option<NDArray>]) {
        let mut done = std::collections::HashSet::new();
        for (i, out) in self.grad_out.iter().enumerate() {
            if let (GradOut::Entry(e), GradReq::Write, Some(Some(dst))) =
                (out, self.grad_req[i], grads.get(i))
            {
                let fits = dst.shape == self.shapes[*e] && dst.dtype() == self.dtypes[*e];
                if self.memory.rebindable(*e) && fits && done.insert(*e) {
                    let mut d = dst.clone();
                    d.ag = None;
                    st.entries[*e] = Some(d);
                }
            }
        }
    }
}

fn entry_array(st: &State, g: &IndexedGraph, n: usize, k: usize) -> Result<NDArray> {
    st.entries[g.entry(n, k)].clone().ok_or_else(|| {
        Error::Param(format!(
            "'{}' is not bound (a head gradient is missing: call backward with out_grads)",
            g.nodes[n].name
        ))
    })
}

/// Two different variables of one name cannot be bound by name (MXNet
/// refuses them too).
fn check_unique(g: &IndexedGraph) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for &n in &g.input_nodes {
        if !seen.insert(g.nodes[n].name.as_str()) {
            return Err(Error::Param(format!(
                "bind: the symbol has two different inputs named '{}'; give each input a unique name",
                g.nodes[n].name
            )));
        }
    }
    Ok(())
}

fn check_len(what: &str, want: usize, got: usize, g: &IndexedGraph, nodes: &[usize]) -> Result<()> {
    if want != got {
        let names: Vec<&str> = nodes.iter().map(|&n| g.nodes[n].name.as_str()).collect();
        return Err(Error::Param(format!(
            "bind: the symbol has {want} {what} ({}), got {got}",
            names.join(", ")
        )));
    }
    Ok(())
}
