"""Composite ops decompose as in PyTorch (Note [Composite ops decompose],
floors/kernels/composites.cpp): the trace shows the ops a composite calls.

- x @ y on 2-D tensors: an aten::mm dispatch span under aten::matmul's, the
  composite running at AutogradCPU (its slot above autograd) and mm at CPU;
- every shape case of matmul calls what at::native::matmul calls (dot, mv,
  mm, folded mm/mv, bmm) and gives numpy's result;
- contiguous, to and reshape call clone, _to_copy and view/_unsafe_view only
  when they must.
"""
import numpy as np
import pytest

import descent
from conftest import to_np


def dispatch_children(t, name):
    """The ops the first `name` dispatch span called through the dispatcher, in order."""
    spans = t.result.spans()
    by_id = {s["id"]: s for s in spans}

    def dispatch_parent(s):
        p = s["parent"]
        while p:
            up = by_id[p]
            if up["floor_name"] == "dispatch":
                return up["id"]
            p = up["parent"]
        return 0

    top = next(s for s in spans if s["floor_name"] == "dispatch" and s["name"] == name)
    ordered = sorted((s for s in spans if s["floor_name"] == "dispatch" and s["id"] != top["id"]),
                     key=lambda s: (s["start_ns"], s["id"]))
    return [s["name"] for s in ordered if dispatch_parent(s) == top["id"]], top


def test_x_at_y_is_mm_under_matmul():
    x, y = descent.ones(3, 4), descent.ones(4, 2)
    with descent.trace() as t:
        x @ y
    calls, top = dispatch_children(t, "aten::matmul")
    assert calls == ["aten::mm"], t.result.format_tree()
    assert top["args"]["kernel"] == "AutogradCPU"       # CompositeImplicitAutograd: the Autograd slot too
    mm = [s for s in t.result.spans() if s["floor_name"] == "dispatch" and s["name"] == "aten::mm"]
    assert [s["args"]["kernel"] for s in mm] == ["AutogradCPU", "CPU"]  # mm's Autograd kernel, then below it


CASES = [
    ((7,), (7,), ["aten::dot"]),
    ((3, 7), (7,), ["aten::mv"]),
    ((7,), (7, 4), ["aten::unsqueeze", "aten::mm", "aten::_unsafe_view"]),
    ((3, 7), (7, 4), ["aten::mm"]),
    ((2, 3, 4), (4, 5), ["aten::reshape", "aten::mm", "aten::_unsafe_view"]),
    ((2, 3, 4), (4,), ["aten::reshape", "aten::mv", "aten::_unsafe_view"]),
    ((2, 3, 4), (2, 4, 5), ["aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm",
                            "aten::_unsafe_view"]),
    ((2, 1, 3, 4), (5, 4, 2), ["aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm",
                               "aten::_unsafe_view"]),
    ((3, 4), (2, 4, 5), ["aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm",
                         "aten::_unsafe_view"]),
    ((4,), (2, 4, 5), ["aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm",
                       "aten::_unsafe_view"]),
]


@pytest.mark.parametrize("sa,sb,calls", CASES, ids=lambda c: str(c))
def test_matmul_shape_cases(sa, sb, calls):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    x, y = descent.tensor(a), descent.tensor(b)
    with descent.trace() as t:
        got = x @ y
    assert dispatch_children(t, "aten::matmul")[0] == calls, t.result.format_tree()
    expected = np.matmul(a, b)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(to_np(got), expected, rtol=1e-12, atol=1e-12)
    assert got._base is None                                  # a fresh tensor, as torch's matmul gives


def test_contiguous_to_and_reshape_call_only_what_they_must():
    x = descent.ones(4, 6)
    with descent.trace() as t:
        assert x.contiguous() is x or x.contiguous().data_ptr() == x.data_ptr()
        x.T.contiguous()
    spans = [s for s in t.result.spans() if s["floor_name"] == "dispatch" and not s["args"].get("redispatch")]
    assert [s["name"] for s in spans if s["name"] == "aten::clone"] == ["aten::clone"]   # only for x.T
    with descent.trace() as t:
        x.to(descent.float64)
    assert dispatch_children(t, "aten::to")[0] == ["aten::_to_copy"]
    with descent.trace() as t:
        x.reshape(3, 8)
    assert dispatch_children(t, "aten::reshape")[0] == ["aten::view"]
    with descent.trace() as t:
        r = x.T.reshape(-1)
    assert dispatch_children(t, "aten::reshape")[0] == ["aten::clone", "aten::_unsafe_view"]
    assert r._base is None and to_np(r).tolist() == to_np(x).T.reshape(-1).tolist()
