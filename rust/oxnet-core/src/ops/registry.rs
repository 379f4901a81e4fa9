//! The one operator registry. Every operator is a static `OpDef` in its
//! family file and is listed in `FAMILIES` below; `mx.nd.X`, autograd and
//! (later) `mx.sym.X` and the executor all resolve names here.
use super::attrs::Attrs;
use crate::base::{fmt_shape, Context, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::{Blob, NDArray};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

pub type Params = Box<dyn Any + Send + Sync>;

/// A parsed call of an operator: its definition, typed params and the raw
/// attributes they came from (kept for serialisation and gradients).
pub struct OpCall {
    pub def: &'static OpDef,
    pub params: Params,
    pub attrs: Attrs,
}

impl OpCall {
    pub fn p<T: 'static>(&self) -> &T {
        self.params
            .downcast_ref::<T>()
            .expect("operator params have the type its parse function produced")
    }
    pub fn name(&self) -> &'static str {
        self.def.name
    }
}

/// Unknown shapes/dtypes are `None`; inference fills what it can and may
/// fill inputs too (e.g. a weight shape from the data shape).
pub type InferShapeFn = fn(&OpCall, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()>;
pub type InferTypeFn = fn(&OpCall, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()>;

/// What a kernel may use besides its inputs and outputs.
pub struct KernelCtx {
    pub ctx: Context,
    /// True while autograd records in training mode (Dropout, BatchNorm).
    pub is_train: bool,
}

pub type CpuKernel = fn(&OpCall, &[Blob], &[Blob], &KernelCtx) -> Result<()>;

/// An opaque handle to a value while building a gradient: an NDArray in
/// imperative autograd, a graph entry in the symbolic gradient pass.
pub type Entry = usize;

/// Builds gradient computations out of registered operators, so backward
/// is itself made of ops (and can be differentiated again).
pub trait GradBuilder {
    fn op(&mut self, name: &str, attrs: &[(&str, String)], inputs: &[Entry]) -> Result<Vec<Entry>>;
    fn op1(&mut self, name: &str, attrs: &[(&str, String)], inputs: &[Entry]) -> Result<Entry> {
        Ok(self.op(name, attrs, inputs)?[0])
    }
    /// Whether anything uses the gradient of forward input `input` (MXNet's
    /// `req[i] != kNullOp`): a gradient function may skip work for the
    /// inputs that return false, and then returns `None` for them.
    fn needs_grad(&self, input: usize) -> bool {
        let _ = input;
        true
    }
}

/// Given the call, its inputs, outputs and the gradients of the outputs,
/// return one gradient (or None for "no gradient") per input.
pub type GradFn =
    fn(&OpCall, &mut dyn GradBuilder, &[Entry], &[Entry], &[Entry]) -> Result<Vec<Option<Entry>>>;

/// Extra engine resources an operator needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// The per-context random generator (its engine var orders random ops).
    Rng,
}

pub struct OpDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub doc: &'static str,
    /// Input names; for variadic operators the single entry is a prefix and
    /// `num_inputs` decides the count.
    pub inputs: &'static [&'static str],
    pub num_inputs: Option<fn(&OpCall) -> usize>,
    pub num_outputs: fn(&OpCall) -> usize,
    /// How many of a call's outputs the user sees (MXNet's
    /// `FNumVisibleOutputs`); None: all of them. The kernel writes every
    /// output; the hidden ones (a dropout mask, a reserve space) follow the
    /// visible ones and reach the gradient function as outputs, so it can
    /// pass them to backward operators. `mx.nd.X` returns the visible ones.
    pub num_visible_outputs: Option<fn(&OpCall) -> usize>,
    pub parse: fn(&Attrs) -> Result<Params>,
    pub infer_shape: InferShapeFn,
    pub infer_type: InferTypeFn,
    pub cpu: Option<CpuKernel>,
    pub grad: Option<GradFn>,
    /// Inputs written in place (e.g. BatchNorm's moving statistics).
    pub mutates: &'static [usize],
    /// For operators whose mutated inputs depend on the call (the states of
    /// the variadic multi-tensor optimizer updates): replaces `mutates`.
    pub mutates_of: Option<fn(&OpCall) -> Vec<usize>>,
    /// For operators whose optional inputs are not a prefix of `inputs`
    /// (RNN's sequence_length follows state only without state_cell): the
    /// names of a call's inputs; replaces the prefix rule of `input_names`.
    pub inputs_of: Option<fn(&OpCall) -> Vec<&'static str>>,
    pub resources: &'static [Resource],
    /// How the operator computes on float32 blocks, for operators that are
    /// element-wise (the executor's fusion pass fuses chains of them).
    pub pointwise: Option<super::fused::Pointwise>,
}

impl OpDef {
    /// Every output of a call, hidden ones included.
    pub fn n_outputs(&self, call: &OpCall) -> usize {
        (self.num_outputs)(call)
    }
    /// The outputs of a call the user sees (the first ones).
    pub fn n_visible(&self, call: &OpCall) -> usize {
        let n = self.n_outputs(call);
        match self.num_visible_outputs {
            Some(f) => f(call).min(n),
            None => n,
        }
    }
    pub fn n_inputs(&self, call: &OpCall) -> usize {
        match self.num_inputs {
            Some(f) => f(call),
            None => self.inputs.len(),
        }
    }
    /// Variadic operators (Concat, add_n, ...) name one prefix in `inputs`;
    /// operators with optional inputs (FullyConnected's bias) list them all
    /// and `num_inputs` says how many of the first ones a call takes.
    pub fn is_variadic(&self) -> bool {
        self.num_inputs.is_some() && self.inputs.len() <= 1
    }
    /// The inputs a call writes in place.
    pub fn mutated(&self, call: &OpCall) -> std::borrow::Cow<'static, [usize]> {
        match self.mutates_of {
            Some(f) => std::borrow::Cow::Owned(f(call)),
            None => std::borrow::Cow::Borrowed(self.mutates),
        }
    }
    pub fn input_names(&self, call: &OpCall) -> Vec<String> {
        if let Some(f) = self.inputs_of {
            return f(call).into_iter().map(String::from).collect();
        }
        let n = self.n_inputs(call);
        let names = self.inputs;
        if self.is_variadic() {
            let prefix = names.first().copied().unwrap_or("arg");
            return (0..n).map(|i| format!("{prefix}{i}")).collect();
        }
        if n <= names.len() {
            return names[..n].iter().map(|s| s.to_string()).collect();
        }
        // A fixed head followed by a repeated last input (`_split_like`).
        let (head, last) = names.split_at(names.len() - 1);
        let mut v: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        v.extend((0..n - head.len()).map(|i| format!("{}{i}", last[0])));
        v
    }
}

pub const fn one_output(_: &OpCall) -> usize {
    1
}

pub fn no_params(_: &Attrs) -> Result<Params> {
    Ok(Box::new(()))
}

/// Default template: copy fields from this with `..OpDef::BASE`.
impl OpDef {
    pub const BASE: OpDef = OpDef {
        name: "",
        aliases: &[],
        doc: "",
        inputs: &["data"],
        num_inputs: None,
        num_outputs: one_output,
        num_visible_outputs: None,
        parse: no_params,
        infer_shape: infer_shape_same,
        infer_type: infer_type_same,
        cpu: None,
        grad: None,
        mutates: &[],
        mutates_of: None,
        inputs_of: None,
        resources: &[],
        pointwise: None,
    };
}

/// All inputs and outputs share one shape.
pub fn infer_shape_same(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let known = ins.iter().chain(outs.iter()).flatten().next().cloned();
    let Some(s) = known else { return Ok(()) };
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(s.clone()),
            Some(t) if *t != s => {
                return Err(Error::Shape(format!(
                    "{}: input {} ('{}') has shape {}, expected {} like the other inputs",
                    call.name(),
                    i,
                    call.def
                        .input_names(call)
                        .get(i)
                        .cloned()
                        .unwrap_or_default(),
                    fmt_shape(t),
                    fmt_shape(&s)
                )))
            }
            _ => {}
        }
    }
    for o in outs.iter_mut() {
        if o.is_none() {
            *o = Some(s.clone());
        }
    }
    Ok(())
}

/// All inputs and outputs share one dtype.
pub fn infer_type_same(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let known = ins.iter().chain(outs.iter()).flatten().next().copied();
    let Some(t) = known else { return Ok(()) };
    for (i, x) in ins.iter_mut().enumerate() {
        match x {
            None => *x = Some(t),
            Some(u) if *u != t => {
                return Err(Error::DType(format!(
                    "{}: input {} has dtype {}, expected {} like the other inputs",
                    call.name(),
                    i,
                    u.name(),
                    t.name()
                )))
            }
            _ => {}
        }
    }
    for o in outs.iter_mut() {
        if o.is_none() {
            *o = Some(t);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------

/// Every operator family, in one explicit list.
const FAMILIES: &[&[&OpDef]] = &[
    super::elemwise::OPS,
    super::storage_type::OPS,
    super::init::OPS,
    super::reduce::OPS,
    super::index::OPS,
    super::matrix::OPS,
    super::linalg::OPS,
    super::shape::OPS,
    super::random::OPS,
    super::sample::OPS,
    super::pdf::OPS,
    super::nn::OPS,
    super::norm::OPS,
    super::loss::OPS,
    super::sequence::OPS,
    super::rnn::OPS,
    super::optim::OPS,
    super::optim_multi::OPS,
    super::special::OPS,
    super::misc::OPS,
    super::optim_contrib::OPS,
    super::contrib::OPS,
    super::image::OPS,
    super::pool_v1::OPS,
];

struct Registry {
    by_name: HashMap<&'static str, &'static OpDef>,
    names: Vec<&'static str>,
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let mut by_name = HashMap::new();
        let mut names = Vec::new();
        for fam in FAMILIES {
            for d in fam.iter() {
                for n in std::iter::once(&d.name).chain(d.aliases.iter()) {
                    if by_name.insert(*n, *d).is_some() {
                        panic!("operator name {n} registered twice");
                    }
                    names.push(*n);
                }
            }
        }
        names.sort_unstable();
        Registry { by_name, names }
    })
}

pub fn lookup(name: &str) -> Result<&'static OpDef> {
    registry()
        .by_name
        .get(name)
        .copied()
        .ok_or_else(|| Error::Param(format!("operator '{name}' is not registered")))
}

/// Every registered name, aliases included, sorted.
pub fn all_names() -> &'static [&'static str] {
    &registry().names
}

/// Every operator definition once.
pub fn all_ops() -> Vec<&'static OpDef> {
    FAMILIES.iter().flat_map(|f| f.iter().copied()).collect()
}

pub fn parse_call(def: &'static OpDef, attrs: Attrs) -> Result<OpCall> {
    let params = guarded(def.name, "parsing its arguments", || (def.parse)(&attrs))
        .map_err(|e| e.in_op(def.name))?;
    Ok(OpCall { def, params, attrs })
}

/// Run a synchronous step of a call (parse, inference), turning a panic
/// (an arithmetic overflow on absurd sizes, a bug) into an error naming the
/// operator, so it never reaches Python as a PanicException.
fn guarded<T>(op: &str, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::error::catch_panic(f, |msg| {
        Error::Param(format!("{op}: failed while {what}: {msg}"))
    })
}

/// Every output must be addressable: its byte size may not exceed
/// `isize::MAX` (a shape like (2**40, 2**40) overflows the element count).
fn check_output_sizes(op: &str, shapes: &[Shape], types: &[DType]) -> Result<()> {
    for (i, (s, t)) in shapes.iter().zip(types).enumerate() {
        let bytes = s
            .iter()
            .try_fold(t.size(), |acc, &d| acc.checked_mul(d))
            .filter(|&b| b <= isize::MAX as usize);
        if bytes.is_none() {
            return Err(Error::Shape(format!(
                "{op}: output {i} of shape {} and dtype {} is too large to allocate",
                fmt_shape(s),
                t.name()
            )));
        }
    }
    Ok(())
}

/// Shape and type inference for an imperative call with known inputs.
pub fn infer(
    call: &OpCall,
    in_shapes: &[Shape],
    in_types: &[DType],
) -> Result<(Vec<Shape>, Vec<DType>)> {
    let n_out = call.def.n_outputs(call);
    let mut ins: Vec<Option<Shape>> = in_shapes.iter().cloned().map(Some).collect();
    let mut outs: Vec<Option<Shape>> = vec![None; n_out];
    guarded(call.name(), "inferring shapes", || {
        (call.def.infer_shape)(call, &mut ins, &mut outs)
    })
    .map_err(|e| e.in_op(call.name()))?;
    let mut tins: Vec<Option<DType>> = in_types.iter().copied().map(Some).collect();
    let mut touts: Vec<Option<DType>> = vec![None; n_out];
    guarded(call.name(), "inferring dtypes", || {
        (call.def.infer_type)(call, &mut tins, &mut touts)
    })
    .map_err(|e| e.in_op(call.name()))?;
    let shapes = outs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| {
                Error::Shape(format!(
                    "{}: could not infer the shape of output {i}",
                    call.name()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let types = touts
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.ok_or_else(|| {
                Error::DType(format!(
                    "{}: could not infer the dtype of output {i}",
                    call.name()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    check_output_sizes(call.name(), &shapes, &types)?;
    Ok((shapes, types))
}

/// The imperative call path: parse, infer synchronously (errors raise
/// here), create outputs, push the kernel to the engine and return at once.
/// Returns every output, hidden ones included (the first
/// `def.n_visible(call)` are the user's); `out` gives the visible outputs
/// or all of them.
pub fn invoke(
    call: Arc<OpCall>,
    inputs: &[NDArray],
    out: Option<Vec<NDArray>>,
    ctx: Option<Context>,
) -> Result<Vec<NDArray>> {
    let is_train = crate::autograd::is_training();
    let def = call.def;
    let _api = crate::profiler::ApiScope::new("MXImperativeInvoke", def.name);
    let n_in = def.n_inputs(&call);
    if inputs.len() != n_in {
        // a variadic count can be anything the caller typed: name the
        // inputs only when there are few of them
        let names = if def.is_variadic() && n_in > 8 {
            let prefix = def.inputs.first().copied().unwrap_or("arg");
            format!("{prefix}0 .. {prefix}{}", n_in - 1)
        } else {
            def.input_names(&call).join(", ")
        };
        return Err(Error::Param(format!(
            "{}: expected {} input(s) ({}), got {}",
            def.name,
            n_in,
            names,
            inputs.len()
        )));
    }
    let ctx = match inputs.first() {
        Some(a) => a.ctx(),
        None => ctx.unwrap_or_default(),
    };
    for (i, a) in inputs.iter().enumerate() {
        if a.ctx() != ctx {
            return Err(Error::Device(format!(
                "{}: input {i} is on {}, but the other inputs are on {ctx}",
                def.name,
                a.ctx()
            )));
        }
    }
    let in_shapes: Vec<Shape> = inputs.iter().map(|a| a.shape.clone()).collect();
    let in_types: Vec<DType> = inputs.iter().map(|a| a.dtype()).collect();
    let (shapes, types) = infer(&call, &in_shapes, &in_types)?;
    let n_vis = def.n_visible(&call);
    let outputs = match out {
        Some(mut o) => {
            // out= covers the visible outputs (or, from Rust, all of them)
            if o.len() != n_vis && o.len() != shapes.len() {
                return Err(Error::Param(format!(
                    "{}: out= has {} array(s), the operator produces {}",
                    def.name,
                    o.len(),
                    n_vis
                )));
            }
            let given = o.len();
            for (s, t) in shapes.iter().zip(&types).skip(given) {
                o.push(NDArray::empty(s, *t, ctx)?);
            }
            for (i, a) in o.iter().enumerate() {
                if a.shape != shapes[i] || a.dtype() != types[i] {
                    return Err(Error::Shape(format!(
                        "{}: out[{i}] has shape {} and dtype {}, the result has shape {} and dtype {}",
                        def.name,
                        fmt_shape(&a.shape),
                        a.dtype().name(),
                        fmt_shape(&shapes[i]),
                        types[i].name()
                    )));
                }
            }
            o
        }
        None => shapes
            .iter()
            .zip(&types)
            .map(|(s, t)| NDArray::empty(s, *t, ctx))
            .collect::<Result<Vec<_>>>()?,
    };
    let kernel = def
        .cpu
        .ok_or_else(|| Error::Param(format!("{}: no kernel for {ctx}", def.name)))?;
    if !ctx.is_cpu() {
        return Err(Error::Device(format!(
            "{}: no GPU backend in this build",
            def.name
        )));
    }
    let reads: Vec<crate::engine::Var> = inputs.iter().map(|a| a.var().clone()).collect();
    let mut writes: Vec<crate::engine::Var> = outputs.iter().map(|a| a.var().clone()).collect();
    for &m in def.mutated(&call).iter() {
        if let Some(a) = inputs.get(m) {
            writes.push(a.var().clone());
        }
    }
    for r in def.resources {
        match r {
            Resource::Rng => writes.push(crate::random::rng_var(ctx)),
        }
    }
    let out_bytes: usize = outputs.iter().map(|a| a.nbytes()).sum();
    let in_bytes: usize = inputs.iter().map(|a| a.nbytes()).sum();
    let inline =
        out_bytes.max(in_bytes) <= crate::ndarray::INLINE_BYTES || crate::engine::bulk_size() > 1;
    let ins = inputs.to_vec();
    let outs = outputs.clone();
    let mut outputs = outputs;
    crate::autograd::record_op(&call, inputs, &mut outputs);
    crate::profiler::note_inputs(&in_shapes);
    crate::engine::push(
        def.name,
        ctx,
        reads,
        std::mem::take(&mut writes),
        inline,
        Box::new(move |rc| {
            let ib: Vec<Blob> = ins.iter().map(|a| a.blob()).collect::<Result<_>>()?;
            let ob: Vec<Blob> = outs.iter().map(|a| a.blob()).collect::<Result<_>>()?;
            kernel(
                &call,
                &ib,
                &ob,
                &KernelCtx {
                    ctx: rc.ctx,
                    is_train,
                },
            )
        }),
    );
    Ok(outputs)
}

/// Convenience for Rust callers and tests: look up, parse and invoke;
/// returns the visible outputs.
pub fn call(name: &str, attrs: &[(&str, &str)], inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let def = lookup(name)?;
    let c = Arc::new(parse_call(def, Attrs::from_pairs(attrs))?);
    let mut outs = invoke(c.clone(), inputs, None, None)?;
    outs.truncate(def.n_visible(&c));
    Ok(outs)
}

/// Like `call`, writing into `out` (the visible outputs).
pub fn call_into(
    name: &str,
    attrs: &[(&str, &str)],
    inputs: &[NDArray],
    out: &[NDArray],
) -> Result<Vec<NDArray>> {
    let def = lookup(name)?;
    let c = Arc::new(parse_call(def, Attrs::from_pairs(attrs))?);
    let mut outs = invoke(c.clone(), inputs, Some(out.to_vec()), None)?;
    outs.truncate(def.n_visible(&c));
    Ok(outs)
}
