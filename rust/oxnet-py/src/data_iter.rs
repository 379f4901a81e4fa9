//! Bindings of the Rust-side data iterators behind `mx.io.MNISTIter` and
//! `mx.io.CSVIter` (oxnet-core's io::mnist and io::csv). File reading,
//! parsing and batch assembly run with the GIL released.
use crate::errors::IntoPy;
use crate::ndarray::{wrap, NDArray};
use oxnet_core::io::csv::{read_csv, CsvIter as CoreCsv};
use oxnet_core::io::mnist::{MnistConfig, MnistIter as CoreMnist};
use oxnet_core::ndarray::NDArray as Core;
use oxnet_core::{Context, Result};
use pyo3::prelude::*;
use std::sync::Mutex;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Batch = (Py<NDArray>, Py<NDArray>);

/// MNIST IDX files read into memory; batches of (pixels / 256, labels).
#[pyclass(module = "oxnet._native", name = "MnistIter")]
struct MnistIter {
    inner: Mutex<CoreMnist>,
    #[pyo3(get)]
    rows: usize,
    #[pyo3(get)]
    cols: usize,
    #[pyo3(get)]
    count: usize,
    data_shape: Vec<usize>,
}

#[pymethods]
impl MnistIter {
    /// Open and check `image` and `label` (IDX, optionally gzip).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        image: String,
        label: String,
        batch_size: usize,
        shuffle: bool,
        flat: bool,
        seed: u64,
        num_parts: usize,
        part_index: usize,
    ) -> PyResult<Self> {
        let cfg = MnistConfig {
            image,
            label,
            batch_size,
            shuffle,
            flat,
            seed,
            num_parts,
            part_index,
        };
        let it = py.detach(move || CoreMnist::open(cfg)).py_err()?;
        Ok(MnistIter {
            rows: it.rows,
            cols: it.cols,
            count: it.len(),
            data_shape: it.data_shape(),
            inner: Mutex::new(it),
        })
    }

    /// The next (data, label) NDArrays, or None at the end of the epoch.
    fn next(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        let shape = self.data_shape.clone();
        let res = py
            .detach(|| -> Result<Option<(Core, Core)>> {
                let Some((d, l)) = lock(&self.inner).next_batch() else {
                    return Ok(None);
                };
                let n = shape[0];
                Ok(Some((
                    Core::from_vec(d, &shape, Context::default())?,
                    Core::from_vec(l, &[n], Context::default())?,
                )))
            })
            .py_err()?;
        res.map(|(d, l)| Ok((wrap(py, d)?, wrap(py, l)?)))
            .transpose()
    }

    /// Back to the first batch.
    fn reset(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).reset())
    }
}

/// CSV files parsed into memory; batches of (data, label, pad).
#[pyclass(module = "oxnet._native", name = "CsvIter")]
struct CsvIter {
    inner: Mutex<CoreCsv>,
    batch_size: usize,
    data_width: usize,
    label_width: usize,
    #[pyo3(get)]
    rows: usize,
}

#[pymethods]
impl CsvIter {
    /// Parse `data_csv` (lines of `data_width` numbers) and, if given,
    /// `label_csv` (lines of `label_width` numbers).
    #[new]
    #[pyo3(signature = (data_csv, data_width, label_csv, label_width, batch_size, round_batch))]
    fn new(
        py: Python<'_>,
        data_csv: String,
        data_width: usize,
        label_csv: Option<String>,
        label_width: usize,
        batch_size: usize,
        round_batch: bool,
    ) -> PyResult<Self> {
        let it = py
            .detach(move || -> Result<CoreCsv> {
                let data = read_csv(&data_csv, data_width)?;
                let label = label_csv.map(|p| read_csv(&p, label_width)).transpose()?;
                CoreCsv::new(data, label, label_width, batch_size, round_batch)
            })
            .py_err()?;
        Ok(CsvIter {
            rows: it.rows(),
            inner: Mutex::new(it),
            batch_size,
            data_width,
            label_width,
        })
    }

    /// The next (data (batch, data_width), label (batch, label_width), pad),
    /// or None at the end of the epoch.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(Py<NDArray>, Py<NDArray>, usize)>> {
        let (bs, dw, lw) = (self.batch_size, self.data_width, self.label_width);
        let res = py
            .detach(|| -> Result<Option<(Core, Core, usize)>> {
                let Some((d, l, pad)) = lock(&self.inner).next_batch()? else {
                    return Ok(None);
                };
                let ctx = Context::default();
                Ok(Some((
                    Core::from_vec(d, &[bs, dw], ctx)?,
                    Core::from_vec(l, &[bs, lw], ctx)?,
                    pad,
                )))
            })
            .py_err()?;
        res.map(|(d, l, pad)| Ok((wrap(py, d)?, wrap(py, l)?, pad)))
            .transpose()
    }

    /// Start the next epoch.
    fn reset(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).reset())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MnistIter>()?;
    m.add_class::<CsvIter>()?;
    Ok(())
}
