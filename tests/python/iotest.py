"""Shared helpers of the image IO tests: golden data made by real MXNet 1.9.1
(tests/data/golden_io, from tests/data/make_io_golden.py) and the photos."""
import json
import os

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(__file__)
IMAGES = os.path.join(HERE, "..", "data", "images")
GOLD = os.path.join(HERE, "..", "data", "golden_io")
META = json.load(open(os.path.join(GOLD, "io.json")))
ARR = np.load(os.path.join(GOLD, "io.npz"))


@pytest.fixture(autouse=True)
def _drain_engine_errors():
    """Errors these tests provoke on purpose must not reach later waitall()s."""
    yield
    try:
        mx.nd.waitall()
    except mx.base.MXNetError:
        pass
