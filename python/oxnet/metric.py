"""Evaluation metrics (``mx.metric``), MXNet 1.9.1's classes, names and values.

A metric accumulates over ``update(labels, preds)`` calls (lists of NDArrays,
or single NDArrays) and reports ``get() -> (name, value)``. Every metric keeps
two running sums: the local one (cleared by ``reset_local``, e.g. by
Speedometer each log interval) and the global one (cleared only by
``reset``), read by ``get_global``.
"""
import math
from collections import OrderedDict

import numpy

from . import ndarray as _nd
from . import registry
from .ndarray import NDArray

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "Perplexity", "MAE",
           "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "PCC", "Loss", "Torch",
           "Caffe", "CustomMetric", "create", "register", "alias", "np", "check_label_shapes"]

_NUMERIC = (int, float, numpy.generic)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise ValueError unless ``labels`` and ``preds`` have the same length
    (or, with ``shape``, the same shape). With ``wrap``, single NDArrays are
    wrapped into lists. Returns ``(labels, preds)``."""
    if shape:
        lshape, pshape = labels.shape, preds.shape
    else:
        lshape, pshape = len(labels), len(preds)
    if lshape != pshape:
        raise ValueError("Shape of labels {} does not match shape of predictions {}".format(lshape, pshape))
    if wrap:
        if isinstance(labels, NDArray):
            labels = [labels]
        if isinstance(preds, NDArray):
            preds = [preds]
    return labels, preds


def _np(x):
    return x.asnumpy() if isinstance(x, NDArray) else numpy.asarray(x)


class EvalMetric(object):
    """Base class of metrics.

    Parameters
    ----------
    name : str
        The metric's name (reported by :meth:`get`).
    output_names, label_names : list of str, optional
        Which outputs / labels :meth:`update_dict` passes on (default all).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self):
        """The metric's constructor arguments as a dict (``create(**config)``
        rebuilds it)."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name, "output_names": self.output_names,
                       "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """:meth:`update` from dicts of name -> NDArray (filtered by
        ``label_names`` / ``output_names`` when set)."""
        pred = [pred[n] for n in self.output_names] if self.output_names is not None else list(pred.values())
        label = [label[n] for n in self.label_names] if self.label_names is not None else list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Accumulate ``labels`` and ``preds`` (lists of NDArrays)."""
        raise NotImplementedError("%s.update is not implemented" % type(self).__name__)

    def reset(self):
        """Clear the local and the global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local sums only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self):
        """``(name, value)`` of the local sums; value is NaN before any update."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """``(name, value)`` since the last :meth:`reset`."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_name_value(self):
        """The local value(s) as a list of ``(name, value)`` pairs."""
        return self._pairs(*self.get())

    def get_global_name_value(self):
        """The global value(s) as a list of ``(name, value)`` pairs."""
        if not self._has_global_stats:
            return self.get_name_value()
        return self._pairs(*self.get_global())


register = registry.get_register_func(EvalMetric, "metric")
alias = registry.get_alias_func(EvalMetric, "metric")
_create = registry.get_create_func(EvalMetric, "metric")


def create(metric, *args, **kwargs):
    """A metric from a name ('acc', 'ce', 'f1', ...), a callable
    ``feval(label, pred)`` (wrapped in :class:`CustomMetric`), a list of
    those (a :class:`CompositeEvalMetric`) or an instance (returned)."""
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; :meth:`get` returns
    ``([names], [values])``."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super(CompositeEvalMetric, self).__init__(name, output_names=output_names, label_names=label_names,
                                                  has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Append a child metric (anything :func:`create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError("Metric index {} is out of range 0 and {}".format(index, len(self.metrics)))
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict([kv for kv in labels.items() if kv[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([kv for kv in preds.items() if kv[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend([name] if isinstance(name, str) else name)
            values.extend([value] if isinstance(value, _NUMERIC) else value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super(CompositeEvalMetric, self).get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct predictions. A prediction whose shape differs
    from its label's is reduced by argmax over ``axis`` (1) first."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super(Accuracy, self).__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                                       has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            if pred.shape != label.shape:
                pred = _nd.argmax(pred, axis=self.axis)
            pred = _np(pred).astype("int32").ravel()
            label = _np(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` (> 1) highest
    scores. The name gets a ``_<top_k>`` suffix."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super(TopKAccuracy, self).__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                                           has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError("Please use Accuracy if top_k is no more than 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            if len(pred.shape) > 2:
                raise ValueError("TopKAccuracy: predictions should be no more than 2 dims, got %s" % (pred.shape,))
            order = numpy.argpartition(_np(pred).astype("float32"), -self.top_k)
            label = _np(label).astype("int32")
            check_label_shapes(label, order)
            count = order.shape[0]
            if order.ndim == 1:
                correct = int((order.flat == label.flat).sum())
                self.sum_metric += correct
            else:
                ncls = order.shape[1]
                correct = 0
                for j in range(min(ncls, self.top_k)):
                    correct += int((order[:, ncls - 1 - j].flat == label.flat).sum())
                self.sum_metric += correct
                self.global_sum_metric += correct
            self.num_inst += count
            self.global_num_inst += count


class _BinaryStats(object):
    """Confusion counts of a binary classifier, local and global."""

    _FIELDS = ("true_positives", "false_negatives", "false_positives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        pred = _np(pred)
        label = _np(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError("%s currently only supports binary classification." % self.__class__.__name__)
        pt = pred_label == 1
        lt = label == 1
        counts = {"true_positives": int((pt & lt).sum()), "false_positives": int((pt & ~lt).sum()),
                  "false_negatives": int((~pt & lt).sum()), "true_negatives": int((~pt & ~lt).sum())}
        for key, value in counts.items():
            setattr(self, key, getattr(self, key) + value)
            setattr(self, "global_" + key, getattr(self, "global_" + key) + value)

    @staticmethod
    def _ratio(num, den):
        return float(num) / den if den > 0 else 0.0

    @property
    def precision(self):
        return self._ratio(self.true_positives, self.true_positives + self.false_positives)

    @property
    def global_precision(self):
        return self._ratio(self.global_true_positives, self.global_true_positives + self.global_false_positives)

    @property
    def recall(self):
        return self._ratio(self.true_positives, self.true_positives + self.false_negatives)

    @property
    def global_recall(self):
        return self._ratio(self.global_true_positives, self.global_true_positives + self.global_false_negatives)

    @staticmethod
    def _f(p, r):
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def fscore(self):
        return self._f(self.precision, self.recall)

    @property
    def global_fscore(self):
        return self._f(self.global_precision, self.global_recall)

    def matthewscc(self, use_global=False):
        """Matthews correlation of the (local or global) counts; zero factors
        of the denominator are left out, as in MXNet."""
        pre = "global_" if use_global else ""
        tp, fp, fn, tn = (float(getattr(self, pre + k)) for k in
                          ("true_positives", "false_positives", "false_negatives", "true_negatives"))
        if tp + fp + fn + tn == 0:
            return 0.0
        denom = 1.0
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0.0:
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return self.false_negatives + self.false_positives + self.true_negatives + self.true_positives

    @property
    def global_total_examples(self):
        return (self.global_false_negatives + self.global_false_positives + self.global_true_negatives
                + self.global_true_positives)

    def local_reset_stats(self):
        for key in self._FIELDS:
            setattr(self, key, 0)

    def reset_stats(self):
        for key in self._FIELDS:
            setattr(self, key, 0)
            setattr(self, "global_" + key, 0)


class _BinaryMetric(EvalMetric):
    """Shared update of F1 and MCC: 'macro' averages the per-update score,
    'micro' scores the pooled counts."""

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self.metrics = _BinaryStats()
        EvalMetric.__init__(self, name=name, output_names=output_names, label_names=label_names,
                            has_global_stats=True)

    def _score(self, use_global):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        if self.average == "macro":
            self.sum_metric += self._score(False)
            self.global_sum_metric += self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            self.sum_metric = self._score(False) * self.metrics.total_examples
            self.global_sum_metric = self._score(True) * self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self):
        self.sum_metric = 0.0
        self.num_inst = 0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        self.metrics.reset_stats()

    def reset_local(self):
        self.sum_metric = 0.0
        self.num_inst = 0
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (class 1 positive; predictions are
    per-class scores, argmax over axis 1). ``average``: 'macro' (mean of the
    per-update F1, default) or 'micro' (F1 of all counts)."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super(F1, self).__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.global_fscore if use_global else self.metrics.fscore


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier; ``average``
    as in :class:`F1`."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super(MCC, self).__init__(name, output_names, label_names, average)
        self._average = average
        self._metrics = self.metrics

    def _score(self, use_global):
        return self.metrics.matthewscc(use_global=use_global)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-probability of the labels.
    ``ignore_label`` (or None) marks positions left out; ``axis`` (-1) is the
    class axis of the predictions."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None):
        super(Perplexity, self).__init__(name, ignore_label=ignore_label, output_names=output_names,
                                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise ValueError("Perplexity: %d labels but %d predictions" % (len(labels), len(preds)))
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            if label.size != pred.size / pred.shape[-1]:
                raise ValueError("shape mismatch: %s vs. %s" % (label.shape, pred.shape))
            label = label.as_in_context(pred.context).reshape((label.size,))
            picked = _nd.pick(pred, label.astype(dtype="int32"), axis=self.axis)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                num -= float(_nd.sum(ignore).asscalar())
                picked = picked * (1 - ignore) + ignore
            loss -= float(_nd.sum(_nd.log(_nd.maximum(1e-10, picked))).asscalar())
            num += picked.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


def _as_columns(label, pred):
    label, pred = _np(label), _np(pred)
    if label.ndim == 1:
        label = label.reshape(label.shape[0], 1)
    if pred.ndim == 1:
        pred = pred.reshape(pred.shape[0], 1)
    return label, pred


class _Regression(EvalMetric):
    def __init__(self, name, output_names, label_names):
        super(_Regression, self).__init__(name, output_names=output_names, label_names=label_names,
                                          has_global_stats=True)

    def _value(self, diff):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _as_columns(label, pred)
            self._add(self._value(label - pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged per update (batch)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super(MAE, self).__init__(name, output_names, label_names)

    def _value(self, diff):
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error, averaged per update (batch)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super(MSE, self).__init__(name, output_names, label_names)

    def _value(self, diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error of each update (batch), averaged over updates."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super(RMSE, self).__init__(name, output_names, label_names)

    def _value(self, diff):
        return numpy.sqrt((diff ** 2.0).mean())


class _LogLoss(EvalMetric):
    def __init__(self, name, eps, output_names, label_names):
        super(_LogLoss, self).__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                                       has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).ravel()
            pred = _np(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError("%s: %d labels but %d predictions (shape %s)"
                                 % (type(self).__name__, label.shape[0], pred.shape[0], pred.shape))
            prob = pred[numpy.arange(label.shape[0], dtype=numpy.int64), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("ce")
class CrossEntropy(_LogLoss):
    """Mean of ``-log(p[label] + eps)`` over samples (``eps`` 1e-12);
    predictions are probabilities (batch, classes)."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super(CrossEntropy, self).__init__(name, eps, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood of the labels (as :class:`CrossEntropy`,
    named 'nll-loss')."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super(NegativeLogLikelihood, self).__init__(name, eps, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: 'macro' averages the
    per-update coefficient; 'micro' pools every value (running moments)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super(PearsonCorrelation, self).__init__(name, output_names=output_names, label_names=label_names,
                                                 has_global_stats=True)
        if self.average == "micro":
            self.reset_micro()

    def reset_micro(self):
        """Clear the pooled moments of 'micro' averaging."""
        self._sse_p = 0
        self._mean_p = 0
        self._sse_l = 0
        self._mean_l = 0
        self._pred_nums = 0
        self._label_nums = 0
        self._conv = 0

    def reset(self):
        super(PearsonCorrelation, self).reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def update_variance(new_values, count, mean, m_2):
        """Welford's update of (count, mean, sum of squared deviations)."""
        count += len(new_values)
        delta = new_values - mean
        mean += numpy.sum(delta / count)
        m_2 += numpy.sum(delta * (new_values - mean))
        return count, mean, m_2

    def update_cov(self, label, pred):
        """Accumulate the co-moment against the running means."""
        self._conv = self._conv + numpy.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _np(label).ravel().astype(numpy.float64)
            pred = _np(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
            else:
                self.num_inst += 1
                self.global_num_inst += 1
                self._label_nums, self._mean_l, self._sse_l = self.update_variance(
                    label, self._label_nums, self._mean_l, self._sse_l)
                self.update_cov(label, pred)
                self._pred_nums, self._mean_p, self._sse_p = self.update_variance(
                    pred, self._pred_nums, self._mean_p, self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / self.num_inst)
        n = self._label_nums
        r = self._conv / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1)) * numpy.sqrt(self._sse_l / (n - 1)))
        return (self.name, r)


@register
class PCC(EvalMetric):
    """Multi-class Matthews correlation (Gorodkin's R_K) from a confusion
    matrix that grows with the largest class seen. Predictions are labels or
    per-class scores (argmax over axis 1)."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super(PCC, self).__init__(name=name, output_names=output_names, label_names=label_names,
                                  has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant", constant_values=(0))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant", constant_values=(0))
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).astype("int32")
            pred = _np(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            n = max(pred.max(), label.max())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred.ravel(), label.ravel()), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, _value):
        pass  # derived from the confusion matrix

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, _value):
        pass

    def reset(self):
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Loss(EvalMetric):
    """Mean of the outputs themselves (for networks whose output is a loss);
    labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super(Loss, self).__init__(name, output_names=output_names, label_names=label_names,
                                   has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, NDArray):
            preds = [preds]
        for pred in preds:
            self._add(float(_nd.sum(pred).asscalar()), pred.size)


@register
class Torch(Loss):
    """:class:`Loss` named 'torch' (kept by MXNet for old scripts)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super(Torch, self).__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """:class:`Loss` named 'caffe' (kept by MXNet for old scripts)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super(Caffe, self).__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on NumPy arrays, returning a
    value (counted as one instance) or ``(sum, count)``. The name defaults
    to the function's (``custom(<lambda>)`` for lambdas).
    ``allow_extra_outputs`` skips the label/prediction count check."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = "custom(%s)" % name
        super(CustomMetric, self).__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                                           output_names=output_names, label_names=label_names,
                                           has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                total, count = reval
                self._add(total, count)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A :class:`CustomMetric` from a NumPy function ``feval(label, pred)``."""
    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
