//! Data IO: MXNet-compatible RecordIO files, image decoding and
//! augmentation, and a parallel batch pipeline. Pure Rust, works on byte
//! slices and plain buffers; the Python layer wraps these.
pub mod image;
pub mod jpeg;
pub mod pipeline;
pub mod recordio;
