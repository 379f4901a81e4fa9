//! Thin PyO3 bindings for oxnet-core: one file per Python-facing area; no
//! logic beyond argument conversion lives here. Every wait and every heavy
//! call releases the GIL.
use pyo3::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc's C API, linked by the mimalloc crate (its sys crate declares
// mi_collect only behind a feature with a further dependency).
extern "C" {
    fn mi_collect(force: bool);
}

/// Return mimalloc's free memory to the OS (`mx.storage.release_all()`).
fn purge_mimalloc() {
    // SAFETY: mi_collect only frees memory mimalloc no longer uses; `force`
    // also collects the abandoned heaps of threads that exited.
    unsafe { mi_collect(true) };
}

mod autograd;
mod capi;
mod data_iter;
mod dlpack;
mod errors;
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
    oxnet_core::storage::set_purge_hook(purge_mimalloc);
    m.add_class::<ndarray::NDArray>()?;
    errors::register(m)?;
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
