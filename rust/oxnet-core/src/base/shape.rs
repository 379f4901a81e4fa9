//! Shapes are plain vectors of extents; helpers for strides and broadcasting.
use crate::error::{Error, Result};

pub type Shape = Vec<usize>;

/// "(2, 3)" like Python tuples, "(5,)" for one dimension.
pub fn fmt_shape(s: &[usize]) -> String {
    match s.len() {
        0 => "()".to_string(),
        1 => format!("({},)", s[0]),
        _ => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// Row-major strides in elements.
pub fn strides(s: &[usize]) -> Vec<usize> {
    let mut st = vec![1usize; s.len()];
    for i in (0..s.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * s[i + 1];
    }
    st
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Shape(format!(
                "{op}: operands could not be broadcast together with shapes {} {}",
                fmt_shape(a),
                fmt_shape(b)
            )));
        };
    }
    Ok(out)
}

/// Normalise a possibly negative axis against `ndim`.
pub fn norm_axis(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n.max(1) && !(n == 0 && a == 0) {
        return Err(Error::Param(format!(
            "{op}: axis {axis} is out of range for an array of {ndim} dimensions"
        )));
    }
    Ok(a as usize)
}
