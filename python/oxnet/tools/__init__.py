"""Command-line tools (``python -m oxnet.tools.im2rec``)."""
