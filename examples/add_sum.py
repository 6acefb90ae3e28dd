# The seed example of the Relax Gradient pass (shared/seeds/000): add, then sum.
def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
    lv0 = add(x, y)
    gv0 = sum(lv0)
    return gv0
