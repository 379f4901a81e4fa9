//! Normalisation family: BatchNorm, LayerNorm, InstanceNorm, GroupNorm,
//! L2Normalization, LRN and Dropout.
//!
//! The mean/variance normalisations share one engine: the data is viewed as
//! `(outer, C, inner)` and each element belongs to one *statistic group*:
//! per channel `c` (BatchNorm), per `(o, i)` (LayerNorm), per `(o, c)`
//! (InstanceNorm), per `(o, c / (C / G))` (GroupNorm). Statistics are
//! accumulated in f64 rows of `inner` contiguous elements; large inputs are
//! split over `outer` with rayon. Backward passes are internal operators
//! (`_batch_norm_grad`, `_norm_grad`, ...) that recompute the statistics
//! from the data instead of keeping hidden outputs.
use super::attrs::Attrs;
use super::elemwise::fmt_f64;
use super::kernels::PAR_GRAIN;
use super::registry::{Entry, GradBuilder, KernelCtx, OpCall, OpDef, Params, Resource};
use crate::base::dtype::Elem;
use crate::base::{fmt_shape, shape::norm_axis, DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::par::par_chunks_mut;
use crate::random::with_rng;

type B<'a> = &'a mut dyn GradBuilder;

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

// ---------------------------------------------------------------------------
// Layout and statistics engine
// ---------------------------------------------------------------------------

/// Which elements share a statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// One statistic per channel c (BatchNorm).
    PerC,
    /// One statistic per (o, i), reduced over C (LayerNorm, L2 channel mode).
    PerOI,
    /// One statistic per (o, c), reduced over inner (InstanceNorm).
    PerOC,
    /// One statistic per (o, group) with `cpg` channels per group (GroupNorm).
    PerOG(usize),
}

#[derive(Clone, Copy, Debug)]
struct Lay {
    o: usize,
    c: usize,
    i: usize,
    mode: Mode,
}

impl Lay {
    fn from_axis(shape: &[usize], axis: usize, mode: Mode) -> Lay {
        Lay {
            o: shape[..axis].iter().product(),
            c: shape[axis],
            i: shape[axis + 1..].iter().product(),
            mode,
        }
    }
    /// Statistics per outer index (all of them for PerC, which is shared).
    fn per_o(&self) -> usize {
        match self.mode {
            Mode::PerC | Mode::PerOC => self.c,
            Mode::PerOI => self.i,
            Mode::PerOG(cpg) => self.c / cpg.max(1),
        }
    }
    fn nstat(&self) -> usize {
        match self.mode {
            Mode::PerC => self.c,
            _ => self.o * self.per_o(),
        }
    }
    /// Elements per statistic.
    fn count(&self) -> usize {
        let total = self.o * self.c * self.i;
        total / self.nstat().max(1)
    }
    /// (first stat index of row (o, c) relative to the outer block, stride along i).
    #[inline]
    fn row_stat(&self, c: usize) -> (usize, usize) {
        match self.mode {
            Mode::PerC | Mode::PerOC => (c, 0),
            Mode::PerOI => (0, 1),
            Mode::PerOG(cpg) => (c / cpg, 0),
        }
    }
    fn parallel(&self) -> bool {
        self.o > 1 && self.o * self.c * self.i >= 2 * PAR_GRAIN
    }
}

/// acc[stat] = sum over the stat's elements of f(k, stat, channel), where k
/// is the flat element index.
fn stat_sum(l: &Lay, f: impl Fn(usize, usize, usize) -> f64 + Sync) -> Vec<f64> {
    let per_o = l.per_o();
    let shared = l.mode == Mode::PerC;
    let block = |o: usize| -> Vec<f64> {
        let mut acc = vec![0f64; per_o];
        let soff = if shared { 0 } else { o * per_o };
        for c in 0..l.c {
            let base = (o * l.c + c) * l.i;
            let (s0, ds) = l.row_stat(c);
            if ds == 0 {
                let mut s = 0f64;
                let st = soff + s0;
                for i in 0..l.i {
                    s += f(base + i, st, c);
                }
                acc[s0] += s;
            } else {
                for (i, a) in acc.iter_mut().enumerate().take(l.i) {
                    *a += f(base + i, soff + i, c);
                }
            }
        }
        acc
    };
    let blocks: Vec<Vec<f64>> = if l.parallel() {
        crate::par::par_map(l.o, block)
    } else {
        (0..l.o).map(block).collect()
    };
    if shared {
        let mut acc = vec![0f64; per_o];
        for b in blocks {
            for (a, v) in acc.iter_mut().zip(b) {
                *a += v;
            }
        }
        acc
    } else {
        blocks.concat()
    }
}

/// out[k] = f(k, stat(k), channel(k)) for every element, rows in parallel for large inputs.
fn map_stat<T: Elem>(l: &Lay, out: &mut [T], f: impl Fn(usize, usize, usize) -> T + Sync) {
    let per_o = l.per_o();
    let shared = l.mode == Mode::PerC;
    let block = |o: usize, ob: &mut [T]| {
        let soff = if shared { 0 } else { o * per_o };
        for c in 0..l.c {
            let (s0, ds) = l.row_stat(c);
            let base = (o * l.c + c) * l.i;
            let row = &mut ob[c * l.i..(c + 1) * l.i];
            for (i, v) in row.iter_mut().enumerate() {
                *v = f(base + i, soff + s0 + i * ds, c);
            }
        }
    };
    let bs = (l.c * l.i).max(1);
    if l.parallel() {
        par_chunks_mut(out, bs, block);
    } else {
        for (o, ob) in out.chunks_mut(bs).enumerate() {
            block(o, ob);
        }
    }
}

/// Mean and (biased) variance of each statistic group.
fn mean_var<T: Elem>(l: &Lay, x: &[T]) -> (Vec<f64>, Vec<f64>) {
    let n = l.count().max(1) as f64;
    let mut mean = stat_sum(l, |k, _, _| x[k].to_f64());
    mean.iter_mut().for_each(|m| *m /= n);
    let mean_ref = &mean;
    let mut var = stat_sum(l, |k, s, _| {
        let d = x[k].to_f64() - mean_ref[s];
        d * d
    });
    var.iter_mut().for_each(|v| *v /= n);
    (mean, var)
}

fn to_f64_vec(b: &Blob) -> Vec<f64> {
    crate::dispatch_dtype!(b.dtype, T => b.data::<T>().iter().map(|v| v.to_f64()).collect())
}

fn write_f64(b: &Blob, v: &[f64]) {
    crate::dispatch_dtype!(b.dtype, T => {
        for (o, &x) in b.data_mut::<T>().iter_mut().zip(v) {
            *o = T::from_f64(x);
        }
    })
}

/// y = (x - mean[s]) * rstd[s] * gamma[a(c, s)] + beta[a(c, s)], where the
/// affine index is the channel (or the group for GroupNorm).
fn apply_affine(
    l: &Lay,
    x: &Blob,
    y: &Blob,
    mean: &[f64],
    rstd: &[f64],
    gamma: &[f64],
    beta: &[f64],
    per_group: bool,
) {
    let aff = |s: usize, c: usize| if per_group { s % l.per_o() } else { c };
    crate::dispatch_float!(x.dtype, T => {
        let xv = x.data::<T>();
        map_stat(l, y.data_mut::<T>(), |k, s, c| {
            let a = aff(s, c);
            T::from_f64((xv[k].to_f64() - mean[s]) * rstd[s] * gamma[a] + beta[a])
        })
    });
}

/// Gradients of y = xhat * gamma + beta where xhat = (x - mean) * rstd.
/// With `batch_stats`, mean and rstd depend on x (over each group).
/// Writes d data into `dx`; returns (dgamma, dbeta) of length `naff`.
#[allow(clippy::too_many_arguments)]
fn affine_backward(
    l: &Lay,
    g: &Blob,
    x: &Blob,
    dx: &Blob,
    mean: &[f64],
    rstd: &[f64],
    gamma: &[f64],
    naff: usize,
    per_group: bool,
    batch_stats: bool,
) -> (Vec<f64>, Vec<f64>) {
    let per_o = l.per_o();
    let aff = |s: usize, c: usize| if per_group { s % per_o } else { c };
    crate::dispatch_float!(x.dtype, T => {
        let (gv, xv) = (g.data::<T>(), x.data::<T>());
        let xhat = |k: usize, s: usize| (xv[k].to_f64() - mean[s]) * rstd[s];
        let mut dgamma = vec![0f64; naff];
        let mut dbeta = vec![0f64; naff];
        if l.mode == Mode::PerOI {
            // The affine index is the channel, which varies inside a statistic:
            // sum per channel with a PerC view whose stat index is the channel.
            let lc = Lay { o: l.o, c: l.c, i: l.i, mode: Mode::PerC };
            let sg = stat_sum(&lc, |k, _, _| gv[k].to_f64());
            let sgx = stat_sum(&lc, |k, _, _| {
                let s = (k / (l.c * l.i)) * l.i + k % l.i;
                gv[k].to_f64() * xhat(k, s)
            });
            dbeta.copy_from_slice(&sg[..naff]);
            dgamma.copy_from_slice(&sgx[..naff]);
        } else {
            let sum_g = stat_sum(l, |k, _, _| gv[k].to_f64());
            let sum_g_xh = stat_sum(l, |k, s, _| gv[k].to_f64() * xhat(k, s));
            for s in 0..sum_g.len() {
                // every element of a statistic shares one affine index here
                let a = if per_group || l.mode == Mode::PerOC { s % per_o } else { s };
                dbeta[a] += sum_g[s];
                dgamma[a] += sum_g_xh[s];
            }
        }
        let n = l.count().max(1) as f64;
        let (sum_dxh, sum_dxh_xh) = if batch_stats {
            (
                stat_sum(l, |k, s, c| gv[k].to_f64() * gamma[aff(s, c)]),
                stat_sum(l, |k, s, c| gv[k].to_f64() * gamma[aff(s, c)] * xhat(k, s)),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        map_stat(l, dx.data_mut::<T>(), |k, s, c| {
            let dxh = gv[k].to_f64() * gamma[aff(s, c)];
            let v = if batch_stats {
                rstd[s] * (dxh - sum_dxh[s] / n - xhat(k, s) * sum_dxh_xh[s] / n)
            } else {
                dxh * rstd[s]
            };
            T::from_f64(v)
        });
        (dgamma, dbeta)
    })
}

fn float_only(op: &str, what: &str, t: DType) -> Result<()> {
    if !t.is_float() {
        return Err(Error::DType(format!(
            "{op}: {what} has dtype {}, expected float16, float32 or float64",
            t.name()
        )));
    }
    Ok(())
}

fn check_param_shape(op: &str, name: &str, got: &Option<Shape>, want: &Shape) -> Result<()> {
    if let Some(s) = got {
        if s != want {
            return Err(Error::Shape(format!(
                "{op}: {name} has shape {}, expected {} from data",
                fmt_shape(s),
                fmt_shape(want)
            )));
        }
    }
    Ok(())
}

/// Data dtype must be float; parameters take the data dtype, except float32
/// parameters for float16 data (as MXNet).
fn infer_type_norm(
    call: &OpCall,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let op = call.name();
    let Some(t) = ins[0] else { return Ok(()) };
    float_only(op, "data", t)?;
    let pt = if t == DType::F16 { DType::F32 } else { t };
    let names = call.def.inputs;
    for (k, slot) in ins.iter_mut().enumerate().skip(1) {
        match *slot {
            None => *slot = Some(pt),
            Some(u) => {
                if u != t && u != pt {
                    return Err(Error::DType(format!(
                        "{op}: {} has dtype {}, expected {} (the data dtype{})",
                        names.get(k).copied().unwrap_or("input"),
                        u.name(),
                        t.name(),
                        if t == DType::F16 { " or float32" } else { "" }
                    )));
                }
            }
        }
    }
    outs[0] = Some(t);
    for o in outs.iter_mut().skip(1) {
        *o = Some(pt);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// BatchNorm
// ---------------------------------------------------------------------------

pub struct BnParam {
    eps: f64,
    momentum: f64,
    fix_gamma: bool,
    use_global_stats: bool,
    output_mean_var: bool,
    axis: i64,
}

fn parse_bn(a: &Attrs) -> Result<BnParam> {
    let p = a.p("BatchNorm");
    if p.bool("cudnn_off", false)? {
        // cudnn_off only selects a GPU implementation; accepted on CPU.
    }
    if p.has("min_calib_range") || p.has("max_calib_range") {
        return Err(Error::Param(
            "BatchNorm: min_calib_range/max_calib_range (quantisation) are not supported".into(),
        ));
    }
    let eps = p.f64("eps", 1e-3)?;
    if !(eps > 0.0) {
        return Err(Error::Param(format!(
            "BatchNorm: eps must be positive, got {eps}"
        )));
    }
    Ok(BnParam {
        eps,
        momentum: p.f64("momentum", 0.9)?,
        fix_gamma: p.bool("fix_gamma", true)?,
        use_global_stats: p.bool("use_global_stats", false)?,
        output_mean_var: p.bool("output_mean_var", false)?,
        axis: p.i64("axis", 1)?,
    })
}

fn bn_attrs(p: &BnParam) -> Vec<(&'static str, String)> {
    vec![
        ("eps", fmt_f64(p.eps)),
        ("momentum", fmt_f64(p.momentum)),
        ("fix_gamma", py_bool(p.fix_gamma)),
        ("use_global_stats", py_bool(p.use_global_stats)),
        ("axis", p.axis.to_string()),
    ]
}

fn bn_infer_shape(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<BnParam>();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    if d.is_empty() {
        return Err(Error::Shape(format!(
            "{op}: data must have at least 1 dimension, got shape {}",
            fmt_shape(&d)
        )));
    }
    let ax = norm_axis(op, p.axis, d.len())?;
    let c: Shape = vec![d[ax]];
    for (k, name) in ["gamma", "beta", "moving_mean", "moving_var"]
        .iter()
        .enumerate()
    {
        check_param_shape(op, name, &ins[k + 1], &c)?;
        ins[k + 1] = Some(c.clone());
    }
    outs[0] = Some(d);
    for o in outs.iter_mut().skip(1) {
        *o = Some(c.clone());
    }
    Ok(())
}

fn bn_kernel(call: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = call.p::<BnParam>();
    let (x, y) = (&i[0], &o[0]);
    let ax = norm_axis("BatchNorm", p.axis, x.ndim())?;
    let l = Lay::from_axis(&x.shape, ax, Mode::PerC);
    let c = l.c;
    let gamma = if p.fix_gamma {
        vec![1f64; c]
    } else {
        to_f64_vec(&i[1])
    };
    let beta = to_f64_vec(&i[2]);
    let batch = k.is_train && !p.use_global_stats;
    let (mean, var) = if batch {
        let (m, v) = crate::dispatch_float!(x.dtype, T => mean_var(&l, x.data::<T>()));
        // moving = moving * momentum + batch * (1 - momentum), in place.
        let mut mm = to_f64_vec(&i[3]);
        let mut mv = to_f64_vec(&i[4]);
        for ch in 0..c {
            mm[ch] = mm[ch] * p.momentum + m[ch] * (1.0 - p.momentum);
            mv[ch] = mv[ch] * p.momentum + v[ch] * (1.0 - p.momentum);
        }
        write_f64(&i[3], &mm);
        write_f64(&i[4], &mv);
        (m, v)
    } else {
        (to_f64_vec(&i[3]), to_f64_vec(&i[4]))
    };
    let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + p.eps).sqrt()).collect();
    apply_affine(&l, x, y, &mean, &rstd, &gamma, &beta, false);
    if o.len() == 3 {
        write_f64(&o[1], &mean);
        write_f64(&o[2], &rstd);
    }
    Ok(())
}

/// BatchNorm's (and SyncBatchNorm's) gradient: `_batch_norm_grad`.
const BN_GRAD: Option<super::registry::GradFn> = Some(|c, b, x, _, g| {
    let p = c.p::<BnParam>();
    let r = b.op(
        "_batch_norm_grad",
        &bn_attrs(p),
        &[g[0], x[0], x[1], x[3], x[4]],
    )?;
    let dgamma = if p.fix_gamma {
        Some(b.op1("zeros_like", &[], &[x[1]])?)
    } else {
        Some(r[1])
    };
    Ok(vec![Some(r[0]), dgamma, Some(r[2]), None, None])
});

pub static BATCH_NORM: OpDef = OpDef {
    name: "BatchNorm",
    doc: "Batch normalisation over all axes but `axis`: (x - mean) / sqrt(var + eps) * gamma + beta. \
          In training (autograd.record) the batch statistics are used and moving_mean/moving_var are \
          updated in place (moving = moving * momentum + batch * (1 - momentum)); otherwise the moving \
          statistics are used. fix_gamma treats gamma as 1. output_mean_var also returns the mean and \
          the inverse standard deviation.",
    inputs: &["data", "gamma", "beta", "moving_mean", "moving_var"],
    num_outputs: |c| if c.p::<BnParam>().output_mean_var { 3 } else { 1 },
    parse: |a| Ok(Box::new(parse_bn(a)?) as Params),
    infer_shape: bn_infer_shape,
    infer_type: infer_type_norm,
    cpu: Some(bn_kernel),
    grad: BN_GRAD,
    mutates: &[3, 4],
    ..OpDef::BASE
};

/// MXNet's `_contrib_SyncBatchNorm` in one process: statistics are
/// synchronised across `ndev` devices, and oxnet has one, so with `ndev=1`
/// it is BatchNorm over axis 1 (MXNet's SyncBatchNorm has no `axis`); a
/// larger `ndev` would wait for devices that do not exist and is refused.
fn parse_sync_bn(a: &Attrs) -> Result<BnParam> {
    const OP: &str = "_contrib_SyncBatchNorm";
    let p = a.p(OP);
    let ndev = p.i64("ndev", 1)?;
    if ndev != 1 {
        return Err(Error::Param(format!(
            "{OP}: ndev={ndev}, but oxnet synchronises no devices (one process, one CPU \
             context): use ndev=1, which is BatchNorm"
        )));
    }
    if a.raw("axis").is_some() {
        return Err(Error::Param(format!(
            "{OP}: no 'axis' argument (it normalises over axis 1, as MXNet's)"
        )));
    }
    let rest = Attrs(
        a.0.iter()
            .filter(|(k, _)| k != "ndev" && k != "key")
            .cloned()
            .collect(),
    );
    parse_bn(&rest).map_err(|e| Error::Param(e.message().replace("BatchNorm", OP)))
}

pub static SYNC_BATCH_NORM: OpDef = OpDef {
    name: "_contrib_SyncBatchNorm",
    doc: "Cross-device synchronised batch normalisation (MXNet's contrib.SyncBatchNorm). oxnet has \
          one device per process, so it is BatchNorm over axis 1 with ndev=1 (the default; a larger \
          ndev is refused); `key` names the synchronisation group and is accepted. Arguments and \
          outputs as BatchNorm: eps=1e-3, momentum=0.9, fix_gamma=True, use_global_stats=False, \
          output_mean_var=False.",
    inputs: &["data", "gamma", "beta", "moving_mean", "moving_var"],
    num_outputs: |c| if c.p::<BnParam>().output_mean_var { 3 } else { 1 },
    parse: |a| Ok(Box::new(parse_sync_bn(a)?) as Params),
    infer_shape: bn_infer_shape,
    infer_type: infer_type_norm,
    cpu: Some(bn_kernel),
    grad: BN_GRAD,
    mutates: &[3, 4],
    ..OpDef::BASE
};

/// Backward of BatchNorm: (ograd, data, gamma, moving_mean, moving_var) ->
/// (d data, d gamma, d beta). Uses batch statistics when run in training
/// mode without use_global_stats (as MXNet's backward does).
pub static BATCH_NORM_GRAD: OpDef = OpDef {
    name: "_batch_norm_grad",
    doc: "Gradient of BatchNorm with respect to data, gamma and beta.",
    inputs: &["ograd", "data", "gamma", "moving_mean", "moving_var"],
    num_outputs: |_| 3,
    parse: |a| Ok(Box::new(parse_bn(a)?) as Params),
    infer_shape: |call, ins, outs| {
        let mut v = [
            ins[1].clone(),
            ins[2].clone(),
            None,
            ins[3].clone(),
            ins[4].clone(),
        ];
        let mut o1 = [None];
        bn_infer_shape(call, &mut v, &mut o1)?;
        if let (Some(g), Some(d)) = (&ins[0], &v[0]) {
            if g != d {
                return Err(Error::Shape(format!(
                    "_batch_norm_grad: ograd shape {} does not match data shape {}",
                    fmt_shape(g),
                    fmt_shape(d)
                )));
            }
        }
        outs[0] = v[0].clone();
        outs[1] = v[1].clone();
        outs[2] = v[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        outs[1] = ins[2];
        outs[2] = ins[2];
        Ok(())
    },
    cpu: Some(|call, i, o, k| {
        let p = call.p::<BnParam>();
        let (g, x) = (&i[0], &i[1]);
        let ax = norm_axis("BatchNorm", p.axis, x.ndim())?;
        let l = Lay::from_axis(&x.shape, ax, Mode::PerC);
        let gamma = if p.fix_gamma {
            vec![1f64; l.c]
        } else {
            to_f64_vec(&i[2])
        };
        let batch = k.is_train && !p.use_global_stats;
        let (mean, var) = if batch {
            crate::dispatch_float!(x.dtype, T => mean_var(&l, x.data::<T>()))
        } else {
            (to_f64_vec(&i[3]), to_f64_vec(&i[4]))
        };
        let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + p.eps).sqrt()).collect();
        let (dg, db) = affine_backward(&l, g, x, &o[0], &mean, &rstd, &gamma, l.c, false, batch);
        write_f64(&o[1], &dg);
        write_f64(&o[2], &db);
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// LayerNorm, InstanceNorm, GroupNorm (one backward op: _norm_grad)
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Layer,
    Instance,
    Group,
}

pub struct NormParam {
    kind: Kind,
    axis: i64,
    eps: f64,
    num_groups: usize,
    output_mean_var: bool,
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Layer => "LayerNorm",
        Kind::Instance => "InstanceNorm",
        Kind::Group => "GroupNorm",
    }
}

fn parse_norm(a: &Attrs, kind: Kind) -> Result<NormParam> {
    let op = kind_name(kind);
    let p = a.p(op);
    let (eps_def, axis_def) = match kind {
        Kind::Layer => (1e-5, -1),
        Kind::Instance => (1e-3, 1),
        Kind::Group => (1e-5, 1),
    };
    let eps = p.f64("eps", eps_def)?;
    if !(eps >= 0.0) {
        return Err(Error::Param(format!(
            "{op}: eps must be non-negative, got {eps}"
        )));
    }
    let num_groups = if kind == Kind::Group {
        p.usize("num_groups", 1)?
    } else {
        1
    };
    if num_groups == 0 {
        return Err(Error::Param(format!("{op}: num_groups must be positive")));
    }
    Ok(NormParam {
        kind,
        axis: if kind == Kind::Layer {
            p.i64("axis", axis_def)?
        } else {
            axis_def
        },
        eps,
        num_groups,
        output_mean_var: if kind == Kind::Instance {
            false
        } else {
            p.bool("output_mean_var", false)?
        },
    })
}

fn norm_attrs(p: &NormParam) -> Vec<(&'static str, String)> {
    let kind = match p.kind {
        Kind::Layer => "layer",
        Kind::Instance => "instance",
        Kind::Group => "group",
    };
    vec![
        ("kind", kind.to_string()),
        ("axis", p.axis.to_string()),
        ("eps", fmt_f64(p.eps)),
        ("num_groups", p.num_groups.to_string()),
    ]
}

/// Layout, affine length and whether the affine index is the group.
fn norm_layout(op: &str, p: &NormParam, d: &[usize]) -> Result<(Lay, usize, bool)> {
    match p.kind {
        Kind::Layer => {
            if d.is_empty() {
                return Err(Error::Shape(format!(
                    "{op}: data must have at least 1 dimension"
                )));
            }
            let ax = norm_axis(op, p.axis, d.len())?;
            Ok((Lay::from_axis(d, ax, Mode::PerOI), d[ax], false))
        }
        Kind::Instance | Kind::Group => {
            if d.len() < 3 {
                return Err(Error::Shape(format!(
                    "{op}: data must have at least 3 dimensions (N, C, ...), got shape {}",
                    fmt_shape(d)
                )));
            }
            if p.kind == Kind::Instance {
                return Ok((Lay::from_axis(d, 1, Mode::PerOC), d[1], false));
            }
            let g = p.num_groups;
            if !d[1].is_multiple_of(g) {
                return Err(Error::Shape(format!(
                    "{op}: the {} channels of data shape {} are not divisible by num_groups={g}",
                    d[1],
                    fmt_shape(d)
                )));
            }
            Ok((Lay::from_axis(d, 1, Mode::PerOG(d[1] / g)), g, true))
        }
    }
}

fn norm_infer_shape(
    call: &OpCall,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let op = call.name();
    let p = call.p::<NormParam>();
    let Some(d) = ins[0].clone() else {
        return Ok(());
    };
    let (_, naff, _) = norm_layout(op, p, &d)?;
    let ps: Shape = vec![naff];
    check_param_shape(op, "gamma", &ins[1], &ps)?;
    check_param_shape(op, "beta", &ins[2], &ps)?;
    ins[1] = Some(ps.clone());
    ins[2] = Some(ps);
    if outs.len() == 3 {
        let ms: Shape = match p.kind {
            Kind::Layer => {
                let ax = norm_axis(op, p.axis, d.len())?;
                let mut m = d.clone();
                m[ax] = 1;
                m
            }
            _ => vec![d[0], p.num_groups],
        };
        outs[1] = Some(ms.clone());
        outs[2] = Some(ms);
    }
    outs[0] = Some(d);
    Ok(())
}

fn norm_kernel(call: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = call.p::<NormParam>();
    let x = &i[0];
    let (l, _, per_group) = norm_layout(call.name(), p, &x.shape)?;
    let gamma = to_f64_vec(&i[1]);
    let beta = to_f64_vec(&i[2]);
    if p.kind == Kind::Layer && l.i == 1 && l.c > 0 && o.len() == 1 {
        crate::dispatch_float!(x.dtype, T => {
            layer_norm_rows(x.data::<T>(), o[0].data_mut::<T>(), l.c, p.eps, &gamma, &beta)
        });
        return Ok(());
    }
    let (mean, var) = crate::dispatch_float!(x.dtype, T => mean_var(&l, x.data::<T>()));
    let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + p.eps).sqrt()).collect();
    apply_affine(&l, x, &o[0], &mean, &rstd, &gamma, &beta, per_group);
    if o.len() == 3 {
        write_f64(&o[1], &mean);
        let std: Vec<f64> = var.iter().map(|v| (v + p.eps).sqrt()).collect();
        write_f64(&o[2], &std);
    }
    Ok(())
}

/// LayerNorm over the last axis (rows of `n` contiguous values), rows in
/// parallel: each row's mean and variance (two passes, float64), then the
/// affine map.
fn layer_norm_rows<T: Elem>(x: &[T], y: &mut [T], n: usize, eps: f64, gamma: &[f64], beta: &[f64]) {
    let rows = (PAR_GRAIN / n).max(1);
    crate::par::par_chunks_mut(y, rows * n, |k, yc| {
        let xs = &x[k * rows * n..k * rows * n + yc.len()];
        for (xr, yr) in xs.chunks_exact(n).zip(yc.chunks_exact_mut(n)) {
            let mean = xr.iter().map(|v| v.to_f64()).sum::<f64>() / n as f64;
            let var = xr
                .iter()
                .map(|v| {
                    let d = v.to_f64() - mean;
                    d * d
                })
                .sum::<f64>()
                / n as f64;
            let r = 1.0 / (var + eps).sqrt();
            for (((o, v), g), b) in yr.iter_mut().zip(xr).zip(gamma).zip(beta) {
                *o = T::from_f64((v.to_f64() - mean) * r * g + b);
            }
        }
    });
}

fn norm_grad(
    c: &OpCall,
    b: B,
    x: &[Entry],
    _: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<NormParam>();
    let r = b.op("_norm_grad", &norm_attrs(p), &[g[0], x[0], x[1]])?;
    Ok(vec![Some(r[0]), Some(r[1]), Some(r[2])])
}

macro_rules! norm_op {
    ($NAME:ident, $name:expr, $kind:expr, $doc:expr) => {
        pub static $NAME: OpDef = OpDef {
            name: $name,
            doc: $doc,
            inputs: &["data", "gamma", "beta"],
            num_outputs: |c| {
                if c.p::<NormParam>().output_mean_var {
                    3
                } else {
                    1
                }
            },
            parse: |a| Ok(Box::new(parse_norm(a, $kind)?) as Params),
            infer_shape: norm_infer_shape,
            infer_type: infer_type_norm,
            cpu: Some(norm_kernel),
            grad: Some(norm_grad),
            ..OpDef::BASE
        };
    };
}

norm_op!(
    LAYER_NORM,
    "LayerNorm",
    Kind::Layer,
    "Layer normalisation along `axis` (default -1): (x - mean) / sqrt(var + eps) * gamma + beta; \
     output_mean_var also returns the mean and the standard deviation."
);
norm_op!(
    INSTANCE_NORM,
    "InstanceNorm",
    Kind::Instance,
    "Instance normalisation: each (sample, channel) of data (N, C, ...) is normalised over its \
     spatial axes, then scaled by gamma[c] and shifted by beta[c]."
);
norm_op!(GROUP_NORM, "GroupNorm", Kind::Group,
    "Group normalisation: the channels of data (N, C, ...) are split into num_groups groups, each \
     normalised over its channels and spatial axes; gamma and beta have shape (num_groups,) as in \
     MXNet 1.x. output_mean_var also returns the mean and standard deviation, shape (N, num_groups).");

/// Backward of LayerNorm/InstanceNorm/GroupNorm: (ograd, data, gamma) ->
/// (d data, d gamma, d beta).
pub static NORM_GRAD: OpDef = OpDef {
    name: "_norm_grad",
    doc: "Gradient of LayerNorm/InstanceNorm/GroupNorm (kind=layer|instance|group).",
    inputs: &["ograd", "data", "gamma"],
    num_outputs: |_| 3,
    parse: |a| {
        let kind = match a
            .p("_norm_grad")
            .choice("kind", "layer", &["layer", "instance", "group"])?
            .as_str()
        {
            "layer" => Kind::Layer,
            "instance" => Kind::Instance,
            _ => Kind::Group,
        };
        let mut p = parse_norm(a, kind)?;
        p.output_mean_var = false;
        Ok(Box::new(p) as Params)
    },
    infer_shape: |call, ins, outs| {
        let mut v = [ins[1].clone(), ins[2].clone(), None];
        let mut o1 = [None];
        norm_infer_shape(call, &mut v, &mut o1)?;
        outs[0] = v[0].clone();
        outs[1] = v[1].clone();
        outs[2] = v[1].clone();
        Ok(())
    },
    infer_type: |_, ins, outs| {
        outs[0] = ins[1];
        outs[1] = ins[2];
        outs[2] = ins[2];
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let p = call.p::<NormParam>();
        let (g, x) = (&i[0], &i[1]);
        let (l, naff, per_group) = norm_layout(kind_name(p.kind), p, &x.shape)?;
        let gamma = to_f64_vec(&i[2]);
        let (mean, var) = crate::dispatch_float!(x.dtype, T => mean_var(&l, x.data::<T>()));
        let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + p.eps).sqrt()).collect();
        let (dg, db) =
            affine_backward(&l, g, x, &o[0], &mean, &rstd, &gamma, naff, per_group, true);
        write_f64(&o[1], &dg);
        write_f64(&o[2], &db);
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// L2Normalization
// ---------------------------------------------------------------------------

pub struct L2Param {
    eps: f64,
    mode: String,
}

fn l2_layout(op: &str, mode: &str, d: &[usize]) -> Result<Lay> {
    let need = if mode == "instance" { 1 } else { 2 };
    if d.len() < need {
        return Err(Error::Shape(format!(
            "{op}: mode '{mode}' needs data with at least {need} dimension(s), got shape {}",
            fmt_shape(d)
        )));
    }
    let rest = |from: usize| d[from..].iter().product::<usize>();
    Ok(match mode {
        "instance" => Lay {
            o: d[0],
            c: 1,
            i: rest(1),
            mode: Mode::PerOC,
        },
        "channel" => Lay {
            o: d[0],
            c: d[1],
            i: rest(2),
            mode: Mode::PerOI,
        },
        _ => Lay {
            o: d[0] * d[1],
            c: 1,
            i: rest(2),
            mode: Mode::PerOC,
        },
    })
}

fn parse_l2(a: &Attrs) -> Result<Params> {
    let p = a.p("L2Normalization");
    Ok(Box::new(L2Param {
        eps: p.f64("eps", 1e-10)?,
        mode: p.choice("mode", "instance", &["instance", "channel", "spatial"])?,
    }))
}

fn l2_attrs(p: &L2Param) -> Vec<(&'static str, String)> {
    vec![("eps", fmt_f64(p.eps)), ("mode", p.mode.clone())]
}

fn l2_norms<T: Elem>(l: &Lay, x: &[T], eps: f64) -> Vec<f64> {
    let mut s = stat_sum(l, |k, _, _| {
        let v = x[k].to_f64();
        v * v
    });
    s.iter_mut().for_each(|v| *v = (*v + eps).sqrt());
    s
}

pub static L2_NORMALIZATION: OpDef = OpDef {
    name: "L2Normalization",
    doc: "x / sqrt(sum(x^2) + eps), the sum over all axes but the first (mode='instance'), over \
          axis 1 (mode='channel') or over axes 2.. (mode='spatial').",
    parse: parse_l2,
    infer_shape: |call, ins, outs| {
        if let Some(d) = &ins[0] {
            l2_layout(call.name(), &call.p::<L2Param>().mode, d)?;
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |call, ins, outs| {
        if let Some(t) = ins[0] {
            float_only(call.name(), "data", t)?;
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let p = call.p::<L2Param>();
        let x = &i[0];
        let l = l2_layout("L2Normalization", &p.mode, &x.shape)?;
        crate::dispatch_float!(x.dtype, T => {
            let xv = x.data::<T>();
            let norm = l2_norms(&l, xv, p.eps);
            map_stat(&l, o[0].data_mut::<T>(), |k, s, _| T::from_f64(xv[k].to_f64() / norm[s]));
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        let r = b.op1(
            "_l2_normalization_grad",
            &l2_attrs(c.p::<L2Param>()),
            &[g[0], x[0]],
        )?;
        Ok(vec![Some(r)])
    }),
    ..OpDef::BASE
};

/// d/dx of x / n with n = sqrt(sum x^2 + eps): (g - y * sum(g * y) ... ) / n,
/// precisely dx = g / n - x * sum(g * x) / n^3.
pub static L2_NORMALIZATION_GRAD: OpDef = OpDef {
    name: "_l2_normalization_grad",
    doc: "Gradient of L2Normalization: (ograd, data) -> d data.",
    inputs: &["ograd", "data"],
    parse: parse_l2,
    infer_shape: super::registry::infer_shape_same,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<L2Param>();
        let (g, x) = (&i[0], &i[1]);
        let l = l2_layout("L2Normalization", &p.mode, &x.shape)?;
        crate::dispatch_float!(x.dtype, T => {
            let (xv, gv) = (x.data::<T>(), g.data::<T>());
            let norm = l2_norms(&l, xv, p.eps);
            let gx = stat_sum(&l, |k, _, _| gv[k].to_f64() * xv[k].to_f64());
            map_stat(&l, o[0].data_mut::<T>(), |k, s, _| {
                let n = norm[s];
                T::from_f64(gv[k].to_f64() / n - xv[k].to_f64() * gx[s] / (n * n * n))
            });
        });
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// LRN (across channels of NCHW-like data)
// ---------------------------------------------------------------------------

pub struct LrnParam {
    alpha: f64,
    beta: f64,
    knorm: f64,
    nsize: usize,
}

fn parse_lrn(a: &Attrs) -> Result<Params> {
    let p = a.p("LRN");
    let nsize = p.i64_req("nsize")?;
    if nsize <= 0 {
        return Err(Error::Param(format!(
            "LRN: nsize must be positive, got {nsize}"
        )));
    }
    Ok(Box::new(LrnParam {
        alpha: p.f64("alpha", 1e-4)?,
        beta: p.f64("beta", 0.75)?,
        knorm: p.f64("knorm", 2.0)?,
        nsize: nsize as usize,
    }))
}

fn lrn_attrs(p: &LrnParam) -> Vec<(&'static str, String)> {
    vec![
        ("alpha", fmt_f64(p.alpha)),
        ("beta", fmt_f64(p.beta)),
        ("knorm", fmt_f64(p.knorm)),
        ("nsize", p.nsize.to_string()),
    ]
}

/// scale[n, c, i] = knorm + alpha / nsize * sum_{|c' - c| <= nsize/2} x[n, c', i]^2.
fn lrn_scale<T: Elem>(shape: &[usize], x: &[T], p: &LrnParam) -> Vec<f64> {
    let (n, c) = (shape[0], shape[1]);
    let inner: usize = shape[2..].iter().product();
    let half = p.nsize / 2;
    let a = p.alpha / p.nsize as f64;
    let mut scale = vec![p.knorm; x.len()];
    for b in 0..n {
        let base = b * c * inner;
        for ch in 0..c {
            let lo = ch.saturating_sub(half);
            let hi = (ch + half).min(c - 1);
            let dst = &mut scale[base + ch * inner..base + (ch + 1) * inner];
            for src in lo..=hi {
                let xs = &x[base + src * inner..base + (src + 1) * inner];
                for (d, v) in dst.iter_mut().zip(xs) {
                    let v = v.to_f64();
                    *d += a * v * v;
                }
            }
        }
    }
    scale
}

/// s^-beta, with the common exponents through square roots (pow is the
/// forward's whole cost otherwise).
#[inline(always)]
fn pow_neg(s: f64, beta: f64) -> f64 {
    if beta == 0.75 {
        1.0 / (s.sqrt() * s.sqrt().sqrt())
    } else if beta == 0.5 {
        1.0 / s.sqrt()
    } else if beta == 1.0 {
        1.0 / s
    } else {
        s.powf(-beta)
    }
}

/// The forward, in parallel over (image, run of spatial positions): the
/// channels are walked in order with a running sum of squares over the
/// window (one channel enters, one leaves), kept in float64.
fn lrn_forward<T: Elem>(shape: &[usize], x: &[T], y: &mut [T], p: &LrnParam) {
    const RUN: usize = 512;
    let (n, c) = (shape[0], shape[1]);
    let inner: usize = shape[2..].iter().product();
    if n * c * inner == 0 {
        return;
    }
    let half = p.nsize / 2;
    let a = p.alpha / p.nsize as f64;
    let runs = inner.div_ceil(RUN);
    // task (b, r) writes only y[b][..][r * RUN..], disjoint between tasks
    let out = crate::par::SharedMut::new(y);
    crate::par::par_for(n * runs, &|task| {
        let (b, r) = (task / runs, task % runs);
        let (s0, len) = (r * RUN, RUN.min(inner - r * RUN));
        let at = |ch: usize| (b * c + ch) * inner + s0;
        let sq = |ch: usize, acc: &mut [f64], sign: f64| {
            for (v, xv) in acc.iter_mut().zip(&x[at(ch)..at(ch) + len]) {
                let xv = xv.to_f64();
                *v += sign * xv * xv;
            }
        };
        let mut acc = [0f64; RUN];
        let acc = &mut acc[..len];
        for ch in 0..=half.min(c - 1) {
            sq(ch, acc, 1.0);
        }
        // one loop per exponent form, so that each vectorises
        #[inline(always)]
        fn put<T: Elem>(
            yo: &mut [T],
            xs: &[T],
            acc: &[f64],
            k: f64,
            a: f64,
            f: impl Fn(f64) -> f64,
        ) {
            for ((o, xv), s) in yo.iter_mut().zip(xs).zip(acc) {
                *o = T::from_f64(xv.to_f64() * f(k + a * s));
            }
        }
        /// [`put`] compiled for AVX2 (4 float64 lanes; the same bits).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn put_avx2<T: Elem>(
            yo: &mut [T],
            xs: &[T],
            acc: &[f64],
            k: f64,
            a: f64,
            f: impl Fn(f64) -> f64,
        ) {
            put(yo, xs, acc, k, a, f)
        }
        // the output loop for exponent form $f, on AVX2 where the CPU has it
        macro_rules! apply {
            ($yo:expr, $xs:expr, $f:expr) => {{
                #[cfg(target_arch = "x86_64")]
                if crate::ops::kernels::wide_cpu() {
                    // SAFETY: the CPU has AVX2 and FMA
                    unsafe { put_avx2($yo, $xs, acc, p.knorm, a, $f) };
                } else {
                    put($yo, $xs, acc, p.knorm, a, $f);
                }
                #[cfg(not(target_arch = "x86_64"))]
                put($yo, $xs, acc, p.knorm, a, $f);
            }};
        }
        for ch in 0..c {
            // SAFETY: the run lies inside y, written by this task only
            let yo = unsafe { out.slice(at(ch), len) };
            let xs = &x[at(ch)..at(ch) + len];
            match p.beta {
                0.75 => apply!(yo, xs, |s: f64| 1.0 / (s.sqrt() * s.sqrt().sqrt())),
                0.5 => apply!(yo, xs, |s: f64| 1.0 / s.sqrt()),
                beta => apply!(yo, xs, |s: f64| pow_neg(s, beta)),
            }
            if ch + half + 1 < c {
                sq(ch + half + 1, acc, 1.0);
            }
            if ch >= half {
                sq(ch - half, acc, -1.0);
            }
        }
    });
}

fn lrn_check(op: &str, d: &[usize]) -> Result<()> {
    if d.len() < 2 {
        return Err(Error::Shape(format!(
            "{op}: data must have at least 2 dimensions (N, C, ...), got shape {}",
            fmt_shape(d)
        )));
    }
    Ok(())
}

pub static LRN: OpDef = OpDef {
    name: "LRN",
    doc: "Local response normalisation across channels: x / (knorm + alpha / nsize * \
          sum of x^2 over the nsize neighbouring channels) ^ beta.",
    parse: parse_lrn,
    infer_shape: |call, ins, outs| {
        if let Some(d) = &ins[0] {
            lrn_check(call.name(), d)?;
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |call, ins, outs| {
        if let Some(t) = ins[0] {
            float_only(call.name(), "data", t)?;
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(|call, i, o, _| {
        let p = call.p::<LrnParam>();
        let x = &i[0];
        crate::dispatch_float!(x.dtype, T => {
            lrn_forward(&x.shape, x.data::<T>(), o[0].data_mut::<T>(), p)
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        Ok(vec![Some(b.op1(
            "_lrn_grad",
            &lrn_attrs(c.p::<LrnParam>()),
            &[g[0], x[0]],
        )?)])
    }),
    ..OpDef::BASE
};

/// dx[c] = g[c] * s[c]^-b - 2 a b / n * x[c] * sum_{c' near c} g[c'] x[c'] s[c']^(-b-1).
pub static LRN_GRAD: OpDef = OpDef {
    name: "_lrn_grad",
    doc: "Gradient of LRN: (ograd, data) -> d data.",
    inputs: &["ograd", "data"],
    parse: parse_lrn,
    infer_shape: super::registry::infer_shape_same,
    cpu: Some(|call, i, o, _| {
        let p = call.p::<LrnParam>();
        let (g, x) = (&i[0], &i[1]);
        crate::dispatch_float!(x.dtype, T => {
            let (xv, gv) = (x.data::<T>(), g.data::<T>());
            let s = lrn_scale(&x.shape, xv, p);
            // t = g * x * s^(-b-1), then window-sum it across channels.
            let t: Vec<f64> = (0..xv.len()).map(|k| gv[k].to_f64() * xv[k].to_f64() * pow_neg(s[k], p.beta + 1.0)).collect();
            let (n, c) = (x.shape[0], x.shape[1]);
            let inner: usize = x.shape[2..].iter().product();
            let half = p.nsize / 2;
            let coef = 2.0 * p.alpha * p.beta / p.nsize as f64;
            let dx = o[0].data_mut::<T>();
            for bb in 0..n {
                let base = bb * c * inner;
                for ch in 0..c {
                    let lo = ch.saturating_sub(half);
                    let hi = (ch + half).min(c - 1);
                    for ii in 0..inner {
                        let k = base + ch * inner + ii;
                        let mut acc = 0f64;
                        for src in lo..=hi {
                            acc += t[base + src * inner + ii];
                        }
                        dx[k] = T::from_f64(gv[k].to_f64() * pow_neg(s[k], p.beta) - coef * xv[k].to_f64() * acc);
                    }
                }
            }
        });
        Ok(())
    }),
    grad: None,
    ..OpDef::BASE
};

// ---------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------

pub struct DropoutParam {
    p: f64,
    always: bool,
    axes: Vec<i64>,
}

fn parse_dropout(a: &Attrs) -> Result<Params> {
    let op = "Dropout";
    let q = a.p(op);
    let p = q.f64("p", 0.5)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Param(format!("{op}: p must be in [0, 1], got {p}")));
    }
    let mode = q.choice("mode", "training", &["training", "always"])?;
    if q.bool("cudnn_off", false)? {
        // selects a GPU implementation only
    }
    Ok(Box::new(DropoutParam {
        p,
        always: mode == "always",
        axes: q.ints_or("axes", &[])?,
    }))
}

fn dropout_attrs(p: &DropoutParam) -> Vec<(&'static str, String)> {
    let axes = format!(
        "({})",
        p.axes.iter().map(|a| format!("{a},")).collect::<String>()
    );
    vec![
        ("p", fmt_f64(p.p)),
        (
            "mode",
            if p.always { "always" } else { "training" }.to_string(),
        ),
        ("axes", axes),
    ]
}

/// The shape of the mask: data shape with the `axes` set to 1 (shared mask).
fn mask_shape(p: &DropoutParam, d: &[usize]) -> Result<Shape> {
    let mut m = d.to_vec();
    for &a in &p.axes {
        let ax = norm_axis("Dropout", a, d.len())?;
        m[ax] = 1;
    }
    Ok(m)
}

const DROP_BLOCK: usize = 4096;

/// Keep-mask bits (1 = keep), drawn block by block from the context RNG.
fn draw_mask(ctx: crate::Context, n: usize, keep: f64) -> Vec<u8> {
    let nblocks = n.div_ceil(DROP_BLOCK);
    let mut gens: Vec<crate::random::Rng> =
        with_rng(ctx, |r| (0..nblocks).map(|b| r.fork(b as u64)).collect());
    let mut m = vec![0u8; n];
    let fill = |g: &mut crate::random::Rng, c: &mut [u8]| {
        for v in c.iter_mut() {
            *v = (g.uniform() < keep) as u8;
        }
    };
    if nblocks > 2 {
        crate::par::par_chunks_mut2(&mut m, DROP_BLOCK, &mut gens, 1, |_, c, g| {
            fill(&mut g[0], c)
        });
    } else {
        for (c, g) in m.chunks_mut(DROP_BLOCK).zip(gens.iter_mut()) {
            fill(g, c);
        }
    }
    m
}

/// Index into the (broadcast) mask for each element of `shape`.
fn mask_index(shape: &[usize], mshape: &[usize]) -> Option<Vec<usize>> {
    if shape == mshape {
        return None;
    }
    let st = crate::base::shape::strides(mshape);
    let n: usize = shape.iter().product();
    let mut idx = vec![0usize; n];
    let mut coord = vec![0usize; shape.len()];
    for v in idx.iter_mut() {
        *v = coord
            .iter()
            .zip(mshape)
            .zip(&st)
            .map(|((c, m), s)| if *m == 1 { 0 } else { c * s })
            .sum();
        for d in (0..shape.len()).rev() {
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Some(idx)
}

/// Forward of Dropout. Dropped elements are written as zero; a dropped
/// element whose input is exactly zero is written as -0.0 and a kept one
/// as +0.0, so the backward can recover the mask from (data, output)
/// without a hidden output.
fn dropout_kernel(call: &OpCall, i: &[Blob], o: &[Blob], k: &KernelCtx) -> Result<()> {
    let p = call.p::<DropoutParam>();
    let (x, y) = (&i[0], &o[0]);
    if !(k.is_train || p.always) || p.p == 0.0 {
        y.bytes_mut().copy_from_slice(x.bytes());
        return Ok(());
    }
    let keep = 1.0 - p.p;
    let ms = mask_shape(p, &x.shape)?;
    let mn: usize = ms.iter().product();
    let mask = draw_mask(k.ctx, mn, keep);
    let idx = mask_index(&x.shape, &ms);
    let scale = if keep > 0.0 { 1.0 / keep } else { 0.0 };
    crate::dispatch_float!(x.dtype, T => {
        let xv = x.data::<T>();
        let yv = y.data_mut::<T>();
        let (pz, nz) = (T::from_f64(0.0), T::from_f64(-0.0));
        for kk in 0..xv.len() {
            let m = mask[match &idx { Some(v) => v[kk], None => kk }];
            let v = xv[kk].to_f64();
            yv[kk] = if v == 0.0 {
                if m == 1 { pz } else { nz }
            } else if m == 1 {
                T::from_f64(v * scale)
            } else {
                pz
            };
        }
    });
    Ok(())
}

pub static DROPOUT: OpDef = OpDef {
    name: "Dropout",
    doc:
        "In training (autograd.record) or with mode='always', zeroes each element with probability \
          p and scales the rest by 1/(1-p); `axes` share one mask along those axes. Identity \
          otherwise. Reproducible after mx.random.seed.",
    parse: parse_dropout,
    infer_shape: |call, ins, outs| {
        if let Some(d) = &ins[0] {
            mask_shape(call.p::<DropoutParam>(), d)?;
            outs[0] = Some(d.clone());
        }
        Ok(())
    },
    infer_type: |call, ins, outs| {
        if let Some(t) = ins[0] {
            float_only(call.name(), "data", t)?;
            outs[0] = Some(t);
        }
        Ok(())
    },
    cpu: Some(dropout_kernel),
    grad: Some(|c, b, x, y, g| {
        Ok(vec![Some(b.op1(
            "_dropout_grad",
            &dropout_attrs(c.p::<DropoutParam>()),
            &[g[0], x[0], y[0]],
        )?)])
    }),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

/// Backward of Dropout: (ograd, data, output) -> ograd * mask / (1 - p) when
/// run in training mode or mode='always' (as MXNet), else ograd.
pub static DROPOUT_GRAD: OpDef = OpDef {
    name: "_dropout_grad",
    doc: "Gradient of Dropout given (ograd, data, output).",
    inputs: &["ograd", "data", "output"],
    parse: parse_dropout,
    infer_shape: super::registry::infer_shape_same,
    cpu: Some(|call, i, o, k| {
        let p = call.p::<DropoutParam>();
        let (g, x, y, dx) = (&i[0], &i[1], &i[2], &o[0]);
        if !(k.is_train || p.always) || p.p == 0.0 {
            dx.bytes_mut().copy_from_slice(g.bytes());
            return Ok(());
        }
        let keep = 1.0 - p.p;
        let scale = if keep > 0.0 { 1.0 / keep } else { 0.0 };
        crate::dispatch_float!(x.dtype, T => {
            let (gv, xv, yv, dv) = (g.data::<T>(), x.data::<T>(), y.data::<T>(), dx.data_mut::<T>());
            for kk in 0..gv.len() {
                let (xx, yy) = (xv[kk].to_f64(), yv[kk].to_f64());
                let kept = if xx == 0.0 { !yy.is_sign_negative() } else { yy != 0.0 };
                dv[kk] = if kept { T::from_f64(gv[kk].to_f64() * scale) } else { T::from_f64(0.0) };
            }
        });
        Ok(())
    }),
    grad: Some(|c, b, x, _, g| {
        // Linear in ograd with the same mask.
        let r = b.op1(
            "_dropout_grad",
            &dropout_attrs(c.p::<DropoutParam>()),
            &[g[0], x[1], x[2]],
        )?;
        Ok(vec![Some(r), None, None])
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[
    &BATCH_NORM,
    &SYNC_BATCH_NORM,
    &BATCH_NORM_GRAD,
    &LAYER_NORM,
    &INSTANCE_NORM,
    &GROUP_NORM,
    &NORM_GRAD,
    &L2_NORMALIZATION,
    &L2_NORMALIZATION_GRAD,
    &LRN,
    &LRN_GRAD,
    &DROPOUT,
    &DROPOUT_GRAD,
];

#[cfg(test)]
mod tests {
    use crate::ops::matrix::testutil::{arr, check_grad, vals};
    use crate::ops::registry::call;

    fn v(o: &crate::NDArray) -> Vec<f64> {
        o.to_vec::<f64>().unwrap()
    }

    #[test]
    fn batch_norm_inference_and_training() {
        // data (2, 2, 2): channel 0 = [1, 2, 5, 6], channel 1 = [3, 4, 7, 8]
        let x = arr(&[1., 2., 3., 4., 5., 6., 7., 8.], &[2, 2, 2]);
        let (g, b) = (arr(&[2., 1.], &[2]), arr(&[0., 1.], &[2]));
        let (mm, mv) = (arr(&[1., 0.], &[2]), arr(&[4., 1.], &[2]));
        let attrs = [("fix_gamma", "False"), ("eps", "0.0001")];
        let y = call(
            "BatchNorm",
            &attrs,
            &[x.clone(), g.clone(), b.clone(), mm.clone(), mv.clone()],
        )
        .unwrap();
        let want0 = (1.0 - 1.0) / (4.0f64 + 1e-4).sqrt() * 2.0;
        assert!((v(&y[0])[0] - want0).abs() < 1e-12);
        assert_eq!(v(&mm), vec![1., 0.]);
        let prev = crate::autograd::set_training(true);
        let _ = call(
            "BatchNorm",
            &[("momentum", "0.5")],
            &[x, g, b, mm.clone(), mv.clone()],
        )
        .unwrap();
        crate::autograd::set_training(prev);
        // batch mean of channel 0 = 3.5, var = 4.25; channel 1: 5.5, 4.25
        assert_eq!(v(&mm), vec![0.5 * 1.0 + 0.5 * 3.5, 0.5 * 5.5]);
        assert_eq!(v(&mv), vec![0.5 * 4.0 + 0.5 * 4.25, 0.5 * 1.0 + 0.5 * 4.25]);
    }

    #[test]
    fn batch_norm_errors_name_arguments() {
        let x = arr(&vals(6, 1), &[2, 3]);
        let bad = arr(&[1., 1.], &[2]);
        let one = arr(&[1., 1., 1.], &[3]);
        let e = call("BatchNorm", &[], &[x, bad, one.clone(), one.clone(), one])
            .err()
            .unwrap()
            .message();
        assert!(
            e.contains("BatchNorm")
                && e.contains("gamma")
                && e.contains("(2,)")
                && e.contains("(3,)"),
            "{e}"
        );
    }

    #[test]
    fn layer_instance_group_norm_values() {
        let x = arr(&[1., 3., 2., 6.], &[2, 2]);
        let y = call(
            "LayerNorm",
            &[("eps", "0")],
            &[x, arr(&[1., 1.], &[2]), arr(&[0., 0.], &[2])],
        )
        .unwrap();
        for (a, b) in v(&y[0]).iter().zip([-1., 1., -1., 1.]) {
            assert!((a - b).abs() < 1e-12);
        }
        // GroupNorm with one group per channel equals InstanceNorm
        let d = vals(2 * 4 * 3, 7);
        let x = arr(&d, &[2, 4, 3]);
        let (g, b) = (arr(&[1., 2., 3., 4.], &[4]), arr(&[0., 1., 0., 1.], &[4]));
        let a = call(
            "InstanceNorm",
            &[("eps", "0.001")],
            &[x.clone(), g.clone(), b.clone()],
        )
        .unwrap();
        let c = call(
            "GroupNorm",
            &[("num_groups", "4"), ("eps", "0.001")],
            &[x, g, b],
        )
        .unwrap();
        for (p, q) in v(&a[0]).iter().zip(v(&c[0])) {
            assert!((p - q).abs() < 1e-12);
        }
    }

    #[test]
    fn norm_gradients() {
        let d = vals(12, 3);
        check_grad(
            "LayerNorm",
            &[],
            &[
                (d.clone(), vec![2, 3, 2]),
                (vec![1.5, 0.5], vec![2]),
                (vec![0.1, -0.2], vec![2]),
            ],
            &[0, 1, 2],
        );
        check_grad(
            "LayerNorm",
            &[("axis", "1")],
            &[
                (d.clone(), vec![2, 3, 2]),
                (vec![1.5, 0.5, 1.], vec![3]),
                (vec![0.1, -0.2, 0.], vec![3]),
            ],
            &[0, 1, 2],
        );
        check_grad(
            "InstanceNorm",
            &[],
            &[
                (d.clone(), vec![2, 2, 3]),
                (vec![1.5, 0.5], vec![2]),
                (vec![0.1, -0.2], vec![2]),
            ],
            &[0, 1, 2],
        );
        check_grad(
            "GroupNorm",
            &[("num_groups", "2")],
            &[
                (d.clone(), vec![1, 4, 3]),
                (vec![1.5, 0.5], vec![2]),
                (vec![0.1, -0.2], vec![2]),
            ],
            &[0, 1, 2],
        );
        for mode in ["instance", "channel", "spatial"] {
            check_grad(
                "L2Normalization",
                &[("mode", mode)],
                &[(d.clone(), vec![2, 3, 2])],
                &[0],
            );
        }
        check_grad(
            "LRN",
            &[("nsize", "3"), ("alpha", "0.5")],
            &[(d.clone(), vec![1, 4, 3])],
            &[0],
        );
        let stats = (vec![0.1, -0.3], vec![2]);
        let var = (vec![0.5, 1.5], vec![2]);
        check_grad(
            "BatchNorm",
            &[("fix_gamma", "False")],
            &[
                (d, vec![3, 2, 2]),
                (vec![1.5, 0.5], vec![2]),
                (vec![0.1, -0.2], vec![2]),
                stats,
                var,
            ],
            &[0, 1, 2],
        );
    }

    #[test]
    fn dropout_modes() {
        let x = arr(&vec![1.0; 1000], &[10, 100]);
        assert_eq!(
            v(&call("Dropout", &[], &[x.clone()]).unwrap()[0]),
            vec![1.0; 1000]
        );
        let y = v(&call("Dropout", &[("p", "0.25"), ("mode", "always")], &[x]).unwrap()[0]);
        let kept = y.iter().filter(|&&a| a != 0.0).count();
        assert!((650..850).contains(&kept), "{kept}");
        assert!(y
            .iter()
            .all(|&a| a == 0.0 || (a - 1.0 / 0.75).abs() < 1e-12));
        let e = call("Dropout", &[("p", "1.5")], &[arr(&[1.], &[1])])
            .err()
            .unwrap()
            .message();
        assert!(
            e.contains("Dropout") && e.contains("p must be in [0, 1]"),
            "{e}"
        );
    }
}
