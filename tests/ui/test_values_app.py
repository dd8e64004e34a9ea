"""The values view under Xvfb (issue 43, "the tensor on screen"; Note [A view as a window onto cells] in
ui/values_model.h): at the top of the Memory tab, a storage drawn once as its cells, every view of it a window
onto the same cells (a transpose, a slice, an expand with stride 0), and an in-place write lighting the cells it
changed and the version counters it bumped -- at 1280x720 and 1920x1080, normal and presenter, no text clipped.
DESCENT_VALUES_SHOTS=DIR keeps the screenshots there to be looked at."""
import os
import shutil

import pytest

from test_app import APP, run_app
from test_projector_app import assert_no_text_clipped

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")

VIEWS = ("x = descent.arange(6.).reshape(2, 3)\ny = x.t()\nz = x[:, 1]\ne = descent.ones(1).expand(4)\n"
         "x[0].add_(10)")


def values_texts(state):
    return [t["fit"]["text"] for t in state["texts"] if t["panel"] == "values"]


def keep(png, name):
    where = os.environ.get("DESCENT_VALUES_SHOTS")
    if where:
        os.makedirs(where, exist_ok=True)
        shutil.copy(png, os.path.join(where, name))


@pytest.mark.parametrize("size", ["1280x720", "1920x1080"])
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_an_in_place_write_through_a_view_lights_the_shared_cells(tmp_path, size, presenter):
    # The last step: back up out of x[0].add_(10), its writes shown.
    state, png, _ = run_app(tmp_path, "--code", VIEWS, "--panel", "memory", "--step", "100000", "--size", size,
                            *(["--presenter"] if presenter else []), name=f"values_{size}_{presenter}")
    keep(png, f"values_{size}{'_presenter' if presenter else ''}.png")
    assert "memory" in state["panels"]
    texts = values_texts(state)
    joined = "\n".join(texts)
    assert any(t.startswith("after line 5:  x[0].add_(10)") for t in texts), texts
    # One storage of six cells: x, its transpose, a column and the unnamed base all look into it.
    assert any(t.startswith("storage A: 6 cells of float32 (4 B each) on cpu, this line wrote 3 cells: @0, @1, @2")
               for t in texts), texts
    assert "y, a view of x._base:  sizes (3, 2)  strides (1, 3)  offset 0" in joined, texts
    assert "z, a view of x._base:  sizes (2,)  strides (3,)  offset 1" in joined, texts
    assert "e, a view of e._base:  sizes (4,)  strides (0,)  offset 0" in joined, texts
    # The version counter is the storage's: every window onto it was bumped; e's was not.
    assert texts.count("_version 0 -> 1 (an in-place write bumped it)") == 4, texts
    assert "_version 0" in texts
    for v in ("10.0", "11.0", "12.0", "3.0", "4.0", "5.0"):
        assert v in texts, v
    assert_no_text_clipped(state)


def test_before_the_write_returns_the_cells_are_as_they_were(tmp_path):
    # Step 2 is inside the first statement: before it, nothing is in the namespace yet.
    state, _, _ = run_app(tmp_path, "--code", VIEWS, "--panel", "memory", "--step", "1", "--size", "1280x720")
    texts = values_texts(state)
    assert any(t.startswith("before line 1:  x = descent.arange(6.).reshape(2, 3)") for t in texts), texts
    assert not any(t.startswith("storage A") for t in texts), texts


def test_a_trace_without_values_says_so(tmp_path):
    from test_app import DATA
    state, _, _ = run_app(tmp_path, "--trace", f"{DATA}/torch_profile_cpu_add.json", "--panel", "memory",
                          "--size", "1280x720")
    assert "memory" in state["panels"]
    assert not values_texts(state)
