//! Random sampling operators: uniform, normal, randint, shuffle.
//!
//! Every op declares `Resource::Rng`, so the engine runs random ops on one
//! context in push order. Output is filled in fixed blocks of `BLOCK`
//! elements, each from a generator forked from the context's generator by
//! block index, so results after `random::seed` do not depend on how many
//! threads fill the blocks.
use super::attrs::Attrs;
use super::registry::{Entry, GradBuilder, OpCall, OpDef, Params, Resource};
use crate::base::{DType, Shape};
use crate::error::{Error, Result};
use crate::ndarray::Blob;
use crate::random::{with_rng, Rng};
use half::f16;

const BLOCK: usize = 4096;

/// Fill `out` block by block; `f(rng, block)` fills one block.
fn fill_blocks<T: Send>(ctx: crate::Context, out: &mut [T], f: impl Fn(&mut Rng, &mut [T]) + Sync) {
    let nblocks = out.len().div_ceil(BLOCK);
    let mut gens: Vec<Rng> = with_rng(ctx, |rng| {
        (0..nblocks).map(|b| rng.fork(b as u64)).collect()
    });
    if nblocks > 2 {
        crate::par::par_chunks_mut2(out, BLOCK, &mut gens, 1, |_, c, g| f(&mut g[0], c));
    } else {
        for (c, g) in out.chunks_mut(BLOCK).zip(gens.iter_mut()) {
            f(g, c);
        }
    }
}

/// Fill `out` block by block like [`fill_blocks`]; `f(rng, i)` gives the
/// value of element `i` (for samplers whose distribution depends on the
/// element's position, e.g. one distribution per parameter element).
pub(crate) fn fill_indexed<T: Send>(
    ctx: crate::Context,
    out: &mut [T],
    f: impl Fn(&mut Rng, usize) -> T + Sync,
) {
    let nblocks = out.len().div_ceil(BLOCK);
    let mut gens: Vec<Rng> = with_rng(ctx, |rng| {
        (0..nblocks).map(|b| rng.fork(b as u64)).collect()
    });
    let run = |b: usize, c: &mut [T], g: &mut Rng| {
        for (j, v) in c.iter_mut().enumerate() {
            *v = f(g, b * BLOCK + j);
        }
    };
    if nblocks > 2 {
        crate::par::par_chunks_mut2(out, BLOCK, &mut gens, 1, |b, c, g| run(b, c, &mut g[0]));
    } else {
        for (b, (c, g)) in out.chunks_mut(BLOCK).zip(gens.iter_mut()).enumerate() {
            run(b, c, g);
        }
    }
}

pub(crate) fn no_grad(
    _: &OpCall,
    _: &mut dyn GradBuilder,
    x: &[Entry],
    _: &[Entry],
    _: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    Ok(vec![None; x.len()])
}

pub struct SampleParam {
    a: f64,
    b: f64,
    shape: Shape,
    dtype: DType,
}

fn out_shape(c: &OpCall, _: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    outs[0] = Some(c.p::<SampleParam>().shape.clone());
    Ok(())
}

fn out_type(c: &OpCall, _: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    outs[0] = Some(c.p::<SampleParam>().dtype);
    Ok(())
}

pub(crate) fn float_dtype(a: &Attrs, op: &str) -> Result<DType> {
    let d = a.p(op).dtype("dtype", DType::F32)?;
    if !d.is_float() {
        return Err(Error::DType(format!(
            "{op}: dtype {} is not supported (float16, float32 or float64)",
            d.name()
        )));
    }
    Ok(d)
}

pub(crate) fn parse_shape(a: &Attrs, op: &str) -> Result<Shape> {
    Ok(a.p(op).shape("shape")?.unwrap_or_default())
}

/// Write f64 samples produced by `gen` converted to the output dtype.
fn fill_float(
    ctx: crate::Context,
    o: &Blob,
    gen32: impl Fn(&mut Rng) -> f32 + Sync,
    gen64: impl Fn(&mut Rng) -> f64 + Sync,
) {
    match o.dtype {
        DType::F32 => fill_blocks(ctx, o.data_mut::<f32>(), |r, c| {
            c.iter_mut().for_each(|v| *v = gen32(r))
        }),
        DType::F64 => fill_blocks(ctx, o.data_mut::<f64>(), |r, c| {
            c.iter_mut().for_each(|v| *v = gen64(r))
        }),
        DType::F16 => fill_blocks(ctx, o.data_mut::<f16>(), |r, c| {
            c.iter_mut().for_each(|v| *v = f16::from_f32(gen32(r)))
        }),
        _ => unreachable!("parse accepts float dtypes only"),
    }
}

pub static UNIFORM: OpDef = OpDef {
    name: "_random_uniform",
    aliases: &["uniform", "random_uniform"],
    doc: "Samples from the uniform distribution on [low, high).",
    inputs: &[],
    parse: |a| {
        let op = "_random_uniform";
        let p = a.p(op);
        let (low, high) = (p.f64("low", 0.0)?, p.f64("high", 1.0)?);
        if low > high {
            return Err(Error::Param(format!(
                "{op}: low ({low}) must not exceed high ({high})"
            )));
        }
        Ok(Box::new(SampleParam {
            a: low,
            b: high,
            shape: parse_shape(a, op)?,
            dtype: float_dtype(a, op)?,
        }) as Params)
    },
    infer_shape: out_shape,
    infer_type: out_type,
    cpu: Some(|c, _, o, k| {
        let p = c.p::<SampleParam>();
        let (lo, w) = (p.a, p.b - p.a);
        let (lo32, w32) = (lo as f32, w as f32);
        fill_float(
            k.ctx,
            &o[0],
            |r| lo32 + w32 * r.uniform_f32(),
            |r| lo + w * r.uniform(),
        );
        Ok(())
    }),
    grad: Some(no_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

/// Fill a block with standard normals, two per Box-Muller pair.
fn normal_block<T>(r: &mut Rng, c: &mut [T], loc: f64, scale: f64, cv: impl Fn(f64) -> T) {
    let mut it = c.chunks_mut(2);
    for pair in &mut it {
        let u1 = 1.0 - r.uniform();
        let u2 = r.uniform();
        let rad = (-2.0 * u1.ln()).sqrt();
        let (s, co) = (2.0 * std::f64::consts::PI * u2).sin_cos();
        pair[0] = cv(loc + scale * rad * co);
        if pair.len() > 1 {
            pair[1] = cv(loc + scale * rad * s);
        }
    }
}

fn normal_block32<T>(r: &mut Rng, c: &mut [T], loc: f32, scale: f32, cv: impl Fn(f32) -> T) {
    for pair in c.chunks_mut(2) {
        let u1 = 1.0 - r.uniform_f32();
        let u2 = r.uniform_f32();
        let rad = (-2.0 * u1.ln()).sqrt();
        let (s, co) = (2.0 * std::f32::consts::PI * u2).sin_cos();
        pair[0] = cv(loc + scale * rad * co);
        if pair.len() > 1 {
            pair[1] = cv(loc + scale * rad * s);
        }
    }
}

pub static NORMAL: OpDef = OpDef {
    name: "_random_normal",
    aliases: &["normal", "random_normal"],
    doc: "Samples from the normal distribution with mean loc and standard deviation scale.",
    inputs: &[],
    parse: |a| {
        let op = "_random_normal";
        let p = a.p(op);
        // scale is checked when the kernel runs, as MXNet does: a bad scale surfaces at the
        // next wait on the result (or on arrays computed from it), like any kernel error.
        let (loc, scale) = (p.f64("loc", 0.0)?, p.f64("scale", 1.0)?);
        Ok(Box::new(SampleParam {
            a: loc,
            b: scale,
            shape: parse_shape(a, op)?,
            dtype: float_dtype(a, op)?,
        }) as Params)
    },
    infer_shape: out_shape,
    infer_type: out_type,
    cpu: Some(|c, _, o, k| {
        let p = c.p::<SampleParam>();
        let (loc, scale) = (p.a, p.b);
        if !(scale > 0.0) {
            return Err(Error::Param(format!(
                "_random_normal: scale ({scale}) must be positive"
            )));
        }
        match o[0].dtype {
            DType::F64 => fill_blocks(k.ctx, o[0].data_mut::<f64>(), |r, b| {
                normal_block(r, b, loc, scale, |v| v)
            }),
            DType::F32 => fill_blocks(k.ctx, o[0].data_mut::<f32>(), |r, b| {
                normal_block32(r, b, loc as f32, scale as f32, |v| v)
            }),
            DType::F16 => fill_blocks(k.ctx, o[0].data_mut::<f16>(), |r, b| {
                normal_block32(r, b, loc as f32, scale as f32, f16::from_f32)
            }),
            _ => unreachable!("parse accepts float dtypes only"),
        }
        Ok(())
    }),
    grad: Some(no_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub struct RandintParam {
    low: i64,
    high: i64,
    shape: Shape,
    dtype: DType,
}

pub static RANDINT: OpDef = OpDef {
    name: "_random_randint",
    aliases: &["random_randint"],
    doc: "Samples integers uniformly from [low, high).",
    inputs: &[],
    parse: |a| {
        let op = "_random_randint";
        let p = a.p(op);
        let (low, high) = (p.i64_req("low")?, p.i64_req("high")?);
        if low >= high {
            return Err(Error::Param(format!(
                "{op}: low ({low}) must be less than high ({high})"
            )));
        }
        let dtype = p.dtype("dtype", DType::I32)?;
        if !matches!(dtype, DType::I32 | DType::I64) {
            return Err(Error::DType(format!(
                "{op}: dtype {} is not supported (int32 or int64)",
                dtype.name()
            )));
        }
        if dtype == DType::I32 && (low < i32::MIN as i64 || high > i32::MAX as i64 + 1) {
            return Err(Error::Param(format!(
                "{op}: [low, high) = [{low}, {high}) does not fit in int32"
            )));
        }
        Ok(Box::new(RandintParam {
            low,
            high,
            shape: parse_shape(a, op)?,
            dtype,
        }) as Params)
    },
    infer_shape: |c, _, outs| {
        outs[0] = Some(c.p::<RandintParam>().shape.clone());
        Ok(())
    },
    infer_type: |c, _, outs| {
        outs[0] = Some(c.p::<RandintParam>().dtype);
        Ok(())
    },
    cpu: Some(|c, _, o, k| {
        let p = c.p::<RandintParam>();
        let span = (p.high as i128 - p.low as i128) as u64;
        let low = p.low;
        match o[0].dtype {
            DType::I32 => fill_blocks(k.ctx, o[0].data_mut::<i32>(), |r, b| {
                b.iter_mut()
                    .for_each(|v| *v = (low as i128 + r.below(span) as i128) as i32)
            }),
            DType::I64 => fill_blocks(k.ctx, o[0].data_mut::<i64>(), |r, b| {
                b.iter_mut()
                    .for_each(|v| *v = (low as i128 + r.below(span) as i128) as i64)
            }),
            _ => unreachable!("parse accepts int32 and int64 only"),
        }
        Ok(())
    }),
    grad: Some(no_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static SHUFFLE: OpDef = OpDef {
    name: "_shuffle",
    aliases: &["shuffle"],
    doc: "Randomly permute the rows (the first axis) of data.",
    cpu: Some(|_, i, o, k| {
        let (x, y) = (&i[0], &o[0]);
        if x.ndim() == 0 || x.shape[0] <= 1 {
            y.bytes_mut().copy_from_slice(x.bytes());
            return Ok(());
        }
        let n = x.shape[0];
        let row = x.nbytes() / n;
        let mut perm: Vec<usize> = (0..n).collect();
        with_rng(k.ctx, |r| {
            for j in (1..n).rev() {
                let t = r.below(j as u64 + 1) as usize;
                perm.swap(j, t);
            }
        });
        let (src, dst) = (x.bytes(), y.bytes_mut());
        if x.nbytes() >= 1 << 20 {
            crate::par::par_chunks_mut(dst, row, |i, d| {
                let p = perm[i];
                d.copy_from_slice(&src[p * row..(p + 1) * row])
            });
        } else if row > 0 {
            for (d, &p) in dst.chunks_mut(row).zip(&perm) {
                d.copy_from_slice(&src[p * row..(p + 1) * row]);
            }
        }
        Ok(())
    }),
    grad: Some(no_grad),
    resources: &[Resource::Rng],
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&UNIFORM, &NORMAL, &RANDINT, &SHUFFLE];

#[cfg(test)]
mod tests {
    use crate::ops::registry::call;
    use crate::random::seed;
    use crate::{Context, NDArray};

    /// Tests that seed the shared generator run one at a time.
    static LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

    fn draw(op: &str, attrs: &[(&str, &str)]) -> NDArray {
        call(op, attrs, &[]).unwrap().remove(0)
    }

    #[test]
    fn uniform_range_mean_and_reproducible() {
        let _g = LOCK.lock();
        seed(42, None);
        let a = draw(
            "uniform",
            &[("low", "-2"), ("high", "3"), ("shape", "(100, 1000)")],
        );
        let b = draw(
            "uniform",
            &[("low", "-2"), ("high", "3"), ("shape", "(100, 1000)")],
        );
        assert_eq!(a.shape, vec![100, 1000]);
        let av = a.to_vec::<f32>().unwrap();
        assert!(av.iter().all(|&v| (-2.0..3.0).contains(&v)));
        let mean = av.iter().map(|&v| v as f64).sum::<f64>() / av.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
        let var = av.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / av.len() as f64;
        assert!((var - 25.0 / 12.0).abs() < 0.05, "var {var}");
        assert_ne!(av, b.to_vec::<f32>().unwrap(), "consecutive draws differ");
        seed(42, None);
        let c = draw(
            "random_uniform",
            &[("low", "-2"), ("high", "3"), ("shape", "(100, 1000)")],
        );
        assert_eq!(av, c.to_vec::<f32>().unwrap(), "same seed, same numbers");
        // float64 and float16
        let d = draw(
            "_random_uniform",
            &[("shape", "(1000,)"), ("dtype", "float64")],
        );
        assert!(d
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .all(|&v| (0.0..1.0).contains(&v)));
        let h = draw(
            "_random_uniform",
            &[("shape", "(1000,)"), ("dtype", "float16")],
        );
        assert!(h
            .to_vec::<half::f16>()
            .unwrap()
            .iter()
            .all(|v| (0.0..=1.0).contains(&v.to_f32())));
    }

    #[test]
    fn normal_moments_and_reproducible() {
        let _g = LOCK.lock();
        seed(7, None);
        let a = draw(
            "normal",
            &[("loc", "1.5"), ("scale", "2"), ("shape", "(200001,)")],
        );
        let v = a.to_vec::<f32>().unwrap();
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!((mean - 1.5).abs() < 0.02, "mean {mean}");
        assert!((var - 4.0).abs() < 0.06, "var {var}");
        // fraction within one sigma ~ 0.6827
        let within = v
            .iter()
            .filter(|&&x| ((x as f64) - 1.5).abs() < 2.0)
            .count() as f64
            / n;
        assert!((within - 0.6827).abs() < 0.01, "within {within}");
        seed(7, None);
        let b = draw(
            "_random_normal",
            &[("loc", "1.5"), ("scale", "2"), ("shape", "(200001,)")],
        );
        assert_eq!(v, b.to_vec::<f32>().unwrap());
        let d = draw(
            "random_normal",
            &[("shape", "(4001,)"), ("dtype", "float64")],
        );
        let dv = d.to_vec::<f64>().unwrap();
        assert!(dv.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn randint_range_and_counts() {
        let _g = LOCK.lock();
        seed(3, None);
        let a = draw(
            "random_randint",
            &[("low", "-3"), ("high", "4"), ("shape", "(70000,)")],
        );
        let v = a.to_vec::<i32>().unwrap();
        let mut counts = [0usize; 7];
        for &x in &v {
            assert!((-3..4).contains(&x));
            counts[(x + 3) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 - 10000.0).abs() < 500.0, "{counts:?}");
        }
        let b = draw(
            "_random_randint",
            &[
                ("low", "0"),
                ("high", "5000000000"),
                ("shape", "(100,)"),
                ("dtype", "int64"),
            ],
        );
        assert!(b
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .all(|&x| (0..5_000_000_000).contains(&x)));
        seed(3, None);
        let c = draw(
            "random_randint",
            &[("low", "-3"), ("high", "4"), ("shape", "(70000,)")],
        );
        assert_eq!(v, c.to_vec::<i32>().unwrap());
    }

    #[test]
    fn shuffle_permutes_rows() {
        let _g = LOCK.lock();
        let ctx = Context::cpu(0);
        let n = 50;
        let data: Vec<f32> = (0..n * 3).map(|v| v as f32).collect();
        let x = NDArray::from_vec(data, &[n, 3], ctx).unwrap();
        seed(11, None);
        let y = call("shuffle", &[], &[x.clone()]).unwrap().remove(0);
        let yv = y.to_vec::<f32>().unwrap();
        let mut firsts: Vec<usize> = Vec::new();
        for r in 0..n {
            let f = yv[r * 3] as usize;
            assert_eq!(f % 3, 0);
            assert_eq!(yv[r * 3 + 1], (f + 1) as f32);
            assert_eq!(yv[r * 3 + 2], (f + 2) as f32);
            firsts.push(f / 3);
        }
        let mut sorted = firsts.clone();
        sorted.sort();
        assert_eq!(sorted, (0..n).collect::<Vec<_>>());
        assert_ne!(firsts, (0..n).collect::<Vec<_>>());
        seed(11, None);
        let z = call("_shuffle", &[], &[x]).unwrap().remove(0);
        assert_eq!(yv, z.to_vec::<f32>().unwrap());
    }

    #[test]
    fn results_do_not_depend_on_thread_count() {
        let _g = LOCK.lock();
        let attrs = [("shape", "(50000,)")];
        seed(99, None);
        let a = draw("normal", &attrs).to_vec::<f32>().unwrap();
        seed(99, None);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        // Run the kernel body directly inside a one-thread pool.
        let b = pool.install(|| {
            let out = NDArray::empty(&[50000], crate::DType::F32, Context::cpu(0)).unwrap();
            let def = crate::ops::registry::lookup("normal").unwrap();
            let c = crate::ops::registry::parse_call(def, crate::ops::Attrs::from_pairs(&attrs))
                .unwrap();
            (def.cpu.unwrap())(
                &c,
                &[],
                &[out.blob().unwrap()],
                &crate::ops::registry::KernelCtx {
                    ctx: Context::cpu(0),
                    is_train: false,
                },
            )
            .unwrap();
            out.to_vec::<f32>().unwrap()
        });
        assert_eq!(a, b);
    }

    #[test]
    fn distribution_samplers_do_not_depend_on_thread_count() {
        let _g = LOCK.lock();
        let run_kernel =
            |name: &str, attrs: &[(&str, &str)], inputs: &[NDArray], shape: &[usize]| {
                let out = NDArray::empty(shape, crate::DType::F32, Context::cpu(0)).unwrap();
                let def = crate::ops::registry::lookup(name).unwrap();
                let c = crate::ops::registry::parse_call(def, crate::ops::Attrs::from_pairs(attrs))
                    .unwrap();
                let ib: Vec<_> = inputs.iter().map(|a| a.blob().unwrap()).collect();
                (def.cpu.unwrap())(
                    &c,
                    &ib,
                    &[out.blob().unwrap()],
                    &crate::ops::registry::KernelCtx {
                        ctx: Context::cpu(0),
                        is_train: false,
                    },
                )
                .unwrap();
                out.to_vec::<f32>().unwrap()
            };
        let lam = NDArray::from_vec(vec![0.5f32, 40.0], &[2], Context::cpu(0)).unwrap();
        let cases: Vec<(&str, Vec<(&str, &str)>, Vec<NDArray>, Vec<usize>)> = vec![
            (
                "_random_gamma",
                vec![("alpha", "0.7"), ("shape", "(30000,)")],
                vec![],
                vec![30000],
            ),
            (
                "_sample_poisson",
                vec![("shape", "(15000,)")],
                vec![lam.clone()],
                vec![2, 15000],
            ),
        ];
        for (name, attrs, inputs, shape) in cases {
            seed(5, None);
            let a = call(name, &attrs, &inputs).unwrap().remove(0);
            let a = a.to_vec::<f32>().unwrap();
            seed(5, None);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            // Wait for the seed before running the kernel outside the engine.
            crate::engine::wait_for_var(&crate::random::rng_var(Context::cpu(0)), false).unwrap();
            let b = pool.install(|| run_kernel(name, &attrs, &inputs, &shape));
            assert_eq!(a, b, "{name}");
        }
    }

    #[test]
    fn parameter_errors() {
        let _g = LOCK.lock();
        let e = call("uniform", &[("low", "2"), ("high", "1")], &[])
            .err()
            .unwrap();
        assert!(
            e.message().contains("low (2) must not exceed high (1)"),
            "{}",
            e.message()
        );
        // as in MXNet, a bad scale is a kernel error: it surfaces when the result is read
        let o = call("normal", &[("scale", "-1"), ("shape", "(2,)")], &[]).unwrap();
        let e = o[0].to_vec::<f32>().err().unwrap();
        assert!(
            e.message().contains("scale (-1) must be positive"),
            "{}",
            e.message()
        );
        let e = call("random_randint", &[("low", "3"), ("high", "3")], &[])
            .err()
            .unwrap();
        assert!(
            e.message().contains("low (3) must be less than high (3)"),
            "{}",
            e.message()
        );
        let e = call("random_randint", &[("high", "3")], &[]).err().unwrap();
        assert!(e.message().contains("'low'"), "{}", e.message());
        let e = call("uniform", &[("dtype", "int32")], &[]).err().unwrap();
        assert!(
            e.message().contains("int32 is not supported"),
            "{}",
            e.message()
        );
    }
}
