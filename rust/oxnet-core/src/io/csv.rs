//! CSV files of numbers and the batch iterator behind `mx.io.CSVIter`.
//!
//! A file holds one sample per line: comma-separated numbers, exactly as
//! many as the sample's shape has elements. Blank lines are skipped; spaces
//! around numbers are allowed. The file is parsed once, in parallel over
//! blocks of lines; a bad line is reported with the file name and its
//! 1-based line number. Values are kept as float64, so integer columns up to
//! 2^53 survive exactly for CSVIter's int32 / int64 dtypes.
use crate::{Error, Result};
use rayon::prelude::*;

/// The numbers of a CSV file: `rows` samples of `width` values, row-major.
#[derive(Debug, Clone)]
pub struct CsvTable {
    pub rows: usize,
    pub width: usize,
    pub values: Vec<f64>,
}

/// Bytes per parallel block (rounded up to the end of a line).
const BLOCK: usize = 1 << 18;

fn parse_field(field: &[u8], path: &str, line: usize, col: usize) -> Result<f64> {
    let text = std::str::from_utf8(field)
        .map_err(|_| {
            Error::Decode(format!(
                "{path}, line {line}: field {col} is not valid UTF-8"
            ))
        })?
        .trim();
    text.parse::<f64>().map_err(|_| {
        Error::Decode(format!(
            "{path}, line {line}: field {col} ({text:?}) is not a number"
        ))
    })
}

/// Parse the lines of `block` (starting at 1-based line `first_line`),
/// appending values to a fresh vector.
fn parse_block(block: &[u8], first_line: usize, width: usize, path: &str) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(block.len() / 4);
    for (k, raw) in block.split(|&b| b == b'\n').enumerate() {
        let line = first_line + k;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let start = out.len();
        for (col, field) in raw.split(|&b| b == b',').enumerate() {
            if col < width {
                out.push(parse_field(field, path, line, col + 1)?);
            } else {
                out.push(0.0);
            }
        }
        let got = out.len() - start;
        if got != width {
            return Err(Error::Shape(format!(
                "{path}, line {line}: {got} fields, but the shape needs {width} per line"
            )));
        }
    }
    Ok(out)
}

/// Block boundaries of `text`: each block ends just after a newline (or at the end).
fn blocks(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + BLOCK).min(text.len());
        while end < text.len() && text[end - 1] != b'\n' {
            end += 1;
        }
        out.push((start, end));
        start = end;
    }
    out
}

/// Parse CSV `text` whose lines hold `width` numbers each; `path` names the
/// file in errors.
pub fn parse_csv(text: &[u8], width: usize, path: &str) -> Result<CsvTable> {
    if width == 0 {
        return Err(Error::Param(format!(
            "CSVIter: the shape for {path} has no elements"
        )));
    }
    let spans = blocks(text);
    // on the kernel pool (never rayon's global one: see crate::par)
    let newlines: Vec<usize> = crate::par::install(|| {
        spans
            .par_iter()
            .map(|&(a, b)| text[a..b].iter().filter(|&&c| c == b'\n').count())
            .collect()
    });
    let mut first = Vec::with_capacity(spans.len());
    let mut line = 1;
    for n in &newlines {
        first.push(line);
        line += n;
    }
    let parts: Vec<Result<Vec<f64>>> = crate::par::install(|| {
        spans
            .par_iter()
            .zip(first.par_iter())
            .map(|(&(a, b), &l)| {
                // A block ends with its newline: drop it so it adds no empty line.
                let body = text[a..b].strip_suffix(b"\n").unwrap_or(&text[a..b]);
                parse_block(body, l, width, path)
            })
            .collect()
    });
    let mut values = Vec::new();
    for part in parts {
        values.extend(part?);
    }
    Ok(CsvTable {
        rows: values.len() / width,
        width,
        values,
    })
}

/// Read and parse the CSV file `path` (lines of `width` numbers).
pub fn read_csv(path: &str, width: usize) -> Result<CsvTable> {
    let text = std::fs::read(path).map_err(|e| Error::Io(format!("{path}: {e}")))?;
    parse_csv(&text, width, path)
}

/// Batches over a data table and an optional label table, with MXNet's
/// CSVIter semantics for the last batch: `round_batch` fills it from the
/// start of the data (reporting those as padding) and the next epoch then
/// starts after them; otherwise the padding slots keep the previous batch's
/// values and the count of padded samples is reported.
pub struct CsvIter {
    data: CsvTable,
    label: Option<CsvTable>,
    label_width: usize,
    batch_size: usize,
    round_batch: bool,
    pos: usize,
    overflow: usize,
    done: bool,
    data_buf: Vec<f64>,
    label_buf: Vec<f64>,
}

impl CsvIter {
    /// An iterator over `data` (and `label`, same number of rows, else
    /// zeros of `label_width`).
    pub fn new(
        data: CsvTable,
        label: Option<CsvTable>,
        label_width: usize,
        batch_size: usize,
        round_batch: bool,
    ) -> Result<CsvIter> {
        if batch_size == 0 {
            return Err(Error::Param(
                "CSVIter: batch_size must be at least 1".into(),
            ));
        }
        if let Some(l) = &label {
            if l.rows != data.rows {
                return Err(Error::Shape(format!(
                    "CSVIter: data_csv has {} rows but label_csv has {}",
                    data.rows, l.rows
                )));
            }
        }
        let label_width = label.as_ref().map_or(label_width, |l| l.width);
        Ok(CsvIter {
            data_buf: vec![0.0; batch_size * data.width],
            label_buf: vec![0.0; batch_size * label_width],
            data,
            label,
            label_width,
            batch_size,
            round_batch,
            pos: 0,
            overflow: 0,
            done: false,
        })
    }

    /// The number of data rows.
    pub fn rows(&self) -> usize {
        self.data.rows
    }

    fn copy_row(&mut self, row: usize, slot: usize) {
        let w = self.data.width;
        self.data_buf[slot * w..(slot + 1) * w]
            .copy_from_slice(&self.data.values[row * w..(row + 1) * w]);
        if let Some(l) = &self.label {
            let lw = self.label_width;
            self.label_buf[slot * lw..(slot + 1) * lw]
                .copy_from_slice(&l.values[row * lw..(row + 1) * lw]);
        }
    }

    /// The next batch as (data, label, pad), or None at the end of the epoch.
    pub fn next_batch(&mut self) -> Result<Option<(Vec<f64>, Vec<f64>, usize)>> {
        if self.done {
            return Ok(None);
        }
        let bs = self.batch_size;
        let mut top = 0;
        while top < bs && self.pos < self.data.rows {
            self.copy_row(self.pos, top);
            self.pos += 1;
            top += 1;
        }
        if top == 0 {
            self.done = true;
            return Ok(None);
        }
        let mut pad = 0;
        if top < bs {
            if self.round_batch {
                if bs - top > self.data.rows {
                    return Err(Error::Param(format!(
                        "CSVIter: round_batch cannot fill a batch of {bs} from {} rows (number of input must be bigger than batch size)",
                        self.data.rows
                    )));
                }
                self.pos = 0;
                self.overflow = 0;
                while top < bs {
                    self.copy_row(self.pos, top);
                    self.pos += 1;
                    top += 1;
                    self.overflow += 1;
                }
                pad = self.overflow;
            } else {
                pad = bs - top;
            }
            self.done = true;
        }
        Ok(Some((self.data_buf.clone(), self.label_buf.clone(), pad)))
    }

    /// Start the next epoch: from the first row, or after the rows a
    /// rounded last batch already used.
    pub fn reset(&mut self) {
        if !self.round_batch || self.overflow == 0 {
            self.pos = 0;
        }
        self.overflow = 0;
        self.done = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: usize, width: usize) -> CsvTable {
        CsvTable {
            rows,
            width,
            values: (0..rows * width).map(|v| v as f64).collect(),
        }
    }

    #[test]
    fn parses_numbers_blank_lines_and_spaces() {
        let t = parse_csv(b"1.5, 2e3 ,-3\n\n4,5,2147483648\r\n", 3, "a.csv").unwrap();
        assert_eq!(t.rows, 2);
        assert_eq!(t.values, vec![1.5, 2000.0, -3.0, 4.0, 5.0, 2147483648.0]);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = parse_csv(b"1,2,3\n\n4,5\n", 3, "d.csv")
            .unwrap_err()
            .message();
        assert_eq!(e, "d.csv, line 3: 2 fields, but the shape needs 3 per line");
        let e = parse_csv(b"1,2,3,4\n", 3, "d.csv").unwrap_err().message();
        assert!(e.contains("line 1: 4 fields"), "{e}");
        let e = parse_csv(b"1,x,3\n", 3, "d.csv").unwrap_err().message();
        assert!(e.contains("line 1: field 2 (\"x\") is not a number"), "{e}");
    }

    #[test]
    fn parallel_blocks_keep_order_and_line_numbers() {
        let mut text = String::new();
        for i in 0..60000 {
            text.push_str(&format!("{i},{}\n", i * 2));
        }
        let t = parse_csv(text.as_bytes(), 2, "big").unwrap();
        assert_eq!(t.rows, 60000);
        assert_eq!(t.values[2 * 54321 + 1], 108642.0);
        text.push_str("1\n");
        let e = parse_csv(text.as_bytes(), 2, "big").unwrap_err().message();
        assert!(e.contains("line 60001"), "{e}");
    }

    fn firsts(it: &mut CsvIter) -> Vec<(Vec<f64>, usize)> {
        let mut out = Vec::new();
        while let Some((d, _, pad)) = it.next_batch().unwrap() {
            out.push((d.chunks(1).map(|c| c[0]).collect(), pad));
        }
        out
    }

    #[test]
    fn round_batch_matches_mxnet() {
        // MXNet 1.9.1, 7 rows, batch 3, round_batch: epochs
        // [0,1,2][3,4,5][6,0,1]p2 / [2,3,4][5,6,0]p1 / [1,2,3][4,5,6]
        let mut it = CsvIter::new(table(7, 1), None, 1, 3, true).unwrap();
        let e0 = firsts(&mut it);
        assert_eq!(e0[2], (vec![6.0, 0.0, 1.0], 2));
        it.reset();
        let e1 = firsts(&mut it);
        assert_eq!(e1, vec![(vec![2.0, 3.0, 4.0], 0), (vec![5.0, 6.0, 0.0], 1)]);
        it.reset();
        assert_eq!(firsts(&mut it).len(), 2);
    }

    #[test]
    fn no_round_batch_keeps_stale_slots() {
        let mut it = CsvIter::new(table(7, 1), None, 1, 3, false).unwrap();
        let e = firsts(&mut it);
        assert_eq!(e[2], (vec![6.0, 4.0, 5.0], 2));
        it.reset();
        assert_eq!(firsts(&mut it)[0].0, vec![0.0, 1.0, 2.0]);
    }
}
