//! Engine variables: one per array chunk (or resource) whose accesses the
//! engine orders.
use super::Opr;
use crate::error::Error;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One failed operation's error, shared by every variable it poisons (its
/// outputs and, through skipped operations, everything downstream). Taking
/// it through any of them clears it for all, as MXNet's shared
/// `exception_ptr`: an error reported once is not reported again.
pub(crate) type ErrSlot = Arc<Mutex<Option<Error>>>;

pub(crate) struct VarState {
    pub(crate) queue: VecDeque<(Arc<Opr>, bool)>,
    pub(crate) running_reads: usize,
    pub(crate) running_write: bool,
    pub(crate) error: Option<ErrSlot>,
}

pub(crate) struct VarInner {
    pub(crate) state: Mutex<VarState>,
    pub(crate) poisoned: AtomicBool,
}

#[derive(Clone)]
pub struct Var(pub(crate) Arc<VarInner>);

impl Default for Var {
    fn default() -> Self {
        Self::new()
    }
}

impl Var {
    pub fn new() -> Var {
        Var(Arc::new(VarInner {
            state: Mutex::new(VarState {
                queue: VecDeque::new(),
                running_reads: 0,
                running_write: false,
                error: None,
            }),
            poisoned: AtomicBool::new(false),
        }))
    }

    pub fn same(&self, o: &Var) -> bool {
        Arc::ptr_eq(&self.0, &o.0)
    }

    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The error poisoning this variable, if any (left in place).
    pub fn error(&self) -> Option<Error> {
        self.error_slot().and_then(|e| e.lock().clone())
    }

    /// The shared error poisoning this variable, unless none or already
    /// reported through another variable.
    pub(crate) fn error_slot(&self) -> Option<ErrSlot> {
        if !self.0.poisoned.load(Ordering::Acquire) {
            return None;
        }
        let slot = self.0.state.lock().error.clone()?;
        let live = slot.lock().is_some();
        live.then_some(slot)
    }

    pub(crate) fn set_error(&self, e: &ErrSlot) {
        let mut s = self.0.state.lock();
        if s.error.as_ref().is_none_or(|old| old.lock().is_none()) {
            s.error = Some(e.clone());
        }
        self.0.poisoned.store(true, Ordering::Release);
    }

    /// Remove and return the error poisoning this variable (which clears
    /// it for every variable sharing it).
    pub fn take_error(&self) -> Option<Error> {
        if !self.0.poisoned.load(Ordering::Acquire) {
            return None;
        }
        let mut s = self.0.state.lock();
        self.0.poisoned.store(false, Ordering::Release);
        s.error.take().and_then(|e| e.lock().take())
    }

    /// True when no operation on this variable is queued or running.
    pub fn is_idle(&self) -> bool {
        let s = self.0.state.lock();
        s.queue.is_empty() && !s.running_write && s.running_reads == 0
    }
}
