//! Pointwise fusion's kernel: a chain (or tree) of float32 element-wise
//! operators run as one operator. The program is evaluated block by block
//! (a few thousand elements, so every intermediate stays in the cache) and
//! blocks run in parallel; each step is the operator's own vectorised loop,
//! so a fused graph gives the same bits as the operators one by one while
//! reading and writing main memory once instead of once per operator.
use super::kernels::{map1_wide, map2_wide};
use super::registry::{infer_shape_same, KernelCtx, OpCall, OpDef, Params};
use crate::base::DType;
use crate::error::{Error, Result};
use crate::ndarray::Blob;

/// How an element-wise operator computes on float32 blocks (its `OpDef`
/// names it; the fusion pass reads it).
#[derive(Clone, Copy)]
pub enum Pointwise {
    Unary(fn(&[f32], &mut [f32])),
    Binary(fn(&[f32], &[f32], &mut [f32])),
    /// With a scalar parameter read from the call.
    Scalar(fn(&[f32], f32, &mut [f32]), fn(&OpCall) -> f64),
}

pub fn unary_block<U: super::elemwise::UnaryFn>(x: &[f32], y: &mut [f32]) {
    map1_wide(x, y, U::f32)
}

pub fn binary_block<F: super::elemwise::BinaryFn>(a: &[f32], b: &[f32], y: &mut [f32]) {
    map2_wide(a, b, y, F::f32)
}

pub fn scalar_block<F: super::elemwise::BinaryFn, const REV: bool>(
    x: &[f32],
    s: f32,
    y: &mut [f32],
) {
    if REV {
        map1_wide(x, y, |v| F::f32(s, v))
    } else {
        map1_wide(x, y, |v| F::f32(v, s))
    }
}

/// One step: its operation and the registers it reads. Registers
/// `0..n_inputs` are the fused operator's inputs; step `k` writes register
/// `n_inputs + k`.
#[derive(Clone)]
pub enum Step {
    Unary(fn(&[f32], &mut [f32]), usize),
    Binary(fn(&[f32], &[f32], &mut [f32]), usize, usize),
    Scalar(fn(&[f32], f32, &mut [f32]), f32, usize),
}

#[derive(Clone)]
pub struct Program {
    pub n_inputs: usize,
    pub steps: Vec<Step>,
    /// The operators fused, for the profiler and error messages.
    pub names: Vec<&'static str>,
}

/// Elements per block (its registers stay in the L1/L2 cache) and per
/// parallel task.
const BLOCK: usize = 4096;
const TASK: usize = 16 * BLOCK;

fn n_inputs(c: &OpCall) -> usize {
    c.p::<Program>().n_inputs
}

fn no_parse(_: &super::attrs::Attrs) -> Result<Params> {
    Err(Error::Param(
        "_FusedElemwise is made by the fusion pass, not by name".into(),
    ))
}

fn infer_f32(c: &OpCall, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    for t in ins.iter_mut().chain(outs.iter_mut()) {
        match t {
            None => *t = Some(DType::F32),
            Some(DType::F32) => {}
            Some(d) => {
                return Err(Error::DType(format!(
                    "{}: fused operators run on float32, got {}",
                    c.name(),
                    d.name()
                )))
            }
        }
    }
    Ok(())
}

/// Runs the program over one block of `len` elements starting at `start`.
fn run_block(p: &Program, ins: &[&[f32]], regs: &mut [Vec<f32>], out: &mut [f32], start: usize) {
    let len = out.len();
    let last = p.steps.len() - 1;
    for (k, step) in p.steps.iter().enumerate() {
        // registers before this step's are read, this step's is written
        let (done, rest) = regs.split_at_mut(k);
        let dst: &mut [f32] = if k == last {
            &mut *out
        } else {
            &mut rest[0][..len]
        };
        let reg = |r: usize| -> &[f32] {
            if r < p.n_inputs {
                &ins[r][start..start + len]
            } else {
                &done[r - p.n_inputs][..len]
            }
        };
        match *step {
            Step::Unary(f, a) => f(reg(a), dst),
            Step::Binary(f, a, b) => f(reg(a), reg(b), dst),
            Step::Scalar(f, s, a) => f(reg(a), s, dst),
        }
    }
}

fn fused_kernel(c: &OpCall, i: &[Blob], o: &[Blob], _: &KernelCtx) -> Result<()> {
    let p = c.p::<Program>();
    let ins: Vec<&[f32]> = i.iter().map(|b| b.data::<f32>()).collect();
    let y = o[0].data_mut::<f32>();
    let n_regs = p.steps.len().saturating_sub(1);
    crate::par::par_chunks_mut(y, TASK, |task, yt| {
        let mut regs = vec![vec![0f32; BLOCK]; n_regs];
        for (b, yc) in yt.chunks_mut(BLOCK).enumerate() {
            run_block(p, &ins, &mut regs, yc, task * TASK + b * BLOCK);
        }
    });
    Ok(())
}

/// Not in the registry's table: the executor makes its calls directly.
pub static FUSED: OpDef = OpDef {
    name: "_FusedElemwise",
    doc: "Element-wise operators fused by the executor's fusion pass.",
    inputs: &["arg"],
    num_inputs: Some(n_inputs),
    parse: no_parse,
    infer_shape: infer_shape_same,
    infer_type: infer_f32,
    cpu: Some(fused_kernel),
    ..OpDef::BASE
};

/// A call of the fused operator running `program`.
pub fn fused_call(program: Program) -> OpCall {
    let names = program.names.join("+");
    OpCall {
        def: &FUSED,
        params: Box::new(program),
        attrs: super::attrs::Attrs::from_pairs(&[("ops", &names)]),
    }
}
