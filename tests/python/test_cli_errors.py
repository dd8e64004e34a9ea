"""Issue 41: every misuse of the `descent` command found so far gets one line naming what was wrong
and exit status 2 (a usage error), never a traceback."""
import os
import shutil
import subprocess
import sys

import pytest

CASES = {
    "bench sizes not numbers": (["bench", "matmul", "--ladder", "--sizes", "a,b"],
                                "--sizes: expected whole numbers separated by commas, not 'a'"),
    "bench size 0": (["bench", "matmul", "--ladder", "--sizes", "0"], "--sizes: each must be from 1 to 16384, not 0"),
    "bench size -4": (["bench", "matmul", "--ladder", "--sizes", "-4"], "not -4"),
    "bench size 100000": (["bench", "matmul", "--ladder", "--sizes", "100000"], "not 100000"),
    "bench device nope": (["bench", "matmul", "--ladder", "--device", "nope"],
                          "--device: Expected one of cpu, sim, cuda device type at start of device string: nope"),
    "bench threads 0": (["bench", "matmul", "--ladder", "--threads", "0"], "--threads: each must be from 1 to 1024"),
    "bench reps 0": (["bench", "matmul", "--ladder", "--device", "sim:0", "--reps", "0"], "--reps: expected 1 or more"),
    "trace save empty": (["trace", "1", "--save", ""], "--save: the file name is empty"),
    "trace chrome empty": (["trace", "1", "--chrome", " "], "--chrome: the file name is empty"),
    "trace repeat 0": (["trace", "1", "--repeat", "0"], "--repeat must be at least 1"),
    "replay missing": (["replay", "/nonexistent/t.descent"], "cannot open the file: no such file"),
}


def descent_cli(args, **kw):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ), **kw)


@pytest.mark.parametrize("case", list(CASES))
def test_a_misuse_is_one_line_and_exit_2(case):
    args, message = CASES[case]
    r = descent_cli(args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_save_and_chrome_on_one_file_is_refused_before_anything_runs(tmp_path):
    path = tmp_path / "t.json"
    r = descent_cli(["trace", "print('ran')", "--save", str(path), "--chrome", str(tmp_path / "." / "t.json")])
    assert r.returncode == 2 and "--save and --chrome name the same file" in r.stderr, r.stderr
    assert "ran" not in r.stdout and not path.exists()


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="descent run needs Open MPI's mpirun")
def test_run_trace_into_a_file_or_an_unwritable_place_is_one_line(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    for where, message in ((afile, "it is a file; --trace names a folder"),
                           ("/proc/descent-no-such", "cannot write the ranks' traces there")):
        r = descent_cli(["run", "--nproc", "1", "--trace", str(where), str(script)])
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
