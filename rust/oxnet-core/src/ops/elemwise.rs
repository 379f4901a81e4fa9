//! Element-wise family: unary math, binary (same-shape and broadcasting),
//! binary with a scalar, comparisons, clip, where, add_n, cast, copies.
use super::attrs::Attrs;
use super::kernels::{cast_blob, map1, map1_wide, map2, map2_wide, reduce_to};
use super::registry::{
    infer_shape_same, infer_type_same, Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params,
};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, shape::broadcast_shapes, shape::norm_axis, DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use half::f16;

type B<'a> = &'a mut dyn GradBuilder;

// ---------------------------------------------------------------------------
// Gradient helpers: backward passes are built from registered operators.
// ---------------------------------------------------------------------------

pub fn g_mul(b: B, x: Entry, y: Entry) -> Result<Entry> {
    b.op1("elemwise_mul", &[], &[x, y])
}
pub fn g_div(b: B, x: Entry, y: Entry) -> Result<Entry> {
    b.op1("elemwise_div", &[], &[x, y])
}
pub fn g_add(b: B, x: Entry, y: Entry) -> Result<Entry> {
    b.op1("elemwise_add", &[], &[x, y])
}
pub fn g_sub(b: B, x: Entry, y: Entry) -> Result<Entry> {
    b.op1("elemwise_sub", &[], &[x, y])
}
pub fn g_un(b: B, op: &str, x: Entry) -> Result<Entry> {
    b.op1(op, &[], &[x])
}
pub fn g_sc(b: B, op: &str, x: Entry, s: f64) -> Result<Entry> {
    b.op1(op, &[("scalar", fmt_f64(s))], &[x])
}
pub fn fmt_f64(v: f64) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

// ---------------------------------------------------------------------------
// Unary
// ---------------------------------------------------------------------------

pub trait UnaryFn: Send + Sync + 'static {
    fn f32(x: f32) -> f32;
    fn f64(x: f64) -> f64;
    /// The exact integer form (wrapping), for functions that map integers
    /// to integers; the others compute integer inputs through float64.
    const INT: Option<fn(i64) -> i64> = None;
}

macro_rules! unary_fn {
    ($S:ident, $x:ident => $body:expr) => {
        pub struct $S;
        impl UnaryFn for $S {
            #[inline(always)]
            #[allow(clippy::excessive_precision)]
            fn f32($x: f32) -> f32 {
                $body
            }
            #[inline(always)]
            #[allow(clippy::excessive_precision)]
            fn f64($x: f64) -> f64 {
                $body
            }
        }
    };
    ($S:ident, $x:ident => $body:expr, int: $ix:ident => $ibody:expr) => {
        pub struct $S;
        impl UnaryFn for $S {
            #[inline(always)]
            fn f32($x: f32) -> f32 {
                $body
            }
            #[inline(always)]
            fn f64($x: f64) -> f64 {
                $body
            }
            const INT: Option<fn(i64) -> i64> = Some(|$ix: i64| -> i64 { $ibody });
        }
    };
}

/// The error function in f64 (series for small |x|, continued fraction for
/// erfc otherwise; ~1e-15). Shared with the gelu activation.
pub(crate) fn erf64(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 refined with one Newton step on erfc's
    // continued behaviour is overkill here; use a high-precision series /
    // asymptotic split (max abs error ~1e-15).
    let t = x.abs();
    if t == 0.0 {
        return x; // erf(+-0) = +-0 (the series below would never meet its stop test)
    }
    let r = if t < 2.5 {
        // Maclaurin series; at t < 2.5 its terms fall below 1e-17 of the
        // sum within ~60 steps, and the bound keeps any input from spinning
        let (mut sum, mut term, x2) = (t, t, t * t);
        for n in 1..200 {
            let n = n as f64;
            term *= -x2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // continued fraction for erfc
        let mut f = 0.0;
        for k in (1..60).rev() {
            f = (k as f64 / 2.0) / (t + f);
        }
        1.0 - (-t * t).exp() / std::f64::consts::PI.sqrt() / (t + f)
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

trait Erf {
    fn erf_(self) -> Self;
    fn erfinv_(self) -> Self;
}
impl Erf for f32 {
    fn erf_(self) -> f32 {
        erf64(self as f64) as f32
    }
    fn erfinv_(self) -> f32 {
        erfinv64(self as f64) as f32
    }
}
impl Erf for f64 {
    fn erf_(self) -> f64 {
        erf64(self)
    }
    fn erfinv_(self) -> f64 {
        erfinv64(self)
    }
}

/// Inverse error function: Giles' single-precision approximation (2010,
/// polynomials in w = -ln(1 - x^2)) as the start, then Newton steps on
/// erf(y) = x in float64. NaN outside [-1, 1], +-inf at +-1.
pub(crate) fn erfinv64(x: f64) -> f64 {
    if x.is_nan() || x.abs() > 1.0 {
        return f64::NAN;
    }
    if x.abs() == 1.0 {
        return x * f64::INFINITY;
    }
    let w = -((1.0 - x) * (1.0 + x)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    };
    let mut y = p * x;
    // d erf / dy = 2 / sqrt(pi) * exp(-y^2)
    for _ in 0..3 {
        let d = 2.0 / std::f64::consts::PI.sqrt() * (-y * y).exp();
        if d == 0.0 {
            break;
        }
        y -= (erf64(y) - x) / d;
    }
    y
}

/// e^x in float32 without libm: Cody-Waite reduction x = n ln2 + r,
/// |r| <= ln2/2, a degree-7 polynomial for e^r and 2^n from the exponent
/// bits. Branch-free, so loops over it vectorise. Within ~1 ulp on
/// [-87, 88] (inputs are clamped there; NaN stays NaN).
#[inline(always)]
#[allow(clippy::excessive_precision)]
pub(crate) fn fast_expf(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest with the 1.5 * 2^23 trick (|t| < 2^22): no libm call,
    // so the loop vectorises.
    let t = x * std::f32::consts::LOG2_E + 12_582_912.0;
    let n = t - 12_582_912.0;
    // n as an integer from t's low mantissa bits (t = 1.5 * 2^23 + n
    // exactly): unlike `n as i32` (saturating, scalar) this vectorises
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = x - n * 0.693_145_751_953_125 - n * 1.428_606_820_309_417_2e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    p * f32::from_bits(((ni + 127) as u32) << 23)
}

/// tanh in float32 (~2 ulp): the odd Taylor series to x^15 for |x| < 0.5,
/// 1 - 2 / (e^{2|x|} + 1) with `fast_expf` beyond.
#[inline(always)]
#[allow(clippy::excessive_precision)]
pub(crate) fn fast_tanhf(x: f32) -> f32 {
    // both forms, then a select: branch-free, so loops vectorise
    let a = x.abs();
    let z = x * x;
    let p = -929_569.0 / 638_512_875.0;
    let p = p * z + 21_844.0 / 6_081_075.0;
    let p = p * z - 1382.0 / 155_925.0;
    let p = p * z + 62.0 / 2835.0;
    let p = p * z - 17.0 / 315.0;
    let p = p * z + 2.0 / 15.0;
    let p = p * z - 1.0 / 3.0;
    let small = x + x * z * p;
    let large = 1.0 - 2.0 / (fast_expf(2.0 * a) + 1.0);
    (if a < 0.5 { small } else { large }).copysign(x)
}

pub(crate) trait FastTrans {
    fn tanh_(self) -> Self;
    fn sigmoid_(self) -> Self;
}
impl FastTrans for f32 {
    #[inline(always)]
    fn tanh_(self) -> f32 {
        fast_tanhf(self)
    }
    #[inline(always)]
    fn sigmoid_(self) -> f32 {
        1.0 / (1.0 + fast_expf(-self))
    }
}
impl FastTrans for f64 {
    #[inline(always)]
    fn tanh_(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn sigmoid_(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
}

unary_fn!(Abs, x => x.abs(), int: x => x.wrapping_abs());
unary_fn!(Neg, x => -x, int: x => x.wrapping_neg());
unary_fn!(Exp, x => x.exp());
unary_fn!(Log, x => x.ln());
unary_fn!(Log2, x => x.log2());
unary_fn!(Log10, x => x.log10());
unary_fn!(Log1p, x => x.ln_1p());
unary_fn!(Expm1, x => x.exp_m1());
unary_fn!(Sqrt, x => x.sqrt());
unary_fn!(Rsqrt, x => 1.0 / x.sqrt());
unary_fn!(Cbrt, x => x.cbrt());
unary_fn!(Rcbrt, x => 1.0 / x.cbrt());
unary_fn!(Square, x => x * x, int: x => x.wrapping_mul(x));
unary_fn!(Reciprocal, x => 1.0 / x);
unary_fn!(Sin, x => x.sin());
unary_fn!(Cos, x => x.cos());
unary_fn!(Tan, x => x.tan());
unary_fn!(Arcsin, x => x.asin());
unary_fn!(Arccos, x => x.acos());
unary_fn!(Arctan, x => x.atan());
unary_fn!(Sinh, x => x.sinh());
unary_fn!(Cosh, x => x.cosh());
unary_fn!(Tanh, x => x.tanh_());
unary_fn!(Arcsinh, x => x.asinh());
unary_fn!(Arccosh, x => x.acosh());
unary_fn!(Arctanh, x => x.atanh());
unary_fn!(Sigmoid, x => x.sigmoid_());
// NaN stays NaN (MXNet's mshadow_op::relu, NumPy's maximum)
unary_fn!(Relu, x => if x > 0.0 || x.is_nan() { x } else { 0.0 }, int: x => x.max(0));
unary_fn!(Softsign, x => x / (1.0 + x.abs()));
unary_fn!(Sign, x => if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 }, int: x => x.signum());
unary_fn!(Floor, x => x.floor(), int: x => x);
unary_fn!(Ceil, x => x.ceil(), int: x => x);
unary_fn!(Round, x => x.round(), int: x => x);
// MXNet's rule: the nearer integer, and the lower one at a tie (1.5 -> 1,
// -2.5 -> -3), not NumPy's ties-to-even.
unary_fn!(Rint, x => { let (f, c) = (x.floor(), x.ceil()); if x - f <= c - x { f } else { c } }, int: x => x);
unary_fn!(Fix, x => x.trunc(), int: x => x);
unary_fn!(Trunc, x => x.trunc(), int: x => x);
unary_fn!(Degrees, x => x.to_degrees());
unary_fn!(Radians, x => x.to_radians());
unary_fn!(Erf_, x => x.erf_());
unary_fn!(ErfInv, x => x.erfinv_());
unary_fn!(LogicalNot, x => if x == 0.0 { 1.0 } else { 0.0 });
unary_fn!(Identity, x => x, int: x => x);

fn unary_kernel<U: UnaryFn>(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (x, y) = (&i[0], &o[0]);
    match x.dtype {
        DType::F32 => map1_wide(x.data::<f32>(), y.data_mut::<f32>(), U::f32),
        DType::F64 => map1(x.data::<f64>(), y.data_mut::<f64>(), U::f64),
        _ => unary_other(x, y, U::f32, U::f64, U::INT),
    }
    Ok(())
}

/// float16 and integer dtypes go through function pointers: one
/// instantiation per dtype instead of one per operator and dtype.
fn unary_other(
    x: &Blob,
    y: &Blob,
    f32f: fn(f32) -> f32,
    f64f: fn(f64) -> f64,
    i64f: Option<fn(i64) -> i64>,
) {
    let int = matches!(x.dtype, DType::U8 | DType::I8 | DType::I32 | DType::I64);
    if let (Some(f), true) = (i64f, int && x.dtype == y.dtype) {
        // exact in the integer dtype (never through float64)
        dispatch_dtype!(x.dtype, T => {
            map1(x.data::<T>(), y.data_mut::<T>(), |v| T::from_i64(f(v.to_i64())))
        });
        return;
    }
    match x.dtype {
        DType::F16 => map1(x.data::<f16>(), y.data_mut::<f16>(), |v| {
            f16::from_f32(f32f(v.to_f32()))
        }),
        d => dispatch_dtype!(d, T => {
            map1(x.data::<T>(), y.data_mut::<T>(), |v| T::from_f64(f64f(v.to_f64())))
        }),
    }
}

macro_rules! unary_op {
    ($NAME:ident, $name:expr, [$($alias:expr),*], $S:ident, $doc:expr, $grad:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$($alias),*],
            doc: $doc,
            cpu: Some(unary_kernel::<$S>),
            grad: $grad,
            pointwise: Some(super::fused::Pointwise::Unary(super::fused::unary_block::<$S>)),
            ..OpDef::BASE
        };
    };
}

/// d/dx = None: the gradient is zero (piecewise-constant functions).
const ZERO_GRAD: Option<super::registry::GradFn> = Some(|_, _, i, _, _| Ok(vec![None; i.len()]));

unary_op!(
    ABS,
    "abs",
    [],
    Abs,
    "Element-wise absolute value.",
    Some(|_, b, x, _, g| {
        let s = g_un(b, "sign", x[0])?;
        Ok(vec![Some(g_mul(b, g[0], s)?)])
    })
);
unary_op!(
    NEGATIVE,
    "negative",
    ["_np_negative"],
    Neg,
    "Element-wise negation.",
    Some(|_, b, _, _, g| Ok(vec![Some(g_un(b, "negative", g[0])?)]))
);
unary_op!(
    EXP,
    "exp",
    [],
    Exp,
    "Element-wise e**x.",
    Some(|_, b, _, y, g| Ok(vec![Some(g_mul(b, g[0], y[0])?)]))
);
unary_op!(
    LOG,
    "log",
    [],
    Log,
    "Element-wise natural logarithm.",
    Some(|_, b, x, _, g| Ok(vec![Some(g_div(b, g[0], x[0])?)]))
);
unary_op!(
    LOG2,
    "log2",
    [],
    Log2,
    "Element-wise base-2 logarithm.",
    Some(|_, b, x, _, g| {
        let t = g_sc(b, "_mul_scalar", x[0], std::f64::consts::LN_2)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    LOG10,
    "log10",
    [],
    Log10,
    "Element-wise base-10 logarithm.",
    Some(|_, b, x, _, g| {
        let t = g_sc(b, "_mul_scalar", x[0], std::f64::consts::LN_10)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    LOG1P,
    "log1p",
    [],
    Log1p,
    "Element-wise log(1 + x).",
    Some(|_, b, x, _, g| {
        let t = g_sc(b, "_plus_scalar", x[0], 1.0)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    EXPM1,
    "expm1",
    [],
    Expm1,
    "Element-wise exp(x) - 1.",
    Some(|_, b, _, y, g| {
        let t = g_sc(b, "_plus_scalar", y[0], 1.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    SQRT,
    "sqrt",
    [],
    Sqrt,
    "Element-wise square root.",
    Some(|_, b, _, y, g| {
        let t = g_sc(b, "_mul_scalar", y[0], 2.0)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    RSQRT,
    "rsqrt",
    [],
    Rsqrt,
    "Element-wise 1/sqrt(x).",
    Some(|_, b, x, y, g| {
        let t = g_div(b, y[0], x[0])?;
        let t = g_sc(b, "_mul_scalar", t, -0.5)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    CBRT,
    "cbrt",
    [],
    Cbrt,
    "Element-wise cube root.",
    Some(|_, b, x, y, g| {
        let t = g_div(b, y[0], x[0])?;
        let t = g_sc(b, "_div_scalar", t, 3.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    RCBRT,
    "rcbrt",
    [],
    Rcbrt,
    "Element-wise 1/cbrt(x).",
    Some(|_, b, x, y, g| {
        let t = g_div(b, y[0], x[0])?;
        let t = g_sc(b, "_div_scalar", t, -3.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    SQUARE,
    "square",
    [],
    Square,
    "Element-wise x*x.",
    Some(|_, b, x, _, g| {
        let t = g_sc(b, "_mul_scalar", x[0], 2.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    RECIPROCAL,
    "reciprocal",
    [],
    Reciprocal,
    "Element-wise 1/x.",
    Some(|_, b, _, y, g| {
        let t = g_un(b, "square", y[0])?;
        let t = g_un(b, "negative", t)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    SIN,
    "sin",
    [],
    Sin,
    "Element-wise sine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "cos", x[0])?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    COS,
    "cos",
    [],
    Cos,
    "Element-wise cosine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "sin", x[0])?;
        let t = g_un(b, "negative", t)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    TAN,
    "tan",
    [],
    Tan,
    "Element-wise tangent.",
    Some(|_, b, _, y, g| {
        let t = g_un(b, "square", y[0])?;
        let t = g_sc(b, "_plus_scalar", t, 1.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    ARCSIN,
    "arcsin",
    [],
    Arcsin,
    "Element-wise inverse sine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_rminus_scalar", t, 1.0)?;
        let t = g_un(b, "sqrt", t)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    ARCCOS,
    "arccos",
    [],
    Arccos,
    "Element-wise inverse cosine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_rminus_scalar", t, 1.0)?;
        let t = g_un(b, "sqrt", t)?;
        let t = g_un(b, "negative", t)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    ARCTAN,
    "arctan",
    [],
    Arctan,
    "Element-wise inverse tangent.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_plus_scalar", t, 1.0)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    SINH,
    "sinh",
    [],
    Sinh,
    "Element-wise hyperbolic sine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "cosh", x[0])?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    COSH,
    "cosh",
    [],
    Cosh,
    "Element-wise hyperbolic cosine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "sinh", x[0])?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    TANH,
    "tanh",
    [],
    Tanh,
    "Element-wise hyperbolic tangent.",
    Some(|_, b, _, y, g| Ok(vec![Some(b.op1("_backward_tanh", &[], &[g[0], y[0]])?)]))
);
unary_op!(
    ARCSINH,
    "arcsinh",
    [],
    Arcsinh,
    "Element-wise inverse hyperbolic sine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_plus_scalar", t, 1.0)?;
        let t = g_un(b, "sqrt", t)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    ARCCOSH,
    "arccosh",
    [],
    Arccosh,
    "Element-wise inverse hyperbolic cosine.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_minus_scalar", t, 1.0)?;
        let t = g_un(b, "sqrt", t)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    ARCTANH,
    "arctanh",
    [],
    Arctanh,
    "Element-wise inverse hyperbolic tangent.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_sc(b, "_rminus_scalar", t, 1.0)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    SIGMOID,
    "sigmoid",
    [],
    Sigmoid,
    "Element-wise logistic sigmoid 1/(1+exp(-x)).",
    Some(|_, b, _, y, g| Ok(vec![Some(b.op1(
        "_backward_sigmoid",
        &[],
        &[g[0], y[0]]
    )?)]))
);
unary_op!(
    RELU,
    "relu",
    [],
    Relu,
    "Element-wise max(x, 0).",
    Some(|_, b, _, y, g| Ok(vec![Some(b.op1("_backward_relu", &[], &[g[0], y[0]])?)]))
);
unary_op!(
    SOFTSIGN,
    "softsign",
    [],
    Softsign,
    "Element-wise x/(1+|x|).",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "abs", x[0])?;
        let t = g_sc(b, "_plus_scalar", t, 1.0)?;
        let t = g_un(b, "square", t)?;
        Ok(vec![Some(g_div(b, g[0], t)?)])
    })
);
unary_op!(
    DEGREES,
    "degrees",
    [],
    Degrees,
    "Radians to degrees.",
    Some(|_, b, _, _, g| Ok(vec![Some(g_sc(
        b,
        "_mul_scalar",
        g[0],
        180.0 / std::f64::consts::PI
    )?)]))
);
unary_op!(
    RADIANS,
    "radians",
    [],
    Radians,
    "Degrees to radians.",
    Some(|_, b, _, _, g| Ok(vec![Some(g_sc(
        b,
        "_mul_scalar",
        g[0],
        std::f64::consts::PI / 180.0
    )?)]))
);
unary_op!(
    ERF,
    "erf",
    [],
    Erf_,
    "Element-wise Gauss error function.",
    Some(|_, b, x, _, g| {
        let t = g_un(b, "square", x[0])?;
        let t = g_un(b, "negative", t)?;
        let t = g_un(b, "exp", t)?;
        let t = g_sc(b, "_mul_scalar", t, 2.0 / std::f64::consts::PI.sqrt())?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    ERFINV,
    "erfinv",
    [],
    ErfInv,
    "Element-wise inverse Gauss error function (NaN outside [-1, 1], +-inf at +-1).",
    Some(|_, b, _, y, g| {
        // d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
        let t = g_un(b, "square", y[0])?;
        let t = g_un(b, "exp", t)?;
        let t = g_sc(b, "_mul_scalar", t, std::f64::consts::PI.sqrt() / 2.0)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
unary_op!(
    SIGN,
    "sign",
    [],
    Sign,
    "Element-wise sign (-1, 0, 1).",
    ZERO_GRAD
);
unary_op!(FLOOR, "floor", [], Floor, "Element-wise floor.", ZERO_GRAD);
unary_op!(CEIL, "ceil", [], Ceil, "Element-wise ceiling.", ZERO_GRAD);
unary_op!(
    ROUND,
    "round",
    [],
    Round,
    "Round half away from zero.",
    ZERO_GRAD
);
unary_op!(
    RINT,
    "rint",
    [],
    Rint,
    "Round to the nearest integer; halfway values go to the lower one (1.5 -> 1, -2.5 -> -3), as in MXNet.",
    ZERO_GRAD
);
unary_op!(FIX, "fix", [], Fix, "Round towards zero.", ZERO_GRAD);
unary_op!(
    TRUNC,
    "trunc",
    [],
    Trunc,
    "Truncate towards zero.",
    ZERO_GRAD
);
unary_op!(
    LOGICAL_NOT,
    "logical_not",
    [],
    LogicalNot,
    "1 where x == 0, else 0.",
    ZERO_GRAD
);
unary_op!(
    COPY,
    "_copy",
    ["identity", "_identity_with_attr_like_rhs_unused"],
    Identity,
    "Copy of the input.",
    Some(|_, _, _, _, g| Ok(vec![Some(g[0])]))
);

/// `BlockGrad`/`stop_gradient`: identity forward, no gradient.
pub static BLOCK_GRAD: OpDef = OpDef {
    name: "BlockGrad",
    aliases: &["stop_gradient"],
    doc: "Identity that stops gradients flowing to its input.",
    cpu: Some(unary_kernel::<Identity>),
    grad: ZERO_GRAD,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Binary
// ---------------------------------------------------------------------------

pub trait BinaryFn: Send + Sync + 'static {
    fn f32(a: f32, b: f32) -> f32;
    fn f64(a: f64, b: f64) -> f64;
    fn i64(a: i64, b: i64) -> i64;
}

macro_rules! binary_fn {
    ($S:ident, ($a:ident, $b:ident) => $body:expr, int: ($ia:ident, $ib:ident) => $ibody:expr) => {
        pub struct $S;
        impl BinaryFn for $S {
            #[inline(always)]
            fn f32($a: f32, $b: f32) -> f32 {
                $body
            }
            #[inline(always)]
            fn f64($a: f64, $b: f64) -> f64 {
                $body
            }
            #[inline(always)]
            fn i64($ia: i64, $ib: i64) -> i64 {
                $ibody
            }
        }
    };
}

fn bool_i(b: bool) -> i64 {
    b as i64
}

binary_fn!(Add, (a, b) => a + b, int: (a, b) => a.wrapping_add(b));
binary_fn!(Sub, (a, b) => a - b, int: (a, b) => a.wrapping_sub(b));
binary_fn!(Mul, (a, b) => a * b, int: (a, b) => a.wrapping_mul(b));
binary_fn!(Div, (a, b) => a / b, int: (a, b) => if b == 0 { 0 } else { a.wrapping_div(b) });
binary_fn!(Mod, (a, b) => if b == 0.0 { 0.0 } else { let r = a % b; if r != 0.0 && ((r < 0.0) != (b < 0.0)) { r + b } else { r } },
    int: (a, b) => if b == 0 { 0 } else { a.rem_euclid(b) + if b < 0 && a.rem_euclid(b) != 0 { b } else { 0 } });
binary_fn!(Power, (a, b) => a.powf(b), int: (a, b) => if b < 0 { if a == 1 { 1 } else if a == -1 { if b % 2 == 0 { 1 } else { -1 } } else { 0 } } else { a.wrapping_pow(b.min(u32::MAX as i64) as u32) });
binary_fn!(Maximum, (a, b) => crate::ops::kernels::max_nan(a, b), int: (a, b) => a.max(b));
binary_fn!(Minimum, (a, b) => crate::ops::kernels::min_nan(a, b), int: (a, b) => a.min(b));
binary_fn!(Hypot, (a, b) => a.hypot(b), int: (a, b) => ((a as f64).hypot(b as f64)) as i64);
binary_fn!(Equal, (a, b) => (a == b) as i32 as _, int: (a, b) => bool_i(a == b));
binary_fn!(NotEqual, (a, b) => (a != b) as i32 as _, int: (a, b) => bool_i(a != b));
binary_fn!(Greater, (a, b) => (a > b) as i32 as _, int: (a, b) => bool_i(a > b));
binary_fn!(GreaterEqual, (a, b) => (a >= b) as i32 as _, int: (a, b) => bool_i(a >= b));
binary_fn!(Lesser, (a, b) => (a < b) as i32 as _, int: (a, b) => bool_i(a < b));
binary_fn!(LesserEqual, (a, b) => (a <= b) as i32 as _, int: (a, b) => bool_i(a <= b));
binary_fn!(LogicalAnd, (a, b) => (a != 0.0 && b != 0.0) as i32 as _, int: (a, b) => bool_i(a != 0 && b != 0));
binary_fn!(LogicalOr, (a, b) => (a != 0.0 || b != 0.0) as i32 as _, int: (a, b) => bool_i(a != 0 || b != 0));
binary_fn!(LogicalXor, (a, b) => ((a != 0.0) != (b != 0.0)) as i32 as _, int: (a, b) => bool_i((a != 0) != (b != 0)));

fn binary_kernel<F: BinaryFn>(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (a, b, y) = (&i[0], &i[1], &o[0]);
    let (ash, bsh, ysh) = (&a.shape, &b.shape, &y.shape);
    match a.dtype {
        DType::F32 => {
            let (av, bv, yv) = (a.data::<f32>(), b.data::<f32>(), y.data_mut::<f32>());
            if av.len() == yv.len() && bv.len() == yv.len() {
                // same shapes: the AVX2 loop (same bits, 8 lanes)
                map2_wide(av, bv, yv, F::f32)
            } else {
                map2(av, ash, bv, bsh, yv, ysh, F::f32)
            }
        }
        DType::F64 => map2(
            a.data::<f64>(),
            ash,
            b.data::<f64>(),
            bsh,
            y.data_mut::<f64>(),
            ysh,
            F::f64,
        ),
        _ => binary_other(a, b, y, F::f32, F::i64),
    }
    Ok(())
}

/// float16 and integer dtypes through function pointers (see unary_other).
fn binary_other(
    a: &Blob,
    b: &Blob,
    y: &Blob,
    f32f: fn(f32, f32) -> f32,
    i64f: fn(i64, i64) -> i64,
) {
    let (ash, bsh, ysh) = (&a.shape, &b.shape, &y.shape);
    match a.dtype {
        DType::F16 => map2(
            a.data::<f16>(),
            ash,
            b.data::<f16>(),
            bsh,
            y.data_mut::<f16>(),
            ysh,
            |p, q| f16::from_f32(f32f(p.to_f32(), q.to_f32())),
        ),
        DType::U8 => map2(
            a.data::<u8>(),
            ash,
            b.data::<u8>(),
            bsh,
            y.data_mut::<u8>(),
            ysh,
            |p, q| i64f(p as i64, q as i64) as u8,
        ),
        DType::I8 => map2(
            a.data::<i8>(),
            ash,
            b.data::<i8>(),
            bsh,
            y.data_mut::<i8>(),
            ysh,
            |p, q| i64f(p as i64, q as i64) as i8,
        ),
        DType::I32 => map2(
            a.data::<i32>(),
            ash,
            b.data::<i32>(),
            bsh,
            y.data_mut::<i32>(),
            ysh,
            |p, q| i64f(p as i64, q as i64) as i32,
        ),
        DType::I64 => map2(
            a.data::<i64>(),
            ash,
            b.data::<i64>(),
            bsh,
            y.data_mut::<i64>(),
            ysh,
            i64f,
        ),
        DType::Bool => map2(
            a.data::<bool>(),
            ash,
            b.data::<bool>(),
            bsh,
            y.data_mut::<bool>(),
            ysh,
            |p, q| i64f(p as i64, q as i64) != 0,
        ),
        DType::F32 | DType::F64 => unreachable!("handled by the generic kernel"),
    }
}

fn infer_broadcast(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
        outs[0] = Some(broadcast_shapes(call.name(), a, b)?);
    }
    Ok(())
}

pub(crate) fn infer_elemwise2(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
        if a != b {
            return Err(Error::Shape(format!(
                "{}: lhs shape {} and rhs shape {} must be equal (use broadcast_* or the operators for broadcasting)",
                call.name(),
                fmt_shape(a),
                fmt_shape(b)
            )));
        }
    }
    infer_shape_same(call, ins, outs)
}

/// Sum a (broadcast) gradient back to the shape of `like`.
pub fn g_unbroadcast(b: B, g: Entry, like: Entry) -> Result<Entry> {
    b.op1("_reduce_to_like", &[], &[g, like])
}

type Bgrad = fn(B, Entry, Entry, Entry, Entry) -> Result<(Option<Entry>, Option<Entry>)>;

fn bg_add(_: B, _: Entry, _: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    Ok((Some(g), Some(g)))
}
fn bg_sub(b: B, _: Entry, _: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    Ok((Some(g), Some(g_un(b, "negative", g)?)))
}
fn bg_mul(b: B, x: Entry, y: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    let bx = b.op1("broadcast_mul", &[], &[g, y])?;
    let by = b.op1("broadcast_mul", &[], &[g, x])?;
    Ok((Some(bx), Some(by)))
}
fn bg_div(
    b: B,
    _: Entry,
    y: Entry,
    out: Entry,
    g: Entry,
) -> Result<(Option<Entry>, Option<Entry>)> {
    let gx = b.op1("broadcast_div", &[], &[g, y])?;
    let t = b.op1("broadcast_mul", &[], &[gx, out])?;
    Ok((Some(gx), Some(g_un(b, "negative", t)?)))
}
fn bg_power(
    b: B,
    x: Entry,
    y: Entry,
    out: Entry,
    g: Entry,
) -> Result<(Option<Entry>, Option<Entry>)> {
    // d/dx = y * x^(y-1) = y * out / x ; d/dy = out * ln(x)
    let t = b.op1("broadcast_mul", &[], &[out, y])?;
    let t = b.op1("broadcast_div", &[], &[t, x])?;
    let gx = b.op1("broadcast_mul", &[], &[g, t])?;
    let l = g_un(b, "log", x)?;
    let t = b.op1("broadcast_mul", &[], &[out, l])?;
    let gy = b.op1("broadcast_mul", &[], &[g, t])?;
    Ok((Some(gx), Some(gy)))
}
fn bg_max(b: B, x: Entry, y: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    let m = b.op1("broadcast_greater_equal", &[], &[x, y])?;
    let n = b.op1("broadcast_lesser", &[], &[x, y])?;
    Ok((
        Some(b.op1("broadcast_mul", &[], &[g, m])?),
        Some(b.op1("broadcast_mul", &[], &[g, n])?),
    ))
}
fn bg_min(b: B, x: Entry, y: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    let m = b.op1("broadcast_lesser_equal", &[], &[x, y])?;
    let n = b.op1("broadcast_greater", &[], &[x, y])?;
    Ok((
        Some(b.op1("broadcast_mul", &[], &[g, m])?),
        Some(b.op1("broadcast_mul", &[], &[g, n])?),
    ))
}
fn bg_mod(b: B, x: Entry, y: Entry, _: Entry, g: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    let q = b.op1("broadcast_div", &[], &[x, y])?;
    let q = g_un(b, "floor", q)?;
    let t = b.op1("broadcast_mul", &[], &[g, q])?;
    Ok((Some(g), Some(g_un(b, "negative", t)?)))
}
fn bg_hypot(
    b: B,
    x: Entry,
    y: Entry,
    out: Entry,
    g: Entry,
) -> Result<(Option<Entry>, Option<Entry>)> {
    let gx = b.op1("broadcast_div", &[], &[x, out])?;
    let gy = b.op1("broadcast_div", &[], &[y, out])?;
    Ok((
        Some(b.op1("broadcast_mul", &[], &[g, gx])?),
        Some(b.op1("broadcast_mul", &[], &[g, gy])?),
    ))
}
fn bg_none(_: B, _: Entry, _: Entry, _: Entry, _: Entry) -> Result<(Option<Entry>, Option<Entry>)> {
    Ok((None, None))
}

/// The gradient rule of each binary function, by operator name suffix.
fn bgrad_of(name: &str) -> Bgrad {
    let base = name
        .trim_start_matches("broadcast_")
        .trim_start_matches("elemwise_")
        .trim_start_matches('_');
    match base {
        "add" => bg_add,
        "sub" => bg_sub,
        "mul" => bg_mul,
        "div" => bg_div,
        "power" => bg_power,
        "maximum" => bg_max,
        "minimum" => bg_min,
        "mod" => bg_mod,
        "hypot" => bg_hypot,
        _ => bg_none,
    }
}

fn binary_grad(
    c: &OpCall,
    b: B,
    i: &[Entry],
    o: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let (gx, gy) = bgrad_of(c.def.name)(b, i[0], i[1], o[0], g[0])?;
    let broadcast = c.def.name.starts_with("broadcast_");
    let fix = |b: B, e: Option<Entry>, like: Entry| -> Result<Option<Entry>> {
        match e {
            Some(e) if broadcast => Ok(Some(g_unbroadcast(b, e, like)?)),
            e => Ok(e),
        }
    };
    let gx = fix(b, gx, i[0])?;
    let gy = fix(b, gy, i[1])?;
    Ok(vec![gx, gy])
}

macro_rules! binary_op {
    ($NAME:ident, $name:expr, [$($alias:expr),*], $S:ident, $infer:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$($alias),*],
            doc: $doc,
            inputs: &["lhs", "rhs"],
            infer_shape: $infer,
            cpu: Some(binary_kernel::<$S>),
            grad: Some(binary_grad),
            pointwise: Some(super::fused::Pointwise::Binary(super::fused::binary_block::<$S>)),
            ..OpDef::BASE
        };
    };
}

// Fused gradients of tanh, sigmoid and relu, from the head gradient and the
// forward output (one pass instead of three element-wise ops and two
// temporaries). Their own gradients keep second-order autograd working.
binary_fn!(TanhGrad, (g, y) => g * (1.0 - y * y), int: (g, y) => g.wrapping_mul(1 - y.wrapping_mul(y)));
binary_fn!(SigmoidGrad, (g, y) => g * (y * (1.0 - y)), int: (g, y) => g.wrapping_mul(y.wrapping_mul(1 - y)));
binary_fn!(ReluGrad, (g, y) => if y > 0.0 { g } else { 0.0 }, int: (g, y) => if y > 0 { g } else { 0 });

macro_rules! act_grad_op {
    ($NAME:ident, $name:expr, $S:ident, $doc:expr, $grad:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[],
            doc: $doc,
            inputs: &["ograd", "out"],
            infer_shape: infer_elemwise2,
            cpu: Some(binary_kernel::<$S>),
            grad: $grad,
            ..OpDef::BASE
        };
    };
}

act_grad_op!(
    TANH_GRAD,
    "_backward_tanh",
    TanhGrad,
    "Gradient of tanh: ograd * (1 - out^2), out = tanh(x).",
    Some(|_, b, x, _, g| {
        // d/d ograd = (1 - out^2) G; d/d out = -2 ograd out G
        let dg = b.op1("_backward_tanh", &[], &[g[0], x[1]])?;
        let t = g_mul(b, g[0], x[0])?;
        let t = g_mul(b, t, x[1])?;
        Ok(vec![Some(dg), Some(g_sc(b, "_mul_scalar", t, -2.0)?)])
    })
);
act_grad_op!(
    SIGMOID_GRAD,
    "_backward_sigmoid",
    SigmoidGrad,
    "Gradient of sigmoid: ograd * out * (1 - out), out = sigmoid(x).",
    Some(|_, b, x, _, g| {
        // d/d ograd = out (1 - out) G; d/d out = ograd (1 - 2 out) G
        let dg = b.op1("_backward_sigmoid", &[], &[g[0], x[1]])?;
        let t = g_sc(b, "_mul_scalar", x[1], -2.0)?;
        let t = g_sc(b, "_plus_scalar", t, 1.0)?;
        let t = g_mul(b, t, x[0])?;
        Ok(vec![Some(dg), Some(g_mul(b, t, g[0])?)])
    })
);
act_grad_op!(
    RELU_GRAD,
    "_backward_relu",
    ReluGrad,
    "Gradient of relu: ograd where out > 0, else 0 (out = relu(x)).",
    Some(|_, b, x, _, g| {
        // piecewise linear in ograd, piecewise constant in out
        Ok(vec![
            Some(b.op1("_backward_relu", &[], &[g[0], x[1]])?),
            None,
        ])
    })
);

binary_op!(
    E_ADD,
    "elemwise_add",
    ["_add", "_plus", "_Plus"],
    Add,
    infer_elemwise2,
    "lhs + rhs (same shapes)."
);
binary_op!(
    E_SUB,
    "elemwise_sub",
    ["_sub", "_minus", "_Minus"],
    Sub,
    infer_elemwise2,
    "lhs - rhs (same shapes)."
);
binary_op!(
    E_MUL,
    "elemwise_mul",
    ["_mul", "_Mul"],
    Mul,
    infer_elemwise2,
    "lhs * rhs (same shapes)."
);
binary_op!(
    E_DIV,
    "elemwise_div",
    ["_div", "_Div"],
    Div,
    infer_elemwise2,
    "lhs / rhs (same shapes)."
);
binary_op!(
    E_MOD,
    "_mod",
    ["_Mod"],
    Mod,
    infer_elemwise2,
    "lhs % rhs (same shapes), sign of rhs as in Python."
);
binary_op!(
    E_POW,
    "_power",
    ["_Power"],
    Power,
    infer_elemwise2,
    "lhs ** rhs (same shapes)."
);
binary_op!(
    E_MAX,
    "_maximum",
    ["_Maximum"],
    Maximum,
    infer_elemwise2,
    "max(lhs, rhs) (same shapes)."
);
binary_op!(
    E_MIN,
    "_minimum",
    ["_Minimum"],
    Minimum,
    infer_elemwise2,
    "min(lhs, rhs) (same shapes)."
);
binary_op!(
    E_HYPOT,
    "_hypot",
    [],
    Hypot,
    infer_elemwise2,
    "sqrt(lhs**2 + rhs**2) (same shapes)."
);
binary_op!(
    E_EQ,
    "_equal",
    [],
    Equal,
    infer_elemwise2,
    "1 where lhs == rhs else 0."
);
binary_op!(
    E_NE,
    "_not_equal",
    [],
    NotEqual,
    infer_elemwise2,
    "1 where lhs != rhs else 0."
);
binary_op!(
    E_GT,
    "_greater",
    [],
    Greater,
    infer_elemwise2,
    "1 where lhs > rhs else 0."
);
binary_op!(
    E_GE,
    "_greater_equal",
    [],
    GreaterEqual,
    infer_elemwise2,
    "1 where lhs >= rhs else 0."
);
binary_op!(
    E_LT,
    "_lesser",
    [],
    Lesser,
    infer_elemwise2,
    "1 where lhs < rhs else 0."
);
binary_op!(
    E_LE,
    "_lesser_equal",
    [],
    LesserEqual,
    infer_elemwise2,
    "1 where lhs <= rhs else 0."
);
binary_op!(
    E_AND,
    "_logical_and",
    [],
    LogicalAnd,
    infer_elemwise2,
    "Logical and, as 0/1."
);
binary_op!(
    E_OR,
    "_logical_or",
    [],
    LogicalOr,
    infer_elemwise2,
    "Logical or, as 0/1."
);
binary_op!(
    E_XOR,
    "_logical_xor",
    [],
    LogicalXor,
    infer_elemwise2,
    "Logical xor, as 0/1."
);

binary_op!(
    B_ADD,
    "broadcast_add",
    ["broadcast_plus"],
    Add,
    infer_broadcast,
    "lhs + rhs with broadcasting."
);
binary_op!(
    B_SUB,
    "broadcast_sub",
    ["broadcast_minus"],
    Sub,
    infer_broadcast,
    "lhs - rhs with broadcasting."
);
binary_op!(
    B_MUL,
    "broadcast_mul",
    [],
    Mul,
    infer_broadcast,
    "lhs * rhs with broadcasting."
);
binary_op!(
    B_DIV,
    "broadcast_div",
    [],
    Div,
    infer_broadcast,
    "lhs / rhs with broadcasting."
);
binary_op!(
    B_MOD,
    "broadcast_mod",
    [],
    Mod,
    infer_broadcast,
    "lhs % rhs with broadcasting."
);
binary_op!(
    B_POW,
    "broadcast_power",
    [],
    Power,
    infer_broadcast,
    "lhs ** rhs with broadcasting."
);
binary_op!(
    B_MAX,
    "broadcast_maximum",
    [],
    Maximum,
    infer_broadcast,
    "max(lhs, rhs) with broadcasting."
);
binary_op!(
    B_MIN,
    "broadcast_minimum",
    [],
    Minimum,
    infer_broadcast,
    "min(lhs, rhs) with broadcasting."
);
binary_op!(
    B_HYPOT,
    "broadcast_hypot",
    [],
    Hypot,
    infer_broadcast,
    "hypot with broadcasting."
);
binary_op!(
    B_EQ,
    "broadcast_equal",
    [],
    Equal,
    infer_broadcast,
    "lhs == rhs as 0/1, broadcasting."
);
binary_op!(
    B_NE,
    "broadcast_not_equal",
    [],
    NotEqual,
    infer_broadcast,
    "lhs != rhs as 0/1, broadcasting."
);
binary_op!(
    B_GT,
    "broadcast_greater",
    [],
    Greater,
    infer_broadcast,
    "lhs > rhs as 0/1, broadcasting."
);
binary_op!(
    B_GE,
    "broadcast_greater_equal",
    [],
    GreaterEqual,
    infer_broadcast,
    "lhs >= rhs as 0/1, broadcasting."
);
binary_op!(
    B_LT,
    "broadcast_lesser",
    [],
    Lesser,
    infer_broadcast,
    "lhs < rhs as 0/1, broadcasting."
);
binary_op!(
    B_LE,
    "broadcast_lesser_equal",
    [],
    LesserEqual,
    infer_broadcast,
    "lhs <= rhs as 0/1, broadcasting."
);
binary_op!(
    B_AND,
    "broadcast_logical_and",
    [],
    LogicalAnd,
    infer_broadcast,
    "Logical and as 0/1, broadcasting."
);
binary_op!(
    B_OR,
    "broadcast_logical_or",
    [],
    LogicalOr,
    infer_broadcast,
    "Logical or as 0/1, broadcasting."
);
binary_op!(
    B_XOR,
    "broadcast_logical_xor",
    [],
    LogicalXor,
    infer_broadcast,
    "Logical xor as 0/1, broadcasting."
);

// ---------------------------------------------------------------------------
// Binary with a scalar
// ---------------------------------------------------------------------------

pub struct ScalarParam {
    pub scalar: f64,
    /// The scalar as an integer, exact when it was written as one (a
    /// float64 holds only 53 bits), else truncated toward zero: what an
    /// integer array's operation uses.
    pub int: i64,
}

fn parse_scalar(a: &Attrs) -> Result<Params> {
    let scalar = a.p("scalar").f64("scalar", 0.0)?;
    let int = a
        .raw("scalar")
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(scalar.trunc() as i64);
    Ok(Box::new(ScalarParam { scalar, int }))
}

fn scalar_kernel<F: BinaryFn, const REV: bool>(
    c: &OpCall,
    i: &[Blob],
    o: &[Blob],
    _: &KernelCtx,
) -> Result<()> {
    let (s, si) = (c.p::<ScalarParam>().scalar, c.p::<ScalarParam>().int);
    let (x, y) = (&i[0], &o[0]);
    match x.dtype {
        DType::F32 => {
            let sv = s as f32;
            if REV {
                map1_wide(x.data::<f32>(), y.data_mut::<f32>(), |v| F::f32(sv, v))
            } else {
                map1_wide(x.data::<f32>(), y.data_mut::<f32>(), |v| F::f32(v, sv))
            }
        }
        DType::F64 => {
            if REV {
                map1(x.data::<f64>(), y.data_mut::<f64>(), |v| F::f64(s, v))
            } else {
                map1(x.data::<f64>(), y.data_mut::<f64>(), |v| F::f64(v, s))
            }
        }
        _ => scalar_other(x, y, (s, si), REV, F::f32, F::i64),
    }
    Ok(())
}

/// float16 and integer dtypes through function pointers (see unary_other).
fn scalar_other(
    x: &Blob,
    y: &Blob,
    (s, si): (f64, i64),
    rev: bool,
    f32f: fn(f32, f32) -> f32,
    i64f: fn(i64, i64) -> i64,
) {
    if x.dtype == DType::F16 {
        let sv = s as f32;
        let f = |v: f16| {
            let v = v.to_f32();
            f16::from_f32(if rev { f32f(sv, v) } else { f32f(v, sv) })
        };
        map1(x.data::<f16>(), y.data_mut::<f16>(), f);
        return;
    }
    // The scalar is cast (wrapping) to the array's dtype first, as MXNet
    // does, and the arithmetic stays integer (exact beyond 2^53).
    let si = dispatch_dtype!(x.dtype, T => T::from_i64(si).to_i64());
    dispatch_dtype!(x.dtype, T => {
        map1(x.data::<T>(), y.data_mut::<T>(), |v| {
            let v = v.to_i64();
            T::from_i64(if rev { i64f(si, v) } else { i64f(v, si) })
        })
    });
}

fn sg(c: &OpCall) -> f64 {
    c.p::<ScalarParam>().scalar
}

macro_rules! scalar_op {
    ($NAME:ident, $name:expr, [$($alias:expr),*], $S:ident, $rev:expr, $doc:expr, $grad:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            aliases: &[$($alias),*],
            doc: $doc,
            parse: parse_scalar,
            cpu: Some(scalar_kernel::<$S, $rev>),
            grad: $grad,
            pointwise: Some(super::fused::Pointwise::Scalar(super::fused::scalar_block::<$S, $rev>, sg)),
            ..OpDef::BASE
        };
    };
}

scalar_op!(
    S_PLUS,
    "_plus_scalar",
    ["_PlusScalar"],
    Add,
    false,
    "data + scalar.",
    Some(|_, _, _, _, g| Ok(vec![Some(g[0])]))
);
scalar_op!(
    S_MINUS,
    "_minus_scalar",
    ["_MinusScalar"],
    Sub,
    false,
    "data - scalar.",
    Some(|_, _, _, _, g| Ok(vec![Some(g[0])]))
);
scalar_op!(
    S_RMINUS,
    "_rminus_scalar",
    ["_RMinusScalar"],
    Sub,
    true,
    "scalar - data.",
    Some(|_, b, _, _, g| Ok(vec![Some(g_un(b, "negative", g[0])?)]))
);
scalar_op!(
    S_MUL,
    "_mul_scalar",
    ["_MulScalar"],
    Mul,
    false,
    "data * scalar.",
    Some(|c, b, _, _, g| Ok(vec![Some(g_sc(b, "_mul_scalar", g[0], sg(c))?)]))
);
scalar_op!(
    S_DIV,
    "_div_scalar",
    ["_DivScalar"],
    Div,
    false,
    "data / scalar.",
    Some(|c, b, _, _, g| Ok(vec![Some(g_sc(b, "_div_scalar", g[0], sg(c))?)]))
);
scalar_op!(
    S_RDIV,
    "_rdiv_scalar",
    ["_RDivScalar"],
    Div,
    true,
    "scalar / data.",
    Some(|_, b, x, y, g| {
        let t = g_div(b, y[0], x[0])?;
        let t = g_un(b, "negative", t)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
scalar_op!(
    S_MOD,
    "_mod_scalar",
    ["_ModScalar"],
    Mod,
    false,
    "data % scalar.",
    Some(|_, _, _, _, g| Ok(vec![Some(g[0])]))
);
scalar_op!(
    S_RMOD,
    "_rmod_scalar",
    ["_RModScalar"],
    Mod,
    true,
    "scalar % data.",
    Some(|c, b, x, _, g| {
        let t = g_sc(b, "_rdiv_scalar", x[0], sg(c))?;
        let t = g_un(b, "floor", t)?;
        let t = g_un(b, "negative", t)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
scalar_op!(
    S_POW,
    "_power_scalar",
    ["_PowerScalar"],
    Power,
    false,
    "data ** scalar.",
    Some(|c, b, x, _, g| {
        let s = sg(c);
        let t = g_sc(b, "_power_scalar", x[0], s - 1.0)?;
        let t = g_sc(b, "_mul_scalar", t, s)?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
scalar_op!(
    S_RPOW,
    "_rpower_scalar",
    ["_RPowerScalar"],
    Power,
    true,
    "scalar ** data.",
    Some(|c, b, _, y, g| {
        let t = g_sc(b, "_mul_scalar", y[0], sg(c).ln())?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
scalar_op!(
    S_MAX,
    "_maximum_scalar",
    ["_MaximumScalar"],
    Maximum,
    false,
    "max(data, scalar).",
    Some(|c, b, x, _, g| {
        let m = g_sc(b, "_greater_equal_scalar", x[0], sg(c))?;
        Ok(vec![Some(g_mul(b, g[0], m)?)])
    })
);
scalar_op!(
    S_MIN,
    "_minimum_scalar",
    ["_MinimumScalar"],
    Minimum,
    false,
    "min(data, scalar).",
    Some(|c, b, x, _, g| {
        let m = g_sc(b, "_lesser_equal_scalar", x[0], sg(c))?;
        Ok(vec![Some(g_mul(b, g[0], m)?)])
    })
);
scalar_op!(
    S_HYPOT,
    "_hypot_scalar",
    [],
    Hypot,
    false,
    "hypot(data, scalar).",
    Some(|_, b, x, y, g| {
        let t = g_div(b, x[0], y[0])?;
        Ok(vec![Some(g_mul(b, g[0], t)?)])
    })
);
scalar_op!(
    S_EQ,
    "_equal_scalar",
    ["_EqualScalar"],
    Equal,
    false,
    "1 where data == scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_NE,
    "_not_equal_scalar",
    ["_NotEqualScalar"],
    NotEqual,
    false,
    "1 where data != scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_GT,
    "_greater_scalar",
    ["_GreaterScalar"],
    Greater,
    false,
    "1 where data > scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_GE,
    "_greater_equal_scalar",
    ["_GreaterEqualScalar"],
    GreaterEqual,
    false,
    "1 where data >= scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_LT,
    "_lesser_scalar",
    ["_LesserScalar"],
    Lesser,
    false,
    "1 where data < scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_LE,
    "_lesser_equal_scalar",
    ["_LesserEqualScalar"],
    LesserEqual,
    false,
    "1 where data <= scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_AND,
    "_logical_and_scalar",
    [],
    LogicalAnd,
    false,
    "Logical and with a scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_OR,
    "_logical_or_scalar",
    [],
    LogicalOr,
    false,
    "Logical or with a scalar.",
    ZERO_GRAD
);
scalar_op!(
    S_XOR,
    "_logical_xor_scalar",
    [],
    LogicalXor,
    false,
    "Logical xor with a scalar.",
    ZERO_GRAD
);

// ---------------------------------------------------------------------------
// clip, where, add_n, cast, broadcast_to/like/axis, _reduce_to_like
// ---------------------------------------------------------------------------

pub struct ClipParam {
    a_min: f64,
    a_max: f64,
}

fn clip_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    use crate::ops::kernels::clip_nan;
    let p = c.p::<ClipParam>();
    let (x, y) = (&i[0], &o[0]);
    match x.dtype {
        DType::F32 => {
            let (lo, hi) = (p.a_min as f32, p.a_max as f32);
            map1(x.data::<f32>(), y.data_mut::<f32>(), |v| {
                clip_nan(v, lo, hi)
            })
        }
        DType::U8 | DType::I8 | DType::I32 | DType::I64 => dispatch_dtype!(x.dtype, T => {
            // the bounds cast to integers as MXNet casts them to the dtype
            // (toward zero); exact beyond 2^53 where the values are
            let (lo, hi) = (p.a_min as i64, p.a_max as i64);
            map1(x.data::<T>(), y.data_mut::<T>(), |v| T::from_i64(clip_nan(v.to_i64(), lo, hi)))
        }),
        d => dispatch_dtype!(d, T => {
            map1(x.data::<T>(), y.data_mut::<T>(), |v| T::from_f64(clip_nan(v.to_f64(), p.a_min, p.a_max)))
        }),
    }
    Ok(())
}

pub static CLIP: OpDef = OpDef {
    name: "clip",
    doc: "Clip values to [a_min, a_max].",
    parse: |a| {
        let p = a.p("clip");
        let (a_min, a_max) = (p.f64_req("a_min")?, p.f64_req("a_max")?);
        if a_min > a_max {
            return Err(Error::Param(format!(
                "clip: a_min ({a_min}) must not exceed a_max ({a_max})"
            )));
        }
        Ok(Box::new(ClipParam { a_min, a_max }))
    },
    cpu: Some(clip_kernel),
    grad: Some(|c, b, x, _, g| {
        let p = c.p::<ClipParam>();
        let m1 = g_sc(b, "_greater_equal_scalar", x[0], p.a_min)?;
        let m2 = g_sc(b, "_lesser_equal_scalar", x[0], p.a_max)?;
        let m = g_mul(b, m1, m2)?;
        Ok(vec![Some(g_mul(b, g[0], m)?)])
    }),
    ..OpDef::BASE
};

fn where_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let (c, x, y, out) = (&i[0], &i[1], &i[2], &o[0]);
    let n = out.size();
    let row = if c.size() == n {
        1
    } else {
        n / c.size().max(1)
    };
    dispatch_dtype!(c.dtype, C => {
        let cv = c.data::<C>();
        dispatch_dtype!(x.dtype, T => {
            let (xv, yv, ov) = (x.data::<T>(), y.data::<T>(), out.data_mut::<T>());
            // pieces of whole condition rows, in parallel
            let chunk = row * (crate::ops::kernels::PAR_GRAIN / row).max(1);
            crate::par::par_chunks_mut(ov, chunk.max(1), |k, op| {
                let s = k * chunk;
                let (xs, ys) = (&xv[s..s + op.len()], &yv[s..s + op.len()]);
                if row == 1 {
                    for (((o, &a), &b), cc) in op.iter_mut().zip(xs).zip(ys).zip(&cv[s..]) {
                        *o = if cc.to_f64() != 0.0 { a } else { b };
                    }
                } else {
                    for (r, o) in op.chunks_mut(row).enumerate() {
                        let src = if cv[s / row + r].to_f64() != 0.0 { xs } else { ys };
                        o.copy_from_slice(&src[r * row..(r + 1) * row]);
                    }
                }
            });
        })
    });
    Ok(())
}

pub static WHERE: OpDef = OpDef {
    name: "where",
    doc: "Elements of x where condition is non-zero, else of y. condition has the shape of x, or is 1-D with x's first dimension.",
    inputs: &["condition", "x", "y"],
    infer_shape: |c, ins, outs| {
        let mut xy = [ins[1].clone(), ins[2].clone()];
        infer_shape_same(c, &mut xy, outs)?;
        ins[1] = xy[0].clone();
        ins[2] = xy[1].clone();
        if let (Some(cs), Some(xs)) = (&ins[0], &ins[1]) {
            let ok = cs == xs || (cs.len() == 1 && !xs.is_empty() && cs[0] == xs[0]);
            if !ok {
                return Err(Error::Shape(format!(
                    "where: condition shape {} must equal x shape {} or be 1-D of length x.shape[0]",
                    fmt_shape(cs),
                    fmt_shape(xs)
                )));
            }
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let mut xy = [ins[1], ins[2]];
        infer_type_same(c, &mut xy, outs)?;
        ins[1] = xy[0];
        ins[2] = xy[1];
        Ok(())
    },
    cpu: Some(where_kernel),
    grad: Some(|_, b, i, _, g| {
        let z = g_un(b, "zeros_like", g[0])?;
        let gx = b.op1("where", &[], &[i[0], g[0], z])?;
        let gy = b.op1("where", &[], &[i[0], z, g[0]])?;
        Ok(vec![None, Some(gx), Some(gy)])
    }),
    ..OpDef::BASE
};

fn add_n_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let out = &o[0];
    dispatch_dtype!(out.dtype, T => {
        let ov = out.data_mut::<T>();
        match out.dtype {
            DType::F32 => {
                // out= may be the first input itself (copying it onto itself
                // would break copy_from_slice's no-overlap precondition)
                if out.raw_ptr() != i[0].raw_ptr() {
                    out.data_mut::<f32>().copy_from_slice(i[0].data::<f32>());
                }
                let ov = out.data_mut::<f32>();
                for x in &i[1..] {
                    for (a, b) in ov.iter_mut().zip(x.data::<f32>()) {
                        *a += *b;
                    }
                }
            }
            _ => {
                for (k, o) in ov.iter_mut().enumerate() {
                    let mut s = 0f64;
                    for x in i {
                        s += x.data::<T>()[k].to_f64();
                    }
                    *o = T::from_f64(s);
                }
            }
        }
    });
    Ok(())
}

pub static ADD_N: OpDef = OpDef {
    name: "add_n",
    aliases: &["ElementWiseSum", "_sum_n"],
    doc: "Sum of all input arrays (same shapes).",
    inputs: &["arg"],
    num_inputs: Some(|c| *c.p::<usize>()),
    parse: |a| Ok(Box::new(a.p("add_n").usize("num_args", 1)?)),
    cpu: Some(add_n_kernel),
    grad: Some(|_, _, i, _, g| Ok(vec![Some(g[0]); i.len()])),
    ..OpDef::BASE
};

pub static CAST: OpDef = OpDef {
    name: "Cast",
    aliases: &["cast"],
    doc: "Cast to `dtype`.",
    parse: |a| Ok(Box::new(a.p("Cast").dtype("dtype", DType::F32)?)),
    infer_type: |c, ins, outs| {
        outs[0] = Some(*c.p::<DType>());
        let _ = ins;
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        cast_blob(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(b.op1("_cast_like", &[], &[g[0], x[0]])?)])),
    ..OpDef::BASE
};

/// Cast `data` to the dtype of `like` (used by Cast's gradient).
pub static CAST_LIKE: OpDef = OpDef {
    name: "_cast_like",
    doc: "Cast data to the dtype of like.",
    inputs: &["data", "like"],
    infer_shape: |_, ins, outs| {
        outs[0] = ins[0].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        cast_blob(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(b.op1("_cast_like", &[], &[g[0], x[0]])?), None])),
    ..OpDef::BASE
};

fn bcast_copy(i: &Blob, o: &Blob) {
    dispatch_dtype!(i.dtype, T => {
        let z = [T::default()];
        map2(i.data::<T>(), &i.shape, &z, &[1], o.data_mut::<T>(), &o.shape, |x, _| x)
    });
}

fn check_bcast(op: &str, from: &[usize], to: &[usize]) -> Result<()> {
    let ok = from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(f, t)| f == t || *f == 1);
    if !ok {
        return Err(Error::Shape(format!(
            "{op}: cannot broadcast shape {} to {}",
            fmt_shape(from),
            fmt_shape(to)
        )));
    }
    Ok(())
}

pub static BROADCAST_TO: OpDef = OpDef {
    name: "broadcast_to",
    doc: "Broadcast to `shape` (0 keeps the input's size on that axis).",
    parse: |a| {
        Ok(Box::new(
            a.p("broadcast_to").ints("shape")?.unwrap_or_default(),
        ))
    },
    infer_shape: |c, ins, outs| {
        let tgt = c.p::<Vec<i64>>();
        if let Some(s) = &ins[0] {
            if tgt.len() < s.len() {
                return Err(Error::Shape(format!(
                    "broadcast_to: target shape {:?} has fewer dimensions than input {}",
                    tgt,
                    fmt_shape(s)
                )));
            }
            let off = tgt.len() - s.len();
            let out: Shape = tgt
                .iter()
                .enumerate()
                .map(|(k, &d)| {
                    if d == 0 && k >= off {
                        s[k - off]
                    } else {
                        d.max(0) as usize
                    }
                })
                .collect();
            check_bcast("broadcast_to", s, &out)?;
            outs[0] = Some(out);
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        bcast_copy(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(g_unbroadcast(b, g[0], x[0])?)])),
    ..OpDef::BASE
};

/// broadcast_like's optional axis pairs: lhs axis i takes the size of rhs
/// axis j.
struct LikeAxes(Option<(Vec<i64>, Vec<i64>)>);

pub static BROADCAST_LIKE: OpDef = OpDef {
    name: "broadcast_like",
    doc: "Broadcast lhs to the shape of rhs; with lhs_axes and rhs_axes, only lhs_axes[i] (size 1) takes the \
          size of rhs axis rhs_axes[i].",
    inputs: &["lhs", "rhs"],
    parse: |a| {
        let p = a.p("broadcast_like");
        // As in MXNet, the axes apply only when both are given.
        let axes = match (p.ints("lhs_axes")?, p.ints("rhs_axes")?) {
            (Some(l), Some(r)) => {
                if l.is_empty() || r.is_empty() {
                    return Err(Error::Param(format!(
                        "broadcast_like: an empty axes tuple is not allowed (lhs_axes {l:?}, \
                         rhs_axes {r:?}); leave both out to broadcast to rhs's whole shape"
                    )));
                }
                if l.len() != r.len() {
                    return Err(Error::Param(format!(
                        "broadcast_like: lhs_axes {l:?} and rhs_axes {r:?} must have the same length"
                    )));
                }
                Some((l, r))
            }
            _ => None,
        };
        Ok(Box::new(LikeAxes(axes)))
    },
    infer_shape: |c, ins, outs| {
        if let (Some(a), Some(b)) = (&ins[0], &ins[1]) {
            match &c.p::<LikeAxes>().0 {
                None => {
                    check_bcast("broadcast_like", a, b)?;
                    outs[0] = Some(b.clone());
                }
                Some((la, ra)) => {
                    let mut o = a.clone();
                    for (&l, &r) in la.iter().zip(ra) {
                        let li = norm_axis("broadcast_like", l, a.len())?;
                        let ri = norm_axis("broadcast_like", r, b.len())?;
                        if a[li] != 1 && a[li] != b[ri] {
                            return Err(Error::Shape(format!(
                                "broadcast_like: lhs axis {li} of shape {} has size {}, it cannot be broadcast to the \
                                 size {} of rhs axis {ri} of shape {}",
                                fmt_shape(a),
                                a[li],
                                b[ri],
                                fmt_shape(b)
                            )));
                        }
                        o[li] = b[ri];
                    }
                    outs[0] = Some(o);
                }
            }
        }
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        bcast_copy(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(g_unbroadcast(b, g[0], x[0])?), None])),
    ..OpDef::BASE
};

pub struct BAxisParam {
    axis: Vec<i64>,
    size: Vec<i64>,
}

pub static BROADCAST_AXIS: OpDef = OpDef {
    name: "broadcast_axis",
    aliases: &["broadcast_axes"],
    doc: "Broadcast size-1 axes `axis` to sizes `size`.",
    parse: |a| {
        let p = a.p("broadcast_axis");
        let axis = p.ints_or("axis", &[])?;
        let size = p.ints_or("size", &[])?;
        if axis.len() != size.len() {
            return Err(Error::Param(format!(
                "broadcast_axis: axis {:?} and size {:?} must have the same length",
                axis, size
            )));
        }
        Ok(Box::new(BAxisParam { axis, size }))
    },
    infer_shape: |c, ins, outs| {
        let p = c.p::<BAxisParam>();
        if let Some(s) = &ins[0] {
            let mut out = s.clone();
            for (&a, &n) in p.axis.iter().zip(&p.size) {
                let ax = crate::base::shape::norm_axis("broadcast_axis", a, s.len())?;
                if s[ax] != 1 {
                    return Err(Error::Shape(format!(
                        "broadcast_axis: axis {ax} of shape {} has size {}, must be 1",
                        fmt_shape(s),
                        s[ax]
                    )));
                }
                out[ax] = n as usize;
            }
            outs[0] = Some(out);
        }
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        bcast_copy(&i[0], &o[0]);
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| Ok(vec![Some(g_unbroadcast(b, g[0], x[0])?)])),
    ..OpDef::BASE
};

pub static REDUCE_TO_LIKE: OpDef = OpDef {
    name: "_reduce_to_like",
    doc: "Sum data over its broadcast axes down to the shape of like (gradient of broadcasting).",
    inputs: &["data", "like"],
    infer_shape: |_, ins, outs| {
        outs[0] = ins[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    },
    cpu: Some(|_, i, o, _| {
        let (src, dst) = (&i[0], &o[0]);
        if src.shape == dst.shape {
            dst.bytes_mut().copy_from_slice(src.bytes());
            return Ok(());
        }
        dispatch_dtype!(src.dtype, T => reduce_to(src.data::<T>(), &src.shape, dst.data_mut::<T>(), &dst.shape));
        Ok(())
    }),
    grad: Some(|_, b, x, _, g| {
        Ok(vec![
            Some(b.op1("broadcast_like", &[], &[g[0], x[0]])?),
            None,
        ])
    }),
    ..OpDef::BASE
};

pub static ZEROS_LIKE: OpDef = OpDef {
    name: "zeros_like",
    doc: "Zeros with the shape and dtype of data.",
    cpu: Some(|_, _, o, _| {
        o[0].bytes_mut().fill(0);
        Ok(())
    }),
    grad: ZERO_GRAD,
    ..OpDef::BASE
};

pub static ONES_LIKE: OpDef = OpDef {
    name: "ones_like",
    doc: "Ones with the shape and dtype of data.",
    cpu: Some(|_, _, o, _| {
        dispatch_dtype!(o[0].dtype, T => {
            o[0].data_mut::<T>().fill(T::from_f64(1.0))
        });
        Ok(())
    }),
    grad: ZERO_GRAD,
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &ABS,
    &NEGATIVE,
    &EXP,
    &LOG,
    &LOG2,
    &LOG10,
    &LOG1P,
    &EXPM1,
    &SQRT,
    &RSQRT,
    &CBRT,
    &RCBRT,
    &SQUARE,
    &RECIPROCAL,
    &SIN,
    &COS,
    &TAN,
    &ARCSIN,
    &ARCCOS,
    &ARCTAN,
    &SINH,
    &COSH,
    &TANH,
    &ARCSINH,
    &ARCCOSH,
    &ARCTANH,
    &SIGMOID,
    &RELU,
    &TANH_GRAD,
    &SIGMOID_GRAD,
    &RELU_GRAD,
    &SOFTSIGN,
    &DEGREES,
    &RADIANS,
    &ERF,
    &ERFINV,
    &SIGN,
    &FLOOR,
    &CEIL,
    &ROUND,
    &RINT,
    &FIX,
    &TRUNC,
    &LOGICAL_NOT,
    &COPY,
    &BLOCK_GRAD,
    &E_ADD,
    &E_SUB,
    &E_MUL,
    &E_DIV,
    &E_MOD,
    &E_POW,
    &E_MAX,
    &E_MIN,
    &E_HYPOT,
    &E_EQ,
    &E_NE,
    &E_GT,
    &E_GE,
    &E_LT,
    &E_LE,
    &E_AND,
    &E_OR,
    &E_XOR,
    &B_ADD,
    &B_SUB,
    &B_MUL,
    &B_DIV,
    &B_MOD,
    &B_POW,
    &B_MAX,
    &B_MIN,
    &B_HYPOT,
    &B_EQ,
    &B_NE,
    &B_GT,
    &B_GE,
    &B_LT,
    &B_LE,
    &B_AND,
    &B_OR,
    &B_XOR,
    &S_PLUS,
    &S_MINUS,
    &S_RMINUS,
    &S_MUL,
    &S_DIV,
    &S_RDIV,
    &S_MOD,
    &S_RMOD,
    &S_POW,
    &S_RPOW,
    &S_MAX,
    &S_MIN,
    &S_HYPOT,
    &S_EQ,
    &S_NE,
    &S_GT,
    &S_GE,
    &S_LT,
    &S_LE,
    &S_AND,
    &S_OR,
    &S_XOR,
    &CLIP,
    &WHERE,
    &ADD_N,
    &CAST,
    &CAST_LIKE,
    &BROADCAST_TO,
    &BROADCAST_LIKE,
    &BROADCAST_AXIS,
    &REDUCE_TO_LIKE,
    &ZEROS_LIKE,
    &ONES_LIKE,
];

#[cfg(test)]
mod fast_math_tests {
    use super::{fast_expf, fast_tanhf};

    fn ulp(a: f32, b: f64) -> f64 {
        (a as f64 - b).abs() / (b.abs().max(1e-30) * f32::EPSILON as f64)
    }

    #[test]
    fn fast_tanh_and_sigmoid_are_within_a_few_ulp() {
        let mut worst = (0f64, 0f32);
        let mut x = -12.0f32;
        while x < 12.0 {
            let e = ulp(fast_tanhf(x), (x as f64).tanh());
            if e > worst.0 {
                worst = (e, x);
            }
            let s = 1.0 / (1.0 + (-(x as f64)).exp());
            let got = 1.0 / (1.0 + fast_expf(-x));
            assert!(ulp(got, s) < 4.0, "sigmoid({x}) = {got}, want {s}");
            x += 0.000_731;
        }
        assert!(worst.0 < 4.0, "tanh: {} ulp at {}", worst.0, worst.1);
        assert!(fast_tanhf(f32::NAN).is_nan() && fast_expf(f32::NAN).is_nan());
        assert_eq!(fast_tanhf(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fast_tanhf(1e6), 1.0);
        assert_eq!(fast_tanhf(-1e6), -1.0);
        for &t in &[1e-30f32, 1e-8, 0.25, 0.4999] {
            assert!(ulp(fast_tanhf(t), (t as f64).tanh()) < 2.0, "{t}");
        }
    }
}
