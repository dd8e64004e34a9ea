"""descent.compile on sim:0: each fused group one launch of the device's interpreter, bit for bit eager's
(Note [An interpreted fused kernel on sim:0], floors/kernels/fused/sim_fused.h)."""
import numpy as np
import pytest

import descent
from descent import _C
from descent._compile import verify

SIM = "sim:0"


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def bits(t):
    a = np.asarray(t.cpu())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def chain(x, b):
    return ((x + b).relu() * 0.1).sigmoid() * x - b.exp()


@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_a_chain_is_one_launch_bitwise_eager(dtype):
    descent.manual_seed(3)
    x, b = descent.randn(6, 7, dtype=dtype, device=SIM), descent.randn(7, dtype=dtype, device=SIM)
    cf = descent.compile(chain)
    assert np.array_equal(bits(cf(x, b)), bits(chain(x, b)))
    (k,) = cf.kernels
    assert k.backend == "sim" and k.device == SIM and k.verdict.proved
    assert k.name.startswith("fused_poi_add_relu_mul_sigmoid_mul_sub_")
    assert "%in0 = input" in k.source and "interpreter" in k.source
    # What the verifier reads is the program the device parsed, printed back.
    assert k.read_ir().splitlines()[0] == k.ir.splitlines()[0]
    assert verify.numeric(cf.entries[next(iter(cf.entries))].run, cf.graphs[0], [x, b]).startswith("bitwise equal")


# Sums whose eager plan has one block per output, several (partials reduced in the same launch), a strided
# walk over the reduced dims, 16-byte loads and single ones; a mean, a maximum and max.dim's values.
REDUCTIONS = [
    ("rows", lambda x: (x * x + 1.0).log().sum(1), (40, 900)),
    ("everything, many blocks", lambda x: (x.exp() * 2.0).sum(), (300, 700)),
    ("columns, strided", lambda x: (x.exp() - 1.0).mean(0), (300, 70)),
    ("middle and first dims", lambda x: (x.cos() + 1.0).sum((0, 2)), (5, 9, 13)),
    ("keepdim, rows of 5", lambda x: (x.tanh() + 1.0).sum(-1, keepdim=True), (7, 5)),
    ("max.dim values", lambda x: (x.sin() * 3.0).max(-1).values, (33, 77)),
    ("max of everything", lambda x: (x.abs() - 0.5).max(), (64, 65)),
]


@pytest.mark.parametrize("name,f,shape", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_a_chain_and_its_reduction_are_one_launch_bitwise_eager(name, f, shape, dtype):
    descent.manual_seed(5)
    x = descent.randn(*shape, dtype=dtype, device=SIM)
    cf = descent.compile(f)
    assert np.array_equal(bits(cf(x)), bits(f(x)))
    (k,) = cf.kernels
    assert k.reduction is not None and k.order == "blocks" and k.verdict.proved


def test_softmax_written_out_keeps_exp_beside_its_sum():
    descent.manual_seed(1)
    x = descent.randn(16, 96, device=SIM)

    def softmax(x):
        e = (x - x.max(-1, keepdim=True).values).exp()
        return e / e.sum(-1, keepdim=True)
    cf = descent.compile(softmax)
    assert np.array_equal(bits(cf(x)), bits(softmax(x)))
    assert [k.ops[-1] for k in cf.kernels] == ["aten.max.dim", "aten.sum.dim_IntList", "aten.div.Tensor"]


def test_one_kernel_span_where_eager_has_one_per_op():
    x = descent.randn(64, 128, device=SIM)
    f = lambda x: ((x + 1.0).relu() * 2.0).exp().sum(-1)  # noqa: E731
    cf = descent.compile(f)
    cf(x)
    with descent.trace() as t:
        cf(x)
        descent.sim.synchronize()
    spans = t.result.spans()
    device = [s["name"] for s in spans if s["floor"] == 9]
    (name,) = device
    assert name == cf.kernels[0].name and name.startswith("fused_red_add_relu_mul_exp_sum_")
    launches = [s for s in spans if s["name"] == "simLaunchKernel"]
    assert len(launches) == 1 and launches[0]["args"]["kernel"] == name
    assert not {"aten::add", "aten::relu", "aten::mul", "aten::exp", "aten::sum"} & {s["name"] for s in spans}
    with descent.trace() as e:
        f(x)
        descent.sim.synchronize()
    assert len([s for s in e.result.spans() if s["floor"] == 9]) == 5


def test_strides_no_guard_covers_run_op_by_op_on_the_device():
    descent.manual_seed(2)
    x, b = descent.randn(6, 7, device=SIM), descent.randn(7, device=SIM)
    cf = descent.compile(chain)
    cf(x, b)
    prog = cf.entries[next(iter(cf.entries))].run
    xt = descent.randn(7, 6, device=SIM).t()  # the guard holds the stride, so the program is called directly
    assert np.array_equal(bits(prog(xt, b)), bits(chain(xt, b)))
    assert np.array_equal(bits(prog._interpret(x, b)), bits(chain(x, b)))


def test_the_device_parser_names_the_line_it_cannot_read():
    with pytest.raises(ValueError, match=r"line 2 \(%t0 = frobnicate %in0\): an op the interpreter does not know"):
        _C._fused_sim_load("%in0 = input float32 [4] stride [1]\n%t0 = frobnicate %in0\nout0 = %t0", [4],
                           "float32", "bad")
    with pytest.raises(ValueError, match="no value is named %t9"):
        _C._fused_sim_load("%in0 = input float32 [4] stride [1]\nout0 = %t9", [4], "float32", "bad")
    with pytest.raises(ValueError, match="does not broadcast"):
        _C._fused_sim_load("%in0 = input float32 [3] stride [1]\n%t0 = exp %in0\nout0 = %t0", [4], "float32", "bad")
    with pytest.raises(ValueError, match="float32 or float64"):
        _C._fused_sim_load("out0 = %in0", [4], "int64", "bad")
    with pytest.raises(ValueError, match="no fused program has handle"):
        _C._fused_sim_ir(10 ** 9)
    h = _C._fused_sim_load("%in0 = input float32 [4] stride [1]\n%t0 = mul %in0 const 0.1\nout0 = %t0", [4],
                           "float32", "ok")
    assert _C._fused_sim_ir(h) == "%in0 = input float32 [4] stride [1]\n%t0 = mul %in0 const 0.10000000000000001\nout0 = %t0"
    with pytest.raises(ValueError, match="takes 2 pointers, not 1"):
        _C._fused_sim_launch(h, (0,), 0)


def test_a_fused_program_on_sim_trains_as_eager():
    """With grads wanted on a device, AOT autograd is off and the graph replays through autograd: the same
    gradients."""
    descent.manual_seed(4)
    x = descent.randn(8, 5, device=SIM, requires_grad=True)
    f = lambda x: (x.tanh() * x).sum()  # noqa: E731
    cf = descent.compile(f)
    (g1,) = descent.autograd.grad(cf(x), [x])
    (g2,) = descent.autograd.grad(f(x), [x])
    assert np.array_equal(bits(g1), bits(g2))
