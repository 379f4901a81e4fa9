//! Data IO: MXNet-compatible RecordIO files, image decoding and
//! augmentation, and a parallel batch pipeline. Pure Rust, works on byte
//! slices and plain buffers; the Python layer wraps these.
pub mod csv;
pub mod image;
pub mod jpeg;
pub mod mnist;
pub mod pipeline;
pub mod recordio;

/// Rounds for the fuzz-style tests: `default`, or `OXNET_FUZZ_ROUNDS` for a
/// longer local run.
#[cfg(test)]
pub(crate) fn fuzz_rounds(default: usize) -> usize {
    std::env::var("OXNET_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
