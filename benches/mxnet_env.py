"""Where the benchmarks find MXNet 1.9.1: the virtualenv named by $MXNET_VENV (no default:
the machine-specific place is yours to give). Without it the MXNet columns are skipped."""
import os

HOW = "python3.11 -m venv DIR && DIR/bin/pip install mxnet==1.9.1 numpy==1.23.5; then MXNET_VENV=DIR"


def mxnet_python():
    """Path of $MXNET_VENV/bin/python, or None (after saying why) when it is unset or missing."""
    venv = os.environ.get("MXNET_VENV")
    if not venv:
        print(f"(MXNET_VENV is not set: MXNet 1.9.1 columns skipped; to add them: {HOW})")
        return None
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print(f"(MXNET_VENV={venv} has no bin/python: MXNet 1.9.1 columns skipped; {HOW})")
        return None
    return py
