//! Operator attributes arrive as MXNet-style strings (from Python kwargs or
//! symbol JSON) and are parsed once into typed parameters.
use crate::base::{fmt_shape, DType};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct Attrs(pub Vec<(String, String)>);

impl Attrs {
    pub fn new() -> Attrs {
        Attrs(Vec::new())
    }
    pub fn from_pairs(p: &[(&str, &str)]) -> Attrs {
        Attrs(
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }
    pub fn set(&mut self, k: &str, v: impl Into<String>) {
        let v = v.into();
        if let Some(e) = self.0.iter_mut().find(|(kk, _)| kk == k) {
            e.1 = v;
        } else {
            self.0.push((k.to_string(), v));
        }
    }
    pub fn raw(&self, k: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
    }
    /// Parser bound to an operator name, for error messages.
    pub fn p<'a>(&'a self, op: &'a str) -> P<'a> {
        P { a: self, op }
    }
}

fn is_none(v: &str) -> bool {
    v == "None" || v.is_empty()
}

pub struct P<'a> {
    a: &'a Attrs,
    op: &'a str,
}

impl P<'_> {
    fn bad(&self, k: &str, v: &str, want: &str) -> Error {
        Error::Param(format!(
            "{}: argument '{k}' expects {want}, got '{v}'",
            self.op
        ))
    }
    pub fn has(&self, k: &str) -> bool {
        self.a.raw(k).map(|v| !is_none(v)).unwrap_or(false)
    }
    pub fn f64(&self, k: &str, default: f64) -> Result<f64> {
        match self.a.raw(k) {
            None => Ok(default),
            Some(v) if is_none(v) => Ok(default),
            Some(v) => parse_f64(v).ok_or_else(|| self.bad(k, v, "a number")),
        }
    }
    pub fn f64_req(&self, k: &str) -> Result<f64> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_f64(v).ok_or_else(|| self.bad(k, v, "a number")),
            _ => Err(Error::Param(format!(
                "{}: required argument '{k}' is missing",
                self.op
            ))),
        }
    }
    pub fn opt_f64(&self, k: &str) -> Result<Option<f64>> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_f64(v)
                .map(Some)
                .ok_or_else(|| self.bad(k, v, "a number")),
            _ => Ok(None),
        }
    }
    pub fn i64(&self, k: &str, default: i64) -> Result<i64> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_i64(v).ok_or_else(|| self.bad(k, v, "an integer")),
            _ => Ok(default),
        }
    }
    pub fn i64_req(&self, k: &str) -> Result<i64> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_i64(v).ok_or_else(|| self.bad(k, v, "an integer")),
            _ => Err(Error::Param(format!(
                "{}: required argument '{k}' is missing",
                self.op
            ))),
        }
    }
    pub fn opt_i64(&self, k: &str) -> Result<Option<i64>> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_i64(v)
                .map(Some)
                .ok_or_else(|| self.bad(k, v, "an integer")),
            _ => Ok(None),
        }
    }
    pub fn usize(&self, k: &str, default: usize) -> Result<usize> {
        let v = self.i64(k, default as i64)?;
        if v < 0 {
            return Err(self.bad(k, &v.to_string(), "a non-negative integer"));
        }
        Ok(v as usize)
    }
    pub fn bool(&self, k: &str, default: bool) -> Result<bool> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => match v {
                "True" | "true" | "1" => Ok(true),
                "False" | "false" | "0" => Ok(false),
                _ => Err(self.bad(k, v, "a boolean")),
            },
            _ => Ok(default),
        }
    }
    pub fn str(&self, k: &str, default: &str) -> String {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => v.trim_matches(|c| c == '\'' || c == '"').to_string(),
            _ => default.to_string(),
        }
    }
    pub fn opt_str(&self, k: &str) -> Option<String> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => Some(v.trim_matches(|c| c == '\'' || c == '"').to_string()),
            _ => None,
        }
    }
    /// One of `choices`.
    pub fn choice(&self, k: &str, default: &str, choices: &[&str]) -> Result<String> {
        let v = self.str(k, default);
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(Error::Param(format!(
                "{}: argument '{k}' must be one of {:?}, got '{v}'",
                self.op, choices
            )))
        }
    }
    /// A tuple of integers such as "(2, 3)", "[2,3]" or "2".
    pub fn ints(&self, k: &str) -> Result<Option<Vec<i64>>> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => parse_ints(v)
                .map(Some)
                .ok_or_else(|| self.bad(k, v, "a tuple of integers")),
            _ => Ok(None),
        }
    }
    pub fn ints_or(&self, k: &str, default: &[i64]) -> Result<Vec<i64>> {
        Ok(self.ints(k)?.unwrap_or_else(|| default.to_vec()))
    }
    pub fn floats(&self, k: &str) -> Result<Option<Vec<f64>>> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => {
                let t = v
                    .trim()
                    .trim_start_matches(['(', '['])
                    .trim_end_matches([')', ']']);
                let r: Option<Vec<f64>> = t
                    .split(',')
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty())
                    .map(parse_f64)
                    .collect();
                r.map(Some)
                    .ok_or_else(|| self.bad(k, v, "a tuple of numbers"))
            }
            _ => Ok(None),
        }
    }
    pub fn dtype(&self, k: &str, default: DType) -> Result<DType> {
        match self.a.raw(k) {
            Some(v) if !is_none(v) => DType::from_name(v.trim_matches(|c| c == '\'' || c == '"'))
                .map_err(|_| self.bad(k, v, "a dtype name such as 'float32'")),
            _ => Ok(default),
        }
    }
    pub fn opt_dtype(&self, k: &str) -> Result<Option<DType>> {
        if self.has(k) {
            self.dtype(k, DType::F32).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn shape(&self, k: &str) -> Result<Option<Vec<usize>>> {
        match self.ints(k)? {
            None => Ok(None),
            Some(v) => {
                if v.iter().any(|&d| d < 0) {
                    return Err(Error::Param(format!(
                        "{}: argument '{k}' must be a shape of non-negative integers, got {:?}",
                        self.op, v
                    )));
                }
                Ok(Some(v.into_iter().map(|d| d as usize).collect()))
            }
        }
    }
}

pub fn parse_f64(v: &str) -> Option<f64> {
    let t = v.trim();
    match t {
        "inf" | "Inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-Inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" | "NaN" => Some(f64::NAN),
        "True" => Some(1.0),
        "False" => Some(0.0),
        _ => t.parse::<f64>().ok(),
    }
}

pub fn parse_i64(v: &str) -> Option<i64> {
    let t = v.trim();
    t.parse::<i64>().ok().or_else(|| {
        let f = t.parse::<f64>().ok()?;
        if f.fract() == 0.0 {
            Some(f as i64)
        } else {
            None
        }
    })
}

pub fn parse_ints(v: &str) -> Option<Vec<i64>> {
    let t = v.trim();
    let inner = t
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']']);
    inner
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s == "None" {
                Some(i64::MIN)
            } else {
                parse_i64(s)
            }
        })
        .collect()
}

/// Format a shape the way MXNet writes tuples in attributes.
pub fn shape_attr(s: &[usize]) -> String {
    fmt_shape(s)
}
