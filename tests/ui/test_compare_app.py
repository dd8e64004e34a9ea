"""The compare view follows the step (issue 23): the current span's match in PyTorch's profile (the same
name, its k-th call, a redispatch counted once), or why PyTorch has none."""
import pytest

from test_app import APP, DATA, SAMPLE, run_app

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")


@pytest.mark.parametrize("step, name, found, words", [
    (0, SAMPLE, False, "with_stack"),           # floor 1: the statement
    (1, "ones", False, "binding"),              # floor 2: PyTorch records no binding span
    (14, "aten::add", True, ""),                # floor 3: aten::add, on PyTorch's floor 3 too
    (16, "aten::add", True, ""),                # inside the redispatch: still the op's first call
])
def test_the_compare_view_matches_the_step(tmp_path, step, name, found, words):
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--compare", f"{DATA}/torch_profile_cpu_add.json", "--panel",
                      "compare", "--step", str(step), "--size", "1280x720")
    m = s["compare_match"]
    assert m["name"] == name and m["found"] is found and words in m["why"], m
    if found:
        assert m["k"] == 1 and m["floor"] == 3


@pytest.mark.parametrize("file, where", [("torch_profile_cpu_add.json", "its ops on the CPU"),
                                         ("torch_profile_cuda_add.json", "its ops on the GPU")])
def test_the_compare_view_says_where_pytorchs_file_ran(tmp_path, file, where):
    """Kineto lists the machine's GPUs in every file: where the ops ran is read off the file's own events."""
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--compare", f"{DATA}/{file}", "--panel", "compare",
                      "--size", "1280x720")
    p = s["compare_provenance"]
    assert p.startswith("Recorded by torch.profiler on a machine with cuda:0") and where in p and "cold" in p, p
