"""Hostile sizes and numbers (issue 8: crashes, undefined behaviour, wrong numbers).

- CPython allocations in the binding are checked: a list too large to make
  is a MemoryError, as in PyTorch, not a crash;
- the buffer protocol (numpy, memoryview) computes byte strides and lengths
  with overflow checks: zero-size tensors with huge sizes export, expanded
  tensors too large to address are a RuntimeError;
- device strings with long digit runs are a RuntimeError naming them;
- reductions and products of empty tensors do no work however large their
  empty dims;
- float32 sum and mean cascade (Note [Cascade summation]): PyTorch's numbers,
  in both kernel variants;
- a float that int64 cannot hold, written into an int64 tensor from a Scalar
  (full, fill_, item assignment, tensor(...)), is PyTorch's RuntimeError;
  tensor-to-tensor casts are unchecked, as in PyTorch, and give x86's INT64_MIN.

Each was a crash, a sanitizer report, a hang or a wrong number before.
"""
import time

import numpy as np
import pytest

import descent

INT64_MIN = -2**63


@pytest.fixture(params=["reference", "optimized"])
def variant(request):
    descent.set_kernel_variant(request.param)
    yield request.param
    descent.set_kernel_variant("auto")


# [SECTION] Allocations in the binding -------------------------------------------------

def test_tolist_too_large_is_a_memory_error():
    with pytest.raises(MemoryError):
        descent.zeros(2**40, 0).tolist()
    assert descent.zeros(3, 0).tolist() == [[], [], []]


# [SECTION] The buffer protocol -----------------------------------------------------------

def test_zero_size_tensors_with_huge_sizes_export():
    for shape in [(0, 2**62), (0, 2**40, 2**40), (2**31, 0, 2**31)]:
        x = descent.zeros(*shape)
        assert x.is_contiguous()
        m = memoryview(x)
        assert m.shape == shape and m.nbytes == 0 and m.itemsize == 4
    assert np.asarray(descent.zeros(0, 2**20)).shape == (0, 2**20)


def test_expanded_tensors_export_or_refuse():
    m = memoryview(descent.zeros(1).expand(2**31))  # 2**33 bytes: fits
    assert m.shape == (2**31,) and m.strides == (0,)
    assert np.asarray(descent.ones(1, dtype=descent.float64).expand(2**31, 3))[2**31 - 1, 2] == 1
    with pytest.raises(RuntimeError, match="more bytes than a Py_ssize_t can count"):
        memoryview(descent.zeros(1, dtype=descent.float64).expand(2**61))  # 2**64 bytes
    with pytest.raises(RuntimeError, match="more bytes than a Py_ssize_t can count"):
        descent.zeros(1, 1).expand(2**31, 2**31).numpy()  # 2**62 float32: 2**64 bytes


# [SECTION] Device strings ----------------------------------------------------------------

@pytest.mark.parametrize("spec", ["cuda:9999999999", "sim:4294967296", "sim:18446744073709551617",
                                  "cuda:" + "9" * 400, "cuda:128"])
def test_long_device_indices_are_runtime_errors(spec):
    with pytest.raises(RuntimeError, match="Could not parse device index") as e:
        descent.device(spec)
    assert spec in str(e.value)
    assert descent.device("cuda:127").index == 127


# [SECTION] Zero-size work is O(1) --------------------------------------------------------

def test_empty_reductions_and_products_are_instant(variant):
    tall, rows = descent.zeros(2**30, 0), descent.zeros(2**40, 0)
    start = time.perf_counter()
    assert tall.sum(0).shape == (0,) and tall.mean(0).shape == (0,)
    assert tall.T.sum(1).shape == (0,) and tall.sum().item() == 0
    assert descent.zeros(0, 2**30).sum(1).shape == (0,)
    assert (rows @ descent.zeros(0, 0)).shape == (2**40, 0)
    assert tall.max(0).values.shape == (0,)
    assert time.perf_counter() - start < 0.5  # a loop over the empty rows took seconds (2**30) or hours (2**40)
    assert descent.zeros(5, 0).sum(1).tolist() == [0.0] * 5
    assert all(v != v for v in descent.zeros(5, 0).mean(1).tolist())


# [SECTION] Cascade summation ---------------------------------------------------------------

def test_float32_sums_of_millions_are_pytorchs(variant):
    mean = descent.full((10_000_000,), 0.1).mean()
    assert mean.dtype is descent.float32 and str(np.float32(mean.item())) == "0.1"
    assert descent.ones(3, 2**23).T.sum().item() == 25165824  # in order it stopped at 2**24 = 16777216
    assert descent.ones(3, 2**23).sum(1).tolist() == [8388608.0] * 3
    assert descent.ones(2**25, 1).sum(0).item() == 2**25


def test_optimized_sum_does_not_depend_on_the_thread_count():
    x = descent.randn(3_000_017)
    saved = descent.get_num_threads()
    try:
        got = set()
        for n in [1, 2, 4]:
            descent.set_num_threads(n)
            got.add((x.sum().item(), tuple(x[:3_000_000].view(3, -1).sum(1).tolist())))
        assert len(got) == 1
    finally:
        descent.set_num_threads(saved)


def test_verifier_claims_the_cascade_bound():
    for v in descent.verify("sum") + descent.verify("mean"):
        assert v["passed"], v
        if v["dtype"] in ("float32", "float64") and v["claim"] == "bound":
            assert v["max_abs_diff"] <= v["bound"]


# [SECTION] Floats into integer tensors -------------------------------------------------------

BAD = [1e300, -1e300, float("nan"), float("inf"), float("-inf"), 2.0**63]


@pytest.mark.parametrize("value", BAD, ids=str)
def test_scalar_into_int64_raises_as_pytorch(value):
    msg = "cannot be converted to type int64_t without overflow"
    with pytest.raises(RuntimeError, match=msg):
        descent.full((2,), value, dtype=descent.int64)
    x = descent.zeros(3, dtype=descent.int64)
    with pytest.raises(RuntimeError, match=msg):
        x.fill_(value)
    with pytest.raises(RuntimeError, match=msg):
        x[1] = value
    msg = "^value cannot be converted to type int64 without overflow$"  # torch.tensor names the dtype as Python does
    with pytest.raises(RuntimeError, match=msg):
        descent.tensor([1.0, value], dtype=descent.int64)
    with pytest.raises(RuntimeError, match=msg):
        descent.tensor(value, dtype=descent.int64)
    assert x.tolist() == [0, 0, 0]


def test_in_range_floats_truncate_and_tensor_casts_are_unchecked():
    assert descent.tensor([1.9, -1.9, -2.0**63], dtype=descent.int64).tolist() == [1, -1, -2**63]
    assert descent.full((1,), 2.5, dtype=descent.int64).tolist() == [2]
    assert descent.tensor([1e300]).tolist() == [float("inf")]  # float32, as torch.tensor: rounded, not checked
    # PyTorch checks Scalars, not casts between tensors; on x86 those give INT64_MIN.
    src = descent.tensor(BAD + [1.5], dtype=descent.float64)
    for v in ("reference", "optimized"):
        descent.set_kernel_variant(v)
        try:
            assert src.to(descent.int64).tolist() == [INT64_MIN] * len(BAD) + [1]
            assert src.float().to(descent.int64).tolist() == [INT64_MIN] * len(BAD) + [1]
        finally:
            descent.set_kernel_variant("auto")
