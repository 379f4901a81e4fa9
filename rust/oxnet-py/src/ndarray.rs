//! The `NDArray` Python class (methods written in Python are attached to it
//! by `oxnet.ndarray`), creation from NumPy and copies back.
use crate::errors::{to_py, IntoPy};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use oxnet_core::base::{fmt_shape, DevType};
use oxnet_core::ndarray::NDArray as Core;
use oxnet_core::{autograd, Context, DType};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pyclass(module = "oxnet.ndarray", name = "NDArray", weakref, dict, subclass)]
pub struct NDArray {
    pub inner: Core,
}

pub fn ctx_of(dev: Option<(i32, i32)>) -> PyResult<Option<Context>> {
    match dev {
        None => Ok(None),
        Some((t, id)) => {
            let dev_type = DevType::from_id(t)
                .ok_or_else(|| PyValueError::new_err(format!("unknown device type id {t}")))?;
            Ok(Some(Context {
                dev_type,
                dev_id: id,
            }))
        }
    }
}

pub fn wrap(py: Python<'_>, a: Core) -> PyResult<Py<NDArray>> {
    Py::new(py, NDArray { inner: a })
}

/// Raw data pointer and byte length of a C-contiguous NumPy array.
fn np_buffer(arr: &Bound<'_, PyUntypedArray>) -> PyResult<(*mut u8, usize)> {
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "internal: NumPy array must be C-contiguous",
        ));
    }
    let n: usize = arr.shape().iter().product();
    let itemsize = arr.dtype().itemsize();
    // SAFETY: the pointer is valid while `arr` is alive; we hold a reference.
    let data = unsafe { (*arr.as_array_ptr()).fields.data as *mut u8 };
    Ok((data, n * itemsize))
}

struct SendPtr(*mut u8);
unsafe impl Send for SendPtr {}

#[pymethods]
impl NDArray {
    // Arithmetic: the hot path of `a + 1` / `a * b` goes straight to the
    // registry (in-place and other operators are attached from Python).
    fn __add__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::ADD, false)
    }
    fn __radd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::ADD, false)
    }
    fn __sub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::SUB, false)
    }
    fn __rsub__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::SUB, true)
    }
    fn __mul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::MUL, false)
    }
    fn __rmul__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::MUL, false)
    }
    fn __truediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::DIV, false)
    }
    fn __rtruediv__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::ops::arith(slf, other, &crate::ops::DIV, true)
    }

    /// Tuple of array dimensions.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.shape)
    }
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    #[getter]
    fn _dtype_name(&self) -> &'static str {
        self.inner.dtype().name()
    }
    #[getter]
    fn _ctx(&self) -> (i32, i32) {
        let c = self.inner.ctx();
        (c.dev_type as i32, c.dev_id)
    }
    #[getter]
    fn _chunk_id(&self) -> usize {
        self.inner.var().id()
    }
    #[getter]
    fn _offset(&self) -> usize {
        self.inner.offset
    }

    /// Block until every pending write to this array has finished; raises
    /// the error of a failed operation that produced it.
    fn wait_to_read(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        py.detach(move || a.wait_to_read()).py_err()
    }

    fn _wait_to_write(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        py.detach(move || a.wait_to_write()).py_err()
    }

    /// Copy the elements into a C-contiguous NumPy array of the same size and
    /// dtype (waits without the GIL).
    fn _read_into(&self, py: Python<'_>, dst: &Bound<'_, PyUntypedArray>) -> PyResult<()> {
        let (ptr, len) = np_buffer(dst)?;
        if len != self.inner.nbytes() {
            return Err(PyValueError::new_err(format!(
                "asnumpy: destination has {len} bytes, array needs {}",
                self.inner.nbytes()
            )));
        }
        let a = self.inner.clone();
        let p = SendPtr(ptr);
        py.detach(move || {
            let p = p;
            let dst = unsafe { std::slice::from_raw_parts_mut(p.0, len) };
            a.read_into(dst)
        })
        .py_err()
    }

    /// Overwrite all elements from a C-contiguous NumPy array of the same
    /// size and dtype (one copy, straight into this array's storage).
    fn _write_from(&self, py: Python<'_>, src: &Bound<'_, PyUntypedArray>) -> PyResult<()> {
        let (ptr, len) = np_buffer(src)?;
        let a = self.inner.clone();
        let p = SendPtr(ptr);
        py.detach(move || {
            let p = p;
            let s = unsafe { std::slice::from_raw_parts(p.0 as *const u8, len) };
            a.write_from_slice(s)
        })
        .py_err()
    }

    /// View of rows [begin, end) of the first axis (shares storage).
    fn _slice(&self, py: Python<'_>, begin: usize, end: usize) -> PyResult<Py<NDArray>> {
        wrap(py, self.inner.slice_view(begin, end).py_err()?)
    }

    /// View of row i of the first axis (shares storage).
    fn _at(&self, py: Python<'_>, i: usize) -> PyResult<Py<NDArray>> {
        wrap(py, self.inner.at_view(i).py_err()?)
    }

    /// View with another shape (shares storage).
    fn _reshape_view(&self, py: Python<'_>, shape: Vec<usize>) -> PyResult<Py<NDArray>> {
        wrap(py, self.inner.reshape_view(&shape).py_err()?)
    }

    /// `NDArray(handle=...)`: take over an array handle made by oxnet's C API
    /// (`mx.base._LIB.MXNDArrayFromDLPack`); `handle` is a ctypes pointer or an int. Any other
    /// address is refused. Arrays are otherwise made by `mx.nd.array`, `mx.nd.zeros`, ...
    #[new]
    #[pyo3(signature = (handle=None, writable=true))]
    fn py_new(handle: Option<&Bound<'_, PyAny>>, writable: bool) -> PyResult<Self> {
        let _ = writable;
        let Some(h) = handle else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "NDArray(): make arrays with mx.nd.array, mx.nd.zeros, mx.nd.empty, ...; \
                 NDArray(handle=...) takes a handle from oxnet's C API (mx.base._LIB)",
            ));
        };
        let addr: Option<usize> = if h.hasattr("value")? {
            h.getattr("value")?.extract()?
        } else {
            h.extract()?
        };
        let core = addr.and_then(crate::capi::take_handle).ok_or_else(|| {
            PyValueError::new_err(
                "NDArray(handle=...): not a live array handle made by oxnet's C API \
                 (handles are taken once)",
            )
        })?;
        Ok(NDArray { inner: core })
    }

    /// Make this Python object refer to `other`'s array (MXNet's `__setstate__` replaces the
    /// handle of an existing NDArray).
    fn _assign_from(&mut self, other: PyRef<'_, NDArray>) {
        self.inner = other.inner.clone();
    }

    fn _same_memory(&self, other: PyRef<'_, NDArray>) -> bool {
        self.inner.same_chunk(&other.inner)
    }

    fn _is_contiguous_whole(&self) -> bool {
        self.inner.offset == 0 && self.inner.nbytes() == self.inner.chunk.nbytes
    }

    /// Attach a gradient buffer (zeros) so backward computes this array's
    /// gradient; grad_req is 'write', 'add' or 'null'.
    #[pyo3(signature = (grad_req="write", stype=None))]
    fn attach_grad(&mut self, grad_req: &str, stype: Option<&str>) -> PyResult<()> {
        if let Some(s) = stype {
            if s != "default" {
                return Err(PyValueError::new_err(format!(
                    "attach_grad: stype '{s}' is not supported (only 'default')"
                )));
            }
        }
        let req = autograd::GradReq::parse(grad_req).py_err()?;
        autograd::mark_variable(&mut self.inner, None, req).py_err()
    }

    /// The gradient buffer attached by attach_grad (None if there is none).
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<Py<NDArray>>> {
        match &self.inner.ag {
            Some(autograd::AgInfo::Variable(v)) => match v.grad.lock().clone() {
                Some(g) => Ok(Some(wrap(py, g)?)),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    #[getter]
    fn _grad_req(&self) -> Option<&'static str> {
        match &self.inner.ag {
            Some(autograd::AgInfo::Variable(v)) => Some(match v.req {
                autograd::GradReq::Null => "null",
                autograd::GradReq::Write => "write",
                autograd::GradReq::Add => "add",
            }),
            _ => None,
        }
    }

    /// Whether this array's gradient (attached by attach_grad or
    /// autograd.mark_variables) has been written by autograd.backward since
    /// the flag was last reset: 1 or 0, as in MXNet. Set it to False after
    /// consuming the gradient (Gluon's Trainer does). Arrays outside autograd
    /// read 0 and cannot be set; recorded results keep a flag of their own
    /// (shared by the outputs of one operator), which backward never sets.
    #[getter(_fresh_grad)]
    fn fresh_grad_get(&self) -> i32 {
        self.inner.ag.as_ref().is_some_and(|a| a.fresh_grad()) as i32
    }

    #[setter(_fresh_grad)]
    fn fresh_grad_set(&self, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let on = state.is_truthy()?;
        match &self.inner.ag {
            Some(a) => {
                a.set_fresh_grad(on);
                Ok(())
            }
            None => Err(to_py(oxnet_core::Error::Param(
                "_fresh_grad: NDArray has not been marked as a variable and does not have gradient state \
                 (call attach_grad() or autograd.mark_variables() first)"
                    .into(),
            ))),
        }
    }

    /// True when this array takes part in autograd (a variable or recorded).
    #[getter]
    fn _has_ag(&self) -> bool {
        self.inner.ag.is_some()
    }

    /// The same data, cut from the autograd graph.
    fn detach(&self, py: Python<'_>) -> PyResult<Py<NDArray>> {
        let mut a = self.inner.clone();
        a.ag = None;
        wrap(py, a)
    }

    fn _shape_str(&self) -> String {
        fmt_shape(&self.inner.shape)
    }
}

/// A new uninitialised array.
#[pyfunction]
#[pyo3(signature = (shape, dtype="float32", ctx=None))]
fn empty(
    py: Python<'_>,
    shape: Vec<usize>,
    dtype: &str,
    ctx: Option<(i32, i32)>,
) -> PyResult<Py<NDArray>> {
    let dt = DType::from_name(dtype).map_err(to_py)?;
    let c = ctx_of(ctx)?.unwrap_or_default();
    wrap(py, Core::empty(&shape, dt, c).py_err()?)
}

/// A new array holding a copy of a C-contiguous NumPy array.
#[pyfunction]
#[pyo3(signature = (src, ctx=None))]
fn from_numpy(
    py: Python<'_>,
    src: &Bound<'_, PyUntypedArray>,
    ctx: Option<(i32, i32)>,
) -> PyResult<Py<NDArray>> {
    let dt_name = src.dtype().str()?.to_string();
    let dt = DType::from_name(&dt_name).map_err(to_py)?;
    let shape: Vec<usize> = src.shape().to_vec();
    let c = ctx_of(ctx)?.unwrap_or_default();
    let a = Core::empty(&shape, dt, c).py_err()?;
    let (ptr, len) = np_buffer(src)?;
    if len != a.nbytes() {
        return Err(PyValueError::new_err("internal: byte size mismatch"));
    }
    let s = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    if len > 1 << 20 {
        let p = SendPtr(ptr);
        let a2 = a.clone();
        py.detach(move || {
            let _p = &p;
            a2.write_from_slice(s)
        })
        .py_err()?;
    } else {
        a.write_from_slice(s).py_err()?;
    }
    wrap(py, a)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    Ok(())
}
