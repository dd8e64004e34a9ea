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


def bits(t):
    """The bytes of a tensor's elements, row-major (float16 and bfloat16 as float32)."""
    if t.dtype in (descent.float16, descent.bfloat16):
        t = t.float()
    return np.ascontiguousarray(to_np(t)).tobytes()


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
        assert bits(got) == (want.float() if dtype in ("float16", "bfloat16") else want).numpy().tobytes()
