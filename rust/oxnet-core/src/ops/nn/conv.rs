//! FullyConnected, Convolution (1-D/2-D/3-D, channel-first and
//! channel-last layouts) and Deconvolution, on the `gemm` crate.
//!
//! Convolution kernels work on a normalised 3-D geometry (1-D and 2-D
//! problems get unit leading spatial axes). Two formulations:
//! - stride 1 ("implicit GEMM"): the input is zero-padded once per image;
//!   for each kernel offset the padded input, read at that offset with the
//!   padded row pitch, *is* the right-hand matrix of a GEMM (no im2col).
//!   Outputs are computed at the padded row pitch and compacted.
//! - any stride: im2col / col2im and one GEMM per group.
//!
//! Images are distributed over rayon threads; a single image parallelises
//! inside the GEMM instead.
//!
//! float32 at stride 1 on AVX2 CPUs (see `use_sgemm`) runs on oxnet's own
//! GEMM instead: the whole Cin*k depth in one product whose right-hand side
//! is gathered from the padded image while packing, and the data gradient
//! as the stride-1 convolution of dy with the flipped, channel-swapped
//! weights. 3x3 float32 convolutions with >= 64 channels take Winograd's
//! algorithm instead (`super::winograd`).
use super::{backward_op, fill_shape, fwd_attrs, infer_float_same, winograd};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::ops::attrs::Attrs;
use crate::ops::registry::{GradBuilder, KernelCtx, OpCall, OpDef, Params};
use crate::par::{par_chunks_mut, par_for_init, par_map};
use gemm::Parallelism;
use half::f16;
use std::ops::{Add, AddAssign, Mul};

type B<'a> = &'a mut dyn GradBuilder;

/// Element types the GEMM-based kernels run on.
pub trait GemmT: Elem + Add<Output = Self> + Mul<Output = Self> + AddAssign + 'static {}
impl GemmT for f32 {}
impl GemmT for f64 {}
impl GemmT for f16 {}

/// dst (m x n) = [dst +] lhs (m x k) . rhs (k x n), all strided (row, col).
/// # Safety
/// The pointers must cover the described matrices; dst must not alias.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) unsafe fn mm<T: GemmT>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    drs: isize,
    dcs: isize,
    acc: bool,
    lhs: *const T,
    lrs: isize,
    lcs: isize,
    rhs: *const T,
    rrs: isize,
    rcs: isize,
    par: Parallelism,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !acc {
            crate::ops::kernels::zero_strided(m, n, dst, drs, dcs, T::from_f64(0.0));
        }
        return;
    }
    let run = move || {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dcs,
            drs,
            acc,
            lhs,
            lcs,
            lrs,
            rhs,
            rcs,
            rrs,
            T::from_f64(1.0),
            T::from_f64(1.0),
            false,
            false,
            false,
            par,
        );
    };
    match par {
        Parallelism::None => run(),
        // SAFETY: install waits for the product; the caller's guarantees on
        // the pointers hold for that time. The kernel pool, never rayon's
        // global one (see crate::par).
        _ => crate::par::install_raw(run),
    }
}

fn inner_par(flops: usize, outer_parallel: bool) -> Parallelism {
    if outer_parallel || flops < 48 * 48 * 48 || crate::par::num_threads() <= 1 {
        Parallelism::None
    } else {
        Parallelism::Rayon(0)
    }
}

/// Raw pointer that may cross rayon tasks (each task touches its own part).
#[derive(Clone, Copy)]
pub(super) struct SendPtr<T>(pub(super) *mut T);
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    #[inline]
    pub(super) fn get(self) -> *mut T {
        self.0
    }
}

// ---------------------------------------------------------------------------
// FullyConnected
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct FcParam {
    pub num_hidden: usize,
    pub no_bias: bool,
    pub flatten: bool,
}

fn parse_fc(a: &Attrs) -> Result<Params> {
    let p = a.p("FullyConnected");
    let nh = p.i64_req("num_hidden")?;
    if nh < 1 {
        return Err(Error::Param(format!(
            "FullyConnected: num_hidden must be positive, got {nh}"
        )));
    }
    Ok(Box::new(FcParam {
        num_hidden: nh as usize,
        no_bias: p.bool("no_bias", false)?,
        flatten: p.bool("flatten", true)?,
    }))
}

/// (rows, in_features) of the data as the product sees it.
fn fc_dims(p: &FcParam, d: &[usize]) -> Result<(usize, usize)> {
    if d.is_empty() {
        return Err(Error::Shape(
            "FullyConnected: data must have at least one dimension, got shape ()".into(),
        ));
    }
    Ok(if p.flatten {
        (d[0], d[1..].iter().product())
    } else {
        (d[..d.len() - 1].iter().product(), d[d.len() - 1])
    })
}

fn fc_infer(c: &OpCall, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = c.p::<FcParam>();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    let (_, k) = fc_dims(p, &d)?;
    let why = format!(
        " for data shape {} and num_hidden={}",
        fmt_shape(&d),
        p.num_hidden
    );
    fill_shape(
        "FullyConnected",
        "weight",
        &mut ins[1],
        vec![p.num_hidden, k],
        &why,
    )?;
    if !p.no_bias {
        fill_shape(
            "FullyConnected",
            "bias",
            &mut ins[2],
            vec![p.num_hidden],
            &why,
        )?;
    }
    let out = if p.flatten {
        vec![d[0], p.num_hidden]
    } else {
        let mut o = d[..d.len() - 1].to_vec();
        o.push(p.num_hidden);
        o
    };
    outs[0] = Some(out);
    Ok(())
}

fn fc_typed<T: GemmT>(p: &FcParam, i: &[Blob], o: &Blob) {
    let (m, k) = fc_dims(p, &i[0].shape).unwrap_or((0, 0));
    let n = p.num_hidden;
    let x = i[0].data::<T>();
    let w = i[1].data::<T>();
    let y = o.data_mut::<T>();
    let acc = if !p.no_bias {
        let b = i[2].data::<T>();
        for r in y.chunks_mut(n) {
            r.copy_from_slice(b);
        }
        true
    } else {
        false
    };
    let par = inner_par(m * n * k, false);
    // y (m x n) = x (m x k) . w^T (k x n)
    unsafe {
        mm(
            m,
            n,
            k,
            y.as_mut_ptr(),
            n as isize,
            1,
            acc,
            x.as_ptr(),
            k as isize,
            1,
            w.as_ptr(),
            1,
            k as isize,
            par,
        )
    };
}

fn fc_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<FcParam>();
    match o[0].dtype {
        DType::F32 => fc_typed::<f32>(p, i, &o[0]),
        DType::F64 => fc_typed::<f64>(p, i, &o[0]),
        DType::F16 => fc_typed::<f16>(p, i, &o[0]),
        d => {
            return Err(Error::DType(format!(
                "FullyConnected: dtype {} is not supported",
                d.name()
            )))
        }
    }
    Ok(())
}

/// Gradients composed of registered operators (so they can be
/// differentiated again): dx = dy . W, dW = dy^T . x, db = sum(dy, 0).
fn fc_grad(c: &OpCall, b: B, x: &[usize], _: &[usize], g: &[usize]) -> Result<Vec<Option<usize>>> {
    let p = c.p::<FcParam>();
    let mat = |b: B, e: usize| -> Result<usize> {
        b.op1(
            "Reshape",
            &[
                ("shape", "(-1, 0)".to_string()),
                ("reverse", "True".to_string()),
            ],
            &[e],
        )
    };
    let x2 = if p.flatten {
        b.op1("Flatten", &[], &[x[0]])?
    } else {
        mat(b, x[0])?
    };
    let g2 = mat(b, g[0])?;
    let dx2 = b.op1("dot", &[], &[g2, x[1]])?;
    let dx = b.op1("reshape_like", &[], &[dx2, x[0]])?;
    let dw = b.op1("dot", &[("transpose_a", "True".to_string())], &[g2, x2])?;
    let mut r = vec![Some(dx), Some(dw)];
    if !p.no_bias {
        r.push(Some(b.op1("sum", &[("axis", "0".to_string())], &[g2])?));
    }
    Ok(r)
}

pub static FULLY_CONNECTED: OpDef = OpDef {
    name: "FullyConnected",
    doc: "out = data . weight^T + bias. data is flattened to (batch, features) when flatten=True; \
          otherwise the product runs over the last axis.",
    inputs: &["data", "weight", "bias"],
    num_inputs: Some(|c| if c.p::<FcParam>().no_bias { 2 } else { 3 }),
    parse: parse_fc,
    infer_shape: fc_infer,
    infer_type: infer_float_same,
    cpu: Some(fc_kernel),
    grad: Some(fc_grad),
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Convolution geometry
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct ConvParam {
    pub op: &'static str,
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub dilate: Vec<usize>,
    pub pad: Vec<usize>,
    pub adj: Vec<usize>,
    pub target_shape: Vec<usize>,
    pub num_filter: usize,
    pub num_group: usize,
    pub no_bias: bool,
    /// NWC / NHWC / NDHWC.
    pub channel_last: bool,
    /// Backward only (internal attribute `__skip_data_grad`): nothing uses
    /// the data gradient, so its output is left unwritten.
    pub skip_data_grad: bool,
}

fn parse_conv_common(a: &Attrs, op: &'static str, deconv: bool) -> Result<ConvParam> {
    let p = a.p(op);
    let kernel = p
        .ints("kernel")?
        .ok_or_else(|| Error::Param(format!("{op}: required argument 'kernel' is missing")))?;
    let nd = kernel.len();
    if !(1..=3).contains(&nd) {
        return Err(Error::Param(format!(
            "{op}: kernel {kernel:?} must have 1, 2 or 3 dimensions"
        )));
    }
    if deconv && nd != 2 && nd != 1 {
        return Err(Error::Param(format!(
            "{op}: only 1-D and 2-D kernels are supported, got kernel {kernel:?}"
        )));
    }
    let tup = |k: &str, def: i64, min: i64| -> Result<Vec<usize>> {
        let v = p.ints(k)?.unwrap_or_default();
        let v = if v.is_empty() { vec![def; nd] } else { v };
        if v.len() != nd {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must have {nd} entries like kernel {kernel:?}"
            )));
        }
        if v.iter().any(|&x| x < min) {
            return Err(Error::Param(format!(
                "{op}: argument '{k}' {v:?} must be >= {min}"
            )));
        }
        Ok(v.into_iter().map(|x| x as usize).collect())
    };
    let kernel_u = tup("kernel", 1, 1)?;
    let stride = tup("stride", 1, 1)?;
    let dilate = tup("dilate", 1, 1)?;
    let pad = tup("pad", 0, 0)?;
    let (adj, target_shape) = if deconv {
        let adj = tup("adj", 0, 0)?;
        let ts = p.ints("target_shape")?.unwrap_or_default();
        let ts: Vec<usize> = if ts.is_empty() || ts.iter().all(|&x| x == 0) {
            vec![]
        } else if ts.len() != nd || ts.iter().any(|&x| x < 1) {
            return Err(Error::Param(format!(
                "{op}: target_shape {ts:?} must have {nd} positive entries"
            )));
        } else {
            ts.into_iter().map(|x| x as usize).collect()
        };
        for i in 0..nd {
            if adj[i] >= stride[i].max(dilate[i]) && ts.is_empty() {
                return Err(Error::Param(format!(
                    "{op}: adj {adj:?} must be smaller than stride {stride:?} (or dilate)"
                )));
            }
        }
        (adj, ts)
    } else {
        (vec![0; nd], vec![])
    };
    let nf = p.i64_req("num_filter")?;
    if nf < 1 {
        return Err(Error::Param(format!(
            "{op}: num_filter must be positive, got {nf}"
        )));
    }
    let ng = p.i64("num_group", 1)?;
    if ng < 1 {
        return Err(Error::Param(format!(
            "{op}: num_group must be positive, got {ng}"
        )));
    }
    let _ = p.i64("workspace", 1024)?; // a memory hint for cuDNN/oneDNN; CPU kernels size their own buffers
    let _ = p.bool("cudnn_off", false)?;
    if let Some(t) = p.opt_str("cudnn_tune") {
        if !["off", "limited_workspace", "fastest"].contains(&t.as_str()) {
            return Err(Error::Param(format!(
                "{op}: cudnn_tune must be off, limited_workspace or fastest, got '{t}'"
            )));
        }
    }
    let default_layout = ["NCW", "NCHW", "NCDHW"][nd - 1];
    let layout = p.str("layout", default_layout);
    let (first, last) = (
        ["NCW", "NCHW", "NCDHW"][nd - 1],
        ["NWC", "NHWC", "NDHWC"][nd - 1],
    );
    let channel_last = if layout == first {
        false
    } else if layout == last {
        true
    } else {
        return Err(Error::Param(format!(
            "{op}: layout '{layout}' is not supported for a {nd}-D kernel (use {first} or {last})"
        )));
    };
    Ok(ConvParam {
        op,
        kernel: kernel_u,
        stride,
        dilate,
        pad,
        adj,
        target_shape,
        num_filter: nf as usize,
        num_group: ng as usize,
        no_bias: p.bool("no_bias", deconv)?,
        channel_last,
        skip_data_grad: op.starts_with("_backward_") && p.bool("__skip_data_grad", false)?,
    })
}

/// Normalised 3-D geometry of one convolution (`x` the data, `y` the
/// output of the *convolution*; a deconvolution swaps their roles).
#[derive(Debug, Clone, Copy)]
pub struct Geo {
    pub n: usize,
    pub cin: usize,
    pub cout: usize,
    pub g: usize,
    pub xs: [usize; 3],
    pub ys: [usize; 3],
    pub k: [usize; 3],
    pub s: [usize; 3],
    pub d: [usize; 3],
    pub p: [usize; 3],
}

impl Geo {
    fn cin_g(&self) -> usize {
        self.cin / self.g
    }
    fn cout_g(&self) -> usize {
        self.cout / self.g
    }
    fn kk(&self) -> usize {
        self.k.iter().product()
    }
    fn xsz(&self) -> usize {
        self.xs.iter().product()
    }
    fn ysz(&self) -> usize {
        self.ys.iter().product()
    }
    fn flops(&self) -> usize {
        2 * self.n * self.cout * self.cin_g() * self.kk() * self.ysz()
    }
    /// The implicit-GEMM formulation (stride 1): one GEMM per kernel tap
    /// with K = channels per group. With few channels those GEMMs are too
    /// thin (LeNet's first layer would run 25 products with K = 1), so
    /// im2col (K = channels x taps) is used below 32 channels.
    fn stride1(&self) -> bool {
        self.s == [1, 1, 1] && self.cin_g() >= 32 && self.cout_g() >= 32
    }
    /// The stride-1 formulation on oxnet's gathered GEMM (float32 on AVX2,
    /// see `use_sgemm`). Fewer than 32 channels stay on im2col: LeNet's
    /// layers ran 2-3x slower gathered (the flipped data gradient of a
    /// 1-channel input is a 1-row product, and 25-column weight gradients
    /// waste most of each 16-wide panel).
    fn gathered<T: 'static>(&self) -> bool {
        self.stride1() && use_sgemm::<T>()
    }
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut r = [fill; 3];
    let off = 3 - v.len();
    r[off..].copy_from_slice(v);
    r
}

/// Output extent of a convolution along one axis (None if empty).
fn conv_out(x: usize, k: usize, s: usize, d: usize, p: usize) -> Option<usize> {
    let dk = d * (k - 1) + 1;
    let xp = x + 2 * p;
    if xp < dk {
        None
    } else {
        Some((xp - dk) / s + 1)
    }
}

/// Data shape in channel-first order (N, C, spatial...).
fn to_cf(s: &[usize], last: bool) -> Vec<usize> {
    if !last {
        return s.to_vec();
    }
    let mut v = vec![s[0], s[s.len() - 1]];
    v.extend_from_slice(&s[1..s.len() - 1]);
    v
}

fn from_cf(s: &[usize], last: bool) -> Vec<usize> {
    if !last {
        return s.to_vec();
    }
    let mut v = vec![s[0]];
    v.extend_from_slice(&s[2..]);
    v.push(s[1]);
    v
}

pub(crate) fn to_cf_pub(s: &[usize], last: bool) -> Vec<usize> {
    to_cf(s, last)
}
pub(crate) fn from_cf_pub(s: &[usize], last: bool) -> Vec<usize> {
    from_cf(s, last)
}
pub(crate) fn relayout_pub<T: Copy + Send + Sync>(
    src: &[T],
    n: usize,
    c: usize,
    s: usize,
    to_last: bool,
) -> Vec<T> {
    relayout(src, n, c, s, to_last)
}

/// Weight shape for the layout: (F, C/g, k...) or (F, k..., C/g).
fn weight_shape(p: &ConvParam, rows: usize, cols: usize) -> Vec<usize> {
    let mut w = vec![rows];
    if p.channel_last {
        w.extend_from_slice(&p.kernel);
        w.push(cols);
    } else {
        w.push(cols);
        w.extend_from_slice(&p.kernel);
    }
    w
}

/// Infer a convolution's or deconvolution's shapes; returns the geometry
/// when the data shape is known.
fn conv_shapes(
    p: &ConvParam,
    deconv: bool,
    data: &[usize],
) -> Result<(Geo, Vec<usize>, Vec<usize>)> {
    let op = p.op;
    let nd = p.kernel.len();
    if data.len() != nd + 2 {
        return Err(Error::Shape(format!(
            "{op}: data shape {} must have {} dimensions for a {nd}-D kernel {}",
            fmt_shape(data),
            nd + 2,
            fmt_shape(&p.kernel)
        )));
    }
    let cf = to_cf(data, p.channel_last);
    let (n, c) = (cf[0], cf[1]);
    let g = p.num_group;
    if c % g != 0 || !p.num_filter.is_multiple_of(g) {
        return Err(Error::Shape(format!(
            "{op}: data channels ({c}) and num_filter ({}) must be multiples of num_group ({g}); data shape {}",
            p.num_filter,
            fmt_shape(data)
        )));
    }
    let sp = &cf[2..];
    let mut out_sp = vec![0; nd];
    for i in 0..nd {
        if deconv {
            let dk = p.dilate[i] * (p.kernel[i] - 1) + 1;
            let full = p.stride[i] * (sp[i].max(1) - 1) + dk;
            let (pad, adj) = deconv_pad(p, i, sp[i])?;
            if full + adj < 2 * pad {
                return Err(Error::Shape(format!(
                    "{op}: pad {:?} is too large for data shape {}",
                    p.pad,
                    fmt_shape(data)
                )));
            }
            out_sp[i] = if sp[i] == 0 { 0 } else { full + adj - 2 * pad };
        } else {
            out_sp[i] = conv_out(sp[i], p.kernel[i], p.stride[i], p.dilate[i], p.pad[i]).ok_or_else(|| {
                Error::Shape(format!(
                    "{op}: kernel {} (dilate {}) is larger than the padded data along spatial axis {i}: data shape {}, pad {}",
                    fmt_shape(&p.kernel),
                    fmt_shape(&p.dilate),
                    fmt_shape(data),
                    fmt_shape(&p.pad)
                ))
            })?;
        }
    }
    let (wshape, oshape_cf) = if deconv {
        // weight (C_in, num_filter/g, k...)
        let w = weight_shape(p, c, p.num_filter / g);
        let mut o = vec![n, p.num_filter];
        o.extend_from_slice(&out_sp);
        (w, o)
    } else {
        let w = weight_shape(p, p.num_filter, c / g);
        let mut o = vec![n, p.num_filter];
        o.extend_from_slice(&out_sp);
        (w, o)
    };
    let pads: Vec<usize> = (0..nd)
        .map(|i| {
            if deconv {
                deconv_pad(p, i, sp[i]).map(|x| x.0).unwrap_or(0)
            } else {
                p.pad[i]
            }
        })
        .collect();
    let geo = if deconv {
        // The deconvolution is the data-gradient of a convolution from the
        // deconvolution's output (conv data) to its input (conv output).
        Geo {
            n,
            cin: p.num_filter,
            cout: c,
            g,
            xs: pad3(&out_sp, 1),
            ys: pad3(sp, 1),
            k: pad3(&p.kernel, 1),
            s: pad3(&p.stride, 1),
            d: pad3(&p.dilate, 1),
            p: pad3(&pads, 0),
        }
    } else {
        Geo {
            n,
            cin: c,
            cout: p.num_filter,
            g,
            xs: pad3(sp, 1),
            ys: pad3(&out_sp, 1),
            k: pad3(&p.kernel, 1),
            s: pad3(&p.stride, 1),
            d: pad3(&p.dilate, 1),
            p: pad3(&pads, 0),
        }
    };
    Ok((geo, wshape, from_cf(&oshape_cf, p.channel_last)))
}

/// (pad, adj) of a deconvolution along axis i (target_shape decides them
/// when given, as in MXNet).
fn deconv_pad(p: &ConvParam, i: usize, x: usize) -> Result<(usize, usize)> {
    if p.target_shape.is_empty() {
        return Ok((p.pad[i], p.adj[i]));
    }
    let dk = p.dilate[i] * (p.kernel[i] - 1) + 1;
    let full = p.stride[i] * (x.max(1) - 1) + dk;
    let t = p.target_shape[i];
    if full < t {
        return Err(Error::Shape(format!(
            "{}: target_shape {:?} is too large: at most {} along spatial axis {i} for input size {x}",
            p.op, p.target_shape, full
        )));
    }
    let tot = full - t;
    Ok((tot.div_ceil(2), tot % 2))
}

fn conv_infer_common(
    c: &OpCall,
    deconv: bool,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = c.p::<ConvParam>();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    let (_, w, o) = conv_shapes(p, deconv, &d)?;
    let why = format!(
        " for data shape {} with num_filter={}, num_group={}, kernel {}",
        fmt_shape(&d),
        p.num_filter,
        p.num_group,
        fmt_shape(&p.kernel)
    );
    fill_shape(p.op, "weight", &mut ins[1], w, &why)?;
    if !p.no_bias {
        fill_shape(p.op, "bias", &mut ins[2], vec![p.num_filter], &why)?;
    }
    outs[0] = Some(o);
    Ok(())
}

// ---------------------------------------------------------------------------
// Convolution core (channel-first, one dtype)
// ---------------------------------------------------------------------------

/// Outputs ow in [lo, hi) whose input column ow + off lies in [0, xw)
/// (stride 1 along the row).
#[inline]
fn stride1_range(off: isize, yw: usize, xw: usize) -> (usize, usize) {
    let lo = (-off).clamp(0, yw as isize) as usize;
    let hi = (xw as isize - off).clamp(lo as isize, yw as isize) as usize;
    (lo, hi)
}

/// Column matrix of one image and group: col[(ci*KK + t) * P + q].
fn im2col<T: GemmT>(g: &Geo, x: &[T], col: &mut [T]) {
    let [kd, kh, kw] = g.k;
    let [xd, xh, xw] = g.xs;
    let [yd, yh, yw] = g.ys;
    let p_sz = g.ysz();
    let zero = T::from_f64(0.0);
    let mut r = 0;
    for ci in 0..g.cin_g() {
        let xc = &x[ci * g.xsz()..(ci + 1) * g.xsz()];
        for a in 0..kd {
            for bb in 0..kh {
                for cc in 0..kw {
                    let row = &mut col[r * p_sz..(r + 1) * p_sz];
                    r += 1;
                    let mut q = 0;
                    for od in 0..yd {
                        let id = (od * g.s[0] + a * g.d[0]) as isize - g.p[0] as isize;
                        for oh in 0..yh {
                            let ih = (oh * g.s[1] + bb * g.d[1]) as isize - g.p[1] as isize;
                            let dst = &mut row[q..q + yw];
                            q += yw;
                            if id < 0 || id >= xd as isize || ih < 0 || ih >= xh as isize {
                                dst.fill(zero);
                                continue;
                            }
                            let src = &xc[(id as usize * xh + ih as usize) * xw..][..xw];
                            let off = (cc * g.d[2]) as isize - g.p[2] as isize;
                            if g.s[2] == 1 {
                                // Valid outputs [lo, hi) read src[lo + off ..]: one copy.
                                let (lo, hi) = stride1_range(off, yw, xw);
                                dst[..lo].fill(zero);
                                dst[hi..].fill(zero);
                                if hi > lo {
                                    let s0 = (lo as isize + off) as usize;
                                    dst[lo..hi].copy_from_slice(&src[s0..s0 + hi - lo]);
                                }
                            } else {
                                for (ow, o) in dst.iter_mut().enumerate() {
                                    let iw = (ow * g.s[2]) as isize + off;
                                    *o = if iw >= 0 && iw < xw as isize {
                                        src[iw as usize]
                                    } else {
                                        zero
                                    };
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Scatter-add a column matrix back into one image and group.
fn col2im<T: GemmT>(g: &Geo, col: &[T], x: &mut [T]) {
    let [kd, kh, kw] = g.k;
    let [xd, xh, xw] = g.xs;
    let [yd, yh, yw] = g.ys;
    let p_sz = g.ysz();
    let mut r = 0;
    for ci in 0..g.cin_g() {
        let xc = &mut x[ci * g.xsz()..(ci + 1) * g.xsz()];
        for a in 0..kd {
            for bb in 0..kh {
                for cc in 0..kw {
                    let row = &col[r * p_sz..(r + 1) * p_sz];
                    r += 1;
                    let mut q = 0;
                    for od in 0..yd {
                        let id = (od * g.s[0] + a * g.d[0]) as isize - g.p[0] as isize;
                        for oh in 0..yh {
                            let ih = (oh * g.s[1] + bb * g.d[1]) as isize - g.p[1] as isize;
                            let src = &row[q..q + yw];
                            q += yw;
                            if id < 0 || id >= xd as isize || ih < 0 || ih >= xh as isize {
                                continue;
                            }
                            let dst = &mut xc[(id as usize * xh + ih as usize) * xw..][..xw];
                            let off = (cc * g.d[2]) as isize - g.p[2] as isize;
                            if g.s[2] == 1 {
                                let (lo, hi) = stride1_range(off, yw, xw);
                                if hi > lo {
                                    let d0 = (lo as isize + off) as usize;
                                    for (d, &v) in
                                        dst[d0..d0 + hi - lo].iter_mut().zip(&src[lo..hi])
                                    {
                                        *d += v;
                                    }
                                }
                                continue;
                            }
                            for (ow, &v) in src.iter().enumerate() {
                                let iw = (ow * g.s[2]) as isize + off;
                                if iw >= 0 && iw < xw as isize {
                                    dst[iw as usize] += v;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Padded geometry of the stride-1 formulation.
struct Implicit {
    dims: [usize; 3], // padded input extents
    lp: usize,        // padded image size
    nv: usize,        // virtual output columns
    offs: Vec<usize>, // one offset per kernel tap
}

impl Implicit {
    fn new(g: &Geo) -> Implicit {
        let dims = [
            g.xs[0] + 2 * g.p[0],
            g.xs[1] + 2 * g.p[1],
            g.xs[2] + 2 * g.p[2],
        ];
        let lp = dims[0] * dims[1] * dims[2];
        let (hw, w) = (dims[1] * dims[2], dims[2]);
        let nv = (g.ys[0] - 1) * hw + (g.ys[1] - 1) * w + g.ys[2];
        let mut offs = Vec::with_capacity(g.kk());
        for a in 0..g.k[0] {
            for b in 0..g.k[1] {
                for c in 0..g.k[2] {
                    offs.push(a * g.d[0] * hw + b * g.d[1] * w + c * g.d[2]);
                }
            }
        }
        Implicit { dims, lp, nv, offs }
    }
    /// Copy an image (C channels) into the zero-padded buffer.
    fn pad_in<T: GemmT>(&self, g: &Geo, c: usize, x: &[T], xp: &mut [T]) {
        xp.fill(T::from_f64(0.0));
        let [xd, xh, xw] = g.xs;
        for ch in 0..c {
            for a in 0..xd {
                for b in 0..xh {
                    let s = &x[((ch * xd + a) * xh + b) * xw..][..xw];
                    let o = ch * self.lp
                        + ((a + g.p[0]) * self.dims[1] + b + g.p[1]) * self.dims[2]
                        + g.p[2];
                    xp[o..o + xw].copy_from_slice(s);
                }
            }
        }
    }
    /// Crop the padded buffer's interior into an image (C channels).
    fn crop<T: GemmT>(&self, g: &Geo, c: usize, xp: &[T], x: &mut [T]) {
        let [xd, xh, xw] = g.xs;
        for ch in 0..c {
            for a in 0..xd {
                for b in 0..xh {
                    let d = &mut x[((ch * xd + a) * xh + b) * xw..][..xw];
                    let o = ch * self.lp
                        + ((a + g.p[0]) * self.dims[1] + b + g.p[1]) * self.dims[2]
                        + g.p[2];
                    d.copy_from_slice(&xp[o..o + xw]);
                }
            }
        }
    }
    /// Virtual column of output position (od, oh, 0).
    #[inline]
    fn vcol(&self, od: usize, oh: usize) -> usize {
        (od * self.dims[1] + oh) * self.dims[2]
    }
    /// Output image (C rows) from / to the virtual column layout.
    fn compact<T: GemmT>(&self, g: &Geo, c: usize, yv: &[T], y: &mut [T]) {
        let [yd, yh, yw] = g.ys;
        for ch in 0..c {
            for a in 0..yd {
                for b in 0..yh {
                    let s = &yv[ch * self.nv + self.vcol(a, b)..][..yw];
                    y[((ch * yd + a) * yh + b) * yw..][..yw].copy_from_slice(s);
                }
            }
        }
    }
    fn expand<T: GemmT>(&self, g: &Geo, c: usize, y: &[T], yv: &mut [T]) {
        yv.fill(T::from_f64(0.0));
        let [yd, yh, yw] = g.ys;
        for ch in 0..c {
            for a in 0..yd {
                for b in 0..yh {
                    let s = &y[((ch * yd + a) * yh + b) * yw..][..yw];
                    yv[ch * self.nv + self.vcol(a, b)..][..yw].copy_from_slice(s);
                }
            }
        }
    }
}

/// Whether the stride-1 paths of this element type run on [`crate::ops::sgemm`]:
/// float32 on a CPU it supports. There the whole Cin*k depth is one GEMM
/// whose right-hand side is gathered from the padded image while packing
/// (no im2col buffer, no per-tap passes over the output).
fn use_sgemm<T: 'static>() -> bool {
    crate::ops::sgemm::runs_for::<T>()
}

/// Offsets into a group's padded input of the GEMM rows (ci, tap), in the
/// weight's (Cin/g, k...) order.
#[cfg(target_arch = "x86_64")]
fn gather_rows(im: &Implicit, cin_g: usize) -> Vec<isize> {
    (0..cin_g)
        .flat_map(|ci| im.offs.iter().map(move |&o| (ci * im.lp + o) as isize))
        .collect()
}

fn gemm_threads(outer: bool) -> usize {
    if outer {
        1
    } else {
        crate::par::num_threads()
    }
}

/// The stride-1 forward on sgemm (see [`use_sgemm`]); T is f32.
#[cfg(target_arch = "x86_64")]
fn conv_fwd_gathered<T: GemmT>(g: &Geo, x: &[T], w: &[T], y: &mut [T]) {
    use crate::ops::sgemm::{sgemm_b, BSrc};
    debug_assert!(use_sgemm::<T>());
    let (cin_g, cout_g, kk) = (g.cin_g(), g.cout_g(), g.kk());
    let (xsz, ysz) = (g.xsz(), g.ysz());
    let im = Implicit::new(g);
    let rows = gather_rows(&im, cin_g);
    let yp = SendPtr(y.as_mut_ptr());
    let init = || {
        (
            vec![T::from_f64(0.0); g.cin * im.lp],
            vec![T::from_f64(0.0); g.cout * im.nv],
        )
    };
    for_images(g.n, init, |i, (xp, yv), outer| {
        im.pad_in(g, g.cin, &x[i * g.cin * xsz..(i + 1) * g.cin * xsz], xp);
        for gi in 0..g.g {
            // SAFETY: T is f32 (use_sgemm); yv holds cout x nv, w cout x
            // cin_g*kk, and every gathered row of nv values lies in xp.
            unsafe {
                sgemm_b(
                    cout_g,
                    im.nv,
                    cin_g * kk,
                    yv.as_mut_ptr().add(gi * cout_g * im.nv) as *mut f32,
                    im.nv as isize,
                    1,
                    false,
                    w.as_ptr().add(gi * cout_g * cin_g * kk) as *const f32,
                    (cin_g * kk) as isize,
                    1,
                    BSrc::Rows(xp.as_ptr().add(gi * cin_g * im.lp) as *const f32, &rows),
                    gemm_threads(outer),
                )
            };
        }
        let yi =
            unsafe { std::slice::from_raw_parts_mut(yp.get().add(i * g.cout * ysz), g.cout * ysz) };
        im.compact(g, g.cout, yv, yi);
    });
}

/// `s` as float32 (callers check that T is f32).
fn as_f32<T: 'static>(s: &[T]) -> &[f32] {
    assert_eq!(std::any::TypeId::of::<T>(), std::any::TypeId::of::<f32>());
    // SAFETY: T is f32.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) }
}
fn as_f32_mut<T: 'static>(s: &mut [T]) -> &mut [f32] {
    assert_eq!(std::any::TypeId::of::<T>(), std::any::TypeId::of::<f32>());
    // SAFETY: T is f32.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut f32, s.len()) }
}

/// Run `f(image, scratch)` for every image, in parallel over images when
/// there are several (each GEMM then runs on one thread).
fn for_images<S: Send>(
    n: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(usize, &mut S, bool) + Sync + Send,
) {
    if n > 1 && crate::par::num_threads() > 1 {
        par_for_init(n, init, |i, s| f(i, s, true));
    } else {
        let mut s = init();
        for i in 0..n {
            f(i, &mut s, false);
        }
    }
}

/// y = conv(x, w) [+ bias]; x (N, Cin, xs), w (Cout, Cin/g, k), bias
/// (Cout), y (N, Cout, ys).
pub fn conv_fwd<T: GemmT>(g: &Geo, x: &[T], w: &[T], bias: Option<&[T]>, y: &mut [T]) {
    if winograd::eligible::<T>(g) {
        // the bias is added as the output is written
        let b = bias.map(as_f32);
        return winograd::conv_fwd(g, as_f32(x), as_f32(w), b, as_f32_mut(y));
    }
    conv_fwd_gemm(g, x, w, y);
    if let Some(b) = bias {
        add_bias(y, b, g.cout, g.ysz());
    }
}

/// y = conv(x, w) on GEMMs (gathered, implicit or im2col).
fn conv_fwd_gemm<T: GemmT>(g: &Geo, x: &[T], w: &[T], y: &mut [T]) {
    let (cin_g, cout_g, kk) = (g.cin_g(), g.cout_g(), g.kk());
    let (xsz, ysz) = (g.xsz(), g.ysz());
    let yp = SendPtr(y.as_mut_ptr());
    let per_img = g.flops() / g.n.max(1);
    #[cfg(target_arch = "x86_64")]
    if g.gathered::<T>() {
        return conv_fwd_gathered(g, x, w, y);
    }
    if g.stride1() {
        let im = Implicit::new(g);
        let init = || {
            (
                vec![T::from_f64(0.0); g.cin * im.lp],
                vec![T::from_f64(0.0); g.cout * im.nv],
            )
        };
        for_images(g.n, init, |i, (xp, yv), outer| {
            let par = inner_par(per_img, outer);
            im.pad_in(g, g.cin, &x[i * g.cin * xsz..(i + 1) * g.cin * xsz], xp);
            for gi in 0..g.g {
                for (t, &off) in im.offs.iter().enumerate() {
                    unsafe {
                        mm(
                            cout_g,
                            im.nv,
                            cin_g,
                            yv.as_mut_ptr().add(gi * cout_g * im.nv),
                            im.nv as isize,
                            1,
                            t > 0,
                            w.as_ptr().add(gi * cout_g * cin_g * kk + t),
                            (cin_g * kk) as isize,
                            kk as isize,
                            xp.as_ptr().add(gi * cin_g * im.lp + off),
                            im.lp as isize,
                            1,
                            par,
                        )
                    };
                }
            }
            let yi = unsafe {
                std::slice::from_raw_parts_mut(yp.get().add(i * g.cout * ysz), g.cout * ysz)
            };
            im.compact(g, g.cout, yv, yi);
        });
    } else {
        let init = || vec![T::from_f64(0.0); cin_g * kk * ysz];
        for_images(g.n, init, |i, col, outer| {
            let par = inner_par(per_img, outer);
            for gi in 0..g.g {
                let xi = &x[(i * g.cin + gi * cin_g) * xsz..][..cin_g * xsz];
                im2col(g, xi, col);
                unsafe {
                    mm(
                        cout_g,
                        ysz,
                        cin_g * kk,
                        yp.get().add((i * g.cout + gi * cout_g) * ysz),
                        ysz as isize,
                        1,
                        false,
                        w.as_ptr().add(gi * cout_g * cin_g * kk),
                        (cin_g * kk) as isize,
                        1,
                        col.as_ptr(),
                        ysz as isize,
                        1,
                        par,
                    )
                };
            }
        });
    }
}

/// dx = conv^T(dy, w) (the data gradient; also a deconvolution's forward).
pub fn conv_bwd_data<T: GemmT>(g: &Geo, dy: &[T], w: &[T], dx: &mut [T]) {
    let (cin_g, cout_g, kk) = (g.cin_g(), g.cout_g(), g.kk());
    // At stride 1 the data gradient is itself a stride-1 convolution: dy
    // padded by d*(k-1)-p, with the weights flipped in space and their
    // channel axes swapped. That runs as one gathered GEMM per image, or by
    // Winograd's algorithm for 3x3 filters.
    if g.s == [1; 3] && (0..3).all(|a| g.p[a] <= g.d[a] * (g.k[a] - 1)) {
        let g2 = Geo {
            n: g.n,
            cin: g.cout,
            cout: g.cin,
            g: g.g,
            xs: g.ys,
            ys: g.xs,
            k: g.k,
            s: [1; 3],
            d: g.d,
            p: std::array::from_fn(|a| g.d[a] * (g.k[a] - 1) - g.p[a]),
        };
        if g.gathered::<T>() || winograd::eligible::<T>(&g2) {
            let mut w2 = vec![T::from_f64(0.0); w.len()];
            for gi in 0..g.g {
                for co in 0..cout_g {
                    for ci in 0..cin_g {
                        let src = &w[((gi * cout_g + co) * cin_g + ci) * kk..][..kk];
                        let dst = &mut w2[((gi * cin_g + ci) * cout_g + co) * kk..][..kk];
                        for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                            *d = *s;
                        }
                    }
                }
            }
            return conv_fwd(&g2, dy, &w2, None, dx);
        }
    }
    let (xsz, ysz) = (g.xsz(), g.ysz());
    let dxp = SendPtr(dx.as_mut_ptr());
    let per_img = g.flops() / g.n.max(1);
    if g.stride1() {
        let im = Implicit::new(g);
        let init = || {
            (
                vec![T::from_f64(0.0); g.cin * im.lp],
                vec![T::from_f64(0.0); g.cout * im.nv],
            )
        };
        for_images(g.n, init, |i, (xp, yv), outer| {
            let par = inner_par(per_img, outer);
            im.expand(g, g.cout, &dy[i * g.cout * ysz..(i + 1) * g.cout * ysz], yv);
            xp.fill(T::from_f64(0.0));
            for gi in 0..g.g {
                for (t, &off) in im.offs.iter().enumerate() {
                    unsafe {
                        mm(
                            cin_g,
                            im.nv,
                            cout_g,
                            xp.as_mut_ptr().add(gi * cin_g * im.lp + off),
                            im.lp as isize,
                            1,
                            true,
                            w.as_ptr().add(gi * cout_g * cin_g * kk + t),
                            kk as isize,
                            (cin_g * kk) as isize,
                            yv.as_ptr().add(gi * cout_g * im.nv),
                            im.nv as isize,
                            1,
                            par,
                        )
                    };
                }
            }
            let xi = unsafe {
                std::slice::from_raw_parts_mut(dxp.get().add(i * g.cin * xsz), g.cin * xsz)
            };
            im.crop(g, g.cin, xp, xi);
        });
    } else {
        let init = || vec![T::from_f64(0.0); cin_g * kk * ysz];
        for_images(g.n, init, |i, col, outer| {
            let par = inner_par(per_img, outer);
            let xi = unsafe {
                std::slice::from_raw_parts_mut(dxp.get().add(i * g.cin * xsz), g.cin * xsz)
            };
            xi.fill(T::from_f64(0.0));
            for gi in 0..g.g {
                // col (cin_g*kk x P) = w_g^T . dy_g
                unsafe {
                    mm(
                        cin_g * kk,
                        ysz,
                        cout_g,
                        col.as_mut_ptr(),
                        ysz as isize,
                        1,
                        false,
                        w.as_ptr().add(gi * cout_g * cin_g * kk),
                        1,
                        (cin_g * kk) as isize,
                        dy.as_ptr().add((i * g.cout + gi * cout_g) * ysz),
                        ysz as isize,
                        1,
                        par,
                    )
                };
                col2im(g, col, &mut xi[gi * cin_g * xsz..(gi + 1) * cin_g * xsz]);
            }
        });
    }
}

/// dw = sum over images of dy . col(x)^T.
pub fn conv_bwd_weight<T: GemmT>(g: &Geo, x: &[T], dy: &[T], dw: &mut [T]) {
    if winograd::eligible::<T>(g) {
        return winograd::conv_bwd_weight(g, as_f32(x), as_f32(dy), as_f32_mut(dw));
    }
    let (cin_g, cout_g, kk) = (g.cin_g(), g.cout_g(), g.kk());
    let (xsz, ysz) = (g.xsz(), g.ysz());
    let wsz = g.cout * cin_g * kk;
    let zero = T::from_f64(0.0);
    let outer = g.n > 1 && crate::par::num_threads() > 1;
    let par = inner_par(g.flops(), outer);
    let gathered = g.gathered::<T>();
    #[cfg(target_arch = "x86_64")]
    let rows = if gathered {
        gather_rows(&Implicit::new(g), cin_g)
    } else {
        Vec::new()
    };
    // One image's contribution, accumulated into `acc`.
    let one = |i: usize, acc: &mut [T], scratch: &mut (Vec<T>, Vec<T>)| {
        if g.stride1() {
            let im = Implicit::new(g);
            let (xp, yv) = scratch;
            im.pad_in(g, g.cin, &x[i * g.cin * xsz..(i + 1) * g.cin * xsz], xp);
            im.expand(g, g.cout, &dy[i * g.cout * ysz..(i + 1) * g.cout * ysz], yv);
            #[cfg(target_arch = "x86_64")]
            if gathered {
                use crate::ops::sgemm::{sgemm_b, BSrc};
                for gi in 0..g.g {
                    // dw_g (cout_g x cin_g*kk) += dy_g (cout_g x nv) . B^T,
                    // B^T (nv x cin_g*kk) gathered by columns from xp.
                    // SAFETY: T is f32 (use_sgemm); buffers as in the loop below.
                    unsafe {
                        sgemm_b(
                            cout_g,
                            cin_g * kk,
                            im.nv,
                            acc.as_mut_ptr().add(gi * cout_g * cin_g * kk) as *mut f32,
                            (cin_g * kk) as isize,
                            1,
                            true,
                            yv.as_ptr().add(gi * cout_g * im.nv) as *const f32,
                            im.nv as isize,
                            1,
                            BSrc::Cols(xp.as_ptr().add(gi * cin_g * im.lp) as *const f32, &rows),
                            gemm_threads(outer),
                        )
                    };
                }
                return;
            }
            for gi in 0..g.g {
                for (t, &off) in im.offs.iter().enumerate() {
                    unsafe {
                        mm(
                            cout_g,
                            cin_g,
                            im.nv,
                            acc.as_mut_ptr().add(gi * cout_g * cin_g * kk + t),
                            (cin_g * kk) as isize,
                            kk as isize,
                            true,
                            yv.as_ptr().add(gi * cout_g * im.nv),
                            im.nv as isize,
                            1,
                            xp.as_ptr().add(gi * cin_g * im.lp + off),
                            1,
                            im.lp as isize,
                            par,
                        )
                    };
                }
            }
        } else {
            let col = &mut scratch.0;
            for gi in 0..g.g {
                im2col(g, &x[(i * g.cin + gi * cin_g) * xsz..][..cin_g * xsz], col);
                unsafe {
                    mm(
                        cout_g,
                        cin_g * kk,
                        ysz,
                        acc.as_mut_ptr().add(gi * cout_g * cin_g * kk),
                        (cin_g * kk) as isize,
                        1,
                        true,
                        dy.as_ptr().add((i * g.cout + gi * cout_g) * ysz),
                        ysz as isize,
                        1,
                        col.as_ptr(),
                        1,
                        ysz as isize,
                        par,
                    )
                };
            }
        }
    };
    let scratch = || {
        if g.stride1() {
            let im = Implicit::new(g);
            (vec![zero; g.cin * im.lp], vec![zero; g.cout * im.nv])
        } else {
            (vec![zero; cin_g * kk * ysz], vec![])
        }
    };
    if outer {
        let chunks = crate::par::num_threads().min(g.n);
        let per = g.n.div_ceil(chunks);
        let parts: Vec<Vec<T>> = par_map(chunks, |c| {
            let mut acc = vec![zero; wsz];
            let mut s = scratch();
            for i in c * per..((c + 1) * per).min(g.n) {
                one(i, &mut acc, &mut s);
            }
            acc
        });
        dw.fill(zero);
        for part in parts {
            for (d, v) in dw.iter_mut().zip(part) {
                *d += v;
            }
        }
    } else {
        dw.fill(zero);
        let mut s = scratch();
        for i in 0..g.n {
            one(i, dw, &mut s);
        }
    }
}

/// (N, spatial, C) -> (N, C, spatial) or back (`to_last`).
fn relayout<T: Copy + Send + Sync>(
    src: &[T],
    _n: usize,
    c: usize,
    s: usize,
    to_last: bool,
) -> Vec<T> {
    let mut out = src.to_vec();
    let per = c * s;
    par_chunks_mut(&mut out, per, |i, o| {
        let x = &src[i * per..(i + 1) * per];
        if to_last {
            for ci in 0..c {
                for si in 0..s {
                    o[si * c + ci] = x[ci * s + si];
                }
            }
        } else {
            for si in 0..s {
                for ci in 0..c {
                    o[ci * s + si] = x[si * c + ci];
                }
            }
        }
    });
    out
}

/// Sum of dy over everything but the channel axis (channel-first).
fn bias_grad<T: GemmT>(dy: &[T], n: usize, c: usize, s: usize, db: &mut [T]) {
    // one task per channel; eight f64 lanes per row so the sum vectorises
    // (a single accumulator is bound by the add latency)
    let sums = par_map(c, |ci| {
        let mut lanes = [0f64; 8];
        for i in 0..n {
            let row = &dy[(i * c + ci) * s..][..s];
            let mut it = row.chunks_exact(8);
            for ch in &mut it {
                for (l, v) in lanes.iter_mut().zip(ch) {
                    *l += v.to_f64();
                }
            }
            for (l, v) in lanes.iter_mut().zip(it.remainder()) {
                *l += v.to_f64();
            }
        }
        lanes.iter().sum::<f64>()
    });
    for (d, a) in db.iter_mut().zip(sums) {
        *d = T::from_f64(a);
    }
}

fn add_bias<T: GemmT>(y: &mut [T], b: &[T], c: usize, s: usize) {
    if s == 0 {
        return;
    }
    par_chunks_mut(y, c * s, |_, img| {
        for (ci, row) in img.chunks_mut(s).enumerate() {
            let bv = b[ci];
            for v in row {
                *v += bv;
            }
        }
    });
}

/// Data / weight / output as channel-first vectors (copies only for
/// channel-last layouts).
struct CfView<'a, T: Clone> {
    data: std::borrow::Cow<'a, [T]>,
}

fn cf_data<'a, T: GemmT>(p: &ConvParam, b: &'a Blob, n: usize, c: usize) -> CfView<'a, T> {
    let d = b.data::<T>();
    if p.channel_last {
        let s = d.len().checked_div(n * c).unwrap_or(0);
        CfView {
            data: std::borrow::Cow::Owned(relayout(d, n, c, s, false)),
        }
    } else {
        CfView {
            data: std::borrow::Cow::Borrowed(d),
        }
    }
}

/// Weight (F, k..., C) -> (F, C, k...) for channel-last layouts.
fn cf_weight<'a, T: GemmT>(p: &ConvParam, b: &'a Blob) -> CfView<'a, T> {
    let rows = b.shape[0];
    let cols = b.shape[b.shape.len() - 1];
    cf_data(p, b, rows, cols)
}

fn store<T: GemmT>(p: &ConvParam, v: &[T], out: &Blob, n: usize, c: usize) {
    let o = out.data_mut::<T>();
    if p.channel_last {
        let s = v.len().checked_div(n * c).unwrap_or(0);
        o.copy_from_slice(&relayout(v, n, c, s, true));
    } else {
        o.copy_from_slice(v);
    }
}

/// Whether two blobs' bytes overlap (an `out=` that is also an input).
fn overlaps(a: &Blob, b: &Blob) -> bool {
    let (a0, b0) = (a.raw_ptr() as usize, b.raw_ptr() as usize);
    a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes()
}

/// Run `f` on a channel-first buffer for `out` (`n` x `c` x spatial) and
/// leave the result in `out`: the output itself for channel-first layouts
/// when it overlaps no input (no temporary, no fresh pages, no copy),
/// else a temporary that is relaid/copied into it.
fn into_out<T: GemmT>(
    p: &ConvParam,
    out: &Blob,
    ins: &[Blob],
    n: usize,
    c: usize,
    f: impl FnOnce(&mut [T]),
) {
    if !p.channel_last && !ins.iter().any(|b| overlaps(b, out)) {
        f(out.data_mut::<T>());
    } else {
        let mut v = vec![T::from_f64(0.0); out.size()];
        f(&mut v);
        store(p, &v, out, n, c);
    }
}

fn conv_fwd_typed<T: GemmT>(p: &ConvParam, deconv: bool, i: &[Blob], o: &Blob) -> Result<()> {
    let (g, _, _) = conv_shapes(p, deconv, &i[0].shape)?;
    let (n, cdata, cout) = (g.n, if deconv { g.cout } else { g.cin }, p.num_filter);
    let x = cf_data::<T>(p, &i[0], n, cdata);
    let w = cf_weight::<T>(p, &i[1]);
    into_out(p, o, i, n, cout, |y: &mut [T]| {
        let bias = (!p.no_bias).then(|| i[2].data::<T>());
        if deconv {
            conv_bwd_data(&g, &x.data, &w.data, y);
            if let Some(b) = bias {
                add_bias(y, b, cout, g.xsz());
            }
        } else {
            conv_fwd(&g, &x.data, &w.data, bias, y);
        }
    });
    Ok(())
}

/// Backward: inputs (dy, data, weight); outputs (ddata, dweight[, dbias]).
fn conv_bwd_typed<T: GemmT>(p: &ConvParam, deconv: bool, i: &[Blob], o: &[Blob]) -> Result<()> {
    let (g, _, _) = conv_shapes(p, deconv, &i[1].shape)?;
    let (n, cdata, cout) = (g.n, if deconv { g.cout } else { g.cin }, p.num_filter);
    let dy = cf_data::<T>(p, &i[0], n, cout);
    let x = cf_data::<T>(p, &i[1], n, cdata);
    let w = cf_weight::<T>(p, &i[2]);
    if !p.skip_data_grad {
        into_out(p, &o[0], i, n, cdata, |dx: &mut [T]| {
            if deconv {
                // deconv(x) = conv_bwd_data(x): dx = conv(dy)
                conv_fwd(&g, &dy.data, &w.data, None, dx);
            } else {
                conv_bwd_data(&g, &dy.data, &w.data, dx);
            }
        });
    }
    let (wr, wc) = (i[2].shape[0], i[2].shape[i[2].shape.len() - 1]);
    into_out(p, &o[1], i, wr, wc, |dw: &mut [T]| {
        if deconv {
            // the deconvolution output gradient is the convolution's data
            conv_bwd_weight(&g, &dy.data, &x.data, dw);
        } else {
            conv_bwd_weight(&g, &x.data, &dy.data, dw);
        }
    });
    if !p.no_bias {
        let ysz = dy.data.len().checked_div(n * cout).unwrap_or(0);
        bias_grad(&dy.data, n, cout, ysz, o[2].data_mut::<T>());
    }
    Ok(())
}

fn conv_kernel_any(c: &OpCall, i: &[Blob], o: &[Blob], deconv: bool, backward: bool) -> Result<()> {
    let p = c.p::<ConvParam>();
    match (o[0].dtype, backward) {
        (DType::F32, false) => conv_fwd_typed::<f32>(p, deconv, i, &o[0]),
        (DType::F64, false) => conv_fwd_typed::<f64>(p, deconv, i, &o[0]),
        (DType::F16, false) => conv_fwd_typed::<f16>(p, deconv, i, &o[0]),
        (DType::F32, true) => conv_bwd_typed::<f32>(p, deconv, i, o),
        (DType::F64, true) => conv_bwd_typed::<f64>(p, deconv, i, o),
        (DType::F16, true) => conv_bwd_typed::<f16>(p, deconv, i, o),
        (d, _) => Err(Error::DType(format!(
            "{}: dtype {} is not supported",
            p.op,
            d.name()
        ))),
    }
}

fn parse_conv(a: &Attrs) -> Result<Params> {
    Ok(Box::new(parse_conv_common(a, "Convolution", false)?))
}
fn parse_deconv(a: &Attrs) -> Result<Params> {
    Ok(Box::new(parse_conv_common(a, "Deconvolution", true)?))
}
fn parse_bconv(a: &Attrs) -> Result<Params> {
    let mut p = parse_conv_common(a, "_backward_Convolution", false)?;
    p.op = "_backward_Convolution";
    Ok(Box::new(p))
}
fn parse_bdeconv(a: &Attrs) -> Result<Params> {
    Ok(Box::new(parse_conv_common(
        a,
        "_backward_Deconvolution",
        true,
    )?))
}

fn n_conv_inputs(c: &OpCall) -> usize {
    if c.p::<ConvParam>().no_bias {
        2
    } else {
        3
    }
}

fn conv_grad(
    c: &OpCall,
    b: B,
    x: &[usize],
    _: &[usize],
    g: &[usize],
) -> Result<Vec<Option<usize>>> {
    let p = c.p::<ConvParam>();
    let name = if c.name() == "Convolution" {
        "_backward_Convolution"
    } else {
        "_backward_Deconvolution"
    };
    let mask = if p.no_bias {
        vec![true, true]
    } else {
        vec![true, true, true]
    };
    if b.needs_grad(0) {
        return backward_op(c, b, name, &[g[0], x[0], x[1]], &mask);
    }
    // the data gradient is not wanted (the first layer's input): the
    // backward leaves that output unwritten and it is not handed on
    let mut attrs = fwd_attrs(c);
    attrs.push(("__skip_data_grad", "1".into()));
    let outs = b.op(name, &attrs, &[g[0], x[0], x[1]])?;
    let mut res: Vec<Option<usize>> = outs.into_iter().map(Some).collect();
    res[0] = None;
    Ok(res)
}

fn conv_bwd_infer(
    c: &OpCall,
    deconv: bool,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = c.p::<ConvParam>();
    let Some(d) = ins[1].clone() else {
        return Ok(());
    };
    let (_, w, o) = conv_shapes(p, deconv, &d)?;
    fill_shape(p.op, "output gradient", &mut ins[0], o, "")?;
    fill_shape(p.op, "weight", &mut ins[2], w.clone(), "")?;
    outs[0] = Some(d);
    outs[1] = Some(w);
    if !p.no_bias {
        outs[2] = Some(vec![p.num_filter]);
    }
    Ok(())
}

pub static CONVOLUTION: OpDef = OpDef {
    name: "Convolution",
    // MXNet's legacy 2-D convolution computes the same with the same parameters
    aliases: &["Convolution_v1"],
    doc: "N-D convolution (1-D, 2-D, 3-D) over (batch, channel, spatial...) data, or channel-last data \
          with layout NWC/NHWC/NDHWC (then the weight is (num_filter, kernel..., channel/num_group)).",
    inputs: &["data", "weight", "bias"],
    num_inputs: Some(n_conv_inputs),
    parse: parse_conv,
    infer_shape: |c, i, o| conv_infer_common(c, false, i, o),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| conv_kernel_any(c, i, o, false, false)),
    grad: Some(conv_grad),
    ..OpDef::BASE
};

pub static BACKWARD_CONVOLUTION: OpDef = OpDef {
    name: "_backward_Convolution",
    doc: "Internal: gradients of Convolution w.r.t. data, weight (and bias). Inputs: output gradient, data, weight.",
    inputs: &["ograd", "data", "weight"],
    num_outputs: |c| if c.p::<ConvParam>().no_bias { 2 } else { 3 },
    parse: parse_bconv,
    infer_shape: |c, i, o| conv_bwd_infer(c, false, i, o),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| conv_kernel_any(c, i, o, false, true)),
    ..OpDef::BASE
};

pub static DECONVOLUTION: OpDef = OpDef {
    name: "Deconvolution",
    doc: "Transposed convolution (1-D, 2-D): the data gradient of a Convolution. Weight (channels, \
          num_filter/num_group, kernel...). Output (in-1)*stride - 2*pad + dilate*(kernel-1) + 1 + adj, \
          or target_shape (which then decides pad and adj).",
    inputs: &["data", "weight", "bias"],
    num_inputs: Some(n_conv_inputs),
    parse: parse_deconv,
    infer_shape: |c, i, o| conv_infer_common(c, true, i, o),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| conv_kernel_any(c, i, o, true, false)),
    grad: Some(conv_grad),
    ..OpDef::BASE
};

pub static BACKWARD_DECONVOLUTION: OpDef = OpDef {
    name: "_backward_Deconvolution",
    doc: "Internal: gradients of Deconvolution w.r.t. data, weight (and bias).",
    inputs: &["ograd", "data", "weight"],
    num_outputs: |c| if c.p::<ConvParam>().no_bias { 2 } else { 3 },
    parse: parse_bdeconv,
    infer_shape: |c, i, o| conv_bwd_infer(c, true, i, o),
    infer_type: infer_float_same,
    cpu: Some(|c, i, o, _| conv_kernel_any(c, i, o, true, true)),
    ..OpDef::BASE
};

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::*;
    use crate::ops::registry::call;
    use crate::{Context, NDArray};

    /// Direct loops, channel-first, 2-D (1-D/3-D via unit axes).
    #[allow(clippy::too_many_arguments)]
    fn naive(
        x: &[f64],
        w: &[f64],
        n: usize,
        c: usize,
        xs: [usize; 3],
        f: usize,
        g: usize,
        k: [usize; 3],
        s: [usize; 3],
        d: [usize; 3],
        p: [usize; 3],
    ) -> (Vec<f64>, [usize; 3]) {
        let ys: Vec<usize> = (0..3)
            .map(|i| (xs[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1)
            .collect();
        let ys = [ys[0], ys[1], ys[2]];
        let (cg, fg) = (c / g, f / g);
        let mut y = vec![0.0; n * f * ys[0] * ys[1] * ys[2]];
        for b in 0..n {
            for o in 0..f {
                let gi = o / fg;
                for a0 in 0..ys[0] {
                    for a1 in 0..ys[1] {
                        for a2 in 0..ys[2] {
                            let mut acc = 0.0;
                            for ci in 0..cg {
                                for k0 in 0..k[0] {
                                    for k1 in 0..k[1] {
                                        for k2 in 0..k[2] {
                                            let i0 =
                                                (a0 * s[0] + k0 * d[0]) as isize - p[0] as isize;
                                            let i1 =
                                                (a1 * s[1] + k1 * d[1]) as isize - p[1] as isize;
                                            let i2 =
                                                (a2 * s[2] + k2 * d[2]) as isize - p[2] as isize;
                                            if i0 < 0
                                                || i1 < 0
                                                || i2 < 0
                                                || i0 >= xs[0] as isize
                                                || i1 >= xs[1] as isize
                                                || i2 >= xs[2] as isize
                                            {
                                                continue;
                                            }
                                            let xv = x[(((b * c + gi * cg + ci) * xs[0]
                                                + i0 as usize)
                                                * xs[1]
                                                + i1 as usize)
                                                * xs[2]
                                                + i2 as usize];
                                            let wv = w[(((o * cg + ci) * k[0] + k0) * k[1] + k1)
                                                * k[2]
                                                + k2];
                                            acc += xv * wv;
                                        }
                                    }
                                }
                            }
                            y[(((b * f + o) * ys[0] + a0) * ys[1] + a1) * ys[2] + a2] = acc;
                        }
                    }
                }
            }
        }
        (y, ys)
    }

    fn t(v: &[usize]) -> String {
        format!(
            "({})",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    #[test]
    fn conv_matches_naive() {
        // (n, c, xs, f, g, k, s, d, p, nd)
        let cases: Vec<(
            usize,
            usize,
            [usize; 3],
            usize,
            usize,
            [usize; 3],
            [usize; 3],
            [usize; 3],
            [usize; 3],
            usize,
        )> = vec![
            (
                2,
                3,
                [1, 6, 7],
                4,
                1,
                [1, 3, 3],
                [1, 1, 1],
                [1, 1, 1],
                [0, 1, 1],
                2,
            ),
            (
                3,
                4,
                [1, 7, 6],
                6,
                2,
                [1, 3, 2],
                [1, 2, 1],
                [1, 1, 2],
                [0, 1, 0],
                2,
            ),
            (
                1,
                2,
                [1, 1, 9],
                3,
                1,
                [1, 1, 3],
                [1, 1, 2],
                [1, 1, 1],
                [0, 0, 2],
                1,
            ),
            (
                2,
                2,
                [1, 1, 9],
                2,
                2,
                [1, 1, 2],
                [1, 1, 1],
                [1, 1, 3],
                [0, 0, 1],
                1,
            ),
            (
                2,
                2,
                [4, 5, 3],
                3,
                1,
                [2, 3, 2],
                [1, 1, 1],
                [1, 1, 1],
                [1, 0, 1],
                3,
            ),
            (
                1,
                3,
                [5, 4, 4],
                3,
                3,
                [3, 2, 2],
                [2, 1, 2],
                [1, 2, 1],
                [1, 1, 0],
                3,
            ),
            (
                5,
                8,
                [1, 9, 9],
                8,
                4,
                [1, 3, 3],
                [1, 1, 1],
                [1, 2, 2],
                [0, 2, 2],
                2,
            ),
        ];
        for (n, c, xs, f, g, k, s, d, p, nd) in cases {
            let x = vals(n * c * xs.iter().product::<usize>(), 1);
            let w = vals(f * (c / g) * k.iter().product::<usize>(), 2);
            let bias = vals(f, 3);
            let (want, ys) = naive(&x, &w, n, c, xs, f, g, k, s, d, p);
            let lo = 3 - nd;
            let mut xshape = vec![n, c];
            xshape.extend_from_slice(&xs[lo..]);
            let mut wshape = vec![f, c / g];
            wshape.extend_from_slice(&k[lo..]);
            let attrs_owned = [
                ("kernel", t(&k[lo..])),
                ("stride", t(&s[lo..])),
                ("dilate", t(&d[lo..])),
                ("pad", t(&p[lo..])),
                ("num_filter", f.to_string()),
                ("num_group", g.to_string()),
            ];
            let attrs: Vec<(&str, &str)> =
                attrs_owned.iter().map(|(a, b)| (*a, b.as_str())).collect();
            let mut ab = attrs.clone();
            ab.push(("no_bias", "True"));
            let y = call("Convolution", &ab, &[arr(&x, &xshape), arr(&w, &wshape)]).unwrap();
            let mut yshape = vec![n, f];
            yshape.extend_from_slice(&ys[lo..]);
            assert_eq!(y[0].shape, yshape);
            for (a, b) in y[0].to_vec::<f64>().unwrap().iter().zip(&want) {
                assert!((a - b).abs() < 1e-10, "{a} vs {b}");
            }
            // with bias, f32
            let ctx = Context::cpu(0);
            let f32v = |v: &[f64], s: &[usize]| {
                NDArray::from_vec(v.iter().map(|&a| a as f32).collect::<Vec<_>>(), s, ctx).unwrap()
            };
            let y = call(
                "Convolution",
                &attrs,
                &[f32v(&x, &xshape), f32v(&w, &wshape), f32v(&bias, &[f])],
            )
            .unwrap();
            let per: usize = ys.iter().product();
            for (idx, a) in y[0].to_vec::<f32>().unwrap().iter().enumerate() {
                let want_v = want[idx] + bias[(idx / per) % f];
                assert!((*a as f64 - want_v).abs() < 1e-4, "{a} vs {want_v}");
            }
            // gradients (small cases only)
            if n * c * xs.iter().product::<usize>() <= 200 {
                check_grad(
                    "Convolution",
                    &attrs,
                    &[
                        (x.clone(), xshape.clone()),
                        (w.clone(), wshape.clone()),
                        (bias.clone(), vec![f]),
                    ],
                    &[0, 1, 2],
                );
            }
        }
    }

    #[test]
    fn conv_channel_last_matches() {
        let (n, c, h, w_, f) = (2, 4, 5, 6, 6);
        let x = vals(n * c * h * w_, 4);
        let w = vals(f * 2 * 9, 5);
        let attrs = [
            ("kernel", "(3, 3)"),
            ("num_filter", "6"),
            ("num_group", "2"),
            ("pad", "(1, 1)"),
            ("no_bias", "True"),
        ];
        let y = call(
            "Convolution",
            &attrs,
            &[arr(&x, &[n, c, h, w_]), arr(&w, &[f, 2, 3, 3])],
        )
        .unwrap()[0]
            .to_vec::<f64>()
            .unwrap();
        let xl = call(
            "transpose",
            &[("axes", "(0, 2, 3, 1)")],
            &[arr(&x, &[n, c, h, w_])],
        )
        .unwrap();
        let wl = call(
            "transpose",
            &[("axes", "(0, 2, 3, 1)")],
            &[arr(&w, &[f, 2, 3, 3])],
        )
        .unwrap();
        let mut al = attrs.to_vec();
        al.push(("layout", "NHWC"));
        let yl = call("Convolution", &al, &[xl[0].clone(), wl[0].clone()]).unwrap();
        assert_eq!(yl[0].shape, vec![n, h, w_, f]);
        let back = call("transpose", &[("axes", "(0, 3, 1, 2)")], &yl).unwrap()[0]
            .to_vec::<f64>()
            .unwrap();
        for (a, b) in y.iter().zip(&back) {
            assert!((a - b).abs() < 1e-12);
        }
        check_grad(
            "Convolution",
            &al,
            &[
                (vals(2 * 3 * 3 * 4, 1), vec![2, 3, 3, 4]),
                (vals(6 * 9 * 2, 2), vec![6, 3, 3, 2]),
            ],
            &[0, 1],
        );
    }

    #[test]
    fn conv_errors_and_inference() {
        let e = call(
            "Convolution",
            &[("kernel", "(3, 3)"), ("num_filter", "8")],
            &[
                arr(&vals(2 * 3 * 25, 1), &[2, 3, 5, 5]),
                arr(&vals(8 * 4 * 9, 1), &[8, 4, 3, 3]),
                arr(&vals(8, 1), &[8]),
            ],
        )
        .err()
        .unwrap();
        let m = e.message();
        assert!(
            m.contains(
                "Convolution: weight shape (8, 4, 3, 3) does not match: expected (8, 3, 3, 3)"
            ) && m.contains("(2, 3, 5, 5)"),
            "{m}"
        );
        let e = call(
            "Convolution",
            &[("kernel", "(7, 7)"), ("num_filter", "8")],
            &[
                arr(&vals(75, 1), &[1, 3, 5, 5]),
                arr(&vals(8 * 3 * 49, 1), &[8, 3, 7, 7]),
                arr(&vals(8, 1), &[8]),
            ],
        )
        .err()
        .unwrap();
        assert!(
            e.message().contains("larger than the padded data"),
            "{}",
            e.message()
        );
        let e = call(
            "Convolution",
            &[("kernel", "(3, 3)"), ("num_filter", "8"), ("layout", "NCW")],
            &[arr(&vals(75, 1), &[1, 3, 5, 5])],
        )
        .err()
        .unwrap();
        assert!(
            e.message().contains("layout 'NCW' is not supported"),
            "{}",
            e.message()
        );
        let e = call(
            "Convolution",
            &[("num_filter", "8")],
            &[arr(&vals(75, 1), &[1, 3, 5, 5])],
        )
        .err()
        .unwrap();
        assert!(e.message().contains("'kernel'"), "{}", e.message());
        // weight/bias inference from data
        let c = crate::ops::registry::parse_call(
            crate::ops::lookup("Convolution").unwrap(),
            crate::ops::Attrs::from_pairs(&[
                ("kernel", "(3, 3)"),
                ("num_filter", "8"),
                ("num_group", "3"),
            ]),
        )
        .unwrap();
        let mut ins = vec![Some(vec![2, 6, 5, 5]), None, None];
        let mut outs = vec![None];
        (c.def.infer_shape)(&c, &mut ins, &mut outs).unwrap_err();
        let c = crate::ops::registry::parse_call(
            crate::ops::lookup("Convolution").unwrap(),
            crate::ops::Attrs::from_pairs(&[
                ("kernel", "(3, 3)"),
                ("num_filter", "9"),
                ("num_group", "3"),
                ("stride", "(2, 2)"),
            ]),
        )
        .unwrap();
        (c.def.infer_shape)(&c, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1], Some(vec![9, 2, 3, 3]));
        assert_eq!(ins[2], Some(vec![9]));
        assert_eq!(outs[0], Some(vec![2, 9, 2, 2]));
        let c = crate::ops::registry::parse_call(
            crate::ops::lookup("FullyConnected").unwrap(),
            crate::ops::Attrs::from_pairs(&[("num_hidden", "7")]),
        )
        .unwrap();
        let mut ins = vec![Some(vec![4, 3, 5]), None, None];
        (c.def.infer_shape)(&c, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1], Some(vec![7, 15]));
        assert_eq!(ins[2], Some(vec![7]));
        assert_eq!(outs[0], Some(vec![4, 7]));
    }

    #[test]
    fn fully_connected_values_and_grads() {
        let x = vals(2 * 3 * 2, 1);
        let w = vals(4 * 6, 2);
        let b = vals(4, 3);
        let y = call(
            "FullyConnected",
            &[("num_hidden", "4")],
            &[arr(&x, &[2, 3, 2]), arr(&w, &[4, 6]), arr(&b, &[4])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![2, 4]);
        let got = y[0].to_vec::<f64>().unwrap();
        for i in 0..2 {
            for j in 0..4 {
                let want: f64 = (0..6).map(|k| x[i * 6 + k] * w[j * 6 + k]).sum::<f64>() + b[j];
                assert!((got[i * 4 + j] - want).abs() < 1e-12);
            }
        }
        check_grad(
            "FullyConnected",
            &[("num_hidden", "4")],
            &[
                (x.clone(), vec![2, 3, 2]),
                (w.clone(), vec![4, 6]),
                (b.clone(), vec![4]),
            ],
            &[0, 1, 2],
        );
        let w2 = vals(8, 4);
        let y = call(
            "FullyConnected",
            &[
                ("num_hidden", "4"),
                ("flatten", "False"),
                ("no_bias", "True"),
            ],
            &[arr(&x, &[2, 3, 2]), arr(&w2, &[4, 2])],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![2, 3, 4]);
        check_grad(
            "FullyConnected",
            &[
                ("num_hidden", "4"),
                ("flatten", "False"),
                ("no_bias", "True"),
            ],
            &[(x, vec![2, 3, 2]), (w2, vec![4, 2])],
            &[0, 1],
        );
    }

    #[test]
    fn deconv_is_conv_transpose() {
        // <deconv(x), y> == <x, conv(y)> for the same weight
        for (s, p, adj) in [(1, 0, 0), (2, 1, 1), (2, 0, 0), (3, 1, 2)] {
            let (n, c, f, h) = (2, 3, 4, 4);
            let x = vals(n * c * h * h, 1);
            let w = vals(c * f * 9, 2);
            let attrs = [
                ("kernel", "(3, 3)".to_string()),
                ("stride", format!("({s}, {s})")),
                ("pad", format!("({p}, {p})")),
                ("adj", format!("({adj}, {adj})")),
                ("num_filter", f.to_string()),
            ];
            let a: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let y = call(
                "Deconvolution",
                &a,
                &[arr(&x, &[n, c, h, h]), arr(&w, &[c, f, 3, 3])],
            )
            .unwrap();
            let oh = (h - 1) * s + 3 - 2 * p + adj;
            assert_eq!(y[0].shape, vec![n, f, oh, oh]);
            let r = vals(n * f * oh * oh, 3);
            let ca = [
                ("kernel", "(3, 3)".to_string()),
                ("stride", format!("({s}, {s})")),
                ("pad", format!("({p}, {p})")),
                ("num_filter", c.to_string()),
                ("no_bias", "True".to_string()),
            ];
            let ca: Vec<(&str, &str)> = ca.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let z = call(
                "Convolution",
                &ca,
                &[arr(&r, &[n, f, oh, oh]), arr(&w, &[c, f, 3, 3])],
            )
            .unwrap();
            assert_eq!(z[0].shape, vec![n, c, h, h]);
            let lhs: f64 = y[0]
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .zip(&r)
                .map(|(a, b)| a * b)
                .sum();
            let rhs: f64 = z[0]
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .zip(&x)
                .map(|(a, b)| a * b)
                .sum();
            assert!((lhs - rhs).abs() < 1e-9, "{lhs} vs {rhs}");
            let mut ab = a.clone();
            ab.push(("no_bias", "False"));
            check_grad(
                "Deconvolution",
                &ab,
                &[
                    (vals(18, 4), vec![1, 2, 3, 3]),
                    (vals(2 * f * 9, 5), vec![2, f, 3, 3]),
                    (vals(f, 6), vec![f]),
                ],
                &[0, 1, 2],
            );
        }
        // target_shape decides pad/adj
        let y = call(
            "Deconvolution",
            &[
                ("kernel", "(4, 4)"),
                ("stride", "(2, 2)"),
                ("num_filter", "2"),
                ("target_shape", "(8, 8)"),
            ],
            &[
                arr(&vals(16, 1), &[1, 1, 4, 4]),
                arr(&vals(32, 1), &[1, 2, 4, 4]),
            ],
        )
        .unwrap();
        assert_eq!(y[0].shape, vec![1, 2, 8, 8]);
    }

    /// `cargo test --release -p oxnet-core conv_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn conv_speed() {
        let ctx = Context::cpu(0);
        let (n, c, h, f) = (32, 64, 56, 64);
        let x = NDArray::from_vec(
            vals(n * c * h * h, 1)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>(),
            &[n, c, h, h],
            ctx,
        )
        .unwrap();
        let w = NDArray::from_vec(
            vals(f * c * 9, 2)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>(),
            &[f, c, 3, 3],
            ctx,
        )
        .unwrap();
        let b = NDArray::from_vec(vec![0.1f32; f], &[f], ctx).unwrap();
        let attrs = [
            ("kernel", "(3, 3)"),
            ("pad", "(1, 1)"),
            ("num_filter", "64"),
        ];
        let flops = 2.0 * (n * f * c * 9 * h * h) as f64;
        let fwd = || {
            call("Convolution", &attrs, &[x.clone(), w.clone(), b.clone()]).unwrap()[0]
                .wait_to_read()
                .unwrap()
        };
        for _ in 0..2 {
            fwd();
        }
        let reps = 10;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            fwd();
        }
        let s = t0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "Convolution forward (32,64,56,56)x(64,64,3,3) pad 1: {:.2} ms, {:.1} GFLOP/s",
            s * 1e3,
            flops / s / 1e9
        );
        let dy =
            call("Convolution", &attrs, &[x.clone(), w.clone(), b.clone()]).unwrap()[0].clone();
        let bwd = || {
            let o = call(
                "_backward_Convolution",
                &attrs,
                &[dy.clone(), x.clone(), w.clone()],
            )
            .unwrap();
            for a in &o {
                a.wait_to_read().unwrap();
            }
        };
        bwd();
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            bwd();
        }
        let s = t0.elapsed().as_secs_f64() / reps as f64;
        println!(
            "Convolution backward data+weight+bias: {:.2} ms, {:.1} GFLOP/s (2x forward flops)",
            s * 1e3,
            2.0 * flops / s / 1e9
        );
    }
}
