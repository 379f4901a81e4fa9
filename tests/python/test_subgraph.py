"""The subgraph API: backends registered from Python partition a graph; the
partitioned symbol infers, serialises and binds like the original."""
import json

import numpy as np
import pytest

import oxnet as mx
from oxnet.symbol.subgraph import SubgraphProperty, SubgraphSelector


class ByOp(SubgraphSelector):
    """Selects a connected run of the given operators."""

    def __init__(self, ops):
        self.ops = ops

    def select(self, node):
        return node.op in self.ops

    def select_input(self, node, input_node):
        return input_node.op in self.ops

    def select_output(self, node, output_node):
        return output_node.op in self.ops


class ByOpProperty(SubgraphProperty):
    def create_selector(self):
        return ByOp(self.options.get("ops", ("FullyConnected", "Activation")))


mx.sym.register_backend("test_byop", ByOpProperty)


def net():
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu", name="r1")
    h = mx.sym.FullyConnected(h, num_hidden=4, name="fc2")
    return mx.sym.softmax(h * 2, name="out")


def bind_run(sym, arrays):
    ex = sym.simple_bind(mx.cpu(), data=(3, 5))
    for k, v in arrays.items():
        ex.arg_dict[k][:] = v
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.ones(out.shape))
    return out.asnumpy(), {k: g.asnumpy() for k, g in ex.grad_dict.items()}


def test_partitioned_graph_computes_the_same():
    s = net()
    p = s.optimize_for("test_byop")
    js = json.loads(p.tojson())
    ops = [n["op"] for n in js["nodes"]]
    assert ops.count("_CachedOp") == 1 and "FullyConnected" not in ops
    sub = [n for n in js["nodes"] if n["op"] == "_CachedOp"][0]
    assert [n["op"] for n in sub["subgraphs"][0]["nodes"] if n["op"] != "null"] == [
        "FullyConnected", "Activation", "FullyConnected"]
    assert p.list_arguments() == s.list_arguments()
    assert p.infer_shape(data=(3, 5)) == s.infer_shape(data=(3, 5))
    rng = np.random.RandomState(0)
    arrays = {n: rng.randn(*sh).astype(np.float32) for n, sh in zip(s.list_arguments(), s.infer_shape(data=(3, 5))[0])}
    out0, g0 = bind_run(s, arrays)
    out1, g1 = bind_run(p, arrays)
    np.testing.assert_allclose(out1, out0, rtol=1e-6)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-5, atol=1e-7)
    # the partitioned graph round-trips through JSON
    back = mx.sym.load_json(p.tojson())
    np.testing.assert_allclose(bind_run(back, arrays)[0], out0, rtol=1e-6)


def test_selectors_never_make_cycles():
    # a -> b -> c and a -> c: selecting {a, c} but not b would be cyclic
    x = mx.sym.var("x")
    a = mx.sym.exp(x, name="a")
    b = mx.sym.sqrt(a, name="b")
    c = mx.sym.elemwise_add(a, b, name="c")

    class P(SubgraphProperty):
        def create_selector(self):
            return ByOp(("exp", "elemwise_add"))

    mx.sym.register_backend("test_cycle", P)
    p = c.optimize_for("test_cycle")
    xv = np.linspace(0.1, 1, 4).astype(np.float32)
    got = p.eval(x=mx.nd.array(xv))[0].asnumpy()
    np.testing.assert_allclose(got, np.exp(xv) + np.sqrt(np.exp(xv)), rtol=1e-6)


def test_filter_options_and_shapes_reach_the_selector():
    seen = {}

    class Sel(ByOp):
        def filter(self, candidates):
            seen.setdefault("names", [c.name for c in candidates])
            seen.setdefault("shapes", [c.shapes for c in candidates])
            return [c for c in candidates if c.op == "FullyConnected"][:1]

    class P(SubgraphProperty):
        def create_selector(self):
            return Sel(self.options["ops"])

    mx.sym.register_backend("test_filter", P)
    s = net()
    args = {"data": mx.nd.ones((3, 5))}
    p = s.optimize_for("test_filter", args=args, ops=("FullyConnected", "Activation"))
    assert seen["names"] == ["fc1", "r1", "fc2"]
    assert seen["shapes"][0] == [(3, 8)]
    js = json.loads(p.tojson())
    assert sum(n["op"] == "_CachedOp" for n in js["nodes"]) == 2  # fc1 alone, then fc2 alone
    with pytest.raises(ValueError, match="unknown backend"):
        s.optimize_for("no_such_backend")


def test_builtin_fusion_backend_groups_elementwise_chains():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(mx.sym.tanh(mx.sym.exp(x * 0.5) + 1), num_hidden=3, name="fc")
    p = y.get_backend_symbol("oxnet_fuse")
    js = json.loads(p.tojson())
    sub = [n for n in js["nodes"] if n["op"] == "_CachedOp"]
    assert len(sub) == 1
    assert [n["op"] for n in sub[0]["subgraphs"][0]["nodes"] if n["op"] != "null"] == [
        "_mul_scalar", "exp", "_plus_scalar", "tanh"]
    xv = np.random.RandomState(1).randn(2, 4).astype(np.float32)
    args = {"x": mx.nd.array(xv), "fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.zeros((3,))}
    np.testing.assert_allclose(p.eval(**args)[0].asnumpy(), y.eval(**args)[0].asnumpy(), rtol=1e-6)
    assert "oxnet_fuse" in mx.sym.subgraph.list_backends()


def test_subgraph_with_auxiliary_states():
    d = mx.sym.var("data")
    bn = mx.sym.BatchNorm(mx.sym.FullyConnected(d, num_hidden=4, name="fc"), name="bn")

    class P(SubgraphProperty):
        def create_selector(self):
            return ByOp(("FullyConnected", "BatchNorm"))

    mx.sym.register_backend("test_aux", P)
    p = bn.optimize_for("test_aux")
    assert p.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    ex = p.simple_bind(mx.cpu(), data=(6, 3))
    ex.arg_dict["data"][:] = np.arange(18, dtype=np.float32).reshape(6, 3)
    ex.arg_dict["fc_weight"][:] = 1
    ex.arg_dict["bn_gamma"][:] = 1
    ex.forward(is_train=True)
    assert abs(ex.aux_dict["bn_moving_mean"].asnumpy()).sum() > 0


def test_hybridize_with_a_backend_partitions_the_cached_graph():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(4, activation="tanh"), mx.gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).randn(3, 5))
    ref = net(x).asnumpy()
    net.hybridize(backend="test_byop", ops=("FullyConnected", "Activation"))
    out = net(x)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    ops = [n["op"] for n in json.loads(net._cached_op._sym.tojson())["nodes"]]
    assert "_CachedOp" in ops and "FullyConnected" not in ops


def test_partitioning_twice_keeps_the_first_subgraphs():
    s = net()
    once = s.optimize_for("test_byop", ops=("FullyConnected",))
    twice = once.optimize_for("oxnet_fuse")
    x = {"data": mx.nd.ones((3, 5)), "fc1_weight": mx.nd.ones((8, 5)), "fc1_bias": mx.nd.zeros((8,)),
         "fc2_weight": mx.nd.ones((4, 8)), "fc2_bias": mx.nd.zeros((4,))}
    np.testing.assert_allclose(twice.eval(**x)[0].asnumpy(), s.eval(**x)[0].asnumpy(), rtol=1e-6)
