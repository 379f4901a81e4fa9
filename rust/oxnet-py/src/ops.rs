//! Operator lookup and the imperative invoke.
use crate::errors::IntoPy;
use crate::ndarray::{ctx_of, wrap, NDArray};
use oxnet_core::ops::registry::{self, OpCall, OpDef};
use oxnet_core::ops::Attrs;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use std::sync::Arc;

/// A resolved operator.
#[pyclass(module = "oxnet._native", frozen)]
pub struct Op {
    def: &'static OpDef,
}

#[pymethods]
impl Op {
    #[getter]
    fn name(&self) -> &'static str {
        self.def.name
    }
    #[getter]
    fn doc(&self) -> &'static str {
        self.def.doc
    }
    /// Input names (variadic operators return their prefix only).
    #[getter]
    fn inputs(&self) -> Vec<&'static str> {
        self.def.inputs.to_vec()
    }
    #[getter]
    fn variadic(&self) -> bool {
        self.def.is_variadic()
    }
    #[getter]
    fn has_grad(&self) -> bool {
        self.def.grad.is_some()
    }
    /// Whether the operator is element-wise (fusable).
    #[getter]
    fn pointwise(&self) -> bool {
        self.def.pointwise.is_some()
    }
    fn __repr__(&self) -> String {
        format!("<Op {}>", self.def.name)
    }
}

#[pyfunction]
fn get_op(name: &str) -> PyResult<Op> {
    Ok(Op {
        def: registry::lookup(name).py_err()?,
    })
}

#[pyfunction]
fn op_names() -> Vec<&'static str> {
    registry::all_names().to_vec()
}

/// Render a Python value the way MXNet writes attribute strings.
pub fn attr_str(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_none() {
        return Ok("None".into());
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract::<bool>()? {
            "True"
        } else {
            "False"
        }
        .into());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(v.extract::<i64>()?.to_string());
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(format!("{:?}", v.extract::<f64>()?));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_str()?.to_string());
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let parts: PyResult<Vec<String>> = v.try_iter()?.map(|x| attr_str(&x?)).collect();
        let parts = parts?;
        return Ok(if parts.len() == 1 && v.is_instance_of::<PyTuple>() {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        });
    }
    let py = v.py();
    // NumPy arrays (a shape given as np.array([2, 3])): their elements as a tuple; a 0-d array
    // as its one value.
    if v.hasattr("ndim")? && v.hasattr("tolist")? && !v.is_instance_of::<PyType>() {
        if let Ok(ndim) = v.getattr("ndim")?.extract::<usize>() {
            let list = v.call_method0("tolist")?;
            return if ndim == 0 {
                attr_str(&list)
            } else {
                attr_str(
                    &PyTuple::new(py, list.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.into_any(),
                )
            };
        }
    }
    // NumPy dtypes and scalar types.
    if v.is_instance_of::<PyType>() || v.hasattr("itemsize")? && v.hasattr("kind")? {
        let np = py.import("numpy")?;
        let name: String = np
            .getattr("dtype")?
            .call1((v,))?
            .getattr("name")?
            .extract()?;
        return Ok(name);
    }
    // NumPy scalars and other numbers.
    if let Ok(i) = v.call_method0("__index__") {
        return Ok(i.extract::<i64>()?.to_string());
    }
    if let Ok(f) = v.call_method0("__float__") {
        return Ok(format!("{:?}", f.extract::<f64>()?));
    }
    Ok(v.str()?.to_str()?.to_string())
}

fn attrs_of(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Attrs> {
    let mut a = Attrs::new();
    if let Some(d) = kwargs {
        for (k, v) in d.iter() {
            let k: String = k.extract()?;
            a.0.push((k, attr_str(&v)?));
        }
    }
    Ok(a)
}

/// Run `op` on `inputs` with attributes `kwargs`; returns the list of
/// visible outputs (which are `out` when given). Shape/dtype/parameter errors raise
/// here; kernel errors raise at the next wait on the outputs.
#[pyfunction]
#[pyo3(signature = (op, inputs, kwargs=None, out=None, ctx=None))]
fn invoke(
    py: Python<'_>,
    op: &Op,
    inputs: &Bound<'_, PyAny>,
    kwargs: Option<&Bound<'_, PyDict>>,
    out: Option<&Bound<'_, PyAny>>,
    ctx: Option<(i32, i32)>,
) -> PyResult<Vec<Py<NDArray>>> {
    let mut ins = Vec::new();
    for x in inputs.try_iter()? {
        let x = x?;
        let r = x.cast::<NDArray>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{}: inputs must be NDArrays, got {}",
                op.def.name,
                x.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        ins.push(r.borrow().inner.clone());
    }
    let call: OpCall = registry::parse_call(op.def, attrs_of(kwargs)?).py_err()?;
    let (outs_py, outs_core) = match out {
        None => (None, None),
        Some(o) => {
            let list: Vec<Bound<'_, NDArray>> = if let Ok(a) = o.cast::<NDArray>() {
                vec![a.clone()]
            } else {
                o.try_iter()?
                    .map(|x| x.and_then(|x| x.cast_into::<NDArray>().map_err(PyErr::from)))
                    .collect::<PyResult<_>>()?
            };
            let core: Vec<_> = list.iter().map(|a| a.borrow().inner.clone()).collect();
            (Some(list), Some(core))
        }
    };
    // hidden outputs (a dropout mask kept for the gradient) stay in the core
    let n_vis = op.def.n_visible(&call);
    if let Some(o) = &outs_core {
        if o.len() != n_vis {
            return Err::<Vec<Py<NDArray>>, _>(oxnet_core::Error::Param(format!(
                "{}: out= has {} array(s), the operator produces {}",
                op.def.name,
                o.len(),
                n_vis
            )))
            .py_err();
        }
    }
    let mut res = run_call(py, call, &ins, outs_core, ctx_of(ctx)?)?;
    res.truncate(n_vis);
    match outs_py {
        Some(list) => Ok(list
            .into_iter()
            .zip(res)
            .map(|(b, r)| {
                // The same memory; autograd may have attached a tape node.
                b.borrow_mut().inner.ag = r.ag;
                b.unbind()
            })
            .collect()),
        None => res.into_iter().map(|a| wrap(py, a)).collect(),
    }
}

/// Push a parsed call: waits (GIL released) while too much work is pending,
/// then the registry's imperative invoke.
fn run_call(
    py: Python<'_>,
    call: OpCall,
    ins: &[oxnet_core::NDArray],
    out: Option<Vec<oxnet_core::NDArray>>,
    ctx: Option<oxnet_core::Context>,
) -> PyResult<Vec<oxnet_core::NDArray>> {
    if oxnet_core::engine::over_limit() {
        py.detach(oxnet_core::engine::throttle);
    }
    registry::invoke(Arc::new(call), ins, out, ctx).py_err()
}

/// Single-output invoke on already-unwrapped arrays (the arithmetic fast
/// path below).
fn invoke1(
    py: Python<'_>,
    def: &'static OpDef,
    ins: &[oxnet_core::NDArray],
    attrs: Attrs,
) -> PyResult<Py<NDArray>> {
    let call = registry::parse_call(def, attrs).py_err()?;
    let mut res = run_call(py, call, ins, None, None)?;
    wrap(py, res.swap_remove(0))
}

/// `lhs <op> other` for `+ - * /` (and reflected forms): arrays and Python
/// numbers go straight to the registry; anything else (NumPy arrays and
/// scalars, unsupported types) goes to `oxnet.ndarray.ndarray._binary`,
/// which also answers NotImplemented.
pub fn arith(
    lhs: &Bound<'_, NDArray>,
    other: &Bound<'_, PyAny>,
    ops: &'static ArithOps,
    reverse: bool,
) -> PyResult<Py<PyAny>> {
    let py = lhs.py();
    if let Ok(b) = other.cast::<NDArray>() {
        let (x, y) = (lhs.borrow().inner.clone(), b.borrow().inner.clone());
        let ins = if reverse { [y, x] } else { [x, y] };
        let def = ops
            .array
            .get_or_init(|| registry::lookup(ops.names[0]).expect("arith op"));
        return Ok(invoke1(py, def, &ins, Attrs::new())?.into_any());
    }
    if other.is_instance_of::<PyFloat>() || other.is_instance_of::<PyInt>() {
        let k = if reverse { 2 } else { 1 };
        let def =
            ops.scalar[k - 1].get_or_init(|| registry::lookup(ops.names[k]).expect("arith op"));
        let mut a = Attrs::new();
        a.0.push(("scalar".to_string(), attr_str(other)?));
        let x = lhs.borrow().inner.clone();
        return Ok(invoke1(py, def, std::slice::from_ref(&x), a)?.into_any());
    }
    static FALLBACK: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let f = FALLBACK.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("oxnet.ndarray.ndarray")?
            .getattr("_binary")?
            .unbind())
    })?;
    let sop = if reverse { ops.names[2] } else { ops.names[1] };
    f.bind(py)
        .call1((lhs, other, ops.names[0], sop, reverse))
        .map(Bound::unbind)
}

/// Operator names of one arithmetic family: [array op, scalar op, reflected
/// scalar op], resolved once.
pub struct ArithOps {
    names: [&'static str; 3],
    array: std::sync::OnceLock<&'static OpDef>,
    scalar: [std::sync::OnceLock<&'static OpDef>; 2],
}

impl ArithOps {
    const fn new(names: [&'static str; 3]) -> ArithOps {
        ArithOps {
            names,
            array: std::sync::OnceLock::new(),
            scalar: [std::sync::OnceLock::new(), std::sync::OnceLock::new()],
        }
    }
}

pub static ADD: ArithOps = ArithOps::new(["broadcast_add", "_plus_scalar", "_plus_scalar"]);
pub static SUB: ArithOps = ArithOps::new(["broadcast_sub", "_minus_scalar", "_rminus_scalar"]);
pub static MUL: ArithOps = ArithOps::new(["broadcast_mul", "_mul_scalar", "_mul_scalar"]);
pub static DIV: ArithOps = ArithOps::new(["broadcast_div", "_div_scalar", "_rdiv_scalar"]);

/// Gradients of `op` applied to `inputs` (with attributes `kwargs`, outputs
/// `outputs`) given the output gradients; None where the gradient is zero.
#[pyfunction]
#[pyo3(signature = (op, inputs, kwargs, outputs, ograds))]
fn op_grad(
    py: Python<'_>,
    op: &Op,
    inputs: Vec<PyRef<'_, NDArray>>,
    kwargs: Option<&Bound<'_, PyDict>>,
    outputs: Vec<PyRef<'_, NDArray>>,
    ograds: Vec<PyRef<'_, NDArray>>,
) -> PyResult<Vec<Option<Py<NDArray>>>> {
    let call = registry::parse_call(op.def, attrs_of(kwargs)?).py_err()?;
    let ins: Vec<_> = inputs.iter().map(|a| a.inner.clone()).collect();
    let outs: Vec<_> = outputs.iter().map(|a| a.inner.clone()).collect();
    let gs: Vec<_> = ograds.iter().map(|a| a.inner.clone()).collect();
    let res = oxnet_core::autograd::op_grad(&call, &ins, &outs, &gs).py_err()?;
    res.into_iter()
        .map(|g| g.map(|a| wrap(py, a)).transpose())
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Op>()?;
    m.add_function(wrap_pyfunction!(get_op, m)?)?;
    m.add_function(wrap_pyfunction!(op_names, m)?)?;
    m.add_function(wrap_pyfunction!(invoke, m)?)?;
    m.add_function(wrap_pyfunction!(op_grad, m)?)?;
    Ok(())
}
