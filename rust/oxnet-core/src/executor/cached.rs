//! MXNet's `CachedOp`: a symbol run as one operation on arrays, planned
//! once per input signature (shapes and dtypes). Gluon's `hybridize()` runs
//! through it. Under `autograd.record()` a call records a single node whose
//! backward runs the planned gradient graph on that call's saved arrays.
use super::{GradOut, Plan};
use crate::autograd::{self, GradReq};
use crate::base::{Context, DType, Shape};
use crate::error::{Error, Result};
use crate::graph::Symbol;
use crate::ndarray::NDArray;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Where each input of the cached op goes: an argument or an auxiliary state.
#[derive(Clone, Copy)]
enum Slot {
    Arg(usize),
    Aux,
}

type Key = (Vec<(Shape, DType)>, Context, bool);

pub struct CachedOp {
    pub sym: Symbol,
    pub name: String,
    slots: Vec<Slot>,
    n_args: usize,
    n_aux: usize,
    plans: Mutex<HashMap<Key, Arc<Plan>>>,
}

impl CachedOp {
    pub fn new(sym: Symbol, name: &str) -> CachedOp {
        let g = sym.indexed();
        let (mut a, mut x) = (0, 0);
        let slots = g
            .input_nodes
            .iter()
            .map(|&n| {
                if g.aux[n] {
                    x += 1;
                    Slot::Aux
                } else {
                    a += 1;
                    Slot::Arg(a - 1)
                }
            })
            .collect();
        CachedOp {
            sym,
            name: name.to_string(),
            slots,
            n_args: a,
            n_aux: x,
            plans: Mutex::new(HashMap::new()),
        }
    }

    pub fn num_inputs(&self) -> usize {
        self.slots.len()
    }

    fn plan(
        &self,
        args: &[NDArray],
        aux: &[NDArray],
        ctx: Context,
        grad: bool,
    ) -> Result<Arc<Plan>> {
        let key: Key = (
            args.iter()
                .chain(aux)
                .map(|a| (a.shape.clone(), a.dtype()))
                .collect(),
            ctx,
            grad,
        );
        if let Some(p) = self.plans.lock().get(&key) {
            return Ok(p.clone());
        }
        let req = if grad { GradReq::Write } else { GradReq::Null };
        let plan = Arc::new(Plan::new(
            &self.sym,
            ctx,
            &args.iter().map(|a| a.shape.clone()).collect::<Vec<_>>(),
            &args.iter().map(|a| a.dtype()).collect::<Vec<_>>(),
            &aux.iter().map(|a| a.shape.clone()).collect::<Vec<_>>(),
            &aux.iter().map(|a| a.dtype()).collect::<Vec<_>>(),
            &vec![req; args.len()],
        )?);
        self.plans.lock().insert(key, plan.clone());
        Ok(plan)
    }

    /// Runs the op on `inputs` (in the symbol's `list_inputs` order);
    /// returns its outputs and records it when autograd is recording.
    pub fn call(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        if inputs.len() != self.slots.len() {
            return Err(Error::Param(format!(
                "CachedOp {}: expected {} inputs ({} arguments, {} auxiliary states), got {}",
                self.name,
                self.slots.len(),
                self.n_args,
                self.n_aux,
                inputs.len()
            )));
        }
        let mut args = Vec::with_capacity(self.n_args);
        let mut aux = Vec::with_capacity(self.n_aux);
        for (a, s) in inputs.iter().zip(&self.slots) {
            match s {
                Slot::Arg(_) => args.push(a.clone()),
                Slot::Aux => aux.push(a.clone()),
            }
        }
        let ctx = inputs.first().map(|a| a.ctx()).unwrap_or_default();
        let record = autograd::is_recording() && inputs.iter().any(|a| a.ag.is_some());
        let plan = self.plan(&args, &aux, ctx, record)?;
        let st = plan.new_state(&args, &aux)?;
        plan.forward(&st, autograd::is_training())?;
        let mut outs = plan.head_outputs(&st);
        if record {
            let st = Arc::new(Mutex::new(st));
            let p = plan.clone();
            let slots = self.slots.clone();
            let backward: autograd::CustomBackward = Box::new(move |ograds: &[NDArray]| {
                let mut st = st.lock();
                let hg: Vec<Option<NDArray>> = ograds.iter().cloned().map(Some).collect();
                p.run_backward(&mut st, &hg)?;
                let grads = p.grad_entries(&st);
                Ok(slots
                    .iter()
                    .map(|s| match s {
                        Slot::Arg(i) => match p.grad_out[*i] {
                            GradOut::Entry(_) => grads[*i].clone(),
                            _ => None,
                        },
                        Slot::Aux => None,
                    })
                    .collect())
            });
            autograd::record_custom(&self.name, backward, inputs, &mut outs);
        }
        Ok(outs)
    }
}
