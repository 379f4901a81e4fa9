//! oxnet's Rust core: dependency engine, pooled storage, NDArray, one
//! operator registry, and the imperative call path. No Python here.
// `!(a > b)` is deliberate in kernels: it is true for NaN, which is the
// semantics MXNet's comparisons rely on.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
// Kernel entry points take the tensor geometry as plain arguments.
#![allow(clippy::too_many_arguments)]
// Tests build small argument lists as `&[a.clone()]` and index parallel
// expected/actual arrays by position; that reads better there.
#![cfg_attr(
    test,
    allow(
        clippy::cloned_ref_to_slice_refs,
        clippy::needless_range_loop,
        clippy::type_complexity
    )
)]
pub mod autograd;
pub mod base;
pub mod engine;
pub mod error;
pub mod executor;
pub mod graph;
pub mod io;
pub mod ndarray;
pub mod ops;
pub mod par;
pub mod profiler;
pub mod random;
pub mod storage;

pub use base::{Context, DType, Shape};
pub use error::{Error, Result};
pub use ndarray::NDArray;
