"""Operator-level profiler with MXNet 1.9's ``mx.profiler`` API.

    mx.profiler.set_config(profile_all=True, filename='trace.json', aggregate_stats=True)
    mx.profiler.set_state('run')
    ...                                   # NDArray operations
    mx.profiler.set_state('stop')
    mx.profiler.dump()                    # Chrome trace: chrome://tracing or ui.perfetto.dev
    print(mx.profiler.dumps())            # aggregate table per operator and device

The engine decides at push time whether to record an operation (one relaxed
atomic load when the profiler is off). ``dump()`` waits for operations
already pushed, and a trace that was never dumped is written at exit.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import threading
import warnings

from . import _native

__all__ = [
    "set_config", "profiler_set_config", "set_state", "profiler_set_state", "pause", "resume",
    "dump", "dump_profile", "dumps", "Domain", "Task", "Frame", "Event",
    "Counter", "Marker", "scope",
]

_CONFIG_KEYS = (
    "profile_all", "profile_symbolic", "profile_imperative", "profile_memory", "profile_api",
    "filename", "continuous_dump", "dump_period", "aggregate_stats", "profile_process",
    "gpu_memory_profile_filename_prefix",
)


def _check_process(profile_process):
    if profile_process != "worker":
        raise ValueError(
            f"profile_process={profile_process!r} is not supported: there is no distributed "
            "kvstore server in this build (only 'worker')"
        )


def set_config(**kwargs):
    """Configure the profiler (keyword arguments only; unset keys take their
    defaults, as in MXNet).

    Parameters
    ----------
    filename : str, default 'profile.json'
        Output file of ``dump()`` (Chrome trace JSON).
    profile_all : bool, default False
        Turn on every kind of profiling.
    profile_symbolic : bool, default True
        Profile operators run by bound graphs (executor).
    profile_imperative : bool, default True
        Profile imperative (``mx.nd``) operators.
    profile_memory : bool, default True
        Record the storage pool's bytes in use as counter events.
    profile_api : bool, default True
        Record front-end calls (``MXImperativeInvoke``) with their operator.
    continuous_dump : bool, default False
        Rewrite the trace file every ``dump_period`` seconds while running.
    dump_period : float, default 1.0
        Seconds between continuous dumps.
    aggregate_stats : bool, default False
        Keep per-operator statistics for ``dumps()``.
    profile_process : str, default 'worker'
        Only 'worker' is supported.
    """
    for k in kwargs:
        if k not in _CONFIG_KEYS:
            raise TypeError(f"set_config() got an unexpected keyword argument {k!r}")
    _native.profiler_set_config([(k, str(v)) for k, v in kwargs.items()])


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated MXNet 0.x/1.x form: ``mode`` is 'symbolic' or 'all'."""
    warnings.warn(
        "profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    if mode not in ("symbolic", "all"):
        raise ValueError(f"profiler_set_config: mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(**{"profile_" + mode: True, "filename": filename})


def set_state(state="stop", profile_process="worker"):
    """Start ('run') or stop ('stop') recording."""
    _check_process(profile_process)
    if state not in ("run", "stop"):
        raise ValueError(f"set_state: state must be 'run' or 'stop', got {state!r}")
    _native.profiler_set_state(state == "run")


def profiler_set_state(state="stop"):
    """Deprecated form of ``set_state``."""
    warnings.warn(
        "profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    set_state(state)


def pause(profile_process="worker"):
    """Stop recording until ``resume()`` (the state stays 'run')."""
    _check_process(profile_process)
    _native.profiler_pause(True)


def resume(profile_process="worker"):
    """Resume recording after ``pause()``."""
    _check_process(profile_process)
    _native.profiler_pause(False)


def dump(finished=True, profile_process="worker"):
    """Write the Chrome trace of the events recorded so far to the configured
    file, after the operations already pushed have run. With ``finished``
    the written events are released, so a later dump holds only newer ones;
    otherwise they are kept and the next dump rewrites a superset."""
    _check_process(profile_process)
    _native.profiler_dump(bool(finished))


def dump_profile():
    """Deprecated: ``dump(True)``."""
    warnings.warn(
        "profiler.dump_profile() is deprecated. Please use profiler.dump() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """Aggregate statistics (count, total, min, max, avg per name, in
    sections per device and domain) as MXNet's text table or, with
    ``format='json'``, a JSON string. Empty unless ``aggregate_stats=True``.

    sort_by: 'total', 'avg', 'min', 'max' or 'count'; ``reset`` clears the
    statistics after printing them."""
    return _native.profiler_dumps(bool(reset), str(format), str(sort_by), bool(ascending))


def _at_exit():
    try:
        _native.profiler_dump_at_exit()
    except Exception as e:  # noqa: BLE001 - report, never crash the interpreter's exit
        warnings.warn(f"oxnet.profiler: could not write the trace at exit: {e}")


atexit.register(_at_exit)


# ---------------------------------------------------------------------------
# Profiling objects.
# ---------------------------------------------------------------------------


class Domain:
    """A named group of Tasks, Frames, Counters and Markers (their trace category)."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"Domain({self.name!r})"

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Duration:
    _kind = ""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = str(name)
        self._start = None

    def start(self):
        """Start timing (nothing is recorded unless the profiler runs)."""
        self._start = _native.profiler_object_start()

    def stop(self):
        """Stop timing and record the duration (if it started while running)."""
        start, self._start = self._start, None
        if start is not None:
            dom = None if self.domain is None else str(self.domain)
            _native.profiler_record_duration(self._kind, dom, self.name, start)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __str__(self):
        return self.name


class Task(_Duration):
    """A unit of work of a thread; statistics of all passes are aggregated."""

    _kind = "task"


class Frame(_Duration):
    """Like Task, but each pass is a separate, numbered frame."""

    _kind = "frame"


class Event(_Duration):
    """A named region of code, outside any domain."""

    _kind = "event"

    def __init__(self, name):
        super().__init__(None, name)


class Counter:
    """A value tracked over time; each change is a counter sample in the trace."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = str(name)
        self._value = 0
        self._lock = threading.Lock()
        if value is not None:
            self.set_value(value)

    @property
    def value(self):
        return self._value

    def _set(self, v):
        _native.profiler_record_counter(str(self.domain), self.name, v)

    def set_value(self, value):
        with self._lock:
            self._value = int(value)
            self._set(self._value)

    def increment(self, delta=1):
        with self._lock:
            self._value += int(delta)
            self._set(self._value)

    def decrement(self, delta=1):
        with self._lock:
            self._value -= int(delta)
            self._set(self._value)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in time, across a 'global', 'process' or 'thread' scope."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = str(name)

    def mark(self, scope="process"):
        _native.profiler_record_marker(str(self.domain), self.name, str(scope))

    def __str__(self):
        return self.name


# ---------------------------------------------------------------------------
# Scopes.
# ---------------------------------------------------------------------------

_current_scope = contextvars.ContextVar("profilerscope", default="<unk>:")


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=False):
    """Prefix the names of operators pushed inside the block with ``name:``
    (in the trace and the aggregate table). With ``append_mode`` the prefix
    is appended to the enclosing scope's ("outer:inner:")."""
    name = str(name)
    if not name.endswith(":"):
        name += ":"
    outer = _current_scope.get()
    if append_mode and outer != "<unk>:":
        name = outer + name
    token = _current_scope.set(name)
    _native.profiler_set_scope(None if name == "<unk>:" else name)
    try:
        yield name
    finally:
        _current_scope.reset(token)
        prev = _current_scope.get()
        _native.profiler_set_scope(None if prev == "<unk>:" else prev)
