"""The subgraph API: partition a graph for a backend.

A backend is a :class:`SubgraphProperty` registered by name with
:func:`register_backend`. Its :class:`SubgraphSelector` decides which nodes
form each subgraph, the way MXNet 1.x's C++ ``SubgraphSelector`` does:

- ``select(node)``: start a subgraph at this node;
- ``select_input(node, input_node)`` / ``select_output(node, output_node)``:
  grow the subgraph from ``node`` to a node it reads / a node that reads it;
- ``filter(candidates)``: the final say on the grown set (return a subset);
- ``reset()``: called before each new subgraph.

Each subgraph becomes one node (by default a ``_CachedOp`` node that holds
the subgraph, as MXNet makes; ``create_subgraph_node`` may return another
symbol computing the same outputs). Subgraphs never create cycles: nodes that
would make the partitioned graph cyclic are left out. A partitioned symbol
serialises (the subgraph goes into the node's ``subgraphs`` in the JSON),
infers shapes through its subgraphs, and binds like any symbol (the executor
inlines subgraph nodes, then plans, fuses and runs one graph).

``oxnet_fuse``, the built-in backend, groups chains of element-wise
operators: the groups the executor's fusion pass runs as one kernel.
"""
from __future__ import annotations

import json

from .. import _native
from .symbol import Symbol, _SH

__all__ = ["NodeInfo", "SubgraphSelector", "SubgraphProperty", "register_backend", "list_backends",
           "optimize_for", "get_backend_symbol"]


class NodeInfo:
    """What a selector sees of a node: ``name``, ``op`` (``'null'`` for a
    variable), ``attrs`` (dict of strings), ``inputs`` (names of the nodes it
    reads), and ``shapes`` / ``dtypes`` of its outputs when the shapes of the
    inputs were given to ``optimize_for`` (else None)."""

    __slots__ = ("index", "name", "op", "attrs", "inputs", "shapes", "dtypes")

    def __init__(self, index, name, op, attrs, inputs, shapes=None, dtypes=None):
        self.index, self.name, self.op, self.attrs, self.inputs = index, name, op, attrs, inputs
        self.shapes, self.dtypes = shapes, dtypes

    def __repr__(self):
        return "<NodeInfo %s (%s)>" % (self.name, self.op)


class SubgraphSelector:
    """Chooses the nodes of one subgraph (override the methods)."""

    def select(self, node):
        """Whether a subgraph starts at ``node``."""
        return False

    def select_input(self, node, input_node):
        """Whether to add ``input_node`` (read by ``node``, already in)."""
        return False

    def select_output(self, node, output_node):
        """Whether to add ``output_node`` (reads ``node``, already in)."""
        return False

    def filter(self, candidates):
        """The nodes to keep of the grown subgraph (a list of NodeInfo)."""
        return candidates

    def reset(self):
        """Called before a new subgraph is grown."""


class SubgraphProperty:
    """A backend: makes selectors and subgraph nodes. ``options`` are the
    keyword arguments ``optimize_for`` received."""

    def __init__(self, **options):
        self.options = options

    def create_selector(self):
        """A new :class:`SubgraphSelector`."""
        raise NotImplementedError("a SubgraphProperty must implement create_selector()")

    def create_subgraph_node(self, subgraph, subgraph_id, inputs, name):
        """The symbol replacing one subgraph: by default a ``_CachedOp``
        node running ``subgraph`` (a Symbol whose inputs ``inputs`` maps by
        name to the outer symbols). Returns a Symbol with the subgraph's
        outputs, in order."""
        return Symbol(_SH.subgraph(subgraph.handle, [inputs[n].handle for n in subgraph.list_inputs()], name))


_BACKENDS = {}


def register_backend(name, prop):
    """Registers ``prop`` (a SubgraphProperty subclass or a factory taking the
    options) as backend ``name``."""
    if not callable(prop):
        raise TypeError("register_backend: expected a SubgraphProperty class or factory, got %r" % (prop,))
    _BACKENDS[name] = prop
    return prop


def list_backends():
    """The names of the registered backends."""
    return sorted(_BACKENDS)


def _node_infos(sym, shapes, dtypes):
    js = json.loads(sym.tojson())
    nodes = js["nodes"]
    infos = []
    per_node = [None] * len(nodes)
    if shapes is not None:
        internals = sym.get_internals()
        try:
            _, out_shapes, _ = internals.infer_shape_partial(**shapes)
            _, out_types, _ = internals.infer_type_partial(**(dtypes or {}))
        except Exception:  # noqa: BLE001 - shapes are a hint for the selectors
            out_shapes = None
        if out_shapes is not None:
            p = 0
            for i, n in enumerate(sym.handle.visible_output_counts()):
                per_node[i] = (out_shapes[p:p + n], out_types[p:p + n])
                p += n
    for i, n in enumerate(nodes):
        sh, ty = per_node[i] if per_node[i] is not None else (None, None)
        infos.append(NodeInfo(i, n["name"], n["op"], dict(n.get("attrs", {})),
                              [nodes[s]["name"] for s, _, _ in n["inputs"]], sh, ty))
    return js, infos


def _grow(prop, js, infos, assigned):
    """Yields the node-index sets of the subgraphs, in topological order of
    their first node."""
    nodes = js["nodes"]
    consumers = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for s, _, _ in n["inputs"]:
            consumers[s].append(i)
    for i, n in enumerate(nodes):
        if n["op"] == "null" or i in assigned:
            continue
        sel = prop.create_selector()
        sel.reset()
        if not sel.select(infos[i]):
            continue
        members = {i}
        queue = [i]
        while queue:
            k = queue.pop()
            for s, _, _ in nodes[k]["inputs"]:
                if nodes[s]["op"] != "null" and s not in members and s not in assigned \
                        and sel.select_input(infos[k], infos[s]):
                    members.add(s)
                    queue.append(s)
            for c in consumers[k]:
                if c not in members and c not in assigned and sel.select_output(infos[k], infos[c]):
                    members.add(c)
                    queue.append(c)
        kept = sel.filter([infos[m] for m in sorted(members)])
        members = {x.index for x in kept or []} & members
        members = _convex(members, nodes, consumers)
        if members:
            assigned.update(members)
            yield sorted(members)


def _convex(members, nodes, consumers):
    """Drops the members that would make the partitioned graph cyclic: those
    reached again from a node outside the set that depends on the set."""
    members = set(members)
    while members:
        outside = set()
        queue = [c for m in members for c in consumers[m] if c not in members]
        while queue:
            k = queue.pop()
            if k in outside:
                continue
            outside.add(k)
            queue.extend(c for c in consumers[k] if c not in members)
        bad = {c for k in outside for c in consumers[k] if c in members}
        if not bad:
            return members
        # drop every member downstream of a re-entry
        queue = list(bad)
        while queue:
            k = queue.pop()
            if k in members:
                members.discard(k)
                queue.extend(consumers[k])
    return members


def _entry_name(nodes, s, k):
    n = nodes[s]
    if n["op"] == "null":
        return n["name"]
    return "%s_output%s" % (n["name"], "" if k == 0 else k)


def optimize_for(sym, backend, args=None, aux=None, ctx=None, **kwargs):
    """Partitions ``sym`` with the registered backend ``backend``.

    ``args`` / ``aux``: arrays (dicts by name, or lists in
    ``list_arguments()`` / ``list_auxiliary_states()`` order) whose shapes
    and dtypes the selectors see; ``kwargs`` are the backend's options.
    Returns the partitioned Symbol (``sym`` itself is unchanged)."""
    if backend not in _BACKENDS:
        raise ValueError("optimize_for: unknown backend '%s' (registered: %s)"
                         % (backend, ", ".join(list_backends()) or "none"))
    prop = _BACKENDS[backend](**kwargs)
    shapes = dtypes = None
    if args is not None or aux is not None:
        shapes, dtypes = {}, {}
        for names, given in ((sym.list_arguments(), args), (sym.list_auxiliary_states(), aux)):
            if given is None:
                continue
            items = given.items() if isinstance(given, dict) else zip(names, given)
            for k, v in items:
                if v is not None:
                    shapes[k] = v.shape
                    dtypes[k] = v.dtype
    js, infos = _node_infos(sym, shapes, dtypes)
    groups = list(_grow(prop, js, infos, set()))
    return _rebuild(sym, js, groups, prop, backend)


def _rebuild(sym, js, groups, prop, backend):
    """The graph with each group replaced by one subgraph node. Nodes are
    built on demand from the heads (the groups are convex, so the graph of
    groups and other nodes has no cycle)."""
    import sys

    from .symbol import Group

    nodes = js["nodes"]
    group_of = {m: g for g, members in enumerate(groups) for m in members}
    entries = {}  # (node, index) -> Symbol in the new graph

    def make(i, get):
        n = nodes[i]
        if n["op"] == "null":
            return [Symbol(_SH.variable(n["name"], dict(n.get("attrs", {}))))]
        ins = [get(s, k) for s, k, _ in n["inputs"]]
        if n["op"] == "_CachedOp":
            # a subgraph node of an earlier partitioning stays as it is
            inner = _SH.from_json(json.dumps(n["subgraphs"][0]))
            h = _SH.subgraph(inner, [x.handle for x in ins], n["name"])
        else:
            h = _SH.create(n["op"], list(n.get("attrs", {}).items()), [x.handle for x in ins], n["name"])
        return [Symbol(h.get_output(k)) for k in range(h.num_outputs())]

    def get(s, k):
        if (s, k) not in entries:
            g = group_of.get(s)
            if g is None:
                for kk, x in enumerate(make(s, get)):
                    entries[(s, kk)] = x
            else:
                build_group(g)
        return entries[(s, k)]

    def build_group(g):
        members = groups[g]
        mset = set(members)
        inner = {}
        outer_inputs = {}

        def inner_get(s, k):
            if s in mset:
                if (s, k) not in inner:
                    for kk, x in enumerate(make(s, inner_get)):
                        inner[(s, kk)] = x
                return inner[(s, k)]
            name = _entry_name(nodes, s, k)
            if name not in outer_inputs:
                outer_inputs[name] = get(s, k)
                inner[("in", name)] = Symbol(_SH.variable(name, {}))
            return inner[("in", name)]

        read_outside = set()
        for j, n in enumerate(nodes):
            if j not in mset:
                read_outside.update((s, k) for s, k, _ in n["inputs"] if s in mset)
        read_outside.update((s, k) for s, k, _ in js["heads"] if s in mset)
        outs = sorted(read_outside)
        sub = Group([inner_get(s, k) for s, k in outs])
        node = prop.create_subgraph_node(sub, g, outer_inputs, "%s_subgraph%d" % (backend, g))
        if len(node) != len(outs):
            raise ValueError("create_subgraph_node returned %d outputs for a subgraph of %d" % (len(node), len(outs)))
        for k, o in enumerate(outs):
            entries[o] = node[k]

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * len(nodes) + 1000))
    try:
        heads = [get(s, k) for s, k, _ in js["heads"]]
    finally:
        sys.setrecursionlimit(old)
    return heads[0] if len(heads) == 1 else Group(heads)


def get_backend_symbol(sym, backend):
    """``optimize_for(sym, backend)`` without shapes."""
    return optimize_for(sym, backend)


class _FuseSelector(SubgraphSelector):
    def _ok(self, node):
        if node.op == "null":
            return False
        try:
            return _native.get_op(node.op).pointwise
        except Exception:  # noqa: BLE001 - an op this build lacks is not pointwise
            return False

    def select(self, node):
        return self._ok(node)

    def select_input(self, node, input_node):
        return self._ok(input_node)

    def select_output(self, node, output_node):
        return self._ok(output_node)

    def filter(self, candidates):
        return candidates if len(candidates) >= 2 else []


class FuseProperty(SubgraphProperty):
    """oxnet's built-in backend: chains of element-wise operators."""

    def create_selector(self):
        return _FuseSelector()


register_backend("oxnet_fuse", FuseProperty)
