"""mx.callback and mx.model checkpoint files."""
import io
import logging

import numpy as np
import pytest

import oxnet as mx
from oxnet.model import BatchEndParam


class _Clock(object):
    """Stands in for the time module inside oxnet.callback."""

    def __init__(self, *ticks):
        self.ticks = list(ticks)

    def time(self):
        return self.ticks.pop(0)


def _metric(acc):
    m = mx.metric.Accuracy()
    m.sum_metric, m.num_inst = acc, 1
    return m


def test_speedometer_log_line_is_mxnets(caplog, monkeypatch):
    monkeypatch.setattr(mx.callback, "time", _Clock(100.0, 102.0, 104.0))
    speedo = mx.callback.Speedometer(batch_size=10, frequent=2)
    m = _metric(0.5)
    with caplog.at_level(logging.INFO):
        speedo(BatchEndParam(epoch=3, nbatch=0, eval_metric=m, locals=None))  # starts the clock
        speedo(BatchEndParam(epoch=3, nbatch=2, eval_metric=m, locals=None))
    # format from MXNet 1.9.1's Speedometer: 2 batches x 10 samples in 2 s
    assert caplog.messages == ["Epoch[3] Batch [0-2]\tSpeed: 10.00 samples/sec\taccuracy=0.500000"]
    assert np.isnan(m.get()[1])  # auto_reset cleared the local metric


def test_speedometer_without_reset_and_without_metric(caplog, monkeypatch):
    monkeypatch.setattr(mx.callback, "time", _Clock(0.0, 4.0, 4.0, 8.0, 8.0))
    speedo = mx.callback.Speedometer(batch_size=8, frequent=1, auto_reset=False)
    with caplog.at_level(logging.INFO):
        speedo(BatchEndParam(0, 0, _metric(1.0), None))
        speedo(BatchEndParam(0, 1, _metric(1.0), None))
        speedo(BatchEndParam(0, 2, None, None))
    assert caplog.messages == ["Epoch[0] Batch [0-1]\tSpeed: 2.00 samples/sec\taccuracy=1.000000",
                               "Iter[0] Batch [2]\tSpeed: 2.00 samples/sec"]


def test_log_callbacks_and_progress_bar(caplog):
    with caplog.at_level(logging.INFO):
        mx.callback.log_train_metric(2)(BatchEndParam(1, 4, _metric(0.25), None))
        mx.callback.LogValidationMetricsCallback()(BatchEndParam(2, 0, _metric(0.75), None))
        mx.callback.ProgressBar(total=4, length=8)(BatchEndParam(0, 1, None, None))
    assert caplog.messages == ["Iter[1] Batch[4] Train-accuracy=0.250000", "Epoch[2] Validation-accuracy=0.750000",
                               "[==------] 25%\r"]


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_live_progress_draws_only_on_a_terminal():
    pipe = io.StringIO()
    mx.callback.LiveProgress(32, total=10, stream=pipe)(BatchEndParam(0, 0, _metric(0.5), None))
    assert pipe.getvalue() == ""
    tty = _Tty()
    live = mx.callback.LiveProgress(32, total=4, stream=tty, min_interval=0.0)
    for b in range(4):
        live(BatchEndParam(0, b, _metric(0.5), None))
    live.finish()
    out = tty.getvalue()
    assert out.count("\r") == 4 and out.endswith("\n")
    assert "4/4 batches" in out and "accuracy=0.5000" in out and "samples/s" in out and "ETA" in out


def test_do_checkpoint_and_load_params(tmp_path):
    prefix = str(tmp_path / "net")
    arg = {"fc_weight": mx.nd.array([[1.0, 2.0]]), "fc_bias": mx.nd.array([0.5])}
    aux = {"bn_moving_var": mx.nd.array([3.0])}
    cb = mx.callback.do_checkpoint(prefix, period=2)
    cb(0, None, arg, aux)
    assert not (tmp_path / "net-0001.params").exists()
    cb(1, None, arg, aux)
    got_arg, got_aux = mx.model.load_params(prefix, 2)
    assert sorted(got_arg) == ["fc_bias", "fc_weight"] and list(got_aux) == ["bn_moving_var"]
    np.testing.assert_array_equal(got_arg["fc_weight"].asnumpy(), [[1, 2]])
    raw = mx.nd.load(prefix + "-0002.params")
    assert sorted(raw) == ["arg:fc_bias", "arg:fc_weight", "aux:bn_moving_var"]


def test_load_params_reads_mxnet_checkpoint():
    import os

    prefix = os.path.join(os.path.dirname(__file__), "..", "data", "golden", "mlp")
    arg, aux = mx.model.load_params(prefix, 0)
    assert arg and all(isinstance(v, mx.nd.NDArray) for v in arg.values())


def test_module_checkpoint_calls_module():
    calls = []

    class Mod(object):
        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            calls.append((prefix, epoch, save_optimizer_states))

    cb = mx.callback.module_checkpoint(Mod(), "p", period=3, save_optimizer_states=True)
    for i in range(6):
        cb(i)
    assert calls == [("p", 3, True), ("p", 6, True)]
