"""What PyTorch's functions and operators do on chainrule values.

PyTorch hands a call to the ``__torch_function__`` of a chainrule value (a traced
value, a tape tensor) among its arguments: ``torch_tensor @ traced``,
``torch.sin(traced)``, ``torch.sum(traced, dim=0)``. This table maps each PyTorch
function that has a NumPy counterpart to this namespace's function, with PyTorch's
argument names (``dim``, ``keepdim``) turned into NumPy's. The PyTorch tensors among
the arguments go to the ops as they are: a traced program takes them as the NumPy
arrays they convert to (an input, when the function closes over them), the tape
records them so. Built the first time it is needed (PyTorch is imported then).
"""

from __future__ import annotations

_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}


def _numpy_keywords(fn):
    """``fn`` taking PyTorch's keyword names for NumPy's."""
    def call(*args, **kwargs):
        return fn(*args, **{_KEYWORDS.get(k, k): v for k, v in kwargs.items()})
    return call


def _reflected(fn):
    return lambda a, b: fn(b, a)


def fill(table: dict, cnp) -> None:
    """Put PyTorch's functions and ``torch.Tensor`` methods into ``table``, each done by
    the function of the namespace ``cnp`` (chainrule.numpy) that computes it."""
    import torch

    tensor = torch.Tensor
    binary = {"add": cnp.add, "sub": cnp.subtract, "mul": cnp.multiply,
              "truediv": cnp.divide, "matmul": cnp.matmul, "pow": cnp.power,
              "lt": cnp.less, "le": cnp.less_equal, "gt": cnp.greater,
              "ge": cnp.greater_equal, "eq": cnp.equal, "ne": cnp.not_equal}
    for name, fn in binary.items():
        table[getattr(tensor, f"__{name}__")] = fn
        if hasattr(tensor, f"__r{name}__"):
            table[getattr(tensor, f"__r{name}__")] = _reflected(fn)
    table[tensor.__neg__] = cnp.negative
    table[tensor.__abs__] = cnp.abs
    table[tensor.__getitem__] = cnp.getitem
    same = {  # torch name -> chainrule.numpy name, same meaning and arguments
        "sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log",
        "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "tanh": "tanh",
        "sigmoid": "sigmoid", "abs": "abs", "neg": "negative", "negative": "negative",
        "floor": "floor", "ceil": "ceil", "sign": "sign", "square": "square",
        "reciprocal": "reciprocal", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
        "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan", "sinh": "sinh",
        "cosh": "cosh", "relu": "relu", "add": "add", "sub": "subtract",
        "subtract": "subtract", "mul": "multiply", "multiply": "multiply",
        "div": "divide", "divide": "divide", "true_divide": "divide", "pow": "power",
        "maximum": "maximum", "minimum": "minimum", "matmul": "matmul", "mm": "matmul",
        "dot": "dot", "outer": "outer", "where": "where", "sum": "sum", "mean": "mean",
        "prod": "prod", "amax": "max", "amin": "min", "stack": "stack",
        "cat": "concatenate", "concatenate": "concatenate", "reshape": "reshape",
        "transpose": "swapaxes", "exp2": "exp2", "log2": "log2", "log10": "log10",
        "atan2": "arctan2", "arctan2": "arctan2", "logsumexp": "logsumexp",
        "einsum": "einsum", "squeeze": "squeeze", "unsqueeze": "expand_dims",
        "flatten": "ravel", "clamp": "clip", "clip": "clip",
    }
    for theirs, ours in same.items():
        fn = _numpy_keywords(getattr(cnp, ours))
        for owner in (torch, tensor):
            if hasattr(owner, theirs):
                table[getattr(owner, theirs)] = fn
