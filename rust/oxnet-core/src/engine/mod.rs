//! The dependency engine. Operations declare the variables they read and
//! write; the engine runs them in dependency order, in parallel where the
//! order allows. Invariants (tested against the naive engine):
//!
//! * per variable, operations run in push order; consecutive reads run
//!   together; a write waits for everything pushed before it;
//! * errors are values: a failing operation (or a caught panic) poisons its
//!   write variables, later operations reading them are skipped and poison
//!   their own writes; the wait that reaches a poisoned variable returns the
//!   original error; `wait_for_all` returns the first and clears all;
//! * a wait issued from inside a worker is an error, never a deadlock.
mod threaded;
mod var;

pub use var::Var;

use crate::base::Context;
use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a running operation may ask of the engine.
pub struct RunCtx {
    pub ctx: Context,
}

pub type OpFn = Box<dyn FnOnce(&RunCtx) -> Result<()> + Send + 'static>;

/// One pushed operation.
pub struct Opr {
    pub(crate) reads: Vec<Var>,
    pub(crate) writes: Vec<Var>,
    pub(crate) func: Mutex<Option<OpFn>>,
    pub(crate) wait: AtomicUsize,
    pub(crate) name: &'static str,
    pub(crate) ctx: Context,
    /// Cheap enough to run on the pushing thread when ready at push time.
    pub(crate) inline: bool,
    /// Internal no-op used by waits: never skipped, never poisons.
    pub(crate) is_wait: bool,
    /// Set at push when the profiler records this operation.
    pub(crate) prof: Option<Box<crate::profiler::OpInfo>>,
}

/// The engine interface shared by the threaded and the naive engine.
pub trait Engine: Send + Sync {
    fn push_opr(&self, opr: Arc<Opr>);
    fn wait_for_var(&self, var: &Var, for_write: bool) -> Result<()>;
    fn wait_for_all(&self) -> Result<()>;
    fn kind(&self) -> &'static str;
}

thread_local! {
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn mark_worker_thread() {
    IN_WORKER.with(|w| w.set(true));
}

pub fn in_worker() -> bool {
    IN_WORKER.with(|w| w.get())
}

fn check_not_worker(what: &str) -> Result<()> {
    if in_worker() {
        return Err(Error::Engine(format!(
            "{what} was called from inside an engine worker (e.g. from a custom operator's forward); \
             waiting there would deadlock, so it is refused"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Shared bookkeeping: pending count, first error, poisoned variables.
// ---------------------------------------------------------------------------

pub(crate) struct Shared {
    pending: AtomicUsize,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
    /// Errors not yet reported, in the order they happened.
    errors: Mutex<Vec<var::ErrSlot>>,
    poisoned: Mutex<Vec<Var>>,
    any_error: AtomicBool,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            pending: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            errors: Mutex::new(Vec::new()),
            poisoned: Mutex::new(Vec::new()),
            any_error: AtomicBool::new(false),
        }
    }

    fn op_started(&self) {
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    fn op_finished(&self) {
        self.pending.fetch_sub(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_all();
        }
    }

    fn wait_idle(&self) {
        self.wait_below(0);
    }

    /// Block until at most `n` operations are pending.
    fn wait_below(&self, n: usize) {
        if self.pending.load(Ordering::SeqCst) <= n {
            return;
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut g = self.lock.lock();
        while self.pending.load(Ordering::SeqCst) > n {
            self.cv.wait(&mut g);
        }
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    fn record_error(&self, e: &var::ErrSlot, vars: &[Var]) {
        {
            let mut all = self.errors.lock();
            if !all.iter().any(|x| Arc::ptr_eq(x, e)) {
                all.push(e.clone());
            }
        }
        self.poisoned.lock().extend(vars.iter().cloned());
        self.any_error.store(true, Ordering::Release);
    }

    /// Take the first error not reported yet (by a wait on a variable it
    /// poisoned) and clear every error and poisoned variable.
    fn take_all_errors(&self) -> Result<()> {
        if !self.any_error.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let mut first = None;
        for e in self.errors.lock().drain(..) {
            let taken = e.lock().take();
            if first.is_none() {
                first = taken;
            }
        }
        for v in self.poisoned.lock().drain(..) {
            v.take_error();
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Run one ready operation: skip it if an input is poisoned, else call its
/// function and catch errors and panics; poison writes on failure.
pub(crate) fn execute(shared: &Shared, opr: &Opr) {
    let func = opr.func.lock().take();
    if opr.is_wait {
        if let Some(f) = func {
            let _ = f(&RunCtx { ctx: opr.ctx });
        }
        return;
    }
    // an input poisoned by an unreported error: skip, passing the same
    // error on to the outputs
    if let Some(e) = opr.reads.iter().find_map(|v| v.error_slot()) {
        for v in &opr.writes {
            v.set_error(&e);
        }
        shared.record_error(&e, &opr.writes);
        return;
    }
    let result = match func {
        None => Ok(()),
        Some(f) => {
            let rc = RunCtx { ctx: opr.ctx };
            let prof = crate::profiler::op_begin(&opr.prof);
            let r = crate::error::catch_panic(
                || f(&rc).map_err(|e| e.in_op(opr.name)),
                |msg| Error::Op {
                    op: opr.name.to_string(),
                    msg: format!("internal error (panic): {msg}"),
                },
            );
            crate::profiler::op_end(prof, opr.name, opr.ctx, &opr.prof);
            r
        }
    };
    if let Err(e) = result {
        let e: var::ErrSlot = Arc::new(Mutex::new(Some(e)));
        for v in &opr.writes {
            v.set_error(&e);
        }
        shared.record_error(&e, &opr.writes);
    }
}

// ---------------------------------------------------------------------------
// The naive engine: runs every operation at push, synchronously.
// ---------------------------------------------------------------------------

pub struct NaiveEngine {
    shared: Shared,
}

impl Engine for NaiveEngine {
    fn push_opr(&self, opr: Arc<Opr>) {
        execute(&self.shared, &opr);
    }
    fn wait_for_var(&self, var: &Var, _for_write: bool) -> Result<()> {
        check_not_worker("wait_to_read")?;
        match var.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn wait_for_all(&self) -> Result<()> {
        check_not_worker("waitall")?;
        self.shared.take_all_errors()
    }
    fn kind(&self) -> &'static str {
        "NaiveEngine"
    }
}

// ---------------------------------------------------------------------------
// The global engine.
// ---------------------------------------------------------------------------

static ENGINE: AtomicPtr<Box<dyn Engine>> = AtomicPtr::new(std::ptr::null_mut());
static INIT: Mutex<()> = Mutex::new(());

fn make_engine() -> Box<dyn Engine> {
    let kind = std::env::var("OXNET_ENGINE_TYPE")
        .or_else(|_| std::env::var("MXNET_ENGINE_TYPE"))
        .unwrap_or_default();
    if kind.eq_ignore_ascii_case("NaiveEngine") || kind.eq_ignore_ascii_case("naive") {
        Box::new(NaiveEngine {
            shared: Shared::new(),
        })
    } else {
        Box::new(threaded::ThreadedEngine::new())
    }
}

/// The process-wide engine, created on first use.
pub fn engine() -> &'static dyn Engine {
    let p = ENGINE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: engines are leaked and never freed.
        return unsafe { &**p };
    }
    let _g = INIT.lock();
    let p = ENGINE.load(Ordering::Acquire);
    if !p.is_null() {
        return unsafe { &**p };
    }
    let e = Box::into_raw(Box::new(make_engine()));
    ENGINE.store(e, Ordering::Release);
    install_fork_handlers();
    unsafe { &**e }
}

fn install_fork_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(Some(before_fork), None, Some(after_fork_child));
    });
}

extern "C" fn before_fork() {
    // Let pending work finish so no lock is held across the fork.
    let p = ENGINE.load(Ordering::Acquire);
    if !p.is_null() && !in_worker() {
        let e = unsafe { &**p };
        if let Some(t) = e_as_threaded(e) {
            t.shared.wait_idle();
        }
    }
}

fn e_as_threaded(_e: &dyn Engine) -> Option<&threaded::ThreadedEngine> {
    if _e.kind() == "ThreadedEnginePerDevice" {
        // SAFETY: kind() identifies the concrete type.
        Some(unsafe { &*(_e as *const dyn Engine as *const threaded::ThreadedEngine) })
    } else {
        None
    }
}

extern "C" fn after_fork_child() {
    // The worker threads did not survive the fork: start a fresh engine.
    // The old one is leaked on purpose (its threads are gone).
    ENGINE.store(std::ptr::null_mut(), Ordering::Release);
    unsafe { INIT.force_unlock_fair_if_locked() };
}

trait ForceUnlock {
    unsafe fn force_unlock_fair_if_locked(&self);
}
impl ForceUnlock for Mutex<()> {
    unsafe fn force_unlock_fair_if_locked(&self) {
        if self.is_locked() {
            self.force_unlock();
        }
    }
}

/// Builder-style push used by the rest of the core.
pub fn push(
    name: &'static str,
    ctx: Context,
    reads: Vec<Var>,
    writes: Vec<Var>,
    inline: bool,
    f: OpFn,
) {
    let mut reads = reads;
    let mut writes = writes;
    dedup(&mut writes);
    reads.retain(|r| !writes.iter().any(|w| w.same(r)));
    dedup(&mut reads);
    let opr = Arc::new(Opr {
        wait: AtomicUsize::new(reads.len() + writes.len() + 1),
        reads,
        writes,
        func: Mutex::new(Some(f)),
        name,
        ctx,
        inline,
        is_wait: false,
        prof: crate::profiler::capture(),
    });
    engine().push_opr(opr);
}

fn dedup(v: &mut Vec<Var>) {
    if v.len() < 2 {
        return;
    }
    let mut i = 0;
    while i < v.len() {
        if v[..i].iter().any(|x| x.same(&v[i])) {
            v.swap_remove(i);
        } else {
            i += 1;
        }
    }
}

/// Wait until every write pushed before on `var` has run (and every read too
/// when `for_write`); returns the error that poisoned it, once.
pub fn wait_for_var(var: &Var, for_write: bool) -> Result<()> {
    engine().wait_for_var(var, for_write)
}

/// Wait for all pushed work; returns the first error since the last call.
pub fn wait_for_all() -> Result<()> {
    engine().wait_for_all()
}

/// Wait until no operation is pending, leaving errors to the waits that
/// reach them (used by the profiler's dump). No-op inside a worker.
pub fn wait_idle() {
    if in_worker() {
        return;
    }
    if let Some(t) = e_as_threaded(engine()) {
        t.shared.wait_idle();
    }
}

pub fn engine_kind() -> &'static str {
    engine().kind()
}

/// Back-pressure: when more than this many operations are pending, callers
/// of `throttle` wait (without the GIL) until half of them have run, so a
/// loop that never waits cannot queue unbounded work and memory.
fn max_pending() -> usize {
    static M: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *M.get_or_init(|| {
        std::env::var("OXNET_ENGINE_MAX_PENDING")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1024)
    })
}

/// True when the caller should `throttle` before pushing more work.
#[inline]
pub fn over_limit() -> bool {
    match e_as_threaded(engine()) {
        Some(t) => t.shared.pending.load(Ordering::Relaxed) > max_pending(),
        None => false,
    }
}

/// Wait until the pending count drops to half the limit (never from a worker).
pub fn throttle() {
    if in_worker() {
        return;
    }
    if let Some(t) = e_as_threaded(engine()) {
        t.shared.wait_below(max_pending() / 2);
    }
}

static BULK_SIZE: AtomicUsize = AtomicUsize::new(0);

/// Bulk execution: while the bulk size is above 1, an operation whose inputs
/// are ready when it is pushed runs on the pushing thread whatever its size
/// (no hand-off to a worker), as MXNet's bulked segments do. Returns the
/// previous size.
pub fn set_bulk_size(n: usize) -> usize {
    BULK_SIZE.swap(n, Ordering::Relaxed)
}

pub fn bulk_size() -> usize {
    BULK_SIZE.load(Ordering::Relaxed)
}

/// Number of worker threads the engine and kernels may use.
pub fn num_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests;
