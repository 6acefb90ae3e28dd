"""autograd's names and conventions, on chainrule: the public face of
``chainrule.compat.autograd``. A program written for HIPS autograd runs after
changing its imports (``docs/migrating_from_autograd.md``)::

    from autograd import grad, jacobian  ->  from chainrule.autograd_compat import grad, jacobian
    import autograd.numpy as np          ->  import chainrule.numpy as np
"""

import sys as _sys

from .compat.autograd import builtins as _builtins
from .compat.autograd.api import *  # noqa: F403
from .compat.autograd.api import __all__  # noqa: F401

# ``from chainrule.autograd_compat.builtins import isinstance``, as autograd.builtins
_sys.modules[__name__ + ".builtins"] = _builtins
builtins = _builtins
