"""What a device op shows in the trace, held to what PyTorch's profiler shows
for the same line on an H200 (issue 17, "No false lessons"):

- `x + 1` on a device is aten::add over one launch: the 1 stays on the host
  and reaches the kernel as a value (Note [A CPU scalar on a device op],
  floors/kernels/device_loops.h); no aten::to moves it.

Each runs on sim:0 and, where there is a GPU, on cuda:0; the values must be
the CPU's bit for bit on sim:0.
"""
import numpy as np
import pytest

import descent
from conftest import to_np

needs_cuda = pytest.mark.skipif(not descent.cuda.is_available(), reason="no CUDA device here")
DEVICES = ["sim:0", pytest.param("cuda:0", marks=needs_cuda)]


def in_order(trace):
    """The calling thread's spans below Python, as (floor, name), in the order they began."""
    spans = [s for s in trace.spans() if s["floor_name"] not in ("python", "device")]
    spans.sort(key=lambda s: (s["start_ns"], -s["end_ns"]))
    return [(s["floor_name"], s["name"]) for s in spans]


def op_names(trace):
    return [n for f, n in in_order(trace) if f in ("dispatch", "kernels")]


def launches(trace):
    return [n for f, n in in_order(trace) if f == "launch"]


def bits(t):
    """t's values exactly (float16 and bfloat16 widened to float32, which is exact)."""
    t = t.to("cpu")
    if t.dtype in (descent.float16, descent.bfloat16):
        t = t.to(descent.float32)
    return np.ascontiguousarray(to_np(t)).tobytes()


# [SECTION] A CPU scalar on a device op ---------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_a_python_number_reaches_the_kernel_as_a_value(device):
    x = descent.ones(4, device=device)
    with descent.trace() as t:
        y = x + 1
    names = op_names(t.result)
    assert "aten::to" not in names and "aten::_to_copy" not in names, t.result.format_tree()
    assert set(names) == {"aten::add"}, names
    assert len(launches(t.result)) == 1, t.result.format_tree()
    assert y.tolist() == [2.0] * 4


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("line", [
    lambda x: x + 0.1, lambda x: 3 * x, lambda x: x - 2.5, lambda x: x / 3, lambda x: 1.5 ** x,
    lambda x: x ** 2, lambda x: x < 0.5, lambda x: x.add_(1), lambda x: x.mul_(descent.tensor(1 / 3)),
    lambda x: x + descent.tensor(1 / 3, dtype=descent.float64), lambda x: descent.tensor(0.7) * x,
    lambda x: x > descent.tensor(2), lambda x: x.add(descent.tensor(7), alpha=2)])
@pytest.mark.parametrize("dtype", [descent.float32, descent.float16, descent.bfloat16, descent.float64])
def test_a_cpu_scalar_gives_the_cpu_bits_with_no_copy(device, line, dtype):
    base = descent.tensor([0.25, -1.5, 3.0, 1e-3, 7.0, -0.0]).to(dtype)
    want = line(base.clone())
    x = base.to(device)
    with descent.trace() as t:
        got = line(x)
    assert "aten::_to_copy" not in op_names(t.result), t.result.format_tree()
    assert len(launches(t.result)) == 1, t.result.format_tree()
    assert got.dtype is want.dtype and got.device == descent.device(device)
    if device == "sim:0":
        assert bits(got) == bits(want), (got, want)
    else:  # cuda's pow is its math library's, which may differ in the last place
        g, w = got.to("cpu").to(descent.float64).tolist(), want.to(descent.float64).tolist()
        assert np.allclose(g, w, rtol=1e-2, equal_nan=True), (g, w)

