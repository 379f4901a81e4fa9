//! oxnet's Rust core: dependency engine, pooled storage, NDArray, one
//! operator registry, and the imperative call path. No Python here.
pub mod autograd;
pub mod base;
pub mod engine;
pub mod error;
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
