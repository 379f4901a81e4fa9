//! Host operations: a Python callable pushed to the engine as one operation
//! with declared reads and writes. The MPI collectives of
//! `oxnet.kvstore.dist` / `oxnet.horovod` use it, so they order with the
//! engine like any operator (they start once the arrays' pending writes
//! ran; later reads of their outputs wait for them) and appear in the
//! profiler's trace as operations.
use crate::errors::IntoPy;
use crate::ndarray::NDArray;
use oxnet_core::engine::{self, Var};
use oxnet_core::{Context, Error};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The variable every serial host operation writes, so that they run one at
/// a time in push order (collectives must be issued in the same order on
/// every rank).
fn serial_var() -> &'static Var {
    static V: OnceLock<Var> = OnceLock::new();
    V.get_or_init(Var::new)
}

/// Operation names live as long as the engine's records of them: intern
/// them (callers use a handful of fixed names).
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut map = NAMES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(s) = map.get(name) {
        return s;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    map.insert(name.to_string(), leaked);
    leaked
}

/// `push_host_op(name, reads, writes, func, serial)`: push an engine
/// operation that calls `func(read_buffers, write_buffers)` with the GIL,
/// where each buffer is `(address, nbytes)` of an array's memory, once the
/// arrays' earlier operations ran. `serial` orders it after every earlier
/// serial host operation. An exception in `func` fails the operation: its
/// write arrays are poisoned and the next wait on them raises it.
#[pyfunction]
#[pyo3(signature = (name, reads, writes, func, serial=true))]
fn push_host_op(
    py: Python<'_>,
    name: &str,
    reads: Vec<PyRef<'_, NDArray>>,
    writes: Vec<PyRef<'_, NDArray>>,
    func: Py<PyAny>,
    serial: bool,
) -> PyResult<()> {
    let rs: Vec<_> = reads.iter().map(|a| a.inner.clone()).collect();
    let ws: Vec<_> = writes.iter().map(|a| a.inner.clone()).collect();
    drop(reads);
    drop(writes);
    let mut read_vars: Vec<Var> = rs.iter().map(|a| a.var().clone()).collect();
    let mut write_vars: Vec<Var> = ws.iter().map(|a| a.var().clone()).collect();
    if serial {
        write_vars.push(serial_var().clone());
    }
    read_vars.retain(|r| !write_vars.iter().any(|w| w.same(r)));
    let nm = intern(name);
    if engine::over_limit() {
        py.detach(engine::throttle);
    }
    engine::push(
        nm,
        Context::default(),
        read_vars,
        write_vars,
        false,
        Box::new(move |_| {
            let spans =
                |arrs: &[oxnet_core::ndarray::NDArray]| -> Result<Vec<(usize, usize)>, Error> {
                    arrs.iter()
                        .map(|a| {
                            let b = a.blob()?;
                            Ok((b.raw_ptr() as usize, b.nbytes()))
                        })
                        .collect()
                };
            // The spans stay valid while `func` runs: the closure owns clones of the arrays (their
            // storage cannot be freed), and the engine runs this operation only after every earlier
            // operation on them and before any later one, with exclusive access to the writes.
            let (r, w) = (spans(&rs)?, spans(&ws)?);
            Python::attach(|py| {
                func.call1(py, (r, w))
                    .map(|_| ())
                    .map_err(|e| Error::External(format!("{nm}: {e}")))
            })
        }),
    );
    Ok(())
}

/// Block (without the GIL) until every serial host operation pushed so far
/// has run; raises the error of a failed one.
#[pyfunction]
fn wait_host_ops(py: Python<'_>) -> PyResult<()> {
    py.detach(|| engine::wait_for_var(serial_var(), true))
        .py_err()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(push_host_op, m)?)?;
    m.add_function(wrap_pyfunction!(wait_host_ops, m)?)?;
    Ok(())
}
