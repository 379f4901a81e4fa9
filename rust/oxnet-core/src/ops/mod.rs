//! Operators: the registry and one file per family.
pub mod attrs;
pub mod registry;
pub mod kernels;
pub mod elemwise;
pub mod init;
pub mod reduce;
pub mod index;
pub mod matrix;
pub mod shape;
pub mod random;
pub mod nn;
pub mod norm;
pub mod loss;
pub mod sequence;
pub mod optim;

pub use attrs::Attrs;
pub use registry::{call, invoke, lookup, OpCall, OpDef};
