"""Intra-op parallelism from Python: descent.set_num_threads / get_num_threads.

- set_num_threads(n) then get_num_threads() gives n back; 0, negatives and
  values past 1024 raise ValueError naming the call and the range; non-ints
  raise TypeError; a refused value changes nothing;
- DESCENT_NUM_THREADS sets the default in a fresh interpreter; a bad value is
  ignored with a warning on stderr;
- a large matmul and a large add give the same bits on one thread and on
  four, and only the four-thread run shows a floor-5 "parallel_for" span
  (with its "threads" argument) inside the kernel's span; small ops never do;
- a fork()ed child's loops finish, with the same bits, on workers of its own.
See Note [Intra-op parallelism] in floors/kernels/cpu/parallel.h.
"""
import numpy as np
import pytest

import descent
from conftest import run_python, to_np


@pytest.fixture(autouse=True)
def _restore_threads():
    saved = descent.get_num_threads()
    yield
    descent.set_num_threads(saved)


def test_round_trip():
    assert descent.get_num_threads() >= 1
    for n in (1, 3, 2):
        descent.set_num_threads(n)
        assert descent.get_num_threads() == n
    assert "set_num_threads" in descent.__all__ and "get_num_threads" in descent.__all__


@pytest.mark.parametrize("bad", [0, -1, -2**40, 1025, 10**30])
def test_bad_value_raises_value_error(bad):
    descent.set_num_threads(2)
    with pytest.raises(ValueError, match=rf"set_num_threads\(\): expected a number of threads from 1 to 1024, "
                                         rf"but got {bad}$"):
        descent.set_num_threads(bad)
    assert descent.get_num_threads() == 2


@pytest.mark.parametrize("bad", [2.0, "2", True, None])
def test_non_int_raises_type_error(bad):
    with pytest.raises(TypeError, match="set_num_threads"):
        descent.set_num_threads(bad)


def test_environment_variable():
    code = "import descent; print(descent.get_num_threads())"
    default = run_python(code, DESCENT_NUM_THREADS="")
    assert default.returncode == 0, default.stderr
    assert int(default.stdout) >= 1
    three = run_python(code, DESCENT_NUM_THREADS="3")
    assert three.returncode == 0 and int(three.stdout) == 3, three.stderr
    for bad in ("0", "-4", "many", "2x"):
        r = run_python(code, DESCENT_NUM_THREADS=bad)
        assert r.returncode == 0 and r.stdout == default.stdout, r.stderr
        assert f"ignoring DESCENT_NUM_THREADS={bad}" in r.stderr


def traced(fn):
    with descent.trace(python_functions=False) as t:
        out = fn()
    return out, t.result.spans()


def parallel_spans(spans):
    by_id = {s["id"]: s for s in spans}
    found = [s for s in spans if s["name"] == "parallel_for"]
    for s in found:
        assert s["floor"] == 5 and by_id[s["parent"]]["floor"] == 5, "inside the kernel's own span"
    return found


def run_both(fn):
    """fn() on one thread, then on four: (serial, parallel, spans of the four-thread run)."""
    descent.set_num_threads(1)
    serial, spans1 = traced(fn)
    assert parallel_spans(spans1) == []
    descent.set_num_threads(4)
    parallel, spans4 = traced(fn)
    return to_np(serial), to_np(parallel), spans4


def test_matmul_same_bits_on_one_thread_and_four():
    descent.manual_seed(3)
    a, b = descent.randn(257, 129), descent.randn(129, 65)
    serial, parallel, spans = run_both(lambda: a @ b)
    assert serial.tobytes() == parallel.tobytes()
    # The packed product is one loop of the pool: packing and tasks in one list (Note [Packed matmul]).
    found = parallel_spans(spans)
    assert len(found) == 1 and found[0]["args"]["threads"] >= 2
    np.testing.assert_allclose(parallel, to_np(a).astype(np.float64) @ to_np(b), rtol=1e-4, atol=1e-4)


def test_add_same_bits_on_one_thread_and_four():
    descent.manual_seed(4)
    a, b = descent.randn(1 << 20), descent.randn(1 << 20)
    serial, parallel, spans = run_both(lambda: descent.add(a, b, alpha=0.5))
    assert serial.tobytes() == parallel.tobytes()
    assert np.array_equal(parallel, to_np(a) + np.float32(0.5) * to_np(b))
    assert len(parallel_spans(spans)) == 1


def test_small_ops_stay_on_the_calling_thread():
    descent.set_num_threads(4)
    x = descent.ones(3, 3)
    _, spans = traced(lambda: (x + 1) @ x)
    assert parallel_spans(spans) == []


def test_fork_child_gets_its_own_pool():
    """A fork()ed child has none of its parent's workers (only the forking
    thread survives a fork): its loops still finish, give the same bits, and
    start workers of the child's own (threads listed in /proc/self/task)."""
    code = """
import os
import descent
descent.set_num_threads(2)
a = descent.randn(1 << 20)
want = (a + a).tolist()  # the parent's pool starts here
pid = os.fork()
if pid == 0:
    with descent.trace(python_functions=False) as t:
        got = (a + a).tolist()
    went_parallel = any(s["name"] == "parallel_for" for s in t.result.spans())
    threads = len(os.listdir("/proc/self/task"))
    os._exit(0 if got == want and went_parallel and threads >= 2 else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", r.stdout + r.stderr
