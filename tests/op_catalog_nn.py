"""The op catalog's entries for chainrule.nn's ops (convolution and pooling), with
attributes off their defaults; tests/op_catalog.py includes them in CATALOG."""

import numpy as np

from chainrule import ops

rng = np.random.default_rng(43)


def U(*shape):
    return rng.uniform(-1.0, 1.0, shape)


# chainrule.nn's ops, with attributes off their defaults (convolution, pooling)
_CONV = {"stride": (2, 1), "padding": ((1, 0), (0, 1)), "dilation": (1, 2), "groups": 2}
_MAXP = {"kernel": (2, 2), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 1)}
_AVGP = {"kernel": (3, 2), "stride": 2, "padding": (1, 0), "ceil_mode": True,
         "count_include_pad": False}
NN = {
    "convolution": (lambda x, w: ops.convolution(x, w, **_CONV), (U(2, 4, 5, 6), U(4, 2, 3, 2))),
    "convolution_transpose": (lambda g, w: ops.convolution_transpose(
        g, w, stride=2, padding=1, dilation=1, shape=(6,)), (U(2, 3, 4), U(3, 2, 2))),
    "convolution_weight": (lambda x, g: ops.convolution_weight(
        x, g, stride=1, padding=((0, 2),), dilation=1, kernel=(3,)), (U(2, 3, 5), U(2, 4, 5))),
    "max_pool": (lambda x: ops.max_pool(x, **_MAXP), (U(3, 5, 4),)),
    "max_pool_select": (lambda x, v: ops.max_pool_select(x, v, **_MAXP), (U(3, 5, 4),) * 2),
    "max_pool_scatter": (lambda x, g: ops.max_pool_scatter(x, g, **_MAXP),
                         (U(3, 5, 4), U(3, 3, 3))),
    "avg_pool": (lambda x: ops.avg_pool(x, **_AVGP), (U(2, 5, 4),)),
    "avg_pool_transpose": (lambda g: ops.avg_pool_transpose(g, shape=(5, 4), **_AVGP),
                           (U(2, 3, 2),)),
}
