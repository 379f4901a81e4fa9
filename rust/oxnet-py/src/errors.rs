//! Map core errors to the Python exception family rooted at
//! `oxnet.base.MXNetError` (registered by Python at import).
use oxnet_core::Error;
use pyo3::exceptions::{PyIOError, PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

static CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// Called once by `oxnet.base` with {kind: exception class}.
#[pyfunction]
fn _set_error_classes(py: Python<'_>, classes: Bound<'_, PyDict>) -> PyResult<()> {
    let _ = CLASSES.set(py, classes.unbind());
    Ok(())
}

fn kind(e: &Error) -> &'static str {
    match e {
        Error::Shape(_) => "shape",
        Error::DType(_) => "dtype",
        Error::Param(_) => "param",
        Error::Index(_) => "index",
        Error::Io(_) => "io",
        Error::Decode(_) => "decode",
        Error::Engine(_) => "engine",
        Error::Device(_) => "device",
        Error::OutOfMemory(_) => "memory",
        Error::Op { .. } => "op",
        Error::External(_) => "external",
    }
}

pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let msg = e.message();
        if let Some(d) = CLASSES.get(py) {
            if let Ok(Some(cls)) = d.bind(py).get_item(kind(&e)) {
                return PyErr::from_type(cls.cast_into().expect("exception class"), msg);
            }
        }
        match e {
            Error::Shape(_) | Error::Param(_) | Error::Decode(_) => PyValueError::new_err(msg),
            Error::DType(_) => PyTypeError::new_err(msg),
            Error::Index(_) => PyIndexError::new_err(msg),
            Error::Io(_) => PyIOError::new_err(msg),
            Error::OutOfMemory(_) => pyo3::exceptions::PyMemoryError::new_err(msg),
            _ => PyRuntimeError::new_err(msg),
        }
    })
}

pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_error_classes, m)?)?;
    Ok(())
}
