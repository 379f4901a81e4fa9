"""Checkpoint helpers (``mx.model``): MXNet 1.9.1's file layout.

A checkpoint is ``prefix-symbol.json`` (the network) plus
``prefix-%04d.params`` (parameters keyed ``arg:<name>`` / ``aux:<name>``,
in MXNet's binary NDArray format, readable by MXNet and written by it).
"""
import logging
from collections import namedtuple

from . import ndarray as nd
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = """What batch-end and epoch-end callbacks receive: the epoch,
the batch number within it, the evaluation metric and the caller's locals()."""


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Save ``symbol`` (unless None) to ``prefix-symbol.json`` and the
    parameters (dicts of name -> NDArray) to ``prefix-<epoch:04d>.params``."""
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {("arg:%s" % k): v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({("aux:%s" % k): v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = "%s-%04d.params" % (prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """Read ``prefix-<epoch:04d>.params``; returns ``(arg_params, aux_params)``."""
    fname = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(fname)
    arg_params, aux_params = {}, {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return (arg_params, aux_params)
    if not isinstance(save_dict, dict):
        raise ValueError("load_params: %s holds unnamed arrays; a checkpoint names them arg:<name> / aux:<name>"
                         % fname)
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return (arg_params, aux_params)


def load_checkpoint(prefix, epoch):
    """Load ``prefix-symbol.json`` and ``prefix-<epoch:04d>.params``; returns
    ``(symbol, arg_params, aux_params)``."""
    from . import symbol as sym  # the symbolic API

    symbol = sym.load("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return (symbol, arg_params, aux_params)
