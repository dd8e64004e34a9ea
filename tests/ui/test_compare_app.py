"""The compare view follows the step (issue 23): the current span's match in PyTorch's profile (the same
name, its k-th call, a redispatch counted once), or why PyTorch has none."""
import re

import pytest

from test_app import APP, DATA, SAMPLE, run_app

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")


@pytest.mark.parametrize("step, name, found, words", [
    (0, SAMPLE, False, "with_stack"),           # floor 1: the statement
    (1, "ones", False, "binding"),              # floor 2: PyTorch records no binding span
    (14, "aten::add", True, ""),                # floor 3: aten::add, on PyTorch's floor 3 too
    (16, "aten::add", True, ""),                # inside the redispatch: still the op's first call
    (17, "aten::add", True, "inside this op's self time"),  # floor 5: its kernel, inside PyTorch's aten::add
])
def test_the_compare_view_matches_the_step(tmp_path, step, name, found, words):
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--compare", f"{DATA}/torch_profile_cpu_add.json", "--panel",
                      "compare", "--step", str(step), "--size", "1280x720")
    m = s["compare_match"]
    assert m["name"] == name and m["found"] is found and words in m["why"], m
    if found:
        assert m["k"] == 1 and m["floor"] == 3  # PyTorch's aten ops are dispatcher calls
        assert m["kernel"] is (s["token_floor"] == 5), (m, s["token_floor"])


@pytest.mark.parametrize("file, where", [("torch_profile_cpu_add.json", "its ops on the CPU"),
                                         ("torch_profile_cuda_add.json", "its ops on the GPU")])
def test_the_compare_view_says_where_pytorchs_file_ran(tmp_path, file, where):
    """Kineto lists the machine's GPUs in every file: where the ops ran is read off the file's own events."""
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--compare", f"{DATA}/{file}", "--panel", "compare",
                      "--size", "1280x720")
    p = s["compare_provenance"]
    assert p.startswith("Recorded by torch.profiler on a machine with cuda:0") and where in p and "cold" in p, p


@pytest.mark.parametrize("file", ["torch_profile_cpu_add.json", "torch_profile_cuda_add.json"])
def test_the_compare_view_puts_pytorchs_events_on_their_floors(tmp_path, file):
    """PyTorch's aten ops are dispatcher calls (floor 3), each with a kernel
    counted on floor 5 that Kineto records no event for; the profiler's own
    wrapper is on no floor; the columns say cold."""
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--compare", f"{DATA}/{file}", "--panel", "compare",
                      "--size", "1280x720")
    cells = {f: pair for f, pair in enumerate(s["compare_cells"], start=1)}
    mine, theirs = zip(*cells.values())
    assert theirs[2].endswith("self") and not theirs[2].startswith("-"), cells  # floor 3: aten ops
    n_aten = int(theirs[2].split()[0])
    m = re.fullmatch(r"(\d+) kernels?, no event of their own: inside floor 3's self time", theirs[4])
    assert m and 0 < int(m.group(1)) < n_aten, cells  # one per op that calls no other (aten::add's, not aten::to's)
    assert theirs[1] == "-", cells  # no binding span in PyTorch's profile
    assert mine[4].endswith("self"), cells  # descent's own kernels, timed
    if "cuda" in file:
        assert theirs[8] != "-", cells  # floor 9: the GPU's kernels
