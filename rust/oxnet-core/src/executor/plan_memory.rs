//! Memory planning: the intermediate entries of a run share blocks when
//! their lifetimes do not overlap. Sizes are compared in bytes (MXNet
//! compared element counts, which mixed dtypes wrongly); a block is shared
//! only by entries of one dtype, since a kernel's view carries its chunk's
//! dtype. An operator's outputs never share a block with its own inputs.
//! Blocks that hold the same memory over time are one engine variable, so
//! the engine orders a later writer after every earlier reader.
use crate::base::{Context, DType, Shape};
use crate::error::Result;
use crate::graph::IndexedGraph;
use crate::ndarray::NDArray;

pub struct MemoryPlan {
    /// Per entry, the shared block it lives in.
    pub slot_of: Vec<Option<usize>>,
    /// Per block, its size in elements and dtype.
    pub slots: Vec<(usize, DType)>,
    /// Entries with an array of their own (the outputs of the graph).
    pub owned: Vec<bool>,
    /// Bytes of the planned entries, each on its own (no sharing).
    pub unplanned_bytes: usize,
    /// Bytes of the shared blocks.
    pub planned_bytes: usize,
    /// Bytes of the entries with arrays of their own (the graph's outputs).
    pub owned_bytes: usize,
}

impl MemoryPlan {
    pub fn new(
        g: &IndexedGraph,
        node_inputs: &[Vec<(usize, usize)>],
        fwd_nodes: &[usize],
        bwd_nodes: &[usize],
        shapes: &[Shape],
        dtypes: &[DType],
    ) -> MemoryPlan {
        let n_ent = g.num_entries();
        let order: Vec<usize> = fwd_nodes.iter().chain(bwd_nodes).copied().collect();
        let mut owned = vec![false; n_ent];
        for &(n, k) in &g.heads {
            if !g.nodes[n].is_variable() {
                owned[g.entry(n, k)] = true;
            }
        }
        // last position reading each entry
        let mut last_use = vec![0usize; n_ent];
        for (p, &i) in order.iter().enumerate() {
            for k in 0..g.nodes[i].num_outputs() {
                last_use[g.entry(i, k)] = p;
            }
            for &(s, k) in &node_inputs[i] {
                let e = g.entry(s, k);
                last_use[e] = last_use[e].max(p);
            }
        }
        let mut slot_of: Vec<Option<usize>> = vec![None; n_ent];
        let mut slots: Vec<(usize, DType)> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut unplanned_bytes = 0;
        // entries to release after each position
        let mut release: Vec<Vec<usize>> = vec![Vec::new(); order.len()];
        for (p, &i) in order.iter().enumerate() {
            for k in 0..g.nodes[i].num_outputs() {
                let e = g.entry(i, k);
                if owned[e] {
                    continue;
                }
                let elems: usize = shapes[e].iter().product();
                unplanned_bytes += elems * dtypes[e].size();
                let s = take_slot(&mut free, &mut slots, elems, dtypes[e]);
                slot_of[e] = Some(s);
                release[last_use[e].max(p)].push(s);
            }
            free.append(&mut release[p]);
        }
        let planned_bytes = slots.iter().map(|(n, t)| n * t.size()).sum();
        let owned_bytes = (0..n_ent)
            .filter(|&e| owned[e])
            .map(|e| shapes[e].iter().product::<usize>() * dtypes[e].size())
            .sum();
        MemoryPlan {
            owned_bytes,
            slot_of,
            slots,
            owned,
            unplanned_bytes,
            planned_bytes,
        }
    }

    /// One array per block.
    pub fn allocate(&self, ctx: Context) -> Result<Vec<NDArray>> {
        self.slots
            .iter()
            .map(|&(n, t)| NDArray::empty(&[n.max(1)], t, ctx))
            .collect()
    }

    /// Whether entry `e` may be bound to an outside array (it has its own).
    pub fn rebindable(&self, e: usize) -> bool {
        self.owned[e] && self.slot_of[e].is_none()
    }
}

/// Best fit among the free blocks of the dtype; else the largest free one
/// grows; else a new block.
fn take_slot(
    free: &mut Vec<usize>,
    slots: &mut Vec<(usize, DType)>,
    elems: usize,
    t: DType,
) -> usize {
    let mut best: Option<usize> = None;
    let mut largest: Option<usize> = None;
    for (pos, &s) in free.iter().enumerate() {
        let (n, dt) = slots[s];
        if dt != t {
            continue;
        }
        if n >= elems && best.is_none_or(|b| slots[free[b]].0 > n) {
            best = Some(pos);
        }
        if largest.is_none_or(|l| slots[free[l]].0 < n) {
            largest = Some(pos);
        }
    }
    if let Some(pos) = best.or(largest) {
        let s = free.swap_remove(pos);
        slots[s].0 = slots[s].0.max(elems);
        return s;
    }
    slots.push((elems, t));
    slots.len() - 1
}
