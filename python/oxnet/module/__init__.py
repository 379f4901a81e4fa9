"""The Module API (``mx.mod`` / ``mx.module``): train and run symbolic
networks with MXNet 1.9.1's BaseModule, Module, BucketingModule and
SequentialModule."""
from .base_module import BaseModule  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
from .module import Module  # noqa: F401
from .sequential_module import SequentialModule  # noqa: F401

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule"]
