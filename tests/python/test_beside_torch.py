"""descent beside torch, where torch is installed (the H200 host; a dev machine with torch in a
venv): the integer dtypes, the layout of results and x[i] = v give what torch gives, value for
value and word for word (issue 17). Without torch every test skips; the same facts are held
against numpy and written-down values in test_int_dtypes.py, test_layout.py and test_indexing.py.

Differences kept on purpose, not tested here: x.t().clone() is row-major in descent (torch keeps
the layout: descent's clone has no memory_format); floor division (//) is not an op of descent's;
sum(bool tensor, dtype=bool) gives an int64 tensor.
"""
import functools
import json
import subprocess
import sys

import numpy as np
import pytest

import descent

torch = pytest.importorskip("torch")
if not torch.__version__.startswith("2.11"):  # the reference (the H200 host's); others differ in details
    pytest.skip(f"the facts here are torch 2.11's, not {torch.__version__}'s", allow_module_level=True)

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def test_the_promotion_table_is_torchs():
    for a in NAMES:
        for b in NAMES:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
            got = str(descent.promote_types(getattr(descent, a), getattr(descent, b))).split(".")[-1]
            assert got == want, (a, b)


def outcome(m, f):
    """f(m)'s repr in module-neutral words, or the error's class and message."""
    try:
        r = f(m)
    except Exception as e:  # noqa: BLE001  (the class is part of what is compared)
        return f"{type(e).__name__}: {e}"
    return repr(r).replace("torch.", "M.").replace("descent.", "M.")


def setitem(x, i, v):
    x[i] = v
    return x


CASES = {
    "uint8 from -1": lambda m: m.tensor([-1], dtype=m.uint8),
    "uint8 from 256": lambda m: m.tensor([256], dtype=m.uint8),
    "uint8 fill -1": lambda m: m.zeros(2, dtype=m.uint8).fill_(-1),
    "int8 from 126.9": lambda m: m.tensor([126.9], dtype=m.int8),
    "int8 from 127.5": lambda m: m.tensor([127.5], dtype=m.int8),
    "int8 from 128.0": lambda m: m.tensor([128.0], dtype=m.int8),
    "uint8 from -0.5": lambda m: m.tensor([-0.5], dtype=m.uint8),
    "uint8 from 255.9": lambda m: m.tensor([255.9], dtype=m.uint8),
    "int64 from 9.3e18": lambda m: m.tensor([9.3e18], dtype=m.int64),
    "300.0 to int8": lambda m: m.tensor([300.0, -1.0, 2.7]).to(m.int8),
    "uint8 255 + 1": lambda m: m.tensor([255], dtype=m.uint8) + 1,
    "uint8 > -1": lambda m: m.tensor([0, 5], dtype=m.uint8) > -1,
    "int32 + 1, + 1.5": lambda m: ((m.tensor([1], dtype=m.int32) + 1).dtype, (m.tensor([1], dtype=m.int32) + 1.5).dtype),
    "int32 sum": lambda m: m.tensor([1, 2], dtype=m.int32).sum(),
    "int32 sum as int32": lambda m: m.tensor([1, 2], dtype=m.int32).sum(dtype=m.int32),
    "int16 repr": lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.int16),
    "uint8 repr": lambda m: m.tensor([1, 200], dtype=m.uint8),
    "int8 / int8": lambda m: m.tensor([7], dtype=m.int8) / m.tensor([2], dtype=m.int8),
    "uint8 clamp_min -1": lambda m: m.tensor([0, 5], dtype=m.uint8).clamp_min(-1),
    "uint8 clamp -1, 300": lambda m: m.tensor([1, 2], dtype=m.uint8).clamp(-1, 300),
    "int8 clamp_max 200": lambda m: m.tensor([1, 2], dtype=m.int8).clamp_max(200),
    "mm int32 by int16": lambda m: m.ones(2, 2, dtype=m.int32).mm(m.ones(2, 2, dtype=m.int16)),
    "mm int32": lambda m: m.ones(2, 2, dtype=m.int32).mm(m.ones(2, 2, dtype=m.int32)),
    "uint8 mask": lambda m: m.arange(3)[m.tensor([1, 0, 1], dtype=m.uint8)],
    "int32 index": lambda m: m.arange(3)[m.tensor([2, 0], dtype=m.int32)],
    "int32 tolist": lambda m: m.tensor([1, 2], dtype=m.int32).tolist(),
    "numpy int32 array": lambda m: m.tensor(np.array([1, 2], dtype="int32")).dtype,
    "lists of numpy scalars": lambda m: [m.tensor(d).dtype for d in (
        [np.int32(1)], [np.int32(1), 2], [np.int8(1), np.uint8(2)], [np.float64(1), 2.0], [np.float16(1)],
        [np.int32(1), 2.5])],
    "-uint8": lambda m: -m.tensor([1], dtype=m.uint8),
    "abs int8 -128": lambda m: m.tensor([-128], dtype=m.int8).abs(),
    "int8 ** 2": lambda m: m.tensor([12], dtype=m.int8) ** 2,
    "exp of int": lambda m: m.tensor([0, 1], dtype=m.int16).exp(),
    "strides of t() + 1": lambda m: (m.ones(3, 2).t() + 1).stride(),
    "strides of t().exp()": lambda m: m.ones(3, 2).t().exp().stride(),
    "strides of t() + y, y + t()": lambda m: ((m.ones(3, 2).t() + m.ones(2, 3)).stride(),
                                             (m.ones(2, 3) + m.ones(3, 2).t()).stride()),
    "strides of t().double()": lambda m: m.ones(3, 2).t().double().stride(),
    "strides of an int t().exp()": lambda m: m.ones(3, 2, dtype=m.int64).t().exp().stride(),
    "strides of a permuted 3-d op": lambda m: (m.ones(2, 3, 4).permute(2, 0, 1) * 2).stride(),
    "x[0] = 5": lambda m: setitem(m.zeros(2, 3), 0, 5),
    "x[1:3] = 7": lambda m: setitem(m.zeros(4), slice(1, 3), 7),
    "x[0] = ones(1, 3)": lambda m: setitem(m.zeros(2, 3), 0, m.ones(1, 3)),
    "x[0] = ones(5)": lambda m: setitem(m.zeros(2, 4), 0, m.ones(5)),
    "uint8 x[1] = 300": lambda m: setitem(m.zeros(3, dtype=m.uint8), 1, 300),
    "uint8 x[1] = -1": lambda m: setitem(m.zeros(3, dtype=m.uint8), 1, -1),
    "int64 x[1] = 1e300": lambda m: setitem(m.zeros(3, dtype=m.int64), 1, 1e300),
    "empty_strided": lambda m: m.empty_strided((2, 3), (1, 2)).stride(),
    "empty_strided, strides short": lambda m: m.empty_strided((2, 3), (1,)),
    "empty_strided, a negative stride": lambda m: m.empty_strided((2,), (-1,)),
    "a 0-d tensor's lone int index": lambda m: m.tensor(1.0)[0],
    "a 0-d tensor's lone slice": lambda m: m.tensor(1.0)[:],
    "a str index": lambda m: m.zeros(3, 4)["a"],
    "a float index": lambda m: m.zeros(3, 4)[1.5],
}


@pytest.mark.parametrize("name", CASES)
def test_what_torch_gives(name):
    assert outcome(descent, CASES[name]) == outcome(torch, CASES[name])


def delitem(m):
    x = m.zeros(2)
    del x[0]


def test_deleting_an_item_is_torchs_error():
    assert outcome(descent, delitem) == outcome(torch, delitem)


# Note [Indexing in C]: the ops x[i] runs at the top (the ops they call beneath,
# torch's as_strided under select and slice, are Note [Leaf kernels where aten
# decomposes]'s), as torch.profiler shows them on torch 2.11. The profiler runs
# in a process of its own: its Kineto subscribes to CUPTI, and a process has one
# CUPTI subscriber, which descent's device spans need in this one (run here, it
# left every later CUDA trace of the suite without its device spans).
INDEXING = ["x[0]", "x[:]", "x[...]", "x[(slice(None),)]", "x[:, 1]", "x[None, 0]", "x[True]", "x[0] = 5"]
TORCH_TOP_OPS = """
import json, sys, torch
from torch.profiler import ProfilerActivity, profile
out = {}
for code in json.loads(sys.argv[1]):
    x = torch.zeros(3, 4)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        exec(code, {"x": x})
    out[code] = [e.name for e in p.events() if e.name.startswith("aten::") and e.cpu_parent is None]
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=None)
def torch_top_ops():
    r = subprocess.run([sys.executable, "-c", TORCH_TOP_OPS, json.dumps(INDEXING)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", INDEXING)
def test_indexing_runs_torchs_ops(code):
    want = torch_top_ops()[code]
    x = descent.zeros(3, 4)
    with descent.trace() as tr:
        exec(code, {"x": x})
    spans = tr.result.spans()
    top = [s for s in spans if s["floor"] == 2][0]
    assert [s["name"] for s in spans if s["floor"] == 3 and s["parent"] == top["id"]] == want
