"""`descent replay` on Chrome Trace Event JSON: PyTorch profiler files and
descent's own export.

- a Kineto file written by torch.profiler (tests/tracer/data) replays as a
  tree: every aten op on the dispatch floor (nested ones too), cudaLaunchKernel
  on launch, the kernels on the device floor;
- --chrome writes it back out, and that file replays to the same tree;
- malformed JSON: exit status 2 and one line naming the file, the line and
  the column, without a traceback.
"""
import pathlib
import re

from test_trace import run_cli, tree_lines

DATA = pathlib.Path(__file__).resolve().parent.parent / "tracer" / "data"


def test_replay_kineto_cuda_file(tmp_path):
    r = run_cli("replay", str(DATA / "torch_profile_cuda_add.json"))
    assert r.returncode == 0, r.stderr
    lines = tree_lines(r.stdout)
    assert any(re.match(r"\[3 dispatch *\] aten::add", ln) for ln in lines), r.stdout
    assert any(re.match(r"\s+\[3 dispatch *\] aten::empty", ln) for ln in lines), r.stdout   # nested: still a dispatcher call
    assert any("[8 launch   ] cudaLaunchKernel" in ln for ln in lines), r.stdout
    assert any("[9 device   ] void at::native::vectorized_elementwise_kernel" in ln for ln in lines), r.stdout
    assert "device: cuda:0 (NVIDIA H200)" in r.stdout

    chrome = tmp_path / "again.json"
    again = run_cli("replay", str(DATA / "torch_profile_cuda_add.json"), "--chrome", str(chrome))
    assert again.returncode == 0, again.stderr
    replayed = run_cli("replay", str(chrome))
    assert replayed.returncode == 0, replayed.stderr
    assert tree_lines(replayed.stdout) == lines


def test_replay_kineto_cpu_file():
    r = run_cli("replay", str(DATA / "torch_profile_cpu_add.json"))
    assert r.returncode == 0, r.stderr
    assert any(re.match(r"\s+\[3 dispatch *\] aten::to", ln) for ln in tree_lines(r.stdout)), r.stdout


def test_replay_malformed_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [\n  {"ph": "X", "ts": 1,}\n]}\n')
    r = run_cli("replay", str(path))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"descent replay: {path}:2:23: expected a string key in an object, found '}}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_replay_wrong_shape(tmp_path):
    path = tmp_path / "shape.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a"}]}')
    r = run_cli("replay", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f'descent replay: {path}: traceEvents[0] ("a"): missing "ts"'


def test_replay_not_a_trace(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    r = run_cli("replay", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "expected descent's format" in r.stderr and "Chrome Trace Event JSON" in r.stderr


def test_replay_descent_trace_recorded_on_the_h200(tmp_path):
    """Recorded on a GPU, replayed anywhere: `descent trace --save` of
    `descent.ones(4, device="cuda") + 1` on the H200 host (tools/gpu-host-check)
    replays on a machine without a GPU, with both clocks: the launch on
    floor 8, the kernel on the device's row from CUPTI, joined by correlation,
    through all eight floors."""
    path = DATA / "h200_cuda_add.descent"
    r = run_cli("replay", str(path))
    assert r.returncode == 0, r.stderr
    assert "device clock: cuda:0: CUPTI, converted to host" in r.stdout
    lines = tree_lines(r.stdout)
    for floor in range(1, 9):
        assert any(re.match(rf"\s*\[{floor} ", ln) for ln in lines), f"floor {floor} missing:\n{r.stdout}"
    assert any("[8 launch   ] cudaLaunchKernel  kernel=add_float32" in ln for ln in lines), r.stdout
    assert re.search(r"-> device: .*BinaryLoop<float, descent::kernels::AddF[,>].* after the launch began", r.stdout), r.stdout
    assert any(ln.startswith("[9 device   ]") for ln in lines), r.stdout
    chrome = tmp_path / "h200.json"
    assert run_cli("replay", str(path), "--chrome", str(chrome)).returncode == 0
    text = chrome.read_text()
    assert '"cat":"ac2g"' in text and '"cat":"kernel"' in text
