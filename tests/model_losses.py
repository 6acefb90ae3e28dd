"""Model losses shared by the tests: the softmax cross-entropy of tanh MLPs, written the
way users (and benchmarks/mlp.py) write them."""

from __future__ import annotations

import numpy as np

import chainrule.numpy as cnp


def mlp_loss(params, x, labels):
    """One tanh hidden layer, ``params = (w1, b1, w2, b2)``; log-probabilities as
    ``logits - logsumexp(logits)``."""
    w1, b1, w2, b2 = params
    h = cnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logp = logits - cnp.logsumexp(logits, axis=1, keepdims=True)
    return -cnp.mean(logp[np.arange(x.shape[0]), labels])


def layers_mlp_loss(layers, x, labels):
    """Any number of tanh hidden layers, ``layers = [(W, b), ...]`` (the last one gives
    the logits); log-probabilities by ``log_softmax``."""
    h = x
    for W, b in layers[:-1]:
        h = cnp.tanh(h @ W + b)
    W, b = layers[-1]
    logp = cnp.log_softmax(h @ W + b, axis=-1)
    return -cnp.mean(logp[np.arange(x.shape[0]), labels])
