"""``python -m chainrule demo``: what chainrule does, on one small model.

A 2-layer tanh MLP classifies two interleaved spirals. The demo prints the
model as IR, its gradient program and the NumPy code that runs it, trains it
with Adam on compiled gradients, checks those gradients three ways, takes a
second derivative, and times a training step against hand-written backprop.
Then it draws pictures into a directory it names (``--out``, by default
``./chainrule-demo/``): the spirals with the learned decision boundary, the
loss and accuracy curves, and the graph of one gradient step. Pictures need the
optional matplotlib and graphviz packages (``pip install "chainrule[demo]"``);
without them the demo says what to install and runs the rest. Everything but
the timings is deterministic (fixed seeds, one BLAS thread).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # effective for BLAS libraries loaded from now on

import contextlib  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import chainrule as cr  # noqa: E402
import chainrule.numpy as cnp  # noqa: E402
from chainrule import tape  # noqa: E402
from chainrule.api.reverse import trace_grad_module  # noqa: E402
from chainrule.backend.codegen.generate import compile_module  # noqa: E402
from chainrule.errors import ChainruleError  # noqa: E402
from chainrule.ir import display  # noqa: E402
from chainrule.testing.checks import check_grads  # noqa: E402
from chainrule.transform.reverse.gradient import gradient  # noqa: E402

HIDDEN = 32
SLOW = 1.0  # seconds: a step that takes longer shows progress


def heading(text: str) -> None:
    print(f"\n== {text} ==")


# -- progress on stderr ------------------------------------------------------------------


def _is_terminal(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class ProgressBar:
    """A bar on stderr, drawn while stderr is a terminal (by tqdm when it is installed).

    Elsewhere (a log, a pipe) nothing is drawn; a bar that took more than ``SLOW``
    seconds leaves one line saying how long. ``write`` prints a line to stdout
    without breaking the bar.
    """

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.count = total, desc, 0
        self.start = self._drawn = time.perf_counter()
        self.live = _is_terminal(sys.stderr)
        self.tqdm = None
        if self.live:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.tqdm = tqdm(total=total, desc=desc, file=sys.stderr, leave=False)

    def update(self, n: int = 1) -> None:
        self.count += n
        if self.tqdm is not None:
            self.tqdm.update(n)
        elif self.live:
            now = time.perf_counter()
            if now - self._drawn > 0.05 or self.count == self.total:
                self._draw(now)

    def _draw(self, now: float) -> None:
        width = 30
        done = width * self.count // max(self.total, 1)
        sys.stderr.write(f"\r{self.desc} [{'#' * done}{'.' * (width - done)}] "
                         f"{self.count}/{self.total}  {now - self.start:.1f} s")
        sys.stderr.flush()
        self._drawn = now

    def _clear(self) -> None:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()

    def write(self, line: str) -> None:
        if self.tqdm is not None:
            self.tqdm.write(line, file=sys.stdout)
            return
        if self.live:
            self._clear()
        print(line, flush=True)
        if self.live:
            self._draw(time.perf_counter())

    def close(self) -> None:
        elapsed = time.perf_counter() - self.start
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.live:
            self._clear()
        elif elapsed > SLOW:
            print(f"{self.desc}: {self.count}/{self.total} in {elapsed:.1f} s", file=sys.stderr)


@contextlib.contextmanager
def activity(desc: str):
    """A step that prints nothing while it runs: on a terminal, a line on stderr counts
    the seconds once it has taken more than ``SLOW``; elsewhere one line at its end
    if it took that long."""
    start, done = time.perf_counter(), threading.Event()
    live = _is_terminal(sys.stderr)

    def tick():
        if done.wait(SLOW):
            return
        while not done.wait(0.1):
            sys.stderr.write(f"\r{desc} ...  {time.perf_counter() - start:.1f} s")
            sys.stderr.flush()

    ticker = threading.Thread(target=tick, daemon=True) if live else None
    if ticker is not None:
        sys.stdout.flush()
        ticker.start()
    try:
        yield
    finally:
        done.set()
        elapsed = time.perf_counter() - start
        if ticker is not None:
            ticker.join()
            if elapsed > SLOW:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
        elif elapsed > SLOW:
            print(f"{desc}: {elapsed:.1f} s", file=sys.stderr)


# -- data and model ------------------------------------------------------------------


def two_spirals(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points on two interleaved spirals, labels 0/1 alternating."""
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * 3 * np.pi
    label = np.arange(n) % 2
    r = t / (3 * np.pi)
    x = np.stack([r * np.cos(t + np.pi * label), r * np.sin(t + np.pi * label)], axis=1)
    return x + 0.03 * rng.standard_normal((n, 2)), label


def loss(params, x, y):
    """Mean cross-entropy of a tanh MLP; ``y`` is one-hot."""
    W1, b1, W2, b2 = params
    h = cnp.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return -cnp.mean(cnp.sum(y * cnp.log_softmax(logits, axis=-1), axis=-1))


def logits(params, x):
    W1, b1, W2, b2 = params
    return cnp.tanh(x @ W1 + b1) @ W2 + b2


def numpy_value_and_grad(params, x, y):
    """The same loss and gradient, backpropagated by hand in NumPy (the baseline)."""
    W1, b1, W2, b2 = params
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    value = -(y * logp).sum() / len(x)
    dz = (np.exp(logp) - y) / len(x)
    dh = (dz @ W2.T) * (1 - h * h)
    return value, (x.T @ dh, dh.sum(axis=0), h.T @ dz, dz.sum(axis=0))


def init_params(rng):
    return (rng.standard_normal((2, HIDDEN)), np.zeros(HIDDEN),
            rng.standard_normal((HIDDEN, 2)) / np.sqrt(HIDDEN), np.zeros(2))


def max_diff(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(u) - np.asarray(v)))) for u, v in zip(a, b))


# -- the sections --------------------------------------------------------------------


def show_ir(params, x, y) -> None:
    heading("1. The model, traced to IR (cr.trace)")
    module = cr.trace(loss, params, x, y)
    print(module, end="")
    assert cr.parse(str(module)) == module  # the text is Python and parses back
    print("(this text is valid Python: cr.parse(str(module)) == module)")


def show_gradient(params, x, y):
    """Print the gradient program; returns it and how many of its bindings are the
    forward pass (for the picture)."""
    heading("2. Its gradient program: reverse mode + optimize (trace_grad_module)")
    with activity("tracing, differentiating and compiling"):
        grad_module = trace_grad_module(loss, params, x, y)
        fn = cr.trace(loss, params, x, y)
        raw = gradient(fn, "main", require_grads=fn["main"].params[:4])
        source = compile_module(grad_module, "main_adjoint").source.strip().splitlines()
    print(grad_module, end="")
    print(f"(the gradient pass emits {len(raw['main_adjoint'].body.bindings)} bindings; "
          f"after optimize: {len(grad_module['main_adjoint'].body.bindings)})")
    print(f"\nThe NumPy code it runs as (first 14 of {len(source)} lines; `del` frees "
          f"dead arrays, `out=` reuses them):")
    print("\n".join("    " + line for line in source[:14]))
    print("    ...")
    forward = {str(b.var) for b in fn["main"].body.bindings}
    bindings = grad_module["main_adjoint"].body.bindings
    n_forward = next((k for k, b in enumerate(bindings) if str(b.var) not in forward),
                     len(bindings))
    return grad_module, n_forward


def train(params, data, steps: int):
    """Adam on full batches; returns the trained parameters and the history of the
    loss and the train and test accuracy, one entry per step."""
    heading(f"3. Training: Adam, {steps} steps, full batch, cr.value_and_grad (compiled)")
    (x, y, label), (x_test, label_test) = data
    value_and_grad = cr.value_and_grad(loss)
    predict = cr.jit(logits)

    def accuracy(params, x, label):
        return float(np.mean(np.argmax(predict(params, x), axis=1) == label))

    lr, b1, b2 = 0.05, 0.9, 0.999
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    every = max(1, steps // 8)
    history = {"loss": [], "train": [], "test": []}
    bar = ProgressBar(steps, "training")
    try:
        for step in range(1, steps + 1):
            value, grads = value_and_grad(params, x, y)
            new = []
            for i, (p, g) in enumerate(zip(params, grads)):
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                m_hat, v_hat = m[i] / (1 - b1 ** step), v[i] / (1 - b2 ** step)
                new.append(p - lr * m_hat / (np.sqrt(v_hat) + 1e-8))
            params = tuple(new)
            history["loss"].append(float(value))  # the loss before this step's update
            history["train"].append(accuracy(params, x, label))
            history["test"].append(accuracy(params, x_test, label_test))
            bar.update()
            if step == 1 or step % every == 0 or step == steps:
                bar.write(f"step {step:4d}   loss {float(value):.4f}   "
                          f"train accuracy {history['train'][-1]:6.1%}")
    finally:
        bar.close()
    final = float(loss(params, x, y))
    history["loss"].append(final)
    print(f"loss {history['loss'][0]:.4f} -> {final:.4f}")
    print(f"final accuracy: train {accuracy(params, x, label):.1%}, "
          f"test {accuracy(params, x_test, label_test):.1%} "
          f"({len(x_test)} held-out points)")
    return params, history


def check(params, x, y) -> None:
    heading("4. Checking the gradient")
    with activity("checking the gradient"):
        _, grads = cr.value_and_grad(loss)(params, x, y)
        eps, rng, worst = 1e-6, np.random.default_rng(1), 0.0
        for i, p in enumerate(params):  # central differences on 3 entries of each parameter
            for flat in rng.choice(p.size, size=min(3, p.size), replace=False):
                idx = np.unravel_index(flat, p.shape)
                plus, minus = [q.copy() for q in params], [q.copy() for q in params]
                plus[i][idx] += eps
                minus[i][idx] -= eps
                fd = (float(loss(tuple(plus), x, y)) - float(loss(tuple(minus), x, y))) / (
                    2 * eps)
                worst = max(worst, abs(fd - float(grads[i][idx])))
        tensors = tuple(tape.tensor(p, requires_grad=True) for p in params)
        loss(tensors, x, y).backward()  # the same function, run eagerly on the tape
        vs_tape = max_diff(grads, [t.grad for t in tensors])
        vs_numpy = max_diff(grads, numpy_value_and_grad(params, x, y)[1])
        check_grads(loss, (params, x[:16], y[:16]), order=2, modes=("fwd", "rev"))
    print(f"vs central finite differences (12 entries):    max |difference| {worst:.1e}")
    print(f"vs the eager tape (chainrule.tape, backward):  max |difference| {vs_tape:.1e}")
    print(f"vs the hand-written NumPy backprop:            max |difference| {vs_numpy:.1e}")
    print("check_grads(loss, order=2, modes=('fwd', 'rev')): all compositions agree")


def higher_order(params, x, y) -> None:
    heading("5. Higher order: a Hessian-vector product (forward over reverse)")
    with activity("second and third derivatives"):
        rng = np.random.default_rng(2)
        v = tuple(rng.standard_normal(p.shape) for p in params)
        f = lambda p: loss(p, x, y)
        hv = cr.hvp(f, (params,), (v,))
        vhv = sum(float(np.vdot(a, b)) for a, b in zip(v, hv))
        g = cr.grad(f)
        eps = 1e-5
        gp = g(tuple(p + eps * d for p, d in zip(params, v)))
        gm = g(tuple(p - eps * d for p, d in zip(params, v)))
        fd = [(a - b) / (2 * eps) for a, b in zip(gp, gm)]
        d3 = cr.grad(cr.grad(cr.grad(cnp.tanh)))(np.float64(0.5))
    print(f"v . H v = {vhv:.6f}   (H v: {sum(h.size for h in hv)} numbers, one pass)")
    print(f"vs differences of gradients: max |difference| {max_diff(hv, fd):.1e}")
    t = np.tanh(0.5)
    print(f"grad(grad(grad(tanh)))(0.5) = {float(d3):.6f}   "
          f"exact -2(1-t^2)(1-3t^2) = {-2 * (1 - t * t) * (1 - 3 * t * t):.6f}")


def _one_blas_thread() -> str:
    """Limit the already-loaded OpenBLAS to one thread (what threadpoolctl does)."""
    import ctypes

    try:
        with open("/proc/self/maps") as fh:
            libs = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        libs = set()
    for path in sorted(libs):
        lib = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", ""), ("scipy_", "")):
            setter = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if setter is not None:
                setter(1)
                return "1 BLAS thread"
    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"


def timing(params, x, y, quick: bool) -> None:
    threads = _one_blas_thread()
    heading(f"6. Time per gradient evaluation, i.e. per training step ({threads})")
    candidates = {"chainrule value_and_grad (generated NumPy code)": cr.value_and_grad(loss),
                  "hand-written NumPy backprop": numpy_value_and_grad}
    number, repeat = (20, 3) if quick else (100, 7)
    best = dict.fromkeys(candidates, float("inf"))
    with activity("timing"):
        for _ in range(repeat):  # interleaved, best of `repeat`: robust to a busy machine
            for name, fn in candidates.items():
                fn(params, x, y)
                t0 = time.perf_counter()
                for _ in range(number):
                    fn(params, x, y)
                best[name] = min(best[name], (time.perf_counter() - t0) / number)
    for name, t in best.items():
        print(f"{name + ':':50s}{t * 1e6:8.1f} us")
    t_cr, t_np = best.values()
    print(f"ratio: {t_cr / t_np:.2f}x   (timings vary from run to run)")


# -- pictures ------------------------------------------------------------------------------


def _plot_spirals(path, params, train_set, test_set, steps: int, accuracy: tuple) -> None:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    (x, label), (x_test, label_test) = train_set, test_set
    both = np.concatenate([x, x_test])
    lo, hi = both.min(axis=0) - 0.15, both.max(axis=0) + 0.15
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], 250), np.linspace(lo[1], hi[1], 250))
    z = cr.jit(logits)(params, np.stack([g0.ravel(), g1.ravel()], axis=1))
    p1 = 1 / (1 + np.exp(z[:, 0] - z[:, 1]))  # softmax probability of class 1
    fig = Figure(figsize=(6.8, 6.0), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    filled = ax.contourf(g0, g1, p1.reshape(g0.shape), levels=np.linspace(0, 1, 11),
                         cmap="RdBu_r", alpha=0.4)
    ax.contour(g0, g1, p1.reshape(g0.shape), levels=[0.5], colors="black", linewidths=1.6)
    colors = ("#1d4ed8", "#b91c1c")
    for c in (0, 1):
        ax.scatter(*x[label == c].T, s=22, color=colors[c], edgecolors="white",
                   linewidths=0.6, label=f"class {c} (training)")
        ax.scatter(*x_test[label_test == c].T, s=18, marker="^", facecolors="none",
                   edgecolors=colors[c], linewidths=0.9, label=f"class {c} (held out)")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="black", linewidth=1.6))
    labels.append("decision boundary (p = 0.5)")
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8.5)
    fig.colorbar(filled, ax=ax, shrink=0.85, label="predicted probability of class 1")
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(f"Two spirals: a 2-{HIDDEN}-2 tanh MLP after {steps} Adam steps\n"
                 f"accuracy: training {accuracy[0]:.1%}, held out {accuracy[1]:.1%}",
                 fontsize=11)
    fig.savefig(path)


def _plot_training(path, history: dict) -> None:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

    steps = len(history["train"])
    fig = Figure(figsize=(10, 4), dpi=110, layout="constrained")
    left, right = fig.subplots(1, 2)
    left.plot(np.arange(steps + 1), history["loss"], color="#1d4ed8", label="training loss")
    left.set_yscale("log")
    left.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    left.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))  # not 2x10^-1
    left.yaxis.set_minor_formatter(NullFormatter())
    left.set_xlabel("Adam step")
    left.set_ylabel("mean cross-entropy (log scale)")
    left.set_title("Loss")
    left.legend()
    left.grid(True, which="both", alpha=0.3)
    at = np.arange(1, steps + 1)
    right.plot(at, history["train"], color="#1d4ed8", label="training points")
    right.plot(at, history["test"], color="#c2410c", linestyle="--", label="held-out points")
    right.set_ylim(0.4, 1.02)
    right.yaxis.set_major_formatter(PercentFormatter(1.0))
    right.set_xlabel("Adam step")
    right.set_ylabel("accuracy")
    right.set_title("Accuracy")
    right.legend(loc="lower right")
    right.grid(True, alpha=0.3)
    fig.suptitle("Training on two spirals, full batch, gradients from cr.value_and_grad")
    fig.savefig(path)


def pictures(out: str, params, data, history: dict, grad_program) -> None:
    """Section 7: draw what is installed, and say what is missing and how to get it."""
    (x, _, label), (x_test, label_test) = data
    heading(f"7. Pictures, written to {out}")
    where = lambda name: os.path.join(out, name)  # noqa: E731
    wrote = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print('spirals.png, training.png not drawn: they need matplotlib '
              '(pip install "chainrule[demo]" installs it and graphviz)')
    else:
        with activity("drawing with matplotlib"):
            accuracy = (history["train"][-1], history["test"][-1])
            _plot_spirals(where("spirals.png"), params, (x, label), (x_test, label_test),
                          len(history["train"]), accuracy)
            _plot_training(where("training.png"), history)
        wrote += [("spirals.png", "the two spirals and the learned decision boundary"),
                  ("training.png", "loss and accuracy, step by step")]
    module, n_forward = grad_program
    title = ("One gradient step: the optimized gradient program main_adjoint "
             "(cr.value_and_grad runs it at every step)")
    draw = lambda **dpi: display.function_to_dot(  # noqa: E731
        module["main_adjoint"], "main_adjoint", title=title, backward_from=n_forward, **dpi)
    dot = draw()
    with open(where("gradient_step.dot"), "w", encoding="utf-8") as fh:
        fh.write(dot)
    wrote.append(("gradient_step.dot", "the graph of one gradient step, Graphviz source"))
    missing = display.graphviz_missing()
    if missing is None:
        with activity("drawing with Graphviz"):
            svg = display.render_dot(dot, "svg")
            png = display.render_dot(draw(dpi=96), "png")
        for name, data_ in (("gradient_step.svg", svg), ("gradient_step.png", png)):
            if data_ is not None:
                with open(where(name), "wb") as fh:
                    fh.write(data_)
                wrote.append((name, "the same graph, drawn by Graphviz"))
    for name, what in wrote:
        print(f"{where(name):40s} {what}")
    if missing is not None:
        dot_file, svg_file = where("gradient_step.dot"), where("gradient_step.svg")
        print(f"gradient_step.svg not drawn: it needs {missing}.\n"
              f"Where Graphviz's dot program is installed, draw it with:\n"
              f"    dot -Tsvg {dot_file} -o {svg_file}")


def main(args) -> int:
    steps = max(1, min(args.steps, 40) if args.quick else args.steps)
    out = getattr(args, "out", None)
    if out:  # before the work: a directory that cannot be made fails at once
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as exc:
            raise ChainruleError(f"cannot write pictures to {out}: {exc.strerror}") from None
    rng = np.random.default_rng(0)
    x, label = two_spirals(200, rng)
    x_test, label_test = two_spirals(200, rng)
    y = np.eye(2)[label]
    params = init_params(rng)
    print("chainrule demo: automatic differentiation as a compiler")
    print(f"Model: 2 -> {HIDDEN} (tanh) -> 2 softmax, cross-entropy; data: two spirals, "
          f"{len(x)} training points (seed 0)")
    show_ir(params, x, y)
    grad_program = show_gradient(params, x, y)
    data = ((x, y, label), (x_test, label_test))
    trained, history = train(params, data, steps)
    check(trained, x, y)
    higher_order(trained, x, y)
    timing(trained, x, y, args.quick)
    if out:
        pictures(out, trained, data, history, grad_program)
    return 0
