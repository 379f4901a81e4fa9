//! MXNet's binary NDArray list format: what `mx.nd.save` / `mx.nd.load`,
//! `save_parameters` and `save_checkpoint` (`.params`) read and write.
//!
//! Layout (all little-endian):
//!
//! ```text
//! file    := u64 0x112 | u64 reserved (0) | u64 count | array * count
//!            | u64 nnames | (u64 len | len bytes of UTF-8) * nnames     (nnames is 0 or count)
//! array   := u32 magic 0xF993FAC9 (V2) or 0xF993FACA (V3, np-shape semantics)
//!            | i32 storage type (0 dense; 1 row_sparse, 2 csr carry extra fields)
//!            | shape | i32 dev_type | i32 dev_id | i32 dtype flag | raw data
//! shape   := i32 ndim | i64 dim * ndim
//! ```
//!
//! Older files are also read: V1 (magic 0xF993FAC8, no storage-type field) and
//! the legacy layout whose first word is the ndim itself followed by u32 dims.
//! A V2 array with ndim 0 (or a V3 array with ndim -1) is MXNet's "none" array.
//!
//! Loaded arrays live on `cpu(0)`, as MXNet does when no GPU is present.
use super::NDArray;
use crate::base::{fmt_shape, Context, DType};
use crate::error::{Error, Result};
use std::io::{BufReader, BufWriter, Read, Write};

/// First word of an NDArray list file (`kMXAPINDArrayListMagic`).
pub const LIST_MAGIC: u64 = 0x112;
/// Per-array magic, version 1 (int64 dims, no storage type).
pub const NDARRAY_V1_MAGIC: u32 = 0xF993_FAC8;
/// Per-array magic, version 2 (storage type field); `mx.nd.save` writes it.
pub const NDARRAY_V2_MAGIC: u32 = 0xF993_FAC9;
/// Per-array magic, version 3 (np-shape semantics; `mx.npx.save` writes it).
pub const NDARRAY_V3_MAGIC: u32 = 0xF993_FACA;

/// Legacy files start each array with its ndim; no real array had more dims.
const LEGACY_MAX_NDIM: u32 = 32;

/// Which per-array magic `save` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// V2 (what `mx.nd.save` writes), unless some array is 0-d: then V3 for
    /// all, since only np-shape semantics can hold a 0-d array.
    Auto,
    /// Always V2; a 0-d array is an error.
    V2,
    /// Always V3 (what `mx.npx.save` writes); MXNet loads it only with np-shape on.
    V3,
}

/// One saved entry: an optional name and the array.
pub type Named = (Option<String>, NDArray);

// ---------------------------------------------------------------- saving

/// Save arrays to `path` in MXNet's format. Either every entry has a name
/// (a dict in Python) or none has (a list).
pub fn save(path: &str, arrays: &[Named]) -> Result<()> {
    save_with(path, arrays, Format::Auto)
}

pub fn save_with(path: &str, arrays: &[Named], format: Format) -> Result<()> {
    // Check everything that can fail before touching the file.
    let magic = plan(arrays, format)?;
    let file = std::fs::File::create(path)
        .map_err(|e| Error::Io(format!("{path}: cannot create file: {e}")))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write_all_arrays(&mut w, arrays, magic).map_err(|e| with_path(e, path))?;
    w.flush()
        .map_err(|e| Error::Io(format!("{path}: write failed: {e}")))?;
    Ok(())
}

/// The bytes `save` would write.
pub fn save_to_bytes(arrays: &[Named]) -> Result<Vec<u8>> {
    save_to_bytes_with(arrays, Format::Auto)
}

pub fn save_to_bytes_with(arrays: &[Named], format: Format) -> Result<Vec<u8>> {
    let magic = plan(arrays, format)?;
    let size: usize = 32
        + arrays
            .iter()
            .map(|(n, a)| 48 + 8 * a.ndim() + a.nbytes() + n.as_ref().map_or(0, |s| 8 + s.len()))
            .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    write_all_arrays(&mut out, arrays, magic)?;
    Ok(out)
}

/// Validate names and pick the per-array magic.
fn plan(arrays: &[Named], format: Format) -> Result<u32> {
    let named = arrays.iter().filter(|(n, _)| n.is_some()).count();
    if named != 0 && named != arrays.len() {
        return Err(Error::Param(format!(
            "save: either every array has a name or none has ({named} of {} are named)",
            arrays.len()
        )));
    }
    let has_0d = arrays.iter().position(|(_, a)| a.ndim() == 0);
    Ok(match (format, has_0d) {
        (Format::V3, _) | (Format::Auto, Some(_)) => NDARRAY_V3_MAGIC,
        (Format::V2, Some(i)) => {
            return Err(Error::Shape(format!(
                "save: array {i} is 0-d (shape ()); MXNet's legacy format cannot hold it (save with np-shape semantics)"
            )))
        }
        (_, None) => NDARRAY_V2_MAGIC,
    })
}

fn write_all_arrays<W: Write>(w: &mut W, arrays: &[Named], magic: u32) -> Result<()> {
    let io = |e: std::io::Error| Error::Io(format!("write failed: {e}"));
    w.write_all(&LIST_MAGIC.to_le_bytes()).map_err(io)?;
    w.write_all(&0u64.to_le_bytes()).map_err(io)?;
    w.write_all(&(arrays.len() as u64).to_le_bytes())
        .map_err(io)?;
    for (_, a) in arrays {
        let mut head = Vec::with_capacity(32 + 8 * a.ndim());
        head.extend_from_slice(&magic.to_le_bytes());
        head.extend_from_slice(&0i32.to_le_bytes()); // dense storage
        head.extend_from_slice(&(a.ndim() as i32).to_le_bytes());
        for &d in &a.shape {
            head.extend_from_slice(&(d as i64).to_le_bytes());
        }
        let ctx = a.ctx();
        head.extend_from_slice(&(ctx.dev_type as i32).to_le_bytes());
        head.extend_from_slice(&ctx.dev_id.to_le_bytes());
        head.extend_from_slice(&a.dtype().flag().to_le_bytes());
        w.write_all(&head).map_err(io)?;
        a.wait_to_read()?;
        // The wait above orders us after every pending writer; views are
        // contiguous, so the blob is exactly the array's bytes.
        w.write_all(a.blob()?.bytes()).map_err(io)?;
    }
    let nnames = if arrays.iter().any(|(n, _)| n.is_some()) {
        arrays.len()
    } else {
        0
    };
    w.write_all(&(nnames as u64).to_le_bytes()).map_err(io)?;
    if nnames > 0 {
        for (n, _) in arrays {
            let n = n.as_deref().unwrap_or("");
            w.write_all(&(n.len() as u64).to_le_bytes()).map_err(io)?;
            w.write_all(n.as_bytes()).map_err(io)?;
        }
    }
    Ok(())
}

fn with_path(e: Error, path: &str) -> Error {
    match e {
        Error::Io(m) => Error::Io(format!("{path}: {m}")),
        e => e,
    }
}

// ---------------------------------------------------------------- loading

/// Load every array of an MXNet NDArray file. Names are `Some` when the file
/// was saved from a dict, `None` when it was saved from a list.
pub fn load(path: &str) -> Result<Vec<Named>> {
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Io(format!("{path}: cannot open file: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| Error::Io(format!("{path}: cannot stat file: {e}")))?
        .len();
    let mut r = Input {
        r: BufReader::with_capacity(1 << 20, file),
        pos: 0,
        len,
        name: path,
    };
    r.load_all()
}

/// Load from an in-memory copy of a file.
pub fn load_from_bytes(bytes: &[u8]) -> Result<Vec<Named>> {
    let mut r = Input {
        r: bytes,
        pos: 0,
        len: bytes.len() as u64,
        name: "<bytes>",
    };
    r.load_all()
}

/// A reader that knows its position and the total length, so every error
/// names the file and the offset, and no allocation exceeds what is left.
struct Input<'a, R: Read> {
    r: R,
    pos: u64,
    len: u64,
    name: &'a str,
}

impl<R: Read> Input<'_, R> {
    fn err(&self, at: u64, msg: impl std::fmt::Display) -> Error {
        Error::Io(format!(
            "{}: invalid NDArray file at offset {at}: {msg}",
            self.name
        ))
    }

    fn need(&self, n: u64, what: &str) -> Result<()> {
        let left = self.len - self.pos;
        if n > left {
            return Err(self.err(
                self.pos,
                format!(
                    "truncated: {what} needs {n} bytes, only {left} left (file is {} bytes)",
                    self.len
                ),
            ));
        }
        Ok(())
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        self.need(buf.len() as u64, what)?;
        self.r
            .read_exact(buf)
            .map_err(|e| self.err(self.pos, format!("reading {what}: {e}")))?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn word<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b, what)?;
        Ok(b)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.word(what)?))
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.word(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.word(what)?))
    }
    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.word(what)?))
    }

    fn load_all(&mut self) -> Result<Vec<Named>> {
        let magic = self.u64("the file magic")?;
        if magic != LIST_MAGIC {
            return Err(self.err(0, format!("file magic is {magic:#x}, expected {LIST_MAGIC:#x} (not an MXNet NDArray file)")));
        }
        self.u64("the reserved word")?;
        let at = self.pos;
        let count = self.u64("the array count")?;
        // The smallest array record is 4 bytes, so a count beyond that is corrupt.
        if count > (self.len - self.pos) / 4 {
            return Err(self.err(
                at,
                format!(
                    "array count {count} cannot fit in the {} bytes left",
                    self.len - self.pos
                ),
            ));
        }
        let mut arrays = Vec::with_capacity(count as usize);
        for i in 0..count {
            arrays.push(self.array(i)?);
        }
        let at = self.pos;
        let nnames = self.u64("the name count")?;
        if nnames != 0 && nnames != count {
            return Err(self.err(
                at,
                format!("{nnames} names for {count} arrays (expected 0 or {count})"),
            ));
        }
        let mut out = Vec::with_capacity(arrays.len());
        let mut names = Vec::with_capacity(nnames as usize);
        for i in 0..nnames {
            let at = self.pos;
            let n = self.u64("a name length")?;
            self.need(n, &format!("name {i}"))?;
            let mut b = vec![0u8; n as usize];
            self.fill(&mut b, &format!("name {i}"))?;
            let s = String::from_utf8(b)
                .map_err(|_| self.err(at, format!("name {i} is not valid UTF-8")))?;
            names.push(s);
        }
        let mut names = names.into_iter();
        for a in arrays {
            out.push((names.next(), a));
        }
        Ok(out)
    }

    /// Read one shape of `ndim` int64 dims (V1/V2/V3), checking each dim.
    fn dims_i64(&mut self, i: u64, ndim: usize) -> Result<Vec<i64>> {
        self.need(8 * ndim as u64, &format!("the shape of array {i}"))?;
        (0..ndim).map(|_| self.i64("a dimension")).collect()
    }

    fn array(&mut self, i: u64) -> Result<NDArray> {
        let start = self.pos;
        let magic = self.u32(&format!("the header of array {i}"))?;
        let np_shape = magic == NDARRAY_V3_MAGIC;
        let shape: Vec<usize> = match magic {
            NDARRAY_V2_MAGIC | NDARRAY_V3_MAGIC => {
                let at = self.pos;
                let stype = self.i32("the storage type")?;
                if stype != 0 {
                    let what = match stype {
                        1 => "row_sparse",
                        2 => "csr",
                        -1 => "undefined (a none array)",
                        _ => "unknown",
                    };
                    return Err(self.err(
                        at,
                        format!("array {i} has storage type {stype} ({what}); oxnet reads only dense (default) arrays"),
                    ));
                }
                self.shape_i64(i, np_shape)?
            }
            NDARRAY_V1_MAGIC => self.shape_i64(i, false)?,
            ndim if ndim <= LEGACY_MAX_NDIM => {
                // Legacy layout: the word we read is the ndim, dims are u32.
                if ndim == 0 {
                    return Err(self.err(start, format!("array {i} is a none (uninitialised) array, which oxnet cannot hold")));
                }
                self.need(4 * ndim as u64, &format!("the shape of array {i}"))?;
                let mut s = Vec::with_capacity(ndim as usize);
                for _ in 0..ndim {
                    s.push(self.u32("a dimension")? as usize);
                }
                s
            }
            m => {
                return Err(self.err(
                    start,
                    format!("array {i} starts with {m:#010x}, expected the NDArray magic {NDARRAY_V2_MAGIC:#010x}"),
                ))
            }
        };
        let at = self.pos;
        let dev_type = self.i32("the device type")?;
        let _dev_id = self.i32("the device id")?;
        if crate::base::DevType::from_id(dev_type).is_none() {
            return Err(self.err(at, format!("array {i} has unknown device type {dev_type}")));
        }
        let at = self.pos;
        let flag = self.i32("the dtype flag")?;
        let dtype = DType::from_flag(flag).map_err(|_| {
            let known = match flag {
                8 => " (int16)",
                9 => " (uint16)",
                10 => " (uint32)",
                11 => " (uint64)",
                12 => " (bfloat16)",
                _ => "",
            };
            self.err(
                at,
                format!("array {i} has dtype flag {flag}{known}, which oxnet does not support"),
            )
        })?;
        let nbytes = shape
            .iter()
            .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d as u64))
            .ok_or_else(|| {
                self.err(
                    at,
                    format!("array {i} of shape {} is too large", fmt_shape(&shape)),
                )
            })?;
        self.need(
            nbytes,
            &format!(
                "the data of array {i} (shape {}, {})",
                fmt_shape(&shape),
                dtype.name()
            ),
        )?;
        let a = NDArray::empty(&shape, dtype, Context::cpu(0))?;
        // Fresh array: nothing is pending on it, and we fill it in place.
        a.wait_to_write()?;
        self.fill(a.blob()?.bytes_mut(), &format!("the data of array {i}"))?;
        Ok(a)
    }

    /// Shape as `i32 ndim | i64 dims`. Under legacy semantics ndim 0 is a none
    /// array; under np-shape semantics ndim 0 is a scalar and -1 (or an
    /// unknown dim) is a none array.
    fn shape_i64(&mut self, i: u64, np_shape: bool) -> Result<Vec<usize>> {
        let at = self.pos;
        let ndim = self.i32("the ndim")?;
        let none = || {
            self.err(
                at,
                format!("array {i} is a none (uninitialised) array, which oxnet cannot hold"),
            )
        };
        if (ndim == -1 && np_shape) || (ndim == 0 && !np_shape) {
            return Err(none());
        }
        if ndim < 0 {
            return Err(self.err(at, format!("array {i} has ndim {ndim}")));
        }
        let dims = self.dims_i64(i, ndim as usize)?;
        if dims.iter().any(|&d| d < 0) {
            if np_shape {
                return Err(self.err(at, format!("array {i} has an unknown shape {dims:?} (a none array), which oxnet cannot hold")));
            }
            return Err(self.err(at, format!("array {i} has negative dimensions {dims:?}")));
        }
        Ok(dims.into_iter().map(|d| d as usize).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;
    use serde_json::Value;
    use std::path::PathBuf;

    fn golden(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/golden")
            .join(name)
    }

    fn expected() -> Value {
        let text = std::fs::read_to_string(golden("expected.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn bytes_of(a: &NDArray) -> Vec<u8> {
        let mut v = vec![0u8; a.nbytes()];
        a.read_into(&mut v).unwrap();
        v
    }

    /// Compare one loaded array with its description in expected.json: name,
    /// dtype, shape, exact bytes, and the decoded values.
    fn check(name: Option<&String>, a: &NDArray, want: &Value, what: &str) {
        assert_eq!(
            name.map(|s| s.as_str()),
            want["name"].as_str(),
            "{what}: name"
        );
        let dtype = want["dtype"].as_str().unwrap();
        assert_eq!(a.dtype().name(), dtype, "{what}: dtype");
        let shape: Vec<usize> = want["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(a.shape, shape, "{what}: shape");
        assert_eq!(
            bytes_of(a),
            hex(want["hex"].as_str().unwrap()),
            "{what}: bytes"
        );
        let vals = want["values"].as_array().unwrap();
        assert_eq!(vals.len(), a.size(), "{what}: size");
        let as_f64 = |v: &Value| match v {
            Value::String(s) if s == "nan" => f64::NAN,
            Value::String(s) if s == "inf" => f64::INFINITY,
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            Value::Bool(b) => *b as u8 as f64,
            v => v.as_f64().unwrap(),
        };
        let got: Vec<f64> = match a.dtype() {
            DType::F32 => a
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(|x| x as f64)
                .collect(),
            DType::F64 => a.to_vec::<f64>().unwrap(),
            DType::F16 => a
                .to_vec::<f16>()
                .unwrap()
                .into_iter()
                .map(|x| x.to_f64())
                .collect(),
            DType::U8 | DType::Bool => bytes_of(a).into_iter().map(|x| x as f64).collect(),
            DType::I8 => a
                .to_vec::<i8>()
                .unwrap()
                .into_iter()
                .map(|x| x as f64)
                .collect(),
            DType::I32 => a
                .to_vec::<i32>()
                .unwrap()
                .into_iter()
                .map(|x| x as f64)
                .collect(),
            DType::I64 => {
                // Exact integer comparison (values beyond 2^53 are in the file).
                let got = a.to_vec::<i64>().unwrap();
                for (g, v) in got.iter().zip(vals) {
                    assert_eq!(*g, v.as_i64().unwrap(), "{what}: int64 value");
                }
                return;
            }
        };
        for (k, (g, v)) in got.iter().zip(vals).enumerate() {
            let w = as_f64(v);
            // Stored values are exact decimal forms of the dtype's values;
            // JSON float parsing may be off by one f64 ulp.
            let ok = (g.is_nan() && w.is_nan()) || g == &w || (g - w).abs() <= w.abs() * 1e-15;
            assert!(ok, "{what}: value {k}: got {g}, want {w}");
        }
    }

    fn check_file(file: &str, desc: &Value) -> Vec<Named> {
        let loaded = load(golden(file).to_str().unwrap()).unwrap();
        let want = desc["arrays"].as_array().unwrap();
        assert_eq!(loaded.len(), want.len(), "{file}: count");
        let named = desc["names"].as_bool().unwrap();
        for (k, ((n, a), w)) in loaded.iter().zip(want).enumerate() {
            assert_eq!(n.is_some(), named, "{file}: array {k} name presence");
            check(n.as_ref(), a, w, &format!("{file}[{k}]"));
        }
        loaded
    }

    #[test]
    fn serialize_golden_nd_files_load_and_resave_identically() {
        let exp = expected();
        let files = exp["nd"].as_object().unwrap();
        assert!(files.len() >= 5);
        for (file, desc) in files {
            let loaded = check_file(file, desc);
            // Saving what we loaded gives MXNet's bytes back (V3 files are
            // reproduced through Format::V3, or Auto when a 0-d array is in them).
            let format = if desc["magic"] == "v3" {
                Format::V3
            } else {
                Format::V2
            };
            let ours = save_to_bytes_with(&loaded, format).unwrap();
            let theirs = std::fs::read(golden(file)).unwrap();
            assert_eq!(ours, theirs, "{file}: re-saved bytes differ from MXNet's");
            // load_from_bytes agrees with load.
            let again = load_from_bytes(&theirs).unwrap();
            assert_eq!(again.len(), loaded.len());
            for ((n1, a1), (n2, a2)) in again.iter().zip(&loaded) {
                assert_eq!(n1, n2);
                assert_eq!(bytes_of(a1), bytes_of(a2));
            }
        }
    }

    #[test]
    fn serialize_v3_auto_when_0d() {
        // nd_np.params holds 0-d arrays, so Format::Auto picks V3 and gives MXNet's bytes.
        let loaded = load(golden("nd_np.params").to_str().unwrap()).unwrap();
        assert_eq!(loaded[0].1.shape, Vec::<usize>::new());
        let ours = save_to_bytes(&loaded).unwrap();
        assert_eq!(ours, std::fs::read(golden("nd_np.params")).unwrap());
        let e = save_to_bytes_with(&loaded, Format::V2).unwrap_err();
        assert!(
            matches!(e, Error::Shape(ref m) if m.contains("0-d")),
            "{e:?}"
        );
    }

    #[test]
    fn serialize_save_new_arrays_matches_mxnet_bytes() {
        // Build nd_dict.params' arrays from expected.json alone and save them:
        // the file must equal MXNet's byte for byte.
        let exp = expected();
        let desc = &exp["nd"]["nd_dict.params"]["arrays"];
        let mut arrays = Vec::new();
        for w in desc.as_array().unwrap() {
            let shape: Vec<usize> = w["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect();
            let dtype = DType::from_name(w["dtype"].as_str().unwrap()).unwrap();
            let a = NDArray::empty(&shape, dtype, Context::cpu(0)).unwrap();
            a.write_from_slice(&hex(w["hex"].as_str().unwrap()))
                .unwrap();
            arrays.push((Some(w["name"].as_str().unwrap().to_string()), a));
        }
        let theirs = std::fs::read(golden("nd_dict.params")).unwrap();
        assert_eq!(save_to_bytes(&arrays).unwrap(), theirs);
        // Through a file as well.
        let dir = std::env::temp_dir().join(format!("oxnet-serialize-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("dict.params");
        save(p.to_str().unwrap(), &arrays).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), theirs);
        // Unnamed: equals the list file.
        let unnamed: Vec<Named> = arrays.iter().map(|(_, a)| (None, a.clone())).collect();
        assert_eq!(
            save_to_bytes(&unnamed).unwrap(),
            std::fs::read(golden("nd_list.params")).unwrap()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn serialize_checkpoint_and_gluon_params() {
        let exp = expected();
        let mlp = &exp["symbols"]["mlp"];
        let loaded = load(
            golden(mlp["params_file"].as_str().unwrap())
                .to_str()
                .unwrap(),
        )
        .unwrap();
        let want = mlp["params"].as_array().unwrap();
        assert_eq!(loaded.len(), want.len());
        for (k, ((n, a), w)) in loaded.iter().zip(want).enumerate() {
            assert!(
                n.as_ref().unwrap().starts_with("arg:") || n.as_ref().unwrap().starts_with("aux:")
            );
            check(n.as_ref(), a, w, &format!("mlp[{k}]"));
        }
        let g = &exp["gluon"];
        let loaded = load(golden(g["file"].as_str().unwrap()).to_str().unwrap()).unwrap();
        let want = g["params"].as_array().unwrap();
        assert_eq!(loaded.len(), want.len());
        for (k, ((n, a), w)) in loaded.iter().zip(want).enumerate() {
            check(n.as_ref(), a, w, &format!("gluon[{k}]"));
        }
        let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert!(names.contains(&"1.running_mean"), "{names:?}");
    }

    #[test]
    fn serialize_sparse_is_reported() {
        let p = golden("nd_sparse.params");
        let Err(Error::Io(m)) = load(p.to_str().unwrap()) else {
            panic!("expected an Io error")
        };
        assert!(
            m.contains("nd_sparse.params") && m.contains("offset 28") && m.contains("row_sparse"),
            "{m}"
        );
    }

    #[test]
    fn serialize_round_trip_all_dtypes_and_views() {
        let ctx = Context::cpu(0);
        let base =
            NDArray::from_vec((0..24).map(|x| x as f32 * 0.25).collect(), &[4, 6], ctx).unwrap();
        let view = base.slice_view(1, 3).unwrap(); // offset view
        let arrays: Vec<Named> = vec![
            (
                None,
                NDArray::from_vec(vec![1.5f64, -2.0], &[2], ctx).unwrap(),
            ),
            (
                None,
                NDArray::from_vec(vec![f16::from_f32(0.5), f16::NEG_INFINITY], &[1, 2], ctx)
                    .unwrap(),
            ),
            (
                None,
                NDArray::from_vec(vec![7u8, 255, 0], &[3], ctx).unwrap(),
            ),
            (
                None,
                NDArray::from_vec(vec![-7i8], &[1, 1, 1], ctx).unwrap(),
            ),
            (
                None,
                NDArray::from_vec(vec![i32::MIN, i32::MAX], &[2, 1], ctx).unwrap(),
            ),
            (
                None,
                NDArray::from_vec(vec![i64::MIN, 1, i64::MAX], &[3], ctx).unwrap(),
            ),
            (None, NDArray::empty(&[3, 0], DType::F32, ctx).unwrap()),
            (None, view.clone()),
        ];
        let bytes = save_to_bytes(&arrays).unwrap();
        let back = load_from_bytes(&bytes).unwrap();
        assert_eq!(back.len(), arrays.len());
        for ((n1, a), (n2, b)) in arrays.iter().zip(&back) {
            assert_eq!(n1, n2);
            assert_eq!(a.shape, b.shape);
            assert_eq!(a.dtype(), b.dtype());
            assert_eq!(bytes_of(a), bytes_of(b));
        }
        assert_eq!(
            back[7].1.to_vec::<f32>().unwrap(),
            (6..18).map(|x| x as f32 * 0.25).collect::<Vec<_>>()
        );
        // Named, with an empty name and non-ASCII names.
        let named: Vec<Named> = vec![(Some("".into()), view), (Some("gewicht_ä".into()), base)];
        let back = load_from_bytes(&save_to_bytes(&named).unwrap()).unwrap();
        assert_eq!(back[0].0.as_deref(), Some(""));
        assert_eq!(back[1].0.as_deref(), Some("gewicht_ä"));
        // Bool round trip (via V3 only because the array is 0-d).
        let b = NDArray::from_vec(vec![1u8], &[], ctx).unwrap();
        let t = NDArray::empty(&[], DType::Bool, ctx).unwrap();
        t.write_from_slice(&bytes_of(&b)).unwrap();
        let back = load_from_bytes(&save_to_bytes(&[(None, t)]).unwrap()).unwrap();
        assert_eq!(back[0].1.dtype(), DType::Bool);
        assert_eq!(back[0].1.shape, Vec::<usize>::new());
        // Empty list.
        assert_eq!(
            load_from_bytes(&save_to_bytes(&[]).unwrap()).unwrap().len(),
            0
        );
    }

    #[test]
    fn serialize_mixed_names_rejected() {
        let a = NDArray::from_vec(vec![1f32], &[1], Context::cpu(0)).unwrap();
        let e = save_to_bytes(&[(Some("a".into()), a.clone()), (None, a)]).unwrap_err();
        assert!(
            matches!(e, Error::Param(ref m) if m.contains("1 of 2")),
            "{e:?}"
        );
    }

    /// Every proper prefix of a valid file is rejected with an Io error that
    /// names the source and an offset; nothing panics.
    #[test]
    fn serialize_truncated_files_are_errors() {
        let full = std::fs::read(golden("nd_dict.params")).unwrap();
        for cut in 0..full.len() {
            match load_from_bytes(&full[..cut]) {
                Err(Error::Io(m)) => assert!(
                    m.starts_with("<bytes>: invalid NDArray file at offset "),
                    "{cut}: {m}"
                ),
                other => panic!(
                    "prefix of {cut} bytes: expected an Io error, got {:?}",
                    other.map(|v| v.len())
                ),
            }
        }
        // A truncated file on disk names the path.
        let dir =
            std::env::temp_dir().join(format!("oxnet-serialize-trunc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("cut.params");
        std::fs::write(&p, &full[..100]).unwrap();
        let Err(Error::Io(m)) = load(p.to_str().unwrap()) else {
            panic!()
        };
        assert!(m.contains("cut.params") && m.contains("truncated"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
        let Err(Error::Io(m)) = load("/nonexistent/oxnet/x.params") else {
            panic!()
        };
        assert!(m.contains("/nonexistent/oxnet/x.params"), "{m}");
    }

    #[test]
    fn serialize_corrupt_fields_are_errors() {
        let full = std::fs::read(golden("nd_list.params")).unwrap();
        let set = |off: usize, v: &[u8]| {
            let mut b = full.clone();
            b[off..off + v.len()].copy_from_slice(v);
            b
        };
        let msg = |b: &[u8]| match load_from_bytes(b) {
            Err(Error::Io(m)) => m,
            other => panic!("expected an Io error, got {:?}", other.map(|v| v.len())),
        };
        // Layout of the first array: 24 header bytes, magic @24, stype @28,
        // ndim @32, dims @36.., dev_type @52, dev_id @56, dtype @60.
        assert!(msg(&set(0, &[0x13])).contains("offset 0: file magic is 0x113"));
        assert!(msg(&set(16, &[0xff; 8])).contains("array count"));
        assert!(msg(&set(24, &[0x00, 0x01, 0x00, 0x00])).contains("expected the NDArray magic"));
        assert!(
            msg(&set(28, &[2, 0, 0, 0])).contains("offset 28: array 0 has storage type 2 (csr)")
        );
        assert!(msg(&set(32, &[0xfe, 0xff, 0xff, 0xff])).contains("ndim -2"));
        assert!(msg(&set(32, &[0, 0, 0, 0])).contains("none"));
        assert!(msg(&set(36, &[0xff; 8])).contains("negative"));
        assert!(
            msg(&set(36, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f])).contains("truncated")
        );
        assert!(
            msg(&set(52, &[9, 0, 0, 0])).contains("offset 52: array 0 has unknown device type 9")
        );
        assert!(msg(&set(60, &[12, 0, 0, 0]))
            .contains("offset 60: array 0 has dtype flag 12 (bfloat16)"));
        // Name count that matches neither 0 nor the array count.
        let n = full.len();
        assert!(msg(&set(n - 8, &[3, 0, 0, 0, 0, 0, 0, 0])).contains("3 names for 14 arrays"));
    }

    /// V1 and legacy layouts (older MXNet) cannot be made with 1.9.1; build
    /// them by hand from the documented layout.
    #[test]
    fn serialize_reads_v1_and_legacy_arrays() {
        let mut f = Vec::new();
        f.extend_from_slice(&LIST_MAGIC.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        f.extend_from_slice(&2u64.to_le_bytes());
        // V1: magic, i32 ndim, i64 dims, ctx, dtype, data.
        f.extend_from_slice(&NDARRAY_V1_MAGIC.to_le_bytes());
        f.extend_from_slice(&2i32.to_le_bytes());
        f.extend_from_slice(&1i64.to_le_bytes());
        f.extend_from_slice(&2i64.to_le_bytes());
        f.extend_from_slice(&1i32.to_le_bytes());
        f.extend_from_slice(&0i32.to_le_bytes());
        f.extend_from_slice(&4i32.to_le_bytes()); // int32
        f.extend_from_slice(&5i32.to_le_bytes());
        f.extend_from_slice(&(-6i32).to_le_bytes());
        // Legacy: u32 ndim, u32 dims, ctx, dtype, data.
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&3u32.to_le_bytes());
        f.extend_from_slice(&2i32.to_le_bytes()); // saved from gpu(1): loads on cpu
        f.extend_from_slice(&1i32.to_le_bytes());
        f.extend_from_slice(&0i32.to_le_bytes());
        for v in [1.0f32, 2.0, 3.0] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(&2u64.to_le_bytes());
        for n in ["v1", "legacy"] {
            f.extend_from_slice(&(n.len() as u64).to_le_bytes());
            f.extend_from_slice(n.as_bytes());
        }
        let got = load_from_bytes(&f).unwrap();
        assert_eq!(got[0].0.as_deref(), Some("v1"));
        assert_eq!(got[0].1.shape, vec![1, 2]);
        assert_eq!(got[0].1.to_vec::<i32>().unwrap(), vec![5, -6]);
        assert_eq!(got[1].0.as_deref(), Some("legacy"));
        assert_eq!(got[1].1.shape, vec![3]);
        assert_eq!(got[1].1.ctx(), Context::cpu(0));
        assert_eq!(got[1].1.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
    }
}
