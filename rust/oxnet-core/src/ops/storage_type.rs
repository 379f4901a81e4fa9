//! Storage-type conversion: `cast_storage`. oxnet arrays are always dense
//! ('default' storage); casting to 'default' copies the array, and the
//! sparse types MXNet names ('csr', 'row_sparse') raise a clear error.
use super::attrs::Attrs;
use super::registry::{KernelCtx, OpCall, OpDef, Params};
use crate::error::{Error, Result};
use crate::ndarray::Blob;

const STYPES: &[&str] = &["csr", "default", "row_sparse"];

fn parse_cast_storage(a: &Attrs) -> Result<Params> {
    let p = a.p("cast_storage");
    if p.opt_str("stype").is_none() {
        return Err(Error::Param(
            "cast_storage: required argument 'stype' is missing (one of 'default', 'csr', 'row_sparse')"
                .into(),
        ));
    }
    let s = p.choice("stype", "default", STYPES)?;
    if s != "default" {
        return Err(Error::Param(format!(
            "cast_storage: stype='{s}': sparse storage is not supported by oxnet \
             (arrays are always dense; only stype='default' is accepted)"
        )));
    }
    Ok(Box::new(()))
}

fn copy_kernel(_: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    o[0].bytes_mut().copy_from_slice(i[0].bytes());
    Ok(())
}

/// `cast_storage(data, stype)`: a dense copy for stype='default'.
pub static CAST_STORAGE: OpDef = OpDef {
    name: "cast_storage",
    doc: "Casts tensor storage type to the new type `stype`.\n\n\
          data : NDArray, the input.\n\
          stype : {'default', 'csr', 'row_sparse'}, required. oxnet has only dense \
          ('default') storage: the result is a dense copy of `data` with its shape and dtype; \
          'csr' and 'row_sparse' raise an error (sparse storage is not supported).\n\n\
          Returns a new NDArray; the gradient passes through unchanged.",
    parse: parse_cast_storage,
    cpu: Some(copy_kernel),
    grad: Some(|_, _, _, _, g| Ok(vec![Some(g[0])])),
    ..OpDef::BASE
};

pub static OPS: &[&OpDef] = &[&CAST_STORAGE];

#[cfg(test)]
mod tests {
    use crate::ops::registry;

    #[test]
    fn cast_storage_default_copies() {
        let x = crate::ndarray::NDArray::from_vec(
            vec![1.0f32, 2.0, 3.0, 4.0],
            &[2, 2],
            crate::base::Context::cpu(0),
        )
        .unwrap();
        let y = registry::call("cast_storage", &[("stype", "default")], &[x.clone()])
            .unwrap()
            .remove(0);
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        assert!(!y.same_chunk(&x));
    }

    #[test]
    fn cast_storage_sparse_is_an_error() {
        let x = crate::ndarray::NDArray::from_vec(
            vec![1.0f32, 2.0],
            &[2],
            crate::base::Context::cpu(0),
        )
        .unwrap();
        for s in ["csr", "row_sparse"] {
            let e = registry::call("cast_storage", &[("stype", s)], &[x.clone()])
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("sparse storage is not supported"), "{e}");
        }
        let e = registry::call("cast_storage", &[], &[x.clone()])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("stype"), "{e}");
    }
}
