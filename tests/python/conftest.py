"""Shared helpers for descent's Python tests.

- `to_np(t)`: a numpy view of a descent tensor (np.asarray goes through the
  buffer protocol, so it shares the tensor's memory and strides).
- `make_tensor(rng, shape, dtype, layout, domain)`: a random descent tensor
  with the given shape and dtype, laid out as asked -- "contiguous", "offset"
  (contiguous, but starting one element into its storage), "transposed" (a
  permuted view), "stepped" (sliced with step 2 and an offset) or "expanded"
  (stride 0 along its first dim) -- together with the numpy array holding
  the same values. Zero-size and 0-d shapes work for every layout (layouts
  that cannot apply to a shape fall back to contiguous).
- fixtures: `rng` (a numpy Generator seeded from the test's name, so every
  test is deterministic and independent of the order tests run in) and
  `make` (make_tensor bound to that rng).
- `cli()`: the path of the `descent` command of the build under test.
- `run_python(code)`: runs code in a fresh interpreter (for inputs that could
  crash the runtime: a crash must fail one test, not end the whole run).

AddressSanitizer: when the package is built with DESCENT_SANITIZE, Python runs
with LD_PRELOAD=libasan.so. GCC 12's ASan then cannot find the real
__cxa_throw (libstdc++ is loaded after ASan starts, with the extension), and
the first C++ exception the runtime throws -- any TypeError or ValueError the
tests provoke -- aborts the process ("CHECK failed: real___cxa_throw != 0").
pytest_configure below re-runs pytest once with libstdc++ preloaded too (the
lasting fix: add libstdc++ to LD_PRELOAD where tests/CMakeLists.txt sets it).
"""
import ctypes.util
import math
import os
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest

import descent

# The dtypes the numpy-driven sweeps use; numpy has no bfloat16, and the
# 16-bit floats have tests of their own (test_reduced_floats.py).
DTYPES = [descent.bool, descent.int64, descent.float32, descent.float64]
FLOAT_DTYPES = [descent.float32, descent.float64]
# The narrow integers have tests of their own too (test_int_dtypes.py).
INT_DTYPES = [descent.uint8, descent.int8, descent.int16, descent.int32]
ALL_DTYPES = DTYPES + [descent.float16, descent.bfloat16] + INT_DTYPES  # descent's order (ScalarType, dtype.h)
NP_DTYPE = {descent.bool: np.bool_, descent.int64: np.int64,
            descent.float32: np.float32, descent.float64: np.float64}
LAYOUTS = ["contiguous", "offset", "transposed", "stepped", "expanded"]
# The devices the device tests run on: sim:0 everywhere, cuda:0 where there is a GPU.
needs_cuda = pytest.mark.skipif(not descent.cuda.is_available(), reason="no CUDA device here")
DEVICES = ["sim:0", pytest.param("cuda:0", marks=needs_cuda)]
# (op name, dtype) pairs the runtime refuses with TypeError, as PyTorch does.
def op_key(op):
    """A short name for a row of descent._C._ops(): its Python name ("add" for
    aten::add.Tensor) where no other row has that name, else the name and the
    overload ("max.dim", "sum.dim_IntList"; "max" and "sum" for the rows without one)."""
    same = [o for o in descent._C._ops() if o["python_name"] == op["python_name"]]
    return op["python_name"] if len(same) == 1 or not op["overload"] else f"{op['python_name']}.{op['overload']}"


# The rows with a sample call and a reference: all but c10d's collectives, which need a process
# group (test_distributed.py holds them to what one process computes).
OPS_BY_KEY = {op_key(op): op for op in descent._C._ops() if op["kind"] != "collective"}


def op_function(op):
    """The Python function of a row of the op table: descent.add, or descent._C._nn.linear
    for the ops PyTorch keeps in torch._C._nn (python_module: nn), or descent.ops.aten.threshold_backward
    for those PyTorch binds no function for (hidden)."""
    if op["python_module"] == "hidden":
        return getattr(descent.ops.aten, op["python_name"])
    return getattr(descent._C._nn if op["python_module"] == "nn" else descent, op["python_name"])


UNSUPPORTED = {("sub", descent.bool), ("neg", descent.bool), ("mean", descent.bool), ("mean", descent.int64),
               ("mean.dim", descent.bool), ("mean.dim", descent.int64), ("sub_", descent.bool),
               ("div_", descent.bool), ("div_", descent.int64),
               ("matmul", descent.bool), ("mm", descent.bool), ("bmm", descent.bool), ("dot", descent.bool),
               ("mv", descent.bool), ("rand", descent.bool), ("rand", descent.int64),
               ("randn", descent.bool), ("randn", descent.int64), ("abs", descent.bool), ("relu", descent.bool),
               ("linspace", descent.bool), ("addmm", descent.bool), ("linear", descent.bool),
               ("mse_loss", descent.bool), ("mse_loss", descent.int64), ("rsub", descent.bool),
               ("pow.Tensor_Tensor" if "pow.Tensor_Tensor" in OPS_BY_KEY else "pow", descent.bool)}
# Issue 42's (a learner's first ops): floats only, no Bool kernel, a zero divisor among the integers of
# floor_divide's sample, and clamp_'s float bounds, which an integer or bool self cannot hold.
UNSUPPORTED |= {(n, dt) for dt in (descent.bool, descent.int64)
                for n in ("rand_like", "randn_like", "uniform_", "normal_", "floor_divide", "var", "var.dim",
                          "var.correction", "std", "std.dim", "std.correction", "clamp_", "linalg_vector_norm",
                          "multinomial")}
UNSUPPORTED |= {("argmax", descent.bool), ("argmin", descent.bool), ("topk", descent.bool), ("randperm", descent.bool)}
UNSUPPORTED |= {("randint_like.low_dtype", descent.bool), ("randint_like.low_dtype", descent.uint8)}  # from -3
import nn_op_rows  # noqa: E402  (torch.nn's rows: what their samples refuse)
UNSUPPORTED |= nn_op_rows.UNSUPPORTED_NN
# What PyTorch refuses on int64 it refuses on the narrower integers.
UNSUPPORTED |= {(name, dt) for name, i64 in list(UNSUPPORTED) if i64 is descent.int64 for dt in INT_DTYPES}
UNSUPPORTED.add(("linspace", descent.uint8))  # its sample starts at -2.5, which uint8 cannot hold
# Shapes the tests sweep: 0-d, zero-size, 1-D to 4-D, size-1 dims.
SHAPES = [(), (1,), (0,), (5,), (2, 3), (0, 3), (3, 0), (1, 4), (3, 1, 4), (2, 3, 4), (2, 1, 3, 2)]


def dtype_id(dt):
    return repr(dt).replace("descent.", "")


def np_dtype(dt):
    return NP_DTYPE[dt]


def to_np(t):
    """The tensor's own memory as a numpy array (no copy; strides kept)."""
    return np.asarray(t)


def random_array(rng, shape, dtype, domain="any"):
    """Random values of a descent dtype, as numpy: floats in [-4, 4) (or
    [0.1, 2.1) for domain "positive"), ints in [-10, 10) (or [0, 4)), bools
    half True."""
    if dtype is descent.bool:
        return rng.random(shape) < 0.5
    if dtype is descent.int64:
        lo, hi = (0, 4) if domain == "positive" else (-10, 10)
        return rng.integers(lo, hi, size=shape, dtype=np.int64)
    if domain == "positive":
        a = 0.1 + 2 * rng.random(shape)
    else:
        a = 8 * rng.random(shape) - 4
    return np.asarray(a, dtype=np_dtype(dtype))


def make_tensor(rng, shape, dtype=descent.float32, layout="contiguous", domain="any"):
    """(descent tensor, numpy array of the same values) with the given layout."""
    shape = tuple(shape)
    nd = len(shape)
    if layout == "transposed" and nd >= 2:
        base = random_array(rng, shape[::-1], dtype, domain)
        t = descent.tensor(base).permute(*range(nd - 1, -1, -1))
        expected = base.transpose()
    elif layout == "offset":
        base = random_array(rng, (1 + math.prod(shape),), dtype, domain)
        t = descent.tensor(base)[1:].view(*shape) if nd else descent.tensor(base)[1]
        expected = base[1:].reshape(shape)
    elif layout == "stepped" and nd >= 1:
        base = random_array(rng, tuple(2 * s + 1 for s in shape), dtype, domain)
        index = (slice(1, None, 2),) * nd
        t = descent.tensor(base)[index]
        expected = base[index]
    elif layout == "expanded" and nd >= 1:
        base = random_array(rng, (1,) + shape[1:], dtype, domain)
        t = descent.tensor(base).expand(*shape)
        expected = np.broadcast_to(base, shape)
    else:
        expected = random_array(rng, shape, dtype, domain)
        t = descent.tensor(expected)
    assert tuple(t.shape) == shape and t.dtype is dtype
    return t, np.array(expected)


def pytest_configure(config):
    preload = os.environ.get("LD_PRELOAD", "")
    if "libasan" not in preload or "libstdc++" in preload or os.environ.get("_DESCENT_TESTS_REEXEC"):
        return
    libstdcxx = ctypes.util.find_library("stdc++")
    if not libstdcxx:
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=True)  # give the real stdout/stderr back before exec
    print(f"conftest: ASan preloaded without libstdc++: re-running with LD_PRELOAD={preload}:{libstdcxx}",
          file=sys.stderr, flush=True)
    env = dict(os.environ, LD_PRELOAD=f"{preload}:{libstdcxx}", _DESCENT_TESTS_REEXEC="1")
    os.execve(sys.executable, sys.orig_argv, env)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def make(rng):
    def _make(shape, dtype=descent.float32, layout="contiguous", domain="any"):
        return make_tensor(rng, shape, dtype, layout, domain)
    return _make


@pytest.fixture(autouse=True)
def _quiet_numpy():
    """The numpy references divide by zero and take means of nothing on purpose."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.fixture(autouse=True)
def _restore_kernel_variant():
    """Tests that switch kernel variants must not leak the switch."""
    yield
    descent.set_kernel_variant("auto")


def cli():
    """The `descent` command of the build: $DESCENT_CLI, else the script
    next to the build's python/ directory."""
    path = os.environ.get("DESCENT_CLI")
    if path:
        return path
    build_python = os.path.dirname(descent.__path__[0])
    return os.path.normpath(os.path.join(build_python, "..", "descent"))


def python_env(**extra):
    """The environment for a child interpreter: it imports this descent."""
    env = dict(os.environ)
    build_python = os.path.dirname(descent.__path__[0])
    env["PYTHONPATH"] = build_python + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_python(code, timeout=60, **env):
    """Runs `code` in a child interpreter; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=python_env(**env))
