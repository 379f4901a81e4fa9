//! Operators: the registry and one file per family.
pub mod attrs;
pub mod elemwise;
pub mod image;
pub mod image_resize;
pub mod index;
pub mod init;
pub mod kernels;
pub mod loss;
pub mod matrix;
pub mod misc;
pub mod nn;
pub mod norm;
pub mod optim;
pub mod optim_multi;
pub mod pdf;
pub mod pool_v1;
pub mod random;
pub mod reduce;
pub mod registry;
pub mod sample;
pub mod sequence;
pub mod sgemm;
pub mod shape;
pub mod special;

pub use attrs::Attrs;
pub use registry::{call, invoke, lookup, OpCall, OpDef};
