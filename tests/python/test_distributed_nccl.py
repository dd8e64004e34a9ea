"""descent.distributed over NCCL with one rank (issue 20, on the H200 host): every collective on a
CUDA tensor gives what one process computes; Work.wait() makes the current stream wait for NCCL's
and the host goes on (Note [NCCL's own stream], floors/distributed/process_group_nccl.h); the
trace shows the launch on floor 8 and NCCL's own kernel on the device clock, joined to it; the
watchdog ends a collective that runs past the timeout (Note [NCCL's watchdog]). Skipped
where descent was built without NCCL or there is no GPU."""
import importlib.util
import os
import re
import resource
import socket
import subprocess
import sys
import threading

import pytest

import descent
from descent import _C

pytestmark = pytest.mark.skipif(not (_C._dist_have_nccl() and descent.cuda.is_available()),
                                reason="descent was built without NCCL, or there is no GPU")

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = r'''
import descent, descent.distributed as dist
def same(a, b):
    return a.cpu().tolist() == b.cpu().tolist()
dist.init_process_group("nccl")
assert dist.get_backend() == "nccl" and dist.get_rank() == 0 and dist.get_world_size() == 1
x = descent.arange(8, dtype=descent.float32, device="cuda") * 1.5
y = x.clone()
dist.all_reduce(y)
assert same(y, x), y
for op in (dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
    z = x.clone(); dist.all_reduce(z, op=op); assert same(z, x)
a = x.clone(); dist.all_reduce(a, op=dist.ReduceOp.AVG); assert same(a, x)
h = x.to(descent.bfloat16); dist.all_reduce(h); assert same(h, x.to(descent.bfloat16))
b = x.clone(); dist.broadcast(b, src=0); assert same(b, x)
outs = [descent.empty(8, device="cuda")]
dist.all_gather(outs, x); assert same(outs[0], x)
r = descent.empty(8, device="cuda"); dist.reduce_scatter(r, [x]); assert same(r, x)
w = dist.all_reduce(x.clone(), async_op=True)
w.wait()  # the current stream waits for NCCL's; the host goes on
descent.cuda.synchronize()  # now the host waits for the current stream, which waited for NCCL's
assert w.is_completed()  # asked of NCCL's event, not assumed from wait()
try:
    dist.all_reduce(descent.ones(2, dtype=descent.int16, device="cuda"))
except TypeError as e:  # PyTorch's words (tests/python/data/torch_c10d_facts_h200.txt)
    assert "Input tensor data type is not supported for NCCL process group: Short" in str(e), e
else:
    raise AssertionError("int16 was taken")
t = descent.tensor([True, False], device="cuda"); dist.all_reduce(t); assert t.tolist() == [True, False]
try:
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
except TypeError as e:  # PyTorch's words
    assert "Cannot use ReduceOp.AVG with boolean inputs" in str(e), e
else:
    raise AssertionError("AVG of bools was taken")
dist.barrier()
try:
    dist.all_reduce(descent.ones(2))
except RuntimeError as e:  # PyTorch's words
    assert "No backend type associated with device type cpu" in str(e), e
else:
    raise AssertionError("a CPU tensor was taken")
dist.destroy_process_group()
print("nccl ok")
'''


def run_cli(*args):
    cli = os.environ.get("DESCENT_CLI") or None
    cmd = [cli, *args] if cli else [sys.executable, "-m", "descent", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_every_collective_with_one_rank(tmp_path):
    script = tmp_path / "nccl1.py"
    script.write_text(SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "nccl ok" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def test_the_trace_shows_nccls_launch_and_its_kernel_on_the_device_clock(tmp_path):
    # With one rank, NCCL leaves an in-place sum alone: no device work at all (PyTorch's profile of
    # the same call shows none either: torch_c10d_facts_h200.txt). An average is a sum times 1/1,
    # which NCCL does with a kernel of its own: that one shows on the device clock, joined to the
    # launch by its correlation id.
    code = ('import descent.distributed as dist\ndist.init_process_group("nccl")\n'
            'x = descent.ones(1024, device="cuda")\ndist.all_reduce(x)\n'
            'dist.all_reduce(x, op=dist.ReduceOp.AVG)\ndescent.cuda.synchronize()')
    path = tmp_path / "nccl.descent"
    r = run_cli("trace", code, "--save", str(path))
    assert r.returncode == 0, r.stderr[-3000:]
    r = run_cli("replay", str(path))
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    # c10d::allreduce_ on the dispatcher, its CUDA kernel handing the call to nccl (Note [Collectives are c10d ops]).
    assert any(re.search(r"\[3 dispatch *\] c10d::allreduce_  keyset=CUDA\|.*AutogradCUDA kernel=AutogradCUDA", ln)
               for ln in lines), r.stdout
    assert any(re.search(r"\[5 kernels *\] c10d::allreduce_  backend=nccl device=cuda", ln) for ln in lines), r.stdout
    assert any(re.search(r"\[7 streams *\] NCCL's stream waits for the current stream", ln) for ln in lines), r.stdout
    launches = [re.search(r"correlation=(\d+)", ln).group(1) for ln in lines
                if re.search(r"\[8 launch *\] cudaLaunchKernel  kernel=ncclAllReduce", ln)]
    assert len(launches) == 2, r.stdout
    device = [ln for ln in lines if re.search(r"^\s*\[9 [a-z]+ *\]", ln)]
    assert not any(re.search(rf"correlation={launches[0]}\b", ln) for ln in device), r.stdout  # the sum: nothing to do
    assert any(re.search(rf"correlation={launches[1]}\b", ln) for ln in device), r.stdout  # the average: NCCL's kernel


# Note [NCCL's watchdog]: the compute stream spins for about 20 s (descent.cuda._sleep; more where
# the clock runs slower), the all_reduce waits for it (Note [NCCL's own stream], step 1), and the
# group's timeout is one second: the watchdog must end the process within a few seconds, in
# PyTorch's words. A first all_reduce before the spin makes the communicator: PyTorch makes its
# own at the first collective, and doing so waits for the device, which would let the spin end
# first. The same script under torch, where torch is here, prints the same WorkNCCL(...) (seen on
# the H200 host with PyTorch 2.11: "[Rank 0] Watchdog caught collective operation timeout:
# WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=1000) ran for 1041
# milliseconds before timing out."); torch then dumps its debug information and had not ended 40 s
# later, so its process is read until that line and then killed.
WATCHDOG = r"""
import datetime, sys, time
import {lib} as torch, {lib}.distributed as dist
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=1))
dist.all_reduce(torch.ones(1, device="cuda"))
torch.cuda.synchronize()
x = torch.ones(4, device="cuda")
torch.cuda._sleep(40_000_000_000)
dist.all_reduce(x)
print("enqueued", flush=True)
time.sleep(60)
print("not ended", flush=True)
"""
WORK = re.compile(r"\[Rank 0\] Watchdog caught collective operation timeout: (WorkNCCL\(.*?\)) ran for (\d+) "
                  r"milliseconds before timing out\.")


def watchdog_script(tmp_path, lib):
    script = tmp_path / f"watchdog_{lib}.py"
    script.write_text(WATCHDOG.format(lib=lib))
    with socket.socket() as s:  # a free port for torch's store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
    return [sys.executable, str(script)], env


def no_core_file():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort with a GPU context would write a large one


def test_the_watchdog_ends_a_collective_that_runs_past_the_timeout(tmp_path):
    import time
    cmd, env = watchdog_script(tmp_path, "descent")
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, preexec_fn=no_core_file)
    took = time.monotonic() - t0
    assert "enqueued" in r.stdout and "not ended" not in r.stdout, r.stdout + r.stderr[-3000:]
    assert r.returncode == -6, (r.returncode, r.stderr[-3000:])  # SIGABRT, as PyTorch's terminate
    m = WORK.search(r.stderr)
    assert m, r.stderr[-3000:]
    assert m.group(1) == "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=1000)", m.group(0)
    assert 1000 <= int(m.group(2)) < 3000, m.group(0)
    assert "To avoid data inconsistency, we are taking the entire process down." in r.stderr, r.stderr[-3000:]
    assert took < 30, took  # not the 20 s of the spin plus the 60 s of the script's sleep
    if importlib.util.find_spec("torch") is None:  # not imported here: a second CUDA runtime beside descent's
        return
    cmd, env = watchdog_script(tmp_path, "torch")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=no_core_file)
    timer = threading.Timer(90, p.kill)
    timer.start()
    try:
        mt = next((mt for mt in map(WORK.search, p.stderr) if mt), None)
    finally:
        timer.cancel()
        p.kill()
        p.wait()
    assert mt and mt.group(1) == m.group(1), mt and mt.group(0)


# Note [NCCL's watchdog]: an error NCCL finds by itself (a peer that died: ncclRemoteError, handed to the
# watchdog as NCCL would report it, since one GPU has no peer to lose) ends the process at the watchdog's
# next look, long before the timeout, naming the collective that was running, in PyTorch's words.
ASYNC_ERROR = r'''
import time, descent, descent.distributed as dist
dist.init_process_group("nccl")
dist.all_reduce(descent.ones(1, device="cuda"))
descent.cuda.synchronize()
x = descent.ones(4, device="cuda")
descent.cuda._sleep(20_000_000_000)
dist.all_reduce(x)
descent._C._dist_nccl_simulate_async_error(6)
print("enqueued", flush=True)
time.sleep(30)
print("not ended", flush=True)
'''


def test_the_watchdog_ends_the_process_on_an_error_of_nccls_own(tmp_path):
    import time
    script = tmp_path / "async_error.py"
    script.write_text(ASYNC_ERROR)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       preexec_fn=no_core_file)
    took = time.monotonic() - t0
    assert "enqueued" in r.stdout and "not ended" not in r.stdout, r.stdout + r.stderr[-3000:]
    assert r.returncode == -6, (r.returncode, r.stderr[-3000:])
    error = (r"NCCL error: remote process exited or there was a network error, NCCL version \d+\.\d+\.\d+\n"
             r"ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
             r"prematurely\.")
    assert re.search(r"\[Rank 0\] Collective WorkNCCL\(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, "
                     r"Timeout\(ms\)=600000\) raised the following async exception: " + error, r.stderr), r.stderr
    assert re.search(r"\[Rank 0\] Process group watchdog thread terminated with exception: " + error, r.stderr)
    assert "To avoid data inconsistency, we are taking the entire process down." in r.stderr, r.stderr[-3000:]
    assert took < 15, took  # the next look, not the spin's 10 s or more, nor the 10-minute timeout


def test_the_watchdog_forgets_a_collective_that_ended_in_time(tmp_path):
    # A collective that ends before the timeout, then a host that idles past it: no watchdog line, a clean end.
    code = ('import datetime, time, descent, descent.distributed as dist\n'
            'dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=1))\n'
            'x = descent.ones(4, device="cuda")\n'
            'descent.cuda._sleep(200_000_000)\n'  # about 0.1 s
            'dist.all_reduce(x)\n'
            'time.sleep(2.5)\n'
            'dist.destroy_process_group()\n'
            'print("ended", x.tolist())\n')
    script = tmp_path / "in_time.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ended [1.0, 1.0, 1.0, 1.0]" in r.stdout, r.stdout + r.stderr[-3000:]
    assert "Watchdog" not in r.stderr, r.stderr[-3000:]
