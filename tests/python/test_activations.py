"""Issue 42's activations and draws, beside torch 2.11's values: F.gelu (erf's and tanh's), F.silu, nn.GELU
and nn.SiLU (names, printing, errors, nodes, first and second derivatives, on the CPU and sim:0), randint_like's
low overload and float64 normal_ (Note [torch's x86 kernels fuse * std + mean], cpu_generator.h).

The values below are what torch printed (torch 2.15 CPU on x86, whose generator and scalar math are 2.11's;
float64 to 15 digits, the draws as hex). float64 gelu/silu run glibc's erf, tanh and exp as aten's scalar
path does: within a few ulps of torch's vectorized ones."""
import math

import pytest

import descent
import descent.nn as nn
import descent.nn.functional as F
from conftest import needs_cuda

# torch.nn.functional on torch.linspace(-4, 4, 9, dtype=torch.float64)
GELU = ['-0x1.09ad7954b0000p-13', '-0x1.096697b244880p-8', '-0x1.74bcf82c9d860p-5', '-0x1.44ed0bb7cb20ap-3', '0x0.0p+0', '0x1.aec4bd120d37ep-1', '0x1.f45a183e9b13dp+0', '0x1.7f7b4cb426ddcp+1', '0x1.fffbd94a1aad4p+1']
GELU_TANH = ['-0x1.26a20335dc000p-14', '-0x1.dcc2a01161280p-9', '-0x1.73ef8961cab30p-5', '-0x1.453d223571478p-3', '0x0.0p+0', '0x1.aeb0b772a3ae2p-1', '0x1.f46083b4f1aa6p+0', '0x1.7f88cf57fba7bp+1', '0x1.fffdb2bbf9944p+1']
SILU = ['-0x1.26afa1e43c2c3p-4', '-0x1.236272d6c3f34p-3', '-0x1.e84152bac31aep-3', '-0x1.136561454ba86p-2', '0x0.0p+0', '0x1.764d4f5d5a2bdp-1', '0x1.c2f7d5a8a79c9p+0', '0x1.6dc9d8d293c0dp+1', '0x1.f6ca82f0de1eap+1']
D_GELU = [-0.000503649661226, -0.011945647204184, -0.085231801078197, -0.083315470587686, 0.5, 1.083315470587686, 1.085231801078197, 1.011945647204184, 1.000503649661227]
DD_GELU = [-0.001873623160708, -0.031022938883566, -0.107981933026376, 0.241970724519143, 0.797884560802865, 0.241970724519143, -0.107981933026376, -0.031022938883566, -0.001873623160708]
D_GELU_TANH = [-0.000335123197122, -0.01158416663097, -0.086099256623618, -0.082964083845783, 0.5, 1.082964083845783, 1.086099256623618, 1.01158416663097, 1.000335123197122]
DD_GELU_TANH = [-0.001474059663766, -0.031767658886075, -0.107875079951078, 0.242148197983773, 0.797884560802865, 0.242148197983773, -0.107875079951078, -0.031767658886075, -0.001474059663766]
D_SILU = [-0.052664614891073, -0.08810410601517, -0.090784248784895, 0.072329488128513, 0.5, 0.927670511871487, 1.090784248784896, 1.088104106015169, 1.052664614891073]
DD_SILU = [-0.032783931286974, -0.032321404521006, 0.050062168694707, 0.302366118810015, 0.5, 0.302366118810015, 0.050062168694707, -0.032321404521006, -0.032783931286974]
NORMAL64_2 = ['0x1.1a3aa033cfee1p+2', '0x1.4322d26792dcfp+1']
NORMAL64_7 = ['0x1.1a3aa033cfee1p+2', '0x1.4322d26792dcfp+1', '0x1.222ae7144b77bp+1', '0x1.45510a1c11338p-3', '0x1.11bbeb7373e54p+1', '-0x1.0d6959a6ca772p+1', '0x1.81991e401f7a2p+1']
NORMAL64_20 = ['0x1.58c4d875b338ap+0', '0x1.3852f2d56a166p+1', '0x1.0076acdeec198p+2', '0x1.d49c58471d09cp-2', '-0x1.05080393cdf5fp+1', '0x1.25c20ce48d830p+0', '0x1.407da40bb5f8ap+1', '0x1.118c08a8312e6p+2', '0x1.4f0f3fc5d0c49p+2', '0x1.83f493adc39aap+1', '0x1.0a34d8bd78cefp+2', '0x1.1f7a8a56800c3p+2', '0x1.fbd7e27ef30b8p-3', '-0x1.acc9ec50004f3p+0', '0x1.30db2377ea6c6p+0', '0x1.4e3570fe5a854p+1', '0x1.0b0a859ce9b82p+1', '0x1.5d188978569c4p+1', '0x1.168fa2ff724e1p+2', '-0x1.fd921095aa518p-1']
RANDINT_LIKE = ([7.0, 6.0, 3.0, 5.0, 4.0, 5.0], [2, -2, 2])


def x64():
    return descent.linspace(-4, 4, 9, dtype=descent.float64)


def close(got, want, rel=1e-13):
    want = [float.fromhex(w) if isinstance(w, str) else w for w in want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=rel, abs_tol=1e-15), (got, want)


# cuda: its float64 erf, tanh and exp are within 2 ulps of glibc's (Exactness::DeviceMath, ops.h), well inside rel.
@pytest.mark.parametrize("device", ["cpu", "sim:0", pytest.param("cuda", marks=needs_cuda)])
@pytest.mark.parametrize("name,fn,want,dwant,ddwant", [
    ("GeluBackward0", lambda x: F.gelu(x), GELU, D_GELU, DD_GELU),
    ("GeluBackward0", lambda x: F.gelu(x, approximate="tanh"), GELU_TANH, D_GELU_TANH, DD_GELU_TANH),
    ("SiluBackward0", lambda x: F.silu(x), SILU, D_SILU, DD_SILU),
])
def test_values_and_derivatives_beside_torch(device, name, fn, want, dwant, ddwant):
    x = x64().to(device).requires_grad_()
    y = fn(x)
    assert type(y.grad_fn).__name__ == name and y.device.type == descent.device(device).type
    close(y.cpu().tolist(), want)
    g, = descent.autograd.grad(y.sum(), x, create_graph=True)
    close(g.cpu().tolist(), dwant)
    gg, = descent.autograd.grad(g.sum(), x)
    close(gg.cpu().tolist(), ddwant, rel=1e-9)


def test_double_backward_nodes_as_torch():
    x = x64().requires_grad_()
    g, = descent.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "GeluBackwardBackward0"
    g, = descent.autograd.grad(F.silu(x).sum(), x, create_graph=True)  # infinitely_differentiable_silu_backward
    assert type(g.grad_fn).__name__ == "MulBackward0"


def test_silu_backward_called_directly_has_a_node():
    """torch records NotImplemented here; descent a derivative (Note [silu_backward has a derivative here])."""
    g, x = (descent.randn(3, dtype=descent.float64, requires_grad=True) for _ in range(2))
    assert type(descent.ops.aten.silu_backward(g, x).grad_fn).__name__ == "SiluBackwardBackward0"
    assert type(descent.ops.aten.gelu_backward(g, x).grad_fn).__name__ == "GeluBackwardBackward0"  # torch's too


def test_gradcheck():
    for approximate in ("none", "tanh"):
        x = descent.randn(3, 4, dtype=descent.float64, requires_grad=True)
        assert descent.autograd.gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
        assert descent.autograd.gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    x = descent.randn(3, 4, dtype=descent.float64, requires_grad=True)
    assert descent.autograd.gradcheck(F.silu, (x,)) and descent.autograd.gradgradcheck(F.silu, (x,))


def test_sim_equals_the_cpu_bit_for_bit():
    x = descent.randn(257, 3)
    for f in (F.gelu, lambda t: F.gelu(t, approximate="tanh"), F.silu):
        assert f(x.to("sim:0")).cpu().tolist() == f(x).tolist()


@needs_cuda
def test_cuda_within_its_math_librarys_ulps():
    """float32 on cuda:0 against the CPU: 8 ulps (kCudaMathUlps, verifier.cpp) of the result, or of its terms'
    magnitude where they cancel (Note [Element functions that cancel]): |x| / 2, |grad| (1 + |x|)."""
    x = descent.linspace(-6, 6, 4001)
    g = descent.linspace(-1, 1, 4001)
    half, grads = x.abs().double() / 2, g.abs().double() * (1 + x.abs().double())
    for f, terms in ((F.gelu, half), (lambda t: F.gelu(t, approximate="tanh"), half), (F.silu, None),
                     (lambda t: descent.ops.aten.gelu_backward(g.to(t.device), t), grads),
                     (lambda t: descent.ops.aten.gelu_backward(g.to(t.device), t, approximate=1), grads),
                     (lambda t: descent.ops.aten.silu_backward(g.to(t.device), t), grads)):
        want, got = f(x), f(x.to("cuda")).cpu()
        w = want.abs().double()
        at = w if terms is None else descent.where(w > terms, w, terms)
        ulp = (at * 2.0 ** -23).clamp(min=2.0 ** -149)
        assert ((got.double() - want.double()).abs() <= 8 * ulp).all().item()


def test_reduced_floats_round_once():
    x = descent.linspace(-3, 3, 7)
    for dt in (descent.float16, descent.bfloat16):
        got = F.gelu(x.to(dt))
        assert got.dtype is dt
        assert got.float().tolist() == F.gelu(x).to(dt).float().tolist()


def test_modules_print_and_run_as_torch():
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.SiLU()) == "SiLU()" and repr(nn.SiLU(inplace=True)) == "SiLU(inplace=True)"
    x = x64()
    close(nn.GELU("tanh")(x).tolist(), GELU_TANH)
    y = x.clone()
    assert nn.SiLU(inplace=True)(y) is y
    close(y.tolist(), SILU)
    # torch._C._nn's, as in torch; the backward ops torch.ops.aten's alone
    for name in ("gelu", "silu", "gelu_backward", "silu_backward"):
        assert not hasattr(descent, name) and not hasattr(descent.Tensor, name)
    assert callable(descent._C._nn.gelu) and callable(descent._C._nn.silu)
    assert not hasattr(descent._C._nn, "gelu_backward") and not hasattr(descent._C._nn, "silu_backward")
    assert callable(descent.ops.aten.gelu_backward) and callable(descent.ops.aten.silu_backward)


def test_errors_as_torch():
    with pytest.raises(NotImplementedError, match="^\"GeluKernelImpl\" not implemented for 'Long'$"):
        F.gelu(descent.arange(3))
    with pytest.raises(NotImplementedError, match="^\"GeluKernelImpl\" not implemented for 'Bool'$"):
        F.gelu(descent.tensor([True]))
    with pytest.raises(NotImplementedError, match="^\"silu_cpu\" not implemented for 'Long'$"):
        F.silu(descent.arange(3))
    with pytest.raises(RuntimeError, match="^approximate argument must be either none or tanh.$"):
        F.gelu(descent.ones(2), approximate="foo")
    with pytest.raises(TypeError, match="^gelu\\(\\): argument 'approximate' must be str, not int$"):
        F.gelu(descent.ones(2), approximate=1)
    with pytest.raises(TypeError, match="^gelu\\(\\): argument 'approximate' must be str, not list$"):
        F.gelu(descent.ones(2), approximate=[])
    with pytest.raises(TypeError, match="^gelu\\(\\) takes 1 positional argument but 2 were given$"):
        F.gelu(descent.ones(2), "tanh")  # keyword-only, as torch._C._nn.gelu's
    with pytest.raises(RuntimeError, match="^approximate argument must be either none or tanh.$"):
        nn.GELU("foo")(descent.ones(2))
    with pytest.raises(NotImplementedError, match="^\"GeluBackwardKernelImpl\" not implemented for 'Long'$"):
        descent.ops.aten.gelu_backward(descent.arange(3), descent.arange(3))
    with pytest.raises(NotImplementedError, match="^\"silu_backward_cpu\" not implemented for 'Long'$"):
        descent.ops.aten.silu_backward(descent.arange(3), descent.arange(3))
    # descent's number for aten's string (Note [Where descent's schemas differ from aten's], ops.h)
    for fn in (lambda t: descent._C._nn.gelu(t, approximate=2),
               lambda t: descent.ops.aten.gelu_backward(t, t, approximate=2)):
        with pytest.raises(RuntimeError, match="^approximate argument must be either none or tanh.$"):
            fn(descent.ones(2))


def test_the_trace_names_the_ops_and_nodes():
    x = descent.randn(4, requires_grad=True)
    with descent.trace() as t:
        F.gelu(x, approximate="tanh").sum().backward()
        F.silu(x).sum().backward()
    spans = t.result.spans()
    kernels = [s["name"] for s in spans if s["floor_name"] == "kernels"]
    assert [k for k in kernels if "gelu" in k or "silu" in k] == [
        "aten::gelu", "aten::gelu_backward", "aten::silu", "aten::silu_backward"]
    nodes = [s["args"]["node"] for s in spans if s["floor_name"] == "autograd" and "node" in s["args"]]
    assert "GeluBackward0" in nodes and "SiluBackward0" in nodes
    assert "autograd::engine::evaluate_function: GeluBackward0" in {s["name"] for s in spans}


def test_randint_like_low_as_torch():
    descent.manual_seed(0)
    a = descent.randint_like(descent.zeros(6), 3, 10)
    b = descent.randint_like(descent.zeros(3, dtype=descent.int32), -5, 5)
    assert (a.tolist(), b.tolist()) == RANDINT_LIKE and a.dtype is descent.float32 and b.dtype is descent.int32
    assert descent.randint_like(descent.zeros(2), 7).max().item() < 7  # the high overload still


@pytest.mark.parametrize("n", [2, 7, 20])
def test_float64_normal_is_torchs(n):
    descent.manual_seed(3)
    got = descent.empty(n, dtype=descent.float64).normal_(2, 3).tolist()
    assert [v.hex() for v in got] == globals()[f"NORMAL64_{n}"]
