"""Drawing and summarising symbolic networks (``mx.viz`` / ``mx.visualization``).

:func:`print_summary` prints MXNet 1.9.1's layer table (layer and type,
output shape, parameter count, previous layers; the total) and
:func:`plot_network` returns a ``graphviz.Digraph`` with MXNet's node labels,
colours and edge labels. Both read the network from ``symbol.tojson()`` and
shapes from ``symbol.get_internals().infer_shape(...)``, as MXNet does, so a
table or a drawing is the same as MXNet's for the same network.

``plot_network`` needs the ``graphviz`` Python package
(``pip install oxnet[viz]`` or ``pip install graphviz``); the Graphviz
programs are needed only to render the returned digraph to a file.
"""
from __future__ import annotations

import copy
import json
import re
import warnings

from .symbol import Symbol

__all__ = ["print_summary", "plot_network"]

# MXNet's colour map: inputs, weighted layers, activations, BatchNorm,
# pooling, shape ops, Softmax, everything else.
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")

# Variables whose names end so are parameters (hidden by ``hide_weights``).
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean", "_running_var",
                    "_running_mean")


def _digits(text):
    """The integers written in a tuple attribute such as ``'(3, 3)'``, as strings."""
    return re.findall(r"\d+", text)


def _xjoin(values):
    return "x".join(str(v) for v in values)


def _check_symbol(fname, symbol):
    if not isinstance(symbol, Symbol):
        raise TypeError("%s: symbol must be an mx.sym.Symbol, got %s" % (fname, type(symbol).__name__))


def _internal_shapes(fname, symbol, shape):
    """``{output name: shape}`` over every internal output of ``symbol``."""
    if not isinstance(shape, dict):
        raise TypeError("%s: shape must be a dict of input name -> shape tuple, got %s"
                        % (fname, type(shape).__name__))
    internals = symbol.get_internals()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError("%s: Input shape is incomplete: the shapes %s do not determine every shape in the "
                         "network (arguments: %s)" % (fname, shape, ", ".join(symbol.list_arguments())))
    return dict(zip(internals.list_outputs(), out_shapes))


def _output_key(node):
    """The name MXNet looks a node's (first) output up by in ``get_internals().list_outputs()``."""
    if node["op"] == "null":
        return node["name"]
    return "%s_output" % node["name"]


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):  # noqa: B006 (MXNet's)
    """Prints a table of the layers of ``symbol`` as MXNet 1.9.1 does.

    Parameters
    ----------
    symbol : Symbol
        The network.
    shape : dict of str -> tuple, optional
        Input shapes (e.g. ``{'data': (32, 784)}``); with them the table shows
        each layer's output shape (batch axis dropped) and the parameter
        counts that depend on input sizes.
    line_length : int
        Width of the table in characters.
    positions : list of 4 numbers
        Right edges of the four columns, as fractions of ``line_length``
        (when the last is <= 1) or as character positions.

    Returns
    -------
    None. Prints one row per operator (and the first variable): ``name(op)``,
    output shape, parameter count (Convolution, FullyConnected, BatchNorm,
    Embedding; counted from the first input's channel axis as MXNet counts),
    and the previous layers, then ``Total params: N``.
    """
    _check_symbol("print_summary", symbol)
    shapes = _internal_shapes("print_summary", symbol, shape) if shape is not None else None
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    # MXNet takes the entries of the first head ([node, output, version]) as
    # the set of "head" node ids; kept so that the table is the same.
    heads = set(graph["heads"][0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def row(fields):
        line = ""
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end]
            line = line.ljust(end)
        print(line)

    def channels(key):
        # the size of axis 1 of an output, or 0 when unknown
        if shapes is None or key not in shapes:
            return 0
        s = shapes[key][1:]
        return int(s[0]) if len(s) else 0

    def layer(node, out_shape):
        op = node["op"]
        attrs = node.get("attrs", {})
        previous = []
        in_channels = 0
        if op != "null":
            for entry in node["inputs"]:
                src = nodes[entry[0]]
                if src["op"] != "null" or entry[0] in heads:
                    previous.append(src["name"])
                    in_channels += channels(_output_key(src))
        params = 0
        if op == "Convolution":
            params = in_channels * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
            for k in _digits(attrs["kernel"]):
                params *= int(k)
            if attrs.get("no_bias") != "True":
                params += int(attrs["num_filter"])
        elif op == "FullyConnected":
            bias = 0 if attrs.get("no_bias") == "True" else 1
            params = (in_channels + bias) * int(attrs["num_hidden"])
        elif op == "BatchNorm":
            if shapes is not None:
                params = 2 * int(shapes[_output_key(node)][1])
        elif op == "Embedding":
            params = int(attrs["input_dim"]) * int(attrs["output_dim"])
        row([node["name"] + "(" + op + ")", _xjoin(out_shape), params, previous[0] if previous else ""])
        for name in previous[1:]:
            row(["", "", "", name])
        return params

    print("_" * line_length)
    row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        out_shape = []
        if shapes is not None and (node["op"] != "null" or i in heads):
            key = _output_key(node)
            if key in shapes:
                out_shape = shapes[key][1:]
        total += layer(node, out_shape)
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print("Total params: %d" % total)
    print("_" * line_length)


def _node_style(node, base):
    """(label, graphviz attributes) of an operator or input node, as MXNet draws it."""
    op = node["op"]
    attrs = node.get("attrs") or {}
    style = copy.deepcopy(base)
    label = node["name"]
    color = _COLORS[7]
    if op == "null":
        style["shape"] = "oval"
        color = _COLORS[0]
    elif op == "Convolution":
        stride = _xjoin(_digits(attrs["stride"])) if "stride" in attrs else "1"
        label = "Convolution\n%s/%s, %s" % (_xjoin(_digits(attrs["kernel"])), stride, attrs["num_filter"])
        color = _COLORS[1]
    elif op == "FullyConnected":
        label = "FullyConnected\n%s" % attrs["num_hidden"]
        color = _COLORS[1]
    elif op == "BatchNorm":
        color = _COLORS[3]
    elif op == "Activation":
        label = "Activation\n%s" % attrs["act_type"]
        color = _COLORS[2]
    elif op == "LeakyReLU":
        label = "LeakyReLU\n%s" % attrs.get("act_type", "Leaky")
        color = _COLORS[2]
    elif op == "Pooling":
        kernel = _xjoin(_digits(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = _xjoin(_digits(attrs["stride"])) if "stride" in attrs else "1"
        label = "Pooling\n%s, %s/%s" % (attrs["pool_type"], kernel, stride)
        color = _COLORS[4]
    elif op in ("Concat", "Flatten", "Reshape"):
        color = _COLORS[5]
    elif op == "Softmax":
        color = _COLORS[6]
    elif op == "Custom":
        label = attrs["op_type"]
    style["fillcolor"] = color
    return label, style


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs={},  # noqa: B006
                 hide_weights=True):
    """Draws the computation graph of ``symbol`` as MXNet 1.9.1 does.

    Parameters
    ----------
    symbol : Symbol
        The network to draw (every node needed to compute it).
    title : str
        Name of the digraph (and of the rendered file).
    save_format : str
        Output format the digraph renders to (``'pdf'``, ``'png'``, ``'svg'``, ...).
    shape : dict of str -> tuple, optional
        Input shapes; with them each edge is labelled with the shape of the
        tensor it carries (batch axis dropped), e.g. ``'20x24x24'``.
    dtype : dict of str -> numpy type, optional
        Input dtypes; with them each edge label gets ``'(float32)'`` etc.
    node_attrs : dict, optional
        Graphviz node attributes overriding the defaults
        (``shape='box', fixedsize='true', width='1.3', height='0.8034', style='filled'``).
    hide_weights : bool
        True (default): inputs named like parameters (``*_weight``, ``*_bias``,
        ``*_gamma``, ``*_beta``, ``*_moving_mean``, ...) and their edges are
        left out. False: their edges are drawn to plain nodes.

    Returns
    -------
    graphviz.Digraph
        Operators are boxes labelled by type and key parameters
        (``'Convolution\\n5x5/1, 20'``, ``'FullyConnected\\n128'``, ...) and
        coloured by kind; inputs are ovals. Call ``.render()`` or ``.view()``
        (needs the Graphviz programs) to draw it.

    Raises
    ------
    ImportError
        When the ``graphviz`` Python package is not installed.

    Notes
    -----
    Warns (``RuntimeWarning``) when several nodes share a name, as the drawing
    then merges them. On edges leaving an operator with several outputs the
    shape shown is that of the output the edge carries (MXNet shows the last
    output's; the same for equal splits).
    """
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("mx.viz.plot_network requires the 'graphviz' Python package "
                          "(pip install graphviz, or pip install oxnet[viz]); rendering the drawing to a file "
                          "also needs the Graphviz programs (https://graphviz.org)") from e
    _check_symbol("plot_network", symbol)
    shapes = _internal_shapes("plot_network", symbol, shape) if shape is not None else None
    types = None
    if dtype is not None:
        if not isinstance(dtype, dict):
            raise TypeError("plot_network: dtype must be a dict of input name -> numpy type, got %s"
                            % type(dtype).__name__)
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise ValueError("plot_network: Input type is incomplete: the dtypes %s do not determine every dtype "
                             "in the network" % (dtype,))
        types = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    if len(set(names)) != len(names):
        seen = set()
        repeated = sorted({n for n in names if n in seen or seen.add(n)})
        warnings.warn("There are multiple variables with the same name in your graph, this may result in cyclic "
                      "graph. Repeated names: " + ",".join(repeated), RuntimeWarning, stacklevel=2)

    base = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}
    base.update(node_attrs)
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        if node["op"] == "null" and node["name"].endswith(_WEIGHT_SUFFIXES):
            # parameters: hidden with their edges, or drawn as plain nodes by the edges alone
            if hide_weights:
                hidden.add(node["name"])
            continue
        label, style = _node_style(node, base)
        dot.node(name=node["name"], label=label, **style)

    keys = _entry_keys(symbol, nodes) if shapes is not None or types is not None else None
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"]
        if node["op"] == "_contrib_BilinearResize2D":
            inputs = inputs[:1]  # its second input only lends a shape (as MXNet draws it)
        for entry in inputs:
            src = nodes[entry[0]]
            if src["name"] in hidden:
                continue
            label = ""
            if keys is not None:
                key = keys[entry[0]][entry[1]]
                if shapes is not None:
                    label = _xjoin(shapes[key][1:])
                if types is not None:
                    label += "(%s)" % types[key].__name__
            dot.edge(tail_name=node["name"], head_name=src["name"], label=label, dir="back", arrowtail="open")
    return dot


def _entry_keys(symbol, nodes):
    """For each JSON node, the internal-output names of its outputs, in
    output order (``['fc1_output']``, ``['bn_output', 'bn_mean', 'bn_var']``)."""
    internals = symbol.get_internals()
    names = internals.list_outputs()
    runs = []
    for k, out in enumerate(names):
        head = internals[k].name
        if runs and runs[-1][0] == head and nodes[len(runs) - 1]["op"] != "null":
            runs[-1][1].append(out)
        else:
            runs.append((head, [out]))
    if [r[0] for r in runs] == [n["name"] for n in nodes]:
        return [r[1] for r in runs]
    # not in node order (should not happen): MXNet's rule, the last output's name
    keys = []
    for n in nodes:
        if n["op"] == "null":
            keys.append([n["name"]])
            continue
        key = n["name"] + "_output"
        if "num_outputs" in n.get("attrs", {}):
            key += str(int(n["attrs"]["num_outputs"]) - 1)
        keys.append(_Repeat(key))
    return keys


class _Repeat:
    """A sequence whose every item is ``value``."""

    def __init__(self, value):
        self.value = value

    def __getitem__(self, _index):
        return self.value
