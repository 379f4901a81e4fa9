//! One error type for the whole core. Every variant carries a message that
//! names the operator, the argument and the shapes involved; the Python
//! binding maps each variant to a subclass of `oxnet.base.MXNetError`.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Shapes that do not fit together (ValueError in Python).
    Shape(String),
    /// Unsupported or mismatched dtype (TypeError in Python).
    DType(String),
    /// A bad operator parameter (ValueError in Python).
    Param(String),
    /// Index out of range (IndexError in Python).
    Index(String),
    /// File or stream problems (IOError in Python).
    Io(String),
    /// Undecodable image or record bytes (ValueError in Python).
    Decode(String),
    /// Engine misuse, e.g. a wait issued from inside a worker.
    Engine(String),
    /// A device that is not available (e.g. `gpu(0)` without a GPU backend).
    Device(String),
    /// Not enough memory for an array (MemoryError in Python).
    OutOfMemory(String),
    /// A failure inside a kernel, reported with the operator's name.
    Op { op: String, msg: String },
    /// An error raised by Python code run inside the engine (custom op).
    External(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The bare message, without the kind.
    pub fn message(&self) -> String {
        match self {
            Error::Shape(m)
            | Error::DType(m)
            | Error::Param(m)
            | Error::Index(m)
            | Error::Io(m)
            | Error::Decode(m)
            | Error::Engine(m)
            | Error::Device(m)
            | Error::OutOfMemory(m)
            | Error::External(m) => m.clone(),
            Error::Op { op, msg } => format!("{op}: {msg}"),
        }
    }

    /// Prefix the message with an operator name (unless it already has it).
    pub fn in_op(self, op: &str) -> Error {
        let wrap = |m: String| {
            if m.starts_with(op) {
                m
            } else {
                format!("{op}: {m}")
            }
        };
        match self {
            Error::Shape(m) => Error::Shape(wrap(m)),
            Error::DType(m) => Error::DType(wrap(m)),
            Error::Param(m) => Error::Param(wrap(m)),
            Error::Index(m) => Error::Index(wrap(m)),
            Error::Decode(m) => Error::Decode(wrap(m)),
            Error::Io(m) => Error::Io(wrap(m)),
            e => e,
        }
    }

    /// The same kind of error with another message.
    pub fn with_message(self, m: String) -> Error {
        match self {
            Error::Shape(_) => Error::Shape(m),
            Error::DType(_) => Error::DType(m),
            Error::Param(_) => Error::Param(m),
            Error::Index(_) => Error::Index(m),
            Error::Io(_) => Error::Io(m),
            Error::Decode(_) => Error::Decode(m),
            Error::Engine(_) => Error::Engine(m),
            Error::Device(_) => Error::Device(m),
            Error::Op { op, .. } => Error::Op { op, msg: m },
            Error::External(_) => Error::External(m),
            Error::OutOfMemory(_) => Error::OutOfMemory(m),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// `bail!(Shape, "...", args)` returns early with the given variant.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::$kind(format!($($arg)*)))
    };
}

/// `ensure!(cond, Shape, "...")`.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $kind:ident, $($arg:tt)*) => {
        if !$cond {
            $crate::bail!($kind, $($arg)*);
        }
    };
}

/// Run `f`, turning a panic into the error `wrap` makes of its message (a
/// Rust panic never reaches Python as a crash or a PanicException).
pub fn catch_panic<T>(
    f: impl FnOnce() -> Result<T>,
    wrap: impl FnOnce(String) -> Error,
) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(wrap(msg))
        }
    }
}
