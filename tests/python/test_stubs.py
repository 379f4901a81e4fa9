"""The committed type stub for ``mx.nd`` matches the operator registry."""
import ast
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_nd_stub_is_current_and_parses():
    stub = os.path.join(ROOT, "python", "oxnet", "ndarray", "__init__.pyi")
    tree = ast.parse(open(stub).read())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"clip", "Convolution", "maximum", "split_v2", "__getattr__"} <= names
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_stubs.py"), "--check"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
