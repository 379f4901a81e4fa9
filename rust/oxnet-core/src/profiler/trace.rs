//! Chrome trace ("Trace Event Format") output: open the file in
//! chrome://tracing or https://ui.perfetto.dev.
//!
//! * one process (`pid`) per device, named by a `process_name` metadata
//!   event ("cpu/0"); Python-side objects live on the host device cpu/0;
//! * one thread (`tid`) per recording thread (engine workers, and the
//!   Python thread for inline operators and objects), named by
//!   `thread_name` metadata;
//! * operators, API calls, Tasks, Frames and Events are complete (`X`)
//!   events with `ts`/`dur` in microseconds; counters and memory samples
//!   are `C` events; markers are instant (`i`) events.
use super::{Kind, MarkScope, Record, ThreadBuf};
use crate::base::{fmt_shape, Context};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;

/// Device name as MXNet's trace writes it: "cpu/0".
pub fn device_name(ctx: Context) -> String {
    format!("{}/{}", ctx.dev_type.name(), ctx.dev_id)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn category(r: &Record) -> String {
    match r.kind {
        Kind::Operator => "operator".to_string(),
        Kind::Api => "MXNET_C_API".to_string(),
        Kind::Memory => "memory".to_string(),
        Kind::Event => "event".to_string(),
        _ => r.domain.as_deref().unwrap_or("default").to_string(),
    }
}

/// Write the trace document for the given per-thread events to `w`.
pub(crate) fn write_chrome_trace(
    per_thread: &[(Arc<ThreadBuf>, Vec<Record>)],
    w: &mut dyn Write,
) -> std::io::Result<()> {
    // pids: one per device seen, cpu/0 always (the host).
    let mut devices: BTreeSet<(i32, i32)> = BTreeSet::new();
    devices.insert((Context::cpu(0).dev_type as i32, 0));
    let mut ctx_of: BTreeMap<(i32, i32), Context> = BTreeMap::new();
    ctx_of.insert((Context::cpu(0).dev_type as i32, 0), Context::cpu(0));
    for (_, evs) in per_thread {
        for r in evs {
            let k = (r.ctx.dev_type as i32, r.ctx.dev_id);
            devices.insert(k);
            ctx_of.insert(k, r.ctx);
        }
    }
    let pid_of: BTreeMap<(i32, i32), usize> =
        devices.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let pid = |c: Context| pid_of[&(c.dev_type as i32, c.dev_id)];

    let mut meta: Vec<Value> = Vec::new();
    for (k, p) in &pid_of {
        meta.push(json!({"name": "process_name", "ph": "M", "pid": p,
                        "args": {"name": device_name(ctx_of[k])}}));
        meta.push(json!({"name": "process_sort_index", "ph": "M", "pid": p,
                        "args": {"sort_index": p}}));
    }
    let mut threads: BTreeSet<(usize, u32)> = BTreeSet::new();
    for (tb, evs) in per_thread {
        for r in evs {
            if threads.insert((pid(r.ctx), tb.tid)) {
                meta.push(
                    json!({"name": "thread_name", "ph": "M", "pid": pid(r.ctx), "tid": tb.tid,
                                "args": {"name": tb.name}}),
                );
            }
        }
    }

    let mut evs: Vec<&Record> = per_thread.iter().flat_map(|(_, e)| e.iter()).collect();
    evs.sort_by_key(|r| (r.start_ns, std::cmp::Reverse(r.dur_ns)));
    // the events are written as they come (no tree of values: a dump of a
    // million events was dominated by building one)
    w.write_all(b"{\"traceEvents\": [")?;
    let mut first = true;
    for m in &meta {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        serde_json::to_writer(&mut *w, m)?;
    }
    for r in evs {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        write_event(w, r, pid(r.ctx))?;
    }
    write!(
        w,
        "], \"displayTimeUnit\": \"ms\", \"otherData\": {{\"producer\": \"oxnet\", \"version\": \"{}\"}}}}",
        env!("CARGO_PKG_VERSION")
    )
}

/// A JSON string.
fn jstr(w: &mut dyn Write, s: &str) -> std::io::Result<()> {
    serde_json::to_writer(w, s).map_err(std::io::Error::from)
}

/// One trace event as a JSON object.
fn write_event(w: &mut dyn Write, r: &Record, pid: usize) -> std::io::Result<()> {
    w.write_all(b"{\"name\": ")?;
    jstr(w, &r.full_name())?;
    w.write_all(b", \"cat\": ")?;
    jstr(w, &category(r))?;
    write!(
        w,
        ", \"ts\": {}, \"pid\": {pid}, \"tid\": {}",
        us(r.start_ns),
        r.tid
    )?;
    match r.kind {
        Kind::Operator | Kind::Api | Kind::Task | Kind::Frame | Kind::Event => {
            write!(w, ", \"ph\": \"X\", \"dur\": {}", us(r.dur_ns))?;
            let mut args = Vec::new();
            if let Some(sh) = &r.shapes {
                let v: Vec<String> = sh.iter().map(|s| fmt_shape(s)).collect();
                args.push(format!("\"input_shapes\": {}", Value::from(v)));
            }
            if let Some(op) = r.detail {
                args.push(format!("\"operator\": {}", Value::from(op)));
            }
            if r.kind == Kind::Frame {
                args.push("\"frame\": true".to_string());
            }
            if !args.is_empty() {
                write!(w, ", \"args\": {{{}}}", args.join(", "))?;
            }
        }
        Kind::Counter => {
            w.write_all(b", \"ph\": \"C\", \"args\": {")?;
            jstr(w, r.name.as_str())?;
            write!(w, ": {}}}", r.value)?;
        }
        Kind::Memory => {
            write!(
                w,
                ", \"ph\": \"C\", \"args\": {{\"bytes_in_use\": {}}}",
                r.value
            )?;
        }
        Kind::Marker => {
            let s = match r.mark.unwrap_or(MarkScope::Process) {
                MarkScope::Global => "g",
                MarkScope::Process => "p",
                MarkScope::Thread => "t",
            };
            write!(w, ", \"ph\": \"i\", \"s\": \"{s}\"")?;
        }
    }
    w.write_all(b"}")
}
