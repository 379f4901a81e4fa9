//! Neural-network operators: fully-connected, convolution, deconvolution,
//! pooling, up-sampling, activations, softmax, embedding, pad and crop.
//!
//! Backward passes that are not compositions of public operators are
//! internal operators (`_backward_<Op>`), full registry entries with shape
//! and type inference and a CPU kernel; their parameters are the forward
//! operator's attributes.
use super::registry::{Entry, GradBuilder, OpCall, OpDef};
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};

pub mod act;
pub mod conv;
pub mod correlation;
pub mod ctc;
pub mod heads;
pub mod im2col;
pub mod misc;
pub mod pool;
pub mod roi;
pub mod spatial;
pub mod winograd;

pub static OPS: &[&OpDef] = &[
    &conv::FULLY_CONNECTED,
    &conv::CONVOLUTION,
    &conv::BACKWARD_CONVOLUTION,
    &conv::DECONVOLUTION,
    &conv::BACKWARD_DECONVOLUTION,
    &pool::POOLING,
    &pool::BACKWARD_POOLING,
    &pool::UPSAMPLING,
    &pool::BACKWARD_UPSAMPLING,
    &act::ACTIVATION,
    &act::BACKWARD_ACTIVATION,
    &act::LEAKY_RELU,
    &act::BACKWARD_LEAKY_RELU,
    &act::SOFTMAX,
    &act::LOG_SOFTMAX,
    &act::SOFTMIN,
    &act::BACKWARD_SOFTMAX,
    &act::SOFTMAX_ACTIVATION,
    &misc::EMBEDDING,
    &misc::BACKWARD_EMBEDDING,
    &misc::PAD,
    &misc::BACKWARD_PAD,
    &misc::CROP,
    &misc::BACKWARD_CROP,
    &im2col::IM2COL,
    &im2col::BACKWARD_IM2COL,
    &im2col::COL2IM,
    &spatial::GRID_GENERATOR,
    &spatial::BACKWARD_GRID_GENERATOR,
    &spatial::BILINEAR_SAMPLER,
    &spatial::BACKWARD_BILINEAR_SAMPLER,
    &spatial::SPATIAL_TRANSFORMER,
    &roi::ROI_POOLING,
    &roi::BACKWARD_ROI_POOLING,
    &ctc::CTC_LOSS,
    &ctc::BACKWARD_CTC_LOSS,
    &correlation::CORRELATION,
    &correlation::BACKWARD_CORRELATION,
    &heads::SVM_OUTPUT,
    &heads::BACKWARD_SVM_OUTPUT,
    &heads::IDENTITY_ATTACH_KL_SPARSE_REG,
    &heads::BACKWARD_IDENTITY_ATTACH_KL_SPARSE_REG,
];

/// The forward call's attributes, to pass to its backward operator.
pub(crate) fn fwd_attrs(c: &OpCall) -> Vec<(&str, String)> {
    c.attrs
        .0
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect()
}

/// Build `_backward_<op>` with the forward attributes and turn its outputs
/// into one gradient per forward input (`None` where `mask` is false).
pub(crate) fn backward_op(
    c: &OpCall,
    b: &mut dyn GradBuilder,
    name: &str,
    inputs: &[Entry],
    mask: &[bool],
) -> Result<Vec<Option<Entry>>> {
    let outs = b.op(name, &fwd_attrs(c), inputs)?;
    let mut it = outs.into_iter();
    Ok(mask
        .iter()
        .map(|&m| if m { it.next() } else { None })
        .collect())
}

/// All known dtypes equal and floating point; fills the unknown ones.
pub(crate) fn infer_float_same(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    super::registry::infer_type_same(call, ins, outs)?;
    if let Some(t) = ins.iter().chain(outs.iter()).flatten().next() {
        if !t.is_float() {
            return Err(Error::DType(format!(
                "{}: dtype {} is not supported (float32, float64 or float16 only)",
                call.name(),
                t.name()
            )));
        }
    }
    Ok(())
}

/// Set `slot` to `want`, or check that a known shape equals it.
pub(crate) fn fill_shape(
    op: &str,
    what: &str,
    slot: &mut Option<Vec<usize>>,
    want: Vec<usize>,
    why: &str,
) -> Result<()> {
    match slot {
        None => {
            *slot = Some(want);
            Ok(())
        }
        Some(s) if *s == want => Ok(()),
        Some(s) => Err(Error::Shape(format!(
            "{op}: {what} shape {} does not match: expected {}{why}",
            fmt_shape(s),
            fmt_shape(&want)
        ))),
    }
}

/// Copies a `Vec<f64>`-computing kernel result into a typed blob.
pub(crate) fn to_f64_vec(b: &crate::ndarray::Blob) -> Vec<f64> {
    crate::dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| crate::base::dtype::Elem::to_f64(*v)).collect())
}

pub(crate) fn write_f64(b: &crate::ndarray::Blob, v: &[f64]) {
    crate::dispatch_dtype!(b.dtype, T => {
        let d = b.data_mut::<T>();
        super::kernels::map1(v, d, <T as crate::base::dtype::Elem>::from_f64);
    })
}
