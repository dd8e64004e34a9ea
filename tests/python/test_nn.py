"""descent.nn: Module, Parameter, Sequential, Linear, ReLU, Flatten, MSELoss,
nn.init and nn.functional, checked against what torch.nn 2.11 does and
prints (the expected text is torch's, with descent's names where torch
names itself: descent.Size, descent.FloatTensor, descent.nn.Parameter)."""
import copy
import math
import pickle
import re
import warnings
from collections import OrderedDict

import pytest

import descent
import descent.nn as nn
import descent.nn.functional as F
from descent.nn import init


class Polynomial3(nn.Module):
    """The tutorial's model (beginner_source/examples_nn/polynomial_module.py)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(descent.randn(()))
        self.b = nn.Parameter(descent.randn(()))
        self.c = nn.Parameter(descent.randn(()))
        self.d = nn.Parameter(descent.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
        self.head = nn.Linear(3, 2, bias=False)
        self.register_buffer("scale", descent.ones(2))

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


# [SECTION] Parameter ------------------------------------------------------------------------

def test_parameter_is_a_leaf_tensor_that_requires_grad():
    data = descent.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, descent.Tensor) and type(p) is nn.Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == data.data_ptr()  # shares data's memory, as torch's does
    assert type(p * 2) is descent.Tensor  # ops give plain tensors
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_repr():
    assert repr(nn.Parameter(descent.tensor([1.0, 2.0]))) == \
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(nn.Parameter(descent.tensor([[1.5], [-2.0]]), requires_grad=False)) == \
        "Parameter containing:\ntensor([[ 1.5000],\n        [-2.0000]])"


def test_parameter_copies_are_parameters():
    p = nn.Parameter(descent.tensor([1.0, 2.0]))
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad
        assert q.tolist() == [1.0, 2.0] and q.data_ptr() != p.data_ptr()


# [SECTION] Registration by attribute --------------------------------------------------------

def test_attributes_register_parameters_modules_and_buffers():
    m = TwoLayer()
    assert [n for n, _ in m.named_parameters()] == ["body.0.weight", "body.0.bias", "head.weight"]
    assert [p.shape for p in m.parameters()] == [(3, 4), (3,), (2, 3)]
    assert [n for n, _ in m.named_buffers()] == ["scale"]
    assert [n for n, _ in m.named_children()] == ["body", "head"]
    assert [n for n, _ in m.named_modules()] == ["", "body", "body.0", "body.1", "head"]
    assert [type(x).__name__ for x in m.modules()] == ["TwoLayer", "Sequential", "Linear", "ReLU", "Linear"]
    assert list(m.children()) == [m.body, m.head]
    assert m.head.bias is None and "bias" in m.head._parameters
    assert m.get_submodule("body.0") is m.body[0]
    assert m.get_parameter("body.0.bias") is m.body[0].bias
    assert [n for n, _ in m.named_parameters(recurse=False)] == []
    assert "head" in dir(m) and "scale" in dir(m)


def test_a_shared_parameter_is_listed_once():
    m = nn.Module()
    m.first = nn.Linear(2, 2)
    m.second = m.first
    assert [n for n, _ in m.named_parameters()] == ["first.weight", "first.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "first"]
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4


def test_setattr_moves_a_name_between_kinds_and_delattr_removes_it():
    m = nn.Module()
    m.x = nn.Parameter(descent.ones(1))
    assert "x" in m._parameters
    with pytest.raises(TypeError, match=re.escape(
            "cannot assign 'descent.nn.modules.linear.Linear' as parameter 'x' (descent.nn.Parameter or None "
            "expected)")):
        m.x = nn.Linear(1, 1)
    m.y = nn.Linear(1, 1)
    m.y = nn.Parameter(descent.ones(1))  # a module's name taken by a parameter: the module is gone
    assert "y" in m._parameters and "y" not in m._modules
    del m.x, m.y
    assert not m._parameters
    m.x = nn.Linear(1, 1)
    assert "x" in m._modules
    del m.x
    assert "x" not in m._modules
    m.x = 3  # a plain attribute
    assert m.__dict__["x"] == 3
    del m.x
    with pytest.raises(AttributeError, match=re.escape("'Module' object has no attribute 'x'")):
        m.x


def test_registration_errors_as_torch():
    m = nn.Module()
    m.w = nn.Parameter(descent.ones(1))
    with pytest.raises(TypeError, match=re.escape(
            "cannot assign 'descent.FloatTensor' as parameter 'w' (descent.nn.Parameter or None expected)")):
        m.w = descent.ones(1)
    m.w = None
    assert m.w is None and list(m.parameters()) == []
    m.sub = nn.ReLU()
    with pytest.raises(TypeError, match=re.escape(
            "cannot assign 'int' as child module 'sub' (descent.nn.Module or None expected)")):
        m.sub = 5
    with pytest.raises(TypeError, match=re.escape(
            "cannot assign 'descent.FloatTensor' object to parameter 'p' (descent.nn.Parameter or None required)")):
        m.register_parameter("p", descent.ones(1))
    with pytest.raises(KeyError, match="attribute 'training' already exists"):
        m.register_parameter("training", nn.Parameter(descent.ones(1)))
    with pytest.raises(KeyError, match="parameter name can"):
        m.register_parameter("a.b", None)
    q = nn.Parameter(descent.ones(1), requires_grad=False)
    q.mul_(descent.ones(1, requires_grad=True))  # an in-place op gives the Parameter object a history
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        m.register_parameter("q", q)
    with pytest.raises(TypeError, match=re.escape("int is not a Module subclass")):
        m.add_module("k", 1)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(descent.ones(1))

    with pytest.raises(AttributeError, match=re.escape("cannot assign parameters before Module.__init__() call")):
        Early()


def test_missing_forward():
    with pytest.raises(NotImplementedError,
                       match=re.escape('Module [Module] is missing the required "forward" function')):
        nn.Module()(1)


# [SECTION] Calling a module -----------------------------------------------------------------

def test_call_runs_forward_and_the_hooks():
    m = Polynomial3()
    x = descent.tensor([1.0, 2.0])
    expected = (m.a + m.b * x + m.c * x ** 2 + m.d * x ** 3).tolist()
    assert m(x).tolist() == expected
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, args: seen.append(("pre", mod is m, len(args))))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    assert m(x).tolist() == [0.0, 0.0] and seen == [("pre", True, 1)]
    h1.remove()
    h2.remove()
    assert m(x).tolist() == expected and len(seen) == 1


def test_a_module_call_is_a_floor_1_span_named_as_torch_profiler_names_it():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    x = descent.ones(4, 3)
    with descent.trace() as t:
        model(x)
    spans = t.result.spans()
    modules = [s for s in spans if s["name"].startswith("nn.Module: ")]
    names = [s["name"] for s in modules]
    assert len(names) == 4
    assert re.fullmatch(r"nn\.Module: Sequential_\d+", names[0])
    first, second = re.fullmatch(r"nn\.Module: Linear_(\d+)", names[1]), re.fullmatch(r"nn\.Module: Linear_(\d+)",
                                                                                         names[3])
    assert first and second and int(second.group(1)) == int(first.group(1)) + 1  # numbered per class
    assert re.fullmatch(r"nn\.Module: ReLU_\d+", names[2])
    assert all(s["floor"] == 1 for s in modules)
    assert modules[1]["file"] == "floors/python/descent/nn/modules/module.py"
    by_id = {s["id"]: s for s in spans}

    def under(s, ancestor):
        while s["parent"] in by_id:
            s = by_id[s["parent"]]
            if s is ancestor:
                return True
        return False

    relu_ops = [s for s in spans if s["name"] == "aten::relu" and s["floor"] == 3]
    assert relu_ops and all(under(s, modules[2]) for s in relu_ops)
    assert all(under(m, modules[0]) for m in modules[1:])
    # The same module keeps its number in a later trace.
    with descent.trace() as t2:
        model(x)
    assert [s["name"] for s in t2.result.spans() if s["name"].startswith("nn.Module: ")] == names


# [SECTION] Modes and gradients --------------------------------------------------------------

def test_train_and_eval_reach_every_module():
    m = TwoLayer()
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)


def test_zero_grad_sets_to_none_by_default():
    m = nn.Linear(2, 1)
    m(descent.ones(3, 2)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [[0.0, 0.0]] and m.bias.grad.tolist() == [0.0]
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_requires_grad_and_to():
    m = TwoLayer()
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m.double()
    assert {p.dtype for p in m.parameters()} == {descent.float64} and m.scale.dtype is descent.float64
    assert all(type(p) is nn.Parameter and p.requires_grad for p in m.parameters())
    m.to(dtype=descent.float32)
    assert {p.dtype for p in m.parameters()} == {descent.float32}
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(descent.int64)


def test_a_model_moved_to_sim_trains_there():
    descent.manual_seed(1)  # seed 0 gives torch's Linear(3, 2), whose ReLU is 0 for ones(4, 3): no gradient
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    cpu_weight = m[0].weight.tolist()
    assert m.to("sim:0") is m
    assert {str(p.device) for p in m.parameters()} == {"sim:0"}
    assert m[0].weight.tolist() == cpu_weight and type(m[0].weight) is nn.Parameter
    x = descent.ones(4, 3, device="sim:0")
    loss = nn.MSELoss()(m(x), descent.zeros(4, 2, device="sim:0"))
    loss.backward()
    assert str(m[0].weight.grad.device) == "sim:0"
    descent.optim.SGD(m.parameters(), lr=0.1).step()
    assert m[0].weight.tolist() != cpu_weight
    m.cpu()
    assert {str(p.device) for p in m.parameters()} == {"cpu"}


# [SECTION] Printing -------------------------------------------------------------------------

def test_repr_of_the_tutorial_models():
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    assert repr(model) == ("Sequential(\n"
                           "  (0): Linear(in_features=3, out_features=1, bias=True)\n"
                           "  (1): Flatten(start_dim=0, end_dim=1)\n"
                           ")")
    assert repr(Polynomial3()) == "Polynomial3()"
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss()"
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.Linear(2, 5, bias=False)) == "Linear(in_features=2, out_features=5, bias=False)"


def test_repr_nests_and_indents():
    assert repr(TwoLayer()) == ("TwoLayer(\n"
                                "  (body): Sequential(\n"
                                "    (0): Linear(in_features=4, out_features=3, bias=True)\n"
                                "    (1): ReLU()\n"
                                "  )\n"
                                "  (head): Linear(in_features=3, out_features=2, bias=False)\n"
                                ")")

    class Extra(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.ReLU()

        def extra_repr(self):
            return "alpha=1\nbeta=2"

    assert repr(Extra()) == "Extra(\n  alpha=1\n  beta=2\n  (inner): ReLU()\n)"


# [SECTION] state_dict -----------------------------------------------------------------------

def test_state_dict_keys_values_and_metadata():
    m = TwoLayer()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "body.0.weight", "body.0.bias", "head.weight"]
    assert dict(sd._metadata) == {"": {"version": 1}, "body": {"version": 1}, "body.0": {"version": 1},
                                  "body.1": {"version": 1}, "head": {"version": 1}}
    w = sd["body.0.weight"]
    assert type(w) is descent.Tensor and not w.requires_grad and w.data_ptr() == m.body[0].weight.data_ptr()
    assert m.state_dict(keep_vars=True)["head.weight"] is m.head.weight
    m.register_buffer("tmp", descent.zeros(1), persistent=False)
    assert "tmp" not in m.state_dict() and "tmp" in dict(m.named_buffers())


def test_state_dict_round_trip():
    descent.manual_seed(1)
    a, b = TwoLayer(), TwoLayer()
    b.scale.fill_(3.0)
    assert repr(b.load_state_dict(a.state_dict())) == "<All keys matched successfully>"
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and pa.tolist() == pb.tolist() and pa.data_ptr() != pb.data_ptr()
    x = descent.randn(5, 4)
    assert a(x).tolist() == b(x).tolist()
    c = pickle.loads(pickle.dumps(a.state_dict()))
    assert list(c) == list(a.state_dict())


def test_load_state_dict_strict_errors_as_torch():
    m = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    sd = m.state_dict()
    del sd["0.bias"]
    sd["0.extra"] = descent.ones(1)
    sd["5.weight"] = descent.ones(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Sequential:\n'
                            '\tMissing key(s) in state_dict: "0.bias". \n'
                            '\tUnexpected key(s) in state_dict: "5.weight", "0.extra". ')
    result = m.load_state_dict(sd, strict=False)  # loads what matches, and says what did not
    assert repr(result) == "_IncompatibleKeys(missing_keys=['0.bias'], unexpected_keys=['5.weight', '0.extra'])"
    bad = m.state_dict()
    bad["0.weight"] = descent.ones(2, 3)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    assert str(e.value) == ("Error(s) in loading state_dict for Sequential:\n"
                            "\tsize mismatch for 0.weight: copying a param with shape descent.Size([2, 3]) from "
                            "checkpoint, the shape in current model is descent.Size([1, 3]).")
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        m.load_state_dict([])


def test_load_state_dict_copies_under_no_grad_and_keeps_the_parameters():
    m = nn.Linear(2, 1)
    w = m.weight
    m.load_state_dict({"weight": descent.tensor([[1.0, 2.0]]), "bias": descent.tensor([3.0])})
    assert m.weight is w and w.is_leaf and w.tolist() == [[1.0, 2.0]] and m.bias.tolist() == [3.0]
    m.load_state_dict({"weight": descent.tensor([[5.0, 6.0]]), "bias": descent.tensor([7.0])}, assign=True)
    assert m.weight is not w and type(m.weight) is nn.Parameter and m.weight.tolist() == [[5.0, 6.0]]


# [SECTION] Sequential -----------------------------------------------------------------------

def test_sequential_as_a_list():
    l0, r, l1 = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(l0, r, l1)
    assert len(s) == 3 and s[0] is l0 and s[-1] is l1 and list(s) == [l0, r, l1]
    head = s[:2]
    assert type(head) is nn.Sequential and list(head) == [l0, r] and list(head._modules) == ["0", "1"]
    assert list(s[1:]._modules) == ["1", "2"]  # a slice keeps the names
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    assert s.append(nn.Flatten(0, 1)) is s and len(s) == 4
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and s[1] is l1
    s[0] = nn.ReLU()
    assert type(s[0]) is nn.ReLU
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 1)), ("act", nn.ReLU())]))
    assert list(named._modules) == ["fc", "act"] and named.fc is named[0]
    x = descent.ones(4, 2)
    s2 = nn.Sequential(l0, r, l1)
    assert s2(x).tolist() == l1(r(l0(x))).tolist()


# [SECTION] Linear, ReLU, Flatten, MSELoss ---------------------------------------------------

def test_linear_parameters_and_their_initial_bounds():
    descent.manual_seed(0)
    m = nn.Linear(9, 40)
    assert m.weight.shape == (40, 9) and m.bias.shape == (40,)
    bound = 1 / math.sqrt(9)
    w, b = m.weight.reshape(-1).tolist(), m.bias.tolist()
    assert all(-bound <= v < bound for v in w + b)
    assert max(w) > 0.8 * bound and min(w) < -0.8 * bound  # spread over the interval, not squeezed
    x = descent.randn(5, 9)
    assert m(x).reshape(-1).tolist() == pytest.approx((x @ m.weight.T + m.bias).reshape(-1).tolist(), rel=1e-5,
                                                      abs=1e-6)
    assert nn.Linear(3, 2, dtype=descent.float64).weight.dtype is descent.float64


def test_relu_flatten_modules():
    x = descent.tensor([[-1.0, 2.0], [3.0, -4.0]])
    assert nn.ReLU()(x).tolist() == [[0.0, 2.0], [3.0, 0.0]]
    y = x.clone()
    assert nn.ReLU(inplace=True)(y) is y and y.tolist() == [[0.0, 2.0], [3.0, 0.0]]
    assert nn.Flatten()(descent.ones(2, 3, 4)).shape == (2, 12)
    assert nn.Flatten(0, 1)(descent.ones(5, 1)).shape == (5,)


def test_mse_loss_reductions():
    a = descent.tensor([1.0, 2.0, 4.0])
    b = descent.tensor([1.0, 0.0, 1.0])
    assert nn.MSELoss()(a, b).item() == pytest.approx(13.0 / 3)
    assert nn.MSELoss(reduction="sum")(a, b).item() == 13.0
    assert nn.MSELoss(reduction="none")(a, b).tolist() == [0.0, 4.0, 9.0]
    assert F.mse_loss(a, b, reduction="sum").item() == 13.0
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.mse_loss(a, b, reduction="bad")
    with pytest.warns(UserWarning, match=re.escape("size_average and reduce args will be deprecated, please use "
                                                   "reduction='sum' instead.")):
        assert nn.MSELoss(size_average=False).reduction == "sum"


def test_mse_loss_warns_on_a_size_mismatch_and_broadcasts():
    pred = descent.ones(4, 1)
    target = descent.zeros(4)
    with pytest.warns(UserWarning) as w:
        loss = F.mse_loss(pred, target, reduction="sum")
    assert str(w[0].message) == ("Using a target size (descent.Size([4])) that is different to the input size "
                                 "(descent.Size([4, 1])). This will likely lead to incorrect results due to "
                                 "broadcasting. Please ensure they have the same size.")
    assert w[0].filename == __file__  # stacklevel=2: the caller's line
    assert loss.item() == 16.0  # (4, 1) and (4,) broadcast to (4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(pred, descent.zeros(4, 1))


def test_mse_loss_gradient():
    pred = descent.tensor([1.0, 3.0], requires_grad=True)
    nn.MSELoss()(pred, descent.tensor([0.0, 1.0])).backward()
    assert pred.grad.tolist() == [1.0, 2.0]


def test_functional_linear_is_the_op():
    assert F.linear is descent._C._nn.linear
    x, w, b = descent.ones(2, 3), descent.ones(4, 3), descent.ones(4)
    assert F.linear(x, w, b).tolist() == [[4.0] * 4] * 2
    assert F.linear(x, w).tolist() == [[3.0] * 4] * 2
    assert F.relu(descent.tensor([-1.0, 1.0])).tolist() == [0.0, 1.0]


# [SECTION] nn.init --------------------------------------------------------------------------

def test_fan_in_and_fan_out_and_gain():
    assert init._calculate_fan_in_and_fan_out(descent.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(descent.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init._calculate_fan_in_and_fan_out(descent.empty(3))
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match=re.escape("Mode fan_avg not supported, please use one of ['fan_in', "
                                                   "'fan_out']")):
        init.kaiming_uniform_(descent.empty(2, 2), mode="fan_avg")


def test_init_fills_in_place_under_no_grad():
    p = nn.Parameter(descent.empty(200, 50))
    assert init.zeros_(p) is p and p.tolist() == [[0.0] * 50] * 200 and p.is_leaf
    assert init.ones_(p) is p and p.sum().item() == 10000.0
    init.constant_(p, 2.5)
    assert p.max().item() == 2.5
    init.uniform_(p, -2.0, 3.0)
    v = p.reshape(-1).tolist()
    assert -2.0 <= min(v) < -1.9 and 2.9 < max(v) < 3.0
    init.kaiming_uniform_(p, a=math.sqrt(5))
    v = p.reshape(-1).tolist()
    assert max(abs(x) for x in v) <= 1 / math.sqrt(50)
    init.normal_(p, 1.0, 0.5)
    v = p.reshape(-1).tolist()
    mean = sum(v) / len(v)
    std = (sum((x - mean) ** 2 for x in v) / len(v)) ** 0.5
    assert mean == pytest.approx(1.0, abs=0.02) and std == pytest.approx(0.5, abs=0.02)
    assert p.grad_fn is None and p.requires_grad
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(descent.empty(0, 3))
    # generator= is passed on to the in-place draw, as torch.nn.init does
    a = init.uniform_(descent.empty(6), -1.0, 2.0, generator=descent.Generator().manual_seed(7)).tolist()
    b = init.uniform_(descent.empty(6), -1.0, 2.0, generator=descent.Generator().manual_seed(7)).tolist()
    assert a == b and all(-1.0 <= x < 2.0 for x in a)
    with pytest.raises(TypeError, match="argument 'generator' must be torch.Generator, not object"):
        init.uniform_(p, generator=object())


# [SECTION] Beside torch ---------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    dm = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    assert repr(dm) == repr(tm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    assert dict(dm.state_dict()._metadata) == dict(tm.state_dict()._metadata)
    assert [n for n, _ in dm.named_modules()] == [n for n, _ in tm.named_modules()]
    dm.load_state_dict({k: descent.tensor(v.tolist()) for k, v in tm.state_dict().items()})
    x = [[0.5, -1.0, 2.0], [1.0, 2.0, 3.0]]
    assert dm(descent.tensor(x)).tolist() == pytest.approx(tm(torch.tensor(x)).tolist(), rel=1e-6)
    tp = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    assert repr(nn.Parameter(descent.tensor([1.0, 2.0]))) == repr(tp)
    bad = {"0.weight": torch.ones(2, 3), "0.bias": torch.ones(1), "0.extra": torch.ones(1)}
    with pytest.raises(RuntimeError) as te:
        tm.load_state_dict(bad)
    with pytest.raises(RuntimeError) as de:
        dm.load_state_dict({k: descent.tensor(v.tolist()) for k, v in bad.items()})
    assert str(de.value) == str(te.value).replace("torch.Size", "descent.Size")
    pairs = [(torch.nn.ReLU(inplace=True), nn.ReLU(inplace=True)), (torch.nn.ReLU(), nn.ReLU()),
             (torch.nn.Flatten(), nn.Flatten()), (torch.nn.Flatten(0, 1), nn.Flatten(0, 1)),
             (torch.nn.MSELoss(reduction="sum"), nn.MSELoss(reduction="sum")),
             (torch.nn.Linear(2, 5, bias=False), nn.Linear(2, 5, bias=False))]
    for theirs, ours in pairs:
        assert repr(ours) == repr(theirs)
    a = [1.0, 2.0, 4.0]
    b = [1.0, 0.0, 1.0]
    for reduction in ("mean", "sum", "none"):
        t = torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b), reduction=reduction)
        d = F.mse_loss(descent.tensor(a), descent.tensor(b), reduction=reduction)
        assert d.tolist() == pytest.approx(t.tolist())
    assert init._calculate_fan_in_and_fan_out(descent.empty(8, 4, 3, 3)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3))


def test_linear_initial_weights_have_torchs_distribution():
    """Linear(300, 200) over four seeds, beside torch's: both draw weight and bias
    uniformly on [-1/sqrt(fan_in), 1/sqrt(fan_in)] (kaiming_uniform_ with a=sqrt(5),
    then uniform_ for the bias). The two generators' streams differ, so the
    samples are compared as samples: each statistic of descent's within 5 standard
    errors of the difference of two independent samples of that uniform (n = 60000
    weights, 200 biases); the seeds are fixed, so the test is deterministic."""
    torch = pytest.importorskip("torch")
    bound = 1 / math.sqrt(300)

    def stats(values):
        n = len(values)
        mean = sum(values) / n
        return n, min(values), max(values), mean, sum((v - mean) ** 2 for v in values) / n

    for seed in range(4):
        torch.manual_seed(seed)
        descent.manual_seed(seed)
        tm, dm = torch.nn.Linear(300, 200), nn.Linear(300, 200)
        for name in ("weight", "bias"):
            tv = getattr(tm, name).detach().reshape(-1).tolist()
            dv = getattr(dm, name).detach().reshape(-1).tolist()
            assert getattr(dm, name).dtype is descent.float32 and getattr(tm, name).dtype is torch.float32
            n, tmin, tmax, tmean, tvar = stats(tv)
            n, dmin, dmax, dmean, dvar = stats(dv)
            # bounds: inside the interval and reaching its ends, as torch's (no sample in the last 40/n
            # of the half-width, 20/n of the width, has probability (1 - 20/n)^n < e^-20)
            for lo, hi in ((tmin, tmax), (dmin, dmax)):
                assert -bound <= lo < -bound * (1 - 40 / n) and bound * (1 - 40 / n) < hi <= bound
            # mean and variance: a uniform on [-b, b] has variance b^2/3, and its sample variance
            # a standard error of b^2 sqrt(4 / (45 n)); sqrt(2) for the difference of two samples
            se_mean = math.sqrt(2) * bound / math.sqrt(3 * n)
            se_var = math.sqrt(2) * bound ** 2 * math.sqrt(4 / (45 * n))
            assert abs(dmean - tmean) < 5 * se_mean, (seed, name, dmean, tmean)
            assert abs(dvar - tvar) < 5 * se_var, (seed, name, dvar, tvar)
            assert abs(dvar - bound ** 2 / 3) < 5 * se_var and abs(tvar - bound ** 2 / 3) < 5 * se_var
            if name == "weight":  # the shape: the counts in ten equal bins (each p = 0.1) agree
                def counts(values):
                    c = [0] * 10
                    for v in values:
                        c[min(int((v + bound) / (2 * bound) * 10), 9)] += 1
                    return c
                se_count = math.sqrt(2 * n * 0.1 * 0.9)
                for dc, tc in zip(counts(dv), counts(tv)):
                    assert abs(dc - tc) < 5 * se_count, (seed, counts(dv), counts(tv))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_value_and_gradient_against_torch(reduction):
    """F.mse_loss with input and target both requiring grad: the loss and both
    gradients are torch's within float32 rounding ('none' backward with a
    gradient of ones)."""
    torch = pytest.importorskip("torch")
    pred = [[0.5, -1.25, 2.0, 3.5], [0.1, 0.7, -0.3, 1.9], [4.0, -2.5, 0.0, 0.25]]
    target = [[1.0, 0.0, 1.5, -2.0], [0.3, 0.7, 0.2, 2.2], [-1.0, 1.5, 0.125, 0.0]]
    got = {}
    for lib, fn in ((torch, torch.nn.functional.mse_loss), (descent, F.mse_loss)):
        p = lib.tensor(pred, requires_grad=True)
        t = lib.tensor(target, requires_grad=True)
        loss = fn(p, t, reduction=reduction)
        loss.backward(lib.ones(loss.shape) if reduction == "none" else None)
        got[lib.__name__] = (loss.reshape(-1).tolist(), p.grad.reshape(-1).tolist(), t.grad.reshape(-1).tolist(),
                             list(loss.shape), loss.grad_fn.name())
    ours, theirs = got["descent"], got["torch"]
    assert ours[3:] == theirs[3:]  # the shape and the node (MseLossBackward0)
    for o, t in zip(ours[:3], theirs[:3]):
        assert o == pytest.approx(t, rel=1e-6, abs=1e-7)


def test_tutorial_models_print_as_torchs():
    """The models of the tutorials (examples_nn/), built from torch.nn and
    descent.nn alike, print the same text; so do their losses."""
    torch = pytest.importorskip("torch")

    def models(lib):
        class Polynomial3(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Parameter(lib.randn(()))
                self.b = lib.nn.Parameter(lib.randn(()))
                self.c = lib.nn.Parameter(lib.randn(()))
                self.d = lib.nn.Parameter(lib.randn(()))

        class DynamicNet(Polynomial3):
            def __init__(self):
                super().__init__()
                self.e = lib.nn.Parameter(lib.randn(()))

        return [lib.nn.Sequential(lib.nn.Linear(3, 1), lib.nn.Flatten(0, 1)), Polynomial3(), DynamicNet(),
                lib.nn.MSELoss(reduction="sum")]

    for ours, theirs in zip(models(descent), models(torch)):
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
