"""GradBench ``lstm``: the loss of ADBench's LSTM over a text, and its gradient.

l layers of hsize b = 14 with diagonal weights: ``main_params`` (2l, 4b), rows 2i and
2i+1 the weights and biases of layer i, each the four gates (forget, input, output,
change); ``extra_params`` (3, b) the input weight, output weight and output bias;
``state`` (2l, b) the initial hidden and cell state of each layer; ``sequence`` (c, b)
one-hot characters. Each step feeds x_t * in_weight through the layers (forget and
output gates read the layer's input, input and change gates its hidden state), predicts
y = h * out_weight + out_bias, normalises it as y - log(sum(exp(y)) + 2) (ADBench's
formula, which GradBench keeps) and scores it against x_{t+1}.

``objective``: minus the mean score over the c - 1 steps and b entries; ``jacobian``: its
gradient with respect to (main_params, extra_params), flattened row-major and
concatenated. Inputs: ADBench's files (``lstm_l{l}_c{c}.txt``, read as GradBench reads
them) from ``/work/shared/gradbench/data/lstm`` or ``$GRADBENCH_DATA/lstm``.
"""

from __future__ import annotations

import os

import numpy as np
from _harness import Check, close_to, gradient_checks

import chainrule as cr
import chainrule.numpy as cnp

NAME = "lstm"
FUNCTIONS = ("objective", "jacobian")
SIZES = {"small": {"l": 2, "c": 1024}, "medium": {"l": 4, "c": 1024}}
DATA = os.path.join(os.environ.get("GRADBENCH_DATA", "/work/shared/gradbench/data"), "lstm")


def read_instance(path: str) -> dict:
    """main_params, extra_params, state and sequence from one of ADBench's LSTM files:
    a line "l c b", then the four matrices, each after an empty line."""
    with open(path) as fh:
        lines = [line.split() for line in fh]
    layers, chars = int(lines[0][0]), int(lines[0][1])
    blocks, row = [], 1
    for rows in (2 * layers, 3, 2 * layers, chars):
        row += 1  # the empty line before each matrix
        blocks.append(np.array(lines[row:row + rows], dtype=np.float64))
        row += rows
    return dict(zip(("main_params", "extra_params", "state", "sequence"), blocks))


def inputs(size: str) -> dict:
    p = SIZES[size]
    return read_instance(os.path.join(DATA, f"lstm_l{p['l']}_c{p['c']}.txt"))


ARGS = ("main_params", "extra_params", "state", "sequence")


# -- chainrule ----------------------------------------------------------------------------


def lstm_objective(main_params, extra_params, state, sequence):
    layers, b = main_params.shape[0] // 2, sequence.shape[1]
    weights = main_params[0::2].reshape(layers, 4, b)
    biases = main_params[1::2].reshape(layers, 4, b)
    in_weight, out_weight, out_bias = extra_params[0], extra_params[1], extra_params[2]

    def step(carry, chars):
        hidden, cell = carry  # (layers, b) each
        x, target = chars
        inp = x * in_weight
        new_hidden, new_cell = [], []
        for i in range(layers):
            w, bias = weights[i], biases[i]
            forget = cnp.sigmoid(inp * w[0] + bias[0])
            ingate = cnp.sigmoid(hidden[i] * w[1] + bias[1])
            outgate = cnp.sigmoid(inp * w[2] + bias[2])
            change = cnp.tanh(hidden[i] * w[3] + bias[3])
            c = cell[i] * forget + ingate * change
            inp = outgate * cnp.tanh(c)
            new_hidden.append(inp)
            new_cell.append(c)
        pred = inp * out_weight + out_bias
        normalised = pred - cnp.log(cnp.sum(cnp.exp(pred)) + 2.0)
        return (cnp.stack(new_hidden), cnp.stack(new_cell)), cnp.sum(target * normalised)

    _, scores = cr.scan(step, (state[0::2], state[1::2]), (sequence[:-1], sequence[1:]))
    return -cnp.sum(scores) / ((sequence.shape[0] - 1) * b)


def prepare_chainrule(inp: dict) -> dict:
    args = [inp[a] for a in ARGS]
    objective = cr.jit(lstm_objective)
    jacobian = cr.grad(lstm_objective, argnums=(0, 1))
    return {"objective": lambda: objective(*args), "jacobian": lambda: jacobian(*args)}


# -- the NumPy reference: the C++ loops, one hidden unit at a time per gate ----------------


def lstm_numpy(main_params, extra_params, state, sequence) -> float:
    layers, b = main_params.shape[0] // 2, sequence.shape[1]
    sigmoid = lambda z: 1.0 / (1.0 + np.exp(-z))
    state = state.copy()
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        layer_input = sequence[t] * extra_params[0]
        for i in range(layers):
            w, bias = main_params[2 * i], main_params[2 * i + 1]
            hidden, cell = state[2 * i], state[2 * i + 1]
            forget = sigmoid(layer_input * w[:b] + bias[:b])
            ingate = sigmoid(hidden * w[b:2 * b] + bias[b:2 * b])
            outgate = sigmoid(layer_input * w[2 * b:3 * b] + bias[2 * b:3 * b])
            change = np.tanh(hidden * w[3 * b:] + bias[3 * b:])
            cell[:] = cell * forget + ingate * change
            hidden[:] = outgate * np.tanh(cell)
            layer_input = hidden
        ypred = layer_input * extra_params[1] + extra_params[2]
        ynorm = ypred - np.log(np.sum(np.exp(ypred)) + 2)
        total += np.dot(sequence[t + 1], ynorm)
    return -total / ((sequence.shape[0] - 1) * b)


def reference(function: str, inp: dict, full: bool) -> list[Check]:
    main, extra, state, seq = (inp[a] for a in ARGS)
    if function == "objective":
        return [close_to("NumPy loss", lstm_numpy(main, extra, state, seq), 1e-10)]

    def f(flat):
        return lstm_numpy(flat[:main.size].reshape(main.shape),
                          flat[main.size:].reshape(extra.shape), state, seq)

    # the objective is a long loop: a few coordinates even at the small size
    return gradient_checks(f, np.concatenate([main.ravel(), extra.ravel()]), False, coords=10)


# -- peers --------------------------------------------------------------------------------


def prepare_jax(inp: dict) -> dict:
    import jax
    import jax.numpy as jnp

    def loss(main_params, extra_params, state, sequence):
        n_layers, hsize = main_params.shape[0] // 2, sequence.shape[1]

        def layer(i, x, h, c):
            w = main_params[2 * i].reshape(4, hsize)
            bias = main_params[2 * i + 1].reshape(4, hsize)
            gates = jnp.stack([x, h, x, h]) * w + bias
            f, g, o = jax.nn.sigmoid(gates[0]), jax.nn.sigmoid(gates[1]), \
                jax.nn.sigmoid(gates[2])
            c = c * f + g * jnp.tanh(gates[3])
            return o * jnp.tanh(c), c

        def step(s, xy):
            x, y = xy
            h = x * extra_params[0]
            s = list(s)
            for i in range(n_layers):
                h, c = layer(i, h, s[2 * i], s[2 * i + 1])
                s[2 * i], s[2 * i + 1] = h, c
            pred = h * extra_params[1] + extra_params[2]
            return tuple(s), jnp.dot(y, pred - jnp.log(jnp.exp(pred).sum() + 2))

        _, scores = jax.lax.scan(step, tuple(state), (sequence[:-1], sequence[1:]))
        return -scores.sum() / ((sequence.shape[0] - 1) * hsize)

    args = [jnp.asarray(inp[a]) for a in ARGS]
    f, g = jax.jit(loss), jax.jit(jax.grad(loss, argnums=(0, 1)))
    return {"objective": lambda: f(*args), "jacobian": lambda: g(*args)}


def prepare_torch(inp: dict) -> dict:
    import torch

    def loss(main_params, extra_params, state, sequence):
        n_layers, hsize = main_params.shape[0] // 2, sequence.shape[1]
        weights, biases = main_params[0::2], main_params[1::2]
        hidden, cell = list(state[0::2]), list(state[1::2])
        total = 0.0
        for t in range(sequence.shape[0] - 1):
            x = sequence[t] * extra_params[0]
            for i in range(n_layers):
                gates = torch.cat([x, hidden[i], x, hidden[i]]) * weights[i] + biases[i]
                f, g, o, ch = gates.split(hsize)
                cell[i] = cell[i] * torch.sigmoid(f) + torch.sigmoid(g) * torch.tanh(ch)
                hidden[i] = torch.sigmoid(o) * torch.tanh(cell[i])
                x = hidden[i]
            pred = x * extra_params[1] + extra_params[2]
            total = total + torch.dot(sequence[t + 1],
                                      pred - torch.log(torch.exp(pred).sum() + 2))
        return -total / ((sequence.shape[0] - 1) * hsize)

    args = [torch.from_numpy(inp[a].copy()) for a in ARGS]
    leaves = [a.clone().requires_grad_(True) for a in args[:2]]

    def jacobian():
        return torch.autograd.grad(loss(*leaves, *args[2:]), leaves)

    return {"objective": lambda: loss(*args), "jacobian": jacobian}


def prepare_autograd(inp: dict) -> dict:
    import autograd
    import autograd.numpy as anp

    def sigmoid(z):
        return 0.5 * (anp.tanh(0.5 * z) + 1.0)

    def loss(params, state, sequence):
        main_params, extra_params = params
        n_layers, hsize = main_params.shape[0] // 2, sequence.shape[1]
        # the gates of each layer, sliced once (a slice inside the time loop would cost a
        # full-size zero array per step in autograd's backward pass)
        gates = [[(main_params[2 * i, g * hsize:(g + 1) * hsize],
                   main_params[2 * i + 1, g * hsize:(g + 1) * hsize]) for g in range(4)]
                 for i in range(n_layers)]
        in_w, out_w, out_b = extra_params[0], extra_params[1], extra_params[2]
        hidden = [state[2 * i] for i in range(n_layers)]
        cell = [state[2 * i + 1] for i in range(n_layers)]
        total = 0.0
        for t in range(sequence.shape[0] - 1):
            x = sequence[t] * in_w
            for i in range(n_layers):
                (wf, bf), (wi, bi), (wo, bo), (wc, bc) = gates[i]
                cell[i] = (cell[i] * sigmoid(x * wf + bf)
                           + sigmoid(hidden[i] * wi + bi) * anp.tanh(hidden[i] * wc + bc))
                hidden[i] = sigmoid(x * wo + bo) * anp.tanh(cell[i])
                x = hidden[i]
            pred = x * out_w + out_b
            total = total + anp.dot(sequence[t + 1], pred - anp.log(anp.sum(anp.exp(pred)) + 2))
        return -total / ((sequence.shape[0] - 1) * hsize)

    params = (inp["main_params"], inp["extra_params"])
    state, sequence = inp["state"], inp["sequence"]
    jacobian = autograd.grad(loss)
    return {"objective": lambda: loss(params, state, sequence),
            "jacobian": lambda: jacobian(params, state, sequence)}
