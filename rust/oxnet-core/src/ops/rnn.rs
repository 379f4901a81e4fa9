//! MXNet 1.9.1's fused `RNN` operator (CPU): stacked, optionally
//! bidirectional vanilla RNN (relu / tanh), LSTM and GRU over data laid out
//! (seq_len, batch, input_size), with every weight and bias in one flat
//! `parameters` vector, and its gradient through `_backward_RNN`.
//!
//! Parameter layout (MXNet's and cuDNN's): first the weights, for each
//! layer and then each direction: i2h (G*H, in) then h2h (G*H, H); then the
//! biases in the same order: i2h (G*H) then h2h (G*H). G is the number of
//! gates (1 for rnn_*, 4 for lstm in the order i, f, g, o; 3 for gru in the
//! order r, z, n); `in` is input_size for the first layer, D*H above it.
//!
//! Per layer, the input-to-hidden products of all time steps are one GEMM.
//! The recurrent weight is packed once (float32 on AVX2 CPUs: oxnet's
//! sgemm) and every time step splits its batch rows over the threads, each
//! part running its rows' recurrent product and then their cell updates,
//! with the sigmoid / tanh compiled for AVX2. In training the forward keeps
//! the gate values and states the backward needs in a hidden `reserve`
//! output (MXNet's reserve space); the backward reads it, back-propagates
//! through time the same way, and forms the recurrent weight's gradient as
//! one GEMM over all steps. Without a kept reserve (recorded outside
//! training) the backward reruns the forward first.
//!
//! `sequence_length` follows the cuDNN semantics MXNet documents: steps at
//! or after a sequence's length give zero outputs and leave the state
//! unchanged (the reverse direction starts at the last valid step).
//! MXNet 1.9.1's CPU operator ignores sequence_length (and p); oxnet does
//! what MXNet documents.
//!
//! Dropout (`p`, training only, between layers) draws its masks from the
//! per-context generator in the forward and writes them to a hidden output
//! (`mask`, MXNet's `FNumVisibleOutputs`): the user sees out (and hy, cy),
//! the gradient passes the mask and the reserve to `_backward_RNN`, which
//! applies the same masks. The mask
//! has shape (num_layers-1, seq_len, batch, D*state_size) when p > 0 and
//! num_layers > 1 (all ones outside training), (0,) otherwise.
//! projection_size and lstm_state_clip_* are refused: MXNet implements them
//! only with cuDNN.
use super::attrs::Attrs;
use super::elemwise::FastTrans;
use super::matrix::gemm_into;
use super::registry::{Entry, KernelCtx, OpCall, OpDef, Params, Resource};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use num_traits::Float;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Relu,
    Tanh,
    Lstm,
    Gru,
}

impl Mode {
    fn gates(self) -> usize {
        match self {
            Mode::Relu | Mode::Tanh => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Mode::Relu => "rnn_relu",
            Mode::Tanh => "rnn_tanh",
            Mode::Lstm => "lstm",
            Mode::Gru => "gru",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RnnParam {
    h: usize,
    layers: usize,
    dirs: usize,
    mode: Mode,
    p: f64,
    state_outputs: bool,
    use_len: bool,
}

impl RnnParam {
    fn lstm(&self) -> bool {
        self.mode == Mode::Lstm
    }
    /// Forward inputs: data, parameters, state, [state_cell], [sequence_length].
    fn n_in(&self) -> usize {
        3 + self.lstm() as usize + self.use_len as usize
    }
    fn input_names(&self) -> Vec<&'static str> {
        let mut v = vec!["data", "parameters", "state"];
        if self.lstm() {
            v.push("state_cell");
        }
        if self.use_len {
            v.push("sequence_length");
        }
        v
    }
    /// Whether the forward may apply dropout (and so keeps a mask).
    fn has_mask(&self) -> bool {
        self.p > 0.0 && self.layers > 1
    }
    /// The hidden mask output's shape for data (T, N, _).
    fn mask_shape(&self, t: usize, n: usize) -> Shape {
        if self.has_mask() {
            vec![self.layers - 1, t, n, self.dirs * self.h]
        } else {
            vec![0]
        }
    }
    /// The hidden reserve output's shape (see [`reserve_parts`]).
    fn reserve_shape(&self, t: usize, n: usize) -> Result<Shape> {
        reserve_parts(self, t, n)
            .and_then(|v| v.iter().try_fold(0usize, |a, &b| a.checked_add(b)))
            .map(|len| vec![len])
            .ok_or_else(|| {
                Error::Shape(format!(
                    "RNN: the reserve for seq_len {t}, batch {n} and {} does not fit in memory",
                    self.describe()
                ))
            })
    }
    /// The visible outputs: out, and hy (and cy) with state_outputs.
    fn n_out(&self) -> usize {
        if self.state_outputs {
            2 + self.lstm() as usize
        } else {
            1
        }
    }
    /// Length of the parameter vector for input size `i` (MXNet's rule).
    /// None when it does not fit in usize.
    fn n_params(&self, i: usize) -> Option<usize> {
        let (g, h, d) = (self.mode.gates(), self.h, self.dirs);
        let gh = g.checked_mul(h)?;
        let mut total = 0usize;
        for l in 0..self.layers {
            let inp = if l == 0 { i } else { d * h };
            let per = gh
                .checked_mul(inp)?
                .checked_add(gh.checked_mul(h)?)?
                .checked_add(2 * gh)?;
            total = total.checked_add(d.checked_mul(per)?)?;
        }
        Some(total)
    }
    fn describe(&self) -> String {
        format!(
            "mode='{}', state_size={}, num_layers={}, bidirectional={}",
            self.mode.name(),
            self.h,
            self.layers,
            if self.dirs == 2 { "True" } else { "False" }
        )
    }
}

fn parse_rnn(a: &Attrs, op: &str) -> Result<Params> {
    let p = a.p(op);
    let h = p.i64_req("state_size")?;
    let layers = p.i64_req("num_layers")?;
    if h <= 0 || h > 1 << 24 {
        return Err(Error::Param(format!(
            "{op}: state_size must be a positive integer, got {h}"
        )));
    }
    if layers <= 0 || layers > 1 << 16 {
        return Err(Error::Param(format!(
            "{op}: num_layers must be a positive integer, got {layers}"
        )));
    }
    if !a.raw("mode").is_some_and(|v| v != "None" && !v.is_empty()) {
        return Err(Error::Param(format!(
            "{op}: required argument 'mode' is missing (one of 'gru', 'lstm', 'rnn_relu', 'rnn_tanh')"
        )));
    }
    let mode = match p
        .choice("mode", "", &["gru", "lstm", "rnn_relu", "rnn_tanh"])?
        .as_str()
    {
        "gru" => Mode::Gru,
        "lstm" => Mode::Lstm,
        "rnn_relu" => Mode::Relu,
        _ => Mode::Tanh,
    };
    let drop = p.f64("p", 0.0)?;
    if !(0.0..=1.0).contains(&drop) {
        return Err(Error::Param(format!(
            "{op}: p (dropout rate) must be in [0, 1], got {drop}"
        )));
    }
    if p.has("projection_size") {
        return Err(Error::Param(format!(
            "{op}: projection_size is not supported (MXNet 1.9.1 implements LSTM projection only with cuDNN)"
        )));
    }
    if p.has("lstm_state_clip_min") || p.has("lstm_state_clip_max") {
        return Err(Error::Param(format!(
            "{op}: lstm_state_clip_min / lstm_state_clip_max are not supported (MXNet 1.9.1 clips LSTM \
             states only with cuDNN; its CPU operator ignores them)"
        )));
    }
    p.bool("lstm_state_clip_nan", false)?;
    Ok(Box::new(RnnParam {
        h: h as usize,
        layers: layers as usize,
        dirs: if p.bool("bidirectional", false)? {
            2
        } else {
            1
        },
        mode,
        p: drop,
        state_outputs: p.bool("state_outputs", false)?,
        use_len: p.bool("use_sequence_length", false)?,
    }))
}

fn attr_pairs(c: &OpCall) -> Vec<(&str, String)> {
    c.attrs
        .0
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect()
}

/// Fill or check one input's shape.
fn want(op: &str, what: &str, slot: &mut Option<Shape>, exp: Shape, why: &str) -> Result<()> {
    match slot {
        None => *slot = Some(exp),
        Some(s) if *s != exp => {
            return Err(Error::Shape(format!(
                "{op}: {what} has shape {}, expected {} {why}",
                fmt_shape(s),
                fmt_shape(&exp)
            )))
        }
        _ => {}
    }
    Ok(())
}

/// Check (and fill) the forward inputs; returns (T, N, I).
fn infer_inputs(op: &str, p: &RnnParam, ins: &mut [Option<Shape>]) -> Result<Option<[usize; 3]>> {
    let Some(d) = ins[0].clone() else {
        return Ok(None);
    };
    if d.len() != 3 {
        return Err(Error::Shape(format!(
            "{op}: data must be 3-D (seq_len, batch, input_size), got shape {}",
            fmt_shape(&d)
        )));
    }
    let (t, n, i) = (d[0], d[1], d[2]);
    let why = format!("for data shape {} and {}", fmt_shape(&d), p.describe());
    let np = p.n_params(i).ok_or_else(|| {
        Error::Shape(format!(
            "{op}: the parameter vector {why} does not fit in memory"
        ))
    })?;
    want(op, "parameters", &mut ins[1], vec![np], &why)?;
    let st = vec![p.layers * p.dirs, n, p.h];
    want(op, "state", &mut ins[2], st.clone(), &why)?;
    let mut k = 3;
    if p.lstm() {
        want(op, "state_cell", &mut ins[3], st, &why)?;
        k += 1;
    }
    if p.use_len {
        want(op, "sequence_length", &mut ins[k], vec![n], &why)?;
    }
    Ok(Some([t, n, i]))
}

/// The visible outputs' shapes.
fn out_shapes(p: &RnnParam, [t, n, _]: [usize; 3]) -> Vec<Shape> {
    let mut v = vec![vec![t, n, p.dirs * p.h]];
    if p.state_outputs {
        v.push(vec![p.layers * p.dirs, n, p.h]);
        if p.lstm() {
            v.push(vec![p.layers * p.dirs, n, p.h]);
        }
    }
    v
}

/// data, parameters, state(s) and the output gradients share one float
/// dtype; sequence_length may have any dtype.
fn infer_types(
    op: &str,
    p: &RnnParam,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
    skip: &[usize],
) -> Result<()> {
    let names = ["data", "parameters", "state", "state_cell"];
    let known = ins
        .iter()
        .enumerate()
        .filter(|(k, _)| !skip.contains(k))
        .find_map(|(_, t)| *t);
    let Some(t) = known else { return Ok(()) };
    if !t.is_float() {
        return Err(Error::DType(format!(
            "{op}: dtype {} is not supported (float16, float32 or float64)",
            t.name()
        )));
    }
    for (k, x) in ins.iter_mut().enumerate() {
        if skip.contains(&k) {
            continue;
        }
        match x {
            None => *x = Some(t),
            Some(u) if *u != t => {
                let nm = if k < 3 + p.lstm() as usize {
                    names[k].to_string()
                } else {
                    format!("input {k}")
                };
                return Err(Error::DType(format!(
                    "{op}: {nm} has dtype {}, expected {} like data (one dtype for data, parameters and states)",
                    u.name(),
                    t.name()
                )));
            }
            _ => {}
        }
    }
    for o in outs.iter_mut() {
        *o = Some(t);
    }
    Ok(())
}

/// The reserve's dtype: the computation's (float32 for float16 data).
fn reserve_dtype(data: DType) -> DType {
    if data == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

// ---------------------------------------------------------------------------
// The computation, in F = f32 (for float16 / float32) or f64.
// ---------------------------------------------------------------------------

/// Offsets of one (layer, direction) block in the parameter vector.
#[derive(Clone, Copy)]
struct Block {
    wx: usize,
    wh: usize,
    bx: usize,
    bh: usize,
    inp: usize,
}

fn blocks(p: &RnnParam, i: usize) -> Vec<Block> {
    let (g, h, d) = (p.mode.gates(), p.h, p.dirs);
    let mut v = Vec::with_capacity(p.layers * d);
    let mut off = 0;
    for l in 0..p.layers {
        let inp = if l == 0 { i } else { d * h };
        for _ in 0..d {
            v.push(Block {
                wx: off,
                wh: off + g * h * inp,
                bx: 0,
                bh: 0,
                inp,
            });
            off += g * h * inp + g * h * h;
        }
    }
    for b in v.iter_mut() {
        b.bx = off;
        b.bh = off + g * h;
        off += 2 * g * h;
    }
    v
}

struct Dims {
    t: usize,
    n: usize,
    i: usize,
}

/// What the backward needs from the forward, kept in one buffer (RNN's
/// hidden `reserve` output, like MXNet's reserve space) in this order: for
/// each (layer, direction) the gate values after their nonlinearity
/// (T, N, G*H; for rnn_* the hidden value itself), the hidden state before
/// each step (T, N, H), for LSTM the cell before each step and tanh of the
/// cell after it, for GRU the n gate's h2h product plus its bias (T, N, H
/// each); then the input of every layer above the first, after dropout
/// (T, N, D*H); then a flag, 1 when the forward kept all this (training),
/// 0 when it did not (the backward then reruns the forward). Part sizes in
/// elements; None on overflow.
fn reserve_parts(p: &RnnParam, t: usize, n: usize) -> Option<Vec<usize>> {
    let (h, nd) = (p.h, p.dirs);
    let tnh = t.checked_mul(n)?.checked_mul(h)?;
    let gates = tnh.checked_mul(p.mode.gates())?;
    let cprev = if p.lstm() { tnh } else { 0 };
    let aux = if matches!(p.mode, Mode::Lstm | Mode::Gru) {
        tnh
    } else {
        0
    };
    let mut parts = Vec::with_capacity(4 * p.layers * nd + p.layers);
    for _ in 0..p.layers * nd {
        parts.extend([gates, tnh, cprev, aux]);
    }
    for _ in 1..p.layers {
        parts.push(tnh.checked_mul(nd)?);
    }
    parts.push(1);
    parts
        .iter()
        .try_fold(0usize, |acc, &v| acc.checked_add(v))?;
    Some(parts)
}

/// `buf` cut into consecutive pieces of the given lengths.
fn carve<'a, F>(mut buf: &'a mut [F], lens: &[usize]) -> Vec<&'a mut [F]> {
    lens.iter()
        .map(|&l| {
            let (piece, rest) = std::mem::take(&mut buf).split_at_mut(l);
            buf = rest;
            piece
        })
        .collect()
}

/// One (layer, direction)'s part of the reserve: gates, hprev, cprev, aux.
struct Cache<'a, F> {
    gates: &'a [F],
    hprev: &'a [F],
    cprev: &'a [F],
    aux: &'a [F],
}

/// The reserve read back: per (layer, direction) caches and the inputs of
/// the layers above the first.
fn read_reserve<'a, F: Num>(
    p: &RnnParam,
    dm: &Dims,
    buf: &'a [F],
) -> (Vec<Cache<'a, F>>, Vec<&'a [F]>) {
    let parts = reserve_parts(p, dm.t, dm.n).expect("reserve size checked by shape inference");
    let mut at = 0;
    let mut pieces = parts.iter().map(|&l| {
        at += l;
        &buf[at - l..at]
    });
    let mut next = || pieces.next().expect("reserve part");
    let caches = (0..p.layers * p.dirs)
        .map(|_| Cache {
            gates: next(),
            hprev: next(),
            cprev: next(),
            aux: next(),
        })
        .collect();
    let inputs: Vec<&[F]> = (1..p.layers).map(|_| next()).collect();
    (caches, inputs)
}

struct Fwd<F> {
    out: Vec<F>,
    hy: Vec<F>,
    cy: Vec<F>,
}

/// The element types the RNN computes in (float16 data runs in float32):
/// float arithmetic plus the vectorising sigmoid / tanh of `elemwise`.
pub(crate) trait Num: Float + Elem + FastTrans + 'static {}
impl Num for f32 {}
impl Num for f64 {}

/// A right-hand side multiplied at every time step (the recurrent weight).
/// In float32 on an AVX2 CPU it is packed once for oxnet's sgemm (a general
/// GEMM re-packs it at every step); otherwise each step goes through
/// `gemm_into`.
enum StepB<'a, F> {
    #[cfg(target_arch = "x86_64")]
    Packed(super::sgemm::PackedB),
    Plain {
        b: &'a [F],
        k: usize,
        n: usize,
        tb: bool,
    },
}

impl<'a, F: Num> StepB<'a, F> {
    /// op(B) (k x n): `b` is (k, n) row-major, or (n, k) when `tb`.
    fn new(b: &'a [F], k: usize, n: usize, tb: bool) -> Self {
        assert!(b.len() >= k * n);
        #[cfg(target_arch = "x86_64")]
        if std::any::TypeId::of::<F>() == std::any::TypeId::of::<f32>()
            && super::sgemm::packed_available()
        {
            let (rs, cs) = if tb { (1, k as isize) } else { (n as isize, 1) };
            // SAFETY: F is f32 and `b` covers the k x n matrix (asserted).
            let pb = unsafe { super::sgemm::PackedB::new(k, n, b.as_ptr() as *const f32, rs, cs) };
            return StepB::Packed(pb);
        }
        StepB::Plain { b, k, n, tb }
    }

    /// `dst (m x n) = [dst +] a (m x k) . op(B)`, all row-major, on the
    /// calling thread (the callers split a step's rows over the threads).
    fn mul(&self, m: usize, a: &[F], dst: &mut [F], acc: bool) {
        match self {
            #[cfg(target_arch = "x86_64")]
            StepB::Packed(pb) => {
                let (k, n) = (pb.k, pb.n);
                assert!(a.len() >= m * k && dst.len() >= m * n);
                let threads = 1;
                // SAFETY: F is f32 (Packed is built only then); the slices
                // cover the matrices (asserted) and dst is distinct from a.
                unsafe {
                    super::sgemm::sgemm_packed(
                        m,
                        dst.as_mut_ptr() as *mut f32,
                        n as isize,
                        acc,
                        a.as_ptr() as *const f32,
                        k as isize,
                        1,
                        pb,
                        threads,
                    )
                }
            }
            StepB::Plain { b, k, n, tb } => gemm_into(m, *k, *n, a, false, b, *tb, dst, acc),
        }
    }

    /// How many parts to split a step's `m` rows into: one per thread
    /// once the product is a quarter of a million MACs.
    fn parts(&self, m: usize) -> usize {
        let (k, n) = match self {
            #[cfg(target_arch = "x86_64")]
            StepB::Packed(pb) => (pb.k, pb.n),
            StepB::Plain { k, n, .. } => (*k, *n),
        };
        if m * n * k >= 1 << 18 {
            crate::par::num_threads().min(m).max(1)
        } else {
            1
        }
    }
}

/// `v` cut into pieces of `len` elements (the last may be shorter), or
/// `parts` empty pieces when `v` is empty.
fn pieces<T>(v: &mut [T], len: usize, parts: usize) -> Vec<&mut [T]> {
    if v.is_empty() {
        (0..parts).map(|_| &mut [][..]).collect()
    } else {
        v.chunks_mut(len.max(1)).collect()
    }
}

/// Rows `rows` of `v` (`w` elements each) in pieces of `per` rows, or
/// `parts` empty pieces when `v` is empty.
fn row_parts<T>(
    v: &[T],
    rows: std::ops::Range<usize>,
    w: usize,
    per: usize,
    parts: usize,
) -> Vec<&[T]> {
    if v.is_empty() {
        vec![&[]; parts]
    } else {
        v[rows.start * w..rows.end * w]
            .chunks((per * w).max(1))
            .collect()
    }
}

/// Run `jobs[i]` for every i, in parallel when there are several.
fn run_parts<J: Send>(jobs: Vec<J>, f: impl Fn(J) + Sync) {
    if jobs.len() == 1 {
        return jobs.into_iter().for_each(f);
    }
    let slots: Vec<std::sync::Mutex<Option<J>>> = jobs
        .into_iter()
        .map(|j| std::sync::Mutex::new(Some(j)))
        .collect();
    crate::par::par_for(slots.len(), &|i| {
        let job = slots[i].lock().map(|mut g| g.take());
        if let Ok(Some(j)) = job {
            f(j)
        }
    });
}

/// `v = f(v)` over a slice (kept as a plain loop so that it vectorises).
#[inline(always)]
fn map_in_place<F: Copy>(v: &mut [F], f: impl Fn(F) -> F) {
    for x in v.iter_mut() {
        *x = f(*x);
    }
}

/// Time steps in processing order for direction `dir`.
fn steps(t: usize, dir: usize) -> Box<dyn Iterator<Item = usize>> {
    if dir == 0 {
        Box::new(0..t)
    } else {
        Box::new((0..t).rev())
    }
}

/// One time step of one layer and direction, forward: the cell updates of
/// every batch row from the input product `a` and the recurrent product `z`
/// (n x G*H each), which becomes the gate values.
struct FwdStep<'s, F> {
    mode: Mode,
    h: usize,
    t: usize,
    lens: &'s [usize],
    a: &'s [F],
    /// added to `a` (its length: G*H)
    bias: &'s [F],
    z: &'s mut [F],
    hs: &'s mut [F],
    cs: &'s mut [F],
    /// this step's output rows (n x D*H); this direction writes columns
    /// `ocol..ocol + h`
    out: &'s mut [F],
    ocol: usize,
    /// GRU: the h2h bias of the n gate (added inside the reset product)
    bn: &'s [F],
    tc: &'s mut [F],
    /// what the backward keeps: gate values (n x G*H) and, for LSTM
    /// tanh(c) / for GRU the n gate's h2h term (n x H)
    gates: Option<&'s mut [F]>,
    aux: Option<&'s mut [F]>,
}

impl<F: Num> FwdStep<'_, F> {
    fn run(self) {
        #[cfg(target_arch = "x86_64")]
        if super::kernels::wide_cpu() {
            // SAFETY: the CPU has AVX2 and FMA
            return unsafe { self.run_avx2() };
        }
        self.run_any()
    }

    /// [`Self::run_any`] compiled for AVX2: the polynomial sigmoid / tanh
    /// then run 8 lanes wide (the same bits: no FMA contraction).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(self) {
        self.run_any()
    }

    #[inline(always)]
    fn run_any(self) {
        let FwdStep {
            mode,
            h,
            t,
            lens,
            a,
            bias,
            z,
            hs,
            cs,
            out,
            ocol,
            bn,
            tc,
            mut gates,
            mut aux,
        } = self;
        let gh = z.len() / lens.len().max(1);
        let nd_h = out.len() / lens.len().max(1);
        for (bi, &len) in lens.iter().enumerate() {
            if t >= len {
                continue;
            }
            let a = &a[bi * gh..(bi + 1) * gh];
            // the recurrent product's row, turned into the gates in place
            let z = &mut z[bi * gh..(bi + 1) * gh];
            let hrow = &mut hs[bi * h..(bi + 1) * h];
            match mode {
                Mode::Relu | Mode::Tanh => {
                    for ((zv, &av), &bv) in z.iter_mut().zip(a).zip(bias) {
                        *zv = *zv + av + bv;
                    }
                    if mode == Mode::Tanh {
                        map_in_place(z, F::tanh_);
                    } else {
                        map_in_place(z, |v| v.max(F::zero()));
                    }
                    hrow.copy_from_slice(z);
                }
                Mode::Lstm => {
                    for ((zv, &av), &bv) in z.iter_mut().zip(a).zip(bias) {
                        *zv = *zv + av + bv;
                    }
                    let (zi, rest) = z.split_at_mut(h);
                    let (zf, rest) = rest.split_at_mut(h);
                    let (zg, zo) = rest.split_at_mut(h);
                    map_in_place(zi, F::sigmoid_);
                    map_in_place(zf, F::sigmoid_);
                    map_in_place(zg, F::tanh_);
                    map_in_place(zo, F::sigmoid_);
                    let crow = &mut cs[bi * h..(bi + 1) * h];
                    for j in 0..h {
                        crow[j] = zf[j] * crow[j] + zi[j] * zg[j];
                    }
                    tc.copy_from_slice(crow);
                    map_in_place(tc, F::tanh_);
                    for j in 0..h {
                        hrow[j] = zo[j] * tc[j];
                    }
                }
                Mode::Gru => {
                    let (zr, rest) = z.split_at_mut(h);
                    let (zz, zn) = rest.split_at_mut(h);
                    for j in 0..h {
                        zr[j] = zr[j] + a[j] + bias[j];
                        zz[j] = zz[j] + a[h + j] + bias[h + j];
                    }
                    map_in_place(zr, F::sigmoid_);
                    map_in_place(zz, F::sigmoid_);
                    let (an, bxn) = (&a[2 * h..3 * h], &bias[2 * h..3 * h]);
                    for j in 0..h {
                        // the h2h product of the n gate plus its bias
                        let hn = zn[j] + bn[j];
                        tc[j] = hn;
                        zn[j] = an[j] + bxn[j] + zr[j] * hn;
                    }
                    map_in_place(zn, F::tanh_);
                    for j in 0..h {
                        hrow[j] = (F::one() - zz[j]) * zn[j] + zz[j] * hrow[j];
                    }
                }
            }
            out[bi * nd_h + ocol..][..h].copy_from_slice(hrow);
            if let Some(g) = gates.as_deref_mut() {
                g[bi * gh..(bi + 1) * gh].copy_from_slice(z);
            }
            if let Some(x) = aux.as_deref_mut() {
                x[bi * h..(bi + 1) * h].copy_from_slice(tc);
            }
        }
    }
}

/// The forward of every layer and direction. With `keep` (a buffer of
/// [`reserve_parts`]' total length) it also writes what the backward needs
/// there and sets its flag.
#[allow(clippy::too_many_arguments)]
fn forward<F: Num>(
    p: &RnnParam,
    dm: &Dims,
    x: &[F],
    w: &[F],
    h0: &[F],
    c0: &[F],
    lens: &[usize],
    masks: &[Vec<F>],
    keep: Option<&mut [F]>,
) -> Fwd<F> {
    let (g, h, nd) = (p.mode.gates(), p.h, p.dirs);
    let (tn, n) = (dm.t, dm.n);
    let gh = g * h;
    let bl = blocks(p, dm.i);
    let mut hy = vec![F::zero(); p.layers * nd * n * h];
    let mut cy = vec![F::zero(); if p.lstm() { hy.len() } else { 0 }];
    // the reserve's pieces, in reserve_parts' order
    let mut kept = match keep {
        Some(buf) => {
            let parts = reserve_parts(p, tn, n).expect("reserve size checked by shape inference");
            carve(buf, &parts)
        }
        None => vec![],
    };
    let keep = !kept.is_empty();
    let mut cur = x.to_vec();
    for l in 0..p.layers {
        if l > 0 {
            if let Some(m) = masks.get(l - 1) {
                for (v, &k) in cur.iter_mut().zip(m) {
                    *v = *v * k;
                }
            }
            if keep {
                kept[4 * p.layers * nd + l - 1].copy_from_slice(&cur);
            }
        }
        let mut out = vec![F::zero(); tn * n * nd * h];
        for dir in 0..nd {
            let b = bl[l * nd + dir];
            let s = l * nd + dir;
            let (wx, wh) = (&w[b.wx..b.wx + gh * b.inp], &w[b.wh..b.wh + gh * h]);
            let (bx, bh) = (&w[b.bx..b.bx + gh], &w[b.bh..b.bh + gh]);
            // All time steps' input products at once: (T*N, in) . (G*H, in)^T.
            let mut xw = vec![F::zero(); tn * n * gh];
            gemm_into(tn * n, b.inp, gh, &cur, false, wx, true, &mut xw, false);
            // the biases, added by the step with the two products (GRU's n
            // gate takes its h2h bias inside the reset product)
            let bias: Vec<F> = (0..gh)
                .map(|k| {
                    if p.mode != Mode::Gru || k < 2 * h {
                        bx[k] + bh[k]
                    } else {
                        bx[k]
                    }
                })
                .collect();
            let mut hs = h0[s * n * h..(s + 1) * n * h].to_vec();
            let mut cs = if p.lstm() {
                c0[s * n * h..(s + 1) * n * h].to_vec()
            } else {
                vec![]
            };
            // this block's gates, hprev, cprev, aux in the reserve
            let mut cache: [&mut [F]; 4] = if keep {
                let [a, b, c, d] = &mut kept[4 * s..4 * s + 4] else {
                    unreachable!()
                };
                [&mut **a, &mut **b, &mut **c, &mut **d]
            } else {
                [&mut [], &mut [], &mut [], &mut []]
            };
            let mut hw = vec![F::zero(); n * gh];
            let whb = StepB::new(wh, h, gh, true);
            // each step's rows split over the threads: every part runs its
            // rows' recurrent product, then their cell updates
            let parts = whb.parts(n);
            let per = n.div_ceil(parts);
            let mut tcs = vec![vec![F::zero(); h]; parts];
            for t in steps(tn, dir) {
                let rows = t * n..(t + 1) * n;
                let [gates, hprev, cprev, aux] = &mut cache;
                if keep {
                    hprev[rows.start * h..rows.end * h].copy_from_slice(&hs);
                    if p.lstm() {
                        cprev[rows.start * h..rows.end * h].copy_from_slice(&cs);
                    }
                }
                let (gates, aux): (&mut [F], &mut [F]) = if keep {
                    (
                        &mut gates[rows.start * gh..rows.end * gh],
                        if aux.is_empty() {
                            &mut []
                        } else {
                            &mut aux[rows.start * h..rows.end * h]
                        },
                    )
                } else {
                    (&mut [], &mut [])
                };
                let jobs: Vec<FwdStep<F>> = lens
                    .chunks(per)
                    .zip(xw[rows.start * gh..rows.end * gh].chunks(per * gh))
                    .zip(pieces(&mut hw, per * gh, parts))
                    .zip(pieces(&mut hs, per * h, parts))
                    .zip(pieces(&mut cs, per * h, parts))
                    .zip(pieces(
                        &mut out[rows.start * nd * h..rows.end * nd * h],
                        per * nd * h,
                        parts,
                    ))
                    .zip(tcs.iter_mut())
                    .zip(pieces(gates, per * gh, parts))
                    .zip(pieces(aux, per * h, parts))
                    .map(
                        |((((((((lens, a), z), hs), cs), out), tc), gates), aux)| FwdStep {
                            mode: p.mode,
                            h,
                            t,
                            lens,
                            a,
                            bias: &bias,
                            z,
                            hs,
                            cs,
                            out,
                            ocol: dir * h,
                            bn: &bh[(g - 1) * h..g * h],
                            tc,
                            gates: keep.then_some(gates),
                            aux: (keep && p.mode != Mode::Relu && p.mode != Mode::Tanh)
                                .then_some(aux),
                        },
                    )
                    .collect();
                run_parts(jobs, |job| {
                    whb.mul(job.lens.len(), job.hs, job.z, false);
                    job.run()
                });
            }
            hy[s * n * h..(s + 1) * n * h].copy_from_slice(&hs);
            if p.lstm() {
                cy[s * n * h..(s + 1) * n * h].copy_from_slice(&cs);
            }
        }
        cur = out;
    }
    if let Some(flag) = kept.last_mut() {
        flag[0] = F::one();
    }
    Fwd { out: cur, hy, cy }
}

struct Grads<F> {
    dx: Vec<F>,
    dw: Vec<F>,
    dh0: Vec<F>,
    dc0: Vec<F>,
}

/// One time step of one layer and direction, backward: from the gradient
/// reaching each row's output (`dy`) and state (`dh`, `dc`), the gradients
/// of the gate pre-activations (`dx`, n x G*H; GRU also `dhw`, the
/// recurrent product's, whose n gate is scaled by r); `dh` and `dc` become
/// the gradients of the previous state but for the recurrent product's
/// term, which the caller adds. Returns whether any row was still running,
/// with the recurrent product's gradient rows and `dh` for that term.
struct BwdStep<'s, F> {
    mode: Mode,
    h: usize,
    t: usize,
    lens: &'s [usize],
    gates: &'s [F],
    hprev: &'s [F],
    cprev: &'s [F],
    aux: &'s [F],
    dy: &'s [F],
    dycol: usize,
    dh: &'s mut [F],
    dc: &'s mut [F],
    dx: &'s mut [F],
    dhw: &'s mut [F],
}

type BwdDone<'s, F> = (bool, &'s [F], &'s mut [F]);

impl<'s, F: Num> BwdStep<'s, F> {
    fn run(self) -> BwdDone<'s, F> {
        #[cfg(target_arch = "x86_64")]
        if super::kernels::wide_cpu() {
            // SAFETY: the CPU has AVX2 and FMA
            return unsafe { self.run_avx2() };
        }
        self.run_any()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2(self) -> BwdDone<'s, F> {
        self.run_any()
    }

    #[inline(always)]
    fn run_any(self) -> BwdDone<'s, F> {
        let BwdStep {
            mode,
            h,
            t,
            lens,
            gates,
            hprev,
            cprev,
            aux,
            dy,
            dycol,
            dh,
            dc,
            dx,
            dhw,
        } = self;
        let n = lens.len().max(1);
        let (gh, nd_h) = (gates.len() / n, dy.len() / n);
        let one = F::one();
        let mut any = false;
        for (bi, &len) in lens.iter().enumerate() {
            if t >= len {
                continue;
            }
            any = true;
            let gv = &gates[bi * gh..(bi + 1) * gh];
            let dyr = &dy[bi * nd_h + dycol..][..h];
            let dhr = &mut dh[bi * h..(bi + 1) * h];
            let dxr = &mut dx[bi * gh..(bi + 1) * gh];
            match mode {
                Mode::Relu | Mode::Tanh => {
                    for j in 0..h {
                        let d = dyr[j] + dhr[j];
                        let v = gv[j];
                        dxr[j] = if mode == Mode::Tanh {
                            d * (one - v * v)
                        } else if v > F::zero() {
                            d
                        } else {
                            F::zero()
                        };
                        dhr[j] = F::zero();
                    }
                }
                Mode::Lstm => {
                    let cp = &cprev[bi * h..(bi + 1) * h];
                    let tcs = &aux[bi * h..(bi + 1) * h];
                    let dcr = &mut dc[bi * h..(bi + 1) * h];
                    let (gi, rest) = gv.split_at(h);
                    let (gf, rest) = rest.split_at(h);
                    let (gg, go) = rest.split_at(h);
                    let (di, rest) = dxr.split_at_mut(h);
                    let (df, rest) = rest.split_at_mut(h);
                    let (dg, dog) = rest.split_at_mut(h);
                    for j in 0..h {
                        let d = dyr[j] + dhr[j];
                        let (ig, fg, g, og, tc) = (gi[j], gf[j], gg[j], go[j], tcs[j]);
                        let dct = dcr[j] + d * og * (one - tc * tc);
                        di[j] = dct * g * ig * (one - ig);
                        df[j] = dct * cp[j] * fg * (one - fg);
                        dg[j] = dct * ig * (one - g * g);
                        dog[j] = d * tc * og * (one - og);
                        dcr[j] = dct * fg;
                        dhr[j] = F::zero();
                    }
                }
                Mode::Gru => {
                    let hp = &hprev[bi * h..(bi + 1) * h];
                    let hn = &aux[bi * h..(bi + 1) * h];
                    let dhwr = &mut dhw[bi * gh..(bi + 1) * gh];
                    for j in 0..h {
                        let d = dyr[j] + dhr[j];
                        let (rg, zg, ng) = (gv[j], gv[h + j], gv[2 * h + j]);
                        let dan = d * (one - zg) * (one - ng * ng);
                        let daz = d * (hp[j] - ng) * zg * (one - zg);
                        let dar = dan * hn[j] * rg * (one - rg);
                        dxr[j] = dar;
                        dxr[h + j] = daz;
                        dxr[2 * h + j] = dan;
                        dhwr[j] = dar;
                        dhwr[h + j] = daz;
                        dhwr[2 * h + j] = dan * rg;
                        // The direct path h_prev -> h through z.
                        dhr[j] = d * zg;
                    }
                }
            }
        }
        let rec: &'s [F] = if mode == Mode::Gru { dhw } else { dx };
        (any, rec, dh)
    }
}

/// Back-propagation through time given the output gradients.
#[allow(clippy::too_many_arguments)]
fn backward<F: Num>(
    p: &RnnParam,
    dm: &Dims,
    w: &[F],
    lens: &[usize],
    x: &[F],
    reserve: &[F],
    masks: &[Vec<F>],
    dout: &[F],
    dhy: Option<&[F]>,
    dcy: Option<&[F]>,
) -> Grads<F> {
    let (caches, inputs) = read_reserve(p, dm, reserve);
    let (g, h, nd) = (p.mode.gates(), p.h, p.dirs);
    let (tn, n) = (dm.t, dm.n);
    let gh = g * h;
    let bl = blocks(p, dm.i);
    let mut dw = vec![F::zero(); w.len()];
    let mut dh0 = vec![F::zero(); p.layers * nd * n * h];
    let mut dc0 = vec![F::zero(); if p.lstm() { dh0.len() } else { 0 }];
    // Gradient of the current layer's output (T, N, D*H).
    let mut dy = dout.to_vec();
    for l in (0..p.layers).rev() {
        let xin = if l == 0 { x } else { inputs[l - 1] };
        let inp = bl[l * nd].inp;
        let mut dxin = vec![F::zero(); tn * n * inp];
        for dir in 0..nd {
            let s = l * nd + dir;
            let b = bl[s];
            let c = &caches[s];
            let (wx, wh) = (&w[b.wx..b.wx + gh * inp], &w[b.wh..b.wh + gh * h]);
            let mut dh = match dhy {
                Some(v) => v[s * n * h..(s + 1) * n * h].to_vec(),
                None => vec![F::zero(); n * h],
            };
            let mut dc = match dcy {
                Some(v) if p.lstm() => v[s * n * h..(s + 1) * n * h].to_vec(),
                _ => vec![F::zero(); if p.lstm() { n * h } else { 0 }],
            };
            // Pre-activation gradients of the input product (all steps) and
            // of the recurrent product: the same values but for GRU's n gate,
            // whose recurrent part is scaled by r (kept apart for GRU only).
            let mut dxw = vec![F::zero(); tn * n * gh];
            let gru = p.mode == Mode::Gru;
            let mut dhw_gru = vec![F::zero(); if gru { tn * n * gh } else { 0 }];
            let whb = StepB::new(wh, gh, h, false);
            let order: Vec<usize> = steps(tn, dir).collect();
            // each step's rows split over the threads: every part runs its
            // rows' cell gradients, then their recurrent product
            let parts = whb.parts(n);
            let per = n.div_ceil(parts);
            for &t in order.iter().rev() {
                let rows = t * n..(t + 1) * n;
                let part = |v, w| row_parts(v, rows.clone(), w, per, parts);
                let dhw_rows: &mut [F] = if gru {
                    &mut dhw_gru[rows.start * gh..rows.end * gh]
                } else {
                    &mut []
                };
                let jobs: Vec<BwdStep<F>> = lens
                    .chunks(per)
                    .zip(part(c.gates, gh))
                    .zip(part(c.hprev, h))
                    .zip(part(c.cprev, h))
                    .zip(part(c.aux, h))
                    .zip(part(&dy, nd * h))
                    .zip(pieces(&mut dh, per * h, parts))
                    .zip(pieces(&mut dc, per * h, parts))
                    .zip(pieces(
                        &mut dxw[rows.start * gh..rows.end * gh],
                        per * gh,
                        parts,
                    ))
                    .zip(pieces(dhw_rows, per * gh, parts))
                    .map(
                        |(((((((((lens, gates), hprev), cprev), aux), dy), dh), dc), dx), dhw)| {
                            BwdStep {
                                mode: p.mode,
                                h,
                                t,
                                lens,
                                gates,
                                hprev,
                                cprev,
                                aux,
                                dy,
                                dycol: dir * h,
                                dh,
                                dc,
                                dx,
                                dhw,
                            }
                        },
                    )
                    .collect();
                run_parts(jobs, |job| {
                    let m = job.lens.len();
                    let (any, rec, dh) = job.run();
                    if any {
                        // dh_prev += dhw . Wh
                        whb.mul(m, rec, dh, true);
                    }
                });
            }
            // dWh += dhw^T . h_prev and dbh += sum(dhw), all steps at once
            // (the rows of steps past a sequence's end are zero).
            let dhw = if gru { &dhw_gru } else { &dxw };
            gemm_into(
                gh,
                tn * n,
                h,
                dhw,
                true,
                c.hprev,
                false,
                &mut dw[b.wh..b.wh + gh * h],
                true,
            );
            col_sums_into(dhw, gh, &mut dw[b.bh..b.bh + gh]);
            dh0[s * n * h..(s + 1) * n * h].copy_from_slice(&dh);
            if p.lstm() {
                dc0[s * n * h..(s + 1) * n * h].copy_from_slice(&dc);
            }
            // dX += dxw . Wx; dWx += dxw^T . X; dbx += sum(dxw).
            gemm_into(tn * n, gh, inp, &dxw, false, wx, false, &mut dxin, true);
            gemm_into(
                gh,
                tn * n,
                inp,
                &dxw,
                true,
                xin,
                false,
                &mut dw[b.wx..b.wx + gh * inp],
                true,
            );
            col_sums_into(&dxw, gh, &mut dw[b.bx..b.bx + gh]);
        }
        if l > 0 {
            if let Some(m) = masks.get(l - 1) {
                for (v, &k) in dxin.iter_mut().zip(m) {
                    *v = *v * k;
                }
            }
        }
        dy = dxin;
    }
    Grads {
        dx: dy,
        dw,
        dh0,
        dc0,
    }
}

/// `acc[k] += sum over rows of m[row * width + k]`.
fn col_sums_into<F: Num>(m: &[F], width: usize, acc: &mut [F]) {
    for row in m.chunks(width) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a = *a + v;
        }
    }
}

// ---------------------------------------------------------------------------
// Kernels: load into F, compute, store.
// ---------------------------------------------------------------------------

fn load<F: Elem>(b: &Blob) -> Vec<F> {
    crate::dispatch_float!(b.dtype, T => b.data::<T>().iter().map(|v| F::from_f64(v.to_f64())).collect())
}

fn store<F: Elem>(b: &Blob, v: &[F]) {
    crate::dispatch_float!(b.dtype, T => {
        for (d, s) in b.data_mut::<T>().iter_mut().zip(v) {
            *d = T::from_f64(s.to_f64());
        }
    })
}

fn lengths(p: &RnnParam, i: &[Blob], t: usize, n: usize) -> Vec<usize> {
    if !p.use_len {
        return vec![t; n];
    }
    let l = &i[3 + p.lstm() as usize];
    crate::dispatch_dtype!(l.dtype, L => l.data::<L>().iter().map(|v| {
        let f = v.to_f64();
        if f.is_nan() || f <= 0.0 { 0 } else { (f as usize).min(t) }
    }).collect())
}

fn dims(x: &Blob) -> Dims {
    Dims {
        t: x.shape[0],
        n: x.shape[1],
        i: x.shape[2],
    }
}

fn run_forward<F: Num>(c: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = c.p::<RnnParam>();
    let dm = dims(&i[0]);
    let lens = lengths(p, i, dm.t, dm.n);
    let masks = if k.is_train && p.has_mask() {
        let keep = 1.0 - p.p;
        let scale = if keep > 0.0 { 1.0 / keep } else { 0.0 };
        // rounded to the data dtype, as the hidden output keeps it: the
        // backward (float16 included) applies exactly the forward's masks
        let scale = crate::dispatch_float!(i[0].dtype, T => T::from_f64(scale).to_f64());
        let len = dm.t * dm.n * p.dirs * p.h;
        crate::random::with_rng(k.ctx, |r| {
            (0..p.layers - 1)
                .map(|_| {
                    (0..len)
                        .map(|_| F::from_f64(if r.uniform() < keep { scale } else { 0.0 }))
                        .collect()
                })
                .collect()
        })
    } else {
        vec![]
    };
    let c0 = if p.lstm() { load::<F>(&i[3]) } else { vec![] };
    // the hidden reserve output: filled in training, for the backward
    let reserve = o[p.n_out() + 1].data_mut::<F>();
    let keep = if k.is_train {
        Some(&mut reserve[..])
    } else {
        if let Some(flag) = reserve.last_mut() {
            *flag = F::zero();
        }
        None
    };
    let f = forward::<F>(
        p,
        &dm,
        &load::<F>(&i[0]),
        &load::<F>(&i[1]),
        &load::<F>(&i[2]),
        &c0,
        &lens,
        &masks,
        keep,
    );
    store(&o[0], &f.out);
    if p.state_outputs {
        store(&o[1], &f.hy);
        if p.lstm() {
            store(&o[2], &f.cy);
        }
    }
    // the hidden mask output: the masks applied, all ones outside training
    let mo = &o[p.n_out()];
    if p.has_mask() {
        if masks.is_empty() {
            store(mo, &vec![F::one(); mo.shape.iter().product()]);
        } else {
            store(mo, &masks.concat());
        }
    }
    Ok(())
}

fn run_backward<F: Num>(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<RnnParam>();
    let dm = dims(&i[0]);
    let lens = lengths(p, i, dm.t, dm.n);
    let w = load::<F>(&i[1]);
    let c0 = if p.lstm() { load::<F>(&i[3]) } else { vec![] };
    // the forward's dropout masks, from RNN's hidden output
    let masks = if p.has_mask() {
        let all = load::<F>(&i[p.n_in()]);
        let len = dm.t * dm.n * p.dirs * p.h;
        all.chunks(len.max(1)).map(<[F]>::to_vec).collect()
    } else {
        vec![]
    };
    let x = load::<F>(&i[0]);
    // the forward's reserve; rerun the forward when it was not kept (RNN
    // called outside training, e.g. autograd.record(train_mode=False))
    let given = i[p.n_in() + 1].data::<F>();
    // its last element is the flag the forward sets when it kept it
    let rerun;
    let reserve = if given.last() == Some(&F::one()) {
        given
    } else {
        let mut buf = vec![F::zero(); given.len()];
        let h0 = load::<F>(&i[2]);
        forward::<F>(p, &dm, &x, &w, &h0, &c0, &lens, &masks, Some(&mut buf));
        rerun = buf;
        &rerun[..]
    };
    let g0 = p.n_in() + 2;
    let dout = load::<F>(&i[g0]);
    let dhy = if p.state_outputs {
        Some(load::<F>(&i[g0 + 1]))
    } else {
        None
    };
    let dcy = if p.state_outputs && p.lstm() {
        Some(load::<F>(&i[g0 + 2]))
    } else {
        None
    };
    let gr = backward::<F>(
        p,
        &dm,
        &w,
        &lens,
        &x,
        reserve,
        &masks,
        &dout,
        dhy.as_deref(),
        dcy.as_deref(),
    );
    store(&o[0], &gr.dx);
    store(&o[1], &gr.dw);
    store(&o[2], &gr.dh0);
    if p.lstm() {
        store(&o[3], &gr.dc0);
    }
    Ok(())
}

/// A kernel's arguments, moved to a pool thread by `par::on_pool` (the
/// engine worker waits for it, so the borrows outlive the call).
struct Args<'a>(&'a OpCall, &'a [Blob], &'a [Blob], &'a KernelCtx);
// SAFETY: the blobs' storage is owned by the engine for the whole call,
// which blocks until the pool thread is done; nothing else touches it.
unsafe impl Send for Args<'_> {}

pub static RNN: OpDef = OpDef {
    name: "RNN",
    doc: "Applies recurrent layers to input data (MXNet 1.9.1's fused RNN): mode 'rnn_relu', \
          'rnn_tanh', 'lstm' or 'gru' (cuDNN's GRU: the reset gate multiplies the h2h product plus \
          its bias), num_layers stacked layers of state_size units, bidirectional optional.\n\n\
          Inputs: data (seq_len, batch, input_size); parameters, all weights then all biases in one \
          vector: for each layer and direction the i2h (G*state_size, in) and h2h (G*state_size, \
          state_size) weights, then for each layer and direction the i2h and h2h biases (G gates: 1, \
          lstm 4 in the order i, f, g, o, gru 3 in the order r, z, n); state (num_layers*D, batch, \
          state_size); state_cell (lstm only, same shape); sequence_length (batch,) with \
          use_sequence_length=True (steps past a sequence's length output zeros and keep the state). \
          Shape inference sizes parameters and states from the data shape.\n\n\
          p: dropout on the outputs of every layer but the last, in training only (the masks, and in \
          training the states the gradient needs, are kept in hidden outputs). \
          Returns out (seq_len, batch, D*state_size), and with state_outputs=True also the final \
          state hy (and cy for lstm). projection_size and lstm_state_clip_* (cuDNN-only in MXNet) \
          are refused.",
    inputs: &["data", "parameters", "state", "state_cell", "sequence_length"],
    num_inputs: Some(|c| c.p::<RnnParam>().n_in()),
    inputs_of: Some(|c| c.p::<RnnParam>().input_names()),
    // out, [hy, [cy]], then the hidden dropout mask and reserve
    num_outputs: |c| c.p::<RnnParam>().n_out() + 2,
    num_visible_outputs: Some(|c| c.p::<RnnParam>().n_out()),
    parse: |a| parse_rnn(a, "RNN"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<RnnParam>();
        if let Some(d) = infer_inputs("RNN", p, ins)? {
            let mut shapes = out_shapes(p, d);
            shapes.push(p.mask_shape(d[0], d[1]));
            shapes.push(p.reserve_shape(d[0], d[1])?);
            for (o, s) in outs.iter_mut().zip(shapes) {
                *o = Some(s);
            }
        }
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<RnnParam>();
        let skip: Vec<usize> = p.use_len.then_some(3 + p.lstm() as usize).into_iter().collect();
        infer_types("RNN", p, ins, outs, &skip)?;
        if let (Some(t), Some(r)) = (outs[0], outs.last_mut()) {
            *r = Some(reserve_dtype(t));
        }
        Ok(())
    },
    cpu: Some(|c, i, o, k| {
        let args = Args(c, i, o, k);
        crate::par::on_pool(move || {
            let Args(c, i, o, k) = args;
            if i[0].dtype == DType::F64 {
                run_forward::<f64>(c, i, o, k)
            } else {
                run_forward::<f32>(c, i, o, k)
            }
        })
    }),
    grad: Some(|c, b, x, y, g| {
        let p = c.p::<RnnParam>();
        let nv = p.n_out();
        let mut ins: Vec<Entry> = x.to_vec();
        // the hidden mask and reserve outputs, then the visible outputs' gradients
        ins.push(y[nv]);
        ins.push(y[nv + 1]);
        ins.extend_from_slice(&g[..nv]);
        let r = b.op("_backward_RNN", &attr_pairs(c), &ins)?;
        let mut out: Vec<Option<Entry>> = r.into_iter().map(Some).collect();
        if p.use_len {
            out.push(None);
        }
        Ok(out)
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static BACKWARD_RNN: OpDef = OpDef {
    name: "_backward_RNN",
    doc: "Internal: gradient of RNN by back-propagation through time. Inputs: RNN's inputs, its \
          hidden dropout mask and reserve outputs, then the gradients of its visible outputs (out, and hy, cy \
          with state_outputs). Returns the gradients \
          of data, parameters, state (and state_cell for lstm).",
    inputs: &[
        "data",
        "parameters",
        "state",
        "state_cell",
        "sequence_length",
        "mask",
        "reserve",
        "dout",
        "dhy",
        "dcy",
    ],
    num_inputs: Some(|c| {
        let p = c.p::<RnnParam>();
        p.n_in() + 2 + p.n_out()
    }),
    inputs_of: Some(|c| {
        let p = c.p::<RnnParam>();
        let mut v = p.input_names();
        v.push("mask");
        v.push("reserve");
        v.extend(["dout", "dhy", "dcy"].iter().take(p.n_out()));
        v
    }),
    num_outputs: |c| 3 + c.p::<RnnParam>().lstm() as usize,
    parse: |a| parse_rnn(a, "RNN"),
    infer_shape: |c, ins, outs| {
        let p = c.p::<RnnParam>();
        let n_in = p.n_in();
        let Some(d) = infer_inputs("RNN", p, &mut ins[..n_in])? else {
            return Ok(());
        };
        let why = "(the forward's hidden output)";
        want("RNN", "mask", &mut ins[n_in], p.mask_shape(d[0], d[1]), why)?;
        let rs = p.reserve_shape(d[0], d[1])?;
        want("RNN", "reserve", &mut ins[n_in + 1], rs, why)?;
        let names = ["out", "hy", "cy"];
        for (k, s) in out_shapes(p, d).into_iter().enumerate() {
            let what = format!("the gradient of {}", names[k]);
            want(
                "RNN",
                &what,
                &mut ins[n_in + 2 + k],
                s,
                "(the output's shape)",
            )?;
        }
        let k = outs.len();
        outs.clone_from_slice(&ins[..k]);
        Ok(())
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<RnnParam>();
        let r = p.n_in() + 1;
        let mut skip = vec![r];
        if p.use_len {
            skip.push(3 + p.lstm() as usize);
        }
        infer_types("RNN", p, ins, outs, &skip)?;
        if let Some(t) = outs[0] {
            let want = reserve_dtype(t);
            match ins[r] {
                None => ins[r] = Some(want),
                Some(u) if u != want => {
                    return Err(Error::DType(format!(
                        "RNN: reserve has dtype {}, expected {} (the forward's hidden output)",
                        u.name(),
                        want.name()
                    )))
                }
                _ => {}
            }
        }
        Ok(())
    },
    cpu: Some(|c, i, o, k| {
        let args = Args(c, i, o, k);
        crate::par::on_pool(move || {
            let Args(c, i, o, k) = args;
            if i[0].dtype == DType::F64 {
                run_backward::<f64>(c, i, o, k)
            } else {
                run_backward::<f32>(c, i, o, k)
            }
        })
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&RNN, &BACKWARD_RNN];

#[cfg(test)]
mod tests {
    use super::RNN;
    use crate::ops::matrix::testutil::{check_grad, vals};
    use crate::ops::registry::{parse_call, OpCall};
    use crate::ops::Attrs;

    fn parsed(attrs: &[(&str, &str)]) -> OpCall {
        parse_call(&RNN, Attrs::from_pairs(attrs)).unwrap()
    }

    #[test]
    fn shape_inference_sizes_parameters_and_states() {
        let c = parsed(&[
            ("state_size", "5"),
            ("num_layers", "2"),
            ("bidirectional", "True"),
            ("mode", "lstm"),
            ("state_outputs", "True"),
        ]);
        let mut ins = vec![Some(vec![3, 2, 4]), None, None, None];
        let mut outs = vec![None, None, None];
        (RNN.infer_shape)(&c, &mut ins, &mut outs).unwrap();
        // MXNet 1.9.1: (1120,) for lstm, 2 layers, bidirectional, 4 -> 5.
        assert_eq!(ins[1], Some(vec![1120]));
        assert_eq!(ins[2], Some(vec![4, 2, 5]));
        assert_eq!(ins[3], Some(vec![4, 2, 5]));
        assert_eq!(outs[0], Some(vec![3, 2, 10]));
        assert_eq!(outs[2], Some(vec![4, 2, 5]));
        for (mode, want) in [("rnn_tanh", 280), ("gru", 840)] {
            let c = parsed(&[
                ("state_size", "5"),
                ("num_layers", "2"),
                ("bidirectional", "True"),
                ("mode", mode),
            ]);
            let mut ins = vec![Some(vec![3, 2, 4]), None, None];
            let mut outs = vec![None];
            (RNN.infer_shape)(&c, &mut ins, &mut outs).unwrap();
            assert_eq!(ins[1], Some(vec![want]), "{mode}");
        }
        let mut ins = vec![Some(vec![3, 2, 4]), Some(vec![7]), None, None];
        let e = (RNN.infer_shape)(&c, &mut ins, &mut outs).unwrap_err();
        assert!(
            e.message().contains("parameters has shape (7,)"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn dropout_mask_is_a_hidden_output() {
        use crate::ops::matrix::testutil::arr;
        use crate::ops::registry::{call, invoke};
        use std::sync::Arc;
        let attrs = [
            ("state_size", "3"),
            ("num_layers", "3"),
            ("mode", "gru"),
            ("p", "0.5"),
            ("state_outputs", "True"),
        ];
        let (t, n, i, h) = (4, 2, 2, 3);
        // gru, 3 layers: i2h (3h, i), (3h, h), (3h, h); h2h 3 x (3h, h); 6 biases of 3h
        let np = 3 * h * i + 15 * h * h + 18 * h;
        let ins = [
            arr(&vals(t * n * i, 1), &[t, n, i]),
            arr(&vals(np, 2), &[np]),
            arr(&vals(3 * n * h, 3), &[3, n, h]),
        ];
        // call (and so mx.nd.RNN) returns the visible outputs: out, hy
        assert_eq!(call("RNN", &attrs, &ins).unwrap().len(), 2);
        let c = Arc::new(parsed(&attrs));
        assert_eq!((RNN.num_outputs)(&c), 4);
        assert_eq!(RNN.n_visible(&c), 2);
        let was = crate::autograd::set_training(true);
        let all = invoke(c.clone(), &ins, None, None).unwrap();
        crate::autograd::set_training(was);
        assert_eq!(all[2].shape, vec![2, t, n, h]);
        let m = all[2].to_vec::<f64>().unwrap();
        assert!(m.iter().all(|&v| v == 0.0 || v == 2.0), "{m:?}");
        assert!(m.contains(&0.0) && m.contains(&2.0));
        // the reserve: per (layer, direction) gates (3h), hprev, aux (h
        // each) for T*N rows; the inputs of layers 2 and 3; the flag, set
        // in training
        let len = 3 * t * n * (3 * h + h + h) + 2 * t * n * h + 1;
        assert_eq!(all[3].shape, vec![len]);
        let r = all[3].to_vec::<f64>().unwrap();
        assert_eq!(r[len - 1], 1.0);
        // outside training the mask is all ones and the reserve is not
        // kept; without dropout the mask is empty
        let all = invoke(c, &ins, None, None).unwrap();
        let m = all[2].to_vec::<f64>().unwrap();
        assert!(m.iter().all(|&v| v == 1.0));
        assert_eq!(all[3].to_vec::<f64>().unwrap()[len - 1], 0.0);
        let c = Arc::new(parsed(&[
            ("state_size", "3"),
            ("num_layers", "3"),
            ("mode", "gru"),
        ]));
        assert_eq!(invoke(c, &ins, None, None).unwrap()[1].shape, vec![0]);
    }

    #[test]
    fn gradients_all_modes() {
        let (t, n, i, h) = (3, 2, 2, 2);
        for (mode, g) in [("rnn_tanh", 1), ("lstm", 4), ("gru", 3)] {
            let d = 2;
            let np = d * (g * h * i + g * h * h + 2 * g * h);
            let mut ins = vec![
                (vals(t * n * i, 1), vec![t, n, i]),
                (vals(np, 2), vec![np]),
                (vals(d * n * h, 3), vec![d, n, h]),
            ];
            if mode == "lstm" {
                ins.push((vals(d * n * h, 4), vec![d, n, h]));
            }
            let k = ins.len();
            ins.push((vec![3.0, 2.0], vec![n]));
            let diff: Vec<usize> = (0..k).collect();
            check_grad(
                "RNN",
                &[
                    ("state_size", "2"),
                    ("num_layers", "1"),
                    ("bidirectional", "True"),
                    ("mode", mode),
                    ("state_outputs", "True"),
                    ("use_sequence_length", "True"),
                ],
                &ins,
                &diff,
            );
        }
    }
}
