"""Learning-rate schedules (``mx.lr_scheduler``), MXNet 1.9.1's classes.

A scheduler is called with the optimizer's update count ``num_update`` and
returns the learning rate. Every schedule can start with a warm-up of
``warmup_steps`` updates: 'linear' (from ``warmup_begin_lr`` up to
``base_lr``) or 'constant' (``warmup_begin_lr`` throughout).
"""
import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]


class LRScheduler(object):
    """Base class of learning-rate schedules.

    Parameters
    ----------
    base_lr : float, default 0.01
        The learning rate after warm-up.
    warmup_steps : int, default 0
        Number of warm-up updates.
    warmup_begin_lr : float, default 0
        The learning rate warm-up starts from (must not exceed ``base_lr``).
    warmup_mode : {'linear', 'constant'}, default 'linear'
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        if not isinstance(warmup_steps, int):
            raise TypeError("LRScheduler: warmup_steps must be an int, got %r" % (warmup_steps,))
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if warmup_begin_lr > base_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup, got %r" % (warmup_mode,))
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The learning rate at update ``num_update`` (< warmup_steps)."""
        if num_update >= self.warmup_steps:
            raise ValueError("get_warmup_lr: num_update %d is past the %d warm-up steps"
                             % (num_update, self.warmup_steps))
        if self.warmup_mode == "linear":
            frac = float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + (self.warmup_final_lr - self.warmup_begin_lr) * frac
        return self.warmup_begin_lr

    def __call__(self, num_update):
        """The learning rate for update count ``num_update``."""
        raise NotImplementedError("%s must override __call__" % type(self).__name__)


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates, never
    going below ``stop_factor_lr``::

        lr = base_lr * factor ** floor((num_update - 1) / step)

    Parameters: ``step`` (int >= 1), ``factor`` (<= 1, default 1),
    ``stop_factor_lr`` (1e-8), and the warm-up arguments of
    :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(FactorScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # The schedule is stateful (as MXNet's): it only moves forward.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                             num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` each time the update count
    passes one of the increasing ``step`` list's entries::

        lr = base_lr * factor ** (number of steps s with num_update > s)

    Parameters: ``step`` (increasing list of ints >= 1), ``factor`` (<= 1),
    and the warm-up arguments of :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        super(MultiFactorScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ValueError("MultiFactorScheduler: step must be a non-empty list of ints, got %r" % (step,))
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay after warm-up::

        lr = final_lr + (base_lr - final_lr) * (1 - t / (max_update - warmup_steps)) ** pwr

    with ``t = num_update - warmup_steps``; constant after ``max_update``.
    Parameters: ``max_update`` (int >= 1), ``base_lr`` (0.01), ``pwr`` (2),
    ``final_lr`` (0), and the warm-up arguments.
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(PolyScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError("PolyScheduler: max_update must be an int, got %r" % (max_update,))
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * pow(1 - frac, self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay after warm-up::

        lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * t / (max_update - warmup_steps))) / 2

    with ``t = num_update - warmup_steps``; constant after ``max_update``.
    Parameters: ``max_update`` (int >= 1), ``base_lr`` (0.01), ``final_lr``
    (0), and the warm-up arguments.
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super(CosineScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError("CosineScheduler: max_update must be an int, got %r" % (max_update,))
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * (1 + cos(pi * frac)) / 2
        return self.base_lr
