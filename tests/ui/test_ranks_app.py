"""A merged trace of several ranks in the app (issue 20, Note [Merging the ranks' traces]): one
group of rows per rank, each named by it. Skipped where descent was built without MPI."""
import os
import shutil
import subprocess
import sys

import pytest

from test_app import APP, expected_steps, pytestmark, run_app  # noqa: F401

DDP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "distributed", "ddp.py")


def test_a_merged_trace_has_a_group_of_rows_per_rank(tmp_path):
    from descent import _C
    if not (_C._dist_have_mpi() and shutil.which("mpirun")):
        pytest.skip("descent was built without MPI, or there is no mpirun")
    out = tmp_path / "traces"
    r = subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", "2", "--trace", str(out), DDP],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    state, _, _ = run_app(tmp_path, "--trace", str(out / "merged.descent"), "--size", "1280x720")
    rows = state["timeline_rows"]
    assert any(x.startswith("rank 0: ") for x in rows) and any(x.startswith("rank 1: ") for x in rows), rows
    # A collective handed to the MPI worker is explained as that, not as a kernel's enqueue.
    steps, _ = expected_steps(out / "merged.descent")
    k = next(k for k, (sp, down) in enumerate(steps) if down and sp["name"] == "enqueue" and sp["args"].get("queue") == "mpi")
    state, _, _ = run_app(tmp_path, "--trace", str(out / "merged.descent"), "--step", str(k), name="enqueue")
    e = state["explanation"]
    assert e["kind"] == "streams.mpi_enqueue" and "One MPI call at a time, in order" in e["notes"], e
    # DDP's first broadcast of the parameters, without async_op, ran on the rank's own thread: said so.
    k = next(k for k, (sp, down) in enumerate(steps)
             if down and sp["name"] == "MPI_Bcast" and sp["args"].get("on") == "caller")
    state, _, _ = run_app(tmp_path, "--trace", str(out / "merged.descent"), "--step", str(k), name="here")
    e = state["explanation"]
    assert e["kind"] == "streams.mpi_call_here" and "A synchronous collective runs on its caller" in e["notes"], e
    assert any("differs from PyTorch" in s for s in e["sentences"]), e
    # The c10d:: operator's kernel above it: a hand-off to the group's backend, not a loop.
    k = next(k for k, (sp, down) in enumerate(steps) if down and sp["name"] == "c10d::allreduce_"
             and sp["args"].get("backend") == "mpi")
    state, _, _ = run_app(tmp_path, "--trace", str(out / "merged.descent"), "--step", str(k), name="c10d")
    e = state["explanation"]
    assert e["kind"] == "kernel.collective" and "Collectives are c10d ops" in e["notes"], e
    assert "hands the call to mpi" in e["title"], e
