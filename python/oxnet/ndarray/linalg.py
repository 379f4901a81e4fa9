"""Linear algebra as ``mx.nd.linalg.*`` (MXNet's ``mxnet.ndarray.linalg``):
``gemm``, ``gemm2``, ``potrf``, ``potri``, ``trsm``, ``trmm``, ``syrk``,
``sumlogdiag``, ``extractdiag``, ``makediag``, ``extracttrian``,
``maketrian``, ``inverse``, ``det``, ``slogdet``, ``gelqf`` and ``syevd``.

Each is the registered operator ``_linalg_<name>`` (also ``mx.nd.linalg_<name>``
except for syevd, as in MXNet 1.9.1), with MXNet's argument names, defaults
and positional order: ``mx.nd.linalg.gemm2(a, b, True)`` transposes ``a``.
All take float32 or float64 arrays and work on the trailing two axes,
batched over the leading ones."""
import inspect

from . import op as _op
from ._signatures import ARGS


def _bind(short):
    # The public alias carries MXNet's positional order (syevd has none and
    # no parameters).
    target = "_linalg_syevd" if short == "syevd" else "linalg_" + short

    def fn(*args, **kwargs):
        return getattr(_op, target)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = short
    fn.__module__ = __name__
    fn.__doc__ = getattr(_op, target).__doc__
    # MXNet's signature (inputs and parameters in its positional order).
    P = inspect.Parameter
    names = ARGS.get(target, ("A",))
    params = [P(a, P.POSITIONAL_OR_KEYWORD, default=None) for a in names]
    params += [P("out", P.KEYWORD_ONLY, default=None), P("name", P.KEYWORD_ONLY, default=None),
               P("kwargs", P.VAR_KEYWORD)]
    fn.__signature__ = inspect.Signature(params)
    return fn


gemm = _bind("gemm")
gemm2 = _bind("gemm2")
potrf = _bind("potrf")
potri = _bind("potri")
trsm = _bind("trsm")
trmm = _bind("trmm")
syrk = _bind("syrk")
sumlogdiag = _bind("sumlogdiag")
extractdiag = _bind("extractdiag")
makediag = _bind("makediag")
extracttrian = _bind("extracttrian")
maketrian = _bind("maketrian")
inverse = _bind("inverse")
det = _bind("det")
slogdet = _bind("slogdet")
gelqf = _bind("gelqf")
syevd = _bind("syevd")

__all__ = [
    "gemm",
    "gemm2",
    "potrf",
    "potri",
    "trsm",
    "trmm",
    "syrk",
    "sumlogdiag",
    "extractdiag",
    "makediag",
    "extracttrian",
    "maketrian",
    "inverse",
    "det",
    "slogdet",
    "gelqf",
    "syevd",
]
