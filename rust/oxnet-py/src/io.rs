//! Image IO bindings: RecordIO reader/writer, `imdecode` and the image ops
//! behind `mx.image` (pushed to the engine, so they return at once and run
//! in parallel), and the record `Pipeline` behind `ImageRecordIter`.
//! Every file read, decode and wait runs with the GIL released.
use crate::errors::IntoPy;
use crate::ndarray::{wrap, NDArray};
use numpy::{IntoPyArray, PyArray3, PyArrayMethods};
use oxnet_core::base::fmt_shape;
use oxnet_core::engine;
use oxnet_core::io::image::{self, ImageView, Interp, Normalize, Rect};
use oxnet_core::io::pipeline::{
    AugmentConfig, LastBatch, OutDType, Pipeline, PipelineConfig, RecordSource,
};
use oxnet_core::io::recordio::{RecordReader as CoreReader, RecordWriter as CoreWriter};
use oxnet_core::ndarray::{Blob, NDArray as Core};
use oxnet_core::{Context, DType, Error, Result};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::Mutex;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run a decoder entry point, turning a panic on malformed data into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    oxnet_core::error::catch_panic(f, |msg| {
        Error::Decode(format!(
            "{what}: the decoder failed on malformed data: {msg}"
        ))
    })
}

// ------------------------------------------------------------- RecordIO

/// Sequential/positional reader of a RecordIO file.
#[pyclass(module = "oxnet._native", name = "RecordReader")]
struct RecordReader {
    inner: Mutex<Option<CoreReader<BufReader<File>>>>,
    path: String,
}

impl RecordReader {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut CoreReader<BufReader<File>>) -> Result<T> + Send,
    ) -> PyResult<T> {
        let path = self.path.clone();
        py.detach(|| {
            let mut g = lock(&self.inner);
            match g.as_mut() {
                Some(r) => f(r),
                None => Err(Error::Io(format!("RecordIO: {path} is closed"))),
            }
        })
        .py_err()
    }
}

#[pymethods]
impl RecordReader {
    /// Open `path` for reading (IOError if it cannot be opened).
    #[new]
    fn new(py: Python<'_>, path: String) -> PyResult<Self> {
        let p = path.clone();
        let r = py.detach(move || CoreReader::open(&p)).py_err()?;
        Ok(RecordReader {
            inner: Mutex::new(Some(r)),
            path,
        })
    }
    /// The next record as bytes, or None at the end of the file.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let v = self.with(py, |r| r.read_record())?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }
    /// Byte offset of the next record.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |r| Ok(r.tell()))
    }
    /// Move to a record start (an offset from an .idx file or tell()).
    fn seek(&self, py: Python<'_>, pos: u64) -> PyResult<()> {
        self.with(py, |r| r.seek(pos))
    }
    /// Byte offsets of every record (reads the file through once).
    fn scan_offsets(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.with(py, |r| {
            let v = r.scan_offsets()?;
            r.seek(0)?;
            Ok(v)
        })
    }
    /// Release the file.
    fn close(&self) {
        lock(&self.inner).take();
    }
}

/// Writer of a RecordIO file (created or truncated).
#[pyclass(module = "oxnet._native", name = "RecordWriter")]
struct RecordWriter {
    inner: Mutex<Option<CoreWriter<BufWriter<File>>>>,
    path: String,
}

impl RecordWriter {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut CoreWriter<BufWriter<File>>) -> Result<T> + Send,
    ) -> PyResult<T> {
        let path = self.path.clone();
        py.detach(|| {
            let mut g = lock(&self.inner);
            match g.as_mut() {
                Some(w) => f(w),
                None => Err(Error::Io(format!("RecordIO: {path} is closed"))),
            }
        })
        .py_err()
    }
}

#[pymethods]
impl RecordWriter {
    /// Create (truncate) `path` for writing.
    #[new]
    fn new(py: Python<'_>, path: String) -> PyResult<Self> {
        let p = path.clone();
        let w = py.detach(move || CoreWriter::create(&p)).py_err()?;
        Ok(RecordWriter {
            inner: Mutex::new(Some(w)),
            path,
        })
    }
    /// Append one record; returns the byte offset it starts at.
    fn write(&self, py: Python<'_>, buf: &[u8]) -> PyResult<u64> {
        self.with(py, |w| w.write_record(buf))
    }
    /// Byte offset where the next record will start.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |w| Ok(w.tell()))
    }
    /// Flush buffered bytes to the file.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |w| w.flush())
    }
    /// Flush and release the file.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let w = lock(&self.inner).take();
        match w {
            Some(w) => py.detach(move || w.into_inner().map(|_| ())).py_err(),
            None => Ok(()),
        }
    }
}

// ------------------------------------------------------- engine image ops

fn throttle(py: Python<'_>) {
    if engine::over_limit() {
        py.detach(engine::throttle);
    }
}

/// Push `f(src, dst)` to the engine, reading `src` and writing a new array
/// (or `out`) of `shape`/`dtype`; returns the output at once.
fn push_map(
    name: &'static str,
    src: Option<&Core>,
    out: Option<Core>,
    shape: Vec<usize>,
    dtype: DType,
    f: impl FnOnce(Option<Blob>, Blob) -> Result<()> + Send + 'static,
) -> Result<Core> {
    let ctx = src.map(|s| s.ctx()).unwrap_or_default();
    let dst = match out {
        Some(o) => {
            if o.shape != shape || o.dtype() != dtype {
                return Err(Error::Shape(format!(
                    "{name}: out= has shape {} and dtype {}, the result has shape {} and dtype {}",
                    fmt_shape(&o.shape),
                    o.dtype().name(),
                    fmt_shape(&shape),
                    dtype.name()
                )));
            }
            o
        }
        None => Core::empty(&shape, dtype, ctx)?,
    };
    let reads = src.map(|s| vec![s.var().clone()]).unwrap_or_default();
    let s2 = src.cloned();
    let d2 = dst.clone();
    let inline = dst.nbytes() <= oxnet_core::ndarray::INLINE_BYTES && src.is_some();
    engine::push(
        name,
        Context::default(),
        reads,
        vec![dst.var().clone()],
        inline,
        Box::new(move |_| {
            let sb = match &s2 {
                Some(s) => Some(s.blob()?),
                None => None,
            };
            f(sb, d2.blob()?)
        }),
    );
    Ok(dst)
}

fn hwc(name: &str, a: &Core) -> Result<(usize, usize, usize)> {
    match a.shape.as_slice() {
        [h, w, c] => Ok((*h, *w, *c)),
        [h, w] => Ok((*h, *w, 1)),
        s => Err(Error::Shape(format!(
            "{name}: expected an image of shape (height, width, channels), got {}",
            fmt_shape(s)
        ))),
    }
}

fn need_u8(name: &str, a: &Core) -> Result<()> {
    if a.dtype() != DType::U8 {
        return Err(Error::DType(format!(
            "{name}: the image must be uint8 (as decoded by imdecode), got {}",
            a.dtype().name()
        )));
    }
    Ok(())
}

fn need_f32(name: &str, a: &Core) -> Result<()> {
    if a.dtype() != DType::F32 {
        return Err(Error::DType(format!(
            "{name}: the image must be float32 (apply CastAug / astype('float32') first), got {}",
            a.dtype().name()
        )));
    }
    Ok(())
}

fn out_core(out: Option<PyRef<'_, NDArray>>) -> Option<Core> {
    out.map(|o| o.inner.clone())
}

/// Errors prefixed with `source` (which image), when given.
fn naming(source: Option<String>) -> impl Fn(Error) -> Error + Clone {
    move |e: Error| match &source {
        None => e,
        Some(s) => {
            let m = format!("{s}: {}", e.message());
            match e {
                Error::Param(_) => Error::Param(m),
                Error::Io(_) => Error::Io(m),
                _ => Error::Decode(m),
            }
        }
    }
}

/// The (h, w, c) an image's header gives, errors named by `at`.
fn header(
    py: Python<'_>,
    data: &[u8],
    flag: i32,
    at: &impl Fn(Error) -> Error,
) -> PyResult<(usize, usize, usize)> {
    py.detach(|| guarded("imdecode", || image::decode_shape(data, flag)))
        .map_err(at)
        .py_err()
}

/// Decode JPEG/PNG bytes into a (h, w, c) uint8 array. The header is read
/// now (errors about unreadable data raise here); the decode runs on the
/// engine and its errors raise at the wait on the returned array.
#[pyfunction]
#[pyo3(signature = (buf, flag=1, to_rgb=true, out=None, source=None))]
fn imdecode(
    py: Python<'_>,
    buf: &[u8],
    flag: i32,
    to_rgb: bool,
    out: Option<PyRef<'_, NDArray>>,
    source: Option<String>,
) -> PyResult<Py<NDArray>> {
    let data = buf.to_vec();
    let at = naming(source);
    let (h, w, c) = header(py, &data, flag, &at)?;
    throttle(py);
    let a = push_map(
        "imdecode",
        None,
        out_core(out),
        vec![h, w, c],
        DType::U8,
        move |_, dst| {
            let out = dst.bytes_mut();
            let shape = guarded("imdecode", || {
                image::imdecode_into(&data, flag, to_rgb, out)
            })
            .map_err(at)?;
            if shape != (h, w, c) {
                return Err(Error::Decode(format!(
                    "imdecode: the decoded image is {shape:?}, its header said {:?}",
                    (h, w, c)
                )));
            }
            Ok(())
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// The decoders' pixel limit (None: no limit).
#[pyfunction]
fn image_max_pixels() -> Option<usize> {
    let n = image::max_pixels();
    (n != usize::MAX).then_some(n)
}

/// Set the decoders' pixel limit (None or 0: no limit); returns the old one.
#[pyfunction]
#[pyo3(signature = (n))]
fn set_image_max_pixels(n: Option<usize>) -> Option<usize> {
    image::set_max_pixels(n)
}

/// (height, width, channels) that imdecode would give, from the headers.
#[pyfunction]
#[pyo3(signature = (buf, flag=1))]
fn decode_shape(py: Python<'_>, buf: &[u8], flag: i32) -> PyResult<(usize, usize, usize)> {
    py.detach(|| guarded("imdecode", || image::decode_shape(buf, flag)))
        .py_err()
}

/// Decode synchronously (GIL released) into a (h, w, c) uint8 NumPy array
/// that takes over the decoded buffer (no copy while holding the GIL).
#[pyfunction]
#[pyo3(signature = (buf, flag=1, to_rgb=true))]
fn imdecode_array<'py>(
    py: Python<'py>,
    buf: &[u8],
    flag: i32,
    to_rgb: bool,
) -> PyResult<Bound<'py, PyArray3<u8>>> {
    let img = py
        .detach(|| guarded("imdecode", || image::imdecode(buf, flag, to_rgb)))
        .py_err()?;
    let (h, w, c) = img.shape();
    img.data.into_pyarray(py).reshape([h, w, c])
}

fn interp_of(code: i32) -> Result<Interp> {
    if !(0..=4).contains(&code) {
        return Err(Error::Param(format!(
            "Unknown interp method {code} (resolve 9/10 before calling; 0-4 here)"
        )));
    }
    Interp::from_mxnet(code, (1, 1), (1, 1), None)
}

/// The checked window and filter of a window resize.
fn window_args(
    full_w: usize,
    full_h: usize,
    win: (usize, usize, usize, usize),
    interp: i32,
) -> PyResult<(Rect, Interp)> {
    let r = Rect {
        x: win.0,
        y: win.1,
        w: win.2,
        h: win.3,
    };
    if full_w == 0
        || full_h == 0
        || r.w == 0
        || r.h == 0
        || r.x + r.w > full_w
        || r.y + r.h > full_h
    {
        return Err(PyValueError::new_err(format!(
            "imresize: window (x0={}, y0={}, w={}, h={}) is empty or outside the {full_w}x{full_h} output",
            r.x, r.y, r.w, r.h
        )));
    }
    let it = interp_of(interp).py_err()?;
    if !it.is_filter() {
        return Err(PyValueError::new_err(format!(
            "imresize: a window resize needs interp 1, 2 or 4, got {interp}"
        )));
    }
    Ok((r, it))
}

/// `image_resize_window(imdecode(buf, flag, to_rgb), ...)` in one engine
/// operation that decodes only about the source of the window (a baseline
/// JPEG then skips most of the work outside it; other images are decoded
/// whole). The header is read now; decode errors, prefixed with `source`,
/// raise at the wait on the returned (win_h, win_w, c) uint8 array.
///
/// The same operation can go on with what usually follows in an augmenter
/// list: `mirror` flips the window left-right, `to_float` makes the result
/// float32, and `normalize` (mean per channel, then std per channel; needs
/// `to_float`) subtracts and divides as color_normalize: the values of
/// those steps run one after another. `chw` (with `to_float`) lays the
/// float result out as (c, win_h, win_w), ready to copy into a batch.
#[pyfunction]
#[pyo3(signature = (buf, flag, to_rgb, full_w, full_h, win, interp=1, source=None, mirror=false, to_float=false, normalize=None, chw=false))]
#[allow(clippy::too_many_arguments)]
fn imdecode_resize_window(
    py: Python<'_>,
    buf: &[u8],
    flag: i32,
    to_rgb: bool,
    full_w: usize,
    full_h: usize,
    win: (usize, usize, usize, usize),
    interp: i32,
    source: Option<String>,
    mirror: bool,
    to_float: bool,
    normalize: Option<Vec<f32>>,
    chw: bool,
) -> PyResult<Py<NDArray>> {
    let data = buf.to_vec();
    let at = naming(source);
    let (h, w, c) = header(py, &data, flag, &at)?;
    let (r, it) = window_args(full_w, full_h, win, interp)?;
    if chw && !to_float {
        return Err(PyValueError::new_err(
            "imdecode: a CHW result needs to_float",
        ));
    }
    if let Some(p) = &normalize {
        if !to_float || p.len() != 2 * c {
            return Err(PyValueError::new_err(format!(
                "imdecode: normalize takes a float result and {} values (mean and std per channel), got {} values{}",
                2 * c,
                p.len(),
                if to_float { "" } else { " without to_float" }
            )));
        }
    }
    throttle(py);
    let a = push_map(
        "imdecode",
        None,
        None,
        if chw {
            vec![c, r.h, r.w]
        } else {
            vec![r.h, r.w, c]
        },
        if to_float { DType::F32 } else { DType::U8 },
        move |_, dst| {
            guarded("imdecode", || {
                let dec = image::Decoding::new(&data, flag, to_rgb)?;
                if (dec.height, dec.width) != (h, w) {
                    return Err(Error::Decode("imdecode: the image size changed".into()));
                }
                let src = image::window_source((w, h), (full_w, full_h), r, it);
                // the decoded source and the resized window in buffers this
                // worker keeps between images
                let (img, part) = dec.window(src, image::take_buf())?;
                let plain = !mirror && !to_float;
                let n = r.h * r.w * c;
                let mut tmp = image::take_buf();
                if !plain && tmp.len() < n {
                    tmp.resize(n, 0);
                }
                let out = if plain {
                    dst.bytes_mut()
                } else {
                    &mut tmp[..n]
                };
                let res = image::with_resizer(|z| {
                    z.resize_window_part(img.view(), part, (w, h), (full_w, full_h), r, it, out)
                });
                if res.is_ok() && !plain {
                    let tmp = &tmp[..n];
                    if to_float {
                        let norm = normalize.as_ref().map(|p| p.split_at(c));
                        image::u8_to_f32(tmp, r.w, c, mirror, norm, chw, dst.data_mut::<f32>());
                    } else {
                        image::flip_lr(tmp, dst.bytes_mut(), r.w, c);
                    }
                }
                image::give_back_buf(img.data);
                image::give_back_buf(tmp);
                res
            })
            .map_err(at)
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// The window `win` (x, y, w, h) of a uint8 HWC image resized to
/// `full_w` x `full_h`, computed without resizing the rest (a resize and a
/// crop in one pass; see `Resizer::resize_window`). Interpolation 1, 2 or 4.
#[pyfunction]
#[pyo3(signature = (src, full_w, full_h, win, interp=1))]
fn image_resize_window(
    py: Python<'_>,
    src: PyRef<'_, NDArray>,
    full_w: usize,
    full_h: usize,
    win: (usize, usize, usize, usize),
    interp: i32,
) -> PyResult<Py<NDArray>> {
    let s = src.inner.clone();
    need_u8("imresize", &s).py_err()?;
    let (sh, sw, c) = hwc("imresize", &s).py_err()?;
    let (r, it) = window_args(full_w, full_h, win, interp)?;
    throttle(py);
    let a = push_map(
        "imresize",
        Some(&s),
        None,
        vec![r.h, r.w, c],
        DType::U8,
        move |sb, db| {
            let sb = sb.expect("source");
            let view = ImageView::new(sh, sw, c, sb.bytes())?;
            image::with_resizer(|z| {
                z.resize_window_into(view, full_w, full_h, r, it, db.bytes_mut())
            })
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// Resize the region (x, y, w, h) of a uint8 HWC image (the whole image
/// when `rect` is None) to `w` x `h` with MXNet interpolation code 0-4.
#[pyfunction]
#[pyo3(signature = (src, w, h, interp=1, rect=None, out=None))]
fn image_resize(
    py: Python<'_>,
    src: PyRef<'_, NDArray>,
    w: usize,
    h: usize,
    interp: i32,
    rect: Option<(usize, usize, usize, usize)>,
    out: Option<PyRef<'_, NDArray>>,
) -> PyResult<Py<NDArray>> {
    let s = src.inner.clone();
    need_u8("imresize", &s).py_err()?;
    let (sh, sw, c) = hwc("imresize", &s).py_err()?;
    if w == 0 || h == 0 {
        return Err(PyValueError::new_err(format!(
            "imresize: output size w={w}, h={h} must be positive"
        )));
    }
    let r = match rect {
        Some((x, y, rw, rh)) => Rect { x, y, w: rw, h: rh },
        None => Rect {
            x: 0,
            y: 0,
            w: sw,
            h: sh,
        },
    };
    if r.w == 0 || r.h == 0 || r.x + r.w > sw || r.y + r.h > sh {
        return Err(PyValueError::new_err(format!(
            "fixed_crop: region (x0={}, y0={}, w={}, h={}) is empty or outside the image of width {sw} and height {sh}",
            r.x, r.y, r.w, r.h
        )));
    }
    let it = interp_of(interp).py_err()?;
    let mut shape = s.shape.clone();
    shape[0] = h;
    shape[1] = w;
    throttle(py);
    let a = push_map(
        "imresize",
        Some(&s),
        out_core(out),
        shape,
        DType::U8,
        move |sb, db| {
            let sb = sb.expect("source");
            let view = ImageView::new(sh, sw, c, sb.bytes())?;
            if (r.w, r.h) == (w, h) {
                // a plain crop
                let dst = db.bytes_mut();
                for y in 0..h {
                    let from = ((r.y + y) * sw + r.x) * c;
                    dst[y * w * c..(y + 1) * w * c].copy_from_slice(&view.data[from..from + w * c]);
                }
                return Ok(());
            }
            image::with_resizer(|z| z.resize_into(view, r, db.bytes_mut(), w, h, it))
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// Mirror an HWC image (any dtype) left-right, into a new array.
#[pyfunction]
fn image_flip_lr(py: Python<'_>, src: PyRef<'_, NDArray>) -> PyResult<Py<NDArray>> {
    let s = src.inner.clone();
    let (h, w, c) = hwc("flip", &s).py_err()?;
    let px = c * s.dtype().size();
    throttle(py);
    let a = push_map(
        "flip",
        Some(&s),
        None,
        s.shape.clone(),
        s.dtype(),
        move |sb, db| {
            let sb = sb.expect("source");
            debug_assert_eq!(sb.bytes().len(), h * w * px);
            image::flip_lr(sb.bytes(), db.bytes_mut(), w, px);
            Ok(())
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// OpenCV's borderInterpolate: the source index for `p` outside 0..len.
fn border_index(p: isize, len: isize, kind: i32) -> Option<isize> {
    if (0..len).contains(&p) {
        return Some(p);
    }
    match kind {
        0 => None,
        1 => Some(p.clamp(0, len - 1)),
        3 => Some(p.rem_euclid(len)),
        2 | 4 => {
            if len == 1 {
                return Some(0);
            }
            let delta = if kind == 4 { 1 } else { 0 };
            let mut p = p;
            loop {
                if p < 0 {
                    p = -p - 1 + delta;
                } else if p >= len {
                    p = len - 1 - (p - len) - delta;
                } else {
                    return Some(p);
                }
            }
        }
        _ => None,
    }
}

/// `copyMakeBorder`: pad an HWC image by (top, bot, left, right) with
/// OpenCV border type 0 constant, 1 replicate, 2 reflect, 3 wrap,
/// 4 reflect_101; `values` fills constant borders per channel.
#[pyfunction]
#[pyo3(signature = (src, top, bot, left, right, border_type, values, out=None))]
#[allow(clippy::too_many_arguments)]
fn image_copy_make_border(
    py: Python<'_>,
    src: PyRef<'_, NDArray>,
    top: usize,
    bot: usize,
    left: usize,
    right: usize,
    border_type: i32,
    values: Vec<f64>,
    out: Option<PyRef<'_, NDArray>>,
) -> PyResult<Py<NDArray>> {
    let s = src.inner.clone();
    let (h, w, c) = hwc("copyMakeBorder", &s).py_err()?;
    if !(0..=4).contains(&border_type) {
        return Err(PyValueError::new_err(format!(
            "copyMakeBorder: type={border_type} is not supported (0 constant, 1 replicate, 2 reflect, 3 wrap, 4 reflect_101)"
        )));
    }
    if h == 0 || w == 0 {
        return Err(PyValueError::new_err("copyMakeBorder: the image is empty"));
    }
    let (nh, nw) = (h + top + bot, w + left + right);
    let mut shape = s.shape.clone();
    shape[0] = nh;
    shape[1] = nw;
    let dt = s.dtype();
    let es = dt.size();
    // the fill pixel in the array's dtype
    let mut fill = Vec::with_capacity(c * es);
    for k in 0..c {
        let v = values.get(k).or(values.last()).copied().unwrap_or(0.0);
        let b: Vec<u8> = match dt {
            DType::U8 => vec![v.clamp(0.0, 255.0).round() as u8],
            DType::F32 => (v as f32).to_le_bytes().to_vec(),
            DType::F64 => v.to_le_bytes().to_vec(),
            DType::I32 => (v as i32).to_le_bytes().to_vec(),
            other => {
                return Err(oxnet_core::Error::DType(format!(
                    "copyMakeBorder: dtype {} is not supported (uint8, int32, float32, float64)",
                    other.name()
                )))
                .py_err()
            }
        };
        fill.extend_from_slice(&b);
    }
    throttle(py);
    let px = c * es;
    let a = push_map(
        "copyMakeBorder",
        Some(&s),
        out_core(out),
        shape,
        dt,
        move |sb, db| {
            let sb = sb.expect("source");
            let (src, dst) = (sb.bytes(), db.bytes_mut());
            for y in 0..nh {
                let sy = border_index(y as isize - top as isize, h as isize, border_type);
                for x in 0..nw {
                    let sx = border_index(x as isize - left as isize, w as isize, border_type);
                    let d = &mut dst[(y * nw + x) * px..(y * nw + x + 1) * px];
                    match (sy, sx) {
                        (Some(sy), Some(sx)) => {
                            let from = (sy as usize * w + sx as usize) * px;
                            d.copy_from_slice(&src[from..from + px]);
                        }
                        _ => d.copy_from_slice(&fill),
                    }
                }
            }
            Ok(())
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// Colour operations on a float32 HWC image (a new array): kind is
/// "brightness" (alpha), "contrast" (alpha), "saturation" (alpha), "hue"
/// (alpha), "lighting" (3 alpha, 3 eigval, 9 eigvec), "matrix" (3x3 m:
/// out = src . m), "normalize" (mean per channel, then std per channel;
/// one value broadcasts).
/// With `inplace`, `src` itself is updated and returned.
#[pyfunction]
#[pyo3(signature = (src, kind, params, inplace=false))]
fn image_color(
    py: Python<'_>,
    src: PyRef<'_, NDArray>,
    kind: String,
    params: Vec<f32>,
    inplace: bool,
) -> PyResult<Py<NDArray>> {
    let s = src.inner.clone();
    need_f32(&kind, &s).py_err()?;
    let (_, _, c) = hwc(&kind, &s).py_err()?;
    let need = match kind.as_str() {
        "brightness" | "contrast" | "saturation" | "hue" => 1,
        "lighting" => 15,
        "matrix" => 9,
        "normalize" => 2 * c,
        _ => {
            return Err(PyValueError::new_err(format!(
                "image_color: unknown operation {kind:?}"
            )))
        }
    };
    if params.len() != need {
        return Err(PyValueError::new_err(format!(
            "{kind}: expected {need} parameters, got {}",
            params.len()
        )));
    }
    if kind != "brightness" && kind != "normalize" && c != 3 {
        return Err(PyValueError::new_err(format!(
            "{kind}: expected an RGB image with 3 channels, got shape {}",
            fmt_shape(&s.shape)
        )));
    }
    throttle(py);
    let name: &'static str = match kind.as_str() {
        "brightness" => "BrightnessJitterAug",
        "contrast" => "ContrastJitterAug",
        "saturation" => "SaturationJitterAug",
        "hue" => "HueJitterAug",
        "lighting" => "LightingAug",
        "matrix" => "RandomGrayAug",
        _ => "color_normalize",
    };
    let out = if inplace { Some(s.clone()) } else { None };
    let a = push_map(
        name,
        Some(&s),
        out,
        s.shape.clone(),
        DType::F32,
        move |sb, db| {
            let dst = db.data_mut::<f32>();
            if !inplace {
                dst.copy_from_slice(sb.expect("source").data::<f32>());
            }
            let p = &params;
            match kind.as_str() {
                "brightness" => image::adjust_brightness(dst, p[0]),
                "contrast" => image::adjust_contrast(dst, p[0])?,
                "saturation" => image::adjust_saturation(dst, p[0])?,
                "hue" => image::adjust_hue(dst, p[0])?,
                "lighting" => {
                    let ev = [
                        [p[6], p[7], p[8]],
                        [p[9], p[10], p[11]],
                        [p[12], p[13], p[14]],
                    ];
                    image::adjust_lighting(dst, [p[0], p[1], p[2]], [p[3], p[4], p[5]], ev)?
                }
                "matrix" => {
                    for px in dst.chunks_exact_mut(3) {
                        let (r, g, b) = (px[0], px[1], px[2]);
                        for j in 0..3 {
                            px[j] = r * p[j] + g * p[3 + j] + b * p[6 + j];
                        }
                    }
                }
                _ => {
                    let (mean, std) = p.split_at(c);
                    image::normalize_hwc(dst, mean, std);
                }
            }
            Ok(())
        },
    )
    .py_err()?;
    wrap(py, a)
}

/// Write an HWC image (uint8 or float32) as CHW into row `index` of a
/// float32 batch of shape (N, C, H, W) (ImageIter's batch assembly); with
/// `chw`, the image is float32 (C, H, W) already and is copied.
#[pyfunction]
#[pyo3(signature = (src, batch, index, chw=false))]
fn image_to_batch(
    py: Python<'_>,
    src: PyRef<'_, NDArray>,
    batch: PyRef<'_, NDArray>,
    index: usize,
    chw: bool,
) -> PyResult<()> {
    let s = src.inner.clone();
    let b = batch.inner.clone();
    let (h, w, c) = if chw {
        match s.shape.as_slice() {
            [c, h, w] if s.dtype() == DType::F32 => (*h, *w, *c),
            sh => {
                return Err(PyValueError::new_err(format!(
                    "ImageIter: a CHW image must be float32 (C, H, W), got shape {} and dtype {}",
                    fmt_shape(sh),
                    s.dtype().name()
                )))
            }
        }
    } else {
        hwc("ImageIter", &s).py_err()?
    };
    if b.dtype() != DType::F32
        || b.shape.len() != 4
        || index >= b.shape[0]
        || b.shape[1..] != [c, h, w]
    {
        return Err(PyValueError::new_err(format!(
            "ImageIter: an augmented image of shape {} (HWC) does not fit row {index} of the batch of shape {} and dtype {} \
             (check data_shape and the augmenters' output size)",
            fmt_shape(&s.shape),
            fmt_shape(&b.shape),
            b.dtype().name()
        )));
    }
    let sd = s.dtype();
    if sd != DType::U8 && sd != DType::F32 {
        return Err(PyValueError::new_err(format!(
            "ImageIter: images must be uint8 or float32, got {}",
            sd.name()
        )));
    }
    throttle(py);
    let s2 = s.clone();
    let row = b.at_view(index).py_err()?;
    let r2 = row.clone();
    engine::push(
        "image_to_batch",
        Context::default(),
        vec![s.var().clone()],
        vec![b.var().clone()],
        false,
        Box::new(move |_| {
            let sb = s2.blob()?;
            let db = r2.blob()?;
            let dst = db.data_mut::<f32>();
            match sd {
                _ if chw => dst.copy_from_slice(sb.data::<f32>()),
                DType::U8 => image::hwc_to_chw(sb.bytes(), c, dst, |v| v as f32),
                _ => image::hwc_to_chw(sb.data::<f32>(), c, dst, |v| v),
            }
            Ok(())
        }),
    );
    Ok(())
}

/// Write a (h, w, c) uint8 image (RGB order) as PNG bytes (lossless).
#[pyfunction]
fn encode_png<'py>(
    py: Python<'py>,
    data: &[u8],
    shape: (usize, usize, usize),
) -> PyResult<Bound<'py, PyBytes>> {
    let (h, w, c) = shape;
    let out = py
        .detach(|| image::encode_png(ImageView::new(h, w, c, data)?))
        .py_err()?;
    Ok(PyBytes::new(py, &out))
}

// ------------------------------------------------------------ pipeline

/// The multi-threaded record pipeline behind ImageRecordIter.
#[pyclass(module = "oxnet._native", name = "ImagePipeline")]
struct ImagePipeline {
    inner: Mutex<Pipeline>,
    #[pyo3(get)]
    num_records: usize,
    batch_size: usize,
}

#[pymethods]
impl ImagePipeline {
    /// Start a pipeline over a .rec (with or without .idx) or image files
    /// (`root` + `items` of (relative path, labels)). See ImageRecordIter.
    #[new]
    #[pyo3(signature = (data_shape, batch_size, path_imgrec=None, path_imgidx=None, root=None, items=None,
        label_width=1, shuffle=false, seed=0, num_threads=1, prefetch=2, part_index=0, num_parts=1,
        last_batch="pad", dtype="float32", resize=None, rand_crop=false, rand_mirror=false,
        inter_method=1, mean=None, std=None, scale=1.0, aug_seed=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        data_shape: (usize, usize, usize),
        batch_size: usize,
        path_imgrec: Option<String>,
        path_imgidx: Option<String>,
        root: Option<String>,
        items: Option<Vec<(String, Vec<f32>)>>,
        label_width: usize,
        shuffle: bool,
        seed: u64,
        num_threads: usize,
        prefetch: usize,
        part_index: usize,
        num_parts: usize,
        last_batch: &str,
        dtype: &str,
        resize: Option<usize>,
        rand_crop: bool,
        rand_mirror: bool,
        inter_method: i32,
        mean: Option<Vec<f32>>,
        std: Option<Vec<f32>>,
        scale: f32,
        aug_seed: Option<u64>,
    ) -> PyResult<Self> {
        let c = data_shape.0;
        let mut aug = AugmentConfig::new(data_shape);
        aug.resize = resize;
        aug.rand_crop = rand_crop;
        aug.rand_mirror = rand_mirror;
        aug.inter_method = inter_method;
        aug.norm = Normalize {
            mean: mean.unwrap_or(vec![0.0; c]),
            std: std.unwrap_or(vec![1.0; c]),
            scale,
        };
        let mut cfg = PipelineConfig::new(batch_size);
        cfg.label_width = label_width;
        cfg.shuffle = shuffle;
        cfg.seed = seed;
        cfg.aug_seed = aug_seed;
        cfg.num_threads = num_threads;
        cfg.prefetch = prefetch;
        cfg.part_index = part_index;
        cfg.num_parts = num_parts;
        cfg.last_batch = match last_batch {
            "pad" => LastBatch::Pad,
            "discard" => LastBatch::Discard,
            "roll_over" => LastBatch::RollOver,
            "zeros" => LastBatch::Zeros,
            o => {
                return Err(PyValueError::new_err(format!(
                    "last_batch_handle {o:?} must be 'pad', 'discard', 'roll_over' or 'zeros'"
                )))
            }
        };
        cfg.dtype = match dtype {
            "float32" => OutDType::F32,
            "uint8" => OutDType::U8,
            o => {
                return Err(PyValueError::new_err(format!(
                    "ImageRecordIter: dtype {o:?} is not supported ('float32' or 'uint8')"
                )))
            }
        };
        let p = py
            .detach(move || {
                let source = match (path_imgrec, items) {
                    (Some(rec), None) => match path_imgidx {
                        Some(idx) => RecordSource::indexed(&rec, &idx)?,
                        None => RecordSource::scanned(&rec)?,
                    },
                    (None, Some(items)) => RecordSource::Files {
                        root: PathBuf::from(root.unwrap_or_default()),
                        items: items
                            .into_iter()
                            .map(|(p, l)| (PathBuf::from(p), l))
                            .collect(),
                    },
                    _ => {
                        return Err(Error::Param(
                            "ImagePipeline: give either path_imgrec or items".into(),
                        ))
                    }
                };
                Pipeline::new(source, aug, cfg)
            })
            .py_err()?;
        let num_records = p.num_records();
        Ok(ImagePipeline {
            inner: Mutex::new(p),
            num_records,
            batch_size,
        })
    }

    /// The next batch as (data, label, pad, indices), or None at the end of
    /// the epoch. A batch with undecodable records raises (naming them);
    /// the following call goes on with the next batch.
    #[allow(clippy::type_complexity)]
    fn next(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<(Py<NDArray>, Py<NDArray>, usize, Vec<usize>)>> {
        let res = py
            .detach(|| -> Result<Option<(Core, Core, usize, Vec<usize>)>> {
                let mut p = lock(&self.inner);
                let b = match p.next_batch()? {
                    Some(b) => b,
                    None => return Ok(None),
                };
                if let Some(e) = b.errors.first() {
                    let msg = format!(
                        "ImageRecordIter: {} record(s) of this batch could not be used; record {}: {}",
                        b.errors.len(),
                        e.index,
                        e.error.message()
                    );
                    return Err(match e.error {
                        Error::Io(_) => Error::Io(msg),
                        _ => Error::Decode(msg),
                    });
                }
                let bs = self.batch_size;
                let lw = b.label.len() / bs.max(1);
                let label = Core::from_vec(b.label, &[bs, lw], Context::default())?;
                let data = b.data.into_ndarray();
                Ok(Some((data, label, b.pad, b.indices)))
            })
            .py_err()?;
        match res {
            None => Ok(None),
            Some((d, l, pad, idx)) => Ok(Some((wrap(py, d)?, wrap(py, l)?, pad, idx))),
        }
    }

    /// Start the next epoch (reshuffled when shuffle is on).
    fn reset(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).reset())
    }

    /// The epoch counter (0 for the first).
    fn epoch(&self) -> u64 {
        lock(&self.inner).epoch()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RecordReader>()?;
    m.add_class::<RecordWriter>()?;
    m.add_class::<ImagePipeline>()?;
    m.add_function(wrap_pyfunction!(imdecode, m)?)?;
    m.add_function(wrap_pyfunction!(decode_shape, m)?)?;
    m.add_function(wrap_pyfunction!(image_max_pixels, m)?)?;
    m.add_function(wrap_pyfunction!(set_image_max_pixels, m)?)?;
    m.add_function(wrap_pyfunction!(imdecode_array, m)?)?;
    m.add_function(wrap_pyfunction!(image_resize, m)?)?;
    m.add_function(wrap_pyfunction!(image_resize_window, m)?)?;
    m.add_function(wrap_pyfunction!(imdecode_resize_window, m)?)?;
    m.add_function(wrap_pyfunction!(image_flip_lr, m)?)?;
    m.add_function(wrap_pyfunction!(image_copy_make_border, m)?)?;
    m.add_function(wrap_pyfunction!(image_color, m)?)?;
    m.add_function(wrap_pyfunction!(encode_png, m)?)?;
    m.add_function(wrap_pyfunction!(image_to_batch, m)?)?;
    Ok(())
}
