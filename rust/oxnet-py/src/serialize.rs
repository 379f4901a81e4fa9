//! `mx.nd.save` / `mx.nd.load` in MXNet's binary format.
use crate::errors::IntoPy;
use crate::ndarray::{wrap, NDArray};
use oxnet_core::ndarray::serialize;
use pyo3::prelude::*;

/// Save arrays (with names when `names` is non-empty); waits for pending
/// writes without the GIL.
#[pyfunction]
fn nd_save(
    py: Python<'_>,
    path: String,
    arrays: Vec<PyRef<'_, NDArray>>,
    names: Vec<String>,
) -> PyResult<()> {
    let named: Vec<serialize::Named> = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| (names.get(i).cloned(), a.inner.clone()))
        .collect();
    py.detach(move || serialize::save(&path, &named)).py_err()
}

/// The bytes `nd_save` would write, as `bytes` (pickling, `mx.nd.save` to a buffer).
#[pyfunction]
fn nd_save_bytes<'py>(
    py: Python<'py>,
    arrays: Vec<PyRef<'py, NDArray>>,
    names: Vec<String>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let named: Vec<serialize::Named> = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| (names.get(i).cloned(), a.inner.clone()))
        .collect();
    let bytes = py
        .detach(move || serialize::save_to_bytes(&named))
        .py_err()?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// Load a file: (arrays, names) with names empty for a list file.
#[pyfunction]
fn nd_load(py: Python<'_>, path: String) -> PyResult<(Vec<Py<NDArray>>, Vec<String>)> {
    let items = py.detach(move || serialize::load(&path)).py_err()?;
    split_named(py, items)
}

/// (arrays, names), names empty for a list file.
fn split_named(
    py: Python<'_>,
    items: Vec<serialize::Named>,
) -> PyResult<(Vec<Py<NDArray>>, Vec<String>)> {
    let mut arrays = Vec::with_capacity(items.len());
    let mut names = Vec::new();
    for (n, a) in items {
        if let Some(n) = n {
            names.push(n);
        }
        arrays.push(wrap(py, a)?);
    }
    Ok((arrays, names))
}

/// Load from bytes in the same format (`mx.nd.load_frombuffer`): (arrays,
/// names) as [`nd_load`]; parsed without the GIL.
#[pyfunction]
fn nd_load_bytes(py: Python<'_>, data: Vec<u8>) -> PyResult<(Vec<Py<NDArray>>, Vec<String>)> {
    let items = py
        .detach(move || serialize::load_from_bytes(&data))
        .py_err()?;
    split_named(py, items)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nd_save, m)?)?;
    m.add_function(wrap_pyfunction!(nd_load, m)?)?;
    m.add_function(wrap_pyfunction!(nd_load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(nd_save_bytes, m)?)?;
    Ok(())
}
