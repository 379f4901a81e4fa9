"""MXNet namespaces oxnet lacks raise an error saying they are not built yet (driven by
oxnet._NOT_BUILT_YET); everything else on the package behaves as a normal attribute."""
import importlib
import importlib.util

import pytest

import oxnet as mx
from oxnet.base import MXNetError, NotBuiltError


@pytest.mark.parametrize("name", sorted(mx._NOT_BUILT_YET))
def test_listed_name_raises_not_built(name):
    with pytest.raises(NotBuiltError, match="is not built in oxnet yet") as ei:
        getattr(mx, name)
    assert isinstance(ei.value, MXNetError) and isinstance(ei.value, NotImplementedError)
    assert mx._NOT_BUILT_YET[name] in str(ei.value)
    # `from oxnet import gluon` shows the same message (not a bare ImportError)
    with pytest.raises(NotBuiltError):
        exec(f"from oxnet import {name}", {})


@pytest.mark.parametrize("name", sorted(mx._NOT_BUILT_YET))
def test_listed_name_is_really_missing(name):
    # a name that is importable (or defined on the package) must not be in the dict:
    # delete it from _NOT_BUILT_YET when its module lands
    assert name not in vars(mx), f"oxnet.{name} exists: remove it from _NOT_BUILT_YET"
    if name[0].islower():
        assert importlib.util.find_spec(f"oxnet.{name}") is None, (
            f"oxnet.{name} is importable: remove it from _NOT_BUILT_YET")


def test_every_other_attribute_works():
    for name in dir(mx):
        assert name not in mx._NOT_BUILT_YET
        getattr(mx, name)  # never raises
    for name in ("nd", "ndarray", "autograd", "image", "img", "io", "recordio", "random", "rnd", "profiler",
                 "runtime", "util", "contrib", "np", "npx", "operator", "test_utils", "cpu", "Context",
                 "MXNetError", "__version__", "__build__"):
        assert hasattr(mx, name), name


def test_unknown_attribute_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'surely_not_an_mxnet_name'") as ei:
        mx.surely_not_an_mxnet_name
    assert not isinstance(ei.value, MXNetError)
    assert not hasattr(mx, "surely_not_an_mxnet_name")
    assert getattr(mx, "__wrapped__", None) is None
