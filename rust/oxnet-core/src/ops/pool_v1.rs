//! MXNet's legacy `Pooling_v1`: Pooling's max and sum as they are; its
//! average always divides by the kernel's area (`kernel[0] * kernel[1]...`),
//! also for windows that reach past the (padded) input under
//! `pooling_convention='full'`, where Pooling divides by the part inside.
//! So average pooling runs as Pooling's sum pooling times 1 / area (global
//! pooling covers exactly the input: there it is Pooling's average).
use super::attrs::Attrs;
use super::registry::{lookup, parse_call, Entry, GradBuilder, OpCall, OpDef, Params};
use crate::error::{Error, Result};

const OP: &str = "Pooling_v1";

pub struct PoolV1 {
    /// The Pooling call that computes it (sum pooling for a scaled average).
    inner: OpCall,
    /// Its attributes, for the gradient.
    attrs: Vec<(String, String)>,
    /// 1 / kernel area for a non-global average, else None.
    scale: Option<f64>,
}

fn rename(e: Error) -> Error {
    let f = |m: String| m.replacen("Pooling:", "Pooling_v1:", 1);
    match e {
        Error::Shape(m) => Error::Shape(f(m)),
        Error::DType(m) => Error::DType(f(m)),
        Error::Param(m) => Error::Param(f(m)),
        e => e,
    }
}

fn parse(a: &Attrs) -> Result<Params> {
    let p = a.p(OP);
    let pool_type = p.choice("pool_type", "max", &["max", "avg", "sum"])?;
    let conv = p.choice("pooling_convention", "valid", &["valid", "full"])?;
    let global = p.bool("global_pool", false)?;
    let kernel = p.ints("kernel")?.unwrap_or_default();
    let scale = if pool_type == "avg" && !global {
        let area: i64 = kernel.iter().product();
        if kernel.is_empty() || area <= 0 {
            return Err(Error::Param(format!(
                "{OP}: argument 'kernel' must have positive entries, got {kernel:?}"
            )));
        }
        Some(1.0 / area as f64)
    } else {
        None
    };
    let mut attrs: Vec<(String, String)> = Vec::new();
    for k in ["kernel", "stride", "pad"] {
        if let Some(v) = a.raw(k) {
            attrs.push((k.to_string(), v.to_string()));
        }
    }
    attrs.push(("global_pool".into(), global.to_string()));
    attrs.push(("pooling_convention".into(), conv));
    let inner_type = if scale.is_some() { "sum" } else { &pool_type };
    attrs.push(("pool_type".into(), inner_type.to_string()));
    let inner = parse_call(lookup("Pooling")?, Attrs(attrs.clone())).map_err(rename)?;
    Ok(Box::new(PoolV1 {
        inner,
        attrs,
        scale,
    }) as Params)
}

fn grad(
    c: &OpCall,
    b: &mut dyn GradBuilder,
    x: &[Entry],
    y: &[Entry],
    g: &[Entry],
) -> Result<Vec<Option<Entry>>> {
    let p = c.p::<PoolV1>();
    let attrs: Vec<(&str, String)> = p
        .attrs
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let head = match p.scale {
        Some(s) => b.op1("_mul_scalar", &[("scalar", format!("{s}"))], &[g[0]])?,
        None => g[0],
    };
    // (sum pooling's backward does not read the output values)
    Ok(vec![Some(b.op1(
        "_backward_Pooling",
        &attrs,
        &[head, x[0], y[0]],
    )?)])
}

pub static POOLING_V1: OpDef = OpDef {
    name: "Pooling_v1",
    doc:
        "Legacy pooling (MXNet's Pooling_v1) over 2-D/3-D windows of (batch, channel, spatial...) \
          data: pool_type max, avg or sum; global_pool; pooling_convention valid (floor) or full \
          (ceil); kernel, stride, pad. Same as Pooling except that avg divides every window by \
          the kernel's area, also windows reaching past the padded input.",
    parse,
    infer_shape: |c, ins, outs| {
        let p = c.p::<PoolV1>();
        (p.inner.def.infer_shape)(&p.inner, ins, outs).map_err(rename)
    },
    infer_type: |c, ins, outs| {
        let p = c.p::<PoolV1>();
        (p.inner.def.infer_type)(&p.inner, ins, outs).map_err(rename)
    },
    cpu: Some(|c, i, o, k| {
        let p = c.p::<PoolV1>();
        let kernel = p
            .inner
            .def
            .cpu
            .ok_or_else(|| Error::Param("Pooling has no CPU kernel".into()))?;
        kernel(&p.inner, i, o, k)?;
        if let Some(s) = p.scale {
            crate::dispatch_float!(o[0].dtype, T => {
                use crate::base::dtype::Elem;
                let s32 = s as f32;
                for v in o[0].data_mut::<T>().iter_mut() {
                    *v = if T::DTYPE == crate::DType::F64 {
                        T::from_f64(v.to_f64() * s)
                    } else {
                        T::from_f32(v.to_f32() * s32)
                    };
                }
            });
        }
        Ok(())
    }),
    grad: Some(grad),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&POOLING_V1];
