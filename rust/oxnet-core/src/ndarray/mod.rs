//! NDArray = shared chunk (engine var + pooled storage) + shape + offset.
//! Views (first-axis slices, reshapes) share the chunk, so a write through a
//! view is ordered with every other access to the same memory.
use crate::base::{fmt_shape, shape::numel, Context, DType, Shape};
use crate::engine::{self, Var};
use crate::error::{Error, Result};
use crate::storage::{self, Storage};
use std::sync::{Arc, OnceLock};

pub mod dlpack;
pub mod serialize;

/// The memory behind one or more arrays (views share a chunk). Storage is
/// allocated by the first operation that touches the chunk, inside the
/// engine, so arrays queued behind long-running work hold no memory yet.
pub struct Chunk {
    pub var: Var,
    storage: OnceLock<Storage>,
    pub nbytes: usize,
    pub dtype: DType,
    pub ctx: Context,
}

impl Chunk {
    /// The chunk's storage, allocated from the pool on first use.
    pub fn storage(&self) -> Result<&Storage> {
        if let Some(s) = self.storage.get() {
            return Ok(s);
        }
        let s = storage::alloc(self.nbytes, self.ctx)?;
        Ok(self.storage.get_or_init(|| s))
    }

    pub fn is_allocated(&self) -> bool {
        self.storage.get().is_some()
    }
}

#[derive(Clone)]
pub struct NDArray {
    pub chunk: Arc<Chunk>,
    pub shape: Shape,
    /// Offset of the first element, in elements.
    pub offset: usize,
    /// Autograd: the variable's gradient buffer, or the tape node that
    /// produced this array while recording.
    pub ag: Option<crate::autograd::AgInfo>,
}

/// A raw view handed to kernels. The engine guarantees that no conflicting
/// access runs concurrently, which is what makes the accessors sound.
#[derive(Clone)]
pub struct Blob {
    ptr: *mut u8,
    pub shape: Shape,
    pub dtype: DType,
}

unsafe impl Send for Blob {}
unsafe impl Sync for Blob {}

impl Blob {
    pub fn size(&self) -> usize {
        numel(&self.shape)
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype.size()
    }
    pub fn raw_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Typed read access. Panics (caught by the engine) on a dtype mismatch.
    pub fn data<T: crate::base::dtype::Elem>(&self) -> &[T] {
        assert_eq!(T::DTYPE, self.dtype, "kernel dtype mismatch");
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.size()) }
    }
    /// Typed write access.
    #[allow(clippy::mut_from_ref)]
    pub fn data_mut<T: crate::base::dtype::Elem>(&self) -> &mut [T] {
        assert_eq!(T::DTYPE, self.dtype, "kernel dtype mismatch");
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, self.size()) }
    }
    pub fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.nbytes()) }
    }
    #[allow(clippy::mut_from_ref)]
    pub fn bytes_mut(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.nbytes()) }
    }
    pub fn with_shape(&self, shape: Shape) -> Blob {
        Blob {
            ptr: self.ptr,
            shape,
            dtype: self.dtype,
        }
    }
}

impl NDArray {
    /// A new array with uninitialised (pooled) storage.
    pub fn empty(shape: &[usize], dtype: DType, ctx: Context) -> Result<NDArray> {
        // checked: a wrapped element count would make a small block for a
        // huge shape
        let nbytes = shape
            .iter()
            .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::Shape(format!(
                    "shape {} of dtype {} is too large to allocate",
                    fmt_shape(shape),
                    dtype.name()
                ))
            })?;
        if !ctx.is_cpu() {
            return Err(Error::Device(format!(
                "{ctx} is not available: this build of oxnet has no GPU backend (mx.context.num_gpus() == 0)"
            )));
        }
        // the storage comes later, on a worker: refuse now what cannot fit
        storage::check_fits(nbytes, &|| {
            format!("an array of shape {} {}", fmt_shape(shape), dtype.name())
        })?;
        Ok(NDArray {
            chunk: Arc::new(Chunk {
                var: Var::new(),
                storage: OnceLock::new(),
                nbytes,
                dtype,
                ctx,
            }),
            shape: shape.to_vec(),
            offset: 0,
            ag: None,
        })
    }

    /// True when `ptr` meets the alignment kernels assume for `dtype`
    /// elements (their size; see the storage module on why 64 bytes is not
    /// assumed).
    pub fn is_aligned_for(ptr: *const u8, dtype: DType) -> bool {
        (ptr as usize).is_multiple_of(dtype.size())
    }

    /// An array over memory someone else owns, without a copy: `owner` is
    /// kept alive until the array, its views and every pending operation on
    /// them are gone, then dropped (on whichever thread drops the last
    /// reference). Fails, dropping `owner`, when `ptr` is not aligned for
    /// `dtype` (callers copy instead) or the context is not a CPU.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `numel(shape) *
    /// dtype.size()` bytes, C-contiguous, for as long as `owner` lives.
    pub unsafe fn from_external(
        ptr: *mut u8,
        shape: &[usize],
        dtype: DType,
        ctx: Context,
        owner: storage::Owner,
    ) -> Result<NDArray> {
        let nbytes = numel(shape)
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::Shape(format!("shape {} is too large", fmt_shape(shape))))?;
        if !ctx.is_cpu() {
            return Err(Error::Device(format!(
                "external memory can only be wrapped on the CPU, not {ctx}"
            )));
        }
        if nbytes > 0 && !Self::is_aligned_for(ptr, dtype) {
            return Err(Error::Param(format!(
                "external memory at {ptr:p} is not aligned for {} elements ({} bytes)",
                dtype.name(),
                dtype.size()
            )));
        }
        let st = unsafe { Storage::external(ptr, nbytes, ctx, owner) };
        let chunk = Chunk {
            var: Var::new(),
            storage: OnceLock::new(),
            nbytes,
            dtype,
            ctx,
        };
        let _ = chunk.storage.set(st);
        Ok(NDArray {
            chunk: Arc::new(chunk),
            shape: shape.to_vec(),
            offset: 0,
            ag: None,
        })
    }

    pub fn size(&self) -> usize {
        numel(&self.shape)
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn dtype(&self) -> DType {
        self.chunk.dtype
    }
    pub fn ctx(&self) -> Context {
        self.chunk.ctx
    }
    pub fn var(&self) -> &Var {
        &self.chunk.var
    }
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype().size()
    }
    pub fn same_chunk(&self, o: &NDArray) -> bool {
        Arc::ptr_eq(&self.chunk, &o.chunk)
    }

    /// The raw view kernels use; only valid inside an engine operation that
    /// declared this array.
    pub fn blob(&self) -> Result<Blob> {
        let base = self.chunk.storage()?.ptr();
        let ptr = unsafe { base.add(self.offset * self.dtype().size()) };
        Ok(Blob {
            ptr,
            shape: self.shape.clone(),
            dtype: self.dtype(),
        })
    }

    /// A view with another shape over the same elements.
    pub fn reshape_view(&self, shape: &[usize]) -> Result<NDArray> {
        if numel(shape) != self.size() {
            return Err(Error::Shape(format!(
                "reshape: cannot reshape array of shape {} into shape {}",
                fmt_shape(&self.shape),
                fmt_shape(shape)
            )));
        }
        Ok(NDArray {
            chunk: self.chunk.clone(),
            shape: shape.to_vec(),
            offset: self.offset,
            ag: None,
        })
    }

    /// A view of the first elements of the array with another shape (a
    /// planned block shared by entries of several sizes).
    pub fn prefix_view(&self, shape: &[usize]) -> Result<NDArray> {
        if numel(shape) > self.size() {
            return Err(Error::Shape(format!(
                "a view of shape {} does not fit in an array of shape {}",
                fmt_shape(shape),
                fmt_shape(&self.shape)
            )));
        }
        Ok(NDArray {
            chunk: self.chunk.clone(),
            shape: shape.to_vec(),
            offset: self.offset,
            ag: None,
        })
    }

    /// A view of rows `begin..end` of the first axis.
    pub fn slice_view(&self, begin: usize, end: usize) -> Result<NDArray> {
        if self.ndim() == 0 || begin > end || end > self.shape[0] {
            return Err(Error::Index(format!(
                "slice [{begin}:{end}] is out of range for shape {}",
                fmt_shape(&self.shape)
            )));
        }
        let row: usize = self.shape[1..].iter().product();
        let mut shape = self.shape.clone();
        shape[0] = end - begin;
        Ok(NDArray {
            chunk: self.chunk.clone(),
            shape,
            offset: self.offset + begin * row,
            ag: None,
        })
    }

    /// A view of one row of the first axis (dropping that axis).
    pub fn at_view(&self, i: usize) -> Result<NDArray> {
        let v = self.slice_view(i, i + 1)?;
        Ok(NDArray {
            chunk: v.chunk,
            shape: self.shape[1..].to_vec(),
            offset: v.offset,
            ag: None,
        })
    }

    /// Wait until the value is computed. Raises the error of the operation
    /// that failed to compute it, once: as in MXNet 1.9.1 (whose own
    /// test_exc_post_fail reads a view of a failed array after the error
    /// was raised through another view, and expects no second error).
    pub fn wait_to_read(&self) -> Result<()> {
        engine::wait_for_var(self.var(), false)
    }

    pub fn wait_to_write(&self) -> Result<()> {
        engine::wait_for_var(self.var(), true)
    }

    /// Fill from host bytes (the engine orders the write).
    pub fn write_bytes(&self, bytes: Vec<u8>) -> Result<()> {
        if bytes.len() != self.nbytes() {
            return Err(Error::Shape(format!(
                "copy: source has {} bytes, array of shape {} and dtype {} needs {}",
                bytes.len(),
                fmt_shape(&self.shape),
                self.dtype().name(),
                self.nbytes()
            )));
        }
        let me = self.clone();
        let inline = bytes.len() <= INLINE_BYTES;
        engine::push(
            "_copyfrom_host",
            self.ctx(),
            vec![],
            vec![self.var().clone()],
            inline,
            Box::new(move |_| {
                me.blob()?.bytes_mut().copy_from_slice(&bytes);
                Ok(())
            }),
        );
        Ok(())
    }

    /// Copy a host buffer straight into the array; waits for pending writers
    /// and readers first, so no intermediate copy is made.
    pub fn write_from_slice(&self, src: &[u8]) -> Result<()> {
        if src.len() != self.nbytes() {
            return Err(Error::Shape(format!(
                "copy: source has {} bytes, array of shape {} and dtype {} needs {}",
                src.len(),
                fmt_shape(&self.shape),
                self.dtype().name(),
                self.nbytes()
            )));
        }
        self.wait_to_write()?;
        self.blob()?.bytes_mut().copy_from_slice(src);
        Ok(())
    }

    /// Wait for pending writes, then copy the elements into `dst`.
    pub fn read_into(&self, dst: &mut [u8]) -> Result<()> {
        self.wait_to_read()?;
        if dst.len() != self.nbytes() {
            return Err(Error::Shape(format!(
                "copy: destination has {} bytes, array needs {}",
                dst.len(),
                self.nbytes()
            )));
        }
        dst.copy_from_slice(self.blob()?.bytes());
        Ok(())
    }

    pub fn to_vec<T: crate::base::dtype::Elem>(&self) -> Result<Vec<T>> {
        self.wait_to_read()?;
        if T::DTYPE != self.dtype() {
            return Err(Error::DType(format!(
                "to_vec: array is {}, asked for {}",
                self.dtype().name(),
                T::DTYPE.name()
            )));
        }
        Ok(self.blob()?.data::<T>().to_vec())
    }

    pub fn from_vec<T: crate::base::dtype::Elem>(
        data: Vec<T>,
        shape: &[usize],
        ctx: Context,
    ) -> Result<NDArray> {
        let a = NDArray::empty(shape, T::DTYPE, ctx)?;
        if data.len() != a.size() {
            return Err(Error::Shape(format!(
                "array: {} values do not fill shape {}",
                data.len(),
                fmt_shape(shape)
            )));
        }
        a.blob()?.data_mut::<T>().copy_from_slice(&data);
        Ok(a)
    }
}

/// Operations writing at most this many bytes run on the pushing thread
/// when their inputs are ready (saves a thread hand-off for tiny ops).
pub const INLINE_BYTES: usize = 64 * 1024;
