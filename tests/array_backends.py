"""Shared by the tests that run programs on other array libraries (PyTorch, Dask, through
``chainrule.backend.array_api``): a NumPy array moved to a backend, and back."""

from __future__ import annotations

import numpy as np

from chainrule.backend.array_api.namespaces import NAMESPACES


def on(name, x):
    return NAMESPACES[name].asarray(np.asarray(x))


def host(name, x):
    return NAMESPACES[name].to_numpy(x)


def is_backend_array(name, x) -> bool:
    return NAMESPACES[name].owns(x)
