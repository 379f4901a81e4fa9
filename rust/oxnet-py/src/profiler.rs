//! `oxnet.profiler` entry points: configuration, state, dumps, scopes and
//! the records of Python-side objects (Task, Frame, Event, Counter, Marker).
use crate::errors::IntoPy;
use oxnet_core::profiler::{self, Kind, MarkScope};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// set_config(**kwargs) with values already converted by `str()`.
#[pyfunction]
fn profiler_set_config(pairs: Vec<(String, String)>) -> PyResult<()> {
    let p: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    profiler::set_config(&p).py_err()
}

#[pyfunction]
fn profiler_get_config(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let c = profiler::config();
    let d = PyDict::new(py);
    d.set_item("profile_all", c.profile_all)?;
    d.set_item("profile_symbolic", c.profile_symbolic)?;
    d.set_item("profile_imperative", c.profile_imperative)?;
    d.set_item("profile_memory", c.profile_memory)?;
    d.set_item("profile_api", c.profile_api)?;
    d.set_item("filename", c.filename)?;
    d.set_item("continuous_dump", c.continuous_dump)?;
    d.set_item("dump_period", c.dump_period)?;
    d.set_item("aggregate_stats", c.aggregate_stats)?;
    Ok(d.unbind())
}

#[pyfunction]
fn profiler_set_state(run: bool) {
    profiler::set_state(run);
}

#[pyfunction]
fn profiler_is_running() -> bool {
    profiler::is_running()
}

/// Kept for callers of the first bindings: same as profiler_set_state.
#[pyfunction]
fn profiler_set_running(on: bool) {
    profiler::set_state(on);
}

#[pyfunction]
fn profiler_pause(paused: bool) {
    profiler::pause(paused);
}

/// Writes the trace; waits (without the GIL) for operations already pushed.
#[pyfunction]
fn profiler_dump(py: Python<'_>, finished: bool) -> PyResult<()> {
    py.detach(|| profiler::dump(finished)).py_err()
}

#[pyfunction]
fn profiler_dump_at_exit(py: Python<'_>) -> PyResult<()> {
    py.detach(profiler::dump_at_exit).py_err()
}

#[pyfunction]
fn profiler_dumps(
    py: Python<'_>,
    reset: bool,
    format: String,
    sort_by: String,
    ascending: bool,
) -> PyResult<String> {
    py.detach(|| profiler::dumps(reset, &format, &sort_by, ascending))
        .py_err()
}

/// Set this thread's operator-name prefix (None clears it).
#[pyfunction]
#[pyo3(signature = (scope=None))]
fn profiler_set_scope(scope: Option<String>) {
    profiler::set_scope(scope.as_deref());
}

/// Start time (ns) of a Task/Frame/Event, or None when not recording.
#[pyfunction]
fn profiler_object_start() -> Option<u64> {
    profiler::object_start()
}

#[pyfunction]
#[pyo3(signature = (kind, domain, name, start_ns))]
fn profiler_record_duration(
    kind: &str,
    domain: Option<String>,
    name: &str,
    start_ns: u64,
) -> PyResult<()> {
    let k = match kind {
        "task" => Kind::Task,
        "frame" => Kind::Frame,
        "event" => Kind::Event,
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown profiler object kind '{kind}'"
            )))
        }
    };
    profiler::record_duration(k, domain.as_deref(), name, start_ns).py_err()
}

#[pyfunction]
fn profiler_record_counter(domain: &str, name: &str, value: i64) {
    profiler::record_counter(domain, name, value);
}

#[pyfunction]
fn profiler_record_marker(domain: &str, name: &str, scope: &str) -> PyResult<()> {
    let s = MarkScope::parse(scope).py_err()?;
    profiler::record_marker(domain, name, s);
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profiler_set_config, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_get_config, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_set_state, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_is_running, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_set_running, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_pause, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_dump, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_dump_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_set_scope, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_object_start, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_record_duration, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_record_counter, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_record_marker, m)?)?;
    Ok(())
}
