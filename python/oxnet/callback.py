"""Training callbacks (``mx.callback``), MXNet 1.9.1's, plus a live
terminal progress line.

Batch-end callbacks receive a :class:`oxnet.model.BatchEndParam`
(``epoch``, ``nbatch``, ``eval_metric``, ``locals``); epoch-end callbacks
receive ``(epoch, symbol, arg_params, aux_params)``.
"""
import logging
import math
import sys
import time

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer", "ProgressBar",
           "LogValidationMetricsCallback", "LiveProgress"]


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback saving ``mod`` (``mod.save_checkpoint``) every
    ``period`` epochs, optionally with the optimizer states."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback writing ``prefix-symbol.json`` and
    ``prefix-<epoch>.params`` (:func:`oxnet.model.save_checkpoint`) every
    ``period`` epochs."""
    from .model import save_checkpoint

    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every ``period``
    batches (``Iter[e] Batch[b] Train-name=value``); ``auto_reset`` clears
    the local metric after logging."""

    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()

    return _callback


class Speedometer(object):
    """Log throughput and the training metric every ``frequent`` batches,
    with MXNet's line: ``Epoch[0] Batch [50-100]\\tSpeed: 1234.56
    samples/sec\\taccuracy=0.912345``. ``auto_reset`` (True) clears the local
    metric after each line, so each line covers its own interval."""

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            fields = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *fields)
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, speed, *fields)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar(object):
    """Log a text bar ``[====----] 50%`` of ``nbatch / total`` each batch
    (``length`` characters wide), as MXNet's ProgressBar."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        logging.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percents, "%")


class LogValidationMetricsCallback(object):
    """An eval-end callback logging ``Epoch[e] Validation-name=value``."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


class LiveProgress(object):
    """A batch-end callback redrawing one status line in place:
    ``epoch 2 [=====>    ] 120/235 batches  5321 samples/s  accuracy=0.9312  ETA 3s``.

    It only draws when ``stream`` (default ``sys.stderr``) is a terminal
    (``isatty()``), so logs and pipes stay clean. ``total`` is the number of
    batches per epoch when known (else the count and speed are shown
    without a bar or ETA). Not part of MXNet; ``Module.fit`` adds it on a
    terminal.
    """

    def __init__(self, batch_size, total=None, stream=None, width=24, min_interval=0.1):
        self.batch_size = batch_size
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.min_interval = min_interval
        self._epoch = None
        self._start = 0.0
        self._last_draw = 0.0
        self._drawn = False

    def enabled(self):
        """Whether the stream is a terminal."""
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # closed stream
            return False

    def line(self, param, now):
        """The status text for ``param`` at time ``now``."""
        done = param.nbatch + 1
        elapsed = max(now - self._start, 1e-9)
        speed = done * self.batch_size / elapsed
        parts = ["epoch %d" % param.epoch]
        if self.total:
            frac = min(1.0, done / float(self.total))
            filled = int(frac * self.width)
            bar = "=" * filled + (">" if filled < self.width else "") + " " * max(0, self.width - filled - 1)
            parts.append("[%s] %d/%d batches" % (bar, done, self.total))
        else:
            parts.append("%d batches" % done)
        parts.append("%.0f samples/s" % speed)
        if param.eval_metric is not None:
            parts.extend("%s=%.4f" % (n, v) for n, v in param.eval_metric.get_name_value())
        if self.total and done < self.total:
            parts.append("ETA %.0fs" % ((self.total - done) * elapsed / done))
        return "  ".join(parts)

    def __call__(self, param):
        if not self.enabled():
            return
        now = time.time()
        if param.epoch != self._epoch or param.nbatch == 0:
            if self._drawn:
                self.stream.write("\n")
            self._epoch = param.epoch
            self._start = now
            self._last_draw = 0.0
        last = self.total is not None and param.nbatch + 1 >= self.total
        if now - self._last_draw < self.min_interval and not last:
            return
        self._last_draw = now
        self.stream.write("\r\x1b[K" + self.line(param, now))
        self.stream.flush()
        self._drawn = True

    def finish(self):
        """End the status line (call at the end of training)."""
        if self._drawn and self.enabled():
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False
