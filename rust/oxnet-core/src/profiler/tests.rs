use super::*;
use crate::ndarray::NDArray;
use crate::ops::registry::call;
use serde_json::Value;

/// The profiler is process-global: its tests run one at a time.
static LOCK: Mutex<()> = Mutex::new(());

fn reset_all() {
    set_state(false);
    set_scope(None);
    fold_and_collect(true);
    aggregate::reset();
}

fn tmpfile(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("oxnet-prof-{}-{name}", std::process::id()));
    d.to_string_lossy().into_owned()
}

fn ops_named<'a>(v: &'a [Record], full: &str) -> Vec<&'a Record> {
    v.iter()
        .filter(|r| r.kind == Kind::Operator && r.full_name() == full)
        .collect()
}

#[test]
fn config_defaults_and_errors() {
    let c = Config::parse(&[]).unwrap();
    assert!(!c.profile_all && c.profile_imperative && c.profile_memory && c.profile_api);
    assert_eq!(c.filename, "profile.json");
    assert!(!c.aggregate_stats);
    let c = Config::parse(&[
        ("profile_all", "True"),
        ("filename", "x.json"),
        ("dump_period", "0.5"),
    ])
    .unwrap();
    assert!(c.profile_all);
    assert_eq!(c.filename, "x.json");
    assert_eq!(c.dump_period, 0.5);
    let e = Config::parse(&[("profile_everything", "True")]).unwrap_err();
    assert!(
        e.message()
            .contains("unknown argument 'profile_everything'"),
        "{e}"
    );
    let e = Config::parse(&[("profile_all", "maybe")]).unwrap_err();
    assert!(e.message().contains("profile_all must be a boolean"), "{e}");
    let e = Config::parse(&[("dump_period", "-1")]).unwrap_err();
    assert!(e.message().contains("dump_period must be positive"), "{e}");
    assert!(Config::parse(&[("profile_process", "server")]).is_err());
    assert!(Config::parse(&[("profile_process", "worker")]).is_ok());
}

#[test]
fn off_captures_nothing() {
    let _g = LOCK.lock();
    reset_all();
    assert!(capture().is_none());
    set_config(&[
        ("profile_imperative", "False"),
        ("profile_symbolic", "True"),
    ])
    .unwrap();
    set_state(true);
    assert!(capture().is_none(), "imperative profiling is off");
    assert!(objects_enabled());
    pause(true);
    assert!(!objects_enabled());
    pause(false);
    set_config(&[]).unwrap();
    assert!(capture().is_some());
    reset_all();
    assert!(capture().is_none());
}

#[test]
fn operators_are_recorded_with_scope_and_shapes() {
    let _g = LOCK.lock();
    reset_all();
    set_config(&[("aggregate_stats", "True")]).unwrap();
    set_state(true);
    set_scope(Some("t_ops:"));
    let a = NDArray::from_vec(vec![1f32; 6], &[2, 3], Context::cpu(0)).unwrap();
    let mut x = a.clone();
    for _ in 0..7 {
        x = call("_plus_scalar", &[("scalar", "1")], &[x])
            .unwrap()
            .remove(0);
    }
    let y = call("elemwise_add", &[], &[x.clone(), a.clone()])
        .unwrap()
        .remove(0);
    set_scope(None);
    // Pushed while running: recorded even though it finishes after stop.
    let z = call("_plus_scalar", &[("scalar", "1")], &[y.clone()])
        .unwrap()
        .remove(0);
    set_state(false);
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![10f32; 6]);
    set_scope(Some("t_after:"));
    let after = call("_plus_scalar", &[("scalar", "1")], &[z])
        .unwrap()
        .remove(0);
    set_scope(None);
    after.wait_to_read().unwrap();
    crate::engine::wait_idle();

    let ev = collect();
    let plus = ops_named(&ev, "t_ops:_plus_scalar");
    assert_eq!(plus.len(), 7);
    for r in &plus {
        assert_eq!(r.shapes.as_deref(), Some(&[vec![2usize, 3]][..]));
        assert_eq!(r.ctx, Context::cpu(0));
    }
    let add = ops_named(&ev, "t_ops:elemwise_add");
    assert_eq!(add.len(), 1);
    assert_eq!(add[0].shapes.as_ref().unwrap().len(), 2);
    // After stop: nothing. Outside the scope: no prefix.
    assert!(ops_named(&ev, "t_after:_plus_scalar").is_empty());
    let unscoped: Vec<_> = ops_named(&ev, "_plus_scalar")
        .into_iter()
        .filter(|r| r.shapes.as_deref() == Some(&[vec![2usize, 3]][..]))
        .collect();
    assert!(!unscoped.is_empty());
    // API records wrap the pushes on this thread.
    assert!(ev
        .iter()
        .any(|r| r.kind == Kind::Api && r.detail == Some("elemwise_add")));

    let table = dumps(false, "table", "count", false).unwrap();
    let row = table
        .lines()
        .find(|l| l.starts_with("t_ops:_plus_scalar"))
        .expect(&table);
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "7", "{row}");
    let (tot, mn, mx, avg): (f64, f64, f64, f64) = (
        cols[2].parse().unwrap(),
        cols[3].parse().unwrap(),
        cols[4].parse().unwrap(),
        cols[5].parse().unwrap(),
    );
    assert!(mn <= avg && avg <= mx && tot >= mx, "{row}");
    assert!(table.contains("\noperator\n"), "{table}");
    // Sorted by count, descending: the 7-count row comes before the 1-count row.
    let i7 = table.find("t_ops:_plus_scalar").unwrap();
    let i1 = table.find("t_ops:elemwise_add").unwrap();
    assert!(i7 < i1);
    let asc = dumps(false, "table", "count", true).unwrap();
    assert!(asc.find("t_ops:elemwise_add").unwrap() < asc.find("t_ops:_plus_scalar").unwrap());

    let js: Value = serde_json::from_str(&dumps(true, "json", "total", false).unwrap()).unwrap();
    let st = &js["Time"]["operator"]["t_ops:_plus_scalar"];
    assert_eq!(st["Count"], 7);
    assert!(st["Avg"].as_f64().unwrap() >= 0.0);
    // reset=True cleared the statistics.
    let js: Value = serde_json::from_str(&dumps(false, "json", "total", false).unwrap()).unwrap();
    assert!(js["Time"]
        .get("operator")
        .is_none_or(|s| s.get("t_ops:_plus_scalar").is_none()));
    assert!(dumps(false, "xml", "total", false).is_err());
    assert!(dumps(false, "table", "median", false).is_err());
    reset_all();
}

#[test]
fn dumps_is_empty_without_aggregate_stats() {
    let _g = LOCK.lock();
    reset_all();
    set_config(&[]).unwrap();
    set_state(true);
    record_counter("d", "c", 1);
    set_state(false);
    assert_eq!(dumps(false, "table", "total", false).unwrap(), "");
    reset_all();
}

#[test]
fn chrome_trace_is_valid_and_complete() {
    let _g = LOCK.lock();
    reset_all();
    let file = tmpfile("trace.json");
    set_config(&[
        ("profile_all", "True"),
        ("filename", &file),
        ("aggregate_stats", "True"),
    ])
    .unwrap();
    set_state(true);
    let t0 = object_start().unwrap();
    let f0 = object_start().unwrap();
    set_scope(Some("tr:"));
    let a = NDArray::from_vec(vec![0f32; 100 * 100], &[100, 100], Context::cpu(0)).unwrap();
    let b = call("_plus_scalar", &[("scalar", "2")], &[a])
        .unwrap()
        .remove(0);
    b.wait_to_read().unwrap();
    set_scope(None);
    record_counter("dom", "my counter", 5);
    record_counter("dom", "my counter", 8);
    record_marker("dom", "mark \"here\"", MarkScope::Thread);
    record_duration(Kind::Frame, Some("dom"), "frame", f0).unwrap();
    record_duration(Kind::Task, Some("dom"), "task \"quoted\" \\ name\n", t0).unwrap();
    drop(b);
    set_state(false);
    dump(true).unwrap();

    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let evs = doc["traceEvents"].as_array().unwrap();
    let procs: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .collect();
    assert!(procs.iter().any(|e| e["args"]["name"] == "cpu/0"));
    let cpu_pid = procs.iter().find(|e| e["args"]["name"] == "cpu/0").unwrap()["pid"].clone();
    let op = evs
        .iter()
        .find(|e| e["name"] == "tr:_plus_scalar")
        .expect("operator event");
    assert_eq!(op["ph"], "X");
    assert_eq!(op["cat"], "operator");
    assert_eq!(op["pid"], cpu_pid);
    assert!(op["dur"].as_f64().unwrap() >= 0.0 && op["ts"].as_f64().unwrap() >= 0.0);
    assert_eq!(op["args"]["input_shapes"][0], "(100, 100)");
    // Every X/C/i event's thread is named.
    let named: Vec<(Value, Value)> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| (e["pid"].clone(), e["tid"].clone()))
        .collect();
    for e in evs.iter().filter(|e| e["ph"] != "M") {
        assert!(named.contains(&(e["pid"].clone(), e["tid"].clone())), "{e}");
    }
    // Names survive escaping.
    let task = evs
        .iter()
        .find(|e| e["name"] == "task \"quoted\" \\ name\n")
        .expect("task");
    assert_eq!(task["cat"], "dom");
    let frame = evs.iter().find(|e| e["name"] == "frame").unwrap();
    // The task started before the frame and ended after it: it encloses it.
    let (ts, td) = (task["ts"].as_f64().unwrap(), task["dur"].as_f64().unwrap());
    let (fs, fd) = (
        frame["ts"].as_f64().unwrap(),
        frame["dur"].as_f64().unwrap(),
    );
    assert!(ts <= fs && fs + fd <= ts + td);
    // ...and the operator ran inside both.
    let (os, od) = (op["ts"].as_f64().unwrap(), op["dur"].as_f64().unwrap());
    assert!(fs <= os && os + od <= fs + fd);
    let counters: Vec<i64> = evs
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "my counter")
        .map(|e| e["args"]["my counter"].as_i64().unwrap())
        .collect();
    assert_eq!(counters, vec![5, 8]);
    let m = evs.iter().find(|e| e["name"] == "mark \"here\"").unwrap();
    assert_eq!((m["ph"].as_str(), m["s"].as_str()), (Some("i"), Some("t")));
    // profile_memory: pool counters, 40 kB allocated for the output at least.
    let mem: Vec<i64> = evs
        .iter()
        .filter(|e| e["ph"] == "C" && e["cat"] == "memory")
        .map(|e| e["args"]["bytes_in_use"].as_i64().unwrap())
        .collect();
    assert!(mem.iter().any(|&b| b >= 40_000), "{mem:?}");
    // finished=True dropped the written events: the next dump is empty of them.
    dump(true).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(!doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "frame"));
    // But the aggregate statistics kept them.
    let table = dumps(false, "table", "total", false).unwrap();
    assert!(table.contains("dom\n====="), "{table}");
    assert!(table.contains("Device Storage"), "{table}");
    // counters sit in their domain's section, as in MXNet
    assert_eq!(table.matches("dom\n=====").count(), 1, "{table}");
    let _ = std::fs::remove_file(&file);
    reset_all();
}

#[test]
fn dump_without_finished_keeps_events_and_bad_path_errors() {
    let _g = LOCK.lock();
    reset_all();
    let file = tmpfile("keep.json");
    set_config(&[("filename", &file)]).unwrap();
    set_state(true);
    record_marker("k", "first", MarkScope::Process);
    dump(false).unwrap();
    record_marker("k", "second", MarkScope::Global);
    dump(false).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(names.contains(&"first") && names.contains(&"second"));
    set_config(&[("filename", "/nonexistent-dir-oxnet/x.json")]).unwrap();
    let e = dump(true).unwrap_err();
    assert!(
        e.message()
            .contains("cannot write '/nonexistent-dir-oxnet/x.json'"),
        "{e}"
    );
    // The events were kept for a later dump.
    assert!(collect().iter().any(|r| r.name.as_str() == "second"));
    set_state(false);
    let _ = std::fs::remove_file(&file);
    reset_all();
}

#[test]
fn objects_record_only_while_running() {
    let _g = LOCK.lock();
    reset_all();
    assert!(object_start().is_none());
    record_counter("quiet", "c", 1);
    record_marker("quiet", "m", MarkScope::Process);
    assert!(!collect()
        .iter()
        .any(|r| r.domain.as_deref() == Some("quiet")));
    assert!(MarkScope::parse("task").is_err());
    assert!(record_duration(Kind::Counter, None, "x", 0).is_err());
    reset_all();
}
