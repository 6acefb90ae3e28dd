"""Text-IR programs several test files use (one copy each)."""

# x ** n by recursion through a branch: a module function calling itself
POWER_FN = """\
def pw(x: f64, n: i64) -> f64:
    c = greater(n, 0)
    if c:
        m = subtract(n, 1)
        p = pw(x, m)
        q = multiply(x, p)
        r = q
    else:
        r = 1.0
    return r
"""


def with_power(main_text: str) -> str:
    """POWER_FN followed by more functions (written flush left)."""
    return POWER_FN + "\n" + main_text
