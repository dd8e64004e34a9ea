"""float16 and bfloat16 (Note [Reduced-precision floats], floors/core/half.h):
the dtypes, PyTorch's promotion, printing and errors, computing in float32
with one rounding, and the same bits on the CPU and sim:0."""
import math

import numpy as np
import pytest

import descent

H, BF = descent.float16, descent.bfloat16


def test_the_dtypes_and_their_names():
    assert descent.half is H and repr(H) == "descent.float16" and repr(BF) == "descent.bfloat16"
    assert H.itemsize == 2 and BF.itemsize == 2 and H.is_floating_point and BF.is_floating_point
    assert descent.ones(2).half().dtype is H and descent.ones(2).bfloat16().dtype is BF  # torch's conversions


@pytest.mark.parametrize("a,b,want", [
    (H, BF, descent.float32), (H, descent.float32, descent.float32), (BF, descent.float64, descent.float64),
    (descent.int64, H, H), (descent.bool, BF, BF), (H, H, H)])
def test_promotion_as_torch_promote_types(a, b, want):
    assert (descent.ones(2, dtype=a) + descent.ones(2, dtype=b)).dtype is want


def test_python_numbers_and_0d_tensors_keep_the_16_bit_dtype():
    h = descent.ones(3, dtype=H)
    assert (h + 1.5).dtype is H and (h * 2).dtype is H and (h + descent.tensor(2.0)).dtype is H
    assert (h / descent.arange(1, 4)).dtype is H


def test_printing_as_pytorch_prints_it():
    assert repr(descent.tensor([1.5, 2, 65504, 1e-8], dtype=H)) == \
        "tensor([1.5000e+00, 2.0000e+00, 6.5504e+04, 0.0000e+00], dtype=descent.float16)"
    assert repr(descent.ones(2, dtype=BF) * 0.1) == "tensor([0.1001, 0.1001], dtype=descent.bfloat16)"


def test_values_round_to_nearest_even_and_overflow_to_infinity():
    assert descent.tensor([0.1], dtype=H).item() == float(np.float16(0.1))
    assert descent.tensor([65519.0, 65520.0], dtype=H).tolist() == [65504.0, math.inf]
    assert descent.tensor([1 + 2 ** -8], dtype=BF).item() == 1.0       # a tie goes to the even neighbour
    assert descent.tensor([3.4e38]).to(BF).item() == math.inf          # past 3.39e38, the largest bfloat16


def test_arithmetic_is_float32_rounded_once_as_numpy_float16():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1000).astype(np.float16)
    b = rng.standard_normal(1000).astype(np.float16) + np.float16(3)
    x, y = descent.tensor(a), descent.tensor(b)
    for got, want in ((x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x.sqrt(), None)):
        if want is not None:
            np.testing.assert_array_equal(got.numpy(), want)
    # alpha is not rounded to float16 first: x + 0.1 * y in float32, rounded once
    want = (a.astype(np.float32) + np.float32(0.1) * b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(descent.add(x, y, alpha=0.1).numpy(), want)


def test_sums_and_products_accumulate_in_float32():
    assert descent.ones(4096, dtype=H).sum().item() == 4096.0     # float16 totals would stop at 2048
    assert descent.ones(5000, dtype=BF).sum().item() == 4992.0    # 5000 in float32, rounded once to bfloat16
    assert descent.ones(3, 4096, dtype=H).mean(1).tolist() == [1.0, 1.0, 1.0]
    m = descent.ones(2, 4096, dtype=H) @ descent.ones(4096, 3, dtype=H)
    assert m.dtype is H and m.tolist() == [[4096.0] * 3] * 2


def test_errors_name_the_dtype_as_pytorch_does():
    with pytest.raises(RuntimeError, match="cannot be converted to type at::Half without overflow"):
        descent.full((2,), 100000, dtype=H)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        descent.ones(2, dtype=BF).numpy()
    with pytest.raises(RuntimeError, match="expected .*Half.* but found .*Float|c10::Half"):
        descent.mm(descent.ones(2, 2, dtype=H), descent.ones(2, 2))


def test_numpy_float16_round_trips():
    a = np.array([0.5, -65504, 6e-8, np.inf], dtype=np.float16)
    t = descent.tensor(a)
    assert t.dtype is H
    np.testing.assert_array_equal(t.numpy(), a)


def test_rand_stays_below_one_and_autograd_keeps_the_dtype():
    r = descent.rand(100000, dtype=H)
    values = r.tolist()
    assert r.dtype is H and 0.0 <= min(values) and max(values) < 1.0 and len(set(values)) == 2048  # every k / 2**11
    x = descent.randn(3, 4, dtype=BF, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype is BF and x.grad.tolist() == (x.detach() * 2).tolist()


@pytest.mark.parametrize("dtype", [H, BF])
def test_sim_gives_the_cpus_bits(dtype):
    descent.manual_seed(5)
    a, b = descent.randn(33, 70, dtype=dtype), descent.randn(33, 70, dtype=dtype)
    for f in (lambda p, q: p + q * 3, lambda p, q: (p * q).exp(), lambda p, q: p.tanh() - q, lambda p, q: p.max(1)[0]):
        assert f(a, b).tolist() == f(a.to("sim:0"), b.to("sim:0")).cpu().tolist()
    r = descent.rand(1000, dtype=dtype, device="sim:0").cpu().tolist()  # the device's own stream (random.h)
    assert 0.0 <= min(r) and max(r) < 1.0 and all((x * 2**11).is_integer() for x in r)


@pytest.mark.parametrize("device", ["cpu", "sim:0"])
def test_the_verifier_holds_every_op_in_both_dtypes(device):
    vs = [v for v in descent.verify(device=None if device == "cpu" else device) if v["dtype"] in ("float16", "bfloat16")]
    assert len(vs) == 2 * len([o for o in descent._C._ops() if o["kind"] != "collective"])
    assert all(v["passed"] for v in vs), [(v["op"], v["dtype"], v["detail"]) for v in vs if not v["passed"]]


@pytest.mark.skipif(not descent.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("dtype", [H, BF])
@pytest.mark.parametrize("shape,layout", [
    ((1, 1, 1, 1), "rows"), ((1, 17, 33, 65), "rows"), ((1, 128, 256, 128), "rows"), ((1, 300, 257, 129), "transposed"),
    ((1, 513, 1024, 264), "rows"), ((3, 70, 40, 96), "rows"), ((2, 64, 24, 40), "transposed")])
def test_tensor_core_products_hold_the_bound_on_cuda(dtype, shape, layout):
    """Note [Tensor-core matmul]: within the float32 accumulation's bound (twice
    the roundoff, as a tensor core may truncate) plus one rounding to the dtype,
    of the exact product of the same 16-bit inputs; the fast and the strided path."""
    batch, m, k, n = shape
    descent.manual_seed(m * k + n)
    a = descent.randn(batch, k, m, dtype=dtype).transpose(1, 2) if layout == "transposed" else \
        descent.randn(batch, m, k, dtype=dtype)
    b = descent.randn(batch, k, n, dtype=dtype)
    got = (a.cuda() @ b.cuda()).cpu()
    assert got.dtype is dtype and tuple(got.shape) == (batch, m, n)
    a64, b64 = a.to(descent.float64), b.to(descent.float64)
    exact, size = (a64 @ b64).tolist(), (a64.abs() @ b64.abs()).tolist()
    eps = 2.0 ** -11 if dtype is H else 2.0 ** -8
    for g_mat, e_mat, s_mat in zip(got.tolist(), exact, size):
        for g_row, e_row, s_row in zip(g_mat, e_mat, s_mat):
            for g, e, s in zip(g_row, e_row, s_row):
                assert abs(g - e) <= 2 * k * 2.0 ** -23 * s + eps * abs(e) + 1e-30, (g, e, s)
