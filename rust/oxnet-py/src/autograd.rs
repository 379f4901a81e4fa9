//! Autograd entry points: recording state, backward, grad, variables and
//! Python-defined gradients (autograd.Function).
use crate::errors::{to_py, IntoPy};
use crate::ndarray::{wrap, NDArray};
use oxnet_core::autograd::{self, GradReq};
use oxnet_core::{Error, NDArray as Core};
use pyo3::prelude::*;

#[pyfunction]
fn set_recording(on: bool) -> bool {
    autograd::set_recording(on)
}
#[pyfunction]
fn set_training(on: bool) -> bool {
    autograd::set_training(on)
}
#[pyfunction]
fn is_recording() -> bool {
    autograd::is_recording()
}
#[pyfunction]
fn is_training() -> bool {
    autograd::is_training()
}

fn cores(v: &[PyRef<'_, NDArray>]) -> Vec<Core> {
    v.iter().map(|a| a.inner.clone()).collect()
}

/// Backpropagate from heads into the gradient buffers of the variables.
#[pyfunction]
#[pyo3(signature = (heads, head_grads, retain_graph=false, create_graph=false, train_mode=true))]
fn backward(
    heads: Vec<PyRef<'_, NDArray>>,
    head_grads: Vec<Option<PyRef<'_, NDArray>>>,
    retain_graph: bool,
    create_graph: bool,
    train_mode: bool,
) -> PyResult<()> {
    let hs = cores(&heads);
    let hg: Vec<Option<Core>> = head_grads
        .iter()
        .map(|g| g.as_ref().map(|g| g.inner.clone()))
        .collect();
    autograd::backward(&hs, &hg, None, retain_graph, create_graph, train_mode).py_err()?;
    Ok(())
}

/// Gradients of heads with respect to variables (returned, not written).
#[pyfunction]
#[pyo3(signature = (heads, variables, head_grads, retain_graph=false, create_graph=false, train_mode=true))]
fn grad(
    py: Python<'_>,
    heads: Vec<PyRef<'_, NDArray>>,
    variables: Vec<PyRef<'_, NDArray>>,
    head_grads: Vec<Option<PyRef<'_, NDArray>>>,
    retain_graph: bool,
    create_graph: bool,
    train_mode: bool,
) -> PyResult<Vec<Option<Py<NDArray>>>> {
    let hs = cores(&heads);
    let vs = cores(&variables);
    let hg: Vec<Option<Core>> = head_grads
        .iter()
        .map(|g| g.as_ref().map(|g| g.inner.clone()))
        .collect();
    let res =
        autograd::backward(&hs, &hg, Some(&vs), retain_graph, create_graph, train_mode).py_err()?;
    res.into_iter()
        .map(|g| g.map(|a| wrap(py, a)).transpose())
        .collect()
}

/// Make arrays variables with the given gradient buffers and requests.
#[pyfunction]
fn mark_variables(
    variables: Vec<PyRefMut<'_, NDArray>>,
    gradients: Vec<PyRef<'_, NDArray>>,
    grad_reqs: Vec<String>,
) -> PyResult<()> {
    for ((mut v, g), r) in variables
        .into_iter()
        .zip(gradients.iter())
        .zip(grad_reqs.iter())
    {
        let req = GradReq::parse(r).py_err()?;
        let mut gi = g.inner.clone();
        gi.ag = None;
        autograd::mark_variable(&mut v.inner, Some(gi), req).py_err()?;
    }
    Ok(())
}

/// Record outputs as computed from inputs by a Python function whose
/// gradient is `backward(*ograds) -> grads` (autograd.Function).
#[pyfunction]
fn record_custom(
    name: String,
    backward: Py<PyAny>,
    inputs: Vec<PyRef<'_, NDArray>>,
    outputs: Vec<PyRefMut<'_, NDArray>>,
) -> PyResult<()> {
    if !autograd::is_recording() {
        return Ok(());
    }
    let n_in = inputs.len();
    let ins = cores(&inputs);
    let mut outs: Vec<Core> = outputs.iter().map(|a| a.inner.clone()).collect();
    let nm = name.clone();
    let f: autograd::CustomBackward = Box::new(move |ograds: &[Core]| {
        Python::attach(|py| -> Result<Vec<Option<Core>>, Error> {
            let args: Vec<Py<NDArray>> = ograds
                .iter()
                .map(|g| wrap(py, g.clone()))
                .collect::<PyResult<_>>()
                .map_err(|e| Error::External(e.to_string()))?;
            let res = backward
                .call1(
                    py,
                    pyo3::types::PyTuple::new(py, args)
                        .map_err(|e| Error::External(e.to_string()))?,
                )
                .map_err(|e| Error::External(format!("{nm}.backward: {e}")))?;
            let res = res.bind(py);
            let items: Vec<Bound<'_, PyAny>> = if let Ok(a) = res.cast::<NDArray>() {
                vec![a.clone().into_any()]
            } else {
                res.try_iter()
                    .and_then(|it| it.collect::<PyResult<Vec<_>>>())
                    .map_err(|e| {
                        Error::External(format!("{nm}.backward must return NDArrays: {e}"))
                    })?
            };
            if items.len() != n_in {
                return Err(Error::External(format!(
                    "{nm}.backward returned {} gradient(s) for {n_in} input(s)",
                    items.len()
                )));
            }
            items
                .into_iter()
                .map(|x| {
                    if x.is_none() {
                        Ok(None)
                    } else {
                        x.cast::<NDArray>()
                            .map(|a| Some(a.borrow().inner.clone()))
                            .map_err(|_| {
                                Error::External(format!("{nm}.backward must return NDArrays"))
                            })
                    }
                })
                .collect()
        })
    });
    autograd::record_custom(&name, f, &ins, &mut outs);
    for (mut o, c) in outputs.into_iter().zip(outs) {
        o.inner.ag = c.ag;
    }
    let _ = to_py;
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_recording, m)?)?;
    m.add_function(wrap_pyfunction!(set_training, m)?)?;
    m.add_function(wrap_pyfunction!(is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(is_training, m)?)?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(mark_variables, m)?)?;
    m.add_function(wrap_pyfunction!(record_custom, m)?)?;
    Ok(())
}
