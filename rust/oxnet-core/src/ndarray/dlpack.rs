//! DLPack interchange for CPU arrays: the unversioned `DLManagedTensor` of
//! DLPack 0.x (MXNet 1.9.1's `"dltensor"` capsules) and DLPack 1.x's
//! `DLManagedTensorVersioned` (`"dltensor_versioned"`, with flags; what
//! `__dlpack__(max_version=(1, 0))` asks for).
//!
//! Export ([`to_dlpack`]) hands out a heap-allocated `DLManagedTensor` whose
//! `manager_ctx` holds a clone of the array: the memory stays valid until
//! the consumer calls `deleter`, whatever happens to the array meanwhile.
//! Import ([`DLView::describe`] then [`import`]) shares a compact tensor's
//! memory through external storage and copies a strided or misaligned one.
//! The Python-facing capsule handling lives in oxnet-py.
use super::NDArray;
use crate::base::{fmt_shape, shape::numel, Context, DType};
use crate::error::{Error, Result};
use crate::storage::Owner;
use std::ffi::c_void;

/// `kDLCPU`.
pub const KDL_CPU: i32 = 1;
/// `kDLInt`, `kDLUInt`, `kDLFloat`, `kDLBool` type codes.
pub const KDL_INT: u8 = 0;
pub const KDL_UINT: u8 = 1;
pub const KDL_FLOAT: u8 = 2;
pub const KDL_BOOL: u8 = 6;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    /// Strides in elements; NULL means compact row-major.
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// The DLPack version oxnet writes in versioned tensors and the newest
/// major version it reads.
pub const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };
/// The producer does not allow writes through this tensor.
pub const FLAG_READ_ONLY: u64 = 1;
/// The producer made a copy for this export.
pub const FLAG_IS_COPIED: u64 = 1 << 1;

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// The DLPack type of an oxnet dtype. Booleans are one byte per element,
/// which current DLPack spells `kDLBool` with 8 bits.
pub fn dl_dtype(dt: DType) -> DLDataType {
    let (code, bits) = match dt {
        DType::F32 => (KDL_FLOAT, 32),
        DType::F64 => (KDL_FLOAT, 64),
        DType::F16 => (KDL_FLOAT, 16),
        DType::U8 => (KDL_UINT, 8),
        DType::I8 => (KDL_INT, 8),
        DType::I32 => (KDL_INT, 32),
        DType::I64 => (KDL_INT, 64),
        DType::Bool => (KDL_BOOL, 8),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The oxnet dtype of a DLPack type. MXNet 1.9.1 exported booleans as
/// `kDLUInt` with 1 bit (one byte per element all the same); that is read as
/// bool too.
pub fn dtype_of(t: DLDataType) -> Result<DType> {
    let dt = match (t.code, t.bits, t.lanes) {
        (KDL_FLOAT, 32, 1) => DType::F32,
        (KDL_FLOAT, 64, 1) => DType::F64,
        (KDL_FLOAT, 16, 1) => DType::F16,
        (KDL_UINT, 8, 1) => DType::U8,
        (KDL_INT, 8, 1) => DType::I8,
        (KDL_INT, 32, 1) => DType::I32,
        (KDL_INT, 64, 1) => DType::I64,
        (KDL_BOOL, 8, 1) | (KDL_UINT, 1, 1) => DType::Bool,
        _ => {
            return Err(Error::DType(format!(
                "from_dlpack: unsupported DLPack data type (code={}, bits={}, lanes={}); \
                 supported: float16/32/64, int8/32/64, uint8, bool",
                t.code, t.bits, t.lanes
            )))
        }
    };
    Ok(dt)
}

struct ExportCtx {
    _array: NDArray,
    shape: Vec<i64>,
}

unsafe extern "C" fn export_deleter(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` and its context were made by `to_dlpack` with Box.
    let m = unsafe { Box::from_raw(m) };
    if !m.manager_ctx.is_null() {
        drop(unsafe { Box::from_raw(m.manager_ctx as *mut ExportCtx) });
    }
}

unsafe extern "C" fn export_deleter_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` and its context were made by `to_dlpack_versioned` with Box.
    let m = unsafe { Box::from_raw(m) };
    if !m.manager_ctx.is_null() {
        drop(unsafe { Box::from_raw(m.manager_ctx as *mut ExportCtx) });
    }
}

/// The tensor describing `a` and the context that keeps it alive (the
/// tensor's shape points into the context).
fn export_parts(a: &NDArray) -> Result<(DLTensor, *mut c_void)> {
    if !a.ctx().is_cpu() {
        return Err(Error::Device(format!(
            "to_dlpack: only CPU arrays can be exported, not {}",
            a.ctx()
        )));
    }
    let data = a.blob()?.raw_ptr();
    let mut keep = a.clone();
    keep.ag = None;
    let mut ctx = Box::new(ExportCtx {
        _array: keep,
        shape: a.shape.iter().map(|&d| d as i64).collect(),
    });
    let tensor = DLTensor {
        data: data as *mut c_void,
        device: DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        ndim: a.ndim() as i32,
        dtype: dl_dtype(a.dtype()),
        shape: ctx.shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    Ok((tensor, Box::into_raw(ctx) as *mut c_void))
}

/// Export `a` as a `DLManagedTensor` (compact, strides NULL, kDLCPU). The
/// caller waits for the pending operations it must see first (writes for a
/// read view; reads and writes for a write view). The returned pointer is
/// owned by the consumer, who must call its `deleter` exactly once; until
/// then the array's memory is kept alive.
pub fn to_dlpack(a: &NDArray) -> Result<*mut DLManagedTensor> {
    let (tensor, ctx) = export_parts(a)?;
    Ok(Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: tensor,
        manager_ctx: ctx,
        deleter: Some(export_deleter),
    })))
}

/// [`to_dlpack`] as a DLPack 1.0 `DLManagedTensorVersioned` with `flags`.
pub fn to_dlpack_versioned(a: &NDArray, flags: u64) -> Result<*mut DLManagedTensorVersioned> {
    let (tensor, ctx) = export_parts(a)?;
    Ok(Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: DLPACK_VERSION,
        manager_ctx: ctx,
        deleter: Some(export_deleter_versioned),
        flags,
        dl_tensor: tensor,
    })))
}

/// A validated description of a DLPack tensor (nothing owned yet).
#[derive(Debug, Clone)]
pub struct DLView {
    /// `data + byte_offset`.
    pub ptr: *mut u8,
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Strides in elements; None when the layout is compact row-major.
    pub strides: Option<Vec<i64>>,
    /// The producer forbids writes (DLPack 1.x flag): never shared.
    pub read_only: bool,
}

impl DLView {
    /// Check a tensor a producer handed over: CPU device, a supported dtype
    /// with one lane, non-negative shape. Strides that describe the compact
    /// layout anyway (any stride on an axis of size 1) count as compact.
    ///
    /// # Safety
    /// `t` must point to a valid `DLTensor` whose `shape` (and `strides`,
    /// when not NULL) arrays hold `ndim` entries.
    pub unsafe fn describe(t: *const DLTensor) -> Result<DLView> {
        let t = unsafe { &*t };
        if t.device.device_type != KDL_CPU {
            return Err(Error::Device(format!(
                "from_dlpack: only CPU tensors (device type {KDL_CPU}, kDLCPU) are supported, \
                 got device type {}",
                t.device.device_type
            )));
        }
        let dtype = dtype_of(t.dtype)?;
        if t.ndim < 0 || (t.ndim > 0 && t.shape.is_null()) {
            return Err(Error::Shape(format!(
                "from_dlpack: invalid tensor (ndim={}, shape pointer {:p})",
                t.ndim, t.shape
            )));
        }
        let nd = t.ndim as usize;
        let dims: &[i64] = if nd == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(t.shape, nd) }
        };
        if let Some(d) = dims.iter().find(|&&d| d < 0) {
            return Err(Error::Shape(format!(
                "from_dlpack: negative dimension {d} in shape {dims:?}"
            )));
        }
        let shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        shape
            .iter()
            .try_fold(dtype.size(), |n, &d| n.checked_mul(d))
            .ok_or_else(|| Error::Shape(format!("from_dlpack: shape {dims:?} is too large")))?;
        let strides = if t.strides.is_null() || nd == 0 {
            None
        } else {
            let st = unsafe { std::slice::from_raw_parts(t.strides, nd) }.to_vec();
            if is_compact(&shape, &st) {
                None
            } else {
                Some(st)
            }
        };
        if t.data.is_null() && numel(&shape) > 0 {
            return Err(Error::Param(format!(
                "from_dlpack: tensor of shape {} has a NULL data pointer",
                fmt_shape(&shape)
            )));
        }
        let ptr = (t.data as *mut u8).wrapping_add(t.byte_offset as usize);
        Ok(DLView {
            ptr,
            shape,
            dtype,
            strides,
            read_only: false,
        })
    }

    /// [`DLView::describe`] for a DLPack 1.x tensor: checks the major
    /// version and reads the read-only flag.
    ///
    /// # Safety
    /// As for [`DLView::describe`], with `m` a valid versioned tensor.
    pub unsafe fn describe_versioned(m: *const DLManagedTensorVersioned) -> Result<DLView> {
        let m = unsafe { &*m };
        if m.version.major > DLPACK_VERSION.major {
            return Err(Error::Param(format!(
                "from_dlpack: DLPack version {}.{} is not supported (at most {}.x)",
                m.version.major, m.version.minor, DLPACK_VERSION.major
            )));
        }
        let mut v = unsafe { Self::describe(&m.dl_tensor) }?;
        v.read_only = m.flags & FLAG_READ_ONLY != 0;
        Ok(v)
    }

    /// True when the memory can be shared as it is: writable, compact and
    /// aligned.
    pub fn can_share(&self) -> bool {
        !self.read_only
            && self.strides.is_none()
            && (numel(&self.shape) == 0 || NDArray::is_aligned_for(self.ptr, self.dtype))
    }

    /// A new pooled array holding a compact copy of the elements.
    ///
    /// # Safety
    /// The memory the view describes must be valid for reads.
    pub unsafe fn copy(&self, ctx: Context) -> Result<NDArray> {
        let out = NDArray::empty(&self.shape, self.dtype, ctx)?;
        let n = numel(&self.shape);
        if n == 0 {
            return Ok(out);
        }
        let es = self.dtype.size();
        let dst = out.blob()?.bytes_mut().as_mut_ptr();
        match &self.strides {
            None => unsafe { std::ptr::copy_nonoverlapping(self.ptr, dst, n * es) },
            Some(st) => {
                let nd = self.shape.len();
                let mut idx = vec![0usize; nd];
                let mut src_off: isize = 0;
                for i in 0..n {
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.ptr.offset(src_off * es as isize),
                            dst.add(i * es),
                            es,
                        )
                    };
                    // Advance the row-major index, tracking the source offset.
                    for ax in (0..nd).rev() {
                        idx[ax] += 1;
                        src_off += st[ax] as isize;
                        if idx[ax] < self.shape[ax] {
                            break;
                        }
                        src_off -= st[ax] as isize * self.shape[ax] as isize;
                        idx[ax] = 0;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Strides (in elements) that address the same bytes as the row-major
/// layout of `shape`.
fn is_compact(shape: &[usize], strides: &[i64]) -> bool {
    if numel(shape) == 0 {
        return true;
    }
    let mut expect: i64 = 1;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != expect {
            return false;
        }
        expect *= d as i64;
    }
    true
}

/// An array over the tensor `view` describes: shares the memory (keeping
/// `owner` alive with it) when it is writable, compact and aligned, else a copy
/// (dropping `owner` before returning).
///
/// # Safety
/// `owner` must keep the memory the view describes valid while it lives.
pub unsafe fn import(view: &DLView, owner: Owner, ctx: Context) -> Result<NDArray> {
    if view.can_share() {
        unsafe { NDArray::from_external(view.ptr, &view.shape, view.dtype, ctx, owner) }
    } else {
        let out = unsafe { view.copy(ctx) };
        drop(owner);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn export_keeps_array_alive_until_deleter() {
        let a = NDArray::from_vec(
            vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[2, 3],
            Context::cpu(0),
        )
        .unwrap();
        let v = a.slice_view(1, 2).unwrap();
        let m = to_dlpack(&v).unwrap();
        drop(v);
        drop(a);
        unsafe {
            let t = &(*m).dl_tensor;
            assert_eq!(t.ndim, 2);
            assert_eq!(std::slice::from_raw_parts(t.shape, 2), &[1, 3]);
            assert!(t.strides.is_null());
            assert_eq!(t.byte_offset, 0);
            assert_eq!(
                t.device,
                DLDevice {
                    device_type: 1,
                    device_id: 0
                }
            );
            assert_eq!(
                t.dtype,
                DLDataType {
                    code: 2,
                    bits: 32,
                    lanes: 1
                }
            );
            let d = std::slice::from_raw_parts(t.data as *const f32, 3);
            assert_eq!(d, &[4.0, 5.0, 6.0]);
            ((*m).deleter.unwrap())(m);
        }
    }

    #[test]
    fn import_shares_compact_and_copies_strided() {
        let mut buf: Vec<f64> = (0..6).map(|i| i as f64).collect();
        let mut shape = [2i64, 3];
        let t = DLTensor {
            data: buf.as_mut_ptr() as *mut c_void,
            device: DLDevice {
                device_type: 1,
                device_id: 0,
            },
            ndim: 2,
            dtype: DLDataType {
                code: 2,
                bits: 64,
                lanes: 1,
            },
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let dropped = Arc::new(AtomicBool::new(false));
        let view = unsafe { DLView::describe(&t) }.unwrap();
        assert!(view.can_share());
        let a = unsafe { import(&view, Box::new(Flag(dropped.clone())), Context::cpu(0)) }.unwrap();
        assert!(a.chunk.storage().unwrap().is_external());
        assert_eq!(
            a.to_vec::<f64>().unwrap(),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        assert!(!dropped.load(Ordering::SeqCst));
        drop(a);
        assert!(dropped.load(Ordering::SeqCst));

        // Transposed view (3, 2) with strides (1, 3): copied, owner released.
        let mut tshape = [3i64, 2];
        let mut tstrides = [1i64, 3];
        let t2 = DLTensor {
            shape: tshape.as_mut_ptr(),
            strides: tstrides.as_mut_ptr(),
            ..t
        };
        let dropped2 = Arc::new(AtomicBool::new(false));
        let view = unsafe { DLView::describe(&t2) }.unwrap();
        assert!(!view.can_share());
        let b =
            unsafe { import(&view, Box::new(Flag(dropped2.clone())), Context::cpu(0)) }.unwrap();
        assert!(dropped2.load(Ordering::SeqCst));
        assert_eq!(
            b.to_vec::<f64>().unwrap(),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        // Negative stride (reversed rows).
        let mut rstrides = [-3i64, 1];
        let t3 = DLTensor {
            data: unsafe { buf.as_mut_ptr().add(3) } as *mut c_void,
            strides: rstrides.as_mut_ptr(),
            ..t
        };
        let view = unsafe { DLView::describe(&t3) }.unwrap();
        let c = unsafe { view.copy(Context::cpu(0)) }.unwrap();
        assert_eq!(
            c.to_vec::<f64>().unwrap(),
            vec![3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
        );
    }

    #[test]
    fn describe_rejects_bad_tensors() {
        let mut shape = [2i64];
        let mut x = [0u8; 8];
        let xp = x.as_mut_ptr() as *mut c_void;
        let mk = |dev: i32, dt: DLDataType, shape: *mut i64| DLTensor {
            data: xp,
            device: DLDevice {
                device_type: dev,
                device_id: 0,
            },
            ndim: 1,
            dtype: dt,
            shape,
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let f32t = DLDataType {
            code: 2,
            bits: 32,
            lanes: 1,
        };
        let e = unsafe { DLView::describe(&mk(2, f32t, shape.as_mut_ptr())) }.unwrap_err();
        assert!(e.to_string().contains("device type 2"), "{e}");
        let c64 = DLDataType {
            code: 5,
            bits: 64,
            lanes: 1,
        };
        let e = unsafe { DLView::describe(&mk(1, c64, shape.as_mut_ptr())) }.unwrap_err();
        assert!(e.to_string().contains("code=5"), "{e}");
        let mut neg = [-1i64];
        let e = unsafe { DLView::describe(&mk(1, f32t, neg.as_mut_ptr())) }.unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        let mut huge = [i64::MAX];
        let e = unsafe { DLView::describe(&mk(1, f32t, huge.as_mut_ptr())) }.unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
        // MXNet 1.9.1's boolean code reads as bool.
        let mxbool = DLDataType {
            code: 1,
            bits: 1,
            lanes: 1,
        };
        let v = unsafe { DLView::describe(&mk(1, mxbool, shape.as_mut_ptr())) }.unwrap();
        assert_eq!(v.dtype, DType::Bool);
    }

    #[test]
    fn versioned_export_and_read_only_import() {
        let a = NDArray::from_vec(vec![1i32, 2, 3], &[3], Context::cpu(0)).unwrap();
        let m = to_dlpack_versioned(&a, FLAG_IS_COPIED).unwrap();
        unsafe {
            assert_eq!((*m).version, DLPackVersion { major: 1, minor: 0 });
            assert_eq!((*m).flags, FLAG_IS_COPIED);
            let v = DLView::describe_versioned(m).unwrap();
            assert!(v.can_share());
            (*m).flags = FLAG_READ_ONLY;
            let v = DLView::describe_versioned(m).unwrap();
            assert!(!v.can_share());
            let b = import(&v, Box::new(()), Context::cpu(0)).unwrap();
            assert!(!b.chunk.storage().unwrap().is_external());
            assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
            (*m).version.major = 2;
            assert!(DLView::describe_versioned(m).is_err());
            ((*m).deleter.unwrap())(m);
        }
    }

    #[test]
    fn misaligned_memory_is_copied() {
        let mut buf = vec![0u8; 16];
        let p = unsafe { buf.as_mut_ptr().add(1) };
        let e =
            unsafe { NDArray::from_external(p, &[2], DType::F32, Context::cpu(0), Box::new(())) };
        assert!(e.is_err());
        let mut shape = [2i64];
        let t = DLTensor {
            data: p as *mut c_void,
            device: DLDevice {
                device_type: 1,
                device_id: 0,
            },
            ndim: 1,
            dtype: DLDataType {
                code: 2,
                bits: 32,
                lanes: 1,
            },
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let view = unsafe { DLView::describe(&t) }.unwrap();
        assert!(!view.can_share());
        let a = unsafe { import(&view, Box::new(()), Context::cpu(0)) }.unwrap();
        assert!(!a.chunk.storage().unwrap().is_external());
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 0.0]);
    }

    #[test]
    fn kernels_run_on_external_memory() {
        // An operator writing into shared memory is seen by the owner.
        let mut buf: Vec<f32> = vec![1.0, 2.0, 3.0];
        let a = unsafe {
            NDArray::from_external(
                buf.as_mut_ptr() as *mut u8,
                &[3],
                DType::F32,
                Context::cpu(0),
                Box::new(()),
            )
        }
        .unwrap();
        use crate::ops::registry;
        let def = registry::lookup("_plus_scalar").unwrap();
        let attrs = crate::ops::Attrs(vec![("scalar".to_string(), "1".to_string())]);
        let call = registry::parse_call(def, attrs).unwrap();
        registry::invoke(
            std::sync::Arc::new(call),
            &[a.clone()],
            Some(vec![a.clone()]),
            None,
        )
        .unwrap();
        a.wait_to_read().unwrap();
        drop(a);
        assert_eq!(buf, vec![2.0, 3.0, 4.0]);
    }
}
