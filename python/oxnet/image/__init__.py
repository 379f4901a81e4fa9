"""Image decoding, transforms, augmenters and iterators (``mx.image``)."""

from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
