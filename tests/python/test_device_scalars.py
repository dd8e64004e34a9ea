"""What a device op shows in the trace, held to what PyTorch's profiler shows
for the same line on an H200 (issue 17, "No false lessons"):

- `x + 1` on a device is aten::add over one launch: the 1 stays on the host
  and reaches the kernel as a value (Note [A CPU scalar on a device op],
  floors/kernels/device/device_loops.h); no aten::to moves it.
- `f32 + i64` on a device is one kernel that converts as it loads, as
  PyTorch's dynamic-casting elementwise kernel: no aten::to, no copy kernel.
- `.item()` is aten::item -> aten::_local_scalar_dense -> cudaMemcpyAsync ->
  cudaStreamSynchronize, and `.cpu()` aten::to -> aten::_to_copy ->
  aten::empty(_strided), aten::copy_ -> cudaMemcpyAsync ->
  cudaStreamSynchronize: the copy queued first, then one wait (Note [Reading
  a device tensor waits], floors/binding/device_object.cpp).

Each runs on sim:0 and, where there is a GPU, on cuda:0; the values must be
the CPU's bit for bit on sim:0.
"""
import numpy as np
import pytest

import descent
from conftest import DEVICES, needs_cuda, to_np



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



# [SECTION] Mixed dtypes on a device: one kernel, converting as it loads -----------------------

F, D, H, B, I, Z = (descent.float32, descent.float64, descent.float16, descent.bfloat16, descent.int64,
                    descent.bool)
VALUES = [0.25, -1.5, 3.0, 1e-3, 7.0, -0.0, 2.5, 1000.0]


def typed(dtype, shape=(8,)):
    t = descent.tensor(VALUES).reshape(shape)
    return (t > 0) if dtype is Z else t.to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pair", [(F, I), (I, F), (H, F), (B, D), (Z, I), (F, Z), (H, B), (I, D)],
                         ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("line, b_shape", [
    (lambda a, b: a + b, (2, 4)), (lambda a, b: a * b, (2, 4)), (lambda a, b: a / b, (2, 4)),
    (lambda a, b: a < b, (2, 4)), (lambda a, b: a == b, (2, 4)), (lambda a, b: a.t() + b, (4, 2)),
    (lambda a, b: a + b[0], (2, 4))], ids=["add", "mul", "div", "lt", "eq", "strided", "broadcast"])
def test_mixed_dtypes_are_one_kernel_casting_as_it_loads(device, pair, line, b_shape):
    a, b = typed(pair[0], (2, 4)), typed(pair[1], b_shape)
    want = line(a, b)
    da, db = a.to(device), b.to(device)
    with descent.trace() as t:
        got = line(da, db)
    names = op_names(t.result)
    assert "aten::to" not in names and "aten::_to_copy" not in names, t.result.format_tree()
    assert len(launches(t.result)) == 1, t.result.format_tree()
    assert got.dtype is want.dtype and got.shape == want.shape
    if device == "sim:0":
        assert bits(got) == bits(want), (got, want)
    elif pair not in ((H, F), (B, D), (H, B)):
        # CUDA's 0/0 is a NaN of other bits than x86's (so it is in PyTorch): the values, NaN for NaN.
        g, w = np.array(got.to("cpu").tolist()), np.array(want.tolist())
        assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f"), (g, w)
    else:
        g, w = got.to("cpu").to(D).tolist(), want.to(D).tolist()
        assert np.allclose(g, w, rtol=1e-3, equal_nan=True), (g, w)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [I, Z, descent.int32, descent.uint8], ids=str)
@pytest.mark.parametrize("op", ["exp", "sin", "sqrt", "sigmoid"])
def test_a_float_op_of_an_integral_tensor_is_one_kernel_casting_as_it_loads(device, dtype, op):
    """exp of an int64 tensor on a device: PyTorch's one launch, converting each element as it loads
    (the CPU casts first, aten::to, as TensorIterator's CPU path does)."""
    x = descent.tensor([0, 1, 2, 3, 0, 5, 6, 7]).to(dtype)
    want = getattr(x, op)()
    dx = x.to(device)
    with descent.trace() as t:
        got = getattr(dx, op)()
    names = op_names(t.result)
    assert "aten::to" not in names and "aten::_to_copy" not in names, t.result.format_tree()
    assert len(launches(t.result)) == 1, t.result.format_tree()
    assert got.dtype is want.dtype is descent.float32
    if device == "sim:0":
        assert bits(got) == bits(want), (got, want)
    else:
        assert np.allclose(got.to("cpu").tolist(), want.tolist(), rtol=1e-6), (got, want)


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_and_mse_loss_cast_as_they_load(device):
    x, i = typed(F).to(device), typed(I).to(device)
    x.add_(i, alpha=2)
    want = typed(F).add_(typed(I), alpha=2)
    assert bits(x) == bits(want)
    h, f = typed(H).to(device), typed(F).to(device) * 0.5
    with descent.trace() as t:
        loss = descent.nn.functional.mse_loss(h, f, reduction="none")
    assert "aten::to" not in op_names(t.result), t.result.format_tree()
    want = descent.nn.functional.mse_loss(typed(H), typed(F) * 0.5, reduction="none")
    assert loss.dtype is F and bits(loss) == bits(want)


# [SECTION] Reading a device tensor: the copy queued, then one wait --------------------------------

def dedupe(names):
    """Consecutive repeats dropped: a dispatch span and its kernel's span are one op."""
    return [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]


def waits_and_copies(trace):
    return [n for f, n in in_order(trace) if f == "streams" and not n.startswith("wait for the devices")]


def memcpy(device):
    return "cudaMemcpyAsync" if device.startswith("cuda") else "simMemcpyAsync"


def span(trace, floor, name):
    found = [s for s in trace.spans() if s["floor_name"] == floor and s["name"] == name]
    assert len(found) == 1, (floor, name, trace.format_tree())
    return found[0]


def inside(inner, outer):
    return outer["start_ns"] <= inner["start_ns"] and inner["end_ns"] <= outer["end_ns"]


@pytest.mark.parametrize("device", DEVICES)
def test_item_is_local_scalar_dense_a_copy_then_one_wait(device):
    y = descent.ones(64, device=device).sum()
    with descent.trace() as t:
        v = y.item()
    assert v == 64.0 and type(v) is float
    tr = t.result
    assert dedupe(op_names(tr)) == ["aten::item", "aten::_local_scalar_dense"], tr.format_tree()
    assert waits_and_copies(tr) == [memcpy(device), ".item()"], tr.format_tree()  # queued, then waited for
    wait = span(tr, "streams", ".item()")
    assert wait["args"]["api"] == ("cudaStreamSynchronize" if device.startswith("cuda") else "simStreamSynchronize")
    assert inside(wait, span(tr, "kernels", "aten::_local_scalar_dense"))  # as PyTorch's, under the op


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_is_to_copy_empty_and_copy_then_one_wait(device):
    x = descent.ones(3, device=device) * 2
    with descent.trace() as t:
        c = x.cpu()
    assert c.device == descent.device("cpu") and c.tolist() == [2.0] * 3
    tr = t.result
    assert dedupe(op_names(tr)) == ["aten::to", "aten::_to_copy", "aten::empty_strided", "aten::copy_"], tr.format_tree()
    assert waits_and_copies(tr) == [memcpy(device), ".cpu()"], tr.format_tree()
    assert inside(span(tr, "streams", ".cpu()"), span(tr, "kernels", "aten::copy_"))


def test_a_cast_on_the_cpu_is_to_copy_empty_strided_and_copy_selected_by_backend_select():
    """x.double() as PyTorch runs it: aten::to -> aten::_to_copy -> aten::empty_strided, aten::copy_; _to_copy
    stops at BackendSelect (aten's kernel for an op with TensorOptions), empty_strided is selected there too."""
    x = descent.ones(2, 3)
    with descent.trace() as t:
        y = x.t().double()
    assert y.dtype == descent.float64 and y.stride() == (1, 3)  # a dense source's strides kept, as aten's preserve
    tr = t.result
    assert dedupe(op_names(tr))[-4:] == ["aten::to", "aten::_to_copy", "aten::empty_strided", "aten::copy_"], tr.format_tree()
    kernels = [s["args"].get("kernel") for s in tr.spans() if s["floor_name"] == "dispatch" and s["name"] == "aten::_to_copy"]
    assert "BackendSelect" in kernels, kernels


@pytest.mark.parametrize("read, why, values", [(lambda x: x.tolist(), ".tolist()", [1.0, 2.0]),
                                               (lambda x: x.to(descent.float64).tolist(), ".tolist()", [1.0, 2.0]),
                                               (lambda x: x.to("cpu", descent.int64), "synchronize", None),
                                               (lambda x: x.t().t().cpu(), ".cpu()", None)])
def test_every_read_copies_before_it_waits(read, why, values):
    x = descent.tensor([1.0, 2.0]).to("sim:0")
    with descent.trace() as t:
        got = read(x)
    streams = waits_and_copies(t.result)
    assert streams.index("simMemcpyAsync") < streams.index(why), t.result.format_tree()
    if values is not None:
        assert got == values


def test_item_on_the_cpu_is_the_same_two_ops_with_no_wait():
    with descent.trace() as t:
        v = descent.tensor([True]).item()
    assert v is True
    assert dedupe(op_names(t.result))[-2:] == ["aten::item", "aten::_local_scalar_dense"]
    assert waits_and_copies(t.result) == []


def test_item_checks_its_one_element_as_pytorch_does():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        descent.ones(2, device="sim:0").item()
    assert descent.tensor([7]).to("sim:0").item() == 7
    assert descent.tensor(2.5, dtype=descent.bfloat16).to("sim:0").item() == 2.5
