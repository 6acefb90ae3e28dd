"""Arrays a compiled function reads from outside its arguments are read at every
call (in-place updates and rebindings are seen), without tracing again; Python
numbers it reads are baked in and guarded by value (a change traces again)."""

from __future__ import annotations

import numpy as np
import pytest
from trace_counter import Counter

import chainrule as cr
import chainrule.numpy as cnp

TRANSFORMS = {
    "grad": lambda f: cr.grad(f),
    "value_and_grad": lambda f: (lambda vg: lambda x: vg(x)[1])(cr.value_and_grad(f)),
    "vjp": lambda f: (lambda x: cr.vjp(f, x)[1](1.0)[0]),
    "jit": lambda f: cr.jit(f),
    "hvp": lambda f: (lambda x: cr.hvp(f, (x,), (np.ones_like(x),))),
    "jvp": lambda f: (lambda x: cr.jvp(f, (x,), (np.ones_like(x),))[1]),
    "hessian": lambda f: cr.hessian(f),
}


def _expected(kind, W, x):
    """The transforms of f(x) = sum(tanh(x * W) * W) at x."""
    t = np.tanh(x * W)
    d = (1 - t * t) * W * W  # df/dx
    dd = -2 * t * (1 - t * t) * W ** 3
    return {"grad": d, "value_and_grad": d, "vjp": d, "jit": np.sum(t * W), "hvp": dd,
            "jvp": np.sum(d), "hessian": np.diag(dd)}[kind]


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_closure_array_updated_in_place_and_rebound(kind):
    W = np.array([0.5, -1.0, 2.0])
    seen = Counter()

    def f(x):
        seen.tick()
        return cnp.sum(cnp.tanh(x * W) * W)

    g = TRANSFORMS[kind](f)
    x = np.array([0.3, 0.1, -0.2])
    np.testing.assert_allclose(g(x), _expected(kind, W, x), rtol=1e-12)
    traces = seen.traces
    W[:] = [0.1, 0.2, 0.3]  # in place
    np.testing.assert_allclose(g(x), _expected(kind, W, x), rtol=1e-12)
    W = W * 10  # rebinding the closure cell  # noqa: F841 (f reads it)
    np.testing.assert_allclose(g(x), _expected(kind, W, x), rtol=1e-12)
    if kind not in ("vjp", "jvp", "hessian"):  # these trace at every call by design
        assert seen.traces == traces, "compiled once: no trace for new values"


GLOBAL_W = np.array([1.0, 2.0])


def loss_reading_global(x):
    return cnp.sum(x * GLOBAL_W)


def test_global_array_rebound():
    global GLOBAL_W
    g = cr.grad(loss_reading_global)
    x = np.ones(2)
    np.testing.assert_allclose(g(x), [1.0, 2.0])
    GLOBAL_W = np.array([3.0, 4.0])
    np.testing.assert_allclose(g(x), [3.0, 4.0])
    GLOBAL_W = np.array([1.0, 2.0])


class Cell:
    """The MindSpore Cell / optimizer pattern: weights as attributes, updated by a
    training loop that rebinds them."""

    def __init__(self):
        self.W = np.array([[0.5, -0.2], [0.1, 0.3]])
        self.b = np.zeros(2)
        self.params = {"scale": np.array(2.0)}

    def loss(self, x):
        return cnp.sum(cnp.tanh(x @ self.W + self.b) * self.params["scale"])


def test_attributes_and_dict_items_of_a_bound_method():
    cell = Cell()
    x = np.array([[1.0, 2.0]])
    g = cr.grad(cell.loss)
    for step in range(3):
        want = (1 - np.tanh(x @ cell.W + cell.b) ** 2) * cell.params["scale"] @ cell.W.T
        np.testing.assert_allclose(g(x), want, rtol=1e-12)
        cell.W = cell.W - 0.1 * step  # rebinding the attribute
        cell.b += 0.5  # in place
        cell.params["scale"] = np.array(3.0 + step)  # a new dict item


def test_python_number_change_traces_again():
    lr = 0.5
    seen = Counter()

    def f(x):
        seen.tick()
        return cnp.sum(x * x) * lr

    g = cr.grad(f)
    x = np.ones(2)
    np.testing.assert_allclose(g(x), [1.0, 1.0])
    np.testing.assert_allclose(g(x), [1.0, 1.0])
    assert seen.traces == 1
    lr = 2.0  # noqa: F841 (f reads it)
    np.testing.assert_allclose(g(x), [4.0, 4.0])
    assert seen.traces == 2


def test_shape_change_traces_again():
    W = np.ones(2)

    def f(x):
        return cnp.sum(x) * cnp.sum(W)

    g = cr.jit(f)
    assert float(g(np.ones(3))) == 6.0
    W = np.ones(5)  # noqa: F841
    assert float(g(np.ones(3))) == 15.0


def test_captured_arrays_are_inputs_not_constants():
    """hvp of a closure does not precompute the layer at compile time: the captured
    weights are parameters of the compiled program."""
    W = np.full((4, 4), 0.1)
    f = lambda x: cnp.sum(cnp.tanh(x @ W))  # noqa: E731
    m = cr.jit(f).module(np.ones(4))
    assert [p.name for p in m["main"].params] == ["x", "W"]
    assert "f64[4, 4]" in str(m) and "c0" not in str(m)


def test_nested_transforms_see_the_current_values():
    W = np.array([1.0, 3.0])

    def inner(x):
        return cnp.sum(cnp.sin(x) * W)

    outer = cr.jit(lambda x: cr.grad(inner)(x) * 2.0)
    x = np.array([0.2, 0.4])
    np.testing.assert_allclose(outer(x), 2 * np.cos(x) * W)
    W[:] = [-1.0, 0.5]
    np.testing.assert_allclose(outer(x), 2 * np.cos(x) * W)
    W = np.array([5.0, 6.0])  # noqa: F841
    np.testing.assert_allclose(outer(x), 2 * np.cos(x) * np.array([5.0, 6.0]))


def test_checkpointed_function_reading_a_closure():
    W = np.array([0.5, 1.5])
    step = cr.checkpoint(lambda h: cnp.tanh(h * W))
    g = cr.grad(lambda x: cnp.sum(step(step(x))))
    x = np.array([0.3, -0.4])
    want = cr.grad(lambda x: cnp.sum(cnp.tanh(cnp.tanh(x * W) * W)))(x)
    np.testing.assert_allclose(g(x), want, rtol=1e-12)
    W[:] = [2.0, -1.0]
    want = cr.grad(lambda x: cnp.sum(cnp.tanh(cnp.tanh(x * W) * W)))(x)
    np.testing.assert_allclose(g(x), want, rtol=1e-12)


def test_vjp_treats_captured_arrays_as_constants():
    # a captured array is a hidden input: the pullback must not ask for its derivative
    # (gammainc has none in its shape parameter)
    import scipy.stats as st

    import chainrule.scipy.special as csp

    shape = np.array([1.5, 2.0])
    x = np.array([0.5, 1.0])
    out, pull = cr.vjp(lambda x: csp.gammainc(shape, x), x)
    np.testing.assert_allclose(pull(np.ones(2))[0], st.gamma.pdf(x, shape), rtol=1e-12)


def test_reverse_mode_stops_at_ops_without_derivative():
    import scipy.stats as st

    import chainrule.scipy.special as csp

    f = lambda x: cnp.sum(csp.gammainc(cnp.floor(x) + 1.0, x))  # noqa: E731
    x = np.array([1.5, 2.5])
    np.testing.assert_allclose(cr.grad(f)(x), st.gamma.pdf(x, [2.0, 3.0]), rtol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(f)(x), st.gamma.pdf(x, [2.0, 3.0]), rtol=1e-12)


# -- a boolean mask the function reads from outside its arguments ---------------------------
def _mask_expected(kind, m, x):
    """The transforms of f(x) = sum(x[:, m] ** 2) at x (3x4), as NumPy computes them."""
    d = np.where(m, 2 * x, 0.0)
    dd = np.where(m, 2.0, 0.0) * np.ones_like(x)
    return {"grad": d, "value_and_grad": d, "vjp": d, "jit": np.sum(x[:, m] ** 2), "hvp": dd,
            "jvp": np.sum(d), "hessian": np.diag(dd.ravel()).reshape(3, 4, 3, 4)}[kind]


@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_captured_boolean_mask_indexes_and_is_guarded_by_value(kind):
    """``x[:, m]`` with a mask read through a closure: its True positions are baked in
    (as for a mask written inline, and as JAX treats a captured NumPy array), and its
    value is guarded: changed in place or rebound, the function is traced again."""
    m = np.array([True, False, True, True])
    f = TRANSFORMS[kind](lambda x: cnp.sum(x[:, m] ** 2))
    x = np.arange(12.0).reshape(3, 4) / 7
    for _ in range(2):
        np.testing.assert_allclose(f(x), _mask_expected(kind, m, x), rtol=1e-12)
    m[0] = False  # in place
    np.testing.assert_allclose(f(x), _mask_expected(kind, m, x), rtol=1e-12)
    m = np.array([False, True, True, False])  # rebound: a new array in the closure cell
    np.testing.assert_allclose(f(x), _mask_expected(kind, m, x), rtol=1e-12)


def test_captured_boolean_mask_in_updates_and_nested_transforms():
    m = np.array([False, True, False, True])
    x = np.linspace(-1.0, 1.0, 4)
    clear = cr.grad(lambda x: cnp.sum(x.at[m].set(0.0) ** 3))
    np.testing.assert_allclose(clear(x), np.where(m, 0.0, 3 * x ** 2), rtol=1e-12)
    m[0] = True
    np.testing.assert_allclose(clear(x), np.where(m, 0.0, 3 * x ** 2), rtol=1e-12)
    # order 3 in a scale s: d^3/ds^3 sum((s x)[m] ** 3) = 6 sum(x[m] ** 3)
    third = cr.grad(cr.grad(cr.grad(lambda s: cnp.sum((s * x)[m] ** 3))))
    np.testing.assert_allclose(third(1.0), 6 * np.sum(x[m] ** 3), rtol=1e-12)
    m[:] = [False, False, True, True]
    np.testing.assert_allclose(third(1.0), 6 * np.sum(x[m] ** 3), rtol=1e-12)


def test_a_traced_boolean_mask_is_still_refused():
    from chainrule.errors import TypeInferenceError

    with pytest.raises(TypeInferenceError, match="depends on the data"):
        cr.grad(lambda x: cnp.sum(x[x > 0]))(np.ones(3))


# -- class attributes: read through an object or the class, followed at every call ------
@pytest.mark.parametrize("kind", sorted(TRANSFORMS))
def test_class_attribute_read_through_an_object_is_followed(kind):
    class Model:
        W = np.full(3, 0.5)

    model = Model()
    x = np.linspace(-1, 1, 3)
    f = TRANSFORMS[kind](lambda x: cnp.sum(cnp.tanh(x * model.W) * model.W))
    np.testing.assert_allclose(f(x), _expected(kind, Model.W, x))
    Model.W = np.full(3, -0.25)  # rebound on the class
    np.testing.assert_allclose(f(x), _expected(kind, Model.W, x))
    Model.W[:] = 0.75  # in place
    np.testing.assert_allclose(f(x), _expected(kind, Model.W, x))
    model.W = np.full(3, 2.0)  # shadowed on the object
    np.testing.assert_allclose(f(x), _expected(kind, model.W, x))
    del model.W  # the class's shows through again
    np.testing.assert_allclose(f(x), _expected(kind, Model.W, x))
    assert "W" not in vars(model)  # tracing left no stand-in behind


def test_class_attributes_read_through_the_class_and_its_bases():
    class Base:
        bias = np.ones(3)
        scale = 2.0

    class Model(Base):
        pass

    f = cr.jit(lambda x: cnp.sum(x + Model.bias) * Model.scale)
    g = cr.grad(lambda x: cnp.sum(x * Model.bias) * Model.scale)
    x = np.zeros(3)
    assert f(x) == 6.0 and np.all(g(x) == 2.0)
    Base.bias = np.full(3, -0.25)  # a base's attribute, rebound
    assert f(x) == -1.5 and np.all(g(x) == -0.5)
    Model.scale = 1.0  # a number, now the subclass's own: traced again
    assert f(x) == -0.75 and np.all(g(x) == -0.25)
    del Model.scale
    assert f(x) == -1.5
    assert "bias" not in vars(Model)  # the stand-in went from the subclass


def test_bound_method_reading_class_attributes_through_self():
    class Layer:
        W = np.full(3, 0.5)
        scale = 2.0

        def loss(self, x):
            return cnp.sum(cnp.tanh(x * self.W)) * self.scale

        @property
        def doubled(self):  # a property is computed, not followed: left alone
            return self.W * 2

    layer = Layer()
    x = np.linspace(-1, 1, 3)
    g = cr.grad(layer.loss)
    want = lambda: (1 - np.tanh(x * Layer.W) ** 2) * Layer.W * layer.scale  # noqa: E731
    np.testing.assert_allclose(g(x), want())
    Layer.W = np.full(3, -1.5)
    np.testing.assert_allclose(g(x), want())
    layer.scale = 3.0
    np.testing.assert_allclose(g(x), want())
    assert vars(layer) == {"scale": 3.0}
    np.testing.assert_allclose(layer.doubled, Layer.W * 2)


def test_defaults_and_slots_are_put_back_as_they_were():
    mask = np.array([1.0, 0.0, 1.0])

    class Slotted:
        __slots__ = ("W",)

        def __init__(self):
            self.W = np.full(3, 2.0)

    holder = Slotted()
    loss = lambda x, m=mask: cnp.sum(cnp.where(m, x, -x) * holder.W)  # noqa: E731
    f = cr.jit(loss)
    x = np.arange(3.0)
    assert f(x) == 2.0 * (0 - 1 + 2)
    assert loss.__defaults__[0] is mask  # a function's defaults are its own, not its class's
    holder.W = np.full(3, 3.0)
    assert f(x) == 3.0 * (0 - 1 + 2) and f(x, mask) == f(x)


def _private_model(slotted: bool) -> type:
    """A model holding ``self.__w``: in a slot (``__slots__``) or in its ``__dict__``; both
    store it under the mangled name ``_Private__w``."""

    class _Private:
        if slotted:
            __slots__ = ("__w",)

        def __init__(self, w):
            self.__w = w

        def loss(self, x):
            return cnp.sum(cnp.tanh(x * self.__w))

        def set(self, w):
            self.__w = w

    return _Private


@pytest.mark.parametrize("slotted", [True, False])
@pytest.mark.parametrize("transform", ["grad", "jit", "hvp"])
def test_private_attributes_are_followed(slotted, transform):
    """A private ``self.__w`` (a slot or an entry of ``__dict__``, both stored under the
    mangled name) is read at every call, like a public attribute."""
    x, v = np.linspace(-1, 1, 3), np.array([1.0, -2.0, 0.5])
    model = _private_model(slotted)(np.full(3, 0.5))
    assert hasattr(model, "__dict__") is not slotted
    fn = {"grad": lambda: cr.grad(model.loss), "jit": lambda: cr.jit(model.loss),
          "hvp": lambda: (lambda x: cr.hvp(model.loss, (x,), (v,)))}[transform]()
    w = np.full(3, 0.5)

    def want():
        t = np.tanh(x * w)
        if transform == "jit":
            return t.sum()
        if transform == "grad":
            return (1 - t**2) * w
        return -2 * t * (1 - t**2) * w**2 * v

    for scale in (0.5, -1.5, 2.0):
        w = np.full(3, scale)
        model.set(w)
        np.testing.assert_allclose(fn(x), want(), rtol=1e-12)
