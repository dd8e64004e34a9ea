"""The layout of an elementwise op's output: it follows its inputs, as PyTorch's TensorIterator lays it out
(Note [Output strides follow the inputs], floors/kernels/layout.cpp).

The strides below are PyTorch 2.11's, worked out from its rule (TensorIteratorBase::fast_set_up and
reorder_dimensions in aten/src/ATen/TensorIterator.cpp): same-shaped inputs that are all contiguous give
a contiguous output, all dense with the same strides give those strides; otherwise the dims are sorted by
the inputs' strides, the first input that is not broadcast along both dims deciding. Values must not
change with the layout, on any device and in either CPU loop.
"""
import numpy as np
import pytest

import descent
from conftest import to_np
from test_device_ops import DEVICES


def x32():
    """x of shape (3, 2): x.t() is (2, 3) with strides (1, 2)."""
    return descent.arange(6, dtype=descent.float32).reshape(3, 2)


def check(out, want_strides, want_values):
    assert out.stride() == want_strides
    np.testing.assert_array_equal(to_np(out.to("cpu")), want_values)


def test_a_unary_op_keeps_a_transposed_layout():
    x = x32()
    xt = to_np(x).T
    check(x.t().exp(), (1, 2), to_np(x.t().contiguous().exp()))  # glibc's exp, as a row-major input gets it
    check(x.t().neg(), (1, 2), -xt)
    check(x.t().clamp(1, 4), (1, 2), np.clip(xt, 1, 4))
    check(x.t().relu(), (1, 2), xt)


def test_a_python_number_does_not_decide():
    x = x32()
    xt = to_np(x).T
    check(x.t() + 1, (1, 2), xt + 1)
    check(1 + x.t(), (1, 2), 1 + xt)
    check(x.t() * 2.5, (1, 2), xt * np.float32(2.5))
    check(x.t() > 2, (1, 2), xt > 2)


def test_the_first_operand_decides_between_two_layouts():
    """x.t() + y with y a contiguous (2, 3): both are dense, their strides differ, so the dims are sorted
    by the first operand's strides: (1, 2). y + x.t() is y's: (3, 1)."""
    x = x32()
    y = descent.arange(6, dtype=descent.float32).reshape(2, 3) * 10
    xt, yn = to_np(x).T, to_np(y)
    check(x.t() + y, (1, 2), xt + yn)
    check(y + x.t(), (3, 1), yn + xt)
    check(x.t() == y, (1, 2), xt == yn)
    check(y - x.t(), (3, 1), yn - xt)


def test_a_broadcast_dim_does_not_decide():
    """b of shape (3,) is broadcast along dim 0 (stride 0 there), c of shape (2, 1) along dim 1: neither
    can tell the order of the two dims, so x.t() does, wherever it stands."""
    x = x32()
    b = descent.tensor([1.0, 2.0, 3.0])
    c = descent.tensor([[1.0], [2.0]])
    xt = to_np(x).T
    check(x.t() + b, (1, 2), xt + to_np(b))
    check(b + x.t(), (1, 2), to_np(b) + xt)
    check(c * x.t(), (1, 2), to_np(c) * xt)
    check(b + c, (3, 1), to_np(b) + to_np(c))  # both broadcast: row-major
    y = descent.ones(2, 3)
    check(y + b, (3, 1), 1 + np.broadcast_to(to_np(b), (2, 3)))


def test_contiguous_inputs_give_a_contiguous_output():
    y = descent.ones(2, 3)
    assert (y + y).stride() == (3, 1) and y.exp().stride() == (3, 1) and (y + 1).stride() == (3, 1)
    assert (descent.ones(4, 1, 3) + descent.ones(5, 1)).stride() == (15, 3, 1)


def test_a_permutation_is_kept():
    base = descent.arange(24, dtype=descent.float32).reshape(2, 3, 4)
    p = base.permute(2, 0, 1)  # (4, 2, 3), strides (1, 12, 4)
    pn = to_np(p)
    check(p.exp(), (1, 12, 4), to_np(p.contiguous().exp()))
    check(p + 1, (1, 12, 4), pn + 1)
    check(p * p, (1, 12, 4), pn * pn)
    check(p + descent.ones(3), (1, 12, 4), pn + 1)


def test_channels_last_is_kept():
    nhwc = descent.arange(2 * 4 * 5 * 3, dtype=descent.float32).reshape(2, 4, 5, 3)
    x = nhwc.permute(0, 3, 1, 2)  # (N, C, H, W) = (2, 3, 4, 5) in channels-last memory
    assert x.stride() == (60, 1, 15, 3)
    xn = to_np(x)
    check(x.sigmoid(), (60, 1, 15, 3), to_np(descent.tensor(xn).sigmoid()))
    check(x + x, (60, 1, 15, 3), xn + xn)
    bias = descent.arange(3, dtype=descent.float32).reshape(3, 1, 1)
    check(x + bias, (60, 1, 15, 3), xn + to_np(bias))


def test_a_dense_input_keeps_its_layout_through_a_cast():
    """An int64 tensor is cast to float32 first (exp) or to the promoted dtype (+ 0.5); the cast keeps a
    dense tensor's strides, as aten::_to_copy does, so the output still follows x.t()."""
    xi = descent.arange(6).reshape(3, 2)
    assert xi.t().double().stride() == (1, 2) and xi.t().double().tolist() == to_np(xi).T.tolist()
    check(xi.t().exp(), (1, 2), to_np(xi.t().contiguous().exp()))
    check(xi.t() + 0.5, (1, 2), to_np(xi).T + np.float32(0.5))
    check(xi.t() + descent.ones(2, 3, dtype=descent.float64), (1, 2), to_np(xi).T + 1.0)


def test_a_strided_input_is_ordered_by_its_strides():
    """a is not dense (every other column), so the output is dense in a's order of dims."""
    a = descent.arange(12, dtype=descent.float32).reshape(3, 4)[:, ::2].t()  # (2, 3), strides (2, 4)
    check(a.exp(), (1, 2), to_np(a.contiguous().exp()))
    check(a + 1, (1, 2), to_np(a) + 1)


@pytest.mark.parametrize("variant", ["reference", "optimized"])
def test_both_cpu_loops_agree_and_the_optimized_one_still_applies(variant):
    descent.set_kernel_variant(variant)
    x = descent.randn(64, 33)
    y = descent.randn(33, 64)
    for out, want in [(x.t().exp(), to_np(x.t().contiguous().exp())), (x.t() + y, to_np(x).T + to_np(y)),
                      (x.t() * 3, to_np(x).T * np.float32(3))]:
        assert out.stride() == (1, 33)
        np.testing.assert_array_equal(to_np(out), want)
        assert descent._C._last_variant() == variant
    descent.set_kernel_variant("auto")


@pytest.mark.parametrize("device", DEVICES)
def test_devices_lay_out_and_compute_as_the_cpu(device, rng):
    host = descent.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    other = descent.tensor(rng.standard_normal((7, 5)).astype(np.float32))
    x, y = host.to(device), other.to(device)
    for got, want in [(x.t().exp(), host.t().exp()), (x.t() + 1, host.t() + 1), (x.t() + y, host.t() + other),
                      (y + x.t(), other + host.t()), (x.t() < y, host.t() < other),
                      (x.t().clamp(-0.5, 0.5), host.t().clamp(-0.5, 0.5))]:
        assert got.stride() == want.stride()
        assert to_np(got.to("cpu")).tobytes() == to_np(want).tobytes() or device.startswith("cuda")


def test_gradients_through_a_permuted_output():
    x = x32().requires_grad_()
    y = x.t().exp()
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.exp(to_np(x.detach())), rtol=1e-6)
