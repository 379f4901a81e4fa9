//! Operators that create arrays from parameters alone: zeros, ones, full,
//! arange, eye.
use super::attrs::Attrs;
use super::registry::{KernelCtx, OpCall, OpDef, Params};
use crate::base::dtype::Elem;
use crate::base::{DType, Shape};
use crate::dispatch_dtype;
use crate::error::{Error, Result};
use crate::ndarray::Blob;

pub struct InitParam {
    pub shape: Shape,
    pub dtype: DType,
    pub value: f64,
}

fn parse_init(a: &Attrs, op: &str) -> Result<InitParam> {
    let p = a.p(op);
    Ok(InitParam {
        shape: p.shape("shape")?.unwrap_or_default(),
        dtype: p.dtype("dtype", DType::F32)?,
        value: p.f64("value", 0.0)?,
    })
}

fn init_shape(c: &OpCall, _: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    outs[0] = Some(c.p::<InitParam>().shape.clone());
    Ok(())
}

fn init_type(c: &OpCall, _: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    outs[0] = Some(c.p::<InitParam>().dtype);
    Ok(())
}

fn fill(o: &Blob, v: f64) {
    if v == 0.0 {
        o.bytes_mut().fill(0);
        return;
    }
    dispatch_dtype!(o.dtype, T => {
        o.data_mut::<T>().fill(T::from_f64(v))
    });
}

fn fill_kernel(c: &OpCall, _: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    fill(&o[0], c.p::<InitParam>().value);
    Ok(())
}

pub static ZEROS: OpDef = OpDef {
    name: "_zeros",
    aliases: &["zeros"],
    doc: "An array of zeros of `shape` and `dtype`.",
    inputs: &[],
    parse: |a| {
        Ok(Box::new(InitParam {
            value: 0.0,
            ..parse_init(a, "zeros")?
        }))
    },
    infer_shape: init_shape,
    infer_type: init_type,
    cpu: Some(fill_kernel),
    ..OpDef::BASE
};

pub static ONES: OpDef = OpDef {
    name: "_ones",
    aliases: &["ones"],
    doc: "An array of ones of `shape` and `dtype`.",
    inputs: &[],
    parse: |a| {
        Ok(Box::new(InitParam {
            value: 1.0,
            ..parse_init(a, "ones")?
        }))
    },
    infer_shape: init_shape,
    infer_type: init_type,
    cpu: Some(fill_kernel),
    ..OpDef::BASE
};

pub static FULL: OpDef = OpDef {
    name: "_full",
    aliases: &["full"],
    doc: "An array of `shape` and `dtype` filled with `value`.",
    inputs: &[],
    parse: |a| Ok(Box::new(parse_init(a, "full")?)),
    infer_shape: init_shape,
    infer_type: init_type,
    cpu: Some(fill_kernel),
    ..OpDef::BASE
};

pub struct ArangeParam {
    start: f64,
    step: f64,
    repeat: usize,
    n: usize,
    dtype: DType,
}

pub static ARANGE: OpDef = OpDef {
    name: "_arange",
    aliases: &["arange"],
    doc: "Evenly spaced values in [start, stop) with `step`, each repeated `repeat` times.",
    inputs: &[],
    parse: |a| {
        let p = a.p("arange");
        let start = p.f64("start", 0.0)?;
        let stop = p.opt_f64("stop")?;
        let step = p.f64("step", 1.0)?;
        let repeat = p.usize("repeat", 1)?;
        if step == 0.0 {
            return Err(Error::Param("arange: step must not be 0".into()));
        }
        if repeat == 0 {
            return Err(Error::Param("arange: repeat must be positive".into()));
        }
        let (start, stop) = match stop {
            Some(s) => (start, s),
            None => (0.0, start),
        };
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        Ok(Box::new(ArangeParam {
            start,
            step,
            repeat,
            n,
            dtype: p.dtype("dtype", DType::F32)?,
        }) as Params)
    },
    infer_shape: |c, _, outs| {
        let p = c.p::<ArangeParam>();
        outs[0] = Some(vec![p.n * p.repeat]);
        Ok(())
    },
    infer_type: |c, _, outs| {
        outs[0] = Some(c.p::<ArangeParam>().dtype);
        Ok(())
    },
    cpu: Some(|c, _, o, _| {
        let p = c.p::<ArangeParam>();
        dispatch_dtype!(o[0].dtype, T => {
            let out = o[0].data_mut::<T>();
            for (k, v) in out.iter_mut().enumerate() {
                *v = T::from_f64(p.start + (k / p.repeat) as f64 * p.step);
            }
        });
        Ok(())
    }),
    ..OpDef::BASE
};

pub struct EyeParam {
    n: usize,
    m: usize,
    k: i64,
    dtype: DType,
}

pub static EYE: OpDef = OpDef {
    name: "_eye",
    aliases: &["eye"],
    doc: "An N x M matrix with ones on the k-th diagonal.",
    inputs: &[],
    parse: |a| {
        let p = a.p("eye");
        let n = p.usize("N", 0)?;
        let m = p.usize("M", 0)?;
        Ok(Box::new(EyeParam {
            n,
            m: if m == 0 { n } else { m },
            k: p.i64("k", 0)?,
            dtype: p.dtype("dtype", DType::F32)?,
        }))
    },
    infer_shape: |c, _, outs| {
        let p = c.p::<EyeParam>();
        outs[0] = Some(vec![p.n, p.m]);
        Ok(())
    },
    infer_type: |c, _, outs| {
        outs[0] = Some(c.p::<EyeParam>().dtype);
        Ok(())
    },
    cpu: Some(|c, _, o, _| {
        let p = c.p::<EyeParam>();
        o[0].bytes_mut().fill(0);
        dispatch_dtype!(o[0].dtype, T => {
            let out = o[0].data_mut::<T>();
            for r in 0..p.n {
                let col = r as i64 + p.k;
                if col >= 0 && (col as usize) < p.m {
                    out[r * p.m + col as usize] = T::from_f64(1.0);
                }
            }
        });
        Ok(())
    }),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&ZEROS, &ONES, &FULL, &ARANGE, &EYE];
