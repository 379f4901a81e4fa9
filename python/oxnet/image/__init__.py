"""Image decoding, transforms, augmenters and iterators (``mx.image``)."""

from . import image  # noqa: F401
from .image import *  # noqa: F401,F403
from . import detection  # noqa: F401
from . import detection as det  # noqa: F401
from .detection import *  # noqa: F401,F403
from .image import __all__ as _image_all
from .detection import __all__ as _det_all

__all__ = list(_image_all) + list(_det_all)
