//! MNIST's IDX files and the batch iterator behind `mx.io.MNISTIter`.
//!
//! An image file is a big-endian header (magic 2051, count, rows, cols)
//! followed by count x rows x cols pixel bytes; a label file is (magic 2049,
//! count) followed by count label bytes. Files may be gzip-compressed (the
//! form MNIST is distributed in); they are recognised by the gzip magic.
//! Pixels come out as float32 scaled by 1/256, as MXNet's MNISTIter does.
use crate::{Error, Result};
use rayon::prelude::*;

/// The magic number of an IDX file of u8 images (0x00000803).
pub const IMAGE_MAGIC: u32 = 2051;
/// The magic number of an IDX file of u8 labels (0x00000801).
pub const LABEL_MAGIC: u32 = 2049;

/// The bytes of `path`, inflated when the file is gzip-compressed.
pub fn read_maybe_gzip(path: &str) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::Io(format!("{path}: {e}")))?;
    if raw.len() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
        let mut dec = zune_inflate::DeflateDecoder::new(&raw);
        return dec
            .decode_gzip()
            .map_err(|e| Error::Decode(format!("{path}: not a valid gzip file: {:?}", e.error)));
    }
    Ok(raw)
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn check_magic(path: &str, found: u32, want: u32, what: &str) -> Result<()> {
    if found == want {
        return Ok(());
    }
    let hint = match found {
        IMAGE_MAGIC => " (it is an image file)",
        LABEL_MAGIC => " (it is a label file)",
        _ => "",
    };
    Err(Error::Decode(format!(
        "{path}: magic number {found} is not MNIST's {what} magic {want}{hint}"
    )))
}

/// Images of one IDX file: `count` images of `rows` x `cols` bytes.
#[derive(Debug, Clone)]
pub struct IdxImages {
    pub count: usize,
    pub rows: usize,
    pub cols: usize,
    pub pixels: Vec<u8>,
}

/// Parse an IDX image file held in `bytes`; `path` names it in errors.
/// The header must be complete, the magic 2051 and the payload exactly
/// count x rows x cols bytes.
pub fn parse_images(mut bytes: Vec<u8>, path: &str) -> Result<IdxImages> {
    if bytes.len() >= 4 {
        check_magic(path, be_u32(&bytes, 0), IMAGE_MAGIC, "image")?;
    }
    if bytes.len() < 16 {
        return Err(Error::Decode(format!(
            "{path}: truncated IDX image header ({} bytes, need 16)",
            bytes.len()
        )));
    }
    let (count, rows, cols) = (
        be_u32(&bytes, 4) as usize,
        be_u32(&bytes, 8) as usize,
        be_u32(&bytes, 12) as usize,
    );
    let want = count
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| {
            Error::Decode(format!(
                "{path}: header sizes {count}x{rows}x{cols} overflow"
            ))
        })?;
    let have = bytes.len() - 16;
    if have != want {
        let what = if have < want { "truncated" } else { "too long" };
        return Err(Error::Decode(format!(
            "{path}: {what}: the header says {count} images of {rows}x{cols} ({want} pixel bytes) but the file holds {have}"
        )));
    }
    bytes.drain(..16);
    Ok(IdxImages {
        count,
        rows,
        cols,
        pixels: bytes,
    })
}

/// Parse an IDX label file held in `bytes` (magic 2049, exactly `count` labels).
pub fn parse_labels(mut bytes: Vec<u8>, path: &str) -> Result<Vec<u8>> {
    if bytes.len() >= 4 {
        check_magic(path, be_u32(&bytes, 0), LABEL_MAGIC, "label")?;
    }
    if bytes.len() < 8 {
        return Err(Error::Decode(format!(
            "{path}: truncated IDX label header ({} bytes, need 8)",
            bytes.len()
        )));
    }
    let count = be_u32(&bytes, 4) as usize;
    let have = bytes.len() - 8;
    if have != count {
        let what = if have < count {
            "truncated"
        } else {
            "too long"
        };
        return Err(Error::Decode(format!(
            "{path}: {what}: the header says {count} labels but the file holds {have}"
        )));
    }
    bytes.drain(..8);
    Ok(bytes)
}

/// The `[start, end)` rows of part `part_index` of `num_parts` (MXNet's split).
pub fn part_range(count: usize, num_parts: usize, part_index: usize) -> Result<(usize, usize)> {
    if num_parts == 0 || part_index >= num_parts {
        return Err(Error::Param(format!(
            "MNISTIter: part_index {part_index} must be in [0, num_parts={num_parts})"
        )));
    }
    let at = |i: usize| (count as f64 / num_parts as f64 * i as f64) as usize;
    Ok((at(part_index), at(part_index + 1)))
}

/// A SplitMix64 stream: the seeded generator of the shuffle.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, n) (n > 0), by rejection so every value is equally likely.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next();
            if v < zone {
                return v % n;
            }
        }
    }
}

/// Options of [`MnistIter`] (MXNet's MNISTIter parameters).
#[derive(Debug, Clone)]
pub struct MnistConfig {
    pub image: String,
    pub label: String,
    pub batch_size: usize,
    pub shuffle: bool,
    pub flat: bool,
    pub seed: u64,
    pub num_parts: usize,
    pub part_index: usize,
}

/// Batches of MNIST digits in a fixed order (shuffled once, at creation,
/// when asked; MXNet does the same). A last incomplete batch is dropped.
pub struct MnistIter {
    pub cfg: MnistConfig,
    pub rows: usize,
    pub cols: usize,
    pixels: Vec<u8>,
    labels: Vec<u8>,
    order: Vec<usize>,
    pos: usize,
}

impl MnistIter {
    /// Read and check both files, keep part `part_index`, shuffle if asked.
    pub fn open(cfg: MnistConfig) -> Result<MnistIter> {
        if cfg.batch_size == 0 {
            return Err(Error::Param(
                "MNISTIter: batch_size must be at least 1".into(),
            ));
        }
        let images = parse_images(read_maybe_gzip(&cfg.image)?, &cfg.image)?;
        let labels = parse_labels(read_maybe_gzip(&cfg.label)?, &cfg.label)?;
        if images.count != labels.len() {
            return Err(Error::Shape(format!(
                "MNISTIter: {} holds {} images but {} holds {} labels",
                cfg.image,
                images.count,
                cfg.label,
                labels.len()
            )));
        }
        let (start, end) = part_range(images.count, cfg.num_parts, cfg.part_index)?;
        let plane = images.rows * images.cols;
        let pixels = images.pixels[start * plane..end * plane].to_vec();
        let labels = labels[start..end].to_vec();
        let mut order: Vec<usize> = (0..end - start).collect();
        if cfg.shuffle {
            let mut rng = SplitMix64(cfg.seed);
            for i in (1..order.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                order.swap(i, j);
            }
        }
        Ok(MnistIter {
            rows: images.rows,
            cols: images.cols,
            cfg,
            pixels,
            labels,
            order,
            pos: 0,
        })
    }

    /// The number of digits in this part.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when the part holds no digit.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The shape of one batch of images.
    pub fn data_shape(&self) -> Vec<usize> {
        let b = self.cfg.batch_size;
        if self.cfg.flat {
            vec![b, self.rows * self.cols]
        } else {
            vec![b, 1, self.rows, self.cols]
        }
    }

    /// The next batch as (pixels / 256, labels), or None at the end of the epoch.
    pub fn next_batch(&mut self) -> Option<(Vec<f32>, Vec<f32>)> {
        let bs = self.cfg.batch_size;
        if self.pos + bs > self.order.len() {
            return None;
        }
        let plane = self.rows * self.cols;
        let ids = &self.order[self.pos..self.pos + bs];
        let mut data = vec![0f32; bs * plane];
        let pixels = &self.pixels;
        // on the kernel pool (never rayon's global one: see crate::par)
        crate::par::install(|| {
            data.par_chunks_mut(plane)
                .zip(ids.par_iter())
                .for_each(|(dst, &i)| {
                    for (d, &p) in dst.iter_mut().zip(&pixels[i * plane..(i + 1) * plane]) {
                        *d = p as f32 * (1.0 / 256.0);
                    }
                })
        });
        let labels = ids.iter().map(|&i| self.labels[i] as f32).collect();
        self.pos += bs;
        Some((data, labels))
    }

    /// Back to the first batch (the order stays the same).
    pub fn reset(&mut self) {
        self.pos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn images(count: u32, rows: u32, cols: u32, extra: isize) -> Vec<u8> {
        let mut v = Vec::new();
        for x in [IMAGE_MAGIC, count, rows, cols] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        let n = (count * rows * cols) as isize + extra;
        v.extend((0..n).map(|i| (i % 251) as u8));
        v
    }

    #[test]
    fn parses_and_checks_images() {
        let im = parse_images(images(3, 2, 2, 0), "x").unwrap();
        assert_eq!((im.count, im.rows, im.cols, im.pixels.len()), (3, 2, 2, 12));
        let e = parse_images(images(3, 2, 2, -1), "f.idx")
            .unwrap_err()
            .message();
        assert!(
            e.contains("f.idx: truncated") && e.contains("12 pixel bytes"),
            "{e}"
        );
        let e = parse_images(images(3, 2, 2, 5), "f").unwrap_err().message();
        assert!(e.contains("too long"), "{e}");
        let mut bad = images(1, 1, 1, 0);
        bad[3] = 1;
        let e = parse_images(bad, "g").unwrap_err().message();
        assert!(
            e.contains("magic number 2049") && e.contains("label file"),
            "{e}"
        );
        assert!(parse_images(vec![0, 0, 8], "h")
            .unwrap_err()
            .message()
            .contains("header"));
        assert!(parse_images(vec![0, 0, 8, 1, 0], "h")
            .unwrap_err()
            .message()
            .contains("magic number 2049"));
    }

    #[test]
    fn parses_and_checks_labels() {
        let mut v = LABEL_MAGIC.to_be_bytes().to_vec();
        v.extend_from_slice(&3u32.to_be_bytes());
        v.extend_from_slice(&[1, 2, 3]);
        assert_eq!(parse_labels(v.clone(), "l").unwrap(), vec![1, 2, 3]);
        v.pop();
        assert!(parse_labels(v, "l")
            .unwrap_err()
            .message()
            .contains("truncated"));
    }

    #[test]
    fn parts_follow_mxnet() {
        assert_eq!(part_range(1000, 3, 0).unwrap(), (0, 333));
        assert_eq!(part_range(1000, 3, 1).unwrap(), (333, 666));
        assert_eq!(part_range(1000, 3, 2).unwrap(), (666, 1000));
        assert!(part_range(10, 2, 2).is_err());
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut r = SplitMix64(7);
        let mut seen = [0usize; 5];
        for _ in 0..5000 {
            seen[r.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
