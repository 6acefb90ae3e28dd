"""The kernels one backend needs of its own (``BY_NAMESPACE``): PyTorch's scatter updates
(repeated positions accumulate, as NumPy's ``ufunc.at``), Dask's FFTs (each transformed
axis in one chunk) and the ops Dask runs as whole-array tasks of their NumPy kernels (see
``array_api.kernels`` for the kernels every array-API namespace shares)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import ops
from ...errors import BackendError
from ...ir.op import Op
from .kernels import GENERIC, take


def _torch_update(reduce: str | None):
    """``base.at[key].<op>(value)`` on PyTorch for any key: the flat positions the key
    selects (an index array of positions indexed by the key), then one scatter over
    them, so repeated positions accumulate as NumPy's ``ufunc.at`` does. A key without
    index arrays is the shared kernel's (it assigns through forward slices)."""
    basic = GENERIC[{None: ops.index_set, "sum": ops.index_add, "prod": ops.index_multiply,
                     "amax": ops.index_max, "amin": ops.index_min}[reduce]]

    def kernel(ctx, base, value, *arrays, key):
        if not arrays:
            return basic(ctx, base, value, key=key)
        import torch

        out = base.clone()
        pos = take(ctx, torch.arange(out.numel(), device=out.device).reshape(out.shape),
                   key, arrays)
        vals = torch.broadcast_to(value.to(out.dtype), pos.shape).reshape(-1)
        pos = pos.reshape(-1)
        flat = out.view(-1)
        if reduce is None:
            flat[pos] = vals
        elif reduce == "sum":
            flat.index_add_(0, pos, vals)
        else:
            flat.scatter_reduce_(0, pos, vals, reduce=reduce, include_self=True)
        return out

    return kernel


def _dask_fft(op, axes_of):
    """Dask's FFTs need each transformed axis in one chunk: rechunk those axes first."""
    generic = GENERIC[op]

    def kernel(ctx, x, *args, **attrs):
        axes = axes_of(x, attrs)
        x = x.rechunk({a % x.ndim: -1 for a in axes})
        return generic(ctx, x, *args, **attrs)

    return kernel


def whole_array_kernel(op, result_type):
    """Dask runs the op's NumPy kernel itself: chunk by chunk for an elementwise op
    (``map_blocks``), else as one task on the whole operands (small arrays: a matrix
    factorization, a gather with several index arrays), results of the IR's shapes."""
    from ...ir.types import TupleType

    kernel_fn = op.kernel

    def kernel(ctx, *arrays, **attrs):
        import dask
        import dask.array as da

        fields = result_type.fields if isinstance(result_type, TupleType) else (result_type,)
        for t in fields:
            if not t.is_static:

                raise BackendError(f"{op.name}: a whole-array task on dask needs static "
                                   f"shapes, got {result_type!r}")
        shape = tuple(int(d) for d in fields[0].shape)
        if op.elementwise and len(fields) == 1 and all(
                isinstance(a, da.Array) for a in arrays) and all(shape):
            # operands broadcast to the result first: blocks then correspond one to one
            arrays = [da.broadcast_to(a, shape) for a in arrays]
            arrays = [a.rechunk(arrays[0].chunks) for a in arrays]
            return da.map_blocks(_with_attrs, *arrays, fn=kernel_fn, attrs=attrs,
                                 dtype=fields[0].dtype.numpy,
                                 meta=np.empty((0,) * fields[0].ndim, fields[0].dtype.numpy))
        task = dask.delayed(_with_attrs, pure=True, nout=len(fields) if len(fields) > 1
                            else None)(*arrays, fn=kernel_fn, attrs=attrs)
        outs = [da.from_delayed(task[i] if len(fields) > 1 else task,
                                shape=tuple(int(d) for d in t.shape), dtype=t.dtype.numpy)
                for i, t in enumerate(fields)]
        return tuple(outs) if isinstance(result_type, TupleType) else outs[0]

    return kernel


def _with_attrs(*arrays, fn, attrs):
    out = fn(*[np.asarray(a) for a in arrays], **attrs)
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


def dask_whole_array(op, attrs, arg_types) -> bool:
    """Whether Dask runs ``op`` as a whole-array task though a generic kernel exists:
    the factorizations (Dask's need tall-and-skinny chunking) and gathers or updates
    Dask's indexing does not support (several or multi-dimensional index arrays, an int
    beside an index array)."""
    if op in DASK_WHOLE:
        return True
    if op is ops.index or op in _UPDATES:
        if any(0 in t.shape for t in arg_types):  # Dask's assignment fails on empty keys
            return True
        arrays = arg_types[1:] if op is ops.index else arg_types[2:]
        # Dask drops an int's axis first where NumPy counts the int as one more index
        # array (``x[1, :, a]``): such keys run as NumPy's
        return bool(arrays) and (op is not ops.index or len(arrays) > 1
                                 or any(t.ndim > 1 for t in arrays)
                                 or any(type(e) is int for e in attrs["key"]))
    return False


DASK_WHOLE = frozenset({ops.svd, ops.svdvals, ops.eigh, ops.eigvalsh, ops.qr, ops.cholesky,
                        ops.det, ops.slogdet})
_UPDATES = frozenset({ops.index_add, ops.index_set, ops.index_multiply, ops.index_max,
                      ops.index_min})

# per-namespace kernels of ops, keyed by the op: these kernels build on the shared ones of
# array_api/kernels.py, which the ops' declarations (a layer below) cannot import
BY_NAMESPACE: dict[str, dict[Op, Callable]] = {
    "dask": {ops.fft.fft: _dask_fft(ops.fft.fft, lambda x, a: a["axes"]),
             ops.fft.rfft: _dask_fft(ops.fft.rfft, lambda x, a: (a.get("axis", -1),)),
             ops.fft.irfft: _dask_fft(ops.fft.irfft, lambda x, a: (a.get("axis", -1),))},
    "torch": {ops.index_add: _torch_update("sum"), ops.index_set: _torch_update(None),
              ops.index_multiply: _torch_update("prod"), ops.index_max: _torch_update("amax"),
              ops.index_min: _torch_update("amin")},
}
