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
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
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

/// The trace document for the given per-thread events.
pub(crate) fn chrome_trace(per_thread: &[(Arc<ThreadBuf>, Vec<Record>)]) -> Value {
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

    let mut out: Vec<Value> = Vec::new();
    for (k, p) in &pid_of {
        out.push(json!({"name": "process_name", "ph": "M", "pid": p,
                        "args": {"name": device_name(ctx_of[k])}}));
        out.push(json!({"name": "process_sort_index", "ph": "M", "pid": p,
                        "args": {"sort_index": p}}));
    }
    let mut threads: BTreeSet<(usize, u32)> = BTreeSet::new();
    for (tb, evs) in per_thread {
        for r in evs {
            if threads.insert((pid(r.ctx), tb.tid)) {
                out.push(
                    json!({"name": "thread_name", "ph": "M", "pid": pid(r.ctx), "tid": tb.tid,
                                "args": {"name": tb.name}}),
                );
            }
        }
    }

    let mut evs: Vec<&Record> = per_thread.iter().flat_map(|(_, e)| e.iter()).collect();
    evs.sort_by_key(|r| (r.start_ns, std::cmp::Reverse(r.dur_ns)));
    for r in evs {
        let mut e = Map::new();
        e.insert("name".into(), Value::String(r.full_name()));
        e.insert("cat".into(), Value::String(category(r)));
        e.insert("ts".into(), json!(us(r.start_ns)));
        e.insert("pid".into(), json!(pid(r.ctx)));
        e.insert("tid".into(), json!(r.tid));
        match r.kind {
            Kind::Operator | Kind::Api | Kind::Task | Kind::Frame | Kind::Event => {
                e.insert("ph".into(), json!("X"));
                e.insert("dur".into(), json!(us(r.dur_ns)));
                let mut args = Map::new();
                if let Some(sh) = &r.shapes {
                    let v: Vec<Value> = sh.iter().map(|s| Value::String(fmt_shape(s))).collect();
                    args.insert("input_shapes".into(), Value::Array(v));
                }
                if let Some(op) = r.detail {
                    args.insert("operator".into(), json!(op));
                }
                if r.kind == Kind::Frame {
                    args.insert("frame".into(), json!(true));
                }
                if !args.is_empty() {
                    e.insert("args".into(), Value::Object(args));
                }
            }
            Kind::Counter => {
                e.insert("ph".into(), json!("C"));
                let mut args = Map::new();
                args.insert(r.name.as_str().to_string(), json!(r.value));
                e.insert("args".into(), Value::Object(args));
            }
            Kind::Memory => {
                e.insert("ph".into(), json!("C"));
                e.insert("args".into(), json!({"bytes_in_use": r.value}));
            }
            Kind::Marker => {
                e.insert("ph".into(), json!("i"));
                let s = match r.mark.unwrap_or(MarkScope::Process) {
                    MarkScope::Global => "g",
                    MarkScope::Process => "p",
                    MarkScope::Thread => "t",
                };
                e.insert("s".into(), json!(s));
            }
        }
        out.push(Value::Object(e));
    }
    json!({
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "oxnet", "version": env!("CARGO_PKG_VERSION")}
    })
}
