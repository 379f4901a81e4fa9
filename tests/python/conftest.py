import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# OXNET_TEST_INSTALLED=1 tests the installed package (a wheel or `pip install .`)
# instead of the checkout's python/ tree.
if not os.environ.get("OXNET_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(ROOT, "python"))


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(1234)
    yield
