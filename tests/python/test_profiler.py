"""mx.profiler: Chrome traces, aggregate table, scopes and profiling objects.
Checks event counts, nesting and JSON validity, never timings."""
import collections
import json
import os
import subprocess
import sys
import textwrap

import pytest

import oxnet as mx
from oxnet import profiler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def trace_file(tmp_path):
    """A configured, stopped profiler writing to a temp file; state cleaned after."""
    path = str(tmp_path / "trace.json")
    profiler.set_state("stop")
    profiler.resume()
    profiler.set_config(filename=str(tmp_path / "earlier.json"))
    profiler.dump(finished=True)  # drop events of earlier tests
    profiler.dumps(reset=True)
    yield path
    profiler.set_state("stop")
    profiler.resume()
    profiler.set_config(filename=str(tmp_path / "leftover.json"))
    profiler.dump(finished=True)
    profiler.dumps(reset=True)


def load(path):
    with open(path) as f:
        return json.load(f)


def xevents(doc, name):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"] == name]


def test_trace_counts_metadata_and_shapes(trace_file):
    profiler.set_config(profile_all=True, filename=trace_file, aggregate_stats=True)
    profiler.set_state("run")
    a = mx.nd.ones((10, 10))
    for _ in range(20):
        a = a + 1
    b = mx.nd.ones((3, 4)) * 2
    profiler.set_state("stop")
    assert a.asnumpy()[0, 0] == 21
    profiler.dump()
    doc = load(trace_file)
    evs = doc["traceEvents"]
    plus = xevents(doc, "_plus_scalar")
    assert len(plus) == 20
    for e in plus:
        assert e["cat"] == "operator"
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert e["args"]["input_shapes"] == ["(10, 10)"]
    assert len(xevents(doc, "_mul_scalar")) == 1
    procs = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs[plus[0]["pid"]] == "cpu/0"
    threads = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in evs:
        if e["ph"] != "M":
            assert (e["pid"], e["tid"]) in threads
    # profile_api: one front-end call per operator invocation, naming it.
    api = [e for e in xevents(doc, "MXImperativeInvoke") if e["args"]["operator"] == "_plus_scalar"]
    assert len(api) == 20
    # profile_memory: pool counters.
    mem = [e for e in evs if e["ph"] == "C" and e["cat"] == "memory"]
    assert mem and all(e["args"]["bytes_in_use"] >= 0 for e in mem)
    del b


def test_engine_worker_threads_are_named(trace_file):
    profiler.set_config(profile_imperative=True, filename=trace_file)
    profiler.set_state("run")
    x = mx.nd.ones((512, 512))  # large: runs on an engine worker, not inline
    for _ in range(4):
        x = x * 1.5
    x.wait_to_read()
    profiler.set_state("stop")
    profiler.dump()
    doc = load(trace_file)
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    muls = xevents(doc, "_mul_scalar")
    assert len(muls) == 4
    if mx.engine.engine_type() == "ThreadedEnginePerDevice":
        assert any(names[(e["pid"], e["tid"])].startswith("oxnet-cpu0-worker") for e in muls)


def test_pause_resume_and_stop(trace_file):
    profiler.set_config(filename=trace_file)
    profiler.set_state("run")
    a = mx.nd.ones((2, 2))
    with profiler.scope("before"):
        a = a + 1
    profiler.pause()
    with profiler.scope("paused"):
        a = a + 1
    profiler.resume()
    with profiler.scope("resumed"):
        a = a + 1
    profiler.set_state("stop")
    with profiler.scope("stopped"):
        a = a + 1
    a.wait_to_read()
    profiler.dump()
    doc = load(trace_file)
    assert len(xevents(doc, "before:_plus_scalar")) == 1
    assert len(xevents(doc, "paused:_plus_scalar")) == 0
    assert len(xevents(doc, "resumed:_plus_scalar")) == 1
    assert len(xevents(doc, "stopped:_plus_scalar")) == 0


def test_scope_prefix_nesting_and_append_mode(trace_file):
    profiler.set_config(filename=trace_file, aggregate_stats=True)
    profiler.set_state("run")
    a = mx.nd.ones((4,))
    with profiler.scope("outer") as s:
        assert s == "outer:"
        a = a + 1
        with profiler.scope("inner:"):
            a = a * 2
        with profiler.scope("inner", append_mode=True) as s2:
            assert s2 == "outer:inner:"
            a = a - 1
        a = a / 1
    a = a + 0
    profiler.set_state("stop")
    profiler.dump()
    doc = load(trace_file)
    assert len(xevents(doc, "outer:_plus_scalar")) == 1
    assert len(xevents(doc, "inner:_mul_scalar")) == 1
    assert len(xevents(doc, "outer:inner:_minus_scalar")) == 1
    assert len(xevents(doc, "outer:_div_scalar")) == 1
    assert len(xevents(doc, "_plus_scalar")) == 1  # outside every scope: no prefix
    table = profiler.dumps()
    assert "outer:inner:_minus_scalar" in table


def test_objects_nesting_counter_marker(trace_file):
    profiler.set_config(profile_all=True, filename=trace_file)
    profiler.set_state("run")
    dom = profiler.Domain("my_domain")
    task = profiler.Task(dom, "step")
    frame = dom.new_frame("frame")
    ev = profiler.Event("custom event")
    counter = profiler.Counter(dom, "items", value=3)
    counter += 4
    counter -= 2
    counter.increment(10)
    counter.decrement()
    counter.set_value(100)
    marker = profiler.Marker(dom, "mark")
    task.start()
    frame.start()
    ev.start()
    x = mx.nd.ones((8, 8)) + 1
    x.wait_to_read()
    marker.mark("thread")
    ev.stop()
    frame.stop()
    task.stop()
    marker.mark()  # 'process'
    marker.mark(scope="global")
    with pytest.raises(mx.MXNetError):
        marker.mark("galaxy")
    profiler.set_state("stop")
    profiler.dump()
    doc = load(trace_file)
    (t,) = xevents(doc, "step")
    (f,) = xevents(doc, "frame")
    (e,) = xevents(doc, "custom event")
    (op,) = xevents(doc, "_plus_scalar")
    assert t["cat"] == "my_domain" and f["cat"] == "my_domain"
    end = lambda z: z["ts"] + z["dur"]  # noqa: E731
    assert t["ts"] <= f["ts"] <= e["ts"] <= op["ts"]
    assert end(op) <= end(e) <= end(f) <= end(t)
    assert t["dur"] > 0
    values = [c["args"]["items"] for c in doc["traceEvents"] if c["ph"] == "C" and c["name"] == "items"]
    assert values == [3, 7, 5, 15, 14, 100]
    assert counter.value == 100
    marks = [m["s"] for m in doc["traceEvents"] if m["ph"] == "i" and m["name"] == "mark"]
    assert marks == ["t", "p", "g"]


def test_objects_do_not_record_when_stopped(trace_file):
    profiler.set_config(filename=trace_file)
    dom = profiler.Domain("quiet")
    t = profiler.Task(dom, "idle")
    t.start()
    t.stop()
    profiler.Counter(dom, "c", 1)
    profiler.set_state("run")
    profiler.set_state("stop")
    profiler.dump()
    doc = load(trace_file)
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "quiet"]


def test_escaping_of_names(trace_file):
    profiler.set_config(filename=trace_file)
    profiler.set_state("run")
    weird = 'a "quoted"\\ name\n\t\u00e9'
    with profiler.Task(profiler.Domain("d\"om"), weird):
        pass
    with profiler.scope('sc"ope'):
        (mx.nd.ones((2,)) + 1).wait_to_read()
    profiler.set_state("stop")
    profiler.dump()
    doc = load(trace_file)
    (t,) = xevents(doc, weird)
    assert t["cat"] == 'd"om'
    assert len(xevents(doc, 'sc"ope:_plus_scalar')) == 1


def test_dumps_table_and_json(trace_file):
    profiler.set_config(profile_all=True, filename=trace_file, aggregate_stats=True)
    profiler.set_state("run")
    a = mx.nd.ones((5, 5))
    for _ in range(12):
        a = a + 1
    for _ in range(3):
        a = a * 1
    a.wait_to_read()
    profiler.set_state("stop")
    table = profiler.dumps(sort_by="count")
    assert "Profile Statistics" in table
    # MXNet 1.9.1's layout: one "operator" domain, its header and rules
    assert "\noperator\n=================\n" in table
    assert "Device Storage" in table
    header = next(line for line in table.splitlines() if line.startswith("Name") and "Time (ms)" in line)
    assert header == ("Name                          Total Count        Time (ms)    Min Time (ms)    "
                      "Max Time (ms)    Avg Time (ms)")
    mem = next(line for line in table.splitlines() if line.startswith("Name") and "Use" in line)
    assert mem == "Name                          Total Count    Min Use  (kB)    Max Use  (kB)    Avg Use  (kB)"
    row = next(line for line in table.splitlines() if line.startswith("_plus_scalar "))
    cols = row.split()
    assert cols[1] == "12"
    total, mn, mx_, avg = map(float, cols[2:6])
    assert mn <= avg <= mx_ <= total
    # descending by count: _plus_scalar (12) before _mul_scalar (3); ascending reverses
    assert table.index("_plus_scalar ") < table.index("_mul_scalar ")
    asc = profiler.dumps(sort_by="count", ascending=True)
    assert asc.index("_mul_scalar ") < asc.index("_plus_scalar ")
    js = json.loads(profiler.dumps(format="json"), object_pairs_hook=collections.OrderedDict)
    assert list(js) == ["Time", "Memory", "Unit"]
    assert js["Unit"] == {"Time": "ms", "Memory": "kB"}
    st = js["Time"]["operator"]["_plus_scalar"]
    assert list(st) == ["Count", "Total", "Min", "Max", "Avg"]
    assert st["Count"] == 12
    assert st["Min"] <= st["Avg"] <= st["Max"]
    # values carry MXNet's 4 significant digits
    assert abs(st["Avg"] * 12 - st["Total"]) <= 2e-3 * max(st["Total"], 1e-3)
    assert js["Time"]["MXNET_C_API"]["MXImperativeInvoke"]["Count"] >= 15
    mem = js["Memory"]["Device Storage"]
    assert all(list(v) == ["Count", "Min", "Max", "Avg"] for v in mem.values())
    # each domain's names come in the order asked for
    for key, by in (("Count", "count"), ("Total", "total"), ("Avg", "avg"), ("Min", "min"), ("Max", "max")):
        for asc in (False, True):
            js = json.loads(profiler.dumps(format="json", sort_by=by, ascending=asc),
                            object_pairs_hook=collections.OrderedDict)
            vals = [v[key] for v in js["Time"]["operator"].values()]
            assert vals == sorted(vals, reverse=not asc), (by, asc)
    # reset clears after printing
    profiler.dumps(reset=True)
    js = json.loads(profiler.dumps(format="json"))
    assert "_plus_scalar" not in js["Time"].get("operator", {})
    with pytest.raises(mx.MXNetError):
        profiler.dumps(sort_by="median")
    with pytest.raises(mx.MXNetError):
        profiler.dumps(format="xml")


def test_dumps_empty_without_aggregate_stats(trace_file):
    profiler.set_config(filename=trace_file)
    profiler.set_state("run")
    (mx.nd.ones((2,)) + 1).wait_to_read()
    profiler.set_state("stop")
    assert profiler.dumps() == ""


def test_set_config_errors(trace_file):
    with pytest.raises(TypeError):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError):
        profiler.set_config(profile_all="perhaps")
    with pytest.raises(mx.MXNetError):
        profiler.set_config(profile_process="server")
    with pytest.raises(ValueError):
        profiler.set_state("walk")
    with pytest.raises(ValueError):
        profiler.profiler_set_config(mode="everything")


def test_dump_not_finished_keeps_events(trace_file):
    profiler.set_config(filename=trace_file)
    profiler.set_state("run")
    with profiler.scope("one"):
        (mx.nd.ones((2,)) + 1).wait_to_read()
    profiler.dump(finished=False)
    with profiler.scope("two"):
        (mx.nd.ones((2,)) + 1).wait_to_read()
    profiler.dump(finished=False)
    doc = load(trace_file)
    assert len(xevents(doc, "one:_plus_scalar")) == 1
    assert len(xevents(doc, "two:_plus_scalar")) == 1
    profiler.dump(finished=True)
    profiler.dump(finished=True)
    doc = load(trace_file)
    assert not xevents(doc, "one:_plus_scalar")


def test_continuous_dump(trace_file):
    import time

    profiler.set_config(filename=trace_file, continuous_dump=True, dump_period=0.05)
    profiler.set_state("run")
    with profiler.scope("cont"):
        (mx.nd.ones((2,)) + 1).wait_to_read()
    deadline = time.time() + 10
    found = False
    while time.time() < deadline and not found:
        time.sleep(0.05)
        if os.path.exists(trace_file):
            try:
                found = bool(xevents(load(trace_file), "cont:_plus_scalar"))
            except ValueError:
                pass
    profiler.set_state("stop")
    assert found


def _run_script(tmp_path, body):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ)
    if not os.environ.get("OXNET_TEST_INSTALLED"):
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, str(script)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=120)


def test_legacy_seed_writes_file_at_exit(tmp_path):
    r = _run_script(tmp_path, """
        import oxnet as mx
        mx.profiler.profiler_set_config(mode='all', filename='x.json')
        mx.profiler.profiler_set_state('run')
        a = mx.nd.ones((3, 3))
        for _ in range(5):
            a = a * 2 + 1
        mx.profiler.profiler_set_state('stop')
    """)
    assert r.returncode == 0, r.stderr
    doc = load(str(tmp_path / "x.json"))
    assert len(xevents(doc, "_mul_scalar")) == 5
    assert len(xevents(doc, "_plus_scalar")) == 5


def test_explicit_dump_not_overwritten_at_exit(tmp_path):
    r = _run_script(tmp_path, """
        import oxnet as mx
        mx.profiler.set_config(filename='y.json')
        mx.profiler.set_state('run')
        (mx.nd.ones((2,)) + 1).wait_to_read()
        mx.profiler.set_state('stop')
        mx.profiler.dump()
    """)
    assert r.returncode == 0, r.stderr
    assert len(xevents(load(str(tmp_path / "y.json")), "_plus_scalar")) == 1


def test_no_file_when_never_run(tmp_path):
    r = _run_script(tmp_path, """
        import oxnet as mx
        mx.profiler.set_config(filename='z.json')
        (mx.nd.ones((2,)) + 1).wait_to_read()
    """)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "z.json").exists()
