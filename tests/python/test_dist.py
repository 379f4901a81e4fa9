"""Distributed training over MPI (kvstore 'dist_sync' / 'horovod',
oxnet.horovod, the launcher): each test starts 2 workers on loopback with
``mpirun -np 2 --oversubscribe`` (plus ``--allow-run-as-root`` as root) running
tests/python/dist_worker.py, with a timeout, and reads what they print.
Skipped, with the reason, when Open MPI or mpi4py is missing (``make test``
installs them)."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "dist_worker.py")
TIMEOUT = 120  # seconds; a hang fails the test instead of blocking the suite


def _missing():
    if shutil.which("mpirun") is None:
        return "Open MPI's mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py)"
    return None


needs_mpi = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["OMPI_MCA_orte_base_help_aggregate"] = "0"
    return env


def _mpirun(mode, np_=2, env=None):
    full_env = _env()
    full_env.update(env or {})
    cmd = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [sys.executable, WORKER, mode]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=full_env, cwd=ROOT)


def _passed(proc, mode, ranks=2):
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for r in range(ranks):
        assert "PASS %s rank %d" % (mode, r) in proc.stdout, out[-4000:]


@needs_mpi
@pytest.mark.parametrize("fusion,engine", [("default", "1"), ("4096", "1"), ("4096", "0")])
def test_collectives_rank_init_dtypes_and_mismatch(fusion, engine):
    """rank/num_workers, init broadcasts rank 0's value, push sums over
    workers, int collectives exact (1 element to 2 MB), engine ordering, a
    shape mismatch raises on every rank, dist_async refused, optimizer states;
    with the default fusion buffer and with 4 KB ones (many buffers a round),
    collectives as engine operations (where the extension has them) and on
    the calling thread (OXNET_DIST_ENGINE=0)."""
    env = {"OXNET_DIST_ENGINE": engine}
    if fusion != "default":
        env["OXNET_FUSION_THRESHOLD"] = fusion
    proc = _mpirun("collectives", env=env)
    _passed(proc, "collectives")
    assert "MISMATCH-RAISED rank 0" in proc.stdout and "MISMATCH-RAISED rank 1" in proc.stdout


@needs_mpi
def test_gluon_trainer_two_halves_match_one_whole_batch():
    """gluon.Trainer with kvstore='dist_sync' (update on the store) and
    'horovod' (local update): 2 workers x 8 samples == 1 worker x 16, step
    by step, starting from rank 0's broadcast weights."""
    _passed(_mpirun("trainer"), "trainer")


@needs_mpi
def test_horovod_api_through_the_launcher():
    """oxnet.horovod: broadcast_parameters, DistributedTrainer,
    DistributedOptimizer (updater and Trainer), allreduce/allgather/
    broadcast/objects, fp16; started by python -m oxnet.tools.launch."""
    cmd = [sys.executable, "-m", "oxnet.tools.launch", "-n", "2", WORKER, "horovod"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=_env(), cwd=ROOT)
    _passed(proc, "horovod")


@needs_mpi
def test_a_worker_that_raises_stops_the_job():
    proc = _mpirun("raise")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "rank 1 of 2 failed with RuntimeError: worker 1 failed on purpose" in out, out[-3000:]
    assert "UNREACHABLE" not in out


@needs_mpi
def test_a_killed_worker_stops_the_job():
    proc = _mpirun("kill")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "rank 1" in out and "signal 9" in out, out[-3000:]
    assert "UNREACHABLE" not in out


@needs_mpi
def test_a_worker_that_ends_early_stops_the_job():
    """Rank 1 runs 2 steps, rank 0 five: rank 1's exit meets rank 0's third
    push in the agreement check, and the job ends with an error instead of
    rank 0 waiting forever."""
    proc = _mpirun("early_exit")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "STEPS-DONE rank 0" not in out, out[-3000:]
    assert "rank 1 of 2 ended its script while other ranks still wait" in out, out[-3000:]


def test_launcher_builds_the_mpirun_command():
    from oxnet.tools import launch

    args = launch._parser().parse_args(["-n", "4", "-H", "h1:2,h2:2", "--env", "A:1", "--env", "B",
                                        "--mpirun", "/x/mpirun", "train.py", "--lr", "0.1"])
    cmd = launch.build_command(args, environ={"OXNET_X": "1", "HOME": "/root"})
    assert cmd[:5] == ["/x/mpirun", "-np", "4", "--oversubscribe", "--bind-to"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert cmd[cmd.index("-H") + 1] == "h1:2,h2:2"
    assert "A=1" in cmd and "OXNET_X" in cmd and "B" in cmd and "HOME" not in cmd
    assert cmd[-4:] == [sys.executable, "train.py", "--lr", "0.1"]


@needs_mpi
def test_dist_sync_in_one_process_is_a_world_of_one():
    import numpy as np
    import oxnet as mx

    kv = mx.kv.create("dist_sync")
    assert (kv.rank, kv.num_workers, kv.type) == (0, 1, "dist_sync")
    kv.init(0, mx.nd.ones((2, 2)))
    kv.push(0, [mx.nd.ones((2, 2)), mx.nd.ones((2, 2)) * 2])
    out = mx.nd.zeros((2, 2))
    kv.pull(0, out=out)
    assert np.allclose(out.asnumpy(), 3)
    assert not mx.kv.create("horovod").is_capable("optimizer")


def test_split_sampler_and_ndarrayiter_parts():
    import numpy as np
    import oxnet as mx

    parts = [list(mx.gluon.data.SplitSampler(10, 3, i)) for i in range(3)]
    assert parts == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert sorted(mx.gluon.data.SplitSampler(10, 2, 1, shuffle=True)) == [5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="part_index"):
        mx.gluon.data.SplitSampler(10, 2, 2)
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    it = mx.io.NDArrayIter(x, np.arange(10), batch_size=3, num_parts=2, part_index=1, last_batch_handle="discard")
    got = np.concatenate([b.data[0].asnumpy() for b in it])
    assert np.array_equal(got, x[5:8])
    with pytest.raises(ValueError, match="num_parts"):
        mx.io.NDArrayIter(x, batch_size=2, num_parts=11)
