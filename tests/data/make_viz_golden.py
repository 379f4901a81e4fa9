"""Makes tests/data/golden_viz/: MXNet 1.9.1's print_summary tables and
plot_network graphviz sources for the networks in viz_nets.py.

Run with an interpreter that has mxnet==1.9.1 and graphviz==0.8.4 (never
project dependencies):
    $OXNET_MXNET_PYTHON tests/data/make_viz_golden.py
"""
import contextlib
import io
import os
import sys

import mxnet as mx
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import viz_nets  # noqa: E402

out_dir = os.path.join(here, "golden_viz")
os.makedirs(out_dir, exist_ok=True)
with mx.name.NameManager():
    nets = viz_nets.build(mx)
for name, (sym, shapes) in nets.items():
    for variant, kwargs in viz_nets.SUMMARIES:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mx.viz.print_summary(sym, **kwargs(shapes))
        with open(os.path.join(out_dir, "%s_%s.txt" % (name, variant)), "w") as f:
            f.write(buf.getvalue())
    for variant, kwargs in viz_nets.PLOTS:
        dot = mx.viz.plot_network(sym, **kwargs(shapes, np))
        with open(os.path.join(out_dir, "%s_%s.gv" % (name, variant)), "w") as f:
            f.write("// name=%s format=%s\n" % (dot.name, dot.format))
            f.write(dot.source)
