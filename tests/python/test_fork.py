"""Devices after fork(), as PyTorch has them (Note [Devices after fork],
floors/streams/streams.cpp):

- a child forked after the parent used sim:0 has none of its stream workers:
  every use of sim:0 there (an op, a new tensor, a copy to the host, a
  stream, a synchronize) raises RuntimeError, "Cannot re-initialize sim in
  forked subprocess. To use sim with multiprocessing, you must use the
  'spawn' start method", where it used to wait for ever; what is not a use
  (is_available, device_count) still answers, and the CPU keeps working;
- a child forked before sim:0 was ever used uses it as a fresh process would;
- a child of a parent whose CPU loops ran on the thread pool runs its own
  loops to the end, with the same bits, traced (the end of a recording does
  not wait for the parent's sim:0);
- multiprocessing's "fork" start method shows the error in the worker, and
  the "spawn" method that the message names works;
- on a GPU machine, the same for cuda:0 with PyTorch's words verbatim.

Every test runs in an interpreter of its own, in a session of its own that a
timeout kills whole, and each forked child arms an alarm first: a hang fails
the test, never the run.
"""
import os
import signal
import subprocess
import sys

import pytest

from conftest import needs_cuda, python_env

SIM_MESSAGE = ("Cannot re-initialize sim in forked subprocess. To use sim with multiprocessing, "
               "you must use the 'spawn' start method")
CUDA_MESSAGE = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method")

# What every script starts with: fork_child(fn) forks, runs fn in the child
# (under an alarm: a child that waits for ever dies of SIGALRM) and returns
# what fn returned, sent back through a pipe, with the child's exit code.
PRELUDE = r'''
import json, os, signal, sys
import descent

def fork_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.alarm(30)
        try:
            out = fn()
        except BaseException as e:
            out = {"uncaught": type(e).__name__ + ": " + str(e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    return (json.loads(text) if text else None), os.waitstatus_to_exitcode(status)

def error_of(fn):
    try:
        fn()
    except RuntimeError as e:
        return "RuntimeError: " + str(e)
    except BaseException as e:
        return "wrong error: " + type(e).__name__ + ": " + str(e)
    return "no error"
'''


def run_script(code, tmp_path, timeout=120):
    """Runs PRELUDE + code as a script in a fresh interpreter, in a session of
    its own: on a timeout the whole process group (forked children included)
    is killed and the test fails."""
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + code)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=python_env(), start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"the script hung for {timeout} s:\n{out}\n{err}")
    assert p.returncode == 0, out + err
    return out, err


def results(out):
    """The script's last line, a dict printed with repr."""
    return eval(out.strip().splitlines()[-1])


def test_child_of_a_parent_that_used_sim_raises(tmp_path):
    out, _ = run_script(r'''
x = descent.ones(4, device="sim:0")
assert (x + 1).sum().item() == 8.0  # sim:0's default stream has a worker from here on

def child():
    return {
        "op": error_of(lambda: (x + 1).sum().item()),
        "new tensor": error_of(lambda: descent.ones(2, device="sim:0")),
        "to the host": error_of(lambda: x.cpu()),
        "stream": error_of(lambda: descent.sim.Stream()),
        "synchronize": error_of(lambda: descent.sim.synchronize()),
        "event": error_of(lambda: descent.sim.Event().record()),
        "available": [descent.sim.is_available(), descent.sim.device_count()],
        "bad fork": descent.sim._is_in_bad_fork(),
        "cpu": (descent.ones(3) * 2).tolist(),
    }

got, code = fork_child(child)
got["exit"] = code
got["parent after"] = (x + 2).sum().item()  # the parent's workers are still there
got["parent bad fork"] = descent.sim._is_in_bad_fork()
print(repr(got))
''', tmp_path)
    got = results(out)
    assert got["exit"] == 0, got
    for use in ("op", "new tensor", "to the host", "stream", "synchronize", "event"):
        assert got[use] == "RuntimeError: " + SIM_MESSAGE, (use, got)
    assert got["available"] == [True, 1]
    assert got["bad fork"] is True and got["parent bad fork"] is False  # torch.cuda._is_in_bad_fork's answers
    assert got["cpu"] == [2.0, 2.0, 2.0]
    assert got["parent after"] == 12.0


def test_child_forked_before_sim_was_used_uses_it(tmp_path):
    out, _ = run_script(r'''
a = descent.arange(6.0)  # the CPU only: sim:0 has no worker yet
def child():
    y = descent.ones(4, device="sim:0") + a[:4].to("sim:0")
    assert not descent.sim._is_in_bad_fork()
    s = descent.sim.Stream()
    s.wait_stream(descent.sim.current_stream())  # y is made on the default stream
    with descent.sim.stream(s):
        z = y * 2
    descent.sim.synchronize()
    return {"y": y.cpu().tolist(), "z": z.cpu().tolist()}

got, code = fork_child(child)
print(repr({"exit": code, **got}))
''', tmp_path)
    got = results(out)
    assert got == {"exit": 0, "y": [1.0, 2.0, 3.0, 4.0], "z": [2.0, 4.0, 6.0, 8.0]}, got


def test_child_runs_its_cpu_loops_on_threads_of_its_own(tmp_path):
    out, _ = run_script(r'''
descent.set_num_threads(2)
descent.manual_seed(3)
a = descent.randn(1 << 20)
with descent.trace(python_functions=False) as t:
    want = (a * 3 + a).tolist()  # large enough to go parallel: the parent's pool starts here
parent_parallel = any(s["name"] == "parallel_for" for s in t.result.spans())
(descent.ones(2, device="sim:0") + 1).cpu()  # and the parent used sim:0 too

def child():
    with descent.trace(python_functions=False) as t:  # its end must not wait for the parent's sim:0
        got = (a * 3 + a).tolist()
    return {"same": got == want,
            "parallel": any(s["name"] == "parallel_for" for s in t.result.spans()),
            "sim": error_of(lambda: descent.ones(1, device="sim:0") + 1)}

got, code = fork_child(child)
print(repr({"exit": code, "parent parallel": parent_parallel, **got}))
''', tmp_path)
    got = results(out)
    assert got == {"exit": 0, "parent parallel": True, "same": True, "parallel": True,
                   "sim": "RuntimeError: " + SIM_MESSAGE}, got


def test_multiprocessing_fork_worker_shows_the_error(tmp_path):
    out, err = run_script(r'''
import multiprocessing as mp

x = descent.ones(4, device="sim:0")
(x * 2).cpu()

def uses_sim():
    signal.alarm(30)
    print("worker got", (x * 2).cpu().tolist(), flush=True)  # raises: the worker was forked after sim:0 started

def sums_on_sim(q):
    q.put((descent.ones(4, device="sim:0") + 1).sum().item())

if __name__ == "__main__":
    forked = mp.get_context("fork").Process(target=uses_sim)
    forked.start()
    forked.join(60)
    spawn = mp.get_context("spawn")
    q = spawn.SimpleQueue()
    spawned = spawn.Process(target=sums_on_sim, args=(q,))
    spawned.start()
    spawned.join(120)
    print(repr({"fork exit": forked.exitcode, "spawn exit": spawned.exitcode,
                "spawn sum": q.get() if spawned.exitcode == 0 else None}))
''', tmp_path, timeout=240)
    got = results(out)
    assert got == {"fork exit": 1, "spawn exit": 0, "spawn sum": 8.0}, out + err
    assert "worker got" not in out
    assert "RuntimeError: " + SIM_MESSAGE in err, err  # multiprocessing prints the worker's traceback


@needs_cuda
def test_child_of_a_parent_that_used_cuda_raises(tmp_path):
    out, _ = run_script(r'''
x = descent.ones(4, device="cuda:0")
assert (x + 1).sum().item() == 8.0

def child():
    return {
        "op": error_of(lambda: (x + 1).sum().item()),
        "new tensor": error_of(lambda: descent.ones(2, device="cuda:0")),
        "stream": error_of(lambda: descent.cuda.Stream()),
        "synchronize": error_of(lambda: descent.cuda.synchronize()),
        "available": [descent.cuda.is_available(), descent.cuda.device_count() > 0],
        "sim": (descent.ones(2, device="sim:0") + 1).cpu().tolist(),  # never used in the parent
    }

got, code = fork_child(child)
print(repr({"exit": code, **got}))
''', tmp_path)
    got = results(out)
    assert got["exit"] == 0, got
    for use in ("op", "new tensor", "stream", "synchronize"):
        assert got[use] == "RuntimeError: " + CUDA_MESSAGE, (use, got)
    assert got["available"] == [True, True]
    assert got["sim"] == [2.0, 2.0]
