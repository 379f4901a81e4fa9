//! Gradients computed imperatively: an operator's `GradFn` is run with a
//! builder that invokes the registered operators right away. Autograd's
//! backward pass and the per-operator gradient tests both use this.
use crate::error::{Error, Result};
use crate::ndarray::NDArray;
use crate::ops::registry::{self, Entry, GradBuilder, OpCall};
use crate::ops::Attrs;
use std::sync::Arc;

mod tape;
pub use tape::*;

/// A `GradBuilder` whose entries are concrete arrays.
pub struct ImperativeBuilder {
    pub vals: Vec<NDArray>,
    /// Per forward input, whether its gradient is used (empty: all are).
    pub need: Vec<bool>,
}

impl ImperativeBuilder {
    pub fn push(&mut self, a: NDArray) -> Entry {
        self.vals.push(a);
        self.vals.len() - 1
    }
}

impl GradBuilder for ImperativeBuilder {
    fn op(&mut self, name: &str, attrs: &[(&str, String)], inputs: &[Entry]) -> Result<Vec<Entry>> {
        let def = registry::lookup(name)?;
        let attrs = Attrs(
            attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        );
        let call = registry::parse_call(def, attrs)?;
        let ins: Vec<NDArray> = inputs.iter().map(|&e| self.vals[e].clone()).collect();
        let outs = registry::invoke(Arc::new(call), &ins, None, None)?;
        Ok(outs.into_iter().map(|a| self.push(a)).collect())
    }
    fn needs_grad(&self, input: usize) -> bool {
        self.need.get(input).copied().unwrap_or(true)
    }
}

/// Gradients of `call` with respect to each input, given the forward
/// inputs, outputs (hidden ones included) and the gradients of the outputs
/// (the visible ones at least: missing ones are zeros). `None` means zero.
pub fn op_grad(
    call: &OpCall,
    inputs: &[NDArray],
    outputs: &[NDArray],
    ograds: &[NDArray],
) -> Result<Vec<Option<NDArray>>> {
    let gf = call
        .def
        .grad
        .ok_or_else(|| Error::Param(format!("{}: operator has no gradient", call.def.name)))?;
    let mut b = ImperativeBuilder {
        vals: Vec::new(),
        need: Vec::new(),
    };
    let ie: Vec<Entry> = inputs.iter().map(|a| b.push(a.clone())).collect();
    let oe: Vec<Entry> = outputs.iter().map(|a| b.push(a.clone())).collect();
    let mut ge: Vec<Entry> = ograds.iter().map(|a| b.push(a.clone())).collect();
    for o in outputs.iter().skip(ograds.len()) {
        let z = registry::call("zeros_like", &[], std::slice::from_ref(o))?.remove(0);
        ge.push(b.push(z));
    }
    let res = gf(call, &mut b, &ie, &oe, &ge)?;
    if res.len() != inputs.len() {
        return Err(Error::Op {
            op: call.def.name.to_string(),
            msg: format!(
                "gradient returned {} entries for {} inputs",
                res.len(),
                inputs.len()
            ),
        });
    }
    Ok(res
        .into_iter()
        .map(|e| e.map(|e| b.vals[e].clone()))
        .collect())
}
