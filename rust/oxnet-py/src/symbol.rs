//! Bindings of the graph IR (`oxnet.symbol`), the bound executor and the
//! cached op. Argument conversion only: the logic is in oxnet-core's
//! `graph` and `executor`.
use crate::errors::IntoPy;
use crate::ndarray::{ctx_of, wrap, NDArray};
use oxnet_core::autograd::GradReq;
use oxnet_core::executor::{CachedOp, Plan, State};
use oxnet_core::graph::{infer, json, split_attrs, IndexedGraph, Symbol};
use oxnet_core::{DType, Shape};
use parking_lot::Mutex;
use pyo3::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[pyclass(module = "oxnet._native", name = "SymbolHandle", frozen)]
pub struct SymbolHandle {
    pub inner: Symbol,
}

pub fn handle(inner: Symbol) -> SymbolHandle {
    SymbolHandle { inner }
}

type Inferred<T> = (Vec<Option<T>>, Vec<Option<T>>, Vec<Option<T>>);

/// Per (args, outputs, aux) the inferred values of a graph's entries.
fn split_inferred<T: Clone>(g: &IndexedGraph, v: &[Option<T>]) -> Inferred<T> {
    let args = g
        .arg_nodes()
        .iter()
        .map(|&n| v[g.entry(n, 0)].clone())
        .collect();
    let aux = g
        .aux_nodes()
        .iter()
        .map(|&n| v[g.entry(n, 0)].clone())
        .collect();
    let outs = g
        .heads
        .iter()
        .map(|&(n, k)| v[g.entry(n, k)].clone())
        .collect();
    (args, outs, aux)
}

fn given<T: Clone>(g: &IndexedGraph, known: &HashMap<String, T>) -> PyResult<Vec<(usize, T)>> {
    let mut out = Vec::new();
    for (name, v) in known {
        let n = g
            .input_nodes
            .iter()
            .copied()
            .find(|&n| &g.nodes[n].name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = g
                    .input_nodes
                    .iter()
                    .map(|&n| g.nodes[n].name.as_str())
                    .collect();
                oxnet_core::Error::Param(format!(
                    "'{name}' is not an input of the symbol (its inputs: {})",
                    names.join(", ")
                ))
            })
            .py_err()?;
        out.push((n, v.clone()));
    }
    Ok(out)
}

#[pymethods]
impl SymbolHandle {
    #[staticmethod]
    fn variable(name: &str, attrs: BTreeMap<String, String>) -> Self {
        handle(Symbol::variable(name, attrs))
    }

    /// An operator node; `attrs` holds its parameters and user attributes
    /// (told apart by name), `inputs` one symbol or None per input slot.
    #[staticmethod]
    fn create(
        op: &str,
        attrs: Vec<(String, String)>,
        inputs: Vec<Option<PyRef<'_, SymbolHandle>>>,
        name: &str,
    ) -> PyResult<Self> {
        let (params, user) = split_attrs(&attrs);
        let ins = inputs
            .into_iter()
            .map(|s| s.map(|s| s.inner.clone()))
            .collect();
        Symbol::create(op, params, user, ins, name)
            .py_err()
            .map(handle)
    }

    /// The input names an operator takes with these parameters.
    #[staticmethod]
    fn op_input_names(op: &str, attrs: Vec<(String, String)>) -> PyResult<Vec<String>> {
        let def = oxnet_core::ops::registry::lookup(op).py_err()?;
        let (params, _) = split_attrs(&attrs);
        let call = oxnet_core::ops::registry::parse_call(def, params).py_err()?;
        Ok(def.input_names(&call))
    }

    /// A subgraph node (`_CachedOp`) running `inner` over `inputs`.
    #[staticmethod]
    fn subgraph(
        inner: &SymbolHandle,
        inputs: Vec<PyRef<'_, SymbolHandle>>,
        name: &str,
    ) -> PyResult<Self> {
        let ins = inputs.iter().map(|s| s.inner.clone()).collect();
        Symbol::subgraph(inner.inner.clone(), ins, name)
            .py_err()
            .map(handle)
    }

    /// The graph with every subgraph node replaced by its inner graph.
    fn inline_subgraphs(&self) -> PyResult<Self> {
        self.inner.inline_subgraphs().py_err().map(handle)
    }

    #[staticmethod]
    fn group(parts: Vec<PyRef<'_, SymbolHandle>>) -> Self {
        let v: Vec<Symbol> = parts.iter().map(|p| p.inner.clone()).collect();
        handle(Symbol::group(&v))
    }

    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        json::from_json(text).py_err().map(handle)
    }

    fn tojson(&self) -> String {
        json::to_json(&self.inner)
    }

    fn num_outputs(&self) -> usize {
        self.inner.outputs.len()
    }

    fn name(&self) -> Option<String> {
        self.inner.name()
    }

    fn is_variable(&self) -> bool {
        self.inner.outputs.len() == 1 && self.inner.outputs[0].node.is_variable()
    }

    /// The operator of a single-output symbol (None for a variable or group).
    fn op_name(&self) -> Option<&'static str> {
        if self.inner.outputs.len() != 1 {
            return None;
        }
        self.inner.outputs[0].node.def().map(|d| d.name)
    }

    fn list_outputs(&self) -> Vec<String> {
        self.inner.list_outputs()
    }

    fn list_arguments(&self) -> Vec<String> {
        let g = self.inner.indexed();
        g.arg_nodes()
            .iter()
            .map(|&n| g.nodes[n].name.clone())
            .collect()
    }

    fn list_auxiliary_states(&self) -> Vec<String> {
        let g = self.inner.indexed();
        g.aux_nodes()
            .iter()
            .map(|&n| g.nodes[n].name.clone())
            .collect()
    }

    fn list_inputs(&self) -> Vec<String> {
        let g = self.inner.indexed();
        g.input_nodes
            .iter()
            .map(|&n| g.nodes[n].name.clone())
            .collect()
    }

    fn get_output(&self, i: usize) -> PyResult<Self> {
        let e = self.inner.outputs.get(i).cloned().ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "output index {i} is out of range: the symbol has {} output(s)",
                self.inner.outputs.len()
            ))
        })?;
        Ok(handle(Symbol { outputs: vec![e] }))
    }

    /// Per node of the graph (in `tojson` order), how many outputs a user
    /// sees (what `get_internals` lists for it).
    fn visible_output_counts(&self) -> Vec<usize> {
        self.inner
            .indexed()
            .nodes
            .iter()
            .map(|n| n.num_visible())
            .collect()
    }

    fn get_internals(&self) -> Self {
        handle(self.inner.internals())
    }

    fn get_children(&self) -> Option<Self> {
        self.inner.children().map(handle)
    }

    /// The attributes of the head node(s): operator parameters and user
    /// attributes, as MXNet's `list_attr`.
    fn list_attr(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if let Some(e) = self.inner.outputs.first() {
            if let Some(c) = &e.node.op {
                for (k, v) in &c.attrs.0 {
                    out.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in e.node.attrs.read().iter() {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// Every node's attributes by node name (nodes without any left out).
    fn attr_dict(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let g = self.inner.indexed();
        let mut out = BTreeMap::new();
        for n in &g.nodes {
            let mut d = BTreeMap::new();
            if let Some(c) = &n.op {
                for (k, v) in &c.attrs.0 {
                    d.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in n.attrs.read().iter() {
                d.insert(k.clone(), v.clone());
            }
            if !d.is_empty() {
                out.insert(n.name.clone(), d);
            }
        }
        out
    }

    /// Sets user attributes on the head node(s) in place.
    fn set_attr(&self, attrs: BTreeMap<String, String>) {
        for e in &self.inner.outputs {
            let mut a = e.node.attrs.write();
            for (k, v) in &attrs {
                a.insert(k.clone(), v.clone());
            }
        }
    }

    fn compose(&self, subs: HashMap<String, PyRef<'_, SymbolHandle>>) -> PyResult<Self> {
        let s: HashMap<String, Symbol> = subs
            .into_iter()
            .map(|(k, v)| (k, v.inner.clone()))
            .collect();
        self.inner.compose(&s).py_err().map(handle)
    }

    /// (argument shapes, output shapes, auxiliary shapes), None where unknown.
    fn infer_shape(&self, known: HashMap<String, Vec<usize>>) -> PyResult<Inferred<Shape>> {
        let g = self.inner.indexed();
        let v = infer::infer_shapes(&g, &given(&g, &known)?, true).py_err()?;
        Ok(split_inferred(&g, &v))
    }

    /// (argument dtypes, output dtypes, auxiliary dtypes) as names.
    fn infer_type(&self, known: HashMap<String, String>) -> PyResult<Inferred<String>> {
        let g = self.inner.indexed();
        let mut k = HashMap::new();
        for (n, t) in known {
            k.insert(n, DType::from_name(&t).py_err()?);
        }
        let v = infer::infer_types(&g, &given(&g, &k)?).py_err()?;
        let names: Vec<Option<String>> =
            v.iter().map(|t| t.map(|t| t.name().to_string())).collect();
        Ok(split_inferred(&g, &names))
    }
}

fn cores(v: &[PyRef<'_, NDArray>]) -> Vec<oxnet_core::NDArray> {
    v.iter().map(|a| a.inner.clone()).collect()
}

/// A symbol bound to arrays: one plan and one set of arrays reused by
/// every forward/backward.
#[pyclass(module = "oxnet._native", frozen)]
pub struct GraphExecutor {
    plan: Arc<Plan>,
    state: Mutex<State>,
    grads: Vec<Option<oxnet_core::NDArray>>,
}

#[pymethods]
impl GraphExecutor {
    #[new]
    #[pyo3(signature = (sym, ctx, args, grads, grad_req, aux))]
    fn new(
        sym: &SymbolHandle,
        ctx: (i32, i32),
        args: Vec<PyRef<'_, NDArray>>,
        grads: Vec<Option<PyRef<'_, NDArray>>>,
        grad_req: Vec<String>,
        aux: Vec<PyRef<'_, NDArray>>,
    ) -> PyResult<Self> {
        let ctx = ctx_of(Some(ctx))?.unwrap_or_default();
        let args = cores(&args);
        let aux = cores(&aux);
        let reqs = grad_req
            .iter()
            .map(|r| GradReq::parse(r))
            .collect::<Result<Vec<_>, _>>()
            .py_err()?;
        let grads: Vec<Option<oxnet_core::NDArray>> = grads
            .iter()
            .map(|g| g.as_ref().map(|g| g.inner.clone()))
            .collect();
        let shapes =
            |v: &[oxnet_core::NDArray]| v.iter().map(|a| a.shape.clone()).collect::<Vec<Shape>>();
        let types = |v: &[oxnet_core::NDArray]| v.iter().map(|a| a.dtype()).collect::<Vec<DType>>();
        let plan = Plan::new(
            &sym.inner,
            ctx,
            &shapes(&args),
            &types(&args),
            &shapes(&aux),
            &types(&aux),
            &reqs,
        )
        .py_err()?;
        let mut state = plan.new_state(&args, &aux).py_err()?;
        plan.bind_grads_in_place(&mut state, &grads);
        Ok(GraphExecutor {
            plan: Arc::new(plan),
            state: Mutex::new(state),
            grads,
        })
    }

    fn forward(&self, py: Python<'_>, is_train: bool) -> PyResult<Vec<Py<NDArray>>> {
        let st = self.state.lock();
        self.plan.forward(&st, is_train).py_err()?;
        self.plan
            .head_outputs(&st)
            .into_iter()
            .map(|a| wrap(py, a))
            .collect()
    }

    #[pyo3(signature = (head_grads))]
    fn backward(&self, head_grads: Vec<Option<PyRef<'_, NDArray>>>) -> PyResult<()> {
        let hg: Vec<Option<oxnet_core::NDArray>> = head_grads
            .iter()
            .map(|g| g.as_ref().map(|g| g.inner.clone()))
            .collect();
        let mut st = self.state.lock();
        self.plan.backward(&mut st, &hg, &self.grads).py_err()
    }

    fn outputs(&self, py: Python<'_>) -> PyResult<Vec<Py<NDArray>>> {
        let st = self.state.lock();
        self.plan
            .head_outputs(&st)
            .into_iter()
            .map(|a| wrap(py, a))
            .collect()
    }

    /// (bytes of the planned shared blocks, bytes the same entries would
    /// take each on its own).
    fn memory_bytes(&self) -> (usize, usize) {
        (
            self.plan.memory.planned_bytes,
            self.plan.memory.unplanned_bytes,
        )
    }

    /// Bytes of the arrays the executor owns: its outputs and gradient
    /// results, and the planned blocks of intermediate results.
    fn allocated_bytes(&self) -> usize {
        self.plan.memory.planned_bytes + self.plan.memory.owned_bytes
    }

    /// The forward graph that runs (subgraphs inlined, common expressions
    /// eliminated).
    fn optimized_symbol(&self) -> SymbolHandle {
        handle(self.plan.optimized.clone())
    }

    fn num_nodes(&self) -> (usize, usize) {
        (self.plan.fwd_nodes.len(), self.plan.bwd_nodes.len())
    }
}

/// MXNet's CachedOp over a symbol (what `hybridize()` runs).
#[pyclass(module = "oxnet._native", name = "CachedOpHandle", frozen)]
pub struct CachedOpHandle {
    inner: CachedOp,
}

#[pymethods]
impl CachedOpHandle {
    #[new]
    fn new(sym: &SymbolHandle, name: &str) -> Self {
        CachedOpHandle {
            inner: CachedOp::new(sym.inner.clone(), name),
        }
    }

    fn num_inputs(&self) -> usize {
        self.inner.num_inputs()
    }

    fn __call__(
        &self,
        py: Python<'_>,
        inputs: Vec<PyRef<'_, NDArray>>,
    ) -> PyResult<Vec<Py<NDArray>>> {
        let ins = cores(&inputs);
        drop(inputs);
        let outs = self.inner.call(&ins).py_err()?;
        outs.into_iter().map(|a| wrap(py, a)).collect()
    }
}

/// The recorded computation behind `heads` as a graph.
#[pyfunction]
fn autograd_symbol(heads: Vec<PyRef<'_, NDArray>>) -> PyResult<SymbolHandle> {
    let hs = cores(&heads);
    oxnet_core::autograd::to_symbol(&hs).py_err().map(handle)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(autograd_symbol, m)?)?;
    m.add_class::<SymbolHandle>()?;
    m.add_class::<GraphExecutor>()?;
    m.add_class::<CachedOpHandle>()?;
    Ok(())
}
