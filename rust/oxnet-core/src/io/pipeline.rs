//! A batch pipeline for image training data (the engine of
//! `ImageRecordIter` / `ImageIter`): read records, decode, augment and write
//! N x C x H x W batches in a rayon pool, with a bounded prefetch queue fed
//! by a background producer thread.
//!
//! Reproducibility: every record gets its own generator seeded from
//! `(seed, epoch, record index)`, and the epoch order is shuffled from
//! `(seed, epoch)`, so the output does not depend on the thread count.
//! A record that cannot be read or decoded yields zeros in its slot and a
//! `RecordError` in the batch (with its index and where it came from); the
//! pipeline goes on with the next records.
use crate::base::context::Context;
use crate::base::dtype::DType;
use crate::error::{Error, Result};
use crate::io::image::{self, ImageView, Interp, Normalize, Rect};
use crate::io::recordio::{self, RecordReader};
use crate::ndarray::NDArray;
use crate::random::Rng;
use crossbeam_channel::{bounded, Receiver, Sender};
use rayon::prelude::*;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Where the records come from.
#[derive(Debug, Clone)]
pub enum RecordSource {
    /// A RecordIO file whose records are `IRHeader` + encoded image, read at
    /// these offsets (from its `.idx` or a scan).
    RecordIO { path: PathBuf, offsets: Vec<u64> },
    /// Image files (relative to `root`) with their labels.
    Files {
        root: PathBuf,
        items: Vec<(PathBuf, Vec<f32>)>,
    },
}

impl RecordSource {
    /// Records of `rec` in the order of its `.idx` file.
    pub fn indexed(rec: impl AsRef<Path>, idx: impl AsRef<Path>) -> Result<RecordSource> {
        let r = recordio::IndexedRecordReader::open(idx, rec.as_ref())?;
        let offsets = r.entries().iter().map(|e| e.offset).collect();
        Ok(RecordSource::RecordIO {
            path: rec.as_ref().to_path_buf(),
            offsets,
        })
    }
    /// Records of `rec` found by reading it through once (no `.idx`).
    pub fn scanned(rec: impl AsRef<Path>) -> Result<RecordSource> {
        let offsets = RecordReader::open(rec.as_ref())?.scan_offsets()?;
        Ok(RecordSource::RecordIO {
            path: rec.as_ref().to_path_buf(),
            offsets,
        })
    }
    pub fn len(&self) -> usize {
        match self {
            RecordSource::RecordIO { offsets, .. } => offsets.len(),
            RecordSource::Files { items, .. } => items.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where record `i` lives, for error messages.
    pub fn describe(&self, i: usize) -> String {
        match self {
            RecordSource::RecordIO { path, offsets } => {
                format!(
                    "{} record {i} at byte {}",
                    path.display(),
                    offsets.get(i).copied().unwrap_or(0)
                )
            }
            RecordSource::Files { root, items } => match items.get(i) {
                Some((p, _)) => root.join(p).display().to_string(),
                None => format!("image {i}"),
            },
        }
    }
}

/// Per-image augmentation (MXNet's default ImageRecordIter augmenter).
#[derive(Debug, Clone)]
pub struct AugmentConfig {
    /// Output (channels, height, width); channels 1 decodes gray, 3 RGB.
    pub data_shape: (usize, usize, usize),
    /// Resize the shorter side to this first (MXNet `resize`, -1 = None).
    pub resize: Option<usize>,
    /// Random crop position (else centre).
    pub rand_crop: bool,
    /// Mirror with probability 1/2.
    pub rand_mirror: bool,
    /// MXNet interpolation code (0-4, 9 auto, 10 random).
    pub inter_method: i32,
    /// Normalisation for float output (ignored for u8 output).
    pub norm: Normalize,
}

impl AugmentConfig {
    pub fn new(data_shape: (usize, usize, usize)) -> AugmentConfig {
        AugmentConfig {
            data_shape,
            resize: None,
            rand_crop: false,
            rand_mirror: false,
            inter_method: 1,
            norm: Normalize::identity(data_shape.0),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutDType {
    F32,
    U8,
}

/// What to do with the last, incomplete batch of an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastBatch {
    /// Fill it with records from the start of the epoch (`pad` says how many).
    Pad,
    /// Drop it.
    Discard,
    /// Carry its records over to the front of the next epoch.
    RollOver,
    /// Emit it with the missing slots zeroed and `pad` 0 (MXNet's
    /// ImageRecordIter with `round_batch=False`); `indices` is shorter
    /// than the batch.
    Zeros,
}

#[derive(Debug, Clone)]
pub struct PipelineConfig {
    pub batch_size: usize,
    pub label_width: usize,
    pub shuffle: bool,
    pub seed: u64,
    /// Seed of the augmentations (crop position, mirror, random interpolation) when set
    /// (MXNet's `seed_aug`); else `seed` seeds them too.
    pub aug_seed: Option<u64>,
    /// Decode threads (rayon pool size).
    pub num_threads: usize,
    /// Batches prepared ahead (queue bound).
    pub prefetch: usize,
    pub part_index: usize,
    pub num_parts: usize,
    pub last_batch: LastBatch,
    pub dtype: OutDType,
}

impl PipelineConfig {
    pub fn new(batch_size: usize) -> PipelineConfig {
        PipelineConfig {
            batch_size,
            label_width: 1,
            shuffle: false,
            seed: 0,
            aug_seed: None,
            num_threads: 1,
            prefetch: 2,
            part_index: 0,
            num_parts: 1,
            last_batch: LastBatch::Pad,
            dtype: OutDType::F32,
        }
    }
}

/// A batch's pixels: a (batch_size, C, H, W) array in pooled storage,
/// written by the decode threads in place and handed to the caller without
/// a copy (the pool gives the block back to a later batch once it is freed,
/// so steady state neither zero-fills nor faults in fresh pages).
#[derive(Clone)]
pub struct BatchData {
    arr: NDArray,
}

impl BatchData {
    fn new(shape: &[usize], dtype: OutDType) -> Result<BatchData> {
        let dt = match dtype {
            OutDType::F32 => DType::F32,
            OutDType::U8 => DType::U8,
        };
        let arr = NDArray::empty(shape, dt, Context::default())?;
        arr.blob()?; // allocate now, on the producer thread
        Ok(BatchData { arr })
    }
    pub fn into_ndarray(self) -> NDArray {
        self.arr
    }
    /// The float32 pixels, or `None` for a uint8 batch.
    pub fn f32(&self) -> Option<&[f32]> {
        (self.arr.dtype() == DType::F32).then(|| unsafe { self.slice::<f32>() })
    }
    /// The uint8 pixels, or `None` for a float32 batch.
    pub fn u8(&self) -> Option<&[u8]> {
        (self.arr.dtype() == DType::U8).then(|| unsafe { self.slice::<u8>() })
    }
    /// SAFETY: T matches the dtype; the storage was allocated in `new` and
    /// lives as long as `self`; once a batch is handed out nothing in the
    /// pipeline writes to it.
    unsafe fn slice<T>(&self) -> &[T] {
        let ptr = self
            .arr
            .blob()
            .expect("allocated in BatchData::new")
            .raw_ptr();
        std::slice::from_raw_parts(ptr as *const T, self.arr.size())
    }
    /// Write access for the producer, before the batch is sent.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut<T>(&self) -> &mut [T] {
        let ptr = self
            .arr
            .blob()
            .expect("allocated in BatchData::new")
            .raw_ptr();
        std::slice::from_raw_parts_mut(ptr as *mut T, self.arr.size())
    }
}

impl PartialEq for BatchData {
    fn eq(&self, o: &BatchData) -> bool {
        self.arr.shape == o.arr.shape
            && match (self.f32(), o.f32()) {
                (Some(a), Some(b)) => a == b,
                (None, None) => self.u8() == o.u8(),
                _ => false,
            }
    }
}

impl std::fmt::Debug for BatchData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BatchData({:?} {:?})", self.arr.dtype(), self.arr.shape)
    }
}

/// A failed record inside a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordError {
    /// Position in the batch.
    pub slot: usize,
    /// Index of the record in the source.
    pub index: usize,
    /// Where it came from (path, or file and byte offset).
    pub location: String,
    pub error: Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// batch_size x C x H x W.
    pub data: BatchData,
    /// batch_size x label_width.
    pub label: Vec<f32>,
    /// How many trailing slots are padding (LastBatch::Pad).
    pub pad: usize,
    /// Source record index of every slot.
    pub indices: Vec<usize>,
    pub errors: Vec<RecordError>,
    pub epoch: u64,
}

/// The seed of record `index` in `epoch`.
pub fn record_seed(seed: u64, epoch: u64, index: usize) -> u64 {
    seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (index as u64)
            .wrapping_add(1)
            .wrapping_mul(0xD1B5_4A32_D192_ED03)
}

struct Shared {
    source: RecordSource,
    aug: AugmentConfig,
    cfg: PipelineConfig,
    pool: rayon::ThreadPool,
    file: Option<(File, u64)>,
}

/// The pipeline: `next_batch()` blocks until the next batch is ready and
/// returns `None` at the end of the epoch; `reset()` starts the next epoch.
pub struct Pipeline {
    shared: Arc<Shared>,
    epoch: u64,
    carry: Vec<usize>,
    rx: Option<Receiver<Result<Batch>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    plan_carry: Vec<usize>,
    /// `par::fork_generation()` when the threads started.
    generation: u64,
    /// Batches of this epoch handed out so far.
    delivered: usize,
}

impl Pipeline {
    /// Validate the configuration and start epoch 0.
    pub fn new(source: RecordSource, aug: AugmentConfig, cfg: PipelineConfig) -> Result<Pipeline> {
        let (c, h, w) = aug.data_shape;
        if c != 1 && c != 3 {
            return Err(Error::Param(format!(
                "ImageRecordIter: data_shape {:?} must have 1 or 3 channels",
                aug.data_shape
            )));
        }
        if h == 0 || w == 0 {
            return Err(Error::Param(format!(
                "ImageRecordIter: data_shape {:?} has a zero size",
                aug.data_shape
            )));
        }
        if cfg.batch_size == 0 {
            return Err(Error::Param(
                "ImageRecordIter: batch_size must be positive".into(),
            ));
        }
        if cfg.label_width == 0 {
            return Err(Error::Param(
                "ImageRecordIter: label_width must be positive".into(),
            ));
        }
        if cfg.num_parts == 0 || cfg.part_index >= cfg.num_parts {
            return Err(Error::Param(format!(
                "ImageRecordIter: part_index {} must be below num_parts {}",
                cfg.part_index, cfg.num_parts
            )));
        }
        if cfg.dtype == OutDType::F32 && (aug.norm.mean.len() != c || aug.norm.std.len() != c) {
            return Err(Error::Param(format!(
                "ImageRecordIter: mean ({} values) and std ({} values) must match the {c} channels",
                aug.norm.mean.len(),
                aug.norm.std.len()
            )));
        }
        if aug.norm.std.contains(&0.0) {
            return Err(Error::Param(
                "ImageRecordIter: std may not contain 0".into(),
            ));
        }
        if aug.resize == Some(0) {
            return Err(Error::Param(
                "ImageRecordIter: resize must be positive (or None)".into(),
            ));
        }
        Interp::from_mxnet(aug.inter_method, (2, 2), (1, 1), Some(&mut Rng::seeded(0)))?;
        let pool = decode_pool(cfg.num_threads)?;
        let file = match &source {
            RecordSource::RecordIO { path, .. } => {
                let f = File::open(path).map_err(|e| {
                    Error::Io(format!(
                        "ImageRecordIter: cannot open {}: {e}",
                        path.display()
                    ))
                })?;
                let len = f
                    .metadata()
                    .map(|m| m.len())
                    .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
                Some((f, len))
            }
            RecordSource::Files { .. } => None,
        };
        let mut p = Pipeline {
            shared: Arc::new(Shared {
                source,
                aug,
                cfg,
                pool,
                file,
            }),
            epoch: 0,
            carry: Vec::new(),
            rx: None,
            stop: Arc::new(AtomicBool::new(false)),
            handle: None,
            plan_carry: Vec::new(),
            generation: crate::par::fork_generation(),
            delivered: 0,
        };
        p.start(0);
        Ok(p)
    }

    /// In a child forked since the pipeline started, its producer and
    /// decode threads are gone: leak them (never join or drop what a vanished
    /// thread may hold), start a fresh decode pool and resume the epoch at
    /// the batch after the last one delivered.
    fn revive_after_fork(&mut self) -> Result<()> {
        if self.generation == crate::par::fork_generation() {
            return Ok(());
        }
        self.renew_threads()?;
        self.start(self.delivered);
        Ok(())
    }

    /// After a fork: leak the vanished threads' handle, queue and pool, and
    /// make a fresh decode pool.
    fn renew_threads(&mut self) -> Result<()> {
        std::mem::forget(self.handle.take());
        std::mem::forget(self.rx.take());
        let old = &self.shared;
        let file = match &old.file {
            Some((f, len)) => Some((
                f.try_clone()
                    .map_err(|e| Error::Io(format!("ImageRecordIter: after fork: {e}")))?,
                *len,
            )),
            None => None,
        };
        let fresh = Arc::new(Shared {
            source: old.source.clone(),
            aug: old.aug.clone(),
            cfg: old.cfg.clone(),
            pool: decode_pool(old.cfg.num_threads)?,
            file,
        });
        std::mem::forget(std::mem::replace(&mut self.shared, fresh));
        self.generation = crate::par::fork_generation();
        Ok(())
    }

    /// Records this part sees per epoch (before batching).
    pub fn num_records(&self) -> usize {
        let n = self.shared.source.len();
        let per = n / self.shared.cfg.num_parts;
        if self.shared.cfg.num_parts == 1 {
            n
        } else {
            per
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The record order of an epoch and the batches it makes: (batches of
    /// indices with their pad count, records carried to the next epoch).
    fn plan(&self) -> (Vec<(Vec<usize>, usize)>, Vec<usize>) {
        let cfg = &self.shared.cfg;
        let n = self.shared.source.len();
        let (lo, hi) = if cfg.num_parts == 1 {
            (0, n)
        } else {
            let per = n / cfg.num_parts;
            (cfg.part_index * per, (cfg.part_index + 1) * per)
        };
        let mut order: Vec<usize> = (lo..hi).collect();
        if cfg.shuffle {
            let mut rng = Rng::seeded(
                cfg.seed ^ 0x5EED_0F5A_FF1E ^ self.epoch.wrapping_mul(0xA24B_AED4_963E_E407),
            );
            for i in (1..order.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                order.swap(i, j);
            }
        }
        let mut seq = self.carry.clone();
        seq.extend_from_slice(&order);
        let bs = cfg.batch_size;
        let mut batches = Vec::new();
        let mut carry = Vec::new();
        let full = seq.len() / bs;
        for b in 0..full {
            batches.push((seq[b * bs..(b + 1) * bs].to_vec(), 0));
        }
        let rest = &seq[full * bs..];
        if !rest.is_empty() {
            match cfg.last_batch {
                LastBatch::Discard => {}
                LastBatch::RollOver => carry = rest.to_vec(),
                LastBatch::Zeros => batches.push((rest.to_vec(), 0)),
                LastBatch::Pad => {
                    let mut v = rest.to_vec();
                    let pad = bs - rest.len();
                    let mut k = 0;
                    while v.len() < bs {
                        v.push(seq[k % seq.len()]);
                        k += 1;
                    }
                    batches.push((v, pad));
                }
            }
        }
        (batches, carry)
    }

    /// Start producing this epoch's batches from batch `skip` on.
    fn start(&mut self, skip: usize) {
        let (mut batches, carry) = self.plan();
        batches.drain(..skip.min(batches.len()));
        self.delivered = skip;
        self.plan_carry = carry;
        let (tx, rx) = bounded(self.shared.cfg.prefetch.max(1));
        self.rx = Some(rx);
        let stop = Arc::new(AtomicBool::new(false));
        self.stop = stop.clone();
        let shared = self.shared.clone();
        let epoch = self.epoch;
        let handle = std::thread::Builder::new()
            .name("oxnet-image-producer".into())
            .spawn(move || produce(shared, batches, epoch, tx, stop));
        match handle {
            Ok(h) => self.handle = Some(h),
            Err(e) => {
                // report through the queue: the next wait sees it
                let (tx, rx) = bounded(1);
                let _ = tx.send(Err(Error::Engine(format!(
                    "ImageRecordIter: cannot start the producer thread: {e}"
                ))));
                self.rx = Some(rx);
            }
        }
    }

    fn stop_producer(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None; // unblocks a producer waiting to send
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }

    /// The next batch of this epoch (blocks), or `None` when it is over.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        self.revive_after_fork()?;
        let rx = match &self.rx {
            Some(rx) => rx,
            None => return Ok(None),
        };
        match rx.recv() {
            Ok(Ok(b)) => {
                self.delivered += 1;
                Ok(Some(b))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => {
                if let Some(h) = self.handle.take() {
                    if h.join().is_err() {
                        return Err(Error::Engine(
                            "ImageRecordIter: the producer thread panicked".into(),
                        ));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Start the next epoch (reshuffled; roll-over records go first).
    pub fn reset(&mut self) {
        if self.generation != crate::par::fork_generation() {
            // forked since: the threads are gone, nothing to stop
            if let Err(e) = self.renew_threads() {
                let (tx, rx) = bounded(1);
                let _ = tx.send(Err(e));
                self.rx = Some(rx);
                return;
            }
        } else {
            self.stop_producer();
        }
        self.carry = std::mem::take(&mut self.plan_carry);
        self.epoch += 1;
        self.start(0);
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if self.generation != crate::par::fork_generation() {
            // forked since: the threads are gone (see revive_after_fork)
            std::mem::forget(self.handle.take());
            std::mem::forget(self.rx.take());
            return;
        }
        self.stop_producer();
    }
}

/// A pipeline's decode pool of `threads` threads (at least one).
fn decode_pool(threads: usize) -> Result<rayon::ThreadPool> {
    let threads = threads.max(1);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("oxnet-decode-{i}"))
        .build()
        .map_err(|e| {
            Error::Engine(format!(
                "ImageRecordIter: cannot start {threads} decode threads: {e}"
            ))
        })
}

fn produce(
    shared: Arc<Shared>,
    batches: Vec<(Vec<usize>, usize)>,
    epoch: u64,
    tx: Sender<Result<Batch>>,
    stop: Arc<AtomicBool>,
) {
    let (c, h, w) = shared.aug.data_shape;
    let per = c * h * w;
    let bs = shared.cfg.batch_size;
    let lw = shared.cfg.label_width;
    for (indices, pad) in batches {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let data = match BatchData::new(&[bs, c, h, w], shared.cfg.dtype) {
            Ok(d) => d,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let mut label = vec![0f32; bs * lw];
        let labels = &mut label;
        let n = indices.len();
        let run = |slot: Slot<'_>, l: &mut [f32], idx: usize| -> Result<()> {
            guarded(|| process(&shared, epoch, idx, slot, l))
        };
        let results: Vec<Result<()>> = shared.pool.install(|| match shared.cfg.dtype {
            OutDType::F32 => {
                // SAFETY: the producer owns the fresh batch until it is sent
                let v = unsafe { data.slice_mut::<f32>() };
                v[n * per..].fill(0.0);
                v[..n * per]
                    .par_chunks_mut(per)
                    .zip(labels.par_chunks_mut(lw))
                    .zip(indices.par_iter())
                    .map(|((d, l), &idx)| {
                        let res = run(Slot::F32(d), l, idx);
                        if res.is_err() {
                            d.fill(0.0);
                            l.fill(0.0);
                        }
                        res
                    })
                    .collect()
            }
            OutDType::U8 => {
                // SAFETY: as above
                let v = unsafe { data.slice_mut::<u8>() };
                v[n * per..].fill(0);
                v[..n * per]
                    .par_chunks_mut(per)
                    .zip(labels.par_chunks_mut(lw))
                    .zip(indices.par_iter())
                    .map(|((d, l), &idx)| {
                        let res = run(Slot::U8(d), l, idx);
                        if res.is_err() {
                            d.fill(0);
                            l.fill(0.0);
                        }
                        res
                    })
                    .collect()
            }
        });
        let errors = results
            .into_iter()
            .enumerate()
            .filter_map(|(slot, r)| {
                r.err().map(|error| RecordError {
                    slot,
                    index: indices[slot],
                    location: shared.source.describe(indices[slot]),
                    error,
                })
            })
            .collect();
        let batch = Batch {
            data,
            label,
            pad,
            indices,
            errors,
            epoch,
        };
        if tx.send(Ok(batch)).is_err() {
            return;
        }
    }
}

fn guarded(f: impl FnOnce() -> Result<()>) -> Result<()> {
    crate::error::catch_panic(f, |msg| {
        Error::Decode(format!("image pipeline: decoding panicked: {msg}"))
    })
}

enum Slot<'a> {
    F32(&'a mut [f32]),
    U8(&'a mut [u8]),
}

/// `Read + Seek` over a shared file with positional reads (no shared cursor).
struct PosReader<'a> {
    file: &'a File,
    pos: u64,
    len: u64,
}

impl Read for PosReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PosReader<'_> {
    fn seek(&mut self, s: SeekFrom) -> std::io::Result<u64> {
        let p = match s {
            SeekFrom::Start(p) => p as i128,
            SeekFrom::End(d) => self.len as i128 + d as i128,
            SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if p < 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before start",
            ));
        }
        self.pos = p as u64;
        Ok(self.pos)
    }
}

/// Read, decode and augment record `idx` into its slot.
fn process(sh: &Shared, epoch: u64, idx: usize, slot: Slot<'_>, label: &mut [f32]) -> Result<()> {
    let (c, h, w) = sh.aug.data_shape;
    let lw = label.len();
    let loc = || sh.source.describe(idx);
    let with_loc = |e: Error| -> Error {
        let m = format!("{}: {}", loc(), e.message());
        match e {
            Error::Io(_) => Error::Io(m),
            Error::Param(_) => Error::Param(m),
            Error::Shape(_) => Error::Shape(m),
            _ => Error::Decode(m),
        }
    };
    // 1. bytes and labels
    let owned: Vec<u8>;
    let img_bytes: &[u8] = match &sh.source {
        RecordSource::RecordIO { path, offsets } => {
            let (file, len) = sh.file.as_ref().expect("RecordIO source has its file open");
            let mut r = RecordReader::new(
                PosReader {
                    file,
                    pos: 0,
                    len: *len,
                },
                path.display().to_string(),
            )?;
            owned = r.read_at(offsets[idx])?;
            let (hdr, rest) = recordio::unpack(&owned).map_err(with_loc)?;
            let labs = hdr.label.as_slice();
            if labs.len() < lw {
                return Err(with_loc(Error::Decode(format!(
                    "the record has {} label value(s) but label_width is {lw}",
                    labs.len()
                ))));
            }
            label.copy_from_slice(&labs[..lw]);
            rest
        }
        RecordSource::Files { root, items } => {
            let (p, labs) = &items[idx];
            if labs.len() < lw {
                return Err(with_loc(Error::Param(format!(
                    "the image has {} label value(s) but label_width is {lw}",
                    labs.len()
                ))));
            }
            label.copy_from_slice(&labs[..lw]);
            owned = std::fs::read(root.join(p))
                .map_err(|e| Error::Io(format!("{}: cannot read: {e}", loc())))?;
            &owned
        }
    };
    // 2. the image's size (headers only: the window to decode comes next)
    let buf = image::take_buf();
    let dec =
        image::Decoding::new(img_bytes, if c == 1 { 0 } else { 1 }, true).map_err(with_loc)?;
    let (ih, iw) = (dec.height, dec.width);
    let aug_seed = sh.cfg.aug_seed.unwrap_or(sh.cfg.seed);
    let mut rng = Rng::seeded(record_seed(aug_seed, epoch, idx));
    // 3. plan the shorter-side resize, the crop and the mirror (the random
    // draws in MXNet's order: resize interpolation, crop, mirror)
    let (rh, rw, resize_it) = match sh.aug.resize {
        Some(size) => {
            let (nh, nw) = image::short_side_size(ih, iw, size);
            let (nh, nw) = (nh.max(1), nw.max(1));
            if (nh, nw) == (ih, iw) {
                (nh, nw, None)
            } else {
                let it =
                    Interp::from_mxnet(sh.aug.inter_method, (ih, iw), (nh, nw), Some(&mut rng))?;
                (nh, nw, Some(it))
            }
        }
        None => (ih, iw, None),
    };
    let rect = if sh.aug.rand_crop {
        image::random_crop_rect(rw, rh, (w, h), &mut rng)
    } else {
        image::center_crop_rect(rw, rh, (w, h))
    };
    let mirror = sh.aug.rand_mirror && rng.uniform() < 0.5;
    let write = |view: ImageView<'_>, rect: Rect| match slot {
        Slot::F32(d) => image::write_chw_f32(view, rect, mirror, &sh.aug.norm, d),
        Slot::U8(d) => image::write_chw_u8(view, rect, mirror, d),
    };
    // 4. shrinking to a crop of the output size: decode (about) the source
    // of the window and resize only the window
    let shrink = rw <= iw && rh <= ih;
    if let (Some(it), true) = (resize_it, shrink && (rect.w, rect.h) == (w, h)) {
        if it.is_filter() {
            let src = image::window_source((iw, ih), (rw, rh), rect, it);
            let (img, at) = dec.window(src, buf).map_err(with_loc)?;
            let mut out = image::Image::zeros(h, w, img.channels);
            image::with_resizer(|r| {
                r.resize_window_part(img.view(), at, (iw, ih), (rw, rh), rect, it, &mut out.data)
            })?;
            let res = write(out.view(), Rect { x: 0, y: 0, w, h });
            image::give_back_buf(img.data);
            return res;
        }
    }
    let img = dec.all(buf).map_err(with_loc)?;
    // 5. otherwise resize, crop (resizing the crop when it is smaller than
    // the output), mirror, write
    let img = match resize_it {
        Some(it) => {
            let full = Rect {
                x: 0,
                y: 0,
                w: img.width,
                h: img.height,
            };
            let r = image::with_resizer(|r| r.resize(img.view(), full, rw, rh, it))?;
            image::give_back_buf(img.data);
            r
        }
        None => img,
    };
    let resized;
    let (view, rect): (ImageView<'_>, Rect) = if (rect.w, rect.h) == (w, h) {
        (img.view(), rect)
    } else {
        let it = Interp::from_mxnet(
            sh.aug.inter_method,
            (rect.h, rect.w),
            (h, w),
            Some(&mut rng),
        )?;
        resized = image::with_resizer(|r| r.resize(img.view(), rect, w, h, it))?;
        (resized.view(), Rect { x: 0, y: 0, w, h })
    };
    let res = write(view, rect);
    image::give_back_buf(img.data);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::recordio::{pack, IRHeader, IndexedRecordWriter, Label};

    fn img_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/images")
    }

    const IMAGES: &[&str] = &[
        "chelsea_160x107_thumb.jpg",
        "camera_gray_512x512.jpg",
        "clock_gray_400x300.jpg",
        "chelsea_120x80.png",
        "retina_160x120_444.jpg",
        "coffee_500x500_422.jpg",
    ];

    /// A .rec/.idx of the test images (labels = record index, id = index),
    /// repeated `reps` times, with record `bad` replaced by non-image bytes.
    fn make_rec(name: &str, reps: usize, bad: Option<usize>) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("oxnet_pipe_{}_{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (rec, idx) = (dir.join("d.rec"), dir.join("d.idx"));
        let mut w = IndexedRecordWriter::create(&idx, &rec).unwrap();
        let mut i = 0usize;
        for _ in 0..reps {
            for f in IMAGES {
                let bytes = if Some(i) == bad {
                    b"not an image".to_vec()
                } else {
                    std::fs::read(img_dir().join(f)).unwrap()
                };
                let h = IRHeader::new(Label::Array(vec![i as f32, 100.0 + i as f32]), i as u64, 0);
                w.write_key(&i.to_string(), &pack(&h, &bytes)).unwrap();
                i += 1;
            }
        }
        w.finish().unwrap();
        (dir, rec, idx)
    }

    fn aug() -> AugmentConfig {
        let mut a = AugmentConfig::new((3, 48, 64));
        a.resize = Some(56);
        a.rand_crop = true;
        a.rand_mirror = true;
        a.norm = Normalize {
            mean: vec![123.0, 117.0, 104.0],
            std: vec![58.0, 57.0, 57.5],
            scale: 1.0,
        };
        a
    }

    fn run_epochs(p: &mut Pipeline, epochs: usize) -> Vec<Vec<Batch>> {
        let mut out = Vec::new();
        for e in 0..epochs {
            if e > 0 {
                p.reset();
            }
            let mut v = Vec::new();
            while let Some(b) = p.next_batch().unwrap() {
                v.push(b);
            }
            out.push(v);
        }
        out
    }

    #[test]
    fn thread_count_does_not_change_results() {
        let (dir, rec, idx) = make_rec("threads", 2, Some(4));
        let mut results = Vec::new();
        for threads in [1usize, 3] {
            let mut cfg = PipelineConfig::new(5);
            cfg.shuffle = true;
            cfg.seed = 11;
            cfg.num_threads = threads;
            cfg.label_width = 2;
            let mut p =
                Pipeline::new(RecordSource::indexed(&rec, &idx).unwrap(), aug(), cfg).unwrap();
            results.push(run_epochs(&mut p, 2));
        }
        assert_eq!(results[0], results[1]);
        let epochs = &results[0];
        // 12 records, batch 5: 3 batches, the last padded with 3
        assert_eq!(epochs[0].len(), 3);
        assert_eq!(epochs[0][2].pad, 3);
        let order0: Vec<usize> = epochs[0].iter().flat_map(|b| b.indices.clone()).collect();
        let order1: Vec<usize> = epochs[1].iter().flat_map(|b| b.indices.clone()).collect();
        let mut s = order0[..12].to_vec();
        s.sort();
        assert_eq!(s, (0..12).collect::<Vec<_>>());
        assert_ne!(order0, order1, "each epoch reshuffles");
        assert_eq!(
            &order0[12..],
            &order0[..3],
            "padding wraps to the epoch start"
        );
        // labels follow the records; the bad record is reported and zeroed
        let mut seen_bad = 0;
        for b in &epochs[0] {
            for (slot, &i) in b.indices.iter().enumerate() {
                let lab = &b.label[slot * 2..slot * 2 + 2];
                if i == 4 {
                    assert_eq!(lab, &[0.0, 0.0]);
                } else {
                    assert_eq!(lab, &[i as f32, 100.0 + i as f32]);
                }
            }
            for e in &b.errors {
                assert_eq!(e.index, 4);
                assert_eq!(b.indices[e.slot], 4);
                let m = e.error.message();
                assert!(
                    m.contains("d.rec record 4 at byte") && m.contains("neither JPEG nor PNG"),
                    "{m}"
                );
                if let Some(d) = b.data.f32() {
                    assert!(d[e.slot * 3 * 48 * 64..][..3 * 48 * 64]
                        .iter()
                        .all(|v| *v == 0.0));
                }
                seen_bad += 1;
            }
        }
        assert!(seen_bad >= 1);
        // different seed, different augmentation
        let mut cfg = PipelineConfig::new(5);
        cfg.shuffle = true;
        cfg.seed = 12;
        cfg.label_width = 2;
        let mut p = Pipeline::new(RecordSource::indexed(&rec, &idx).unwrap(), aug(), cfg).unwrap();
        assert_ne!(run_epochs(&mut p, 1)[0], epochs[0]);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn deterministic_output_matches_direct_calls() {
        let (dir, rec, _idx) = make_rec("direct", 1, None);
        let mut a = AugmentConfig::new((3, 40, 50));
        a.resize = Some(60);
        a.norm = Normalize {
            mean: vec![1.0, 2.0, 3.0],
            std: vec![2.0, 3.0, 4.0],
            scale: 1.0,
        };
        let mut cfg = PipelineConfig::new(2);
        cfg.num_threads = 2;
        cfg.prefetch = 1;
        let mut p = Pipeline::new(RecordSource::scanned(&rec).unwrap(), a.clone(), cfg).unwrap();
        let batches = run_epochs(&mut p, 1).remove(0);
        assert_eq!(batches.len(), 3);
        for b in &batches {
            assert!(b.errors.is_empty());
            let d = b.data.f32().unwrap();
            for (slot, &i) in b.indices.iter().enumerate() {
                let bytes = std::fs::read(img_dir().join(IMAGES[i])).unwrap();
                let img = image::imdecode(&bytes, 1, true).unwrap();
                let img = image::resize_short(img.view(), 60, 1).unwrap();
                let (crop, _) = image::center_crop(img.view(), (50, 40), 1).unwrap();
                let mut want = vec![0f32; 3 * 40 * 50];
                let full = Rect {
                    x: 0,
                    y: 0,
                    w: 50,
                    h: 40,
                };
                image::write_chw_f32(crop.view(), full, false, &a.norm, &mut want).unwrap();
                assert_eq!(&d[slot * 6000..(slot + 1) * 6000], &want[..], "record {i}");
            }
        }
        // u8 output, gray
        let mut a = AugmentConfig::new((1, 30, 30));
        a.resize = Some(30);
        let mut cfg = PipelineConfig::new(6);
        cfg.dtype = OutDType::U8;
        let mut p = Pipeline::new(RecordSource::scanned(&rec).unwrap(), a, cfg).unwrap();
        let b = p.next_batch().unwrap().unwrap();
        let d = b.data.u8().unwrap();
        assert_eq!(d.len(), 6 * 900);
        let bytes = std::fs::read(img_dir().join(IMAGES[1])).unwrap();
        let g = image::imdecode(&bytes, 0, true).unwrap();
        let g = image::resize_short(g.view(), 30, 1).unwrap();
        assert_eq!(&d[900..1800], &g.data[..]);
        assert!(p.next_batch().unwrap().is_none());
        assert!(p.next_batch().unwrap().is_none());
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn parts_and_last_batch_modes() {
        let (dir, rec, idx) = make_rec("parts", 2, None); // 12 records
        let src = RecordSource::indexed(&rec, &idx).unwrap();
        let small = AugmentConfig::new((3, 8, 8));
        let ids = |p: &mut Pipeline| -> Vec<Vec<usize>> {
            let mut v = Vec::new();
            while let Some(b) = p.next_batch().unwrap() {
                v.push(b.indices.clone());
            }
            v
        };
        // parts: 12 / 5 = 2 records each, disjoint
        let mut all = Vec::new();
        for part in 0..5 {
            let mut cfg = PipelineConfig::new(2);
            cfg.part_index = part;
            cfg.num_parts = 5;
            let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
            assert_eq!(p.num_records(), 2);
            all.extend(ids(&mut p).concat());
        }
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        // discard
        let mut cfg = PipelineConfig::new(5);
        cfg.last_batch = LastBatch::Discard;
        let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
        assert_eq!(ids(&mut p), vec![vec![0, 1, 2, 3, 4], vec![5, 6, 7, 8, 9]]);
        // zeros (round_batch=False): a short last batch, zero-filled, pad 0
        let mut cfg = PipelineConfig::new(5);
        cfg.last_batch = LastBatch::Zeros;
        cfg.label_width = 2;
        let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
        let mut bs = Vec::new();
        while let Some(b) = p.next_batch().unwrap() {
            bs.push(b);
        }
        assert_eq!(bs.len(), 3);
        assert_eq!(bs[2].indices, vec![10, 11]);
        assert_eq!(bs[2].pad, 0);
        let d = bs[2].data.f32().unwrap();
        assert_eq!(d.len(), 5 * 3 * 64);
        assert!(d[2 * 192..].iter().all(|v| *v == 0.0));
        assert!(d[..2 * 192].iter().any(|v| *v != 0.0));
        assert_eq!(&bs[2].label[4..], &[0.0; 6]);
        // roll over: 10, 11 start the next epoch
        let mut cfg = PipelineConfig::new(5);
        cfg.last_batch = LastBatch::RollOver;
        let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
        assert_eq!(ids(&mut p).len(), 2);
        p.reset();
        let e1 = ids(&mut p);
        assert_eq!(e1[0], vec![10, 11, 0, 1, 2]);
        assert_eq!(e1.len(), 2);
        p.reset();
        assert_eq!(ids(&mut p)[0], vec![8, 9, 10, 11, 0]);
        // reset in the middle of an epoch, and drop with batches pending: no hang
        let mut cfg = PipelineConfig::new(1);
        cfg.prefetch = 1;
        let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
        p.next_batch().unwrap();
        p.reset();
        assert_eq!(p.epoch(), 1);
        assert_eq!(ids(&mut p).len(), 12);
        drop(p);
        // bad configurations
        let bad = |f: &dyn Fn(&mut PipelineConfig, &mut AugmentConfig)| {
            let mut c = PipelineConfig::new(2);
            let mut a = small.clone();
            f(&mut c, &mut a);
            Pipeline::new(src.clone(), a, c).err().unwrap()
        };
        assert!(bad(&|c, _| c.part_index = 3)
            .message()
            .contains("part_index"));
        assert!(bad(&|c, _| c.batch_size = 0)
            .message()
            .contains("batch_size"));
        assert!(bad(&|_, a| a.data_shape = (2, 8, 8))
            .message()
            .contains("channels"));
        assert!(bad(&|_, a| a.inter_method = 5)
            .message()
            .contains("interp=5"));
        assert!(bad(&|_, a| a.norm.mean = vec![1.0])
            .message()
            .contains("mean"));
        // label_width larger than the record's labels: per-record errors
        let mut cfg = PipelineConfig::new(12);
        cfg.label_width = 3;
        let mut p = Pipeline::new(src.clone(), small.clone(), cfg).unwrap();
        let b = p.next_batch().unwrap().unwrap();
        assert_eq!(b.errors.len(), 12);
        assert!(b.errors[0].error.message().contains("label_width is 3"));
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn file_list_source() {
        let items: Vec<(PathBuf, Vec<f32>)> = IMAGES
            .iter()
            .enumerate()
            .map(|(i, f)| (PathBuf::from(f), vec![i as f32]))
            .chain(std::iter::once((PathBuf::from("missing.jpg"), vec![9.0])))
            .collect();
        let src = RecordSource::Files {
            root: img_dir(),
            items,
        };
        let mut cfg = PipelineConfig::new(7);
        cfg.num_threads = 2;
        let mut p = Pipeline::new(src, aug(), cfg).unwrap();
        let b = p.next_batch().unwrap().unwrap();
        assert_eq!(b.label, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]);
        assert_eq!(b.errors.len(), 1);
        assert_eq!(b.errors[0].slot, 6);
        assert!(matches!(b.errors[0].error, Error::Io(_)));
        assert!(b.errors[0].location.ends_with("missing.jpg"));
        assert!(p.next_batch().unwrap().is_none());
    }

    /// `cargo test --release -p oxnet-core decode_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn decode_speed_pipeline() {
        let (dir, rec, idx) = make_rec("speed", 20, None);
        let src = RecordSource::indexed(&rec, &idx).unwrap();
        let mut a = AugmentConfig::new((3, 224, 224));
        a.resize = Some(256);
        a.rand_crop = true;
        a.rand_mirror = true;
        a.norm = Normalize {
            mean: vec![123.68, 116.28, 103.53],
            std: vec![58.4, 57.1, 57.4],
            scale: 1.0,
        };
        for threads in [1usize, 2] {
            let mut cfg = PipelineConfig::new(32);
            cfg.num_threads = threads;
            cfg.shuffle = true;
            cfg.prefetch = 4;
            let mut p = Pipeline::new(src.clone(), a.clone(), cfg).unwrap();
            let t = std::time::Instant::now();
            let mut n = 0;
            for e in 0..3 {
                if e > 0 {
                    p.reset();
                }
                while let Some(b) = p.next_batch().unwrap() {
                    assert!(b.errors.is_empty());
                    n += b.indices.len() - b.pad;
                }
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "pipeline (rec -> decode -> resize_short 256 -> rand crop 224 -> flip -> CHW f32), {threads} thread(s): {:.0} images/s ({n} images)",
                n as f64 / s
            );
        }
        std::fs::remove_dir_all(dir).ok();
    }
}
