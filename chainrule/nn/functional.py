"""``chainrule.nn``'s functions under PyTorch's module name, for
``import chainrule.nn.functional as F``."""

from __future__ import annotations

from . import *  # noqa: F403
from . import __all__  # noqa: F401
