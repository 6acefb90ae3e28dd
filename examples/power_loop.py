# x ** n by repeated multiplication: a while loop in the text format.
# Try: python -m chainrule grad examples/power_loop.py --wrt x
def main(x: f64[3], n: i64) -> f64:
    i, p = 0, f64([1.0, 1.0, 1.0])
    while True:
        more = less(i, n)
        if not more:
            break
        p_next = multiply(p, x)
        i_next = add(i, 1)
        i, p = i_next, p_next
    state = (i, p)
    xn = state[1]
    total = sum(xn)
    return total
