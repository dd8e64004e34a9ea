"""descent.optim: SGD, Adam and RMSprop on fixed weights and gradients,
against values worked out by hand from PyTorch's single-tensor algorithms,
and the Optimizer's groups, state_dict, printing and errors as
torch.optim 2.11 has them."""
import copy
import math

import pytest

import descent
import descent.nn as nn
from descent.optim import SGD, Adam, RMSprop


def params(*values):
    return [nn.Parameter(descent.tensor(v)) for v in values]


def set_grads(ps, *grads):
    for p, g in zip(ps, grads):
        p.grad = descent.tensor(g)


# [SECTION] SGD ------------------------------------------------------------------------------

def test_sgd_with_momentum_one_step_then_another():
    (p,) = params([1.0, -2.0, 0.5])
    opt = SGD([p], lr=0.1, momentum=0.9)
    set_grads([p], [0.5, 0.25, -1.0])
    opt.step()
    # First step: the buffer is a copy of the gradient, p -= lr * buffer.
    assert p.tolist() == pytest.approx([0.95, -2.025, 0.6], rel=1e-6)
    buf = opt.state[p]["momentum_buffer"]
    assert buf.tolist() == [0.5, 0.25, -1.0] and buf.data_ptr() != p.grad.data_ptr()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad  # updated in place, outside the graph
    set_grads([p], [1.0, 1.0, 1.0])
    opt.step()
    # buffer = 0.9 * buffer + gradient = [1.45, 1.225, 0.1]; p -= 0.1 * buffer.
    assert opt.state[p]["momentum_buffer"].tolist() == pytest.approx([1.45, 1.225, 0.1], rel=1e-6)
    assert p.tolist() == pytest.approx([0.805, -2.1475, 0.59], rel=1e-6)


def test_sgd_variants():
    (p,) = params([1.0, -2.0])
    SGD([p], lr=0.1)
    set_grads([p], [0.5, 0.25])
    SGD([p], lr=0.1).step()
    assert p.tolist() == pytest.approx([0.95, -2.025], rel=1e-6)

    (p,) = params([1.0, -2.0])
    set_grads([p], [0.5, 0.25])
    SGD([p], lr=0.1, weight_decay=0.1).step()  # g + 0.1 * p = [0.6, 0.05]
    assert p.tolist() == pytest.approx([0.94, -2.005], rel=1e-6)

    (p,) = params([1.0, -2.0])
    set_grads([p], [0.5, 0.25])
    SGD([p], lr=0.1, maximize=True).step()
    assert p.tolist() == pytest.approx([1.05, -1.975], rel=1e-6)

    (p,) = params([1.0, -2.0])
    set_grads([p], [0.5, 0.25])
    SGD([p], lr=0.1, momentum=0.9, nesterov=True).step()  # g + 0.9 * buffer = 1.9 g
    assert p.tolist() == pytest.approx([0.905, -2.0475], rel=1e-6)

    (p,) = params([1.0, -2.0])
    opt = SGD([p], lr=0.1, momentum=0.9, dampening=0.5)
    set_grads([p], [0.5, 0.25])
    opt.step()  # dampening does not touch the first buffer
    set_grads([p], [1.0, 1.0])
    opt.step()  # buffer = 0.9 * [0.5, 0.25] + 0.5 * [1, 1] = [0.95, 0.725]
    assert p.tolist() == pytest.approx([0.95 - 0.095, -2.025 - 0.0725], rel=1e-6)


def test_a_parameter_without_a_gradient_is_skipped():
    p, q = params([1.0], [2.0])
    opt = SGD([p, q], lr=0.1, momentum=0.9)
    set_grads([p], [1.0])
    opt.step()
    assert p.tolist() == pytest.approx([0.9]) and q.tolist() == [2.0]
    assert q not in opt.state


# [SECTION] Adam -----------------------------------------------------------------------------

def adam_by_hand(p, grads, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False):
    """torch.optim.adam's _single_tensor_adam for one parameter, in float64 Python."""
    m, v, vmax = [0.0] * len(p), [0.0] * len(p), [0.0] * len(p)
    p = list(p)
    for t, g in enumerate(grads, 1):
        g = [gi + weight_decay * pi for gi, pi in zip(g, p)]
        m = [mi + (1 - beta1) * (gi - mi) for mi, gi in zip(m, g)]
        v = [beta2 * vi + (1 - beta2) * gi * gi for vi, gi in zip(v, g)]
        vmax = [max(a, b) for a, b in zip(vmax, v)]
        step_size = lr / (1 - beta1 ** t)
        bc2_sqrt = (1 - beta2 ** t) ** 0.5
        second = vmax if amsgrad else v
        p = [pi - step_size * mi / (math.sqrt(si) / bc2_sqrt + eps) for pi, mi, si in zip(p, m, second)]
    return p


ADAM_GRADS = [[0.1, -0.2, 0.0], [0.3, 0.05, 0.5], [-0.2, 0.4, 0.5]]


def test_adam_three_steps():
    (p,) = params([1.0, -2.0, 0.5])
    opt = Adam([p], lr=0.01)
    set_grads([p], ADAM_GRADS[0])
    opt.step()
    # First step: m / (1 - beta1) = g and sqrt(v / (1 - beta2)) = |g|, so each moves by lr against its gradient's
    # sign (and the element whose gradient is 0 does not move).
    assert p.tolist() == pytest.approx([0.99, -1.99, 0.5], rel=1e-6)
    for g in ADAM_GRADS[1:]:
        set_grads([p], g)
        opt.step()
    assert p.tolist() == pytest.approx(adam_by_hand([1.0, -2.0, 0.5], ADAM_GRADS, lr=0.01), rel=1e-6)
    state = opt.state[p]
    assert list(state) == ["step", "exp_avg", "exp_avg_sq"]
    assert state["step"].dtype is descent.float32 and state["step"].item() == 3.0 and state["step"].dim() == 0
    m = [0.0, 0.0, 0.0]
    for g in ADAM_GRADS:
        m = [mi + 0.1 * (gi - mi) for mi, gi in zip(m, g)]
    assert state["exp_avg"].tolist() == pytest.approx(m, rel=1e-6)


def test_adam_weight_decay_amsgrad_and_decoupled():
    grads = [[1.0, -1.0], [0.01, 0.02], [0.01, -0.03]]  # a large first gradient, so amsgrad's max matters
    (p,) = params([1.0, -2.0])
    opt = Adam([p], lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)
    for g in grads:
        set_grads([p], g)
        opt.step()
    expected = adam_by_hand([1.0, -2.0], grads, lr=0.1, beta1=0.8, beta2=0.9, weight_decay=0.1, amsgrad=True)
    assert p.tolist() == pytest.approx(expected, rel=1e-6)
    assert expected != pytest.approx(adam_by_hand([1.0, -2.0], grads, lr=0.1, beta1=0.8, beta2=0.9, weight_decay=0.1))

    (p,) = params([1.0, -2.0])
    opt = Adam([p], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
    set_grads([p], [0.5, 0.5])
    opt.step()  # p * (1 - lr * wd), then the step of lr against the gradient's sign
    assert p.tolist() == pytest.approx([1.0 * 0.95 - 0.1, -2.0 * 0.95 - 0.1], rel=1e-6)


# [SECTION] RMSprop --------------------------------------------------------------------------

def rmsprop_by_hand(p, grads, lr, alpha=0.99, eps=1e-8, momentum=0.0, centered=False):
    """torch.optim.rmsprop's _single_tensor_rmsprop for one parameter, in float64 Python."""
    p = list(p)
    sq, avg_g, buf = [0.0] * len(p), [0.0] * len(p), [0.0] * len(p)
    for g in grads:
        sq = [alpha * s + (1 - alpha) * gi * gi for s, gi in zip(sq, g)]
        if centered:
            avg_g = [a + (1 - alpha) * (gi - a) for a, gi in zip(avg_g, g)]
            avg = [math.sqrt(s - a * a) + eps for s, a in zip(sq, avg_g)]
        else:
            avg = [math.sqrt(s) + eps for s in sq]
        if momentum > 0:
            buf = [momentum * b + gi / a for b, gi, a in zip(buf, g, avg)]
            p = [pi - lr * b for pi, b in zip(p, buf)]
        else:
            p = [pi - lr * gi / a for pi, gi, a in zip(p, g, avg)]
    return p


def test_rmsprop():
    (p,) = params([1.0, -2.0, 0.5])
    opt = RMSprop([p], lr=0.01)
    set_grads([p], ADAM_GRADS[0])
    opt.step()
    # v = 0.01 g^2, so the first step is lr * g / (0.1 |g|) = 10 lr against the gradient's sign.
    assert p.tolist() == pytest.approx([0.9, -1.9, 0.5], rel=1e-6)
    for g in ADAM_GRADS[1:]:
        set_grads([p], g)
        opt.step()
    assert p.tolist() == pytest.approx(rmsprop_by_hand([1.0, -2.0, 0.5], ADAM_GRADS, lr=0.01), rel=1e-6)
    assert list(opt.state[p]) == ["step", "square_avg"] and opt.state[p]["step"].item() == 3.0

    (p,) = params([1.0, -2.0, 0.5])
    opt = RMSprop([p], lr=0.01, alpha=0.9, momentum=0.5, centered=True)
    for g in ADAM_GRADS:
        set_grads([p], g)
        opt.step()
    expected = rmsprop_by_hand([1.0, -2.0, 0.5], ADAM_GRADS, lr=0.01, alpha=0.9, momentum=0.5, centered=True)
    assert p.tolist() == pytest.approx(expected, rel=1e-5)
    assert list(opt.state[p]) == ["step", "square_avg", "momentum_buffer", "grad_avg"]


# [SECTION] The Optimizer --------------------------------------------------------------------

def test_repr_as_torch_prints_it():
    (p,) = params([1.0])
    assert repr(SGD([p], lr=1e-6)) == (
        "SGD (\n"
        "Parameter Group 0\n"
        "    dampening: 0\n"
        "    differentiable: False\n"
        "    foreach: None\n"
        "    fused: None\n"
        "    lr: 1e-06\n"
        "    maximize: False\n"
        "    momentum: 0\n"
        "    nesterov: False\n"
        "    weight_decay: 0\n"
        ")")
    assert repr(Adam([p])) == (
        "Adam (\n"
        "Parameter Group 0\n"
        "    amsgrad: False\n"
        "    betas: (0.9, 0.999)\n"
        "    capturable: False\n"
        "    decoupled_weight_decay: False\n"
        "    differentiable: False\n"
        "    eps: 1e-08\n"
        "    foreach: None\n"
        "    fused: None\n"
        "    lr: 0.001\n"
        "    maximize: False\n"
        "    weight_decay: 0\n"
        ")")
    assert repr(RMSprop([p])) == (
        "RMSprop (\n"
        "Parameter Group 0\n"
        "    alpha: 0.99\n"
        "    capturable: False\n"
        "    centered: False\n"
        "    differentiable: False\n"
        "    eps: 1e-08\n"
        "    foreach: None\n"
        "    lr: 0.01\n"
        "    maximize: False\n"
        "    momentum: 0\n"
        "    weight_decay: 0\n"
        ")")


def test_param_groups_defaults_and_add_param_group():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    opt = SGD([{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.5}], lr=0.1,
              momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert all(g["momentum"] == 0.9 for g in opt.param_groups)
    assert opt.defaults["lr"] == 0.1
    extra = nn.Parameter(descent.ones(1))
    opt.add_param_group({"params": extra, "momentum": 0.0})
    assert opt.param_groups[2]["params"] == [extra] and opt.param_groups[2]["lr"] == 0.1
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [extra]})
    named = SGD(model.named_parameters(), lr=0.1)
    assert named.param_groups[0]["param_names"] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert "    param_names: ['0.weight', '0.bias', '1.weight', '1.bias']\n" in repr(named)


def test_errors_as_torch():
    (p,) = params([1.0])
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors or "
                                        "dicts, but got descent.FloatTensor"):
        SGD(descent.ones(1), lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        SGD([descent.ones(1, requires_grad=True) * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        SGD([1], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        SGD([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        SGD([p], nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        Adam([p], betas=(1.0, 0.9))
    with pytest.raises(NotImplementedError, match="foreach=True is not supported"):
        Adam([p], foreach=True)


def test_zero_grad_and_step_with_a_closure():
    p, q = params([1.0], [2.0])
    opt = SGD([p, q], lr=0.1)
    set_grads([p, q], [1.0], [1.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0] and q.grad.tolist() == [0.0]
    opt.zero_grad()
    assert p.grad is None and q.grad is None
    seen = []

    def closure():
        seen.append(descent.is_grad_enabled())
        opt.zero_grad()
        loss = (p * 3).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 3.0 and seen == [True]  # the closure runs with grad mode on; the update with it off
    assert p.tolist() == pytest.approx([0.7])


def test_state_dict_and_load_state_dict():
    descent.manual_seed(3)
    a = nn.Linear(2, 1)
    b = nn.Linear(2, 1)
    b.load_state_dict(a.state_dict())
    opt_a = SGD(a.parameters(), lr=0.1, momentum=0.9)
    set_grads([a.weight, a.bias], [[1.0, 2.0]], [0.5])
    opt_a.step()
    sd = opt_a.state_dict()
    assert sd["param_groups"] == [{"lr": 0.1, "momentum": 0.9, "dampening": 0, "weight_decay": 0,
                                   "nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                                   "fused": None, "params": [0, 1]}]
    assert list(sd["state"]) == [0, 1] and sd["state"][0]["momentum_buffer"].tolist() == [[1.0, 2.0]]
    assert sd["state"][0]["momentum_buffer"] is opt_a.state[a.weight]["momentum_buffer"]  # not a copy, as torch's

    b.load_state_dict(a.state_dict())
    opt_b = SGD(b.parameters(), lr=0.7)
    # As saved and loaded (torch.save): a copy. The loaded state takes the tensors it is given, as torch's does.
    opt_b.load_state_dict(copy.deepcopy(sd))
    assert opt_b.param_groups[0]["lr"] == 0.1 and opt_b.param_groups[0]["params"] == [b.weight, b.bias]
    assert opt_b.state[b.weight]["momentum_buffer"].tolist() == [[1.0, 2.0]]
    for opt, m in ((opt_a, a), (opt_b, b)):
        set_grads([m.weight, m.bias], [[-1.0, 0.5]], [2.0])
        opt.step()
    assert a.weight.tolist() == b.weight.tolist() and a.bias.tolist() == b.bias.tolist()

    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt_b.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size of "
                                         "optimizer's group"):
        SGD([b.weight], lr=0.1).load_state_dict(sd)


def test_adam_state_dict_round_trip_continues_the_same_trajectory():
    p1, = params([1.0, -2.0, 0.5])
    p2, = params([1.0, -2.0, 0.5])
    o1 = Adam([p1], lr=0.01)
    set_grads([p1], ADAM_GRADS[0])
    o1.step()
    with descent.no_grad():
        p2.copy_(p1)
    o2 = Adam([p2], lr=0.5)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))
    for g in ADAM_GRADS[1:]:
        set_grads([p1], g)
        set_grads([p2], g)
        o1.step()
        o2.step()
    assert p1.tolist() == p2.tolist()


def test_step_and_zero_grad_are_floor_1_spans():
    (p,) = params([1.0, 2.0])
    opt = Adam([p], lr=0.1)
    set_grads([p], [1.0, 1.0])
    with descent.trace() as t:
        opt.step()
        opt.zero_grad()
    spans = t.result.spans()
    step = [s for s in spans if s["name"] == "Optimizer.step#Adam.step"]
    zero = [s for s in spans if s["name"] == "Optimizer.zero_grad#Adam.zero_grad"]
    assert len(step) == 1 and len(zero) == 1 and step[0]["floor"] == 1 and zero[0]["floor"] == 1
    assert step[0]["file"] == "floors/python/descent/optim/optimizer.py"
    inside = [s for s in spans if step[0]["start_ns"] <= s["start_ns"] and s["end_ns"] <= step[0]["end_ns"]]
    names = {s["name"] for s in inside}
    assert {"aten::mul_", "aten::add_", "aten::sqrt"} <= names  # the update's ops, each descending as any op
    graphs = {dict(s["args"]).get("graph") for s in inside if s["floor"] == 4}
    assert graphs == {"none: grad mode is off"}


# [SECTION] Beside torch ---------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda mod, ps: mod.SGD(ps, lr=0.1, momentum=0.9),
    lambda mod, ps: mod.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda mod, ps: mod.Adam(ps, lr=0.01),
    lambda mod, ps: mod.Adam(ps, lr=0.05, betas=(0.5, 0.9), weight_decay=0.1, amsgrad=True),
    lambda mod, ps: mod.Adam(ps, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    lambda mod, ps: mod.RMSprop(ps, lr=0.01),
    lambda mod, ps: mod.RMSprop(ps, lr=0.01, momentum=0.5, centered=True, weight_decay=0.1),
])
def test_against_torch(make):
    torch = pytest.importorskip("torch")
    init = [1.0, -2.0, 0.5]
    tp = torch.nn.Parameter(torch.tensor(init))
    dp = nn.Parameter(descent.tensor(init))
    topt, dopt = make(torch.optim, [tp]), make(descent.optim, [dp])
    assert repr(dopt) == repr(topt)
    for g in ADAM_GRADS:
        tp.grad = torch.tensor(g)
        dp.grad = descent.tensor(g)
        topt.step()
        dopt.step()
        assert dp.tolist() == pytest.approx(tp.tolist(), rel=2e-6, abs=1e-7)
    tsd, dsd = topt.state_dict(), dopt.state_dict()
    assert dsd["param_groups"] == tsd["param_groups"]
    assert list(dsd["state"][0]) == list(tsd["state"][0])
    for k, v in tsd["state"][0].items():
        assert dsd["state"][0][k].tolist() == pytest.approx(v.tolist(), rel=2e-6, abs=1e-7)
        assert dsd["state"][0][k].dtype is getattr(descent, str(v.dtype).split(".")[1])
