"""One worker of the MPI tests in test_dist.py (run under mpirun, never
collected by pytest: the name does not start with ``test_``).

Usage: mpirun -np 2 python dist_worker.py MODE. Each mode prints
``PASS <mode> rank <r>`` when its checks hold on this rank; a failed check
raises, which aborts the whole job (see oxnet.kvstore._mpi).
"""
import os
import signal
import sys
import tempfile

import numpy as np

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import MXNetError

TOL = dict(rtol=1e-5, atol=1e-6)


def check_collectives():
    kv = mx.kv.create("dist_sync")
    r, n = kv.rank, kv.num_workers
    assert n == int(os.environ["OMPI_COMM_WORLD_SIZE"]) == 2, n
    assert r == int(os.environ["OMPI_COMM_WORLD_RANK"]), r
    assert kv.type == "dist_sync"
    # init: rank 0's value wins
    kv.init([3, 4], [mx.nd.full((2, 3), r + 1.0), mx.nd.full((7,), 10.0 * (r + 1), dtype="int32")])
    out3, out4 = mx.nd.zeros((2, 3)), mx.nd.zeros((7,), dtype="int32")
    kv.pull([3, 4], out=[out3, out4])
    assert (out3.asnumpy() == 1.0).all() and (out4.asnumpy() == 10).all()
    # push without optimizer stores the sum over workers (and local devices)
    kv.push(3, [mx.nd.full((2, 3), r + 1.0), mx.nd.full((2, 3), 0.5)])
    kv.pull(3, out=out3)
    assert np.allclose(out3.asnumpy(), 1.0 + 2.0 + 0.5 * 2), out3.asnumpy()
    # collectives on several dtypes and sizes: exact for integers (a store with str keys)
    kv = mx.kv.create("dist_sync")
    rng = np.random.RandomState(7)
    sizes = [1, 3, 1000, 1 << 19]  # 1 element to 2 MB of int32
    for dtype in ["int32", "int64", "int8", "uint8", "float32", "float64", "float16"]:
        base = [rng.randint(0, 5, size=s).astype(dtype) for s in sizes]
        arrays = [mx.nd.array(b * (r + 1), dtype=dtype) for b in base]
        keys = ["%s-%d" % (dtype, s) for s in sizes]
        kv.init(keys, [mx.nd.zeros(s, dtype=dtype) for s in sizes])
        kv.pushpull(keys, arrays)
        for b, a in zip(base, arrays):
            assert a.dtype == np.dtype(dtype)
            want = (b.astype(np.float64) * 3).astype(dtype)  # (1 + 2) * b
            assert np.array_equal(a.asnumpy(), want), (dtype, a.shape)
    # a large single array goes in place, a list goes through the fusion buffer
    big = mx.nd.full((1 << 20,), float(r + 1))  # 4 MB float32
    kv.init("big", big)
    kv.pushpull("big", big)
    assert (big.asnumpy() == 3.0).all()
    # engine ordering: pending writes land before the reduction reads them
    a = mx.nd.zeros((256, 256))
    for _ in range(20):
        a += 1
    kv.init("ordered", mx.nd.zeros((256, 256)))
    kv.pushpull("ordered", a)
    b = a * 2
    assert (b.asnumpy() == 80.0).all()
    # with the extension's host operations, collectives are engine operations: pushpull returns at once
    # and the arrays' later readers wait for it (checked above); the profiler shows them as operations
    from oxnet import _native
    from oxnet.kvstore import _mpi

    comm = _mpi.get()
    assert comm.engine == (hasattr(_native, "push_host_op") and os.environ.get("OXNET_DIST_ENGINE", "1") != "0")
    if comm.engine:
        mx.profiler.set_config(profile_all=True, aggregate_stats=True,
                               filename=os.path.join(tempfile.gettempdir(), "oxnet-dist-prof-c%d.json" % r))
        mx.profiler.set_state("run")
        x = mx.nd.ones((64,))
        kv.pushpull("ordered", mx.nd.ones((256, 256)))
        kv.init("x", x)
        kv.pushpull("x", x)
        assert (x.asnumpy() == 2).all()
        mx.profiler.set_state("stop")
        table = mx.profiler.dumps(reset=True)
        assert "allreduce" in table and "broadcast" in table, table
    # a mismatched shape raises on every rank (and the store stays usable)
    kv.init("mm", mx.nd.zeros((4,)))
    try:
        bad = mx.nd.zeros((2, 2)) if r == 0 else mx.nd.zeros((2, 3))
        kv.init("mm2", bad)  # raises here on the calling-thread path,
        got = mx.nd.zeros(bad.shape)
        kv.pull("mm2", out=got)
        got.asnumpy()  # and here, where the result is read, when the collective is an engine operation
    except MXNetError as err:
        assert "disagree" in str(err) and "(2, 3)" in str(err) and "(2, 2)" in str(err), str(err)
        print("MISMATCH-RAISED rank %d" % r)
    else:
        raise AssertionError("a mismatched shape did not raise")
    kv.barrier()
    s = mx.nd.ones((4,))
    kv.pushpull("mm", s)
    assert (s.asnumpy() == 2).all()
    # dist_async is refused
    try:
        mx.kv.create("dist_async")
    except MXNetError as err:
        assert "synchronous" in str(err)
    else:
        raise AssertionError("dist_async did not raise")
    # optimizer states: identical on every worker, saved atomically
    kv2 = mx.kv.create("dist_device_sync")
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv2.init(0, mx.nd.ones((3,)))
    kv2.push(0, mx.nd.full((3,), float(r)))
    w = mx.nd.zeros((3,))
    kv2.pull(0, out=w)
    assert np.allclose(w.asnumpy(), 1 - 0.1 * 1.0), w.asnumpy()
    fname = os.path.join(tempfile.gettempdir(), "oxnet-dist-states-%d.bin" % os.getppid())
    kv2.save_optimizer_states(fname)
    kv2.barrier()
    kv2.load_optimizer_states(fname)
    kv2.barrier()
    if r == 0:
        os.remove(fname)


def _data():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, size=(16, 5)).astype(np.float32)
    y = rng.randint(0, 3, size=16).astype(np.float32)
    return x, y


def _net(seed):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, in_units=5, activation="relu"), gluon.nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier())
    return net


def _grads(net, x, y):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        loss = loss_fn(net(mx.nd.array(x)), mx.nd.array(y))
    loss.backward()


def _same(net_a, net_b, what):
    pa, pb = net_a.collect_params(), net_b.collect_params()
    for ka, kb in zip(sorted(pa.keys()), sorted(pb.keys())):
        a, b = pa[ka].data().asnumpy(), pb[kb].data().asnumpy()
        assert np.allclose(a, b, **TOL), "%s: %s differs by %g" % (what, ka, np.abs(a - b).max())


def _half(x, rank):
    return x[rank * 8:(rank + 1) * 8]


def check_trainer():
    """Two workers on half a batch each == one worker on the whole batch."""
    x, y = _data()
    for kvname in ["dist_sync", "horovod"]:
        kv = mx.kv.create(kvname)
        r = kv.rank
        ref = _net(42)  # rank 0's initial weights: the reference starts from them
        net = _net(42 + r)  # other ranks start elsewhere: the trainer must broadcast rank 0's
        ref_tr = gluon.Trainer(ref.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9}, kvstore=None)
        tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0, "momentum": 0.9}, kvstore=kv)
        # as in MXNet, the store is made (and rank 0's weights broadcast) at the first step: a step with
        # learning rate 0 leaves every worker on rank 0's initial weights (and the momentum at 0)
        _grads(net, _half(x, r), _half(y, r))
        tr.step(16)
        _same(net, ref, "%s broadcast of rank 0's weights" % kvname)
        tr.set_learning_rate(0.5)
        for step in range(4):
            _grads(ref, x, y)
            ref_tr.step(16)
            _grads(net, _half(x, r), _half(y, r))
            tr.step(16)  # MXNet's dist_sync: gradients are summed over workers; normalize by the global batch
            _same(net, ref, "%s step %d" % (kvname, step))
        assert tr._update_on_kvstore == (kvname == "dist_sync")


def check_horovod():
    import oxnet.horovod as hvd

    hvd.init()
    r, n = hvd.rank(), hvd.size()
    assert n == 2 and hvd.local_size() == 2 and hvd.local_rank() == r
    x, y = _data()
    # broadcast_parameters gives rank 0's values
    net = _net(42 + r)
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    _same(net, _net(42), "broadcast_parameters")
    # DistributedTrainer: averages, so each worker steps with its local batch size
    ref = _net(42)
    ref_tr = gluon.Trainer(ref.collect_params(), "adam", {"learning_rate": 0.05}, kvstore=None)
    tr = hvd.DistributedTrainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    for step in range(4):
        _grads(ref, x, y)
        ref_tr.step(16)
        _grads(net, _half(x, r), _half(y, r))
        tr.step(8)
        _same(net, ref, "DistributedTrainer step %d" % step)
    # DistributedOptimizer through an updater (Module's way) and through gluon's Trainer
    for how in ["updater", "trainer"]:
        ref, net = _net(5), _net(5)
        ref_opt = mx.optimizer.SGD(learning_rate=0.3, momentum=0.9, rescale_grad=1.0 / 16)
        dopt = hvd.DistributedOptimizer(mx.optimizer.SGD(learning_rate=0.3, momentum=0.9, rescale_grad=1.0 / 8))
        ref_up, up = mx.optimizer.get_updater(ref_opt), mx.optimizer.get_updater(dopt)
        if how == "trainer":  # the Trainer sets rescale_grad (through the wrapper) to 1 / (size * batch)
            dopt = hvd.DistributedOptimizer(mx.optimizer.SGD(learning_rate=0.3, momentum=0.9))
        tr = gluon.Trainer(net.collect_params(), dopt, kvstore=None) if how == "trainer" else None
        for step in range(3):
            _grads(ref, x, y)
            _grads(net, _half(x, r), _half(y, r))
            for i, (p, q) in enumerate(zip(ref.collect_params().values(), net.collect_params().values())):
                ref_up(i, p.grad(), p.data())
                if tr is None:
                    up(i, q.grad(), q.data())
            if tr is not None:
                tr.step(8)
            _same(net, ref, "DistributedOptimizer (%s) step %d" % (how, step))
    # collectives appear in the profiler as tasks of domain oxnet.dist
    mx.profiler.set_config(profile_all=True, aggregate_stats=True,
                           filename=os.path.join(tempfile.gettempdir(), "oxnet-dist-prof-%d.json" % r))
    mx.profiler.set_state("run")
    hvd.allreduce(mx.nd.ones((100,))).wait_to_read()
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(reset=True)
    assert "mpi_allreduce" in table and "mpi_check" in table, table
    # collectives
    t = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) * (r + 1))
    avg = hvd.allreduce(t, name="t")
    assert np.allclose(avg.asnumpy(), np.arange(6).reshape(2, 3) * 1.5)
    assert np.allclose(t.asnumpy(), np.arange(6).reshape(2, 3) * (r + 1))  # unchanged
    s = hvd.allreduce_(mx.nd.full((3,), r + 1, dtype="int64"), average=False)
    assert s.asnumpy().tolist() == [3, 3, 3]
    mx_ = hvd.allreduce(mx.nd.array([r, -r]), op=hvd.Max)
    assert mx_.asnumpy().tolist() == [1, 0]
    g = hvd.allgather(mx.nd.full((r + 1, 2), r, dtype="int32"))
    assert g.shape == (3, 2) and g.asnumpy()[:, 0].tolist() == [0, 1, 1]
    a2a = hvd.alltoall(mx.nd.array(np.arange(6).reshape(3, 2) + 10 * r, dtype="int64"), splits=[1, 2] if r == 0 else [2, 1])
    want = [[0, 1], [10, 11], [12, 13]] if r == 0 else [[2, 3], [4, 5], [14, 15]]
    assert a2a.asnumpy().tolist() == want, a2a.asnumpy()
    b = hvd.broadcast(mx.nd.full((4,), r + 7.0), root_rank=1)
    assert (b.asnumpy() == 8.0).all()
    assert hvd.broadcast_object({"r": r}, root_rank=1) == {"r": 1}
    assert hvd.allgather_object(r) == [0, 1]
    # fp16 compression: exact for small integers
    h = hvd.allreduce(mx.nd.full((10,), r + 1.0, dtype="float16"), average=False)
    assert h.dtype == np.float16 and (h.asnumpy() == 3).all()
    c, ctx = hvd.Compression.fp16.compress(mx.nd.full((5,), 2.0 + r))
    hvd.allreduce_(c, average=False)
    assert hvd.Compression.fp16.decompress(c, ctx).dtype == np.float32 and (c.asnumpy() == 5).all()


def fault_raise():
    kv = mx.kv.create("dist_sync")
    kv.init(0, mx.nd.zeros((3,)))
    if kv.rank == 1:
        raise RuntimeError("worker 1 failed on purpose")
    x = mx.nd.ones((3,))
    kv.pushpull(0, x)
    x.asnumpy()  # rank 0 would wait here forever without the abort
    print("UNREACHABLE rank %d" % kv.rank)


def fault_kill():
    kv = mx.kv.create("dist_sync")
    kv.init(0, mx.nd.zeros((3,)))
    if kv.rank == 1:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    x = mx.nd.ones((3,))
    kv.pushpull(0, x)
    x.asnumpy()
    print("UNREACHABLE rank %d" % kv.rank)


def fault_early_exit():
    kv = mx.kv.create("dist_sync")
    kv.init(0, mx.nd.zeros((3,)))
    steps = 2 if kv.rank == 1 else 5  # rank 1 runs out of data first
    for _ in range(steps):
        x = mx.nd.ones((3,))
        kv.pushpull(0, x)
        x.asnumpy()  # a training loop reads its results (the loss, a metric) as it goes
    print("STEPS-DONE rank %d" % kv.rank)
    sys.stdout.flush()


MODES = {"collectives": check_collectives, "trainer": check_trainer, "horovod": check_horovod,
         "raise": fault_raise, "kill": fault_kill, "early_exit": fault_early_exit}

if __name__ == "__main__":
    mode = sys.argv[1]
    MODES[mode]()
    print("PASS %s rank %d" % (mode, int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))))
    sys.stdout.flush()
