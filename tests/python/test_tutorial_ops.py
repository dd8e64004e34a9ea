"""The ops PyTorch's first tutorials use (issue 22: they run unchanged with
`import descent as torch`), against numpy here and against torch where it is
installed (pytest.importorskip: on the GPU host, not on a laptop).

What PyTorch 2.11 answered on the H200 host for the cases below (its error
texts, dtypes, and the bits of linspace) is written into the tests, so that
they hold descent to torch where torch is absent too; the torch tests check
the same cases live.
"""
import math
import struct
import zlib

import numpy as np
import pytest

import descent
from conftest import to_np

F, D, I, B = descent.float32, descent.float64, descent.int64, descent.bool


def re_escape(text):
    import re
    return re.escape(text)


def bits(t):
    """The bytes of a tensor's elements, row-major (float16 and bfloat16 as float32)."""
    if t.dtype in (descent.float16, descent.bfloat16):
        t = t.float()
    return np.ascontiguousarray(to_np(t.cpu())).tobytes()


# [SECTION] sin and cos ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sin", "cos"])
@pytest.mark.parametrize("dtype", [F, D])
def test_sin_cos_against_numpy(name, dtype, rng):
    a = rng.uniform(-10, 10, (7, 9)).astype(np.float32 if dtype is F else np.float64)
    x = descent.tensor(a)
    want = getattr(np, name)(a.astype(np.float64))
    for got in (getattr(descent, name)(x), getattr(x, name)(), getattr(x.T, name)().T):
        assert got.dtype is dtype
        np.testing.assert_allclose(to_np(got), want, rtol=1e-6 if dtype is F else 1e-14, atol=1e-7)


def test_sin_cos_of_integers_and_bools_are_float32():
    assert descent.sin(descent.tensor([1, 2])).dtype is F and descent.tensor([True]).cos().dtype is F
    assert descent.tensor([1.0], dtype=descent.float16).sin().dtype is descent.float16


# [SECTION] clamp ---------------------------------------------------------------------------

NAN = float("nan")


def test_clamp_keeps_pytorchs_semantics():
    x = descent.tensor([-2.0, -0.5, 0.0, 0.5, 2.0, NAN])
    nan_list = lambda t: [None if v != v else v for v in t.tolist()]  # noqa: E731
    assert nan_list(x.clamp(-1, 1)) == [-1.0, -0.5, 0.0, 0.5, 1.0, None]
    assert nan_list(descent.clamp(x, max=1)) == [-2.0, -0.5, 0.0, 0.5, 1.0, None]
    assert nan_list(x.clamp(1, -1)) == [-1.0] * 5 + [None]             # min > max: max
    assert nan_list(x.clamp(min=NAN)) == nan_list(x)                  # one bound, NaN: that bound's kernel keeps x
    assert nan_list(x.clamp_max(NAN)) == [None] * 6                   # clamp_max(NaN) fills NaN
    assert nan_list(x.clamp(0, NAN)) == [None] * 6                    # both bounds, one NaN: NaN
    z = descent.tensor([-0.0, 0.0]).clamp(min=0.0)
    assert [math.copysign(1, v) for v in z.tolist()] == [-1.0, 1.0]   # -0.0 < 0.0 is false
    i = descent.tensor([-3, 0, 4])
    assert i.clamp(min=0.5).dtype is F and i.clamp(min=0.5).tolist() == [0.5, 0.5, 4.0]
    assert i.clamp(0, 2).dtype is I and i.clamp(0, 2).tolist() == [0, 0, 2]
    assert i.clamp_min(0.5).dtype is F and all(v != v for v in i.clamp_max(NAN).tolist())  # float32, all NaN
    assert descent.tensor([True, False]).clamp(min=0).dtype is I
    assert i.clamp(min=2 ** 63 - 1).tolist() == [2 ** 63 - 1] * 3
    assert x.clamp(min=descent.tensor(0.5)).tolist()[:5] == [0.5, 0.5, 0.5, 0.5, 2.0]  # a 0-d tensor as a number


@pytest.mark.parametrize("call, kind, text", [
    (lambda: descent.clamp(descent.ones(2)), RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None"),
    (lambda: descent.ones(2).clamp(), RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None"),
    (lambda: descent.tensor([True]).clamp(min=True), NotImplementedError,
     "\"clamp_min_scalar_cpu\" not implemented for 'Bool'"),
    (lambda: descent.tensor([True]).clamp(True, True), NotImplementedError,
     "\"clamp_scalar_cpu\" not implemented for 'Bool'"),
    (lambda: descent.tensor([True]).clamp_max(True), NotImplementedError,
     "\"clamp_max_scalar_cpu\" not implemented for 'Bool'"),
    (lambda: descent.ones(2, dtype=descent.float16).clamp(max=1e6), RuntimeError,
     "cannot be converted to type at::Half without overflow"),
    (lambda: descent.ones(2, dtype=descent.bfloat16).clamp(max=1e39), RuntimeError,
     "cannot be converted to type at::BFloat16 without overflow"),
])
def test_clamp_refuses_what_pytorch_refuses(call, kind, text):
    with pytest.raises(kind, match=text.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.parametrize("device", ["sim:0"])
def test_clamp_on_a_device_equals_the_cpu(device, rng):
    a = rng.uniform(-3, 3, (6, 50)).astype(np.float32)
    a[0, :3] = [NAN, -0.0, 0.0]
    x = descent.tensor(a)
    for f in (lambda t: t.clamp(-1, 2), lambda t: t.clamp_min(0.0), lambda t: t.clamp_max(0.5),
              lambda t: t.T.clamp(min=-0.25), lambda t: t.clamp(0.0, NAN)):
        assert bits(f(x.to(device)).to("cpu")) == bits(f(x))


# [SECTION] linspace --------------------------------------------------------------------------

# crc32 of the elements' bytes of torch.linspace(start, end, steps, dtype=...)
# from PyTorch 2.11 on the H200 host (float16 and bfloat16 as float32): the
# same bits or not (Note [linspace fills from both ends]).
PI = math.pi
TORCH_LINSPACE_CRC32 = {
    (-PI, PI, 2000, "float32"): 0x7b66bdf3, (-PI, PI, 2000, "float64"): 0x98d5ae5d,
    (-PI, PI, 2000, "float16"): 0x083b9fde, (-PI, PI, 2000, "bfloat16"): 0x8e653236,
    (-PI, PI, 2000, "int64"): 0x7ddce11e,
    (1, 10, 1000, "float32"): 0x99b25262, (1, 10, 1000, "float64"): 0x5ecbfa52,
    (1, 10, 1000, "float16"): 0x0a98ed45, (1, 10, 1000, "bfloat16"): 0x10d89ad4, (1, 10, 1000, "int64"): 0xaae31058,
    (0.1, 0.7, 101, "float32"): 0x95900cb3, (0.1, 0.7, 101, "float64"): 0x8ad1d7a0,
    (0.1, 0.7, 101, "float16"): 0xe955a4ce, (0.1, 0.7, 101, "bfloat16"): 0xb9238b12,
    (3, -3, 64, "float32"): 0xece01547, (3, -3, 64, "float64"): 0x9aef11a0, (3, -3, 64, "int64"): 0xc734f863,
    (-2.5, 7.25, 33, "float32"): 0x00cd6941, (-2.5, 7.25, 33, "int64"): 0xdeb0e8d3,
    (0, 1, 7, "float32"): 0xc0add5bd, (0, 1, 7, "float64"): 0x97ea57bd,
}


@pytest.mark.parametrize("device", ["cpu", "sim:0"])
@pytest.mark.parametrize("case", sorted(TORCH_LINSPACE_CRC32, key=repr), ids=repr)
def test_linspace_has_torchs_bits(case, device):
    start, end, steps, dtype = case
    t = descent.linspace(start, end, steps, dtype=getattr(descent, dtype), device=device)
    assert t.device == descent.device(device) and t.shape == (steps,)
    assert zlib.crc32(bits(t.to("cpu"))) == TORCH_LINSPACE_CRC32[case]


def test_linspace_against_numpy_and_its_edges():
    t = descent.linspace(-PI, PI, 2000)
    assert t.dtype is F and t.tolist()[0] == struct.unpack("f", struct.pack("f", -PI))[0]
    np.testing.assert_allclose(to_np(t), np.linspace(-PI, PI, 2000), rtol=0, atol=1e-6)
    assert descent.linspace(0, 10, 5).tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert descent.linspace(2, 5, 1).tolist() == [2.0] and descent.linspace(2, 5, 0).tolist() == []
    assert descent.linspace(-0.5, 9.7, 6, dtype=I).tolist() == [0, 1, 3, 5, 7, 9]
    assert descent.linspace(0, 1, 1, dtype=B).tolist() == [False]
    assert descent.linspace(descent.tensor(1.0), 2, 3).tolist() == [1.0, 1.5, 2.0]
    assert all(v != v for v in descent.linspace(0, NAN, 3).tolist())
    tail = descent.linspace(0, 1, 3000, dtype=descent.float16).tolist()[-10:]
    assert tail == [0.9970703125, 0.99755859375, 0.99755859375, 0.998046875, 0.99853515625, 0.99853515625,
                    0.9990234375, 0.99951171875, 0.99951171875, 1.0]  # as PyTorch: float16 steps repeat
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        descent.linspace(2, 5, -1)
    with pytest.raises(NotImplementedError, match="\"linspace_cpu\" not implemented for 'Bool'"):
        descent.linspace(0, 1, 5, dtype=B)
    with pytest.raises(RuntimeError, match="cannot be converted to type int64_t without overflow"):
        descent.linspace(0, float("inf"), 3, dtype=I)
    with pytest.raises(RuntimeError, match="cannot be converted to type at::Half without overflow"):
        descent.linspace(0, 1e6, 3, dtype=descent.float16)


# [SECTION] cat ------------------------------------------------------------------------------------

def test_cat_against_numpy_for_every_layout_and_dtype(make):
    for dtype in (F, D, I, B):
        for dim in (0, 1, -1):
            parts = [make((3, 4), dtype, "contiguous"), make((3, 4), dtype, "transposed"),
                     make((3, 4), dtype, "stepped"), make((3, 4), dtype, "expanded")]
            got = descent.cat([t for t, _ in parts], dim)
            assert got.dtype is dtype and got.is_contiguous()
            np.testing.assert_array_equal(to_np(got), np.concatenate([a for _, a in parts], axis=dim))
    many = [descent.full([1, 2], float(i)) for i in range(20)]          # more tensors than a tensor has dims
    assert descent.cat(many).shape == (20, 2) and descent.cat(tuple(many), dim=1).shape == (1, 40)
    assert descent.cat(tensors=[descent.ones(1)], dim=0).shape == (1,)


def test_cat_promotes_and_skips_empty_vectors():
    assert descent.cat([descent.ones(2, dtype=I), descent.ones(2), descent.ones(1, dtype=D)]).dtype is D
    b = descent.cat([descent.tensor([True]), descent.tensor([2])])
    assert b.dtype is I and b.tolist() == [1, 2]
    assert descent.cat([descent.ones(0), descent.ones(2, 3)]).shape == (2, 3)
    assert descent.cat([descent.ones(0), descent.ones(2, 3)], 1).shape == (2, 3)
    e = descent.cat([descent.ones(0), descent.ones(0, dtype=D)])
    assert e.shape == (0,) and e.dtype is D
    assert descent.cat([descent.ones(2, 0), descent.ones(2, 3)], 1).shape == (2, 3)


@pytest.mark.parametrize("call, kind, text", [
    (lambda: descent.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: descent.cat([descent.ones(2), descent.tensor(1.0)]), RuntimeError,
     "zero-dimensional tensor (at position 1) cannot be concatenated"),
    (lambda: descent.cat([descent.ones(2, 3), descent.ones(3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda: descent.cat([descent.ones(2, 3), descent.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the "
     "list."),
    (lambda: descent.cat([descent.ones(0, 3), descent.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1"),
    (lambda: descent.cat([descent.ones(2, 3), descent.ones(2, 4)], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: descent.cat([descent.ones(2, 3), descent.ones(2, 4)], -3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda: descent.cat(descent.ones(2)), TypeError,
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: descent.cat([descent.ones(2), None]), TypeError,
     "expected Tensor as element 1 in argument 0, but got NoneType"),
    (lambda: descent.cat([descent.ones(2), 3]), TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    (lambda: descent.cat([descent.ones(2), descent.ones(2, device="sim:0")]), RuntimeError,
     "Expected all tensors to be on the same device"),
])
def test_cat_refuses_what_pytorch_refuses(call, kind, text):
    with pytest.raises(kind, match=re_escape(text)):
        call()


def test_cat_on_a_device_equals_the_cpu(make):
    parts = [make((3, 5), F, "transposed")[0], make((3, 2), D, "stepped")[0], descent.ones(0)]
    want = descent.cat(parts, 1)
    got = descent.cat([p.to("sim:0") for p in parts], 1)
    assert got.device == descent.device("sim:0") and bits(got.to("cpu")) == bits(want)


# [SECTION] flatten -------------------------------------------------------------------------------

def test_flatten_is_a_view_or_a_copy_as_reshape():
    x = descent.arange(24.0).view(2, 3, 4).clone()
    assert x.flatten().shape == (24,) and x.flatten()._base._is_same(x)          # a view
    assert descent.flatten(x, 0, 1).shape == (6, 4) and x.flatten(1).shape == (2, 12)
    assert x.flatten(-2, -1).shape == (2, 12) and x.flatten(1, 1)._is_same(x)    # one dim: self itself
    t = x.transpose(0, 1).flatten()
    assert t._base is None and t.tolist() == to_np(x).transpose(1, 0, 2).reshape(-1).tolist()  # a copy
    assert descent.tensor(2.0).flatten().shape == (1,) and descent.tensor(2.0).flatten(0, -1).shape == (1,)
    assert descent.ones(0, 1, 3, 0).flatten(1, 2).shape == (0, 3, 0)
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
        x.flatten(2, 1)
    with pytest.raises(IndexError, match=re_escape("Dimension out of range (expected to be in range of [-3, 2], "
                                                   "but got 3)")):
        x.flatten(0, 3)
    with descent.trace() as tr:
        x.flatten()
    spans = tr.result.spans()
    top = next(s for s in spans if s["name"] == "aten::flatten" and s["floor_name"] == "dispatch")
    assert top["args"]["kernel"] == "AutogradCPU"                               # a composite's slot
    below = [s["name"] for s in spans if s["parent"] == top["id"] and s["floor_name"] == "dispatch"]
    assert below == ["aten::view"]                                              # reshape's code, not its op


# [SECTION] addmm and linear ------------------------------------------------------------------------

NN = descent._C._nn


@pytest.mark.parametrize("dtype", [F, D, I])
def test_addmm_against_numpy(dtype, make):
    s, a_s = make((3,), dtype)
    m1, a1 = make((4, 5), dtype, "transposed")
    m2, a2 = make((5, 3), dtype, "stepped")
    for beta, alpha in [(1, 1), (0.5, 2), (0, 1), (2, 0)]:
        if dtype is I and isinstance(beta, float):
            beta = 2
        got = descent.addmm(s, m1, m2, beta=beta, alpha=alpha)
        want = beta * a_s.astype(np.float64) + alpha * (a1.astype(np.float64) @ a2.astype(np.float64))
        assert got.dtype is dtype and got.shape == (4, 3)
        np.testing.assert_allclose(to_np(got), want, rtol=1e-5, atol=1e-5)
    assert s.addmm(m1, m2).tolist() == descent.addmm(s, m1, m2).tolist()   # the method


def test_addmm_edges():
    nan_self = descent.tensor([float("nan"), 1.0])
    assert descent.addmm(nan_self, descent.ones(3, 4), descent.ones(4, 2), beta=0).tolist() == [[4.0, 4.0]] * 3
    assert descent.addmm(descent.ones(2), descent.ones(3, 0), descent.ones(0, 2), beta=2).tolist() == [[2.0, 2.0]] * 3
    i = descent.ones(2, dtype=I)
    got = descent.addmm(i, descent.ones(3, 4, dtype=I), descent.ones(4, 2, dtype=I), beta=0.5)
    assert got.tolist() == [[4, 4]] * 3                                   # beta truncated to int64, as PyTorch's
    h = descent.addmm(descent.ones(2, dtype=descent.float16), descent.ones(3, 4, dtype=descent.float16),
                      descent.ones(4, 2, dtype=descent.float16))
    assert h.dtype is descent.float16 and h.tolist() == [[5.0, 5.0]] * 3


@pytest.mark.parametrize("call, kind, text", [
    (lambda: descent.addmm(descent.ones(2), descent.ones(3), descent.ones(3, 2)), RuntimeError,
     "mat1 must be a matrix, got 1-D tensor"),
    (lambda: descent.addmm(descent.ones(2), descent.ones(3, 3), descent.ones(3)), RuntimeError,
     "mat2 must be a matrix, got 1-D tensor"),
    (lambda: descent.addmm(descent.ones(2), descent.ones(3, 4), descent.ones(3, 2)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x2)"),
    (lambda: descent.addmm(descent.ones(3), descent.ones(3, 4), descent.ones(4, 2)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [3, 2].  Tensor sizes: [3]"),
    (lambda: descent.addmm(descent.ones(2), descent.ones(3, 4), descent.ones(4, 2, dtype=D)), RuntimeError,
     "self and mat2 must have the same dtype, but got Float and Double"),
    (lambda: descent.addmm(descent.ones(2, dtype=D), descent.ones(3, 4), descent.ones(4, 2)), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: descent.addmm(*(descent.ones(s, dtype=B) for s in ((2,), (3, 4), (4, 2)))), NotImplementedError,
     "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda: NN.linear(descent.tensor(1.0), descent.ones(2)), RuntimeError,
     "both arguments to linear need to be at least 1D, but they are 0D and 1D"),
    (lambda: NN.linear(descent.ones(3, 4), descent.ones(2, 5)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x2)"),
    (lambda: NN.linear(descent.ones(3, 4), descent.ones(2, 5), descent.ones(2)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x2)"),
    (lambda: NN.linear(descent.ones(3, 4), descent.ones(4), descent.ones(())), RuntimeError,
     "mat2 must be a matrix, got 1-D tensor"),
    (lambda: NN.linear(descent.ones(3, 4), descent.ones(2, 4, dtype=D)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: NN.linear(descent.ones(4), descent.ones(2, 4), descent.ones(3)), RuntimeError,
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [1, 2].  Tensor sizes: [3]"),
    (lambda: NN.linear(descent.ones(5, 3, 4), descent.ones(2, 4), descent.ones(3)), RuntimeError,
     "Target sizes: [15, 2].  Tensor sizes: [3]"),
])
def test_addmm_and_linear_refuse_what_pytorch_refuses(call, kind, text):
    with pytest.raises(kind, match=re_escape(text)):
        call()


@pytest.mark.parametrize("shape, bias", [((3, 4), True), ((3, 4), False), ((5, 3, 4), True), ((4,), True),
                                         ((4,), False), ((2, 5, 3, 4), True), ((5, 3, 4), False)])
def test_linear_against_numpy(shape, bias, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((2, 4)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    got = NN.linear(descent.tensor(a), descent.tensor(w), descent.tensor(b) if bias else None)
    want = a @ w.T + (b if bias else 0)
    assert got.shape == want.shape
    np.testing.assert_allclose(to_np(got), want, rtol=1e-5, atol=1e-6)
    assert NN.linear(input=descent.tensor(a), weight=descent.tensor(w)).shape == want.shape


def test_linear_decomposes_as_aten_linear():
    """The trace: 2-D input with a bias is t and addmm; a contiguous one of more dims is reshaped around
    addmm; otherwise matmul, then add_ in place (Note [Composite ops decompose])."""
    x, w, b = descent.ones(3, 4), descent.ones(2, 4), descent.ones(2)

    def ops(f):
        with descent.trace() as tr:
            f()
        spans = tr.result.spans()
        top = next(s for s in spans if s["name"] == "aten::linear" and s["floor_name"] == "dispatch")
        return [s["name"] for s in spans if s["parent"] == top["id"] and s["floor_name"] == "dispatch"]
    assert ops(lambda: NN.linear(x, w, b)) == ["aten::t", "aten::addmm"]
    assert ops(lambda: NN.linear(descent.ones(5, 3, 4), w, b)) == ["aten::reshape", "aten::t", "aten::addmm",
                                                                   "aten::view"]
    assert ops(lambda: NN.linear(x, w)) == ["aten::t", "aten::matmul"]
    assert ops(lambda: NN.linear(descent.ones(3, 5, 4).transpose(0, 1), w, b)) == ["aten::t", "aten::matmul",
                                                                                   "aten::add_"]


# [SECTION] mse_loss ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F, D])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_mse_loss_against_numpy(dtype, reduction, make):
    x, a = make((4, 7), dtype, "transposed")
    y, b = make((7,), dtype, "stepped")
    got = NN.mse_loss(x, y, reduction)
    sq = (a.astype(np.float64) - b) ** 2
    want = [sq, sq.mean(), sq.sum()][reduction]
    assert got.dtype is dtype and got.shape == np.shape(want)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-5 if dtype is F else 1e-12)
    assert NN.mse_loss(input=x, target=y, reduction=reduction).tolist() == got.tolist()


def test_mse_loss_reduces_through_mean_and_sum_ops_in_the_trace():
    x, y = descent.ones(3), descent.zeros(3)
    for reduction, inner in [(0, []), (1, ["aten::mean"]), (2, ["aten::sum"])]:
        with descent.trace() as tr:
            NN.mse_loss(x, y, reduction)
        spans = tr.result.spans()
        kernel = next(s for s in spans if s["name"] == "aten::mse_loss" and s["floor_name"] == "kernels")
        assert [s["name"] for s in spans if s["parent"] == kernel["id"] and s["floor_name"] == "dispatch"] == inner


def test_mse_loss_types_and_errors():
    assert NN.mse_loss(descent.ones(2), descent.ones(2, dtype=D)).dtype is D
    assert NN.mse_loss(descent.ones(2, dtype=I), descent.ones(2)).dtype is F
    assert NN.mse_loss(descent.ones(2, dtype=descent.float16), descent.zeros(2, dtype=descent.float16)).dtype is \
        descent.float16
    assert NN.mse_loss(descent.ones(2, 3), descent.ones(3), 0).shape == (2, 3)
    assert NN.mse_loss(descent.ones(2), target=descent.zeros(2), reduction=2).item() == 2.0
    with pytest.raises(NotImplementedError, match="\"mse_cpu\" not implemented for 'Long'"):
        NN.mse_loss(descent.ones(2, dtype=I), descent.ones(2, dtype=I))
    with pytest.raises(NotImplementedError, match="\"mse_cpu\" not implemented for 'Bool'"):
        NN.mse_loss(descent.ones(2, dtype=B), descent.ones(2, dtype=B))
    with pytest.raises(RuntimeError, match="reduction must be 0 \\(none\\), 1 \\(mean\\) or 2 \\(sum\\), but got 3"):
        NN.mse_loss(descent.ones(2), descent.ones(2), 3)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        NN.mse_loss(descent.ones(2, 3), descent.ones(2), 0)
    with pytest.raises(TypeError, match="argument 'target' \\(position 2\\) must be Tensor, not float"):
        NN.mse_loss(descent.ones(2), 2.0)


def test_the_nn_ops_live_in_c_nn_only():
    import descent._C._nn as nn_module
    assert nn_module is NN and sorted(n for n in dir(NN) if not n.startswith("_")) == sorted(
        op["python_name"] for op in descent._C._ops() if op["python_module"] == "nn")
    assert {"linear", "mse_loss", "nll_loss", "cross_entropy_loss", "one_hot"} <= set(dir(NN))
    assert not hasattr(descent, "linear") and not hasattr(descent, "mse_loss") and not hasattr(descent._C, "linear")
    assert not hasattr(descent.Tensor, "mse_loss")


# [SECTION] The tutorials ---------------------------------------------------------------------------

def test_the_pow_of_a_vector_of_exponents_broadcasts_as_in_the_tutorial():
    x = descent.linspace(-math.pi, math.pi, 2000)
    p = descent.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    assert xx.shape == (2000, 3) and xx.dtype is F and xx.grad_fn is None
    np.testing.assert_allclose(to_np(xx), to_np(x)[:, None] ** np.array([1, 2, 3]), rtol=1e-6, atol=1e-6)
    w = descent.tensor([0.5, -1.0], requires_grad=True)
    y = w.unsqueeze(-1).pow(p)
    assert y.grad_fn.name() == "PowBackward1"
    y.sum().backward()
    assert w.grad.tolist() == [1 + 2 * 0.5 + 3 * 0.25, 1 - 2 + 3]


@pytest.mark.parametrize("dtype", [F, D])
def test_pow_of_the_common_exponents_multiplies_as_aten_does(dtype, rng):
    """Note [pow's special exponents]: x ** 2 is x * x, bit for bit, on every device; a tensor of
    exponents takes std::pow, as aten's pow.Tensor_Tensor, and differs from the forms at the edges."""
    a = rng.uniform(0.1, 10, 4099).astype(np.float32 if dtype is F else np.float64)
    for device in ["cpu", "sim:0"]:
        x = descent.tensor(a, device=device)
        forms = {2: x * x, 3: x * x * x, -2: 1 / (x * x), 0.5: x.sqrt(), -0.5: 1 / x.sqrt(), -1: 1 / x}
        for e, want in forms.items():
            assert bits(x ** e) == bits(want) == bits(x.pow(e)), (device, e)
            tensor_exponent = x.pow(descent.full(x.shape, e, dtype=dtype, device=device))  # pow.Tensor_Tensor
            np.testing.assert_allclose(to_np(tensor_exponent.cpu()), to_np(want.cpu()), rtol=4e-7 if dtype is F else 1e-15)
        edges = descent.tensor([-math.inf, -0.0, 4.0], dtype=dtype, device=device)
        half = descent.full((3,), 0.5, dtype=dtype, device=device)
        nan_list = [None if v != v else v for v in (edges ** 0.5).cpu().tolist()]
        assert nan_list == [None, -0.0, 2.0] and str((edges ** 0.5).cpu()[1].item()) == "-0.0"  # sqrt's
        assert edges.pow(half).cpu().tolist() == [math.inf, 0.0, 2.0]  # std::pow's, as torch.pow(x, full(0.5))


def test_pow_of_the_common_exponents_equals_torchs_bits():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).uniform(0.01, 100, 100_003).astype(np.float32)
    for e in [2, 3, -2, -1]:
        assert bits(descent.tensor(a) ** e) == (torch.tensor(a) ** e).numpy().tobytes(), e
    for e in [0.5, -0.5]:  # sqrt: descent's is correctly rounded, torch's vector sqrt may not be
        np.testing.assert_allclose(to_np(descent.tensor(a) ** e), (torch.tensor(a) ** e).numpy(), rtol=1.2e-7)
    edges = [-math.inf, -0.0, 4.0]
    for pair in ((lambda m: m.tensor(edges) ** 0.5), (lambda m: m.pow(m.tensor(edges), m.tensor([0.5] * 3)))):
        assert str(pair(descent).tolist()) == str(pair(torch).tolist())


def polynomial_fit(lib, linear, mse_loss, steps, lr=1e-6):
    """PyTorch's "Learning PyTorch with Examples": y = sin(x) fit by a + b x + c x^2 + d x^3, the
    torch.nn version's ops (nn.Linear(3, 1), nn.Flatten(0, 1), nn.MSELoss(reduction='sum')) written
    out, from the same start on both libraries."""
    x = lib.linspace(-math.pi, math.pi, 2000)
    y = lib.sin(x)
    xx = x.unsqueeze(-1).pow(lib.tensor([1, 2, 3]))
    weight = lib.tensor([[0.1, -0.2, 0.05]], requires_grad=True)
    bias = lib.tensor([0.3], requires_grad=True)
    losses = []
    for _ in range(steps):
        y_pred = linear(xx, weight, bias).flatten(0, 1)
        loss = mse_loss(y_pred, y, 2)
        losses.append(loss.item())
        weight.grad = bias.grad = None
        loss.backward()
        with lib.no_grad():
            weight -= lr * weight.grad
            bias -= lr * bias.grad
    return losses, weight.detach(), bias.detach()


def test_the_polynomial_tutorial_learns():
    losses, weight, bias = polynomial_fit(descent, NN.linear, NN.mse_loss, 200)
    assert losses[-1] < losses[0] / 5, losses[::50]
    x = descent.linspace(-math.pi, math.pi, 2000)
    y = descent.sin(x)
    a, b, c, d = [descent.tensor(v, requires_grad=True) for v in (0.3, 0.1, -0.2, 0.05)]
    for _ in range(3):  # the autograd tutorial, its parameters 0-d tensors
        loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()
        loss.backward()
        with descent.no_grad():
            for p in (a, b, c, d):
                p -= 1e-6 * p.grad
                p.grad = None
    y_pred = (a + b * x + c * x ** 2 + d * x ** 3).clamp(min=-1.5, max=1.5)
    assert y_pred.shape == (2000,) and float(y_pred.max()) <= 1.5


# [SECTION] Against torch, where it is installed ------------------------------------------------

def test_sin_cos_clamp_equal_torchs():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).uniform(-5, 5, (4, 33)).astype(np.float32)
    a[0, :2] = [np.nan, -0.0]
    x, t = descent.tensor(a), torch.tensor(a)
    for f in (lambda m, v: m.sin(v), lambda m, v: m.cos(v)):
        np.testing.assert_allclose(to_np(f(descent, x)), f(torch, t).numpy(), rtol=2e-7, atol=1e-7)
    for f in (lambda v: v.clamp(-1, 1), lambda v: v.clamp(min=0), lambda v: v.clamp(max=0.5),
              lambda v: v.clamp_min(-0.5), lambda v: v.clamp_max(2), lambda v: v.clamp(2, -1)):
        assert bits(f(x)) == f(t).numpy().tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_linspace_equals_torchs_bit_for_bit(dtype):
    torch = pytest.importorskip("torch")
    for start, end, steps in [(-PI, PI, 2000), (0.1, 0.7, 101), (3, -3, 64), (1, 10, 1000), (-1e3, 1e-3, 777)]:
        want = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
        got = descent.linspace(start, end, steps, dtype=getattr(descent, dtype))
        if dtype in ("float16", "bfloat16") and not torch.__version__.startswith("2.11"):
            # PyTorch 2.11 (the H200 host's) is the reference; later ones round the 16-bit floats of a
            # step otherwise (neither correctly rounded), so they are held to within one of its ulps.
            ulp = 2.0 ** (-10 if dtype == "float16" else -7) * max(abs(start), abs(end))
            np.testing.assert_allclose(to_np(got.float()), want.float().numpy(), rtol=0, atol=ulp)
        else:
            assert bits(got) == (want.float() if dtype in ("float16", "bfloat16") else want).numpy().tobytes()


def test_cat_addmm_linear_flatten_mse_equal_torchs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (2, 4), (2,), (5, 3, 4), (3, 2))]
    d = [descent.tensor(a) for a in arrays]
    t = [torch.tensor(a) for a in arrays]
    close = lambda a, b: np.testing.assert_allclose(to_np(a), b.detach().numpy(), rtol=1e-5, atol=1e-6)  # noqa: E731
    assert bits(descent.cat([d[0], d[4].T.contiguous().T[:, :1], d[0]], 1)) == \
        torch.cat([t[0], t[4][:, :1], t[0]], 1).numpy().tobytes()
    close(descent.addmm(d[2], d[0], d[1].t(), beta=0.5, alpha=2), torch.addmm(t[2], t[0], t[1].t(), beta=0.5, alpha=2))
    for x, tx in ((d[0], t[0]), (d[3], t[3]), (d[3].transpose(0, 1), t[3].transpose(0, 1))):
        close(NN.linear(x, d[1], d[2]), torch._C._nn.linear(tx, t[1], t[2]))
        close(NN.linear(x, d[1]), torch._C._nn.linear(tx, t[1]))
        assert NN.linear(x, d[1], d[2]).grad_fn is None
    assert bits(d[3].transpose(0, 1).flatten(1)) == t[3].transpose(0, 1).flatten(1).numpy().tobytes()
    for r in (0, 1, 2):
        close(NN.mse_loss(d[0], d[0] * 0.5, r), torch._C._nn.mse_loss(t[0], t[0] * 0.5, r))


def test_the_polynomial_tutorial_follows_torch():
    torch = pytest.importorskip("torch")
    mine, w, b = polynomial_fit(descent, NN.linear, NN.mse_loss, 20)
    theirs, tw, tb = polynomial_fit(torch, torch._C._nn.linear, torch._C._nn.mse_loss, 20)
    np.testing.assert_allclose(mine, theirs, rtol=1e-4)
    np.testing.assert_allclose(to_np(w), tw.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(to_np(b), tb.numpy(), rtol=1e-4, atol=1e-6)


# [SECTION] Through the verifier on the devices ------------------------------------------------

TUTORIAL_OPS = ["aten::linspace", "aten::sin", "aten::cos", "aten::clamp", "aten::clamp_min", "aten::clamp_max",
                "aten::cat", "aten::addmm", "aten::linear", "aten::mse_loss", "aten::pow.Tensor_Tensor"]


@pytest.mark.parametrize("device", ["sim:0", "cuda:0"])
@pytest.mark.parametrize("op", TUTORIAL_OPS)
def test_the_tutorials_ops_hold_on_every_device_and_dtype(op, device):
    """The device's kernels against the CPU's reference, every dtype: a float dtype is never left
    unverified (Note [Device claims], verifier.cpp)."""
    if device.startswith("cuda") and not descent.cuda.is_available():
        pytest.skip("no CUDA device here")
    verdicts = descent.verify(op, device=device)
    assert verdicts and all(v["passed"] for v in verdicts), [v for v in verdicts if not v["passed"]]
    floats = [v for v in verdicts if v["dtype"] in ("float32", "float64", "float16", "bfloat16")]
    assert len(floats) == 4 and all(v["claim"] != "unsupported" for v in floats), floats
