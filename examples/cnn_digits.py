"""A small CNN on scikit-learn's 8x8 handwritten digits, trained with Adam.

Two convolutions (with ReLU and 2x2 max pooling) and a dense layer, written with
``chainrule.nn`` exactly as with ``torch.nn.functional``; one training step (loss,
gradient, and the update of ``chainrule.optim.adam`` with a cosine learning-rate decay,
``optim.cosine_decay_schedule``) is a single ``cr.jit``-compiled function. The digits
ship with scikit-learn (no download). Prints the loss and test accuracy after each epoch
(98-99% after a few epochs, over seeds 0-4: 97.8-99.4% at the end) and, with matplotlib
installed, saves the curves to a PNG.

    python examples/cnn_digits.py [--epochs 12] [--batch 32] [--lr 0.01] [--plot FILE]

Needs scikit-learn (``pip install scikit-learn``); matplotlib is optional.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import chainrule as cr  # noqa: E402
import chainrule.nn as F  # noqa: E402
from chainrule import optim  # noqa: E402


# -- the model ---------------------------------------------------------------------------------
def init_params(rng: np.random.Generator, dtype=np.float32) -> dict:
    """He-initialized weights: conv 1 -> 16 -> 32 channels (3x3), dense 32*2*2 -> 10."""

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(dtype)

    return {"conv1": he((16, 1, 3, 3), 9), "b1": np.zeros(16, dtype),
            "conv2": he((32, 16, 3, 3), 16 * 9), "b2": np.zeros(32, dtype),
            "dense": he((32 * 2 * 2, 10), 128), "b3": np.zeros(10, dtype)}


def model(params: dict, x):
    """Logits of images ``x`` (N, 1, 8, 8): what PyTorch code would say, line by line."""
    h = F.max_pool2d(F.relu(F.conv2d(x, params["conv1"], params["b1"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, params["conv2"], params["b2"], padding=1)), 2)
    return h.reshape(h.shape[0], -1) @ params["dense"] + params["b3"]


def loss_fn(params: dict, x, y):
    return F.cross_entropy(model(params, x), y)


def make_step(opt: optim.GradientTransformation):
    """One training step, compiled whole: loss, gradient, optimizer update."""

    @cr.jit
    def step(params, state, x, y):
        loss, grads = cr.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, loss

    return step


# -- data, progress, plot ---------------------------------------------------------------------
def load_digits_split(seed: int = 0, test_fraction: float = 0.2):
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn for its bundled digits: "
                 "pip install scikit-learn")
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8) in [0, 1]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def progress(done: int, total: int, loss: float, width: int = 30) -> None:
    filled = int(width * done / total)
    bar = "#" * filled + "-" * (width - filled)
    print(f"\r  [{bar}] {done}/{total}  loss {loss:.4f}", end="", flush=True)


def accuracy(params, x, y, predict) -> float:
    return float(np.mean(np.argmax(predict(params, x), axis=1) == y))


def save_plot(losses, accuracies, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed, no plot: pip install matplotlib)")
        return
    epochs = np.arange(1, len(losses) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(epochs, losses, marker="o")
    ax1.set(xlabel="epoch", ylabel="training loss", title="loss")
    ax2.plot(epochs, [100 * a for a in accuracies], marker="o", color="tab:green")
    ax2.set(xlabel="epoch", ylabel="test accuracy (%)", title="test accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"saved the curves to {path}")


def train(epochs: int = 12, batch: int = 32, lr: float = 1e-2, seed: int = 0,
          plot: str | None = "cnn_digits.png", quiet: bool = False) -> float:
    """Train, print each epoch's loss and test accuracy; return the final accuracy."""
    x_train, y_train, x_test, y_test = load_digits_split(seed)
    rng = np.random.default_rng(seed)
    params = init_params(rng)
    steps = len(y_train) // batch
    opt = optim.adam(optim.cosine_decay_schedule(lr, decay_steps=epochs * steps))
    state = opt.init(params)
    step = make_step(opt)
    predict = cr.jit(model)
    losses, accuracies = [], []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(len(y_train))
        total = 0.0
        for k in range(steps):
            idx = order[k * batch:(k + 1) * batch]
            params, state, loss = step(params, state, x_train[idx], y_train[idx])
            total += float(loss)
            if not quiet:
                progress(k + 1, steps, total / (k + 1))
        acc = accuracy(params, x_test, y_test, predict)
        losses.append(total / steps)
        accuracies.append(acc)
        if not quiet:
            print("\r" + " " * 70, end="\r")
        print(f"epoch {epoch}  loss {total / steps:.4f}  test accuracy {100 * acc:.1f}%"
              f"  ({time.perf_counter() - start:.1f} s)")
    if plot:
        save_plot(losses, accuracies, plot)
    return accuracies[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2, help="the initial learning rate "
                   "(cosine decay to 0 over the epochs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="cnn_digits.png",
                   help="where to save the loss/accuracy curves ('' for none)")
    ns = p.parse_args()
    # the bar redraws one line: only on a terminal (a log gets the epoch lines alone)
    train(ns.epochs, ns.batch, ns.lr, ns.seed, ns.plot or None, quiet=not sys.stdout.isatty())


if __name__ == "__main__":
    main()
