//! Thin PyO3 bindings for oxnet-core: one file per Python-facing area; no
//! logic beyond argument conversion lives here. Every wait and every heavy
//! call releases the GIL.
use pyo3::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod autograd;
mod data_iter;
mod dlpack;
mod errors;
mod host_op;
mod io;
mod ndarray;
mod ops;
mod profiler;
mod runtime;
mod serialize;
mod symbol;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::install_panic_hook();
    m.add_class::<ndarray::NDArray>()?;
    errors::register(m)?;
    host_op::register(m)?;
    ndarray::register(m)?;
    dlpack::register(m)?;
    ops::register(m)?;
    runtime::register(m)?;
    autograd::register(m)?;
    serialize::register(m)?;
    profiler::register(m)?;
    io::register(m)?;
    data_iter::register(m)?;
    symbol::register(m)?;
    Ok(())
}
