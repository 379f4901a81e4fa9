//! Operator-level profiler. The engine calls `op_begin`/`op_end` around every
//! operator it runs; when the profiler is off that is one relaxed atomic load.
//! Events go to per-thread buffers and are merged when dumped.
use crate::base::Context;
use crate::storage::Pool;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

static RUNNING: AtomicBool = AtomicBool::new(false);
static MEMORY: AtomicBool = AtomicBool::new(false);

/// One complete ("X") event or counter ("C") sample.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: String,
    pub cat: &'static str,
    pub ctx: Context,
    pub tid: u64,
    pub start_us: f64,
    pub dur_us: f64,
    pub counter: Option<i64>,
}

struct ThreadBuf {
    tid: u64,
    events: Mutex<Vec<Event>>,
}

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

fn buffers() -> &'static Mutex<Vec<Arc<ThreadBuf>>> {
    static B: OnceLock<Mutex<Vec<Arc<ThreadBuf>>>> = OnceLock::new();
    B.get_or_init(|| Mutex::new(Vec::new()))
}

thread_local! {
    static LOCAL: RefCell<Option<Arc<ThreadBuf>>> = const { RefCell::new(None) };
}

fn with_local<R>(f: impl FnOnce(&ThreadBuf) -> R) -> R {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.is_none() {
            let mut all = buffers().lock();
            let tb = Arc::new(ThreadBuf { tid: all.len() as u64, events: Mutex::new(Vec::new()) });
            all.push(tb.clone());
            *l = Some(tb);
        }
        f(l.as_ref().unwrap())
    })
}

/// Called once by each engine worker so its events get a stable thread id.
pub fn register_thread(_ctx: Context, _index: usize) {
    with_local(|_| ());
}

pub fn set_running(on: bool) {
    epoch();
    RUNNING.store(on, Ordering::Release);
}

pub fn is_running() -> bool {
    RUNNING.load(Ordering::Relaxed)
}

pub fn set_profile_memory(on: bool) {
    MEMORY.store(on, Ordering::Release);
}

#[inline]
pub fn op_begin() -> Option<Instant> {
    if RUNNING.load(Ordering::Relaxed) {
        Some(Instant::now())
    } else {
        None
    }
}

#[inline]
pub fn op_end(start: Option<Instant>, name: &str, ctx: Context) {
    if let Some(s) = start {
        let end = Instant::now();
        let e0 = epoch();
        record(Event {
            name: name.to_string(),
            cat: "operator",
            ctx,
            tid: 0,
            start_us: s.duration_since(e0).as_secs_f64() * 1e6,
            dur_us: end.duration_since(s).as_secs_f64() * 1e6,
            counter: None,
        });
    }
}

pub fn record(mut ev: Event) {
    with_local(|b| {
        ev.tid = b.tid;
        b.events.lock().push(ev);
    });
}

/// Record the pool's bytes in use as a counter sample when profiling memory.
pub fn memory_counter(pool: &Pool) {
    if RUNNING.load(Ordering::Relaxed) && MEMORY.load(Ordering::Relaxed) {
        let s = pool.stats();
        record(Event {
            name: "Memory: cpu/0".to_string(),
            cat: "memory",
            ctx: Context::cpu(0),
            tid: 0,
            start_us: epoch().elapsed().as_secs_f64() * 1e6,
            dur_us: 0.0,
            counter: Some(s.bytes_in_use as i64),
        });
    }
}

/// All events recorded so far (optionally clearing them).
pub fn collect(reset: bool) -> Vec<Event> {
    let mut out = Vec::new();
    for b in buffers().lock().iter() {
        let mut ev = b.events.lock();
        if reset {
            out.append(&mut ev);
        } else {
            out.extend(ev.iter().cloned());
        }
    }
    out.sort_by(|a, b| a.start_us.partial_cmp(&b.start_us).unwrap_or(std::cmp::Ordering::Equal));
    out
}
