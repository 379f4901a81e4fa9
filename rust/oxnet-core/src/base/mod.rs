pub mod context;
pub mod dtype;
pub mod features;
pub mod shape;

pub use context::{Context, DevType};
pub use dtype::DType;
pub use shape::{fmt_shape, Shape};
