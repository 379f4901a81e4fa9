//! A few entry points of MXNet's C API, for code that calls them through ctypes
//! (`mx.base._LIB` with `check_call`, as MXNet's own tests do): `MXNDArrayFromDLPack`
//! (import a DLPack tensor, taking over its deleter), `MXNDArrayFree` and `MXGetLastError`.
//!
//! A handle is a boxed core NDArray. `mx.nd.NDArray(handle=...)` takes it over through
//! [`take_handle`], which accepts only handles made here and not yet taken (a set of live
//! addresses), so no address coming from Python is dereferenced unchecked.
use crate::dlpack::{py_owner, DLPackOwner};
use crate::errors::IntoPy;
use oxnet_core::ndarray::dlpack::{self, DLManagedTensor, DLView};
use oxnet_core::ndarray::NDArray as Core;
use oxnet_core::Context;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

/// Addresses of the boxed arrays handed out and not yet taken back or freed.
static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(msg: String) -> c_int {
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
    -1
}

/// The message of the last failed call on this thread (valid until the next failure here).
#[no_mangle]
pub extern "C" fn MXGetLastError() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Import the DLPack tensor `dlpack` (a `DLManagedTensor*`) as a new array handle in `*out`.
/// The array takes over the tensor: its deleter runs when the last array over the memory is
/// gone (at once when the data had to be copied). Returns 0, or -1 with MXGetLastError set.
///
/// # Safety
/// `dlpack` must be a valid `DLManagedTensor` whose ownership the caller gives up, and `out`
/// a valid place for one pointer (both are checked for null only).
#[no_mangle]
pub unsafe extern "C" fn MXNDArrayFromDLPack(dlpack: *mut c_void, out: *mut *mut c_void) -> c_int {
    if dlpack.is_null() || out.is_null() {
        return fail("MXNDArrayFromDLPack: the tensor and the output must not be null".into());
    }
    let res = std::panic::catch_unwind(|| {
        let m = dlpack as *const DLManagedTensor;
        // SAFETY: the caller passes a valid tensor (see the function's contract).
        let view = DLView::describe(unsafe { &(*m).dl_tensor }).map_err(|e| e.to_string())?;
        Python::attach(|py| -> PyResult<Core> {
            let owner = Py::new(
                py,
                DLPackOwner {
                    managed: m as usize,
                    versioned: false,
                },
            )?;
            // SAFETY: the owner keeps the tensor (and its memory) until it drops.
            unsafe { dlpack::import(&view, py_owner(owner.into_any()), Context::cpu(0)) }.py_err()
        })
        .map_err(|e| e.to_string())
    });
    match res {
        Ok(Ok(a)) => {
            let p = Box::into_raw(Box::new(a));
            LIVE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(p as usize);
            // SAFETY: `out` is non-null and valid for a write (the function's contract).
            unsafe { *out = p as *mut c_void };
            0
        }
        Ok(Err(msg)) => fail(format!("MXNDArrayFromDLPack: {msg}")),
        Err(_) => fail("MXNDArrayFromDLPack: internal error (panic)".into()),
    }
}

/// Free a handle made by MXNDArrayFromDLPack and not taken by `NDArray(handle=...)`.
/// Returns 0, or -1 for anything else.
#[no_mangle]
pub extern "C" fn MXNDArrayFree(handle: *mut c_void) -> c_int {
    match take_handle(handle as usize) {
        Some(a) => {
            drop(a);
            0
        }
        None => fail(format!(
            "MXNDArrayFree: {handle:?} is not a live NDArray handle"
        )),
    }
}

/// The array behind a live handle, which is no longer live afterwards; None for any other
/// address.
pub fn take_handle(addr: usize) -> Option<Core> {
    if !LIVE.lock().unwrap_or_else(|e| e.into_inner()).remove(&addr) {
        return None;
    }
    // SAFETY: `addr` came from Box::into_raw in MXNDArrayFromDLPack and was live (in LIVE,
    // removed just now under the lock), so it is taken back exactly once.
    Some(*unsafe { Box::from_raw(addr as *mut Core) })
}
