//! Image decoding and augmentation on HWC `u8` buffers, with MXNet 1.9.1's
//! semantics (`mx.image`, OpenCV underneath in MXNet).
//!
//! - Decoding: JPEG (baseline by oxnet's own decoder, [`jpeg`], with
//!   libjpeg's exact arithmetic and window decoding; others by zune-jpeg)
//!   and PNG (zune-png) to HWC u8, RGB or BGR
//!   (`to_rgb = false`, OpenCV's order), 3 channels for `flag = 1` (gray
//!   images are replicated, alpha is dropped) and 1 channel for `flag = 0`
//!   (a colour JPEG gives its Y channel, as libjpeg does for OpenCV; a colour
//!   PNG is converted with the ITU-R 601 weights). EXIF orientation is
//!   ignored, as MXNet does.
//! - Resizing with MXNet's interpolation codes: 0 nearest (OpenCV's
//!   `floor(x * scale)` rule), 1 bilinear and 2 bicubic (a = -0.75) and
//!   4 Lanczos-4, all as fixed-size kernels like OpenCV (not anti-aliased),
//!   3 area (box averaging when shrinking, bilinear when enlarging), 9 auto
//!   and 10 random. Bilinear/bicubic/Lanczos/area use fast_image_resize (SIMD).
//! - Crops, flips, colour jitter and the fused "HWC u8 -> CHW f32
//!   normalised" write into a caller's slice.
use crate::error::{Error, Result};
use crate::io::jpeg;
use crate::random::Rng;
use fast_image_resize as fir;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;

/// An owned HWC u8 image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub height: usize,
    pub width: usize,
    pub channels: usize,
    pub data: Vec<u8>,
}

/// A borrowed HWC u8 image (rows are contiguous, no stride).
#[derive(Debug, Clone, Copy)]
pub struct ImageView<'a> {
    pub height: usize,
    pub width: usize,
    pub channels: usize,
    pub data: &'a [u8],
}

impl Image {
    pub fn new(height: usize, width: usize, channels: usize, data: Vec<u8>) -> Result<Image> {
        check_dims("Image", height, width, channels, data.len())?;
        Ok(Image {
            height,
            width,
            channels,
            data,
        })
    }
    pub fn zeros(height: usize, width: usize, channels: usize) -> Image {
        Image {
            height,
            width,
            channels,
            data: vec![0; height * width * channels],
        }
    }
    pub fn view(&self) -> ImageView<'_> {
        ImageView {
            height: self.height,
            width: self.width,
            channels: self.channels,
            data: &self.data,
        }
    }
    /// (height, width, channels), as MXNet's HWC shape.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.height, self.width, self.channels)
    }
}

impl<'a> ImageView<'a> {
    pub fn new(height: usize, width: usize, channels: usize, data: &'a [u8]) -> Result<Self> {
        check_dims("ImageView", height, width, channels, data.len())?;
        Ok(ImageView {
            height,
            width,
            channels,
            data,
        })
    }
    pub fn to_image(&self) -> Image {
        Image {
            height: self.height,
            width: self.width,
            channels: self.channels,
            data: self.data.to_vec(),
        }
    }
}

fn check_dims(what: &str, h: usize, w: usize, c: usize, len: usize) -> Result<()> {
    let need = h.checked_mul(w).and_then(|x| x.checked_mul(c));
    match need {
        Some(n) if n == len => Ok(()),
        _ => Err(Error::Shape(format!(
            "{what}: shape ({h}, {w}, {c}) needs {} bytes but the buffer has {len}",
            need.map(|n| n.to_string())
                .unwrap_or_else(|| "too many".into())
        ))),
    }
}

// ---------------------------------------------------------------- decoding

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
}

/// Recognise the format from the first bytes.
pub fn sniff(data: &[u8]) -> Option<ImageFormat> {
    if data.len() >= 3 && data[..3] == [0xFF, 0xD8, 0xFF] {
        Some(ImageFormat::Jpeg)
    } else if data.len() >= 8 && data[..8] == [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A] {
        Some(ImageFormat::Png)
    } else {
        None
    }
}

/// The default limit on a decoded image's pixels, Pillow's
/// `MAX_IMAGE_PIXELS` (1 GiB of 4-byte pixels / 3: about 89.5 million).
pub const DEFAULT_MAX_PIXELS: usize = (1 << 30) / 4 / 3;
const MAX_SIDE: usize = 1 << 16;

/// 0 = not read yet (the limit itself is never 0: 0 means "no limit",
/// stored as usize::MAX).
static MAX_PIXELS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The largest image (width x height) the decoders accept, a guard against
/// decompression bombs: `OXNET_IMAGE_MAX_PIXELS` (0 or "none": no limit)
/// or [`set_max_pixels`], else [`DEFAULT_MAX_PIXELS`].
pub fn max_pixels() -> usize {
    use std::sync::atomic::Ordering;
    let v = MAX_PIXELS.load(Ordering::Relaxed);
    if v != 0 {
        return v;
    }
    let v = match std::env::var("OXNET_IMAGE_MAX_PIXELS") {
        Ok(s) if s.trim().eq_ignore_ascii_case("none") => usize::MAX,
        Ok(s) => match s.trim().parse::<usize>() {
            Ok(0) => usize::MAX,
            Ok(n) => n,
            Err(_) => DEFAULT_MAX_PIXELS,
        },
        Err(_) => DEFAULT_MAX_PIXELS,
    };
    MAX_PIXELS.store(v, Ordering::Relaxed);
    v
}

/// Set the pixel limit (`None`: no limit); returns the previous one.
pub fn set_max_pixels(n: Option<usize>) -> Option<usize> {
    let old = max_pixels();
    let v = match n {
        None | Some(0) => usize::MAX,
        Some(n) => n,
    };
    MAX_PIXELS.store(v, std::sync::atomic::Ordering::Relaxed);
    (old != usize::MAX).then_some(old)
}

/// Refuse an image whose header claims more pixels than the limit, before
/// anything is allocated for it.
pub fn check_pixels(kind: &str, w: usize, h: usize) -> Result<()> {
    if w == 0 || h == 0 {
        return Err(Error::Decode(format!(
            "imdecode: {kind} size {w}x{h} is empty"
        )));
    }
    let limit = max_pixels();
    if w.saturating_mul(h) > limit {
        return Err(Error::Decode(format!(
            "imdecode: {kind} size {w}x{h} ({} pixels) exceeds the limit of {limit} pixels \
             (a guard against decompression bombs); raise it with the environment variable \
             OXNET_IMAGE_MAX_PIXELS=<pixels> or mx.image.set_max_image_pixels(<pixels>) \
             (None: no limit)",
            w * h
        )));
    }
    Ok(())
}

fn check_flag(flag: i32) -> Result<usize> {
    match flag {
        1 => Ok(3),
        0 => Ok(1),
        _ => Err(Error::Param(format!(
            "imdecode: flag={flag} is not supported (1 = 3-channel colour, 0 = grayscale)"
        ))),
    }
}

fn describe_start(data: &[u8]) -> String {
    let n = data.len().min(8);
    let hex: Vec<String> = data[..n].iter().map(|b| format!("{b:02x}")).collect();
    format!("{} bytes starting {}", data.len(), hex.join(" "))
}

/// Height, width and the channel count `imdecode` would produce, reading
/// the headers only.
pub fn decode_shape(data: &[u8], flag: i32) -> Result<(usize, usize, usize)> {
    let c = check_flag(flag)?;
    match sniff(data) {
        Some(ImageFormat::Jpeg) => {
            let mut d =
                zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(data), jpeg_options());
            d.decode_headers()
                .map_err(|e| Error::Decode(format!("imdecode: invalid JPEG: {e:?}")))?;
            let info = d
                .info()
                .ok_or_else(|| Error::Decode("imdecode: invalid JPEG headers".into()))?;
            // the size checks, before the caller allocates for the pixels
            check_jpeg_frame(data, info.width as usize, info.height as usize)?;
            Ok((info.height as usize, info.width as usize, c))
        }
        Some(ImageFormat::Png) => {
            // The IHDR chunk comes first: read it directly (zune-png's
            // header pass walks every chunk, so a truncated file would fail
            // here instead of at the decode).
            if data.len() < 24 || &data[12..16] != b"IHDR" {
                return Err(Error::Decode(format!(
                    "imdecode: invalid PNG: no IHDR chunk after the signature ({})",
                    describe_start(data)
                )));
            }
            let w = u32::from_be_bytes([data[16], data[17], data[18], data[19]]) as usize;
            let h = u32::from_be_bytes([data[20], data[21], data[22], data[23]]) as usize;
            check_pixels("PNG", w, h)?;
            if w > MAX_SIDE || h > MAX_SIDE {
                return Err(Error::Decode(format!(
                    "imdecode: PNG size {w}x{h} is too large (sides up to {MAX_SIDE})"
                )));
            }
            Ok((h, w, c))
        }
        None => Err(unknown_format(data)),
    }
}

fn unknown_format(data: &[u8]) -> Error {
    if data.is_empty() {
        Error::Decode("imdecode: the image buffer is empty".into())
    } else {
        Error::Decode(format!(
            "imdecode: the data is neither JPEG nor PNG ({})",
            describe_start(data)
        ))
    }
}

fn jpeg_options() -> DecoderOptions {
    DecoderOptions::default()
        .set_max_width(MAX_SIDE)
        .set_max_height(MAX_SIDE)
}
fn png_options() -> DecoderOptions {
    DecoderOptions::default()
        .set_max_width(MAX_SIDE)
        .set_max_height(MAX_SIDE)
        .png_set_strip_to_8bit(true)
}

/// `mx.image.imdecode(buf, flag, to_rgb)`: decode JPEG or PNG bytes to HWC u8.
pub fn imdecode(data: &[u8], flag: i32, to_rgb: bool) -> Result<Image> {
    imdecode_reuse(data, flag, to_rgb, Vec::new())
}

/// `imdecode` writing into `buf`'s allocation when it is large enough (a
/// batch pipeline hands each thread's last buffer back, so a steady stream
/// of images neither zero-fills nor faults in fresh pages for the pixels).
pub fn imdecode_reuse(data: &[u8], flag: i32, to_rgb: bool, buf: Vec<u8>) -> Result<Image> {
    let c = check_flag(flag)?;
    match sniff(data) {
        Some(ImageFormat::Jpeg) => decode_jpeg(data, c, to_rgb, buf),
        Some(ImageFormat::Png) => decode_png(data, c, to_rgb, buf),
        None => Err(unknown_format(data)),
    }
}

/// Largest byte buffer a thread keeps for its next image (64 MiB).
const KEEP_BUF_BYTES: usize = 1 << 26;

thread_local! {
    static BUFS: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A byte buffer this thread gave back before (empty if none), to decode
/// or resize the next image into without a fresh, zeroed allocation.
pub fn take_buf() -> Vec<u8> {
    BUFS.with(|b| b.borrow_mut().pop().unwrap_or_default())
}

/// Keep `v` for this thread's next [`take_buf`] (two buffers at most, of
/// up to 64 MiB each: a huge image's buffer is not pinned).
pub fn give_back_buf(v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > KEEP_BUF_BYTES {
        return;
    }
    BUFS.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < 2 {
            b.push(v);
        }
    })
}

/// `buf` with exactly `n` bytes; old contents are kept (the decoder
/// overwrites all of them), only growth is zero-filled.
fn sized(mut buf: Vec<u8>, n: usize) -> Vec<u8> {
    if buf.len() >= n {
        buf.truncate(n);
    } else {
        buf.resize(n, 0);
    }
    buf
}

/// Whether the JPEG's last scan is followed by an end-of-image marker (a
/// truncated file is not). Entropy-coded data never contains FF DA or FF D9
/// (0xFF is byte-stuffed), so scanning back from the end, the first of the
/// two markers met tells: EOI (usually the last two bytes) or SOS.
fn jpeg_has_eoi_after_last_scan(data: &[u8]) -> bool {
    let mut i = data.len();
    while i >= 2 {
        // find the previous 0xFF in the byte before position i
        match data[..i - 1].iter().rposition(|&b| b == 0xFF) {
            None => return false,
            Some(p) => {
                match data[p + 1] {
                    0xD9 => return true,
                    0xDA => return false,
                    _ => {}
                }
                i = p + 1;
            }
        }
    }
    false
}

/// Bytes of entropy-coded data a JPEG holds at most: everything after its
/// first start-of-scan marker (later tables and markers included, so this
/// never undercounts).
fn jpeg_scan_bytes(data: &[u8]) -> usize {
    let mut p = 2;
    while p + 4 <= data.len() {
        if data[p] != 0xFF {
            return 0; // not a marker where one belongs: let the decoder say
        }
        let m = data[p + 1];
        if m == 0xFF {
            p += 1; // fill byte
            continue;
        }
        let len = u16::from_be_bytes([data[p + 2], data[p + 3]]) as usize;
        if m == 0xDA {
            return data.len().saturating_sub(p + 2 + len);
        }
        p += 2 + len;
    }
    0
}

/// The checks every JPEG gets before its pixels are decoded: a size within
/// the pixel limit, an end-of-image marker after the last scan, and enough
/// entropy-coded data to cover the frame: every 8x8 block of the
/// full-resolution component costs at least one bit (its DC code, in a
/// sequential or a progressive file), so a file with less claims a frame
/// its data cannot fill (a decompression bomb's patched header).
fn check_jpeg(data: &[u8], w: usize, h: usize) -> Result<()> {
    check_jpeg_frame(data, w, h)?;
    if !jpeg_has_eoi_after_last_scan(data) {
        return Err(Error::Decode(format!(
            "imdecode: truncated JPEG: no end-of-image marker after the last scan ({})",
            describe_start(data)
        )));
    }
    Ok(())
}

/// The size checks of [`check_jpeg`]: the pixel limit and the lower bound
/// on the entropy-coded data.
fn check_jpeg_frame(data: &[u8], w: usize, h: usize) -> Result<()> {
    check_pixels("JPEG", w, h)?;
    let blocks = w.div_ceil(8) * h.div_ceil(8);
    let bytes = jpeg_scan_bytes(data);
    if bytes.saturating_mul(8) < blocks {
        return Err(Error::Decode(format!(
            "imdecode: corrupt JPEG: its {bytes} bytes of entropy-coded data end long before \
             the {w}x{h} frame ({blocks} blocks of at least one bit each) is covered"
        )));
    }
    Ok(())
}

/// oxnet's own decoder for `data` when it is a JPEG that decoder handles
/// (baseline, see [`jpeg`]), headers checked; `None` for zune-jpeg.
fn baseline_jpeg(data: &[u8]) -> Result<Option<jpeg::Frame<'_>>> {
    if !matches!(sniff(data), Some(ImageFormat::Jpeg)) {
        return Ok(None);
    }
    match jpeg::Frame::parse(data) {
        Some(f) => {
            check_jpeg(data, f.width, f.height)?;
            Ok(Some(f))
        }
        None => Ok(None),
    }
}

/// A JPEG decoder reading from a byte slice.
type Jpeg<'a> = zune_jpeg::JpegDecoder<ZCursor<&'a [u8]>>;

/// Parse a JPEG's headers and set up its decoder for `c` output channels:
/// the decoder, width, height and the channels it will write (1 for gray
/// sources, which `c` = 3 then expands).
fn jpeg_start(data: &[u8], c: usize) -> Result<(Jpeg<'_>, usize, usize, usize)> {
    let mut d = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(data), jpeg_options());
    d.decode_headers().map_err(|e| jpeg_err(data, &e))?;
    let info = d
        .info()
        .ok_or_else(|| Error::Decode("imdecode: invalid JPEG headers".into()))?;
    let (w, h) = (info.width as usize, info.height as usize);
    check_jpeg(data, w, h)?;
    let input = d.input_colorspace().unwrap_or(ColorSpace::YCbCr);
    let gray_src = input == ColorSpace::Luma;
    // zune-jpeg's direct BGR output rounds differently from its RGB path:
    // decode RGB and swap, so BGR is exactly RGB reversed.
    let out_cs = if c == 1 || gray_src {
        ColorSpace::Luma
    } else {
        ColorSpace::RGB
    };
    d.set_options(jpeg_options().jpeg_set_out_colorspace(out_cs));
    Ok((d, w, h, out_cs.num_components()))
}

fn jpeg_err(data: &[u8], e: &dyn std::fmt::Debug) -> Error {
    Error::Decode(format!(
        "imdecode: invalid JPEG ({}): {e:?}",
        describe_start(data)
    ))
}

/// Decode the pixels of a started JPEG into `out` (w * h * channels bytes).
fn jpeg_finish(
    d: &mut Jpeg<'_>,
    data: &[u8],
    (w, h): (usize, usize),
    out: &mut [u8],
) -> Result<()> {
    d.decode_into(out).map_err(|e| jpeg_err(data, &e))?;
    if let Some(dinfo) = d.info() {
        if dinfo.width as usize != w || dinfo.height as usize != h {
            return Err(Error::Decode(
                "imdecode: JPEG size changed while decoding".into(),
            ));
        }
    }
    Ok(())
}

fn decode_jpeg(data: &[u8], c: usize, to_rgb: bool, buf: Vec<u8>) -> Result<Image> {
    let buf = match baseline_jpeg(data)? {
        Some(f) => {
            let all = Rect {
                x: 0,
                y: 0,
                w: f.width,
                h: f.height,
            };
            match decode_window(&f, all, c, to_rgb, buf)? {
                Ok(img) => return Ok(img),
                Err(buf) => buf,
            }
        }
        None => buf,
    };
    let (mut d, w, h, n_out) = jpeg_start(data, c)?;
    let mut buf = sized(buf, w * h * n_out);
    jpeg_finish(&mut d, data, (w, h), &mut buf)?;
    let data = if n_out == c { buf } else { gray_to_n(&buf, c) };
    let mut img = Image {
        height: h,
        width: w,
        channels: c,
        data,
    };
    if !to_rgb && n_out == 3 {
        swap_rb(&mut img);
    }
    Ok(img)
}

/// `imdecode` straight into `dst`, which must hold exactly the
/// height * width * channels bytes that [`decode_shape`] gives. JPEGs whose
/// decoder output is already the wanted layout (colour to RGB/BGR, gray to
/// gray) are written in place, with no intermediate buffer to zero and
/// copy; other images are decoded and copied. Returns the image's shape.
pub fn imdecode_into(
    data: &[u8],
    flag: i32,
    to_rgb: bool,
    dst: &mut [u8],
) -> Result<(usize, usize, usize)> {
    let c = check_flag(flag)?;
    let n = dst.len();
    let size_err = |shape: (usize, usize, usize)| {
        Error::Decode(format!(
            "imdecode: the image is {}x{}x{}, the output holds {n} bytes",
            shape.0, shape.1, shape.2
        ))
    };
    if let Some(f) = baseline_jpeg(data)? {
        let (w, h) = (f.width, f.height);
        if dst.len() != w * h * c {
            return Err(size_err((h, w, c)));
        }
        if baseline_into(&f, Rect { x: 0, y: 0, w, h }, c, to_rgb, dst)? {
            return Ok((h, w, c));
        }
    }
    if matches!(sniff(data), Some(ImageFormat::Jpeg)) {
        let (mut d, w, h, n_out) = jpeg_start(data, c)?;
        if n_out == c {
            if dst.len() != w * h * c {
                return Err(size_err((h, w, c)));
            }
            jpeg_finish(&mut d, data, (w, h), dst)?;
            if !to_rgb {
                swap_rb_pixels(dst, c);
            }
            return Ok((h, w, c));
        }
    }
    let img = imdecode(data, flag, to_rgb)?;
    if img.data.len() != dst.len() {
        return Err(size_err(img.shape()));
    }
    dst.copy_from_slice(&img.data);
    Ok(img.shape())
}

/// Window `win` of a frame the baseline decoder handles into `out`
/// (win.w * win.h * c bytes), RGB or BGR; false when the decoder gives up on
/// the stream.
fn baseline_into(
    f: &jpeg::Frame<'_>,
    win: Rect,
    c: usize,
    to_rgb: bool,
    out: &mut [u8],
) -> Result<bool> {
    match f.decode(win, c, out) {
        Ok(()) => {}
        // data that ran out is refused (OpenCV and MXNet raise), never
        // handed to the other decoder, which would fill the rest with gray
        Err(jpeg::Bad(m)) if m == jpeg::DATA_ENDS => {
            return Err(Error::Decode(format!(
                "imdecode: corrupt JPEG ({}x{}): {m}",
                f.width, f.height
            )))
        }
        Err(_) => return Ok(false),
    }
    if !to_rgb {
        swap_rb_pixels(out, c);
    }
    Ok(true)
}

/// Window `win` of a frame the baseline decoder handles, into `buf`'s
/// allocation; `Ok(Err(buf))` when the decoder gives up on the stream
/// (another decoder may try), `Err` when the stream is corrupt.
fn decode_window(
    f: &jpeg::Frame<'_>,
    win: Rect,
    c: usize,
    to_rgb: bool,
    buf: Vec<u8>,
) -> Result<std::result::Result<Image, Vec<u8>>> {
    let mut data = sized(buf, win.w * win.h * c);
    if !baseline_into(f, win, c, to_rgb, &mut data)? {
        return Ok(Err(data));
    }
    Ok(Ok(Image {
        height: win.h,
        width: win.w,
        channels: c,
        data,
    }))
}

/// One image's bytes with its headers read: the size is known before any
/// pixel is decoded, so a caller can pick the window it needs first
/// ([`Decoding::window`]: a baseline JPEG then decodes little more than
/// that window).
pub struct Decoding<'a> {
    data: &'a [u8],
    flag: i32,
    to_rgb: bool,
    frame: Option<jpeg::Frame<'a>>,
    pub height: usize,
    pub width: usize,
    pub channels: usize,
}

impl<'a> Decoding<'a> {
    /// Read the headers (as `imdecode(data, flag, to_rgb)` would).
    pub fn new(data: &'a [u8], flag: i32, to_rgb: bool) -> Result<Decoding<'a>> {
        let frame = baseline_jpeg(data)?;
        let (height, width, channels) = match &frame {
            Some(f) => (f.height, f.width, check_flag(flag)?),
            None => decode_shape(data, flag)?,
        };
        Ok(Decoding {
            data,
            flag,
            to_rgb,
            frame,
            height,
            width,
            channels,
        })
    }

    /// The whole image, in `buf`'s allocation.
    pub fn all(self, buf: Vec<u8>) -> Result<Image> {
        let all = Rect {
            x: 0,
            y: 0,
            w: self.width,
            h: self.height,
        };
        Ok(self.window(all, buf)?.0)
    }

    /// The pixels of `win` (clipped to the image) or of a larger region
    /// holding it: returns the image and the region of the full image it
    /// covers (the whole image when the format has no cheaper way).
    pub fn window(self, win: Rect, buf: Vec<u8>) -> Result<(Image, Rect)> {
        let x = win.x.min(self.width - 1);
        let y = win.y.min(self.height - 1);
        let win = Rect {
            x,
            y,
            w: win.w.clamp(1, self.width - x),
            h: win.h.clamp(1, self.height - y),
        };
        let buf = match &self.frame {
            Some(f) => match decode_window(f, win, self.channels, self.to_rgb, buf)? {
                Ok(img) => return Ok((img, win)),
                Err(buf) => buf,
            },
            None => buf,
        };
        let img = imdecode_reuse(self.data, self.flag, self.to_rgb, buf)?;
        let all = Rect {
            x: 0,
            y: 0,
            w: img.width,
            h: img.height,
        };
        Ok((img, all))
    }
}

fn gray_to_n(g: &[u8], c: usize) -> Vec<u8> {
    let mut out = vec![0u8; g.len() * c];
    if c == 3 {
        for (o, &v) in out.chunks_exact_mut(3).zip(g) {
            o.copy_from_slice(&[v, v, v]);
        }
    } else {
        for (o, &v) in out.chunks_exact_mut(c).zip(g) {
            o.fill(v);
        }
    }
    out
}

/// ITU-R 601-2 luma with Pillow's fixed-point rounding.
#[inline]
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 19595 + g as u32 * 38470 + b as u32 * 7471 + 0x8000) >> 16) as u8
}

fn decode_png(data: &[u8], c: usize, to_rgb: bool, buf: Vec<u8>) -> Result<Image> {
    let err = |e: &dyn std::fmt::Debug| {
        Error::Decode(format!(
            "imdecode: invalid PNG ({}): {e:?}",
            describe_start(data)
        ))
    };
    let mut d = zune_png::PngDecoder::new_with_options(ZCursor::new(data), png_options());
    // the size from IHDR first: nothing is read or allocated for an image
    // beyond the pixel limit
    decode_shape(data, if c == 3 { 1 } else { 0 })?;
    d.decode_headers().map_err(|e| err(&e))?;
    let (w, h) = d
        .dimensions()
        .ok_or_else(|| Error::Decode("imdecode: invalid PNG headers".into()))?;
    check_pixels("PNG", w, h)?;
    let cs = d
        .colorspace()
        .ok_or_else(|| Error::Decode("imdecode: invalid PNG colour type".into()))?;
    let n = d
        .output_buffer_size()
        .ok_or_else(|| Error::Decode("imdecode: invalid PNG headers".into()))?;
    let nc = cs.num_components();
    if n != w * h * nc {
        return Err(Error::Decode(format!(
            "imdecode: PNG output of {n} bytes does not match {w}x{h}x{nc}"
        )));
    }
    let mut buf = sized(buf, n);
    d.decode_into(&mut buf).map_err(|e| err(&e))?;
    let px = w * h;
    let mut out = vec![0u8; px * c];
    match (cs, c) {
        (ColorSpace::Luma, 1) => out.copy_from_slice(&buf),
        (ColorSpace::LumaA, 1) => {
            for i in 0..px {
                out[i] = buf[2 * i];
            }
        }
        (ColorSpace::Luma | ColorSpace::LumaA, 3) => {
            for i in 0..px {
                let v = buf[i * nc];
                out[3 * i..3 * i + 3].fill(v);
            }
        }
        (ColorSpace::RGB | ColorSpace::RGBA, 1) => {
            for i in 0..px {
                let p = &buf[i * nc..];
                out[i] = luma(p[0], p[1], p[2]);
            }
        }
        (ColorSpace::RGB | ColorSpace::RGBA, 3) => {
            for i in 0..px {
                let p = &buf[i * nc..i * nc + 3];
                let o = &mut out[3 * i..3 * i + 3];
                if to_rgb {
                    o.copy_from_slice(p);
                } else {
                    o[0] = p[2];
                    o[1] = p[1];
                    o[2] = p[0];
                }
            }
        }
        (cs, _) => {
            return Err(Error::Decode(format!(
                "imdecode: PNG colour space {cs:?} is not supported"
            )))
        }
    }
    Ok(Image {
        height: h,
        width: w,
        channels: c,
        data: out,
    })
}

/// Swap the first and third channel of every pixel (RGB <-> BGR).
pub fn swap_rb(img: &mut Image) {
    swap_rb_pixels(&mut img.data, img.channels);
}

/// [`swap_rb`] on raw HWC pixels of `c` channels.
fn swap_rb_pixels(data: &mut [u8], c: usize) {
    if c >= 3 {
        for p in data.chunks_exact_mut(c) {
            p.swap(0, 2);
        }
    }
}

/// Encode an HWC u8 image (1 to 4 channels, RGB order) as PNG (lossless),
/// for `mx.recordio.pack_img(..., img_fmt='.png')`.
pub fn encode_png(src: ImageView<'_>) -> Result<Vec<u8>> {
    use zune_core::bit_depth::BitDepth;
    use zune_core::options::EncoderOptions;
    check_dims(
        "encode_png",
        src.height,
        src.width,
        src.channels,
        src.data.len(),
    )?;
    if src.height == 0 || src.width == 0 {
        return Err(Error::Shape("encode_png: the image is empty".into()));
    }
    let cs = match src.channels {
        1 => ColorSpace::Luma,
        2 => ColorSpace::LumaA,
        3 => ColorSpace::RGB,
        4 => ColorSpace::RGBA,
        c => {
            return Err(Error::Shape(format!(
                "encode_png: {c} channels cannot be written as PNG (1 to 4)"
            )))
        }
    };
    let opts = EncoderOptions::new(src.width, src.height, cs, BitDepth::Eight);
    let mut enc = zune_png::PngEncoder::new(src.data, opts);
    let mut out: Vec<u8> = Vec::new();
    enc.encode(&mut out)
        .map_err(|e| Error::Io(format!("encode_png: {e:?}")))?;
    Ok(out)
}

// ---------------------------------------------------------------- resizing

/// MXNet / OpenCV interpolation codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    Nearest = 0,
    Bilinear = 1,
    Bicubic = 2,
    Area = 3,
    Lanczos = 4,
}

impl Interp {
    /// Bilinear, bicubic and Lanczos: the convolution filters, which can
    /// resize a window of the output (`Resizer::resize_window`).
    pub fn is_filter(self) -> bool {
        !matches!(self, Interp::Nearest | Interp::Area)
    }

    /// Resolve an MXNet interpolation code for a resize from (src_h, src_w) to
    /// (dst_h, dst_w): 0-4 as is, 9 = bicubic when enlarging, area when
    /// shrinking, bilinear otherwise, 10 = one of 0-4 drawn from `rng`.
    pub fn from_mxnet(
        code: i32,
        src_hw: (usize, usize),
        dst_hw: (usize, usize),
        rng: Option<&mut Rng>,
    ) -> Result<Interp> {
        Ok(match code {
            0 => Interp::Nearest,
            1 => Interp::Bilinear,
            2 => Interp::Bicubic,
            3 => Interp::Area,
            4 => Interp::Lanczos,
            9 => {
                let (sh, sw) = src_hw;
                let (dh, dw) = dst_hw;
                if dh > sh && dw > sw {
                    Interp::Bicubic
                } else if dh < sh && dw < sw {
                    Interp::Area
                } else {
                    Interp::Bilinear
                }
            }
            10 => match rng {
                Some(r) => Interp::from_mxnet(r.below(5) as i32, src_hw, dst_hw, None)?,
                None => {
                    return Err(Error::Param(
                        "interp=10 (random) needs a random generator here".into(),
                    ))
                }
            },
            _ => {
                return Err(Error::Param(format!(
                    "interp={code} is not supported (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos, 9 auto, 10 random)"
                )))
            }
        })
    }
}

fn cubic_075(x: f64) -> f64 {
    // OpenCV's cubic kernel, a = -0.75
    let a = -0.75;
    let x = x.abs();
    if x < 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

fn lanczos4(x: f64) -> f64 {
    fn sinc(x: f64) -> f64 {
        if x == 0.0 {
            1.0
        } else {
            let y = x * std::f64::consts::PI;
            y.sin() / y
        }
    }
    if x.abs() < 4.0 {
        sinc(x) * sinc(x / 4.0)
    } else {
        0.0
    }
}

fn pixel_type(c: usize) -> Result<fir::PixelType> {
    Ok(match c {
        1 => fir::PixelType::U8,
        2 => fir::PixelType::U8x2,
        3 => fir::PixelType::U8x3,
        4 => fir::PixelType::U8x4,
        _ => {
            return Err(Error::Shape(format!(
                "imresize: {c} channels are not supported (1 to 4)"
            )))
        }
    })
}

/// A region of a source image: x0, y0, width, height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: usize,
    pub y: usize,
    pub w: usize,
    pub h: usize,
}

/// A reusable resizer (keeps fast_image_resize's scratch buffers).
#[derive(Default)]
pub struct Resizer {
    inner: fir::Resizer,
}

thread_local! {
    static RESIZER: std::cell::RefCell<Resizer> = std::cell::RefCell::new(Resizer::new());
}

/// Run `f` with this thread's resizer, whose buffers are kept between calls
/// (decode threads and engine workers resize image after image).
pub fn with_resizer<R>(f: impl FnOnce(&mut Resizer) -> R) -> R {
    RESIZER.with(|r| f(&mut r.borrow_mut()))
}

impl Resizer {
    pub fn new() -> Resizer {
        Resizer {
            inner: fir::Resizer::new(),
        }
    }

    /// Resize `rect` of `src` to `dst_w` x `dst_h`, writing HWC u8 into `dst`.
    pub fn resize_into(
        &mut self,
        src: ImageView<'_>,
        rect: Rect,
        dst: &mut [u8],
        dst_w: usize,
        dst_h: usize,
        interp: Interp,
    ) -> Result<()> {
        let c = src.channels;
        check_rect("imresize", &src, rect)?;
        if dst_w == 0 || dst_h == 0 {
            return Err(Error::Param(format!(
                "imresize: output size {dst_w}x{dst_h} must be positive"
            )));
        }
        check_dims("imresize output", dst_h, dst_w, c, dst.len())?;
        if interp == Interp::Nearest {
            nearest(src, rect, dst, dst_w, dst_h);
            return Ok(());
        }
        if interp == Interp::Area {
            area(src, rect, dst, dst_w, dst_h);
            return Ok(());
        }
        let crop = (rect.x as f64, rect.y as f64, rect.w as f64, rect.h as f64);
        self.fir_resize(src, crop, dst, dst_w, dst_h, interp)
    }

    /// The convolution resizes through fast_image_resize, from a (possibly
    /// fractional) source box (left, top, width, height).
    fn fir_resize(
        &mut self,
        src: ImageView<'_>,
        crop: (f64, f64, f64, f64),
        dst: &mut [u8],
        dst_w: usize,
        dst_h: usize,
        interp: Interp,
    ) -> Result<()> {
        let pt = pixel_type(src.channels)?;
        let fe = |e: &dyn std::fmt::Display| Error::Op {
            op: "imresize".into(),
            msg: e.to_string(),
        };
        let src_img = fir::images::ImageRef::new(src.width as u32, src.height as u32, src.data, pt)
            .map_err(|e| fe(&e))?;
        let mut dst_img = fir::images::Image::from_slice_u8(dst_w as u32, dst_h as u32, dst, pt)
            .map_err(|e| fe(&e))?;
        let alg = match interp {
            Interp::Bilinear => fir::ResizeAlg::Interpolation(fir::FilterType::Bilinear),
            Interp::Bicubic => fir::ResizeAlg::Interpolation(fir::FilterType::Custom(
                fir::Filter::new("cubic_a-0.75", cubic_075, 2.0).map_err(|e| fe(&e))?,
            )),
            Interp::Lanczos => fir::ResizeAlg::Interpolation(fir::FilterType::Custom(
                fir::Filter::new("lanczos4", lanczos4, 4.0).map_err(|e| fe(&e))?,
            )),
            Interp::Area => unreachable!(),
            Interp::Nearest => unreachable!(),
        };
        let opts = fir::ResizeOptions::new()
            .resize_alg(alg)
            .use_alpha(false)
            .crop(crop.0, crop.1, crop.2, crop.3);
        self.inner
            .resize(&src_img, &mut dst_img, &opts)
            .map_err(|e| fe(&e))
    }

    /// The window `win` of `src` resized to `full_w` x `full_h`, computed
    /// straight from the source pixels that window needs (a random crop of
    /// a resized image without resizing all of it). The filter taps sit
    /// where a full resize puts them, so when shrinking the result is that
    /// of resizing and then cropping up to rounding (values 1 apart in under
    /// 1% of the pixels: the fixed-point precision is picked from the
    /// coefficients; enlarging differs more and is not what this is for). Only for
    /// the convolution filters (bilinear, bicubic, Lanczos): `None` for
    /// nearest and area.
    pub fn resize_window(
        &mut self,
        src: ImageView<'_>,
        full_w: usize,
        full_h: usize,
        win: Rect,
        interp: Interp,
    ) -> Result<Option<Image>> {
        if !interp.is_filter() {
            return Ok(None);
        }
        let mut out = Image::zeros(win.h.max(1), win.w.max(1), src.channels);
        self.resize_window_into(src, full_w, full_h, win, interp, &mut out.data)?;
        Ok(Some(out))
    }

    /// [`Resizer::resize_window`] writing HWC u8 into `dst` (win.h x win.w);
    /// nearest and area are refused.
    pub fn resize_window_into(
        &mut self,
        src: ImageView<'_>,
        full_w: usize,
        full_h: usize,
        win: Rect,
        interp: Interp,
        dst: &mut [u8],
    ) -> Result<()> {
        let all = Rect {
            x: 0,
            y: 0,
            w: src.width,
            h: src.height,
        };
        self.resize_window_part(
            src,
            all,
            (src.width, src.height),
            (full_w, full_h),
            win,
            interp,
            dst,
        )
    }

    /// [`Resizer::resize_window_into`] from a part of the source image:
    /// `src` holds region `at` of a `src_full` (w, h) image. The result is
    /// that of the whole source when `src` reaches the filter's support
    /// (a few pixels) beyond the window's source box, or the image edge.
    #[allow(clippy::too_many_arguments)]
    pub fn resize_window_part(
        &mut self,
        src: ImageView<'_>,
        at: Rect,
        src_full: (usize, usize),
        (full_w, full_h): (usize, usize),
        win: Rect,
        interp: Interp,
        dst: &mut [u8],
    ) -> Result<()> {
        if !interp.is_filter() {
            return Err(Error::Param(
                "imresize: a window resize needs bilinear, bicubic or Lanczos".into(),
            ));
        }
        check_dims(
            "imresize",
            src.height,
            src.width,
            src.channels,
            src.data.len(),
        )?;
        if full_w == 0 || full_h == 0 || win.w == 0 || win.h == 0 {
            return Err(Error::Param(format!(
                "imresize: output size {full_w}x{full_h} and window {}x{} must be positive",
                win.w, win.h
            )));
        }
        if win.x + win.w > full_w || win.y + win.h > full_h {
            return Err(Error::Shape(format!(
                "imresize: window {win:?} is outside the {full_w}x{full_h} output"
            )));
        }
        if (at.w, at.h) != (src.width, src.height)
            || at.x + at.w > src_full.0
            || at.y + at.h > src_full.1
        {
            return Err(Error::Shape(format!(
                "imresize: a {}x{} part at {at:?} of a {}x{} image",
                src.width, src.height, src_full.0, src_full.1
            )));
        }
        let sx = src_full.0 as f64 / full_w as f64;
        let sy = src_full.1 as f64 / full_h as f64;
        // (clamped: rounding may put the far edge a hair past the image)
        let (left, top) = (
            win.x as f64 * sx - at.x as f64,
            win.y as f64 * sy - at.y as f64,
        );
        if left < 0.0 || top < 0.0 {
            return Err(Error::Shape(format!(
                "imresize: the part at {at:?} does not hold the window {win:?}'s source"
            )));
        }
        let crop = (
            left,
            top,
            (win.w as f64 * sx).min(src.width as f64 - left),
            (win.h as f64 * sy).min(src.height as f64 - top),
        );
        check_dims("imresize output", win.h, win.w, src.channels, dst.len())?;
        self.fir_resize(src, crop, dst, win.w, win.h, interp)
    }

    /// Resize a region into a new image.
    pub fn resize(
        &mut self,
        src: ImageView<'_>,
        rect: Rect,
        dst_w: usize,
        dst_h: usize,
        interp: Interp,
    ) -> Result<Image> {
        let mut out = Image::zeros(dst_h, dst_w, src.channels);
        self.resize_into(src, rect, &mut out.data, dst_w, dst_h, interp)?;
        Ok(out)
    }
}

/// The region of a `src` (w, h) image that resizing it to `full` (w, h)
/// and keeping window `win` reads: the window's source box and the
/// interpolation filter's support around it, clipped to the image.
pub fn window_source(src: (usize, usize), full: (usize, usize), win: Rect, interp: Interp) -> Rect {
    let (sx, sy) = (src.0 as f64 / full.0 as f64, src.1 as f64 / full.1 as f64);
    // taps reach `support` source pixels past a box edge (kernels are not
    // scaled: see `Interp`); one more for rounding
    let support = match interp {
        Interp::Bicubic => 2.0,
        Interp::Lanczos => 4.0,
        _ => 1.0,
    } + 1.0;
    let x0 = (win.x as f64 * sx - support).floor().max(0.0) as usize;
    let y0 = (win.y as f64 * sy - support).floor().max(0.0) as usize;
    let x1 = (((win.x + win.w) as f64 * sx + support).ceil() as usize).min(src.0);
    let y1 = (((win.y + win.h) as f64 * sy + support).ceil() as usize).min(src.1);
    Rect {
        x: x0.min(src.0 - 1),
        y: y0.min(src.1 - 1),
        w: x1.saturating_sub(x0).max(1),
        h: y1.saturating_sub(y0).max(1),
    }
}

fn check_rect(op: &str, src: &ImageView<'_>, r: Rect) -> Result<()> {
    check_dims(op, src.height, src.width, src.channels, src.data.len())?;
    if r.w == 0 || r.h == 0 || r.x + r.w > src.width || r.y + r.h > src.height {
        return Err(Error::Shape(format!(
            "{op}: region (x={}, y={}, w={}, h={}) is empty or outside the {}x{} (w x h) image",
            r.x, r.y, r.w, r.h, src.width, src.height
        )));
    }
    Ok(())
}

/// OpenCV INTER_NEAREST: source index = floor(dst_index * src / dst).
fn nearest(src: ImageView<'_>, rect: Rect, dst: &mut [u8], dw: usize, dh: usize) {
    let c = src.channels;
    let xs: Vec<usize> = (0..dw)
        .map(|x| {
            (((x as f64) * rect.w as f64 / dw as f64).floor() as usize).min(rect.w - 1) + rect.x
        })
        .collect();
    for y in 0..dh {
        let sy =
            (((y as f64) * rect.h as f64 / dh as f64).floor() as usize).min(rect.h - 1) + rect.y;
        let srow = &src.data[sy * src.width * c..(sy + 1) * src.width * c];
        let drow = &mut dst[y * dw * c..(y + 1) * dw * c];
        for (x, &sx) in xs.iter().enumerate() {
            drow[x * c..x * c + c].copy_from_slice(&srow[sx * c..sx * c + c]);
        }
    }
}

/// Per-axis taps of OpenCV's INTER_AREA: (source index, weight) lists.
/// Shrinking (src >= dst): exact area overlap of each output cell, divided
/// by the cell size. Enlarging: two taps where an output pixel straddles a
/// source boundary (OpenCV's `fx = (dx+1) - (sx+1)/scale` rule), else one.
fn area_taps(src: usize, dst: usize, shrink: bool) -> Vec<Vec<(usize, f32)>> {
    let scale = src as f64 / dst as f64;
    let mut out = Vec::with_capacity(dst);
    for d in 0..dst {
        let mut taps = Vec::with_capacity(4);
        if shrink {
            let fs1 = d as f64 * scale;
            let fs2 = fs1 + scale;
            let cell = scale.min(src as f64 - fs1);
            let s2 = (fs2.floor() as usize).min(src - 1);
            let s1 = (fs1.ceil() as usize).min(s2);
            if s1 as f64 - fs1 > 1e-3 && s1 >= 1 {
                taps.push((s1 - 1, ((s1 as f64 - fs1) / cell) as f32));
            }
            for s in s1..s2 {
                taps.push((s, (1.0 / cell) as f32));
            }
            if fs2 - s2 as f64 > 1e-3 {
                taps.push((s2, (((fs2 - s2 as f64).min(1.0)).min(cell) / cell) as f32));
            }
        } else {
            let inv = dst as f64 / src as f64;
            let mut s = (d as f64 * scale).floor() as isize;
            let mut f = (d as f64 + 1.0) - (s as f64 + 1.0) * inv;
            f = if f <= 0.0 { 0.0 } else { f - f.floor() };
            if s < 0 {
                s = 0;
                f = 0.0;
            }
            if s as usize >= src - 1 {
                s = src as isize - 1;
                f = 0.0;
            }
            let s = s as usize;
            taps.push((s, (1.0 - f) as f32));
            if f > 0.0 {
                taps.push((s + 1, f as f32));
            }
        }
        out.push(taps);
    }
    out
}

/// OpenCV INTER_AREA (MXNet interp=3) on the region `rect` of `src`: area
/// averaging when both sides shrink, OpenCV's area-style linear weights
/// otherwise; float accumulation, rounded to nearest.
fn area(src: ImageView<'_>, rect: Rect, dst: &mut [u8], dw: usize, dh: usize) {
    let c = src.channels;
    let shrink = dw <= rect.w && dh <= rect.h;
    let xt = area_taps(rect.w, dw, shrink);
    let yt = area_taps(rect.h, dh, shrink);
    // horizontal pass over the rows of the region
    let mut rows = vec![0f32; rect.h * dw * c];
    for y in 0..rect.h {
        let srow = &src.data[((rect.y + y) * src.width + rect.x) * c..][..rect.w * c];
        let orow = &mut rows[y * dw * c..(y + 1) * dw * c];
        for (x, taps) in xt.iter().enumerate() {
            for k in 0..c {
                let mut acc = 0f32;
                for &(s, wgt) in taps {
                    acc += srow[s * c + k] as f32 * wgt;
                }
                orow[x * c + k] = acc;
            }
        }
    }
    // vertical pass
    let mut acc = vec![0f32; dw * c];
    for (y, taps) in yt.iter().enumerate() {
        acc.fill(0.0);
        for &(s, wgt) in taps {
            let r = &rows[s * dw * c..(s + 1) * dw * c];
            for (a, v) in acc.iter_mut().zip(r) {
                *a += v * wgt;
            }
        }
        for (o, a) in dst[y * dw * c..(y + 1) * dw * c].iter_mut().zip(&acc) {
            *o = a.round_ties_even().clamp(0.0, 255.0) as u8;
        }
    }
}

/// `mx.image.imresize(src, w, h, interp)`.
pub fn imresize(src: ImageView<'_>, w: usize, h: usize, interp: i32) -> Result<Image> {
    let it = Interp::from_mxnet(interp, (src.height, src.width), (h, w), None)?;
    let full = Rect {
        x: 0,
        y: 0,
        w: src.width,
        h: src.height,
    };
    with_resizer(|r| r.resize(src, full, w, h, it))
}

/// The (height, width) `resize_short` produces: the shorter side becomes
/// `size`, the other scales with integer division as MXNet does.
pub fn short_side_size(h: usize, w: usize, size: usize) -> (usize, usize) {
    if h > w {
        (size * h / w.max(1), size)
    } else {
        (size, size * w / h.max(1))
    }
}

/// `mx.image.resize_short(src, size, interp)` (MXNet's default interp is 2).
pub fn resize_short(src: ImageView<'_>, size: usize, interp: i32) -> Result<Image> {
    let (nh, nw) = short_side_size(src.height, src.width, size);
    imresize(src, nw, nh, interp)
}

/// `mx.image.scale_down(src_size, size)`: the largest (w, h) with the aspect
/// of `size` that fits in `src_size`; sizes are (w, h).
pub fn scale_down(src_size: (usize, usize), size: (usize, usize)) -> (usize, usize) {
    let (mut w, mut h) = (size.0 as f64, size.1 as f64);
    let (sw, sh) = (src_size.0 as f64, src_size.1 as f64);
    if sh < h {
        w = w * sh / h;
        h = sh;
    }
    if sw < w {
        h = h * sw / w;
        w = sw;
    }
    (w as usize, h as usize)
}

/// `mx.image.fixed_crop`: crop `rect`, then resize to `size` (w, h) if given and different.
pub fn fixed_crop(
    src: ImageView<'_>,
    rect: Rect,
    size: Option<(usize, usize)>,
    interp: i32,
) -> Result<Image> {
    check_rect("fixed_crop", &src, rect)?;
    match size {
        Some((w, h)) if (w, h) != (rect.w, rect.h) => {
            let it = Interp::from_mxnet(interp, (rect.h, rect.w), (h, w), None)?;
            with_resizer(|r| r.resize(src, rect, w, h, it))
        }
        _ => Ok(crop(src, rect)),
    }
}

fn crop(src: ImageView<'_>, r: Rect) -> Image {
    let c = src.channels;
    let mut out = Vec::with_capacity(r.w * r.h * c);
    for y in r.y..r.y + r.h {
        let row = (y * src.width + r.x) * c;
        out.extend_from_slice(&src.data[row..row + r.w * c]);
    }
    Image {
        height: r.h,
        width: r.w,
        channels: c,
        data: out,
    }
}

/// The region `center_crop` takes for an output of `size` (w, h).
pub fn center_crop_rect(src_w: usize, src_h: usize, size: (usize, usize)) -> Rect {
    let (nw, nh) = scale_down((src_w, src_h), size);
    Rect {
        x: (src_w - nw) / 2,
        y: (src_h - nh) / 2,
        w: nw.max(1),
        h: nh.max(1),
    }
}

/// The region `random_crop` takes for an output of `size` (w, h).
pub fn random_crop_rect(src_w: usize, src_h: usize, size: (usize, usize), rng: &mut Rng) -> Rect {
    let (nw, nh) = scale_down((src_w, src_h), size);
    let x = rng.below((src_w - nw) as u64 + 1) as usize;
    let y = rng.below((src_h - nh) as u64 + 1) as usize;
    Rect {
        x,
        y,
        w: nw.max(1),
        h: nh.max(1),
    }
}

/// `mx.image.center_crop(src, size, interp)`: the image and the region used.
pub fn center_crop(src: ImageView<'_>, size: (usize, usize), interp: i32) -> Result<(Image, Rect)> {
    let r = center_crop_rect(src.width, src.height, size);
    Ok((fixed_crop(src, r, Some(size), interp)?, r))
}

/// `mx.image.random_crop(src, size, interp)`.
pub fn random_crop(
    src: ImageView<'_>,
    size: (usize, usize),
    interp: i32,
    rng: &mut Rng,
) -> Result<(Image, Rect)> {
    let r = random_crop_rect(src.width, src.height, size, rng);
    Ok((fixed_crop(src, r, Some(size), interp)?, r))
}

/// Mirror left-right in place.
pub fn flip_horizontal(img: &mut Image) {
    let (w, c) = (img.width, img.channels);
    for row in img.data.chunks_exact_mut(w * c) {
        let (mut a, mut b) = (0usize, w.saturating_sub(1));
        while a < b {
            for k in 0..c {
                row.swap(a * c + k, b * c + k);
            }
            a += 1;
            b -= 1;
        }
    }
}

// ------------------------------------------------------ layout conversion

/// Normalisation applied while writing CHW: `out = (x - mean[c]) * scale / std[c]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalize {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    pub scale: f32,
}

impl Normalize {
    pub fn identity(c: usize) -> Normalize {
        Normalize {
            mean: vec![0.0; c],
            std: vec![1.0; c],
            scale: 1.0,
        }
    }
    fn check(&self, c: usize) -> Result<()> {
        if self.mean.len() != c || self.std.len() != c {
            return Err(Error::Param(format!(
                "normalize: mean has {} and std has {} values but the image has {c} channels",
                self.mean.len(),
                self.std.len()
            )));
        }
        if self.std.contains(&0.0) {
            return Err(Error::Param("normalize: std may not contain 0".into()));
        }
        Ok(())
    }
}

/// Crop `rect` of an HWC u8 image, optionally mirror it, and write it as CHW
/// f32 normalised straight into `dst` (length c * rect.h * rect.w).
pub fn write_chw_f32(
    src: ImageView<'_>,
    rect: Rect,
    mirror: bool,
    norm: &Normalize,
    dst: &mut [f32],
) -> Result<()> {
    let c = src.channels;
    check_rect("to_chw", &src, rect)?;
    norm.check(c)?;
    let plane = rect.w * rect.h;
    check_dims("to_chw output", rect.h, rect.w, c, dst.len())?;
    let mul: Vec<f32> = norm.std.iter().map(|s| norm.scale / s).collect();
    let add: Vec<f32> = (0..c).map(|k| -norm.mean[k] * mul[k]).collect();
    if c == 3 {
        let (o0, rest) = dst.split_at_mut(plane);
        let (o1, o2) = rest.split_at_mut(plane);
        let (mul, add) = ([mul[0], mul[1], mul[2]], [add[0], add[1], add[2]]);
        for y in 0..rect.h {
            let row = &src.data[((rect.y + y) * src.width + rect.x) * 3..][..rect.w * 3];
            let at = y * rect.w..(y + 1) * rect.w;
            let rows = [&mut o0[at.clone()], &mut o1[at.clone()], &mut o2[at]];
            rgb_row_to_planes::<false>(row, mirror, mul, add, rows);
        }
        return Ok(());
    }
    for y in 0..rect.h {
        let row = &src.data[((rect.y + y) * src.width + rect.x) * c..][..rect.w * c];
        for k in 0..c {
            let out = &mut dst[k * plane + y * rect.w..][..rect.w];
            let (m, a) = (mul[k], add[k]);
            if mirror {
                for (x, o) in out.iter_mut().enumerate() {
                    *o = row[(rect.w - 1 - x) * c + k] as f32 * m + a;
                }
            } else {
                for (x, o) in out.iter_mut().enumerate() {
                    *o = row[x * c + k] as f32 * m + a;
                }
            }
        }
    }
    Ok(())
}

/// One row of RGB pixels (HWC u8) into the rows of three planes:
/// `out[k][x] = px[x][k] * mul[k] + add[k]`, or with `DIV`
/// `(px[x][k] - mul[k]) / add[k]` (color_normalize's subtraction and true
/// division), pixels taken right to left when `mirror`. The same two
/// roundings on every path, so the AVX2 loop and the scalar loop give the
/// same bits.
fn rgb_row_to_planes<const DIV: bool>(
    row: &[u8],
    mirror: bool,
    mul: [f32; 3],
    add: [f32; 3],
    mut out: [&mut [f32]; 3],
) {
    let w = out[0].len();
    // the AVX2 loop reads and writes by raw pointers within these lengths
    assert!(row.len() == 3 * w && out.iter().all(|o| o.len() == w));
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernels::wide_cpu() {
        // SAFETY: the CPU has AVX2; the lengths are checked above.
        done = unsafe { rgb_row_avx2::<DIV>(row, mirror, mul, add, &mut out) };
    }
    let f = |v: u8, k: usize| {
        if DIV {
            (v as f32 - mul[k]) / add[k]
        } else {
            v as f32 * mul[k] + add[k]
        }
    };
    let [o0, o1, o2] = out;
    for x in done..w {
        let sx = if mirror { w - 1 - x } else { x };
        let p = &row[3 * sx..3 * sx + 3];
        o0[x] = f(p[0], 0);
        o1[x] = f(p[1], 1);
        o2[x] = f(p[2], 2);
    }
}

/// [`rgb_row_to_planes`] for whole groups of 8 pixels (24 bytes: two
/// overlapping 16-byte loads, one byte shuffle per channel); returns how
/// many outputs it wrote.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rgb_row_avx2<const DIV: bool>(
    row: &[u8],
    mirror: bool,
    mul: [f32; 3],
    add: [f32; 3],
    out: &mut [&mut [f32]; 3],
) -> usize {
    use std::arch::x86_64::*;
    let w = out[0].len();
    let groups = w / 8;
    // lane i takes pixel i (7 - i mirrored): byte 3 * pixel + k of the
    // group, from the first load (bytes 0-15) or the second (bytes 8-23)
    let masks = |k: usize| {
        let (mut lo, mut hi) = ([-128i8; 16], [-128i8; 16]);
        for i in 0..8 {
            let px = if mirror { 7 - i } else { i };
            let b = 3 * px + k;
            if b < 16 {
                lo[i] = b as i8;
            } else {
                hi[i] = (b - 8) as i8;
            }
        }
        (
            _mm_loadu_si128(lo.as_ptr() as *const __m128i),
            _mm_loadu_si128(hi.as_ptr() as *const __m128i),
        )
    };
    let m = [masks(0), masks(1), masks(2)];
    let vm = mul.map(|v| _mm256_set1_ps(v));
    let va = add.map(|v| _mm256_set1_ps(v));
    for g in 0..groups {
        let x0 = g * 8;
        let s = if mirror { w - 8 - x0 } else { x0 };
        let p = row.as_ptr().add(3 * s);
        let lo = _mm_loadu_si128(p as *const __m128i);
        let hi = _mm_loadu_si128(p.add(8) as *const __m128i);
        for k in 0..3 {
            let b = _mm_or_si128(_mm_shuffle_epi8(lo, m[k].0), _mm_shuffle_epi8(hi, m[k].1));
            let f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
            let v = if DIV {
                _mm256_div_ps(_mm256_sub_ps(f, vm[k]), va[k])
            } else {
                _mm256_add_ps(_mm256_mul_ps(f, vm[k]), va[k])
            };
            _mm256_storeu_ps(out[k].as_mut_ptr().add(x0), v);
        }
    }
    groups * 8
}

/// Mirror an image left-right: row by row, `dst` holds the `px`-byte
/// pixels of `src` in reverse order (`src` and `dst` are whole rows of
/// `width` pixels).
pub fn flip_lr(src: &[u8], dst: &mut [u8], width: usize, px: usize) {
    // inlined with a constant `px` below, each pixel copy is a move, not a
    // memcpy call
    #[inline(always)]
    fn go(src: &[u8], dst: &mut [u8], width: usize, px: usize) {
        let row = width * px;
        for (s, d) in src.chunks_exact(row).zip(dst.chunks_exact_mut(row)) {
            for (o, i) in d.chunks_exact_mut(px).zip(s.chunks_exact(px).rev()) {
                o.copy_from_slice(i);
            }
        }
    }
    debug_assert_eq!(src.len(), dst.len());
    if width == 0 || px == 0 {
        return;
    }
    match px {
        1 => go(src, dst, width, 1),
        2 => go(src, dst, width, 2),
        3 => go(src, dst, width, 3),
        4 => go(src, dst, width, 4),
        8 => go(src, dst, width, 8),
        12 => go(src, dst, width, 12),
        16 => go(src, dst, width, 16),
        _ => go(src, dst, width, px),
    }
}

/// A uint8 HWC image as float32, mirrored left-right when `mirror`, then
/// normalised as [`normalize_hwc`] when `norm` is (mean, std): the values
/// of flip, cast and color_normalize applied one after another. Written
/// HWC, or with `chw` as c planes of height x width.
pub fn u8_to_f32(
    src: &[u8],
    width: usize,
    c: usize,
    mirror: bool,
    norm: Option<(&[f32], &[f32])>,
    chw: bool,
    dst: &mut [f32],
) {
    debug_assert_eq!(src.len(), dst.len());
    let row = width * c;
    if row == 0 {
        return;
    }
    let plane = src.len() / c;
    if chw && c == 3 {
        let (mean, std) = norm.map_or(([0f32; 3], [1f32; 3]), |(m, s)| {
            ([m[0], m[1], m[2]], [s[0], s[1], s[2]])
        });
        let (o0, rest) = dst.split_at_mut(plane);
        let (o1, o2) = rest.split_at_mut(plane);
        for (y, s) in src.chunks_exact(row).enumerate() {
            let at = y * width..(y + 1) * width;
            let rows = [&mut o0[at.clone()], &mut o1[at.clone()], &mut o2[at]];
            // (v - 0) / 1 is v: the same values without normalisation
            rgb_row_to_planes::<true>(s, mirror, mean, std, rows);
        }
        return;
    }
    if chw {
        let mut hwc = vec![0f32; src.len()];
        u8_to_f32(src, width, c, mirror, norm, false, &mut hwc);
        hwc_to_chw(&hwc, c, dst, |v| v);
        return;
    }
    for (s, d) in src.chunks_exact(row).zip(dst.chunks_exact_mut(row)) {
        if mirror {
            for (o, i) in d.chunks_exact_mut(c).zip(s.chunks_exact(c).rev()) {
                for (a, &b) in o.iter_mut().zip(i) {
                    *a = b as f32;
                }
            }
        } else {
            for (a, &b) in d.iter_mut().zip(s) {
                *a = b as f32;
            }
        }
        if let Some((mean, std)) = norm {
            normalize_hwc(d, mean, std);
        }
    }
}

/// `(x - mean[k]) / std[k]` for every value of channel k of an HWC float
/// image, in blocks of 8 pixels against repeated mean/std patterns so the
/// loop runs on vector lanes (a true division, as MXNet's color_normalize).
pub fn normalize_hwc(data: &mut [f32], mean: &[f32], std: &[f32]) {
    let c = mean.len();
    debug_assert!(c > 0 && std.len() == c && data.len().is_multiple_of(c));
    const PX: usize = 8;
    let mut rest = data;
    if c <= 4 {
        let mut m = [0f32; 4 * PX];
        let mut d = [1f32; 4 * PX];
        for i in 0..c * PX {
            m[i] = mean[i % c];
            d[i] = std[i % c];
        }
        let (m, d) = (&m[..c * PX], &d[..c * PX]);
        let mut blocks = rest.chunks_exact_mut(c * PX);
        for b in &mut blocks {
            for ((v, a), s) in b.iter_mut().zip(m).zip(d) {
                *v = (*v - a) / s;
            }
        }
        rest = blocks.into_remainder();
    }
    // the last pixels, or all of them with more than 4 channels
    for px in rest.chunks_exact_mut(c) {
        for k in 0..c {
            px[k] = (px[k] - mean[k]) / std[k];
        }
    }
}

/// HWC (any element type) to CHW float32: `dst[k][p] = f(src[p][k])`,
/// reading the pixels once in order.
pub fn hwc_to_chw<T: Copy>(src: &[T], c: usize, dst: &mut [f32], f: impl Fn(T) -> f32) {
    let plane = src.len() / c.max(1);
    debug_assert!(dst.len() == src.len());
    if c == 3 {
        let (d0, rest) = dst.split_at_mut(plane);
        let (d1, d2) = rest.split_at_mut(plane);
        for (((px, a), b), e) in src.chunks_exact(3).zip(d0).zip(d1).zip(d2) {
            *a = f(px[0]);
            *b = f(px[1]);
            *e = f(px[2]);
        }
    } else {
        for (p, px) in src.chunks_exact(c).enumerate() {
            for (k, &v) in px.iter().enumerate() {
                dst[k * plane + p] = f(v);
            }
        }
    }
}

/// Like `write_chw_f32` but keeps u8 values (ImageRecordUInt8Iter).
pub fn write_chw_u8(src: ImageView<'_>, rect: Rect, mirror: bool, dst: &mut [u8]) -> Result<()> {
    let c = src.channels;
    check_rect("to_chw", &src, rect)?;
    let plane = rect.w * rect.h;
    check_dims("to_chw output", rect.h, rect.w, c, dst.len())?;
    for y in 0..rect.h {
        let row = &src.data[((rect.y + y) * src.width + rect.x) * c..][..rect.w * c];
        for k in 0..c {
            let out = &mut dst[k * plane + y * rect.w..][..rect.w];
            for (x, o) in out.iter_mut().enumerate() {
                let sx = if mirror { rect.w - 1 - x } else { x };
                *o = row[sx * c + k];
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------ colour jitter
// These work on HWC f32 RGB images (values 0-255), like MXNet's augmenters
// which run after CastAug.

const GRAY_COEF: [f32; 3] = [0.299, 0.587, 0.114];

fn check_rgb(op: &str, data: &[f32]) -> Result<()> {
    if !data.len().is_multiple_of(3) {
        return Err(Error::Shape(format!(
            "{op}: expected an HWC image with 3 channels, got {} values",
            data.len()
        )));
    }
    Ok(())
}

/// BrightnessJitterAug with a drawn `alpha` (= 1 + U(-b, b)): `src *= alpha`.
pub fn adjust_brightness(data: &mut [f32], alpha: f32) {
    for v in data {
        *v *= alpha;
    }
}

/// ContrastJitterAug: `src = src * alpha + mean_gray * (1 - alpha)`, where
/// mean_gray is the mean of the ITU-R 601 gray image.
pub fn adjust_contrast(data: &mut [f32], alpha: f32) -> Result<()> {
    check_rgb("ContrastJitterAug", data)?;
    let n = (data.len() / 3).max(1) as f64;
    let sum: f64 = data
        .chunks_exact(3)
        .map(|p| (p[0] * GRAY_COEF[0] + p[1] * GRAY_COEF[1] + p[2] * GRAY_COEF[2]) as f64)
        .sum();
    let gray = ((1.0 - alpha as f64) * sum / n) as f32;
    for v in data {
        *v = *v * alpha + gray;
    }
    Ok(())
}

/// SaturationJitterAug: each pixel moves towards its own gray value.
pub fn adjust_saturation(data: &mut [f32], alpha: f32) -> Result<()> {
    check_rgb("SaturationJitterAug", data)?;
    for p in data.chunks_exact_mut(3) {
        let g = (p[0] * GRAY_COEF[0] + p[1] * GRAY_COEF[1] + p[2] * GRAY_COEF[2]) * (1.0 - alpha);
        for v in p {
            *v = *v * alpha + g;
        }
    }
    Ok(())
}

/// HueJitterAug: rotate the hue by `alpha * pi` in YIQ space (MXNet's matrices).
pub fn adjust_hue(data: &mut [f32], alpha: f32) -> Result<()> {
    check_rgb("HueJitterAug", data)?;
    let tyiq = [
        [0.299f64, 0.587, 0.114],
        [0.596, -0.274, -0.321],
        [0.211, -0.523, 0.311],
    ];
    let ityiq = [
        [1.0f64, 0.956, 0.621],
        [1.0, -0.272, -0.647],
        [1.0, -1.107, 1.705],
    ];
    let u = (alpha as f64 * std::f64::consts::PI).cos();
    let w = (alpha as f64 * std::f64::consts::PI).sin();
    let bt = [[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]];
    let mm = |a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]| {
        let mut r = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                r[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
            }
        }
        r
    };
    // MXNet: t = dot(dot(ityiq, bt), tyiq).T ; src = dot(src, t)
    let t = mm(&mm(&ityiq, &bt), &tyiq);
    let mut m = [[0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = t[j][i] as f32;
        }
    }
    for p in data.chunks_exact_mut(3) {
        let (r, g, b) = (p[0], p[1], p[2]);
        for j in 0..3 {
            p[j] = r * m[0][j] + g * m[1][j] + b * m[2][j];
        }
    }
    Ok(())
}

/// LightingAug: add `eigvec . (alpha * eigval)` to every pixel.
pub fn adjust_lighting(
    data: &mut [f32],
    alpha: [f32; 3],
    eigval: [f32; 3],
    eigvec: [[f32; 3]; 3],
) -> Result<()> {
    check_rgb("LightingAug", data)?;
    let mut rgb = [0f32; 3];
    for (i, r) in rgb.iter_mut().enumerate() {
        *r = (0..3).map(|j| eigvec[i][j] * alpha[j] * eigval[j]).sum();
    }
    for p in data.chunks_exact_mut(3) {
        for j in 0..3 {
            p[j] += rgb[j];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn data_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/images")
    }

    fn load(name: &str) -> Vec<u8> {
        std::fs::read(data_dir().join(name)).unwrap()
    }

    /// The JPEG with its frame header claiming `w` x `h`.
    fn patch_size(mut b: Vec<u8>, w: u16, h: u16) -> Vec<u8> {
        let mut p = 2;
        loop {
            let len = u16::from_be_bytes([b[p + 2], b[p + 3]]) as usize;
            if matches!(b[p + 1], 0xC0..=0xC2) {
                b[p + 5..p + 7].copy_from_slice(&h.to_be_bytes());
                b[p + 7..p + 9].copy_from_slice(&w.to_be_bytes());
                return b;
            }
            p += 2 + len;
        }
    }

    #[test]
    fn bombs_and_starved_jpegs_are_refused() {
        let good = load("chelsea_160x107_thumb.jpg");
        let msg = |r: Result<Image>| r.err().map(|e| e.message()).unwrap_or_default();
        // beyond the pixel limit: refused from the header
        let bomb = patch_size(good.clone(), 16384, 16384);
        let e = decode_shape(&bomb, 1).unwrap_err().message();
        assert!(
            e.contains("exceeds the limit") && e.contains("OXNET_IMAGE_MAX_PIXELS"),
            "{e}"
        );
        assert!(msg(imdecode(&bomb, 1, true)).contains("exceeds the limit"));
        // within the limit but far more blocks than the data has bits
        let big = patch_size(good.clone(), 6000, 6000);
        let e = decode_shape(&big, 1).unwrap_err().message();
        assert!(e.contains("end long before"), "{e}");
        // twice the size: the data runs out while decoding
        let twice = patch_size(good.clone(), 320, 214);
        assert!(decode_shape(&twice, 1).is_ok());
        let e = msg(imdecode(&twice, 1, true));
        assert!(e.contains(jpeg::DATA_ENDS), "{e}");
        let mut out = vec![0u8; 320 * 214 * 3];
        let e = imdecode_into(&twice, 1, true, &mut out)
            .unwrap_err()
            .message();
        assert!(e.contains(jpeg::DATA_ENDS), "{e}");
        assert!(imdecode(&good, 1, true).is_ok());
    }

    struct Ref {
        name: String,
        w: usize,
        h: usize,
        rgb_mean: Vec<f64>,
        rgb: Vec<u8>,
        gray_mean: f64,
        gray: Vec<u8>,
    }

    fn refs() -> (usize, Vec<Ref>) {
        let text = std::fs::read_to_string(data_dir().join("expected.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let n = v["n_samples"].as_u64().unwrap() as usize;
        let mut out = Vec::new();
        for (name, r) in v["images"].as_object().unwrap() {
            let u8s = |k: &str| {
                r[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u8)
                    .collect::<Vec<_>>()
            };
            let f64s = |k: &str| {
                r[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect::<Vec<_>>()
            };
            out.push(Ref {
                name: name.clone(),
                w: r["width"].as_u64().unwrap() as usize,
                h: r["height"].as_u64().unwrap() as usize,
                rgb_mean: f64s("rgb_mean"),
                rgb: u8s("rgb_samples"),
                gray_mean: f64s("gray_mean")[0],
                gray: u8s("gray_samples"),
            });
        }
        (n, out)
    }

    fn samples(img: &Image, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for k in 0..n {
            let y = (k * 7919) % img.height;
            let x = (k * 104729) % img.width;
            let b = (y * img.width + x) * img.channels;
            out.extend_from_slice(&img.data[b..b + img.channels]);
        }
        out
    }

    fn means(img: &Image) -> Vec<f64> {
        let c = img.channels;
        (0..c)
            .map(|k| {
                img.data
                    .iter()
                    .skip(k)
                    .step_by(c)
                    .map(|&v| v as f64)
                    .sum::<f64>()
                    / (img.data.len() / c) as f64
            })
            .collect()
    }

    fn max_diff(a: &[u8], b: &[u8]) -> (u8, f64) {
        assert_eq!(a.len(), b.len());
        let d: Vec<u8> = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).collect();
        (
            *d.iter().max().unwrap(),
            d.iter().map(|&x| x as f64).sum::<f64>() / d.len() as f64,
        )
    }

    #[test]
    fn normalize_and_chw_match_per_value_formula() {
        for c in [1, 3, 4, 5] {
            let px = 29; // 3 blocks of 8 pixels and a remainder
            let src: Vec<f32> = (0..px * c).map(|i| (i * 7 % 255) as f32).collect();
            let mean: Vec<f32> = (0..c).map(|k| 100.0 + 3.5 * k as f32).collect();
            let std: Vec<f32> = (0..c).map(|k| 57.0 + 1.25 * k as f32).collect();
            let mut got = src.clone();
            normalize_hwc(&mut got, &mean, &std);
            for (i, (&g, &v)) in got.iter().zip(&src).enumerate() {
                assert_eq!(g, (v - mean[i % c]) / std[i % c], "c {c} i {i}");
            }
            let mut chw = vec![0f32; src.len()];
            hwc_to_chw(&src, c, &mut chw, |v| v + 0.5);
            for p in 0..px {
                for k in 0..c {
                    assert_eq!(chw[k * px + p], src[p * c + k] + 0.5);
                }
            }
        }
    }

    #[test]
    fn flip_and_float_tail_match_per_pixel_formulas() {
        // widths of 8 pixels and more take the AVX2 rows (with a tail)
        for (w, h) in [(1, 1), (5, 3), (17, 2), (224, 3)] {
            for px in [1, 2, 3, 4, 5, 12] {
                let src: Vec<u8> = (0..w * h * px).map(|i| (i * 37 % 251) as u8).collect();
                let mut got = vec![0u8; src.len()];
                flip_lr(&src, &mut got, w, px);
                for y in 0..h {
                    for x in 0..w {
                        let (o, i) = ((y * w + x) * px, (y * w + w - 1 - x) * px);
                        assert_eq!(got[o..o + px], src[i..i + px], "{w}x{h} px {px}");
                    }
                }
            }
            for c in [1, 3, 4] {
                let src: Vec<u8> = (0..w * h * c).map(|i| (i * 53 % 256) as u8).collect();
                let mean: Vec<f32> = (0..c).map(|k| 120.5 - k as f32).collect();
                let std: Vec<f32> = (0..c).map(|k| 58.4 + 0.3 * k as f32).collect();
                for mirror in [false, true] {
                    let mut flipped = src.clone();
                    if mirror {
                        flip_lr(&src, &mut flipped, w, c);
                    }
                    let plain: Vec<f32> = flipped.iter().map(|&v| v as f32).collect();
                    let mut want = plain.clone();
                    normalize_hwc(&mut want, &mean, &std);
                    let mut got = vec![0f32; src.len()];
                    u8_to_f32(&src, w, c, mirror, None, false, &mut got);
                    assert_eq!(got, plain);
                    u8_to_f32(&src, w, c, mirror, Some((&mean, &std)), false, &mut got);
                    assert_eq!(got, want, "{w}x{h} c {c} mirror {mirror}");
                    let mut chw = vec![0f32; src.len()];
                    u8_to_f32(&src, w, c, mirror, Some((&mean, &std)), true, &mut chw);
                    let mut want_chw = vec![0f32; src.len()];
                    hwc_to_chw(&want, c, &mut want_chw, |v| v);
                    assert_eq!(chw, want_chw, "{w}x{h} c {c} mirror {mirror} CHW");
                    u8_to_f32(&src, w, c, mirror, None, true, &mut chw);
                    hwc_to_chw(&plain, c, &mut want_chw, |v| v);
                    assert_eq!(chw, want_chw, "{w}x{h} c {c} mirror {mirror} CHW plain");
                }
            }
        }
    }

    #[test]
    fn decode_into_matches_decode() {
        for name in [
            "coffee_500x500_422.jpg",
            "camera_gray_512x512.jpg",
            "hubble_800x600_progressive.jpg",
            "chelsea_120x80.png",
        ] {
            let bytes = load(name);
            for (flag, to_rgb) in [(1, true), (1, false), (0, true)] {
                let want = imdecode(&bytes, flag, to_rgb).unwrap();
                assert_eq!(decode_shape(&bytes, flag).unwrap(), want.shape());
                let mut out = vec![7u8; want.data.len()];
                let shape = imdecode_into(&bytes, flag, to_rgb, &mut out).unwrap();
                assert_eq!(shape, want.shape(), "{name} {flag} {to_rgb}");
                assert!(out == want.data, "{name} flag {flag} to_rgb {to_rgb}");
                let mut short = vec![0u8; want.data.len() - 1];
                let e = imdecode_into(&bytes, flag, to_rgb, &mut short).unwrap_err();
                assert!(e.message().contains("output holds"), "{}", e.message());
            }
        }
        assert!(imdecode_into(b"not an image", 1, true, &mut [0u8; 3]).is_err());
    }

    #[test]
    fn decode_matches_pillow() {
        let (n, refs) = refs();
        assert!(refs.len() >= 9);
        for r in &refs {
            let bytes = load(&r.name);
            let img = imdecode(&bytes, 1, true).unwrap();
            assert_eq!(img.shape(), (r.h, r.w, 3), "{}", r.name);
            // ignore EXIF orientation: the stored (rotated) size is kept
            if r.name.contains("orient6") {
                assert_eq!((img.width, img.height), (480, 640));
            }
            let (mx, mean) = max_diff(&samples(&img, n), &r.rgb);
            let m = means(&img);
            for k in 0..3 {
                assert!(
                    (m[k] - r.rgb_mean[k]).abs() < 0.6,
                    "{}: channel {k} mean {} vs {}",
                    r.name,
                    m[k],
                    r.rgb_mean[k]
                );
            }
            // oxnet's JPEG decoder (baseline and progressive) is libjpeg's
            // arithmetic: exact; the zune-jpeg fallback may differ by a few
            // levels (no test image takes it now)
            let baseline = jpeg::Frame::parse(&bytes).is_some();
            let tol = if r.name.ends_with(".png") || baseline {
                0
            } else {
                6
            };
            if baseline {
                // the whole image's means (up to float summation order)
                let m = means(&img);
                assert!(
                    (0..3).all(|k| (m[k] - r.rgb_mean[k]).abs() < 1e-9),
                    "{}",
                    r.name
                );
            }
            assert!(
                mx <= tol && mean < 1.0,
                "{}: RGB max diff {mx}, mean diff {mean}",
                r.name
            );

            let g = imdecode(&bytes, 0, true).unwrap();
            assert_eq!(g.shape(), (r.h, r.w, 1));
            let (mx, mean) = max_diff(&samples(&g, n), &r.gray);
            let tol = if baseline {
                0
            } else if r.name.ends_with(".png") {
                1
            } else {
                2
            };
            assert!(
                mx <= tol && mean < 0.6,
                "{}: gray max diff {mx}, mean diff {mean}",
                r.name
            );
            assert!((means(&g)[0] - r.gray_mean).abs() < 0.5, "{}", r.name);

            let bgr = imdecode(&bytes, 1, false).unwrap();
            let mut back = bgr.clone();
            swap_rb(&mut back);
            assert!(back == img, "{}: BGR is RGB reversed", r.name);
            assert_eq!(decode_shape(&bytes, 1).unwrap(), (r.h, r.w, 3));
        }
    }

    const WINDOW_IMAGES: &[&str] = &[
        "astronaut_640x480_restart.jpg",
        "coffee_500x500_422.jpg",
        "retina_160x120_444.jpg",
        "camera_gray_512x512.jpg",
        "rocket_45x31_420.jpg",
        "rocket_3x5_422.jpg",
        "hubble_800x600_progressive.jpg",
        "rocket_45x31_prog_420_rst.jpg",
        "coffee_50x40_prog_422.jpg",
        "chelsea_120x80.png",
    ];

    #[test]
    fn window_decode_matches_full_decode() {
        for name in WINDOW_IMAGES {
            let bytes = load(name);
            let baseline = jpeg::Frame::parse(&bytes).is_some();
            for (flag, to_rgb) in [(1, true), (0, true), (1, false)] {
                let full = imdecode(&bytes, flag, to_rgb).unwrap();
                let (h, w) = (full.height, full.width);
                let wins = [
                    (0, 0, w, h),
                    (0, 0, 1, 1),
                    (w - 1, h - 1, 1, 1),
                    (1, 2, w / 2 + 1, h / 3 + 1),
                    (w / 3, h / 2, w - w / 3, h - h / 2),
                    (w / 5, h / 7, w / 2, h / 2 + 1),
                ];
                for (x, y, ww, hh) in wins {
                    let r = Rect {
                        x,
                        y,
                        w: ww.max(1),
                        h: hh.max(1),
                    };
                    let dec = Decoding::new(&bytes, flag, to_rgb).unwrap();
                    assert_eq!((dec.height, dec.width, dec.channels), full.shape());
                    let (img, at) = dec.window(r, Vec::new()).unwrap();
                    if baseline {
                        assert_eq!(at, r, "{name}");
                    }
                    assert!(at.x <= r.x && at.y <= r.y);
                    assert!(at.x + at.w >= r.x + r.w && at.y + at.h >= r.y + r.h);
                    assert!(
                        img.data == crop(full.view(), at).data,
                        "{name} flag {flag} to_rgb {to_rgb} window {r:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn resize_from_window_source_matches_whole_image() {
        let mut rng = Rng::seeded(11);
        let mut rz = Resizer::new();
        for name in WINDOW_IMAGES {
            let bytes = load(name);
            let full = imdecode(&bytes, 1, true).unwrap();
            let (h, w) = (full.height, full.width);
            for interp in [Interp::Bilinear, Interp::Bicubic, Interp::Lanczos] {
                for size in [2, 24, 100] {
                    let (rh, rw) = short_side_size(h, w, size);
                    let (rh, rw) = (rh.max(1), rw.max(1));
                    if rw > w || rh > h {
                        continue;
                    }
                    let crop = ((size * 3 / 4).max(1), (size * 3 / 4).max(1));
                    let win = random_crop_rect(rw, rh, crop, &mut rng);
                    let want = rz
                        .resize_window(full.view(), rw, rh, win, interp)
                        .unwrap()
                        .unwrap();
                    let src = window_source((w, h), (rw, rh), win, interp);
                    let (part, at) = Decoding::new(&bytes, 1, true)
                        .unwrap()
                        .window(src, Vec::new())
                        .unwrap();
                    let mut got = vec![0u8; want.data.len()];
                    rz.resize_window_part(part.view(), at, (w, h), (rw, rh), win, interp, &mut got)
                        .unwrap();
                    assert!(
                        got == want.data,
                        "{name} {interp:?} size {size} window {win:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn gray_jpeg_gives_three_equal_channels() {
        let img = imdecode(&load("camera_gray_512x512.jpg"), 1, true).unwrap();
        assert_eq!(img.channels, 3);
        assert!(img
            .data
            .chunks_exact(3)
            .all(|p| p[0] == p[1] && p[1] == p[2]));
        let g = imdecode(&load("camera_gray_512x512.jpg"), 0, true).unwrap();
        assert_eq!(
            g.data,
            img.data.iter().step_by(3).copied().collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_input_errors_not_panics() {
        let good = load("chelsea_160x107_thumb.jpg");
        let png = load("chelsea_120x80.png");
        assert!(imdecode(&[], 1, true)
            .unwrap_err()
            .message()
            .contains("empty"));
        assert!(imdecode(b"GIF89a....", 1, true)
            .unwrap_err()
            .message()
            .contains("neither JPEG nor PNG"));
        assert!(matches!(imdecode(&good, 2, true), Err(Error::Param(_))));
        for cut in [3usize, 20, 200, good.len() / 2, good.len() - 2] {
            let e = imdecode(&good[..cut], 1, true).unwrap_err();
            assert!(matches!(e, Error::Decode(_)), "cut {cut}: {e:?}");
        }
        for cut in [8usize, 30, png.len() / 2, png.len() - 5] {
            assert!(imdecode(&png[..cut], 1, true).is_err(), "png cut {cut}");
        }
        // random corruption: never panics
        let mut rng = Rng::seeded(3);
        for i in 0..300 {
            let mut b = if i % 2 == 0 {
                good.clone()
            } else {
                png.clone()
            };
            for _ in 0..1 + rng.below(8) {
                let k = rng.below(b.len() as u64) as usize;
                b[k] = rng.below(256) as u8;
            }
            if rng.below(3) == 0 {
                let cut = rng.below(b.len() as u64) as usize;
                b.truncate(cut);
            }
            if let Ok(img) = imdecode(&b, 1, true) {
                assert_eq!(img.data.len(), img.height * img.width * 3);
            }
        }
        for _ in 0..300 {
            let n = rng.below(300) as usize;
            let mut b: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
            if n > 3 && rng.below(2) == 0 {
                b[..3].copy_from_slice(&[0xFF, 0xD8, 0xFF]);
            }
            let _ = imdecode(&b, 1, true);
            let _ = imdecode(&b, 0, false);
        }
    }

    #[test]
    fn eoi_after_last_scan_rule() {
        let f = jpeg_has_eoi_after_last_scan;
        let sos = [0xFF, 0xDA, 1, 2, 0xFF, 0x00, 3];
        let mut ok = vec![0xFF, 0xD8];
        ok.extend_from_slice(&sos);
        ok.extend_from_slice(&[0xFF, 0xD9]);
        assert!(f(&ok));
        let mut trailing = ok.clone();
        trailing.extend_from_slice(&[0, 0xFF, 7, 9]); // bytes after EOI
        assert!(f(&trailing));
        let mut fill = ok[..ok.len() - 2].to_vec();
        fill.extend_from_slice(&[0xFF, 0xFF, 0xD9]); // fill bytes before EOI
        assert!(f(&fill));
        assert!(!f(&ok[..ok.len() - 1])); // truncated
        assert!(!f(&ok[..ok.len() - 2]));
        // an EOI before the last scan (an embedded thumbnail) does not count
        let mut thumb = vec![0xFF, 0xD8, 0xFF, 0xD9];
        thumb.extend_from_slice(&sos);
        assert!(!f(&thumb));
        assert!(!f(&[]) && !f(&[0xFF]) && !f(&[0xD9]));
    }

    /// OpenCV INTER_LINEAR reference (half-pixel centres, clamped).
    fn ref_bilinear(src: &Image, dw: usize, dh: usize) -> Image {
        let c = src.channels;
        let mut out = Image::zeros(dh, dw, c);
        let sx = src.width as f64 / dw as f64;
        let sy = src.height as f64 / dh as f64;
        for y in 0..dh {
            let fy = ((y as f64 + 0.5) * sy - 0.5).max(0.0);
            let y0 = (fy.floor() as usize).min(src.height - 1);
            let y1 = (y0 + 1).min(src.height - 1);
            let wy = fy - y0 as f64;
            for x in 0..dw {
                let fx = ((x as f64 + 0.5) * sx - 0.5).max(0.0);
                let x0 = (fx.floor() as usize).min(src.width - 1);
                let x1 = (x0 + 1).min(src.width - 1);
                let wx = fx - x0 as f64;
                for k in 0..c {
                    let p = |yy: usize, xx: usize| src.data[(yy * src.width + xx) * c + k] as f64;
                    let v = (1.0 - wy) * ((1.0 - wx) * p(y0, x0) + wx * p(y0, x1))
                        + wy * ((1.0 - wx) * p(y1, x0) + wx * p(y1, x1));
                    out.data[(y * dw + x) * c + k] = v.round().clamp(0.0, 255.0) as u8;
                }
            }
        }
        out
    }

    #[test]
    fn bilinear_matches_opencv_rule() {
        let img = imdecode(&load("chelsea_160x107_thumb.jpg"), 1, true).unwrap();
        for (w, h) in [(80, 53), (224, 150), (161, 107), (57, 99)] {
            let got = imresize(img.view(), w, h, 1).unwrap();
            let want = ref_bilinear(&img, w, h);
            // borders: fast_image_resize renormalises instead of clamping
            let c = 3;
            let mut worst = 0u8;
            for y in 1..h - 1 {
                for x in 1..w - 1 {
                    for k in 0..c {
                        let i = (y * w + x) * c + k;
                        worst = worst.max(got.data[i].abs_diff(want.data[i]));
                    }
                }
            }
            assert!(worst <= 1, "{w}x{h}: interior max diff {worst}");
        }
    }

    #[test]
    fn resize_window_is_resize_then_crop() {
        let mut rz = Resizer::new();
        let mut rng = Rng::seeded(5);
        for name in ["hubble_800x600_progressive.jpg", "camera_gray_512x512.jpg"] {
            let img = imdecode(&load(name), 1, true).unwrap();
            let v = img.view();
            for interp in [Interp::Bilinear, Interp::Bicubic, Interp::Lanczos] {
                for (fw, fh) in [(341, 256), (256, 256), (256, 341), (97, 61)] {
                    let full = Rect {
                        x: 0,
                        y: 0,
                        w: img.width,
                        h: img.height,
                    };
                    let whole = rz.resize(v, full, fw, fh, interp).unwrap();
                    for _ in 0..4 {
                        let (ww, wh) = (
                            1 + rng.below(fw as u64) as usize,
                            1 + rng.below(fh as u64) as usize,
                        );
                        let win = Rect {
                            x: rng.below((fw - ww) as u64 + 1) as usize,
                            y: rng.below((fh - wh) as u64 + 1) as usize,
                            w: ww,
                            h: wh,
                        };
                        let got = rz.resize_window(v, fw, fh, win, interp).unwrap().unwrap();
                        assert_eq!(got.shape(), (wh, ww, 3));
                        let mut off = 0;
                        for y in 0..wh {
                            for x in 0..ww * 3 {
                                let a = got.data[y * ww * 3 + x] as i32;
                                let b = whole.data[((win.y + y) * fw + win.x) * 3 + x] as i32;
                                assert!((a - b).abs() <= 1, "{name} {interp:?} {win:?}");
                                off += (a != b) as usize;
                            }
                        }
                        assert!(off * 100 <= ww * wh * 3, "{name} {interp:?} {win:?}: {off}");
                    }
                }
            }
            let win = Rect {
                x: 0,
                y: 0,
                w: 10,
                h: 10,
            };
            assert!(rz
                .resize_window(v, 50, 50, win, Interp::Nearest)
                .unwrap()
                .is_none());
            assert!(rz
                .resize_window(v, 50, 50, win, Interp::Area)
                .unwrap()
                .is_none());
            let out = Rect {
                x: 45,
                y: 0,
                w: 10,
                h: 10,
            };
            assert!(rz.resize_window(v, 50, 50, out, Interp::Bilinear).is_err());
        }
    }

    #[test]
    fn resize_modes_and_helpers() {
        let img = imdecode(&load("chelsea_120x80.png"), 1, true).unwrap();
        let v = img.view();
        for interp in [0, 1, 2, 3, 4, 9] {
            for (w, h) in [(60, 40), (240, 160), (120, 80)] {
                let out = imresize(v, w, h, interp).unwrap();
                assert_eq!(out.shape(), (h, w, 3));
                let m0 = means(&img);
                let m1 = means(&out);
                for k in 0..3 {
                    assert!(
                        (m0[k] - m1[k]).abs() < 3.0,
                        "interp {interp} {w}x{h}: mean {} vs {}",
                        m1[k],
                        m0[k]
                    );
                }
                if (w, h) == (120, 80) && interp != 4 && interp != 2 {
                    assert_eq!(out.data, img.data, "interp {interp}: identity resize");
                }
            }
        }
        // nearest: exact OpenCV rule on a tiny image
        let tiny = Image::new(1, 4, 1, vec![10, 20, 30, 40]).unwrap();
        assert_eq!(imresize(tiny.view(), 2, 1, 0).unwrap().data, vec![10, 30]);
        assert_eq!(
            imresize(tiny.view(), 8, 1, 0).unwrap().data,
            vec![10, 10, 20, 20, 30, 30, 40, 40]
        );
        // area on an integer factor is the block mean
        let sq = Image::new(2, 2, 1, vec![0, 100, 50, 250]).unwrap();
        assert_eq!(imresize(sq.view(), 1, 1, 3).unwrap().data, vec![100]);
        assert!(imresize(v, 10, 10, 7)
            .unwrap_err()
            .message()
            .contains("interp=7"));
        assert!(imresize(v, 0, 10, 1).is_err());
        let mut rng = Rng::seeded(1);
        assert!(Interp::from_mxnet(10, (1, 1), (2, 2), Some(&mut rng)).is_ok());
        assert_eq!(
            Interp::from_mxnet(9, (10, 10), (20, 20), None).unwrap(),
            Interp::Bicubic
        );
        assert_eq!(
            Interp::from_mxnet(9, (10, 10), (5, 5), None).unwrap(),
            Interp::Area
        );
        assert_eq!(
            Interp::from_mxnet(9, (10, 10), (5, 20), None).unwrap(),
            Interp::Bilinear
        );

        assert_eq!(short_side_size(300, 451, 256), (256, 384));
        assert_eq!(short_side_size(640, 480, 224), (298, 224));
        let rs = resize_short(v, 40, 2).unwrap();
        assert_eq!((rs.height, rs.width), (40, 60));
        assert_eq!(scale_down((640, 480), (720, 720)), (480, 480));
        assert_eq!(scale_down((100, 50), (30, 20)), (30, 20));

        let (cc, r) = center_crop(v, (50, 40), 1).unwrap();
        assert_eq!(
            r,
            Rect {
                x: 35,
                y: 20,
                w: 50,
                h: 40
            }
        );
        assert_eq!(cc.shape(), (40, 50, 3));
        assert_eq!(&cc.data[..3], &img.data[(20 * 120 + 35) * 3..][..3]);
        let (big, r) = center_crop(v, (200, 200), 1).unwrap();
        assert_eq!(
            r,
            Rect {
                x: 20,
                y: 0,
                w: 80,
                h: 80
            }
        );
        assert_eq!(big.shape(), (200, 200, 3));
        let mut rng = Rng::seeded(5);
        for _ in 0..20 {
            let (rc, r) = random_crop(v, (30, 30), 1, &mut rng).unwrap();
            assert!(r.x + 30 <= 120 && r.y + 30 <= 80);
            assert_eq!(rc, crop(v, r));
        }
        assert!(fixed_crop(
            v,
            Rect {
                x: 100,
                y: 0,
                w: 30,
                h: 10
            },
            None,
            1
        )
        .is_err());
    }

    #[test]
    fn write_chw_rgb_rows_match_per_pixel_formula() {
        // widths around the 8-pixel groups of the AVX2 loop, both mirrors,
        // a crop window inside a wider image
        let (h, w) = (5, 41);
        let data: Vec<u8> = (0..h * w * 3).map(|i| (i * 37 % 251) as u8).collect();
        let img = Image::new(h, w, 3, data).unwrap();
        let norm = Normalize {
            mean: vec![123.68, 116.28, 103.53],
            std: vec![58.395, 57.12, 57.375],
            scale: 0.7,
        };
        for cw in [1, 7, 8, 9, 16, 29, 38] {
            for mirror in [false, true] {
                let rect = Rect {
                    x: 3,
                    y: 1,
                    w: cw,
                    h: 3,
                };
                let mut out = vec![0f32; 3 * 3 * cw];
                write_chw_f32(img.view(), rect, mirror, &norm, &mut out).unwrap();
                for k in 0..3 {
                    let m = norm.scale / norm.std[k];
                    let a = -norm.mean[k] * m;
                    for y in 0..3 {
                        for x in 0..cw {
                            let sx = if mirror { cw - 1 - x } else { x };
                            let v = img.data[((1 + y) * w + 3 + sx) * 3 + k];
                            let got = out[(k * 3 + y) * cw + x];
                            assert_eq!(
                                got,
                                v as f32 * m + a,
                                "w {cw} mirror {mirror} k {k} y {y} x {x}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn flip_and_chw() {
        let img = Image::new(2, 3, 3, (0..18).collect()).unwrap();
        let mut f = img.clone();
        flip_horizontal(&mut f);
        assert_eq!(&f.data[..9], &[6, 7, 8, 3, 4, 5, 0, 1, 2]);
        flip_horizontal(&mut f);
        assert_eq!(f, img);

        let norm = Normalize {
            mean: vec![1.0, 2.0, 3.0],
            std: vec![2.0, 4.0, 0.5],
            scale: 1.0,
        };
        let rect = Rect {
            x: 1,
            y: 0,
            w: 2,
            h: 2,
        };
        let mut out = vec![0f32; 12];
        write_chw_f32(img.view(), rect, false, &norm, &mut out).unwrap();
        // pixel (y, x) channel k = (y*3+x)*3+k
        let px = |y: usize, x: usize, k: usize| ((y * 3 + x) * 3 + k) as f32;
        for k in 0..3 {
            for y in 0..2 {
                for x in 0..2 {
                    let want = (px(y, x + 1, k) - norm.mean[k]) / norm.std[k];
                    assert!((out[k * 4 + y * 2 + x] - want).abs() < 1e-5);
                }
            }
        }
        let mut outm = vec![0f32; 12];
        write_chw_f32(img.view(), rect, true, &norm, &mut outm).unwrap();
        assert_eq!(outm[0], out[1]);
        assert_eq!(outm[5], out[4]);
        let mut u = vec![0u8; 12];
        write_chw_u8(img.view(), rect, true, &mut u).unwrap();
        assert_eq!(&u[..4], &[6, 3, 15, 12]);
        assert!(write_chw_f32(img.view(), rect, false, &Normalize::identity(1), &mut out).is_err());
        assert!(write_chw_f32(img.view(), rect, false, &norm, &mut out[..5]).is_err());
    }

    /// `cargo test --release -p oxnet-core decode_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn decode_speed() {
        use rayon::prelude::*;
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(data_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().map(|e| e == "jpg").unwrap_or(false))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        files.sort();
        let reps = 30;
        let work: Vec<&[u8]> = (0..reps)
            .flat_map(|_| files.iter().map(|f| &f.1[..]))
            .collect();
        let px: usize = files
            .iter()
            .map(|f| {
                let i = imdecode(&f.1, 1, true).unwrap();
                i.width * i.height
            })
            .sum();
        println!(
            "decode-only: {} JPEGs ({:.2} Mpixel per pass): {:?}",
            files.len(),
            px as f64 / 1e6,
            files.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let t = std::time::Instant::now();
            let n: usize = pool.install(|| {
                work.par_iter()
                    .map(|b| imdecode(b, 1, true).unwrap().data.len().min(1))
                    .sum()
            });
            let s = t.elapsed().as_secs_f64();
            println!(
                "decode-only (JPEG -> RGB u8), {threads} thread(s): {:.0} images/s, {:.1} Mpixel/s",
                n as f64 / s,
                (px * reps) as f64 / s / 1e6
            );
        }
    }

    #[test]
    fn color_jitter() {
        let base: Vec<f32> = vec![10.0, 20.0, 30.0, 200.0, 100.0, 50.0];
        let mut d = base.clone();
        adjust_brightness(&mut d, 1.5);
        assert_eq!(d[1], 30.0);
        let gray = |p: &[f32]| p[0] * 0.299 + p[1] * 0.587 + p[2] * 0.114;
        let mut d = base.clone();
        adjust_saturation(&mut d, 0.0).unwrap();
        assert!((d[0] - gray(&base[..3])).abs() < 1e-4 && (d[2] - d[0]).abs() < 1e-4);
        let mut d = base.clone();
        adjust_contrast(&mut d, 0.0).unwrap();
        let m = (gray(&base[..3]) + gray(&base[3..])) / 2.0;
        assert!(d.iter().all(|v| (v - m).abs() < 1e-3));
        let mut d = base.clone();
        adjust_contrast(&mut d, 1.0).unwrap();
        assert_eq!(d, base);
        // hue rotation by 0 is (nearly) identity; by any angle it keeps luma
        let mut d = base.clone();
        adjust_hue(&mut d, 0.0).unwrap();
        assert!(d.iter().zip(&base).all(|(a, b)| (a - b).abs() < 0.5));
        let mut d = base.clone();
        adjust_hue(&mut d, 0.3).unwrap();
        assert!((gray(&d[..3]) - gray(&base[..3])).abs() < 0.5);
        let mut d = base.clone();
        let ev = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        adjust_lighting(&mut d, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], ev).unwrap();
        assert_eq!(&d[..3], &[11.0, 22.0, 33.0]);
        assert!(adjust_hue(&mut [1.0, 2.0], 0.1).is_err());
    }
}
