# A 2-layer tanh MLP with a squared-error loss, written in the text format.
# Try: python -m chainrule grad examples/mlp.py --wrt W1,b1,W2
def main(x: f32[8, 4], W1: f32[4, 16], b1: f32[16], W2: f32[16, 1], y: f32[8, 1]) -> f32:
    lv0 = matmul(x, W1)
    lv1 = add(lv0, b1)
    h = tanh(lv1)
    pred = matmul(h, W2)
    err = subtract(pred, y)
    sq = multiply(err, err)
    loss = mean(sq)
    return loss
