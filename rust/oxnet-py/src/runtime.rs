//! Engine, storage and random entry points.
use crate::errors::IntoPy;
use oxnet_core::{engine, random, storage, Context};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Keep Rust panics (which the engine turns into errors) off stderr unless
/// OXNET_DEBUG is set.
pub fn install_panic_hook() {
    if std::env::var_os("OXNET_DEBUG").is_none() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::env::var_os("OXNET_DEBUG").is_some() {
                prev(info);
            }
        }));
    }
}

/// Block until all pushed operations finished; raises the first error.
#[pyfunction]
fn waitall(py: Python<'_>) -> PyResult<()> {
    py.detach(engine::wait_for_all).py_err()
}

#[pyfunction]
fn engine_type() -> &'static str {
    engine::engine_kind()
}

#[pyfunction]
fn storage_stats(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let s = storage::cpu_pool().stats();
    let d = PyDict::new(py);
    d.set_item("bytes_in_use", s.bytes_in_use)?;
    d.set_item("bytes_cached", s.bytes_cached)?;
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("allocs", s.allocs)?;
    d.set_item("frees", s.frees)?;
    d.set_item("pool_type", s.rule)?;
    Ok(d.unbind())
}

#[pyfunction]
fn storage_release_all(py: Python<'_>) {
    py.detach(|| storage::cpu_pool().release_all());
}

#[pyfunction]
#[pyo3(signature = (seed, dev_type=None, dev_id=0))]
fn random_seed(seed: u64, dev_type: Option<i32>, dev_id: i32) -> PyResult<()> {
    let ctx = match dev_type {
        None => None,
        Some(t) => Some(Context {
            dev_type: oxnet_core::base::DevType::from_id(t).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("bad device type {t}"))
            })?,
            dev_id,
        }),
    };
    random::seed(seed, ctx);
    Ok(())
}

#[pyfunction]
fn set_bulk_size(n: usize) -> usize {
    engine::set_bulk_size(n)
}

#[pyfunction]
fn num_cores() -> usize {
    engine::num_cores()
}

/// `[(name, enabled), ...]` under MXNet's feature names (see oxnet_core::base::features).
#[pyfunction]
fn features() -> Vec<(&'static str, bool)> {
    oxnet_core::base::features::features()
}

/// "debug" or "release": the cargo profile this extension was built with.
#[pyfunction]
fn build_profile() -> &'static str {
    oxnet_core::base::features::build_profile()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(waitall, m)?)?;
    m.add_function(wrap_pyfunction!(engine_type, m)?)?;
    m.add_function(wrap_pyfunction!(storage_stats, m)?)?;
    m.add_function(wrap_pyfunction!(storage_release_all, m)?)?;
    m.add_function(wrap_pyfunction!(random_seed, m)?)?;
    m.add_function(wrap_pyfunction!(num_cores, m)?)?;
    m.add_function(wrap_pyfunction!(set_bulk_size, m)?)?;
    m.add_function(wrap_pyfunction!(features, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    Ok(())
}
