"""Engine invariants seen from Python: ordering under concurrency, errors as
values, waitall, fork, exit, both engines."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def _random_program(rng, n_vars, n_ops):
    prog = []
    for _ in range(n_ops):
        kind = rng.integers(0, 4)
        dst = int(rng.integers(0, n_vars))
        a = int(rng.integers(0, n_vars))
        b = int(rng.integers(0, n_vars))
        c = float(rng.integers(1, 4))
        prog.append((int(kind), dst, a, b, c))
    return prog


def _run_nd(prog, arrays):
    """Run a random program on a list of NDArrays (or NumPy arrays)."""
    for kind, dst, a, b, c in prog:
        if kind == 0:
            arrays[dst] = arrays[a] + arrays[b]
        elif kind == 1:
            arrays[dst] = arrays[a] * 0.5 - c
        elif kind == 2:
            arrays[dst][:] = arrays[a] * 0.25  # in-place write into an existing array
        else:
            arrays[dst] += arrays[b] * 0.125


# The program reads the same for NDArrays and NumPy arrays.
_run_np = _run_nd


def test_random_programs_from_four_threads_match_numpy():
    """4 threads each run a random program of 1500 ops over 100 variables
    (read/write sets overlap within a thread). Every result must equal the
    sequential NumPy execution of the same program."""
    results = {}
    errors = []

    def worker(tid):
        try:
            rng = np.random.default_rng(tid)
            init = [rng.uniform(-1, 1, size=(4, 3)).astype(np.float64) for _ in range(100)]
            prog = _random_program(rng, 100, 1500)
            nds = [mx.nd.array(x, dtype="float64") for x in init]
            _run_nd(prog, nds)
            nps = [x.copy() for x in init]
            _run_np(prog, nps)
            results[tid] = (nds, nps)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    mx.nd.waitall()
    for tid, (nds, nps) in results.items():
        for i, (a, b) in enumerate(zip(nds, nps)):
            np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-12, err_msg=f"thread {tid} var {i}")


@pytest.mark.parametrize("engine", ["NaiveEngine", "ThreadedEnginePerDevice"])
def test_both_engines_give_identical_results(engine, tmp_path):
    pkg = "" if os.environ.get("OXNET_TEST_INSTALLED") else os.path.join(os.path.dirname(HERE), "..", "python")
    script = f"""
import sys
if {pkg!r}:
    sys.path.insert(0, {pkg!r})
sys.path.insert(0, {HERE!r})
import numpy as np, oxnet as mx
from test_engine import _random_program, _run_nd
assert mx.engine.engine_type() == {engine!r}, mx.engine.engine_type()
rng = np.random.default_rng(7)
init = [rng.uniform(-1, 1, size=(3, 3)) for _ in range(200)]
prog = _random_program(rng, 200, 3000)
nds = [mx.nd.array(x, dtype='float64') for x in init]
_run_nd(prog, nds)
np.save({str(tmp_path / 'out.npy')!r}, np.stack([a.asnumpy() for a in nds]))
"""
    env = dict(os.environ, OXNET_ENGINE_TYPE=engine)
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    got = np.load(tmp_path / "out.npy")
    rng = np.random.default_rng(7)
    init = [rng.uniform(-1, 1, size=(3, 3)) for _ in range(200)]
    from test_engine import _random_program as rp, _run_np

    prog = rp(rng, 200, 3000)
    nps = [x.copy() for x in init]
    _run_np(prog, nps)
    np.testing.assert_allclose(got, np.stack(nps), rtol=1e-12)


def test_mxnet_engine_variable_accepted():
    out = subprocess.run(
        [sys.executable, "-c", "import oxnet as mx; print(mx.engine.engine_type())"],
        env=dict(os.environ, MXNET_ENGINE_TYPE="NaiveEngine"),
        capture_output=True, text=True, check=True, timeout=60,
    )
    assert out.stdout.strip() == "NaiveEngine"


_FORK_SCRIPT = """
import os, signal, sys
import numpy as np
import oxnet as mx

def work():
    # large enough for the kernel pool (and a parallel GEMM)
    x = mx.nd.ones((4000000,)) * 3
    x.wait_to_read()
    d = mx.nd.dot(mx.nd.ones((300, 300)), mx.nd.ones((300, 300)))
    return bool((x.asnumpy() == 3).all()) and float(d.asnumpy()[7, 9]) == 300.0

assert work()
pid = os.fork()
if pid == 0:
    signal.alarm(30)  # a hung child dies instead of hanging the suite
    try:
        ok = work()
    except BaseException:
        os._exit(4)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    sys.exit("child killed by signal %d (hung in its first kernel?)" % os.WTERMSIG(status))
if os.WEXITSTATUS(status) != 0:
    sys.exit("child failed with status %d" % os.WEXITSTATUS(status))
assert work()  # the parent's pools still work
"""


@pytest.mark.parametrize(
    "env",
    [{}, {"MXNET_ENGINE_TYPE": "NaiveEngine"},
     {"MXNET_ENGINE_TYPE": "NaiveEngine", "RAYON_NUM_THREADS": "1"},
     {"OXNET_CPU_WORKER_NTHREADS": "1", "RAYON_NUM_THREADS": "1"}],
    ids=["threaded", "naive", "naive-1-thread", "threaded-1-thread"],
)
def test_fork_child_gets_fresh_engine_and_pools(env):
    """After the parent ran kernels on the kernel pool, a forked child runs
    its own (fresh engine, fresh pools) instead of hanging."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True,
                       text=True, timeout=120, env=full)
    assert r.returncode == 0, r.stderr[-2000:]


def test_fork_in_process():
    """The same in this (pytest) process, with small arrays."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    a = mx.nd.ones((100, 100))
    b = a * 2
    pid = os.fork()
    if pid == 0:  # child
        try:
            import signal
            signal.alarm(30)
            c = (b + 1).asnumpy()
            os._exit(0 if c.sum() == 30000 else 3)
        except BaseException:  # noqa: BLE001
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (b + 1).asnumpy().sum() == 30000


def test_exit_with_pending_work_is_clean():
    script = (
        "import oxnet as mx\n"
        "a = mx.nd.ones((512, 512))\n"
        "for _ in range(200): a = a * 1.0001 + 0.0001\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_bulk_does_not_change_results():
    x = mx.nd.array(np.arange(12.0).reshape(3, 4))
    with mx.engine.bulk(16):
        y = x
        for _ in range(20):
            y = y * 1.5 - 1
    ref = np.arange(12.0).reshape(3, 4)
    for _ in range(20):
        ref = ref * 1.5 - 1
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5)
    assert mx.engine.set_bulk_size(0) == 0


def test_an_async_error_is_reported_once():
    """As in MXNet: an error raised at the wait on an array it reached is not
    raised again by the next waitall; one nobody waited for is, once."""
    x = mx.nd.zeros((1, 2, 4, 4))
    bad = mx.nd.array([[3, 0, 0, 1, 1]])  # batch index 3 of 1: fails in the kernel
    out = mx.nd.ROIPooling(x, bad, pooled_size=(2, 2), spatial_scale=1.0)
    downstream = out + 1
    with pytest.raises(mx.base.MXNetError, match="batch_index"):
        downstream.wait_to_read()
    mx.nd.waitall()  # reported above: nothing left
    out.wait_to_read()
    mx.nd.ROIPooling(x, bad, pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(mx.base.MXNetError, match="batch_index"):
        mx.nd.waitall()
    mx.nd.waitall()
    assert (mx.nd.ones((2,)) + 1).asnumpy().tolist() == [2, 2]
