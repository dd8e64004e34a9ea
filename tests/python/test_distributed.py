"""descent.distributed over MPI (issue 20): `descent run --nproc N` starts N ranks
under mpirun, and every collective (all_reduce sync and async, broadcast, all_gather,
reduce_scatter, barrier), on CPU and sim:0 tensors, gives on every rank what one process computes
(tests/python/distributed/collectives.py). Skipped where descent was built without MPI."""
import os
import re
import select
import shutil
import subprocess
import sys
import time

import pytest

import descent
import descent.distributed as dist
from descent import _C

HERE = os.path.dirname(os.path.abspath(__file__))
needs_mpi = pytest.mark.skipif(not (_C._dist_have_mpi() and shutil.which("mpirun")),
                               reason="descent was built without MPI, or there is no mpirun")


def run(nproc, script, timeout=180, args=()):
    return subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", str(nproc), script, *args],
                          capture_output=True, text=True, timeout=timeout)


@needs_mpi
@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_every_collective_gives_what_one_process_computes(nproc):
    r = run(nproc, os.path.join(HERE, "distributed", "collectives.py"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # mpirun interleaves the ranks' output: read each rank's line wherever it landed.
    assert sorted(re.findall(r"rank (\d+) of (\d+): ok", r.stdout)) == [(str(k), str(nproc)) for k in range(nproc)]


@needs_mpi
@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_ddp_trains_as_one_process_on_the_whole_batch(nproc):
    """Note [DDP's buckets]: 20 SGD steps of an MLP, each rank on its share of the batch, give the
    parameters one process gets on the whole batch within 2e-6; the first bucket's all_reduce
    starts before backward has made the other gradients."""
    r = run(nproc, os.path.join(HERE, "distributed", "ddp.py"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert sorted(re.findall(r"rank (\d+) of (\d+): ddp ok", r.stdout)) == [(str(k), str(nproc)) for k in range(nproc)]


@needs_mpi
@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_pair_up_on_the_caller_and_the_worker_alike(nproc):
    r = run(nproc, os.path.join(HERE, "distributed", "paths.py"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert sorted(re.findall(r"rank (\d+) of (\d+): paths ok", r.stdout)) == [(str(k), str(nproc)) for k in range(nproc)]


@needs_mpi
def test_ranks_that_disagree_on_a_shape_are_told_not_left_hanging():
    r = run(2, os.path.join(HERE, "distributed", "mismatch.py"), timeout=60)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert sorted(re.findall(r"rank (\d+) of 2: mismatch ok", r.stdout)) == ["0", "1"], r.stdout


@needs_mpi
def test_descent_run_trace_merges_the_ranks_onto_one_timeline(tmp_path):
    """Note [Merging the ranks' traces]: one trace per rank, merged; each rank's rows named by it;
    every rank's MPI calls (DDP's on the MPI worker, its first broadcasts on the caller); the k-th of
    each joined across the ranks."""
    out = tmp_path / "traces"
    r = subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", "2", "--trace", str(out),
                        os.path.join(HERE, "distributed", "ddp.py")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "2 ranks traced" in r.stderr and (out / "merged.descent").exists(), r.stderr
    t = _C._load_trace(str(out / "merged.descent"))
    assert t.check() == "", t.check()
    meta = t.metadata
    assert meta["ranks"] == "2"
    rank_of = {int(k.split(".")[1]): int(v) for k, v in meta.items() if k.startswith("thread.") and k.endswith(".rank")}
    assert set(rank_of.values()) == {0, 1}
    assert all(meta[f"thread.{th}"].startswith(f"rank {rk}: ") for th, rk in rank_of.items())
    spans = t.spans()
    by_id = {s["id"]: s for s in spans}
    calls = [[s for s in spans if s["name"] == "MPI_Allreduce" and rank_of[s["thread"]] == rk] for rk in (0, 1)]
    assert len(calls[0]) == len(calls[1]) >= 60, [len(c) for c in calls]  # 3 buckets x 20 steps, and more
    joined = [(src, dst) for src, dst, name in t.flows() if name == "collective"]
    assert len(joined) >= len(calls[0])
    for src, dst in joined:
        a, b = by_id[src], by_id[dst]
        assert a["name"] == b["name"] and (rank_of[a["thread"]], rank_of[b["thread"]]) == (0, 1)


@needs_mpi
def test_a_script_that_never_destroys_its_group_ends_cleanly(tmp_path):
    script = tmp_path / "no_destroy.py"
    script.write_text("import descent, descent.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "x = descent.ones(3)\n"
                      "dist.all_reduce(x)\n"
                      "print(f'rank {dist.get_rank()}: sum {x.tolist()}', flush=True)\n")
    r = run(2, str(script))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # One write per line (an f-string), read wherever mpirun's interleaving put it.
    assert sorted(re.findall(r"rank (\d): sum \[2\.0, 2\.0, 2\.0\]", r.stdout)) == ["0", "1"], r.stdout


def test_a_collective_before_init_is_pytorchs_error():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="the default process group is not nccl's"):
        _C._dist_nccl_simulate_async_error(6)  # Note [NCCL's watchdog]'s stand-in needs an nccl group
    with pytest.raises(ValueError, match="Default process group has not been initialized, please make sure to "
                                         "call init_process_group."):
        dist.all_reduce(descent.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()


def test_backends_it_does_not_have_say_so():
    with pytest.raises(ValueError, match="Invalid backend: 'gloo'"):
        dist.init_process_group("gloo")
    if not _C._dist_have_nccl():  # PyTorch's RuntimeError where NCCL is not built in
        with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
            dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_descent_run_names_what_is_wrong(tmp_path):
    r = run(2, str(tmp_path / "missing.py"))
    assert r.returncode == 2 and "no such script" in r.stderr, r.stderr


@needs_mpi
def test_a_rank_that_raises_ends_the_job_and_is_named(tmp_path):
    """Note [A failed rank ends the job]: rank 1 raises while rank 0 waits for it in an all_reduce;
    the job ends at once (it used to wait for the collective's 30-minute timeout), the launcher names
    rank 1 and its exception, the traceback starts at the script, and the exit code is 1."""
    script = tmp_path / "fail.py"
    script.write_text("import descent, descent.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "if dist.get_rank() == 1:\n"
                      "    raise ValueError('rank one broke')\n"
                      "x = descent.ones(3)\n"
                      "dist.all_reduce(x)\n")
    start = time.monotonic()
    r = run(2, str(script), timeout=60)
    assert time.monotonic() - start < 45
    assert r.returncode == 1, r.stderr
    assert "descent run: rank 1 of 2 failed (exit code 1): ValueError: rank one broke" in r.stderr, r.stderr
    assert 'File "' + str(script) + '", line 4, in <module>' in r.stderr, r.stderr
    assert "__main__.py" not in r.stderr.split("Traceback", 1)[1].split("ValueError", 1)[0], r.stderr


@needs_mpi
def test_a_rank_that_exits_non_zero_ends_the_job(tmp_path):
    script = tmp_path / "exit.py"
    script.write_text("import sys, descent, descent.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "if dist.get_rank() == 0:\n"
                      "    sys.exit(3)\n"
                      "dist.barrier()\n")
    r = run(2, str(script), timeout=60)
    assert r.returncode == 1 and "rank 0 of 2 failed (exit code 3): exited with sys.exit(3)" in r.stderr, r.stderr


@needs_mpi
def test_the_scripts_folder_comes_first_on_sys_path(tmp_path):
    """As `python script.py`: the script's own folder, not the current directory, is sys.path[0],
    so `import helper` finds the helper beside the script."""
    (tmp_path / "helper.py").write_text("WHERE = 'beside the script'\n")
    (tmp_path / "main.py").write_text("import sys, helper\nprint('path0', sys.path[0], helper.WHERE)\n")
    r = subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", "1", str(tmp_path / "main.py")],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    assert f"path0 {tmp_path} beside the script" in r.stdout, r.stdout


# [SECTION] The collectives are c10d:: ops (Note [Collectives are c10d ops]) ------------------

def torch_c10d_schemas():
    """The schemas PyTorch 2.11 printed on the H200 host (tools/torch-c10d-facts.py)."""
    with open(os.path.join(HERE, "data", "torch_c10d_facts_h200.txt")) as f:
        return dict(re.findall(r"^SCHEMA (\S+) => (.*)$", f.read(), re.M))


def argument_names(schema):
    args = schema.split("(", 1)[1].rsplit(") ->", 1)[0]
    return [a.strip().rsplit(" ", 1)[1].split("=")[0] for a in args.split(",")]


def test_the_collectives_are_rows_of_the_op_table_with_pytorchs_names_and_arguments():
    torch_schemas = torch_c10d_schemas()
    rows = [op for op in descent._C._ops() if op["kind"] == "collective"]
    assert [op["name"] for op in rows] == ["c10d::allreduce_", "c10d::broadcast_", "c10d::allgather_",
                                           "c10d::reduce_scatter_", "c10d::barrier"]
    for op in rows:
        # PyTorch registers them at CPU, CUDA and PrivateUse1 (Ops.cpp's REGISTER_C10D_OP); Sim stands for the last.
        assert op["dispatch"] == "CPU, Sim, CUDA", op
        assert op["python_module"] == "hidden" and not hasattr(descent, op["python_name"]), op
        # The same arguments in the same order; the types differ only as the Note lists.
        assert argument_names(op["schema"]) == argument_names(torch_schemas[op["python_name"]]), op
        assert callable(getattr(descent.ops.c10d, op["python_name"]))


@needs_mpi
def test_a_collective_descends_the_floors_as_an_op(tmp_path):
    """all_reduce is a call of c10d::allreduce_: the dispatcher's key set from the tensor, autograd's
    kernel that records nothing, the CPU kernel asking the group for its backend, then the MPI call on
    the caller (Note [A synchronous collective runs on its caller]); with async_op, MPI's queue."""
    script = tmp_path / "one.py"
    script.write_text("import descent, descent.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "x = descent.ones(3, requires_grad=True) * 1\n"
                      "dist.all_reduce(x)\n"
                      "dist.all_reduce(x, async_op=True).wait()\n"
                      "try:\n"
                      "    descent.ops.c10d.allreduce_([x], 1, 0, None, False, -1)\n"
                      "except ValueError as e:\n"
                      "    assert 'process_group 1 is not a group descent has' in str(e), e\n"
                      "else:\n"
                      "    raise AssertionError('group 1 was taken')\n"
                      "dist.destroy_process_group()\n")
    trace_dir = tmp_path / "traces"
    r = subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", "1", "--trace", str(trace_dir),
                        str(script)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    merged = [p for p in os.listdir(trace_dir) if p.endswith(".descent")]
    r = subprocess.run([sys.executable, "-m", "descent", "replay", str(trace_dir / sorted(merged)[0])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln.strip() for ln in r.stdout.splitlines()]
    first = next(i for i, ln in enumerate(lines) if ln.startswith("[3 dispatch ] c10d::allreduce_"))
    assert "keyset=CPU|BackendSelect|ADInplaceOrView|AutogradCPU kernel=AutogradCPU" in lines[first], lines[first]
    assert lines[first + 1].startswith("[4 autograd ] c10d::allreduce_  graph=none: a collective has no derivative")
    assert lines[first + 2].startswith("[3 dispatch ] c10d::allreduce_  redispatch=true keyset=CPU kernel=CPU")
    assert lines[first + 3].startswith("[5 kernels  ] c10d::allreduce_  backend=mpi device=cpu"), lines[first + 3]
    assert lines[first + 4].startswith("[7 streams  ] MPI_Allreduce  bytes=12 on=caller"), lines[first + 4]
    second = next(i for i, ln in enumerate(lines) if i > first + 2 and ln.startswith("[3 dispatch ] c10d::allreduce_"))
    assert lines[second + 4].startswith("[7 streams  ] enqueue  queue=mpi collective=MPI_Allreduce"), lines[second + 4]
    assert any(ln.startswith("[7 streams  ] MPI_Allreduce  bytes=12 on=worker") for ln in lines[second:]), lines[second:]


@needs_mpi
@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_rank_that_never_joins_times_out_and_ends_the_job(how):
    """Note [A collective times out]: rank 0 raises after 2 s naming the collective, and ending its
    broken group aborts the job (rank 1, asleep for 120 s, included) instead of hanging; a call
    without async_op on its own thread (Note [A synchronous collective runs on its caller]), one
    with it on the MPI worker."""
    start = time.monotonic()
    r = run(2, os.path.join(HERE, "distributed", "timeout.py"), timeout=90, args=["async"] if how == "async" else [])
    assert time.monotonic() - start < 60, "the job was not ended by the abort"
    assert r.returncode != 0, r.stdout
    assert re.search(r"rank 0: timed out after [23]\.\d s: Timed out after 2 s waiting for MPI_Allreduce", r.stdout), \
        r.stdout + r.stderr[-2000:]
    assert "rank 0: refused after the timeout" in r.stdout, r.stdout
    assert "rank 0: destroy returned" not in r.stdout
    assert "a collective timed out; MPI_Abort ends every rank of the job" in r.stderr, r.stderr[-2000:]


@needs_mpi
def test_killing_the_launcher_ends_every_rank(tmp_path):
    """Note [A rank ends with its launcher]: SIGKILL to `descent run` (a test's timeout, kill -9)
    leaves no mpirun and no rank behind, where before they spun on forever."""
    marker = f"descent-orphan-check-{os.getpid()}"
    script = tmp_path / f"{marker}.py"
    script.write_text("import time, descent, descent.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "print('rank up', flush=True)\n"
                      "time.sleep(600)\n")
    launcher = subprocess.Popen([sys.executable, "-m", "descent", "run", "--nproc", "2", str(script)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def alive():  # every process whose command line names the script: mpirun and the ranks
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read() and int(pid) != launcher.pid:
                        found.append(int(pid))
            except (OSError, ValueError):
                pass
        return found

    try:
        seen, deadline = "", time.time() + 60
        while seen.count("rank up") < 2:  # both ranks are up, in their sleep (mpirun may join their lines)
            assert time.time() < deadline, "the ranks did not start:\n" + seen
            if select.select([launcher.stdout], [], [], 1.0)[0]:
                chunk = os.read(launcher.stdout.fileno(), 4096).decode()
                assert chunk, "the job ended first:\n" + seen
                seen += chunk
        assert len(alive()) >= 2
        launcher.kill()
        launcher.wait(timeout=10)
        deadline = time.time() + 20
        while alive() and time.time() < deadline:
            time.sleep(0.2)
        assert alive() == [], "left running after the launcher was killed"
    finally:
        launcher.kill()
        for pid in alive():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
