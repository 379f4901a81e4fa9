"""mx.viz: print_summary's table and plot_network's digraph are MXNet 1.9.1's.

The golden tables and graphviz sources in tests/data/golden_viz/ were written
by the real MXNet 1.9.1 (with graphviz 0.8.4) from the networks in
tests/data/viz_nets.py (tests/data/make_viz_golden.py)."""
import contextlib
import importlib.util
import io
import os
import re
import sys
import warnings

import numpy as np
import pytest

import oxnet as mx

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
GOLDEN = os.path.join(DATA, "golden_viz")
sys.path.insert(0, DATA)
import viz_nets  # noqa: E402

HAVE_GRAPHVIZ = importlib.util.find_spec("graphviz") is not None
needs_graphviz = pytest.mark.skipif(not HAVE_GRAPHVIZ, reason="the 'graphviz' Python package is not installed "
                                                               "(pip install graphviz) so plot_network cannot run")


def nets():
    with mx.name.NameManager():
        return viz_nets.build(mx)


def summary(sym, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert mx.viz.print_summary(sym, **kwargs) is None
    return buf.getvalue()


def golden(fname):
    with open(os.path.join(GOLDEN, fname)) as f:
        return f.read()


def test_namespaces():
    assert mx.viz is mx.visualization
    assert mx.viz.print_summary is mx.visualization.print_summary


@pytest.mark.parametrize("net", [f.__name__ for f in viz_nets.NETS])
@pytest.mark.parametrize("variant", [v for v, _ in viz_nets.SUMMARIES])
def test_print_summary_is_mxnets_table(net, variant):
    sym, shapes = nets()[net]
    kwargs = dict(viz_nets.SUMMARIES)[variant](shapes)
    assert summary(sym, **kwargs) == golden("%s_%s.txt" % (net, variant))


def test_print_summary_inline_golden():
    # MXNet 1.9.1's table for a small net, as printed (column edges 24/40/50/60)
    d = mx.sym.var("data")
    x = mx.sym.Convolution(d, kernel=(3, 3), num_filter=4, name="c")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.FullyConnected(x, num_hidden=5, name="fc")
    text = summary(x, shape={"data": (2, 3, 6, 6)}, line_length=60, positions=[24, 40, 50, 60])
    expected = (
        "____________________________________________________________\n"
        "Layer (type)            Output Shape    Param #   Previous L\n"
        "============================================================\n"
        "data(null)              3x6x6           0                   \n"
        "____________________________________________________________\n"
        "c(Convolution)          4x4x4           112       data      \n"
        "____________________________________________________________\n"
        "bn(BatchNorm)           4x4x4           8         c         \n"
        "____________________________________________________________\n"
        "fc(FullyConnected)      5               25        bn        \n"
        "============================================================\n"
        "Total params: 145\n"
        "____________________________________________________________\n")
    assert text == expected


def test_print_summary_bad_input():
    sym, shapes = nets()["mlp"]
    with pytest.raises(TypeError, match="print_summary: symbol must be"):
        mx.viz.print_summary("not a symbol")
    with pytest.raises(ValueError, match="Input shape is incomplete"):
        mx.viz.print_summary(sym, shape={})
    with pytest.raises(mx.MXNetError, match="'nothere' is not an input"):
        mx.viz.print_summary(sym, shape={"nothere": (1, 2)})
    with pytest.raises(mx.MXNetError, match="FullyConnected"):
        mx.viz.print_summary(sym, shape={"data": (2, 3), "fc1_weight": (5, 5)})


# ------------------------------------------------------------------ plots
_STMT = re.compile(r'^\t("(?:[^"\\]|\\.)*"|[^\s"]+)(?: -> ("(?:[^"\\]|\\.)*"|[^\s"]+))? \[(.*?)\]$', re.M | re.S)
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s"\]]+)')


def parse_dot(source):
    """Nodes and edges of a graphviz source, in order, with their attributes
    unquoted (so that graphviz packages that quote differently compare equal)."""
    unq = lambda s: s[1:-1] if s.startswith('"') else s
    out = []
    for a, b, attrs in _STMT.findall(source):
        kv = {k: unq(v) for k, v in _ATTR.findall(attrs)}
        out.append(("edge", unq(a), unq(b), kv) if b else ("node", unq(a), kv))
    return out


@needs_graphviz
@pytest.mark.parametrize("net", [f.__name__ for f in viz_nets.NETS])
@pytest.mark.parametrize("variant", [v for v, _ in viz_nets.PLOTS])
def test_plot_network_is_mxnets_digraph(net, variant):
    sym, shapes = nets()[net]
    dot = mx.viz.plot_network(sym, **dict(viz_nets.PLOTS)[variant](shapes, np))
    text = golden("%s_%s.gv" % (net, variant))
    header, source = text.split("\n", 1)
    assert header == "// name=%s format=%s" % (dot.name, dot.format)
    expected = parse_dot(source)
    assert expected, "golden file did not parse"
    assert parse_dot(dot.source) == expected


@needs_graphviz
def test_plot_network_details():
    sym, shapes = nets()["convnet"]
    dot = mx.viz.plot_network(sym, shape=shapes)
    items = parse_dot(dot.source)
    nodes = {n[1]: n[2] for n in items if n[0] == "node"}
    assert nodes["conv2"]["label"] == "Convolution\n3x3/2x2, 16" and nodes["conv2"]["fillcolor"] == "#fb8072"
    assert nodes["data"]["shape"] == "oval" and nodes["bn1"]["fillcolor"] == "#bebada"
    assert not any(k.endswith(("_weight", "_bias", "_gamma", "_moving_var")) for k in nodes)
    edges = {(e[1], e[2]): e[3]["label"] for e in items if e[0] == "edge"}
    assert edges[("pool1", "tanh1")] == "20x24x24" and edges[("flat", "gpool")] == "16x1x1"
    # hide_weights=False: edges to the parameters are drawn (to plain nodes)
    shown = parse_dot(mx.viz.plot_network(sym, hide_weights=False).source)
    assert ("edge", "conv1", "conv1_weight", {"label": "", "arrowtail": "open", "dir": "back"}) in shown
    assert "conv1_weight" not in {n[1] for n in shown if n[0] == "node"}


@needs_graphviz
def test_plot_network_multi_output_edges():
    # each edge carries the shape of the output it uses (MXNet 1.9.1 raises KeyError for topk here)
    d = mx.sym.var("d")
    t = mx.sym.topk(d, k=2, ret_typ="both", name="tk")
    s = mx.sym.split(d, num_outputs=2, axis=1, name="sp")
    v = mx.sym.BatchNorm(mx.sym.var("x"), output_mean_var=True, name="bn")  # outputs (2, 5, 3), (5,), (5,)
    y = mx.sym.Group([t[0] + s[0], t[1] * s[1], mx.sym.exp(v[0], name="e0"), mx.sym.exp(v[1], name="e1")])
    items = parse_dot(mx.viz.plot_network(y, shape={"d": (2, 4), "x": (2, 5, 3)},
                                        dtype={"d": np.float32, "x": np.float32}).source)
    edges = {(e[1], e[2]): e[3]["label"] for e in items if e[0] == "edge"}
    assert edges[("_plus0", "tk")] == "2(float32)" and edges[("_mul0", "sp")] == "2(float32)"
    assert edges[("tk", "d")] == "4(float32)"
    assert edges[("e0", "bn")] == "5x3(float32)" and edges[("e1", "bn")] == "(float32)"


@needs_graphviz
def test_plot_network_warns_on_repeated_names():
    net = mx.sym.var("data")
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=12)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=10)
    net = mx.sym.SoftmaxOutput(net, name="out")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dot = mx.viz.plot_network(net, shape={"data": (100, 200)}, dtype={"data": np.float32},
                                  node_attrs={"fixedsize": "false"})
    assert len(w) == 1 and w[0].category is RuntimeWarning
    assert "There are multiple variables with the same name in your graph" in str(w[0].message)
    assert "Repeated names: fc,fc_bias,fc_weight" in str(w[0].message)
    assert dot.source.count("fixedsize=false") == 6


@needs_graphviz
def test_plot_network_bad_input():
    sym, _ = nets()["mlp"]
    with pytest.raises(TypeError, match="plot_network: symbol must be"):
        mx.viz.plot_network(mx.nd.ones((2,)))
    with pytest.raises(ValueError, match="Input shape is incomplete"):
        mx.viz.plot_network(sym, shape={})
    with pytest.raises(TypeError, match="dtype must be a dict"):
        mx.viz.plot_network(sym, dtype=np.float32)


def test_plot_network_without_graphviz_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # makes `import graphviz` raise ImportError
    sym, _ = nets()["mlp"]
    with pytest.raises(ImportError, match="requires the 'graphviz' Python package"):
        mx.viz.plot_network(sym)
