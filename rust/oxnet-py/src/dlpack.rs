//! Zero-copy interop: NDArrays over NumPy memory and DLPack capsules
//! ("dltensor" / DLPack 1.x "dltensor_versioned", renamed "used_dltensor" /
//! "used_dltensor_versioned" once consumed).
//!
//! Python objects that keep shared memory alive are held by [`PyOwner`],
//! which core storage drops on whatever thread drops the last reference to
//! the memory, often an engine worker.
use crate::errors::IntoPy;
use crate::ndarray::{wrap, NDArray};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use oxnet_core::ndarray::dlpack::{self, DLManagedTensor, DLManagedTensorVersioned, DLView};
use oxnet_core::ndarray::NDArray as Core;
use oxnet_core::{Context, DType};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;

const DLTENSOR: &std::ffi::CStr = c"dltensor";
const USED_DLTENSOR: &std::ffi::CStr = c"used_dltensor";
const DLTENSOR_V: &std::ffi::CStr = c"dltensor_versioned";
const USED_DLTENSOR_V: &std::ffi::CStr = c"used_dltensor_versioned";

/// Owner of external memory that holds a Python object.
///
/// Dropped on a thread that holds the GIL (an array released from Python),
/// the reference is released at once. Dropped anywhere else (an engine
/// worker finishing the last operation on the memory), it goes to PyO3's
/// queue of deferred releases, applied the next time a thread enters oxnet
/// or leaves a GIL-free wait. A worker therefore never waits for the GIL (no
/// deadlock with a Python thread that holds it while waiting on the engine)
/// and never touches an interpreter that is shutting down (the reference is
/// then simply not released, as Python does for objects alive at exit).
struct PyOwner(Option<Py<PyAny>>);

impl Drop for PyOwner {
    fn drop(&mut self) {
        let Some(obj) = self.0.take() else { return };
        // SAFETY: both calls are valid at any time; PyGILState_Check is
        // only trusted once the interpreter is initialized.
        let attached = unsafe { ffi::Py_IsInitialized() != 0 && ffi::PyGILState_Check() == 1 };
        if attached {
            // SAFETY: this thread holds the GIL.
            let py = unsafe { Python::assume_attached() };
            drop(obj.into_bound(py));
        } else {
            drop(obj);
        }
    }
}

pub(crate) fn py_owner(obj: Py<PyAny>) -> oxnet_core::storage::Owner {
    Box::new(PyOwner(Some(obj)))
}

/// A consumed DLPack tensor: calls the producer's deleter when the last
/// array over its memory is gone (Python drops it with the GIL held, as
/// producers such as NumPy expect).
#[pyclass(module = "oxnet.ndarray", name = "_DLPackOwner", frozen)]
pub(crate) struct DLPackOwner {
    pub(crate) managed: usize,
    pub(crate) versioned: bool,
}

impl Drop for DLPackOwner {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a valid capsule we consumed; the
        // deleter is called exactly once, here.
        unsafe {
            if self.versioned {
                let m = self.managed as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// An NDArray sharing the memory of a C-contiguous NumPy array (the caller
/// checked contiguity, native byte order and dtype, and marked the array
/// read-only). The array stays alive as long as the NDArray's memory does.
/// Memory not aligned for the dtype is copied instead.
#[pyfunction]
fn _from_numpy_shared(py: Python<'_>, src: &Bound<'_, PyUntypedArray>) -> PyResult<Py<NDArray>> {
    if !src.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "Only c-contiguous arrays are supported for zero-copy",
        ));
    }
    let dt = DType::from_name(&src.dtype().str()?.to_string()).py_err()?;
    let shape: Vec<usize> = src.shape().to_vec();
    // SAFETY: reading the data pointer of a live array.
    let data = unsafe { (*src.as_array_ptr()).fields.data as *mut u8 };
    let n: usize = shape.iter().product();
    if n > 0 && !Core::is_aligned_for(data, dt) {
        let view = DLView {
            read_only: false,
            ptr: data,
            shape,
            dtype: dt,
            strides: None,
        };
        // SAFETY: `src` is alive for the duration of the copy.
        return wrap(py, unsafe { view.copy(Context::cpu(0)) }.py_err()?);
    }
    let owner = py_owner(src.clone().into_any().unbind());
    // SAFETY: the owner keeps the NumPy array, hence its data, alive.
    let a = unsafe { Core::from_external(data, &shape, dt, Context::cpu(0), owner) }.py_err()?;
    wrap(py, a)
}

unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // A capsule nobody consumed still owns its tensor; a consumed one was
    // renamed "used_..." and its consumer calls the deleter.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            if !m.is_null() {
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

unsafe extern "C" fn capsule_destructor_versioned(cap: *mut ffi::PyObject) {
    unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR_V.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, DLTENSOR_V.as_ptr())
                as *mut DLManagedTensorVersioned;
            if !m.is_null() {
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// Export an array as a "dltensor" PyCapsule after waiting (GIL released)
/// for its pending writes (`for_write=False`) or for every pending access
/// (`for_write=True`). With `versioned`, a DLPack 1.0 "dltensor_versioned"
/// capsule whose flags say IS_COPIED when `copied`.
#[pyfunction]
#[pyo3(signature = (arr, for_write, versioned=false, copied=false))]
fn _to_dlpack(
    py: Python<'_>,
    arr: PyRef<'_, NDArray>,
    for_write: bool,
    versioned: bool,
    copied: bool,
) -> PyResult<Py<PyAny>> {
    let a = arr.inner.clone();
    drop(arr);
    py.detach(|| {
        if for_write {
            a.wait_to_write()
        } else {
            a.wait_to_read()
        }
    })
    .py_err()?;
    if versioned {
        let flags = if copied { dlpack::FLAG_IS_COPIED } else { 0 };
        let m = dlpack::to_dlpack_versioned(&a, flags).py_err()?;
        // SAFETY: as below, for the versioned tensor.
        unsafe {
            let cap = ffi::PyCapsule_New(
                m as *mut std::ffi::c_void,
                DLTENSOR_V.as_ptr(),
                Some(capsule_destructor_versioned),
            );
            if cap.is_null() {
                if let Some(d) = (*m).deleter {
                    d(m);
                }
                return Err(PyErr::fetch(py));
            }
            return Ok(Bound::from_owned_ptr(py, cap).unbind());
        }
    }
    let m = dlpack::to_dlpack(&a).py_err()?;
    // SAFETY: `m` is a valid DLManagedTensor; the capsule takes ownership
    // and its destructor calls the deleter unless a consumer renamed it.
    unsafe {
        let cap = ffi::PyCapsule_New(
            m as *mut std::ffi::c_void,
            DLTENSOR.as_ptr(),
            Some(capsule_destructor),
        );
        if cap.is_null() {
            if let Some(d) = (*m).deleter {
                d(m);
            }
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap).unbind())
    }
}

/// True when `obj` is an unconsumed "dltensor" or "dltensor_versioned"
/// capsule.
#[pyfunction]
fn _is_dltensor_capsule(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: PyCapsule_IsValid accepts any object and sets no error.
    unsafe {
        ffi::PyCapsule_IsValid(obj.as_ptr(), DLTENSOR.as_ptr()) == 1
            || ffi::PyCapsule_IsValid(obj.as_ptr(), DLTENSOR_V.as_ptr()) == 1
    }
}

/// Consume a "dltensor" (or "dltensor_versioned") capsule: an NDArray
/// sharing a compact tensor's memory (copying a strided, misaligned or
/// read-only one). The capsule is renamed "used_..." only once the tensor
/// was accepted; the producer's deleter runs when the last array over the
/// memory is gone (at once for a copy).
#[pyfunction]
fn _from_dlpack(py: Python<'_>, cap: &Bound<'_, PyAny>) -> PyResult<Py<NDArray>> {
    let p = cap.as_ptr();
    // SAFETY: PyCapsule_IsValid accepts any object and sets no error.
    let versioned = unsafe { ffi::PyCapsule_IsValid(p, DLTENSOR_V.as_ptr()) == 1 };
    if !versioned && unsafe { ffi::PyCapsule_IsValid(p, DLTENSOR.as_ptr()) } != 1 {
        return Err(PyValueError::new_err(
            "Invalid DLPack Tensor. DLTensor capsules can be consumed only once.",
        ));
    }
    let (name, used) = if versioned {
        (DLTENSOR_V, USED_DLTENSOR_V)
    } else {
        (DLTENSOR, USED_DLTENSOR)
    };
    // SAFETY: a valid capsule of that name holds that kind of tensor.
    let m = unsafe { ffi::PyCapsule_GetPointer(p, name.as_ptr()) };
    if m.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: the producer guarantees a valid tensor until its deleter runs.
    let view = unsafe {
        if versioned {
            DLView::describe_versioned(m as *const DLManagedTensorVersioned)
        } else {
            DLView::describe(&(*(m as *const DLManagedTensor)).dl_tensor)
        }
    }
    .py_err()?;
    if unsafe { ffi::PyCapsule_SetName(p, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    let owner = Py::new(
        py,
        DLPackOwner {
            managed: m as usize,
            versioned,
        },
    )?;
    // SAFETY: the owner keeps the tensor (and its memory) until it drops.
    let a =
        unsafe { dlpack::import(&view, py_owner(owner.into_any()), Context::cpu(0)) }.py_err()?;
    wrap(py, a)
}

/// True when the array's memory is owned outside oxnet's pool (a NumPy
/// array or a DLPack producer); for tests and diagnostics.
#[pyfunction]
fn _is_external(arr: PyRef<'_, NDArray>) -> bool {
    arr.inner.chunk.is_allocated()
        && arr
            .inner
            .chunk
            .storage()
            .map(|s| s.is_external())
            .unwrap_or(false)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_numpy_shared, m)?)?;
    m.add_function(wrap_pyfunction!(_to_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(_from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(_is_dltensor_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(_is_external, m)?)?;
    Ok(())
}
