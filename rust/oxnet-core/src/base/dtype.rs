//! Element types, with MXNet's numeric type flags (used in `.params` files).
use crate::error::{Error, Result};
use half::f16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    U8,
    I32,
    I8,
    I64,
    Bool,
}

impl DType {
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::U8,
        DType::I32,
        DType::I8,
        DType::I64,
        DType::Bool,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::F16 => 2,
            DType::U8 | DType::I8 | DType::Bool => 1,
        }
    }

    /// MXNet's type flag (mshadow::TypeFlag).
    pub fn flag(self) -> i32 {
        match self {
            DType::F32 => 0,
            DType::F64 => 1,
            DType::F16 => 2,
            DType::U8 => 3,
            DType::I32 => 4,
            DType::I8 => 5,
            DType::I64 => 6,
            DType::Bool => 7,
        }
    }

    pub fn from_flag(flag: i32) -> Result<DType> {
        Ok(match flag {
            0 => DType::F32,
            1 => DType::F64,
            2 => DType::F16,
            3 => DType::U8,
            4 => DType::I32,
            5 => DType::I8,
            6 => DType::I64,
            7 => DType::Bool,
            _ => return Err(Error::DType(format!("unknown dtype flag {flag}"))),
        })
    }

    /// NumPy-style name ("float32", ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Result<DType> {
        Ok(match name {
            "float32" | "float" | "f4" | "<f4" | "real_t" => DType::F32,
            "float64" | "double" | "f8" | "<f8" => DType::F64,
            "float16" | "half" | "f2" | "<f2" => DType::F16,
            "uint8" | "u1" | "|u1" => DType::U8,
            "int32" | "i4" | "<i4" | "int" => DType::I32,
            "int8" | "i1" | "|i1" => DType::I8,
            "int64" | "i8" | "<i8" | "long" => DType::I64,
            "bool" | "bool_" | "|b1" => DType::Bool,
            _ => {
                return Err(Error::DType(format!(
                    "unsupported dtype '{name}' (expected one of float32, float64, float16, uint8, int8, int32, int64, bool)"
                )))
            }
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16)
    }
}

/// Element types a kernel can be generic over. Arithmetic happens in the
/// type itself except for f16, which computes through f32.
pub trait Elem: Copy + Send + Sync + 'static + PartialOrd + Default {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    /// Wrapping conversion from i64 (C semantics for integer types).
    fn from_i64(v: i64) -> Self {
        Self::from_f64(v as f64)
    }
    /// Exact for integer types (never through float64, which holds only
    /// 53 bits); floats truncate toward zero and saturate.
    fn to_i64(self) -> i64 {
        self.to_f64() as i64
    }
}

macro_rules! impl_elem_num {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
        }
    };
}
impl_elem_num!(f32, DType::F32);
impl_elem_num!(f64, DType::F64);
impl_elem_num!(u8, DType::U8);
impl_elem_num!(i8, DType::I8);
impl_elem_num!(i32, DType::I32);
impl_elem_num!(i64, DType::I64);

impl Elem for f16 {
    const DTYPE: DType = DType::F16;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

impl Elem for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}

/// Run `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::base::DType as __D;
        match $dtype {
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::F16 => {
                type $T = half::f16;
                $body
            }
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I8 => {
                type $T = i8;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::Bool => {
                type $T = bool;
                $body
            }
        }
    }};
}

/// Like `dispatch_dtype!` over the float dtypes only (callers have checked
/// the dtype in type inference).
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::base::DType as __D;
        match $dtype {
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            __D::F16 => {
                type $T = half::f16;
                $body
            }
            d => panic!("float kernel called with dtype {}", d.name()),
        }
    }};
}
