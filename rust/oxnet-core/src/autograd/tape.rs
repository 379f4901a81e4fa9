//! Recording and backward. While recording, every operator invoked on an
//! array that takes part in differentiation appends a node to the tape (the
//! node hangs off its outputs: no global list, so unused graphs are freed
//! with their arrays). Backward walks the nodes from the heads in reverse
//! topological order and runs each node's gradient rule, which is made of
//! registered operators (so it can itself be recorded: `create_graph`).
use super::ImperativeBuilder;
use crate::base::{Context, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::registry::{self, Entry, OpCall};
use crate::ops::Attrs;
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

pub fn is_recording() -> bool {
    RECORDING.with(|c| c.get())
}
pub fn is_training() -> bool {
    TRAINING.with(|c| c.get())
}
/// Returns the previous state.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}
/// Returns the previous state.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradReq {
    Null,
    Write,
    Add,
}

impl GradReq {
    pub fn parse(s: &str) -> Result<GradReq> {
        match s {
            "null" => Ok(GradReq::Null),
            "write" | "inplace" => Ok(GradReq::Write),
            "add" => Ok(GradReq::Add),
            _ => Err(Error::Param(format!(
                "grad_req must be 'write', 'add' or 'null', got '{s}'"
            ))),
        }
    }
}

impl AgInfo {
    /// MXNet's `_fresh_grad` of the array carrying this entry.
    pub fn fresh_grad(&self) -> bool {
        match self {
            AgInfo::Variable(v) => v.fresh_grad(),
            AgInfo::Output { node, .. } => node.fresh.load(Ordering::Acquire),
        }
    }
    pub fn set_fresh_grad(&self, on: bool) {
        match self {
            AgInfo::Variable(v) => v.set_fresh_grad(on),
            AgInfo::Output { node, .. } => node.fresh.store(on, Ordering::Release),
        }
    }
}

/// A variable: the leaf whose gradient backward writes.
pub struct VarGrad {
    pub grad: Mutex<Option<NDArray>>,
    pub req: GradReq,
    /// Set by `backward` when it writes (or accumulates into) this
    /// variable's gradient; cleared by the user (Gluon's Trainer) after
    /// consuming it. MXNet's `AGInfo::fresh_out_grad`.
    pub fresh: AtomicBool,
}

impl VarGrad {
    /// Whether backward has written the gradient since the flag was last cleared.
    pub fn fresh_grad(&self) -> bool {
        self.fresh.load(Ordering::Acquire)
    }
    pub fn set_fresh_grad(&self, on: bool) {
        self.fresh.store(on, Ordering::Release);
    }
}

#[derive(Clone)]
pub enum AgInfo {
    Variable(Arc<VarGrad>),
    Output { node: Arc<TapeNode>, index: usize },
}

pub type CustomBackward = Box<dyn Fn(&[NDArray]) -> Result<Vec<Option<NDArray>>> + Send + Sync>;

pub enum Backward {
    Op(Arc<OpCall>),
    Custom(CustomBackward),
}

struct Saved {
    inputs: Vec<NDArray>,
    outputs: Vec<NDArray>,
}

pub struct TapeNode {
    backward: Backward,
    input_ag: Vec<Option<AgInfo>>,
    saved: Mutex<Option<Saved>>,
    out_meta: Vec<(Shape, DType, Context)>,
    pub name: String,
    /// `_fresh_grad` of the node's outputs (MXNet keeps the flag on every
    /// autograd entry; backward never sets it on recorded outputs).
    pub fresh: AtomicBool,
}

fn strip(a: &NDArray) -> NDArray {
    let mut b = a.clone();
    b.ag = None;
    b
}

fn record(backward: Backward, name: String, inputs: &[NDArray], outputs: &mut [NDArray]) {
    let node = Arc::new(TapeNode {
        backward,
        input_ag: inputs.iter().map(|a| a.ag.clone()).collect(),
        saved: Mutex::new(Some(Saved {
            inputs: inputs.to_vec(),
            outputs: outputs.iter().map(strip).collect(),
        })),
        out_meta: outputs
            .iter()
            .map(|a| (a.shape.clone(), a.dtype(), a.ctx()))
            .collect(),
        name,
        fresh: AtomicBool::new(false),
    });
    for (i, o) in outputs.iter_mut().enumerate() {
        o.ag = Some(AgInfo::Output {
            node: node.clone(),
            index: i,
        });
    }
}

/// Called by `registry::invoke` after pushing an operator.
pub fn record_op(call: &Arc<OpCall>, inputs: &[NDArray], outputs: &mut [NDArray]) {
    if !is_recording() || inputs.iter().all(|a| a.ag.is_none()) {
        return;
    }
    if call.def.grad.is_none() {
        // Recorded anyway: backward through it raises a clear error.
    }
    record(
        Backward::Op(call.clone()),
        call.def.name.to_string(),
        inputs,
        outputs,
    );
}

/// Record a node whose gradient is computed by `backward` (autograd.Function).
pub fn record_custom(
    name: &str,
    backward: CustomBackward,
    inputs: &[NDArray],
    outputs: &mut [NDArray],
) {
    if inputs.iter().all(|a| a.ag.is_none()) {
        return;
    }
    record(
        Backward::Custom(backward),
        name.to_string(),
        inputs,
        outputs,
    );
}

pub fn mark_variable(a: &mut NDArray, grad: Option<NDArray>, req: GradReq) -> Result<()> {
    let grad = match grad {
        Some(g) => g,
        None => {
            let g = NDArray::empty(&a.shape, a.dtype(), a.ctx())?;
            registry::call_into(
                "_zeros",
                &[
                    ("shape", &crate::base::fmt_shape(&a.shape)),
                    ("dtype", a.dtype().name()),
                ],
                &[],
                std::slice::from_ref(&g),
            )?;
            g
        }
    };
    a.ag = Some(AgInfo::Variable(Arc::new(VarGrad {
        grad: Mutex::new(Some(grad)),
        req,
        fresh: AtomicBool::new(false),
    })));
    Ok(())
}

fn key(node: &Arc<TapeNode>) -> usize {
    Arc::as_ptr(node) as usize
}

fn add(a: NDArray, b: NDArray) -> Result<NDArray> {
    Ok(registry::call("elemwise_add", &[], &[a, b])?.remove(0))
}

/// Restores the recording/training state on drop.
struct ModeGuard(bool, bool);
impl Drop for ModeGuard {
    fn drop(&mut self) {
        set_recording(self.0);
        set_training(self.1);
    }
}

/// Backpropagate from `heads`. With `variables`, return their gradients
/// (autograd.grad); otherwise write each variable's gradient per its
/// grad_req (autograd.backward) and return an empty list.
pub fn backward(
    heads: &[NDArray],
    head_grads: &[Option<NDArray>],
    variables: Option<&[NDArray]>,
    retain_graph: bool,
    create_graph: bool,
    train: bool,
) -> Result<Vec<Option<NDArray>>> {
    let _guard = ModeGuard(set_recording(create_graph), set_training(train));
    let mut grads: HashMap<(usize, usize), NDArray> = HashMap::new();
    let mut var_grads: Vec<(Arc<VarGrad>, NDArray)> = Vec::new();
    let mut roots: Vec<Arc<TapeNode>> = Vec::new();

    fn add_var(
        var_grads: &mut Vec<(Arc<VarGrad>, NDArray)>,
        v: &Arc<VarGrad>,
        g: NDArray,
    ) -> Result<()> {
        if let Some(e) = var_grads.iter_mut().find(|(w, _)| Arc::ptr_eq(w, v)) {
            e.1 = add(e.1.clone(), g)?;
        } else {
            var_grads.push((v.clone(), g));
        }
        Ok(())
    }

    for (i, h) in heads.iter().enumerate() {
        let hg = match head_grads.get(i).cloned().flatten() {
            Some(g) => {
                if g.shape != h.shape {
                    return Err(Error::Shape(format!(
                        "backward: head_grads[{i}] has shape {}, head has shape {}",
                        crate::base::fmt_shape(&g.shape),
                        crate::base::fmt_shape(&h.shape)
                    )));
                }
                g
            }
            None => registry::call("ones_like", &[], &[strip(h)])?.remove(0),
        };
        match &h.ag {
            Some(AgInfo::Output { node, index }) => {
                let k = (key(node), *index);
                let g = match grads.remove(&k) {
                    Some(prev) => add(prev, hg)?,
                    None => hg,
                };
                grads.insert(k, g);
                roots.push(node.clone());
            }
            Some(AgInfo::Variable(v)) => add_var(&mut var_grads, v, hg)?,
            None => {
                return Err(Error::Param(
                    "backward: a head was not computed while recording from arrays that require a gradient \
                     (use attach_grad() and autograd.record())"
                        .into(),
                ))
            }
        }
    }

    // Reverse topological order by iterative post-order DFS.
    let mut order: Vec<Arc<TapeNode>> = Vec::new();
    let mut seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for r in roots {
        if !seen.insert(key(&r)) {
            continue;
        }
        let mut stack: Vec<(Arc<TapeNode>, usize)> = vec![(r, 0)];
        while let Some((n, i)) = stack.pop() {
            if i < n.input_ag.len() {
                stack.push((n.clone(), i + 1));
                if let Some(AgInfo::Output { node, .. }) = &n.input_ag[i] {
                    if seen.insert(key(node)) {
                        stack.push((node.clone(), 0));
                    }
                }
            } else {
                order.push(n);
            }
        }
    }

    // Variables the graph reaches: with grad_req 'write' each gets a result,
    // zeros where no gradient flows to it (ceil, sign, BlockGrad ...), as in
    // MXNet.
    let mut reached: Vec<Arc<VarGrad>> = Vec::new();
    for node in &order {
        for a in node.input_ag.iter().flatten() {
            if let AgInfo::Variable(v) = a {
                if !reached.iter().any(|w| Arc::ptr_eq(w, v)) {
                    reached.push(v.clone());
                }
            }
        }
    }

    for node in order.iter().rev() {
        let k = key(node);
        let n_out = node.out_meta.len();
        let have: Vec<Option<NDArray>> = (0..n_out).map(|i| grads.remove(&(k, i))).collect();
        if have.iter().all(|g| g.is_none()) {
            continue;
        }
        let mut ograds = Vec::with_capacity(n_out);
        for (i, g) in have.into_iter().enumerate() {
            ograds.push(match g {
                Some(g) => g,
                None => {
                    let (s, d, c) = &node.out_meta[i];
                    let z = NDArray::empty(s, *d, *c)?;
                    registry::call_into(
                        "_zeros",
                        &[("shape", &crate::base::fmt_shape(s)), ("dtype", d.name())],
                        &[],
                        std::slice::from_ref(&z),
                    )?;
                    z
                }
            });
        }
        let saved_guard = node.saved.lock();
        let saved = saved_guard.as_ref().ok_or_else(|| {
            Error::Param(format!(
                "backward: the graph through '{}' was freed by an earlier backward; pass retain_graph=True to \
                 backpropagate through it again",
                node.name
            ))
        })?;
        let in_grads: Vec<Option<NDArray>> = match &node.backward {
            Backward::Op(call) => {
                let gf = call.def.grad.ok_or_else(|| {
                    Error::Param(format!("{}: operator has no gradient", call.def.name))
                })?;
                // inputs that are neither recorded results nor variables
                // taking a gradient get none (conv skips its data gradient)
                let need = node
                    .input_ag
                    .iter()
                    .map(|a| match a {
                        Some(AgInfo::Output { .. }) => true,
                        Some(AgInfo::Variable(v)) => v.req != GradReq::Null,
                        None => false,
                    })
                    .collect();
                let mut b = ImperativeBuilder {
                    vals: Vec::new(),
                    need,
                };
                let ie: Vec<Entry> = saved.inputs.iter().map(|a| b.push(a.clone())).collect();
                let oe: Vec<Entry> = saved
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let mut a = a.clone();
                        if create_graph {
                            a.ag = Some(AgInfo::Output {
                                node: node.clone(),
                                index: i,
                            });
                        }
                        b.push(a)
                    })
                    .collect();
                let ge: Vec<Entry> = ograds.iter().map(|a| b.push(a.clone())).collect();
                let res = gf(call, &mut b, &ie, &oe, &ge).map_err(|e| e.in_op(call.def.name))?;
                res.into_iter()
                    .map(|e| e.map(|e| b.vals[e].clone()))
                    .collect()
            }
            Backward::Custom(f) => f(&ograds)?,
        };
        drop(saved_guard);
        if !retain_graph {
            *node.saved.lock() = None;
        }
        for (j, g) in in_grads.into_iter().enumerate() {
            let Some(g) = g else { continue };
            match node.input_ag.get(j).cloned().flatten() {
                Some(AgInfo::Output { node: src, index }) => {
                    let kk = (key(&src), index);
                    let g = match grads.remove(&kk) {
                        Some(prev) => add(prev, g)?,
                        None => g,
                    };
                    grads.insert(kk, g);
                }
                Some(AgInfo::Variable(v)) => add_var(&mut var_grads, &v, g)?,
                None => {}
            }
        }
    }

    if let Some(vars) = variables {
        let mut out = Vec::with_capacity(vars.len());
        for v in vars {
            match &v.ag {
                Some(AgInfo::Variable(vg)) => out.push(
                    var_grads
                        .iter()
                        .find(|(w, _)| Arc::ptr_eq(w, vg))
                        .map(|(_, g)| g.clone()),
                ),
                _ => return Err(Error::Param(
                    "grad: every variable must have a gradient buffer (call attach_grad() first)"
                        .into(),
                )),
            }
        }
        return Ok(out);
    }
    for v in reached {
        // MXNet marks every variable of the graph that takes a gradient,
        // including those written with zeros.
        if v.req != GradReq::Null {
            v.set_fresh_grad(true);
        }
        if v.req != GradReq::Write || var_grads.iter().any(|(w, _)| Arc::ptr_eq(w, &v)) {
            continue;
        }
        let dst = v.grad.lock().clone();
        if let Some(dst) = dst {
            registry::call_into(
                "_zeros",
                &[
                    ("shape", &crate::base::fmt_shape(&dst.shape)),
                    ("dtype", dst.dtype().name()),
                ],
                &[],
                &[strip(&dst)],
            )?;
        }
    }
    for (v, g) in var_grads {
        if v.req != GradReq::Null {
            v.set_fresh_grad(true);
        }
        let mut slot = v.grad.lock();
        match v.req {
            GradReq::Null => {}
            GradReq::Write | GradReq::Add => {
                let dst = match slot.as_ref() {
                    Some(d) => d.clone(),
                    None => {
                        *slot = Some(g);
                        continue;
                    }
                };
                let mut res = if v.req == GradReq::Write {
                    if g.dtype() != dst.dtype() {
                        registry::call_into(
                            "Cast",
                            &[("dtype", dst.dtype().name())],
                            std::slice::from_ref(&g),
                            &[strip(&dst)],
                        )?
                    } else {
                        registry::call_into("_copy", &[], std::slice::from_ref(&g), &[strip(&dst)])?
                    }
                } else {
                    registry::call_into(
                        "elemwise_add",
                        &[],
                        &[strip(&dst), g.clone()],
                        &[strip(&dst)],
                    )?
                };
                let mut newd = res.remove(0);
                newd.ag = if create_graph { g.ag.clone() } else { None };
                *slot = Some(newd);
            }
        }
    }
    Ok(Vec::new())
}

/// Attributes in the form the builder takes.
pub fn attrs_of(pairs: &[(&str, String)]) -> Attrs {
    Attrs(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

/// The recorded computation that produced `heads`, as a graph (MXNet's
/// `autograd.get_symbol`): one node per recorded operator; the variables
/// (marked arrays, and inputs that were not recorded) become graph
/// variables named `var0`, `var1`, ... in the order they are met.
pub fn to_symbol(heads: &[NDArray]) -> Result<crate::graph::Symbol> {
    use crate::graph::{Node as GNode, NodeEntry, Symbol};
    use std::collections::BTreeMap;
    struct Conv {
        nodes: HashMap<usize, Arc<GNode>>,
        vars: HashMap<usize, Arc<GNode>>,
        n_vars: usize,
        counts: HashMap<String, usize>,
    }
    impl Conv {
        fn var(&mut self, key: Option<usize>) -> Arc<GNode> {
            if let Some(k) = key {
                if let Some(v) = self.vars.get(&k) {
                    return v.clone();
                }
            }
            let v = GNode::variable(&format!("var{}", self.n_vars), BTreeMap::new());
            self.n_vars += 1;
            if let Some(k) = key {
                self.vars.insert(k, v.clone());
            }
            v
        }
        fn entry(&mut self, ag: &Option<AgInfo>) -> Result<NodeEntry> {
            match ag {
                Some(AgInfo::Output { node, index }) => Ok(NodeEntry {
                    node: self.node(node)?,
                    index: *index,
                }),
                Some(AgInfo::Variable(v)) => Ok(NodeEntry {
                    node: self.var(Some(Arc::as_ptr(v) as usize)),
                    index: 0,
                }),
                None => Ok(NodeEntry {
                    node: self.var(None),
                    index: 0,
                }),
            }
        }
        fn node(&mut self, t: &Arc<TapeNode>) -> Result<Arc<GNode>> {
            if let Some(n) = self.nodes.get(&key(t)) {
                return Ok(n.clone());
            }
            let Backward::Op(call) = &t.backward else {
                return Err(Error::Param(format!(
                    "get_symbol: '{}' was recorded as a Python function (autograd.Function or a \
                     custom operator) and has no symbolic form",
                    t.name
                )));
            };
            let inputs = t
                .input_ag
                .iter()
                .map(|a| self.entry(a))
                .collect::<Result<Vec<_>>>()?;
            let hint = call.def.name.to_lowercase();
            let c = self.counts.entry(hint.clone()).or_insert(0);
            let name = format!("{hint}{c}");
            *c += 1;
            let n = Arc::new(GNode {
                op: Some(call.clone()),
                name,
                attrs: parking_lot::RwLock::new(BTreeMap::new()),
                inputs,
            });
            self.nodes.insert(key(t), n.clone());
            Ok(n)
        }
    }
    let mut conv = Conv {
        nodes: HashMap::new(),
        vars: HashMap::new(),
        n_vars: 0,
        counts: HashMap::new(),
    };
    let mut outputs = Vec::with_capacity(heads.len());
    for h in heads {
        if h.ag.is_none() {
            return Err(Error::Param(
                "get_symbol: the array was not computed under autograd.record() from arrays \
                 marked with attach_grad()"
                    .into(),
            ));
        }
        outputs.push(conv.entry(&h.ag)?);
    }
    Ok(Symbol { outputs })
}
