"""Launch a distributed oxnet job: ``python -m oxnet.tools.launch -n N [-H hosts] train.py [args]``.

MXNet's ``tools/launch.py`` habit over ``mpirun`` (Open MPI): N worker
processes, no servers (the distributed stores use MPI allreduce). The
command is the training script and its arguments; a first word ending in
``.py`` is run with this Python. The environment is passed on: locally every
variable, and to remote hosts the variables oxnet, MXNet, Horovod, Python and
OpenMP read (``-x NAME``), plus any ``--env NAME[:VALUE]``.

Options: ``-n/--num-workers`` (processes), ``-H/--hostfile`` (a hostfile path
as in MXNet, or a comma-separated ``host[:slots]`` list as in ``mpirun -H``),
``-s/--num-servers`` (accepted for MXNet scripts; there are no servers, so it
must be 0 or match nothing), ``--launcher`` ('mpi' or 'local'),
``--env NAME[:VALUE]`` (repeatable), ``--mpirun`` (the mpirun to use),
``--mpirun-args "..."`` (extra mpirun options), ``--dry-run`` (print the
mpirun command instead of running it). ``--oversubscribe`` is always given
(several workers may share a core), ``--allow-run-as-root`` when running as
root, and ``--bind-to none`` so each worker's engine threads can use any core
(override with --mpirun-args).

Exit status: mpirun's (non-zero when any worker failed).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys

__all__ = ["build_command", "main"]

_PASSED_PREFIXES = ("OXNET_", "MXNET_", "HOROVOD_", "OMP_", "PYTHON", "LD_LIBRARY_PATH", "PATH")


def _parser():
    p = argparse.ArgumentParser(prog="python -m oxnet.tools.launch",
                                description="Launch a distributed oxnet job over mpirun.")
    p.add_argument("-n", "--num-workers", required=True, type=int, help="number of worker processes")
    p.add_argument("-s", "--num-servers", type=int, default=0,
                   help="MXNet's server count: oxnet needs no servers (allreduce); ignored")
    p.add_argument("-H", "--hostfile", type=str, default=None,
                   help="a hostfile path, or a comma-separated host[:slots] list")
    p.add_argument("--launcher", choices=["mpi", "local"], default="mpi",
                   help="'mpi' or 'local' (both start the workers with mpirun)")
    p.add_argument("--env", action="append", default=[], help="NAME or NAME:VALUE to pass to every worker")
    p.add_argument("--mpirun", default=None, help="the mpirun executable (default: the one on PATH)")
    p.add_argument("--mpirun-args", default="", help="extra options for mpirun, as one string")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun command and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the training command")
    return p


def build_command(args, environ=None):
    """The mpirun argument list for parsed ``args`` (see the module docstring)."""
    environ = os.environ if environ is None else environ
    if args.num_workers < 1:
        raise SystemExit("launch: -n/--num-workers must be at least 1, got %d" % args.num_workers)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise SystemExit("launch: give the command to run, e.g. python -m oxnet.tools.launch -n 2 train.py")
    if command[0].endswith(".py"):
        command = [sys.executable] + command
    mpirun = args.mpirun or shutil.which("mpirun")
    if not mpirun:
        raise SystemExit("launch: mpirun was not found; install Open MPI (Debian: apt-get install openmpi-bin "
                         "libopenmpi-dev) and mpi4py (pip install mpi4py)")
    cmd = [mpirun, "-np", str(args.num_workers), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if args.hostfile:
        if os.path.isfile(args.hostfile):
            cmd += ["--hostfile", args.hostfile]
        else:
            cmd += ["-H", args.hostfile]
    names = sorted(k for k in environ if k.startswith(_PASSED_PREFIXES) and "=" not in k)
    for item in args.env:
        name, sep, value = item.partition(":")
        if not name:
            raise SystemExit("launch: --env needs NAME or NAME:VALUE, got %r" % item)
        if sep:
            cmd += ["-x", "%s=%s" % (name, value)]
            names = [n for n in names if n != name]
        else:
            names.append(name)
    for name in names:
        cmd += ["-x", name]
    cmd += shlex.split(args.mpirun_args)
    return cmd + command


def main(argv=None):
    """Parse ``argv``, run mpirun, return its exit status."""
    args = _parser().parse_args(argv)
    cmd = build_command(args)
    if args.num_servers:
        sys.stderr.write("launch: -s %d ignored: oxnet's distributed stores use MPI allreduce and need no "
                         "servers\n" % args.num_servers)
    if args.dry_run:
        print(" ".join(shlex.quote(c) for c in cmd))
        return 0
    proc = subprocess.Popen(cmd)

    def forward(signum, _frame):
        proc.send_signal(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward)
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
