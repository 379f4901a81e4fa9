//! MXNet / dmlc-core RecordIO, byte-compatible with MXNet 1.9.1 files.
//!
//! Each physical chunk is `magic (u32 LE) | lrec (u32 LE) | payload | pad`,
//! with `lrec = (cflag << 29) | length` and the payload padded with zeros to a
//! multiple of 4 bytes. A logical record whose payload contains the magic
//! number at a 4-byte-aligned position is split there: the magic bytes are
//! dropped and the pieces are written with cflag 1 (first), 2 (middle) and
//! 3 (last); the reader puts the magic back between the pieces. A record
//! without an embedded magic is one chunk with cflag 0.
//!
//! `.idx` files are text, one `key\toffset` line per record, where offset is
//! the byte position of the record's first chunk.
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The RecordIO magic number (written little-endian: `0a 23 d7 ce`).
pub const MAGIC: u32 = 0xced7_230a;
const MAGIC_BYTES: [u8; 4] = MAGIC.to_le_bytes();
/// Largest payload one chunk (and one record) may hold: 2^29 - 1 bytes.
pub const MAX_RECORD_LEN: usize = (1 << 29) - 1;

#[inline]
pub fn encode_lrec(cflag: u32, len: u32) -> u32 {
    (cflag << 29) | len
}
#[inline]
pub fn decode_flag(lrec: u32) -> u32 {
    (lrec >> 29) & 7
}
#[inline]
pub fn decode_length(lrec: u32) -> u32 {
    lrec & ((1 << 29) - 1)
}

#[inline]
fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Encode one logical record exactly as dmlc-core's `RecordIOWriter::WriteRecord`
/// does, appending the chunks to `out`.
pub fn encode_record_into(payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if payload.len() > MAX_RECORD_LEN {
        return Err(Error::Param(format!(
            "RecordIO: a record of {} bytes is too large (at most 2^29 - 1 = {} bytes)",
            payload.len(),
            MAX_RECORD_LEN
        )));
    }
    let len = payload.len();
    let lower = len & !3;
    let mut dptr = 0usize;
    let mut i = 0usize;
    while i < lower {
        if payload[i..i + 4] == MAGIC_BYTES {
            let cflag = if dptr == 0 { 1 } else { 2 };
            out.extend_from_slice(&MAGIC_BYTES);
            out.extend_from_slice(&encode_lrec(cflag, (i - dptr) as u32).to_le_bytes());
            out.extend_from_slice(&payload[dptr..i]);
            dptr = i + 4;
        }
        i += 4;
    }
    let cflag = if dptr != 0 { 3 } else { 0 };
    out.extend_from_slice(&MAGIC_BYTES);
    out.extend_from_slice(&encode_lrec(cflag, (len - dptr) as u32).to_le_bytes());
    out.extend_from_slice(&payload[dptr..]);
    out.resize(out.len() + (pad4(len) - len), 0);
    Ok(())
}

/// Encode one logical record into a fresh buffer.
pub fn encode_record(payload: &[u8]) -> Result<Vec<u8>> {
    let mut v = Vec::with_capacity(pad4(payload.len()) + 8);
    encode_record_into(payload, &mut v)?;
    Ok(v)
}

/// Writes RecordIO records to any `Write` sink and tracks the byte position.
pub struct RecordWriter<W: Write> {
    inner: W,
    pos: u64,
    name: String,
    buf: Vec<u8>,
}

impl RecordWriter<BufWriter<File>> {
    /// Create (truncate) `path` for writing.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let p = path.as_ref();
        let f = File::create(p)
            .map_err(|e| Error::Io(format!("RecordIO: cannot create {}: {e}", p.display())))?;
        Ok(RecordWriter::new(
            BufWriter::new(f),
            p.display().to_string(),
        ))
    }
}

impl<W: Write> RecordWriter<W> {
    /// Wrap a sink; `name` is used in error messages. Positions start at 0.
    pub fn new(inner: W, name: impl Into<String>) -> Self {
        RecordWriter {
            inner,
            pos: 0,
            name: name.into(),
            buf: Vec::new(),
        }
    }
    /// Byte offset where the next record will start.
    pub fn tell(&self) -> u64 {
        self.pos
    }
    /// Write one record; returns the offset it starts at.
    pub fn write_record(&mut self, payload: &[u8]) -> Result<u64> {
        let start = self.pos;
        self.buf.clear();
        encode_record_into(payload, &mut self.buf)?;
        self.inner.write_all(&self.buf).map_err(|e| {
            Error::Io(format!(
                "RecordIO: write to {} failed at byte {start}: {e}",
                self.name
            ))
        })?;
        self.pos += self.buf.len() as u64;
        Ok(start)
    }
    pub fn flush(&mut self) -> Result<()> {
        self.inner
            .flush()
            .map_err(|e| Error::Io(format!("RecordIO: flush of {} failed: {e}", self.name)))
    }
    /// Flush and return the sink.
    pub fn into_inner(mut self) -> Result<W> {
        self.flush()?;
        Ok(self.inner)
    }
}

/// Reads RecordIO records from any `Read + Seek` source.
pub struct RecordReader<R: Read + Seek> {
    inner: R,
    pos: u64,
    end: u64,
    name: String,
    failed: bool,
}

impl RecordReader<BufReader<File>> {
    /// Open `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let p = path.as_ref();
        let f = File::open(p)
            .map_err(|e| Error::Io(format!("RecordIO: cannot open {}: {e}", p.display())))?;
        RecordReader::new(
            BufReader::with_capacity(1 << 16, f),
            p.display().to_string(),
        )
    }
}

impl<R: Read + Seek> RecordReader<R> {
    /// Wrap a source positioned anywhere; reading starts at offset 0.
    pub fn new(mut inner: R, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let io = |e: std::io::Error| Error::Io(format!("RecordIO: cannot seek in {name}: {e}"));
        let end = inner.seek(SeekFrom::End(0)).map_err(io)?;
        inner.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(RecordReader {
            inner,
            pos: 0,
            end,
            name,
            failed: false,
        })
    }
    /// The name used in error messages (usually the path).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Total size of the source in bytes.
    pub fn len(&self) -> u64 {
        self.end
    }
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
    /// Byte offset of the next record.
    pub fn tell(&self) -> u64 {
        self.pos
    }
    /// Move to a record start (an offset from a `.idx` file or `tell`).
    pub fn seek(&mut self, offset: u64) -> Result<()> {
        if offset > self.end {
            return Err(Error::Io(format!(
                "RecordIO: cannot seek {} to byte {offset}: the file has {} bytes",
                self.name, self.end
            )));
        }
        self.inner.seek(SeekFrom::Start(offset)).map_err(|e| {
            Error::Io(format!(
                "RecordIO: cannot seek {} to byte {offset}: {e}",
                self.name
            ))
        })?;
        self.pos = offset;
        self.failed = false;
        Ok(())
    }
    /// Back to the first record.
    pub fn reset(&mut self) -> Result<()> {
        self.seek(0)
    }

    fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let at = self.pos;
        let avail = self.end.saturating_sub(at);
        if (buf.len() as u64) > avail {
            return Err(Error::Io(format!(
                "RecordIO: {} is truncated: {what} at byte {at} needs {} bytes but only {avail} remain",
                self.name,
                buf.len()
            )));
        }
        self.inner.read_exact(buf).map_err(|e| {
            Error::Io(format!(
                "RecordIO: reading {what} from {} at byte {at} failed: {e}",
                self.name
            ))
        })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    /// Read the next logical record into `out` (cleared first). Returns
    /// `Ok(false)` at a clean end of file.
    pub fn read_record_into(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let record_start = self.pos;
        let mut first = true;
        loop {
            if self.pos == self.end {
                if first {
                    return Ok(false);
                }
                self.failed = true;
                return Err(Error::Io(format!(
                    "RecordIO: {} is truncated: the record starting at byte {record_start} \
                     is split and its last part is missing (file ends at byte {})",
                    self.name, self.end
                )));
            }
            let chunk_at = self.pos;
            let mut head = [0u8; 8];
            if let Err(e) = self.read_exact_at(&mut head, "a record header") {
                self.failed = true;
                return Err(e);
            }
            let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
            if magic != MAGIC {
                self.failed = true;
                return Err(Error::Decode(format!(
                    "RecordIO: {} is corrupt: bad magic number 0x{magic:08x} at byte {chunk_at} \
                     (expected 0x{MAGIC:08x}); is this a RecordIO file, and is the offset a record start?",
                    self.name
                )));
            }
            let lrec = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
            let cflag = decode_flag(lrec);
            let len = decode_length(lrec) as usize;
            let ok = matches!((first, cflag), (true, 0 | 1) | (false, 2 | 3));
            if !ok {
                self.failed = true;
                return Err(Error::Decode(format!(
                    "RecordIO: {} is corrupt: unexpected continuation flag {cflag} at byte {chunk_at} \
                     ({})",
                    self.name,
                    if first {
                        "a record must start with flag 0 or 1"
                    } else {
                        "a split record must continue with flag 2 or 3"
                    }
                )));
            }
            let padded = pad4(len);
            if (padded as u64) > self.end - self.pos {
                self.failed = true;
                return Err(Error::Io(format!(
                    "RecordIO: {} is truncated: the chunk at byte {chunk_at} declares {len} payload \
                     bytes but only {} remain",
                    self.name,
                    self.end - self.pos
                )));
            }
            let base = out.len();
            out.resize(base + padded, 0);
            if let Err(e) = self.read_exact_at(&mut out[base..], "a record payload") {
                self.failed = true;
                return Err(e);
            }
            out.truncate(base + len);
            if cflag == 0 || cflag == 3 {
                return Ok(true);
            }
            out.extend_from_slice(&MAGIC_BYTES);
            first = false;
        }
    }

    /// Read the next logical record; `None` at end of file.
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        let mut v = Vec::new();
        Ok(if self.read_record_into(&mut v)? {
            Some(v)
        } else {
            None
        })
    }

    /// Read the record starting at `offset`.
    pub fn read_at(&mut self, offset: u64) -> Result<Vec<u8>> {
        self.seek(offset)?;
        match self.read_record()? {
            Some(v) => Ok(v),
            None => Err(Error::Io(format!(
                "RecordIO: no record at byte {offset} of {}: that is the end of the file",
                self.name
            ))),
        }
    }

    /// Offsets of every logical record, scanning from the start (for files
    /// without an `.idx`). Leaves the reader at the end.
    pub fn scan_offsets(&mut self) -> Result<Vec<u64>> {
        self.seek(0)?;
        let mut offs = Vec::new();
        let mut buf = Vec::new();
        loop {
            let at = self.pos;
            if !self.read_record_into(&mut buf)? {
                return Ok(offs);
            }
            offs.push(at);
        }
    }
}

/// Iteration yields records until the end or the first error (after an
/// error the iterator stops; `seek` re-arms it).
impl<R: Read + Seek> Iterator for RecordReader<R> {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.read_record().transpose()
    }
}

/// One `.idx` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxEntry {
    pub key: String,
    pub offset: u64,
}

/// Parse `.idx` text (`key\toffset` per line, blank lines skipped).
pub fn parse_idx(text: &str, name: &str) -> Result<Vec<IdxEntry>> {
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut it = line.split('\t');
        let key = it.next().unwrap_or("").trim();
        let off = it.next().map(str::trim);
        let off = match off {
            Some(o) => o.parse::<u64>().map_err(|_| {
                Error::Decode(format!(
                    "RecordIO index {name}: line {}: offset {o:?} is not a non-negative integer",
                    ln + 1
                ))
            })?,
            None => {
                return Err(Error::Decode(format!(
                    "RecordIO index {name}: line {}: expected 'key<TAB>offset', got {line:?}",
                    ln + 1
                )))
            }
        };
        out.push(IdxEntry {
            key: key.to_string(),
            offset: off,
        });
    }
    Ok(out)
}

/// Read and parse an `.idx` file.
pub fn read_idx_file(path: impl AsRef<Path>) -> Result<Vec<IdxEntry>> {
    let p = path.as_ref();
    let f = File::open(p)
        .map_err(|e| Error::Io(format!("RecordIO: cannot open index {}: {e}", p.display())))?;
    let mut text = String::new();
    BufReader::new(f)
        .read_to_string(&mut text)
        .map_err(|e| Error::Io(format!("RecordIO: cannot read index {}: {e}", p.display())))?;
    parse_idx(&text, &p.display().to_string())
}

/// Random access by key through an `.idx` file (like `MXIndexedRecordIO` in
/// read mode). Keys keep file order; a repeated key maps to its last offset.
pub struct IndexedRecordReader {
    reader: RecordReader<BufReader<File>>,
    entries: Vec<IdxEntry>,
    map: HashMap<String, u64>,
}

impl IndexedRecordReader {
    pub fn open(idx_path: impl AsRef<Path>, rec_path: impl AsRef<Path>) -> Result<Self> {
        let entries = read_idx_file(idx_path.as_ref())?;
        let reader = RecordReader::open(rec_path.as_ref())?;
        for e in &entries {
            if e.offset >= reader.len() && !(e.offset == 0 && reader.is_empty()) {
                return Err(Error::Decode(format!(
                    "RecordIO index {}: key {:?} points to byte {} but {} has only {} bytes",
                    idx_path.as_ref().display(),
                    e.key,
                    e.offset,
                    reader.name(),
                    reader.len()
                )));
            }
        }
        let map = entries.iter().map(|e| (e.key.clone(), e.offset)).collect();
        Ok(IndexedRecordReader {
            reader,
            entries,
            map,
        })
    }
    /// Keys in file order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.key.as_str())
    }
    pub fn entries(&self) -> &[IdxEntry] {
        &self.entries
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn offset_of(&self, key: &str) -> Option<u64> {
        self.map.get(key).copied()
    }
    /// Read the record stored under `key`.
    pub fn read_key(&mut self, key: &str) -> Result<Vec<u8>> {
        let off = self.offset_of(key).ok_or_else(|| {
            Error::Index(format!(
                "RecordIO: key {key:?} is not in the index of {}",
                self.reader.name()
            ))
        })?;
        self.reader.read_at(off)
    }
    /// Read the record at `offset`.
    pub fn read_at(&mut self, offset: u64) -> Result<Vec<u8>> {
        self.reader.read_at(offset)
    }
    pub fn reader(&mut self) -> &mut RecordReader<BufReader<File>> {
        &mut self.reader
    }
}

/// Writes a `.rec` and its `.idx` (like `MXIndexedRecordIO` in write mode).
pub struct IndexedRecordWriter {
    writer: RecordWriter<BufWriter<File>>,
    idx: BufWriter<File>,
    idx_name: String,
}

impl IndexedRecordWriter {
    pub fn create(idx_path: impl AsRef<Path>, rec_path: impl AsRef<Path>) -> Result<Self> {
        let writer = RecordWriter::create(rec_path)?;
        let p = idx_path.as_ref();
        let f = File::create(p).map_err(|e| {
            Error::Io(format!(
                "RecordIO: cannot create index {}: {e}",
                p.display()
            ))
        })?;
        Ok(IndexedRecordWriter {
            writer,
            idx: BufWriter::new(f),
            idx_name: p.display().to_string(),
        })
    }
    /// Append a record under `key`; returns its offset.
    pub fn write_key(&mut self, key: &str, payload: &[u8]) -> Result<u64> {
        if key.contains('\t') || key.contains('\n') {
            return Err(Error::Param(format!(
                "RecordIO: index key {key:?} may not contain a tab or a newline"
            )));
        }
        let off = self.writer.write_record(payload)?;
        writeln!(self.idx, "{key}\t{off}")
            .map_err(|e| Error::Io(format!("RecordIO: write to {} failed: {e}", self.idx_name)))?;
        Ok(off)
    }
    pub fn tell(&self) -> u64 {
        self.writer.tell()
    }
    /// Flush both files.
    pub fn finish(mut self) -> Result<()> {
        self.writer.flush()?;
        self.idx
            .flush()
            .map_err(|e| Error::Io(format!("RecordIO: flush of {} failed: {e}", self.idx_name)))
    }
}

/// The label part of an `IRHeader`.
#[derive(Debug, Clone, PartialEq)]
pub enum Label {
    /// `flag == 0`: the label is the header's f32 field.
    Scalar(f32),
    /// `flag > 0`: `flag` f32 values follow the header.
    Array(Vec<f32>),
}

impl Label {
    pub fn as_slice(&self) -> &[f32] {
        match self {
            Label::Scalar(v) => std::slice::from_ref(v),
            Label::Array(v) => v,
        }
    }
}

/// MXNet's image record header (`struct.pack('IfQQ', flag, label, id, id2)`).
#[derive(Debug, Clone, PartialEq)]
pub struct IRHeader {
    pub flag: u32,
    pub label: Label,
    pub id: u64,
    pub id2: u64,
}

pub const IR_SIZE: usize = 24;

impl IRHeader {
    pub fn new(label: Label, id: u64, id2: u64) -> IRHeader {
        let flag = match &label {
            Label::Scalar(_) => 0,
            Label::Array(v) => v.len() as u32,
        };
        IRHeader {
            flag,
            label,
            id,
            id2,
        }
    }
}

/// `mx.recordio.pack`: the flag is taken from the label (0 for a scalar,
/// the array length otherwise, with the header's label field 0).
pub fn pack(header: &IRHeader, payload: &[u8]) -> Vec<u8> {
    let (flag, lab, arr): (u32, f32, &[f32]) = match &header.label {
        Label::Scalar(v) => (0, *v, &[]),
        Label::Array(v) => (v.len() as u32, 0.0, v),
    };
    let mut out = Vec::with_capacity(IR_SIZE + 4 * arr.len() + payload.len());
    out.extend_from_slice(&flag.to_le_bytes());
    out.extend_from_slice(&lab.to_le_bytes());
    out.extend_from_slice(&header.id.to_le_bytes());
    out.extend_from_slice(&header.id2.to_le_bytes());
    for v in arr {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// `mx.recordio.unpack`: the header and the rest of the record.
pub fn unpack(rec: &[u8]) -> Result<(IRHeader, &[u8])> {
    if rec.len() < IR_SIZE {
        return Err(Error::Decode(format!(
            "recordio.unpack: record of {} bytes is shorter than the {IR_SIZE}-byte IRHeader",
            rec.len()
        )));
    }
    let u32at = |i: usize| u32::from_le_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
    let u64at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let flag = u32at(0);
    let lab = f32::from_bits(u32at(4));
    let id = u64at(8);
    let id2 = u64at(16);
    let rest = &rec[IR_SIZE..];
    if flag == 0 {
        return Ok((
            IRHeader {
                flag,
                label: Label::Scalar(lab),
                id,
                id2,
            },
            rest,
        ));
    }
    let need = flag as usize * 4;
    if rest.len() < need {
        return Err(Error::Decode(format!(
            "recordio.unpack: header flag {flag} announces {flag} float labels ({need} bytes) but \
             only {} bytes follow the header",
            rest.len()
        )));
    }
    let label: Vec<f32> = rest[..need]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((
        IRHeader {
            flag,
            label: Label::Array(label),
            id,
            id2,
        },
        &rest[need..],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Rng;
    use std::io::Cursor;

    fn read_all(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        let r = RecordReader::new(Cursor::new(bytes), "mem")?;
        r.collect()
    }

    #[test]
    fn simple_record_layout() {
        let enc = encode_record(b"abcde").unwrap();
        assert_eq!(&enc[..4], &[0x0a, 0x23, 0xd7, 0xce]);
        assert_eq!(u32::from_le_bytes(enc[4..8].try_into().unwrap()), 5);
        assert_eq!(&enc[8..13], b"abcde");
        assert_eq!(&enc[13..], &[0, 0, 0]);
        assert_eq!(encode_record(b"").unwrap().len(), 8);
        assert_eq!(encode_record(b"abcd").unwrap().len(), 12);
    }

    #[test]
    fn split_record_layout_matches_dmlc() {
        // payload: "ab" + 2 bytes, then magic at offset 4, then "xyz"
        let mut p = b"abcd".to_vec();
        p.extend_from_slice(&MAGIC_BYTES);
        p.extend_from_slice(b"xyz");
        let enc = encode_record(&p).unwrap();
        // chunk 1: cflag 1, len 4, "abcd"; chunk 2: cflag 3, len 3, "xyz" + 1 pad
        let mut want = Vec::new();
        want.extend_from_slice(&MAGIC_BYTES);
        want.extend_from_slice(&encode_lrec(1, 4).to_le_bytes());
        want.extend_from_slice(b"abcd");
        want.extend_from_slice(&MAGIC_BYTES);
        want.extend_from_slice(&encode_lrec(3, 3).to_le_bytes());
        want.extend_from_slice(b"xyz\0");
        assert_eq!(enc, want);
        assert_eq!(read_all(&enc).unwrap(), vec![p]);

        // magic at start, twice in a row, and at the very end
        let mut q = MAGIC_BYTES.to_vec();
        q.extend_from_slice(&MAGIC_BYTES);
        q.extend_from_slice(b"1234");
        q.extend_from_slice(&MAGIC_BYTES);
        let enc = encode_record(&q).unwrap();
        let lrecs: Vec<u32> = (0..4)
            .map(|k| {
                u32::from_le_bytes(
                    enc[8 * k + 4 + if k == 3 { 4 } else { 0 }..][..4]
                        .try_into()
                        .unwrap(),
                )
            })
            .collect();
        assert_eq!(lrecs[0], encode_lrec(1, 0));
        assert_eq!(lrecs[1], encode_lrec(2, 0));
        assert_eq!(lrecs[2], encode_lrec(2, 4));
        assert_eq!(lrecs[3], encode_lrec(3, 0));
        assert_eq!(enc.len(), 8 * 4 + 4);
        assert_eq!(read_all(&enc).unwrap(), vec![q]);

        // a magic at an unaligned position is not split
        let mut u = b"a".to_vec();
        u.extend_from_slice(&MAGIC_BYTES);
        let enc = encode_record(&u).unwrap();
        assert_eq!(
            decode_flag(u32::from_le_bytes(enc[4..8].try_into().unwrap())),
            0
        );
        assert_eq!(read_all(&enc).unwrap(), vec![u]);
    }

    #[test]
    fn property_round_trip_random_payloads() {
        let mut rng = Rng::seeded(42);
        for trial in 0..200 {
            let n = rng.below(20) as usize;
            let mut recs = Vec::new();
            for _ in 0..n {
                let len = rng.below(64) as usize;
                let mut p: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                // sprinkle magic numbers, aligned and not
                let k = rng.below(4);
                for _ in 0..k {
                    let at = rng.below(len as u64 + 1) as usize;
                    for (j, b) in MAGIC_BYTES.iter().enumerate() {
                        if at + j < p.len() {
                            p[at + j] = *b;
                        } else {
                            p.push(*b);
                        }
                    }
                }
                recs.push(p);
            }
            let mut w = RecordWriter::new(Vec::new(), "mem");
            let mut offs = Vec::new();
            for r in &recs {
                offs.push(w.write_record(r).unwrap());
            }
            let bytes = w.into_inner().unwrap();
            assert_eq!(bytes.len() % 4, 0);
            assert_eq!(read_all(&bytes).unwrap(), recs, "trial {trial}");
            let mut r = RecordReader::new(Cursor::new(&bytes[..]), "mem").unwrap();
            assert_eq!(r.scan_offsets().unwrap(), offs);
            // random access in reverse order
            for (i, o) in offs.iter().enumerate().rev() {
                assert_eq!(r.read_at(*o).unwrap(), recs[i]);
            }
        }
    }

    #[test]
    fn fuzz_random_bytes_never_panic() {
        let mut rng = Rng::seeded(7);
        let good = {
            let mut w = RecordWriter::new(Vec::new(), "mem");
            for i in 0..6u8 {
                let mut p = vec![i; 10 + i as usize];
                p.extend_from_slice(&MAGIC_BYTES);
                w.write_record(&p).unwrap();
            }
            w.into_inner().unwrap()
        };
        let rounds = crate::io::fuzz_rounds(3000);
        for _ in 0..rounds {
            let bytes: Vec<u8> = if rng.below(2) == 0 {
                let n = rng.below(100) as usize;
                (0..n)
                    .map(|_| {
                        if rng.below(3) == 0 {
                            MAGIC_BYTES[rng.below(4) as usize]
                        } else {
                            rng.below(256) as u8
                        }
                    })
                    .collect()
            } else {
                // mutate / truncate a good file
                let mut b = good.clone();
                let flips = rng.below(4);
                for _ in 0..flips {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] = rng.below(256) as u8;
                }
                let cut = rng.below(b.len() as u64 + 1) as usize;
                b.truncate(cut);
                b
            };
            let r = RecordReader::new(Cursor::new(&bytes[..]), "fuzz").unwrap();
            for item in r {
                if let Err(e) = item {
                    let m = e.message();
                    assert!(m.contains("fuzz") && m.contains("byte"), "{m}");
                }
            }
            let _ = unpack(&bytes);
        }
    }

    #[test]
    fn truncated_and_corrupt_errors_name_file_and_offset() {
        let mut w = RecordWriter::new(Vec::new(), "mem");
        w.write_record(b"hello world").unwrap();
        let second = w.write_record(b"second").unwrap();
        let bytes = w.into_inner().unwrap();
        // truncated payload of the second record
        let cut = &bytes[..bytes.len() - 3];
        let mut r = RecordReader::new(Cursor::new(cut), "data/x.rec").unwrap();
        assert_eq!(r.next().unwrap().unwrap(), b"hello world");
        let e = r.next().unwrap().unwrap_err();
        assert!(matches!(e, Error::Io(_)));
        let m = e.message();
        assert!(
            m.contains("data/x.rec")
                && m.contains(&format!("byte {second}"))
                && m.contains("truncated"),
            "{m}"
        );
        assert!(r.next().is_none());
        // truncated header
        let cut = &bytes[..second as usize + 5];
        let mut r = RecordReader::new(Cursor::new(cut), "f.rec").unwrap();
        r.next();
        let m = r.next().unwrap().unwrap_err().message();
        assert!(
            m.contains("header") && m.contains(&format!("byte {second}")),
            "{m}"
        );
        // bad magic
        let mut bad = bytes.clone();
        bad[second as usize] ^= 0xff;
        let mut r = RecordReader::new(Cursor::new(&bad[..]), "f.rec").unwrap();
        r.next();
        let e = r.next().unwrap().unwrap_err();
        assert!(matches!(e, Error::Decode(_)));
        assert!(e.message().contains("magic") && e.message().contains(&format!("byte {second}")));
        // seeking into the middle of a record
        let mut r = RecordReader::new(Cursor::new(&bytes[..]), "f.rec").unwrap();
        assert!(r.read_at(4).unwrap_err().message().contains("byte 4"));
        assert!(r.seek(10_000).is_err());
        // split record missing its end
        let mut p = b"abcd".to_vec();
        p.extend_from_slice(&MAGIC_BYTES);
        p.extend_from_slice(b"efgh");
        let enc = encode_record(&p).unwrap();
        let m = read_all(&enc[..12]).unwrap_err().message();
        assert!(m.contains("split") && m.contains("byte 0"), "{m}");
        // a record starting with a continuation flag
        let m = read_all(&enc[12..]).unwrap_err().message();
        assert!(m.contains("continuation flag 3"), "{m}");
    }

    #[test]
    fn irheader_pack_unpack() {
        let h = IRHeader::new(Label::Scalar(3.5), 7, 9);
        let s = pack(&h, b"img");
        assert_eq!(s.len(), 27);
        assert_eq!(&s[..4], &0u32.to_le_bytes());
        assert_eq!(&s[4..8], &3.5f32.to_le_bytes());
        let (h2, rest) = unpack(&s).unwrap();
        assert_eq!(h2, h);
        assert_eq!(rest, b"img");

        let h = IRHeader::new(Label::Array(vec![1.0, 2.0, -3.0]), 1, 0);
        let s = pack(&h, b"xy");
        assert_eq!(&s[..4], &3u32.to_le_bytes());
        assert_eq!(&s[4..8], &0f32.to_le_bytes());
        let (h2, rest) = unpack(&s).unwrap();
        assert_eq!(h2.flag, 3);
        assert_eq!(h2.label.as_slice(), &[1.0, 2.0, -3.0]);
        assert_eq!(rest, b"xy");

        assert!(unpack(&s[..10]).unwrap_err().message().contains("shorter"));
        assert!(unpack(&s[..30]).unwrap_err().message().contains("flag 3"));
    }

    #[test]
    fn indexed_files_round_trip() {
        let dir = std::env::temp_dir().join(format!("oxnet_recio_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rec = dir.join("t.rec");
        let idx = dir.join("t.idx");
        let mut w = IndexedRecordWriter::create(&idx, &rec).unwrap();
        let mut payloads = Vec::new();
        for i in 0..10u32 {
            let h = IRHeader::new(Label::Scalar(i as f32), i as u64, 0);
            let mut body = vec![i as u8; 3 + i as usize];
            if i % 3 == 0 {
                body.extend_from_slice(&MAGIC_BYTES);
                body.extend_from_slice(&MAGIC_BYTES);
            }
            let p = pack(&h, &body);
            w.write_key(&i.to_string(), &p).unwrap();
            payloads.push(p);
        }
        assert!(w.write_key("a\tb", b"").is_err());
        w.finish().unwrap();
        let text = std::fs::read_to_string(&idx).unwrap();
        assert!(text.starts_with("0\t0\n1\t"));
        let mut r = IndexedRecordReader::open(&idx, &rec).unwrap();
        assert_eq!(r.len(), 10);
        assert_eq!(r.keys().collect::<Vec<_>>()[3], "3");
        for i in (0..10u32).rev() {
            let p = r.read_key(&i.to_string()).unwrap();
            assert_eq!(p, payloads[i as usize]);
            let (h, _) = unpack(&p).unwrap();
            assert_eq!(h.label, Label::Scalar(i as f32));
        }
        assert!(matches!(r.read_key("99"), Err(Error::Index(_))));
        // sequential read through the same reader
        let rr = r.reader();
        rr.reset().unwrap();
        assert_eq!(rr.count(), 10);

        // a bad index line and an out-of-range offset
        std::fs::write(&idx, "0\t0\n1\tabc\n").unwrap();
        let m = IndexedRecordReader::open(&idx, &rec)
            .err()
            .unwrap()
            .message();
        assert!(m.contains("line 2"), "{m}");
        std::fs::write(&idx, "0\t999999\n").unwrap();
        let m = IndexedRecordReader::open(&idx, &rec)
            .err()
            .unwrap()
            .message();
        assert!(m.contains("999999"), "{m}");
        let m = RecordReader::open(dir.join("missing.rec"))
            .err()
            .unwrap()
            .message();
        assert!(m.contains("missing.rec"), "{m}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
