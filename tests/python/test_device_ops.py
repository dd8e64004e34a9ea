"""Elementwise ops, copies, views and factories on devices, from Python.

Every row of the op table of those kinds, for every dtype, runs its sample
call on the CPU and on the device, and the device's result must equal the
CPU's bit for bit on sim:0 (Note [One kernel body, two devices],
floors/kernels/device/device_loops.h); on cuda:0, where there is one, the same but
for a few units in the last place where CUDA's math library computes (exp,
log, tanh, sigmoid, sin, cos, pow, randn). rand and randn draw from the
devices' own generator, not the CPU's (which is PyTorch's): their numbers are
held to it by the verifier, here to their shape, their reproducibility and
one generator for every device. Then what a user meets: `x + 1` on
a device, mixed devices, moving tensors with to() and copy_(), views and
contiguous().
Reductions, products and indexing are in test_device_reduce.py.
"""
import numpy as np
import pytest

import descent
from conftest import DEVICES, DTYPES, OPS_BY_KEY, dtype_id, op_function, to_np
from learner_reference import LEARNER_CPU_ONLY, LEARNER_DEVICE_RANDOM, LEARNER_UNINITIALISED
from test_ops import parse_sample

KINDS = {"unary", "binary", "comparison", "view", "factory", "copy", "in_place", "inplace"}
COVERED = sorted(k for k, op in OPS_BY_KEY.items()
                 if op["kind"] in KINDS and k not in ("index", "index_put_") and k not in LEARNER_CPU_ONLY)
# The rows whose element function calls the math library (ops.h's Exactness::DeviceMath): within 8 ulps on CUDA.
CUDA_ULPS = {k: 8 for k, op in OPS_BY_KEY.items() if op["exactness"] == "device_math"}
# Whose terms cancel: 8 ulps of the larger of the result and the terms' magnitude (Note [Element functions that
# cancel], verifier.cpp).
CANCELLING = {"gelu": lambda x: 0.5 * np.abs(x), "gelu_backward": lambda g, x: np.abs(g) * (1 + np.abs(x)),
              "silu_backward": lambda g, x: np.abs(g) * (1 + np.abs(x))}




def host(t):
    return t.to("cpu")


def on(t, device):
    """t on the device with its layout: a transposed sample stays transposed there."""
    if not isinstance(t, descent.Tensor):
        return [on(i, device) if isinstance(i, descent.Tensor) else i for i in t] if isinstance(t, list) else t
    if t.dim() == 2 and not t.is_contiguous():
        return t.transpose(0, 1).to(device).transpose(0, 1)
    return t.to(device)


def same(got, want, ulps=0, magnitude=None):
    """Bit for bit (any NaN equal to any NaN), or within `ulps` units in the last place of want's dtype (of the
    larger of want and `magnitude`, where given)."""
    assert got.shape == want.shape and got.dtype is want.dtype, (got, want)
    g, w = np.ascontiguousarray(to_np(host(got))), np.ascontiguousarray(to_np(want))
    if g.tobytes() == w.tobytes():
        return
    if ulps and w.dtype.kind == "f":
        both_nan = np.isnan(g) & np.isnan(w)
        at = np.abs(w) if magnitude is None else np.maximum(np.abs(w).astype(np.float64), magnitude)
        spacing = np.spacing(at.astype(w.dtype))
        assert np.all(both_nan | (g == w) | (np.abs(g - w) <= ulps * spacing)), (g, w)
        return
    assert np.array_equal(g, w, equal_nan=w.dtype.kind == "f"), (g, w)
    if w.dtype.kind == "f":  # a NaN's sign and payload are the hardware's: x86 writes 0xffc00000, a GPU 0x7fffffff
        nan = np.isnan(w)
        g, w = g[~nan], w[~nan]
    assert g.tobytes() == w.tobytes(), "equal values, different bits (the sign of a zero?)"


# [SECTION] The op table on each device ---------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", COVERED)
def test_sample_call_on_device_equals_cpu(name, dtype, device, rng):
    op = OPS_BY_KEY[name]
    if name == "floor_divide" and not dtype.is_floating_point:
        pytest.skip("the CPU refuses an integer 0 divisor (ZeroDivisionError); a device, as torch's CUDA, does not look")
    args, _ = parse_sample(op["sample"], dtype, op["domain"], rng)
    dev_args = [on(a, device) for a in args]
    fn = op_function(op)
    kwargs = {"dtype": dtype} if op["kind"] == "factory" else {}
    errors = []
    results = []
    for a, kw in ((args, kwargs), (dev_args, dict(kwargs, device=device) if op["kind"] == "factory" else kwargs)):
        descent.manual_seed(5)
        try:
            results.append((fn(*a, **kw), a))
            errors.append(None)
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
            errors.append((type(e), str(e)))
    assert errors[0] == errors[1], "the device refuses what the CPU refuses, in the same words"
    if errors[0] is not None:
        return
    (cpu, cpu_args), (dev, dev_args) = results
    if op["kind"] in ("in_place", "inplace"):  # compare self, where the op wrote
        cpu, dev = cpu_args[0], dev_args[0]
    if isinstance(cpu, tuple):  # (values, indices): sort, topk
        for c, dv in zip(cpu, dev):
            assert dv.device == descent.device(device)
            same(dv, c)
        return
    assert dev.device == descent.device(device)
    if name in ("rand", "randn") or name in LEARNER_DEVICE_RANDOM:  # a device's own stream (random.h), or drawn apart
        assert dev.shape == cpu.shape and dev.dtype is cpu.dtype
        return
    if name not in ("empty", "empty_strided") and name not in LEARNER_UNINITIALISED:  # uninitialised
        cuda = device.startswith("cuda")
        magnitude = CANCELLING[name](*(to_np(a).astype(np.float64) for a in args[:2 if "backward" in name else 1])) \
            if cuda and name in CANCELLING else None
        same(dev, cpu, CUDA_ULPS.get(name, 0) if cuda else 0, magnitude)


# [SECTION] What a user meets ---------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_python_numbers_and_mixed_devices(device):
    x = descent.arange(6, dtype=descent.float32, device=device).view(2, 3)
    assert x.device == descent.device(device)
    y = x + 1
    assert y.device == x.device and to_np(host(y)).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert to_np(host(2 * x - 0.5)).tolist() == [[-0.5, 1.5, 3.5], [5.5, 7.5, 9.5]]
    assert to_np(host(x ** 2)).tolist() == [[0, 1, 4], [9, 16, 25]]
    assert to_np(host(x > 2)).tolist() == [[False, False, False], [True, True, True]]
    assert (x + descent.tensor(1.5)).device == x.device  # any CPU 0-d tensor, as in PyTorch
    with pytest.raises(RuntimeError, match=f"Expected all tensors to be on the same device, but found at least two "
                                           f"devices, {device} and cpu!"):
        x + descent.ones(3)
    x += 10
    assert to_np(host(x)).tolist() == [[10, 11, 12], [13, 14, 15]]


@pytest.mark.parametrize("device", DEVICES)
def test_views_contiguous_and_in_place_through_views(device):
    base = descent.arange(12, device=device).view(3, 4)
    t = base.T
    assert t.device == base.device and not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and to_np(host(c)).tolist() == to_np(host(base)).T.tolist()
    base[1].mul_(100)
    assert to_np(host(base))[1].tolist() == [400, 500, 600, 700]
    r = t.reshape(12)  # a copy: no view can express it
    assert to_np(host(r)).tolist() == to_np(host(base)).T.reshape(12).tolist()
    base.zero_()
    assert not to_np(host(base)).any()


@pytest.mark.parametrize("device", DEVICES)
def test_to_and_copy_between_host_and_device(device, rng):
    a = rng.standard_normal((5, 7))
    x = descent.tensor(a)
    d = x.T.to(device, descent.float32)  # strided on the host, cast on the device
    assert d.device == descent.device(device) and d.dtype is descent.float32
    assert to_np(host(d)).tolist() == a.T.astype(np.float32).tolist()
    back = d.T.to("cpu", descent.float64)
    assert back.device == descent.device("cpu") and to_np(back).tolist() == a.astype(np.float32).astype(np.float64).tolist()
    self = descent.zeros(2, 3, dtype=descent.int64, device=device)
    self.copy_(descent.tensor([[4.5], [-1.0]]))  # from the host, broadcast and cast
    assert to_np(host(self)).tolist() == [[4, 4, 4], [-1, -1, -1]]
    h = descent.zeros(3)
    h.copy_(descent.arange(3, device=device))
    assert to_np(h).tolist() == [0, 1, 2]


@pytest.mark.parametrize("device", DEVICES)
def test_random_numbers_on_a_device_are_its_generators(device):
    descent.manual_seed(3)
    u, n = descent.rand(1000, device=device), descent.randn(100, dtype=descent.float64, device=device)
    descent.manual_seed(3)
    same(u, host(descent.rand(1000, device=device)))  # reseeding replays them
    same(n, host(descent.randn(100, dtype=descent.float64, device=device)))
    descent.manual_seed(3)
    assert to_np(host(u)).tolist() != to_np(descent.rand(1000)).tolist()  # the CPU draws torch's stream
    descent.manual_seed(3)  # every device draws the same counters: sim:0's numbers, but for randn's last bits on CUDA
    same(u, host(descent.rand(1000, device="sim:0")))
    same(n, host(descent.randn(100, dtype=descent.float64, device="sim:0")), 8 if device.startswith("cuda") else 0)


def test_missing_devices_raise():
    with pytest.raises(RuntimeError, match="sim:3"):
        descent.ones(2, device="sim:3")
    with pytest.raises(RuntimeError, match="sim:3"):
        descent.ones(2).to("sim:3")
