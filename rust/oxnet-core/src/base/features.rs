//! What this build of oxnet has, reported under MXNet 1.9.1's compile-time feature names
//! (Python: `mx.runtime.Features()`), plus the build profile (`oxnet.__build__`).
//!
//! Every answer is a fact about this binary: CPU instruction sets are the ones the code was
//! compiled for (kernels that pick AVX2 at run time do so on their own), and libraries oxnet
//! does not use (CUDA, cuDNN, MKL-DNN, OpenCV, OpenMP, a BLAS) are reported absent.

/// `(name, enabled)` in MXNet 1.9.1's order (libinfo.h), so scripts that look a name up find it.
pub fn features() -> Vec<(&'static str, bool)> {
    vec![
        ("CUDA", false),
        ("CUDNN", false),
        ("NCCL", false),
        ("CUDA_RTC", false),
        ("TENSORRT", false),
        ("CPU_SSE", cfg!(target_feature = "sse")),
        ("CPU_SSE2", cfg!(target_feature = "sse2")),
        ("CPU_SSE3", cfg!(target_feature = "sse3")),
        ("CPU_SSE4_1", cfg!(target_feature = "sse4.1")),
        ("CPU_SSE4_2", cfg!(target_feature = "sse4.2")),
        ("CPU_SSE4A", cfg!(target_feature = "sse4a")),
        ("CPU_AVX", cfg!(target_feature = "avx")),
        ("CPU_AVX2", cfg!(target_feature = "avx2")),
        // Parallel kernels run on rayon, not OpenMP.
        ("OPENMP", false),
        // mshadow's SSE expression templates: oxnet has no mshadow.
        ("SSE", false),
        ("F16C", cfg!(target_feature = "f16c")),
        // The extension allocates through mimalloc, not jemalloc.
        ("JEMALLOC", false),
        // Matrix products use the pure-Rust `gemm` crate; no BLAS or LAPACK library is linked.
        ("BLAS_OPEN", false),
        ("BLAS_ATLAS", false),
        ("BLAS_MKL", false),
        ("BLAS_APPLE", false),
        ("LAPACK", false),
        ("MKLDNN", false),
        // Images are decoded by zune-jpeg/zune-png and resized by fast_image_resize.
        ("OPENCV", false),
        ("CAFFE", false),
        // The profiler (mx.profiler) is always compiled in.
        ("PROFILER", true),
        ("DIST_KVSTORE", false),
        ("CXX14", false),
        // Shapes and indices are usize: more than 2^31 elements per array are addressable.
        ("INT64_TENSOR_SIZE", cfg!(target_pointer_width = "64")),
        ("SIGNAL_HANDLER", false),
        ("DEBUG", cfg!(debug_assertions)),
        ("TVM_OP", false),
    ]
}

/// "debug" for a build with debug assertions (cargo's dev profile), else "release".
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_gpu_libraries_absent() {
        let f = features();
        let mut names: Vec<_> = f.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), f.len());
        for (n, on) in &f {
            if ["CUDA", "CUDNN", "MKLDNN", "OPENCV"].contains(n) {
                assert!(!on, "{n}");
            }
        }
        let debug = f.iter().find(|(n, _)| *n == "DEBUG").unwrap().1;
        assert_eq!(debug, build_profile() == "debug");
    }
}
