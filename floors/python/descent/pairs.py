"""Reference-language pairs: one program written twice, checked against each other.

The reference is written with autograd (loss.backward() records and walks the
graph); the other spells out the forward and the backward by hand, the way a
textbook or a fused kernel would. `descent verify --autograd` runs both on the
same inputs and checks:

  1. the two losses are bit-for-bit equal (the same ops in the same order);
  2. every gradient agrees within the stated bound, Note [The pair's bound];
  3. gradcheck holds for both: autograd's gradient and the hand-written one
     each against central finite differences, in float64.

The two can be put side by side in the app, floor against floor (floor 4
busy on the autograd side only):

    descent trace --save hand.dtrace "from descent.pairs import *; mlp_by_hand(*mlp_inputs())"
    descent app --code "from descent.pairs import *; mlp_autograd(*mlp_inputs())" --compare hand.dtrace

Note [The pair's bound]
~~~~~~~~~~~~~~~~~~~~~~~
The hand-written backward computes the same quantities as the formulas of
floors/autograd/derivatives.cpp but not with the same operations in the same
order: d(mean(d^2))/dd is 2*d/N by hand, and expand(g)/N * (2*d^1) through
MeanBackward0 and PowBackward0. Each gradient element is a short chain of
roundings (at most one sum over the batch for the bias and the weights, done
by the same kernel on both sides), so the two agree to within a few units in
the last place: the bound is 8 ulps of the element's magnitude (float32: 8 *
2**-24 relative), plus 8 ulps of the largest element for elements that cancel
to near zero. The check reports the largest difference found in ulps.
"""
from . import _C
from .autograd import _numerical_jacobian, gradcheck

__all__ = ["mlp_inputs", "mlp_autograd", "mlp_by_hand", "verify_pairs"]


def mlp_inputs(batch=8, features=5, out=3, dtype=None, seed=7):
    """x (batch, features), w (features, out), b (out,), y (batch, out)."""
    dtype = dtype or _C.float32
    _C.manual_seed(seed)
    x = _C.randn([batch, features], dtype=dtype)
    w = _C.randn([features, out], dtype=dtype)
    b = _C.randn([out], dtype=dtype)
    y = _C.randn([batch, out], dtype=dtype)
    return x, w, b, y


def mlp_autograd(x, w, b, y):
    """The reference: a linear layer, ReLU and mean-squared error, differentiated by autograd.
    Returns (loss, {name: gradient}) for x, w and b."""
    x, w, b = (t.detach().requires_grad_() for t in (x, w, b))
    loss = ((x @ w + b).relu() - y).pow(2).mean()
    loss.backward()
    return loss.detach(), {"x": x.grad, "w": w.grad, "b": b.grad}


def mlp_by_hand(x, w, b, y):
    """The same program with its backward written out: every line is one op."""
    z = x @ w + b                         # forward: the linear layer
    a = z.relu()
    d = a - y
    loss = d.pow(2).mean()
    n = d.numel()
    g_d = d * (2.0 / n)                   # backward: d(mean(d^2))/dd
    g_z = g_d * (z > 0)                   # ReLU passes the gradient where z > 0
    g_w = x.t() @ g_z                     # the linear layer's three gradients
    g_b = g_z.sum(0)
    g_x = g_z @ w.t()
    return loss, {"x": g_x, "w": g_w, "b": g_b}


def _ulps(a, b, eps):
    """The largest |a - b| in units of eps * max(|b|, largest |b| / 2**3)."""
    fa, fb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    scale_all = max((abs(v) for v in fb), default=0.0)
    worst = 0.0
    for u, v in zip(fa, fb):
        scale = max(abs(v), scale_all / 8, 1e-300)
        worst = max(worst, abs(u - v) / (eps * scale))
    return worst


def _by_hand_matches_finite_differences(x, w, b, y, eps=1e-6, tol=1e-5):
    """gradcheck for the hand-written backward: its gradients against central differences of its loss."""
    inputs = (x, w, b)
    _, grads = mlp_by_hand(x, w, b, y)
    for k, name in enumerate(("x", "w", "b")):
        cols = _numerical_jacobian(lambda *xs: mlp_by_hand(*xs, y)[0], inputs, k, eps)
        mine = grads[name].reshape(-1).tolist()
        for i, col in enumerate(cols):
            numerical = col[0][0]
            if abs(mine[i] - numerical) > tol + 1e-3 * abs(numerical):
                return False, f"d loss / d {name}[{i}]: by hand {mine[i]!r}, finite differences {numerical!r}"
    return True, ""


def verify_pairs(seed=7):
    """Runs every pair and returns its verdicts, as verify() does for kernels."""
    verdicts = []
    x, w, b, y = mlp_inputs(seed=seed)
    loss_ref, ref = mlp_autograd(x, w, b, y)
    loss_hand, hand = mlp_by_hand(x, w, b, y)
    same_loss = loss_ref.item() == loss_hand.item()
    verdicts.append({"pair": "linear+relu+mse", "check": "loss", "passed": same_loss,
                     "detail": f"autograd {loss_ref.item()!r}, by hand {loss_hand.item()!r} (bit-for-bit)"})
    for name in ("x", "w", "b"):
        worst = _ulps(hand[name], ref[name], 2.0 ** -24)
        verdicts.append({"pair": "linear+relu+mse", "check": f"d loss / d {name}", "passed": worst <= 8,
                         "detail": f"max difference {worst:.2f} ulps (bound 8, Note [The pair's bound])"})
    x64, w64, b64, y64 = mlp_inputs(dtype=_C.float64, seed=seed)
    ok = gradcheck(lambda xx, ww, bb: ((xx @ ww + bb).relu() - y64).pow(2).mean(),
                   tuple(t.requires_grad_() for t in (x64, w64, b64)), raise_exception=False)
    verdicts.append({"pair": "linear+relu+mse", "check": "gradcheck (autograd)", "passed": ok,
                     "detail": "float64, central differences, eps 1e-6"})
    ok, why = _by_hand_matches_finite_differences(*(t.detach() for t in (x64, w64, b64)), y64)
    verdicts.append({"pair": "linear+relu+mse", "check": "gradcheck (by hand)", "passed": ok,
                     "detail": why or "float64, central differences, eps 1e-6"})
    return verdicts
