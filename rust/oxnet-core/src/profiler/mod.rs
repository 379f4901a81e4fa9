//! Operator-level profiler (MXNet 1.x `mx.profiler`).
//!
//! * The engine asks [`capture`] at push time whether to profile an
//!   operation (one relaxed atomic load when the profiler is off) and times
//!   it around its kernel ([`op_begin`]/[`op_end`]). As in MXNet the decision
//!   is taken at push, so operations pushed while running are recorded even
//!   when they execute after `set_state('stop')`.
//! * Records go to per-thread buffers (one uncontended lock per record) and
//!   are merged when dumped: a Chrome trace ([`trace`]) and an aggregate table
//!   ([`aggregate`]).
//! * Python-side objects (Task, Frame, Event, Counter, Marker) record through
//!   the same buffers; `scope(name)` prefixes the names of the operators
//!   pushed by the thread inside it.
pub mod aggregate;
pub mod trace;

use crate::base::{Context, Shape};
use crate::error::{Error, Result};
use crate::storage::Pool;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

// Effective switches, recomputed from (config, state, paused) on change.
const F_OPS: u8 = 1;
const F_MEM: u8 = 2;
const F_API: u8 = 4;
const F_OBJ: u8 = 8;
static FLAGS: AtomicU8 = AtomicU8::new(0);

/// What kind of thing a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// An operator run by the engine (complete event).
    Operator,
    /// A front-end API call (`MXImperativeInvoke`).
    Api,
    /// `profiler.Task` start..stop.
    Task,
    /// `profiler.Frame` start..stop.
    Frame,
    /// `profiler.Event` start..stop.
    Event,
    /// `profiler.Counter` value sample.
    Counter,
    /// `profiler.Marker` instant.
    Marker,
    /// Storage pool bytes in use (profile_memory).
    Memory,
}

impl Kind {
    pub fn is_duration(self) -> bool {
        matches!(
            self,
            Kind::Operator | Kind::Api | Kind::Task | Kind::Frame | Kind::Event
        )
    }
}

/// A name that is usually static (operator names) and otherwise shared.
#[derive(Debug, Clone)]
pub enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Name {
    pub fn as_str(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Shared(s) => s,
        }
    }
}

/// Marker scope, as Chrome's instant-event `s` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkScope {
    Global,
    Process,
    Thread,
}

impl MarkScope {
    pub fn parse(s: &str) -> Result<MarkScope> {
        match s {
            "global" => Ok(MarkScope::Global),
            "process" => Ok(MarkScope::Process),
            "thread" => Ok(MarkScope::Thread),
            _ => Err(Error::Param(format!(
                "Marker.mark: scope '{s}' is not supported (expected 'global', 'process' or 'thread')"
            ))),
        }
    }
}

/// One recorded event.
#[derive(Debug, Clone)]
pub struct Record {
    pub kind: Kind,
    pub name: Name,
    /// `profiler.scope` prefix ("net:") of operators pushed inside a scope.
    pub scope: Option<Arc<str>>,
    /// Domain of Python-side objects (their Chrome category).
    pub domain: Option<Arc<str>>,
    /// Input shapes of an operator (cheap to keep, formatted at dump).
    pub shapes: Option<Vec<Shape>>,
    /// Operator name of an API record.
    pub detail: Option<&'static str>,
    pub ctx: Context,
    pub tid: u32,
    pub start_ns: u64,
    pub dur_ns: u64,
    /// Counter value, memory bytes in use, or marker scope.
    pub value: i64,
    pub mark: Option<MarkScope>,
}

impl Record {
    fn new(kind: Kind, name: Name, ctx: Context, start_ns: u64) -> Record {
        Record {
            kind,
            name,
            scope: None,
            domain: None,
            shapes: None,
            detail: None,
            ctx,
            tid: 0,
            start_ns,
            dur_ns: 0,
            value: 0,
            mark: None,
        }
    }

    /// Display name: the scope prefix followed by the name.
    pub fn full_name(&self) -> String {
        match &self.scope {
            Some(s) => format!("{s}{}", self.name.as_str()),
            None => self.name.as_str().to_string(),
        }
    }
}

// ---------------------------------------------------------------------------
// Configuration and state.
// ---------------------------------------------------------------------------

/// `set_config` parameters with MXNet 1.x defaults.
#[derive(Debug, Clone)]
pub struct Config {
    pub profile_all: bool,
    pub profile_symbolic: bool,
    pub profile_imperative: bool,
    pub profile_memory: bool,
    pub profile_api: bool,
    pub filename: String,
    pub continuous_dump: bool,
    pub dump_period: f64,
    pub aggregate_stats: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            profile_all: false,
            profile_symbolic: true,
            profile_imperative: true,
            profile_memory: true,
            profile_api: true,
            filename: "profile.json".to_string(),
            continuous_dump: false,
            dump_period: 1.0,
            aggregate_stats: false,
        }
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "True" | "true" | "1" => Ok(true),
        "False" | "false" | "0" => Ok(false),
        _ => Err(Error::Param(format!(
            "set_config: {key} must be a boolean, got '{v}'"
        ))),
    }
}

impl Config {
    /// Parse MXNet-style string pairs; keys not given keep their defaults
    /// (each call starts from the defaults, as MXNet's parameter parser does).
    pub fn parse(pairs: &[(&str, &str)]) -> Result<Config> {
        let mut c = Config::default();
        for &(k, v) in pairs {
            match k {
                "profile_all" => c.profile_all = parse_bool(k, v)?,
                "profile_symbolic" => c.profile_symbolic = parse_bool(k, v)?,
                "profile_imperative" => c.profile_imperative = parse_bool(k, v)?,
                "profile_memory" => c.profile_memory = parse_bool(k, v)?,
                "profile_api" => c.profile_api = parse_bool(k, v)?,
                "continuous_dump" => c.continuous_dump = parse_bool(k, v)?,
                "aggregate_stats" => c.aggregate_stats = parse_bool(k, v)?,
                "filename" => {
                    if v.is_empty() {
                        return Err(Error::Param("set_config: filename must not be empty".into()));
                    }
                    c.filename = v.to_string();
                }
                "dump_period" => {
                    let p: f64 = v.trim().parse().map_err(|_| {
                        Error::Param(format!("set_config: dump_period must be a number of seconds, got '{v}'"))
                    })?;
                    if !(p > 0.0 && p.is_finite()) {
                        return Err(Error::Param(format!(
                            "set_config: dump_period must be positive, got {v}"
                        )));
                    }
                    c.dump_period = p;
                }
                "profile_process" => {
                    if v != "worker" {
                        return Err(Error::Param(format!(
                            "set_config: profile_process='{v}' is not supported (no distributed kvstore \
                             server in this build; only 'worker')"
                        )));
                    }
                }
                "gpu_memory_profile_filename_prefix" => {
                    return Err(Error::Param(
                        "set_config: gpu_memory_profile_filename_prefix is not supported (no GPU memory \
                         profiler in this build)"
                            .into(),
                    ))
                }
                _ => {
                    return Err(Error::Param(format!(
                        "set_config: unknown argument '{k}' (expected profile_all, profile_symbolic, \
                         profile_imperative, profile_memory, profile_api, filename, continuous_dump, \
                         dump_period, aggregate_stats, profile_process)"
                    )))
                }
            }
        }
        Ok(c)
    }
}

struct State {
    config: Config,
    running: bool,
    paused: bool,
    ever_ran: bool,
    ever_dumped: bool,
    /// Bumped on each `set_state('run')` so an old continuous-dump thread exits.
    generation: u64,
}

fn state() -> &'static Mutex<State> {
    static S: OnceLock<Mutex<State>> = OnceLock::new();
    S.get_or_init(|| {
        Mutex::new(State {
            config: Config::default(),
            running: false,
            paused: false,
            ever_ran: false,
            ever_dumped: false,
            generation: 0,
        })
    })
}

fn update_flags(s: &State) {
    let mut f = 0;
    if s.running && !s.paused {
        let c = &s.config;
        // Every operator today comes from the imperative path; the executor
        // will consult `symbolic_enabled` for graph operators.
        if c.profile_all || c.profile_imperative {
            f |= F_OPS;
        }
        if c.profile_all || c.profile_memory {
            f |= F_MEM;
        }
        if c.profile_all || c.profile_api {
            f |= F_API;
        }
        f |= F_OBJ;
    }
    FLAGS.store(f, Ordering::Release);
}

/// `set_config`: replace the configuration (MXNet-style string values).
pub fn set_config(pairs: &[(&str, &str)]) -> Result<()> {
    let c = Config::parse(pairs)?;
    let mut s = state().lock();
    s.config = c;
    update_flags(&s);
    Ok(())
}

pub fn config() -> Config {
    state().lock().config.clone()
}

/// `set_state('run' | 'stop')`.
pub fn set_state(run: bool) {
    epoch();
    let mut s = state().lock();
    let was = s.running;
    s.running = run;
    if run {
        s.ever_ran = true;
        s.paused = false;
    }
    update_flags(&s);
    if run && !was && s.config.continuous_dump {
        s.generation += 1;
        let gen = s.generation;
        let period = s.config.dump_period;
        drop(s);
        start_continuous_dump(gen, period);
    }
}

/// Kept for the first bindings: same as `set_state`.
pub fn set_running(on: bool) {
    set_state(on);
}

pub fn is_running() -> bool {
    state().lock().running
}

/// `pause()` / `resume()`: stop and restart recording without changing state.
pub fn pause(paused: bool) {
    let mut s = state().lock();
    s.paused = paused;
    update_flags(&s);
}

/// Whether graph operators should be profiled (for the executor).
pub fn symbolic_enabled() -> bool {
    let s = state().lock();
    s.running && !s.paused && (s.config.profile_all || s.config.profile_symbolic)
}

/// Whether Python-side objects record now.
#[inline]
pub fn objects_enabled() -> bool {
    FLAGS.load(Ordering::Relaxed) & F_OBJ != 0
}

fn start_continuous_dump(gen: u64, period: f64) {
    let _ = std::thread::Builder::new()
        .name("oxnet-profiler-dump".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_secs_f64(period));
            {
                let s = state().lock();
                if s.generation != gen || !s.running || !s.config.continuous_dump {
                    return;
                }
            }
            // A failed periodic write is reported by the next explicit dump.
            let _ = write_dump(false, false);
        });
}

// ---------------------------------------------------------------------------
// Time and per-thread buffers.
// ---------------------------------------------------------------------------

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

/// Nanoseconds since the profiler's epoch.
#[inline]
pub fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

pub(crate) struct Buf {
    pub(crate) events: Vec<Record>,
    /// Events before this index are already in the aggregate statistics.
    pub(crate) folded: usize,
}

pub(crate) struct ThreadBuf {
    pub(crate) tid: u32,
    pub(crate) name: String,
    pub(crate) buf: Mutex<Buf>,
}

pub(crate) fn buffers() -> &'static Mutex<Vec<Arc<ThreadBuf>>> {
    static B: OnceLock<Mutex<Vec<Arc<ThreadBuf>>>> = OnceLock::new();
    B.get_or_init(|| Mutex::new(Vec::new()))
}

thread_local! {
    static LOCAL: RefCell<Option<Arc<ThreadBuf>>> = const { RefCell::new(None) };
    static SCOPE: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
    static PENDING_SHAPES: RefCell<Option<Vec<Shape>>> = const { RefCell::new(None) };
}

/// Run `f` on this thread's buffer (created on first use). Returns None
/// while the thread's locals are being destroyed (a record made by a
/// destructor at thread exit is dropped rather than aborting).
fn with_local<R>(f: impl FnOnce(&ThreadBuf) -> R) -> Option<R> {
    LOCAL
        .try_with(|l| {
            let mut l = l.borrow_mut();
            if l.is_none() {
                let mut all = buffers().lock();
                let tid = all.len() as u32;
                let name = match std::thread::current().name() {
                    Some(n) => n.to_string(),
                    None => format!("host thread {tid}"),
                };
                let tb = Arc::new(ThreadBuf {
                    tid,
                    name,
                    buf: Mutex::new(Buf {
                        events: Vec::new(),
                        folded: 0,
                    }),
                });
                all.push(tb.clone());
                *l = Some(tb);
            }
            f(l.as_ref().unwrap())
        })
        .ok()
}

/// Called once by each engine worker so its events get a stable thread id
/// and name, in worker order.
pub fn register_thread(_ctx: Context, _index: usize) {
    let _ = with_local(|_| ());
}

/// Append a record to this thread's buffer.
pub fn record(mut ev: Record) {
    let _ = with_local(|b| {
        ev.tid = b.tid;
        b.buf.lock().events.push(ev);
    });
}

// ---------------------------------------------------------------------------
// Engine and operator hooks.
// ---------------------------------------------------------------------------

/// What is known about an operation at push time when it is profiled.
#[derive(Debug)]
pub struct OpInfo {
    pub scope: Option<Arc<str>>,
    pub shapes: Option<Vec<Shape>>,
}

/// Set (or clear) this thread's `profiler.scope` prefix, e.g. "net:".
pub fn set_scope(scope: Option<&str>) {
    SCOPE.with(|s| *s.borrow_mut() = scope.map(Arc::from));
}

pub fn current_scope() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().map(|a| a.to_string()))
}

/// Called by the operator front end just before it pushes: remember the
/// input shapes for the trace's `args` (nothing when the profiler is off).
#[inline]
pub fn note_inputs(shapes: &[Shape]) {
    if FLAGS.load(Ordering::Relaxed) & F_OPS != 0 {
        PENDING_SHAPES.with(|p| *p.borrow_mut() = Some(shapes.to_vec()));
    }
}

/// Called by `engine::push`: `Some` when this operation is to be profiled.
#[inline]
pub fn capture() -> Option<Box<OpInfo>> {
    if FLAGS.load(Ordering::Relaxed) & F_OPS == 0 {
        return None;
    }
    capture_slow()
}

#[cold]
fn capture_slow() -> Option<Box<OpInfo>> {
    let scope = SCOPE.with(|s| s.borrow().clone());
    let shapes = PENDING_SHAPES.with(|p| p.borrow_mut().take());
    Some(Box::new(OpInfo { scope, shapes }))
}

/// Start timing an operation that was captured at push.
#[inline]
pub fn op_begin(info: &Option<Box<OpInfo>>) -> Option<u64> {
    info.as_ref().map(|_| now_ns())
}

/// Record a timed operation.
#[inline]
pub fn op_end(start: Option<u64>, name: &'static str, ctx: Context, info: &Option<Box<OpInfo>>) {
    if let (Some(s), Some(info)) = (start, info) {
        op_end_slow(s, name, ctx, info);
    }
}

#[cold]
fn op_end_slow(start: u64, name: &'static str, ctx: Context, info: &OpInfo) {
    let end = now_ns();
    let mut r = Record::new(Kind::Operator, Name::Static(name), ctx, start);
    r.dur_ns = end.saturating_sub(start);
    r.scope = info.scope.clone();
    r.shapes = info.shapes.clone();
    record(r);
}

/// Times a front-end API call (profile_api) from creation to drop.
pub struct ApiScope {
    start: Option<u64>,
    name: &'static str,
    op: &'static str,
}

impl ApiScope {
    #[inline]
    pub fn new(name: &'static str, op: &'static str) -> ApiScope {
        let start = if FLAGS.load(Ordering::Relaxed) & F_API != 0 {
            Some(now_ns())
        } else {
            None
        };
        ApiScope { start, name, op }
    }
}

impl Drop for ApiScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(s) = self.start {
            let mut r = Record::new(Kind::Api, Name::Static(self.name), Context::cpu(0), s);
            r.dur_ns = now_ns().saturating_sub(s);
            r.detail = Some(self.op);
            record(r);
        }
    }
}

/// Record the pool's bytes in use as a counter sample when profiling memory.
#[inline]
pub fn memory_counter(pool: &Pool) {
    if FLAGS.load(Ordering::Relaxed) & F_MEM != 0 {
        let s = pool.stats();
        let mut r = Record::new(
            Kind::Memory,
            Name::Static("Memory: cpu/0"),
            Context::cpu(0),
            now_ns(),
        );
        r.value = s.bytes_in_use as i64;
        record(r);
    }
}

// ---------------------------------------------------------------------------
// Python-side objects.
// ---------------------------------------------------------------------------

/// Start time for a Task/Frame/Event, or None when not recording.
pub fn object_start() -> Option<u64> {
    if objects_enabled() {
        Some(now_ns())
    } else {
        None
    }
}

/// Record a Task, Frame or Event that started at `start_ns`.
pub fn record_duration(kind: Kind, domain: Option<&str>, name: &str, start_ns: u64) -> Result<()> {
    if !matches!(kind, Kind::Task | Kind::Frame | Kind::Event) {
        return Err(Error::Param(format!(
            "profiler: {kind:?} is not a duration object"
        )));
    }
    let end = now_ns();
    if end < start_ns {
        return Err(Error::Param(format!(
            "profiler: {name} stopped before it started (start {start_ns} ns, now {end} ns)"
        )));
    }
    let mut r = Record::new(
        kind,
        Name::Shared(Arc::from(name)),
        Context::cpu(0),
        start_ns,
    );
    r.dur_ns = end - start_ns;
    r.domain = domain.map(Arc::from);
    record(r);
    Ok(())
}

/// Record a counter's new value (when recording).
pub fn record_counter(domain: &str, name: &str, value: i64) {
    if objects_enabled() {
        let mut r = Record::new(
            Kind::Counter,
            Name::Shared(Arc::from(name)),
            Context::cpu(0),
            now_ns(),
        );
        r.domain = Some(Arc::from(domain));
        r.value = value;
        record(r);
    }
}

/// Record an instant marker (when recording).
pub fn record_marker(domain: &str, name: &str, scope: MarkScope) {
    if objects_enabled() {
        let mut r = Record::new(
            Kind::Marker,
            Name::Shared(Arc::from(name)),
            Context::cpu(0),
            now_ns(),
        );
        r.domain = Some(Arc::from(domain));
        r.mark = Some(scope);
        record(r);
    }
}

// ---------------------------------------------------------------------------
// Collecting and dumping.
// ---------------------------------------------------------------------------

/// Fold not-yet-aggregated events into the aggregate statistics; with
/// `drain`, also take every event out of the buffers.
pub(crate) fn fold_and_collect(drain: bool) -> Vec<(Arc<ThreadBuf>, Vec<Record>)> {
    let bufs: Vec<Arc<ThreadBuf>> = buffers().lock().clone();
    let aggregate_on = state().lock().config.aggregate_stats;
    let mut out = Vec::with_capacity(bufs.len());
    for tb in bufs {
        let mut b = tb.buf.lock();
        if aggregate_on {
            aggregate::fold(&b.events[b.folded..]);
        }
        b.folded = b.events.len();
        let evs = if drain {
            b.folded = 0;
            std::mem::take(&mut b.events)
        } else {
            b.events.clone()
        };
        drop(b);
        out.push((tb, evs));
    }
    out
}

/// Fold every not-yet-aggregated event into the aggregate statistics.
fn fold_all() {
    let bufs: Vec<Arc<ThreadBuf>> = buffers().lock().clone();
    for tb in bufs {
        let mut b = tb.buf.lock();
        aggregate::fold(&b.events[b.folded..]);
        b.folded = b.events.len();
    }
}

/// All records so far (copies; the buffers keep them).
pub fn collect() -> Vec<Record> {
    let mut v: Vec<Record> = fold_and_collect(false)
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect();
    v.sort_by_key(|r| r.start_ns);
    v
}

static DUMP_LOCK: Mutex<()> = Mutex::new(());

fn write_dump(finished: bool, wait: bool) -> Result<()> {
    if wait && !crate::engine::in_worker() {
        // Operations pushed before the dump are part of it.
        crate::engine::wait_idle();
    }
    let _g = DUMP_LOCK.lock();
    let filename = state().lock().config.filename.clone();
    let per_thread = fold_and_collect(finished);
    let tmp = format!("{filename}.tmp{}", std::process::id());
    let write = || -> std::io::Result<()> {
        let f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        trace::write_chrome_trace(&per_thread, &mut w)?;
        use std::io::Write;
        w.flush()?;
        drop(w);
        std::fs::rename(&tmp, &filename)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        if finished {
            // Keep the events for a later attempt.
            let mut bufs = per_thread;
            for (tb, evs) in bufs.iter_mut() {
                let mut b = tb.buf.lock();
                let newer = std::mem::take(&mut b.events);
                b.events = std::mem::take(evs);
                b.folded = b.events.len();
                b.events.extend(newer);
            }
        }
        return Err(Error::Io(format!(
            "profiler.dump: cannot write '{filename}': {e}"
        )));
    }
    state().lock().ever_dumped = true;
    Ok(())
}

/// `dump(finished)`: write the Chrome trace of the events recorded so far to
/// the configured file (waiting first for operations already pushed). With
/// `finished`, the written events are dropped from memory, so the next dump
/// holds only newer ones; otherwise they stay and the next dump rewrites a
/// superset.
pub fn dump(finished: bool) -> Result<()> {
    write_dump(finished, true)
}

/// Called at process exit: writes the trace if anything was recorded since
/// the last dump, or if the profiler ran but never dumped.
pub fn dump_at_exit() -> Result<()> {
    let (ran, dumped) = {
        let s = state().lock();
        (s.ever_ran, s.ever_dumped)
    };
    if !ran {
        return Ok(());
    }
    let has_events = buffers()
        .lock()
        .iter()
        .any(|tb| !tb.buf.lock().events.is_empty());
    if has_events || !dumped {
        write_dump(true, true)
    } else {
        Ok(())
    }
}

/// `dumps(reset, format, sort_by, ascending)`: the aggregate statistics as
/// MXNet's text table or as JSON. Empty when `aggregate_stats` is off (as
/// in MXNet).
pub fn dumps(reset: bool, format: &str, sort_by: &str, ascending: bool) -> Result<String> {
    let fmt = aggregate::Format::parse(format)?;
    let key = aggregate::SortBy::parse(sort_by)?;
    if !state().lock().config.aggregate_stats {
        if reset {
            aggregate::reset();
        }
        return Ok(String::new());
    }
    fold_all();
    let out = aggregate::render(fmt, key, ascending);
    if reset {
        aggregate::reset();
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
