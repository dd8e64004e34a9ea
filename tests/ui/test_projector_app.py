"""Readable on a projector (issue 23): every tab label, every floor's
decision line and every other text a panel fitted into a space of its own
is whole or shortened at a word, never clipped, from a classroom's 1280x720
to 3840x2160, normal and presenter; a presenter's type grows with a 4K
projector's lines."""
import subprocess

import pytest

from test_app import (APP, CLI, SIM_FIXTURE, expected_steps, pytestmark, run_app, saved_trace,  # noqa: F401
                      token_floor)


def cut_at_a_word(text, shown):
    """Whether `shown` (lines, perhaps ending in "...") is `text` from its
    start, broken and shortened only where a word ends: after a space, or
    inside a long word after one of ,|=/(:_ (ui/text_fit.cpp, fit_text)."""
    kept = shown[:-3] if shown.endswith("...") else shown
    kept = "".join(kept.split())
    k = 0  # through `text`, skipping its whitespace
    for n, c in enumerate(text):
        if k == len(kept):
            return c == " " or text[n - 1] in " ,|=/(:_"
        if c.isspace():
            continue
        if c != kept[k]:
            return False
        k += 1
    return k == len(kept)


def floor_step(steps, by_id, floor):
    return next(k for k, st in enumerate(steps) if st[1] and token_floor(st, by_id) == floor)


@pytest.mark.parametrize("size", ["1280x720", "1366x768", "1920x1080", "3840x2160", "3840x2160 zoom 2"])
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("call", ["sample", "sim"])
def test_no_tab_label_or_decision_line_is_clipped(tmp_path, saved_trace, size, presenter, call):
    """Every tab label whole, every floor's decision line (or skip reason)
    within its band, shortened only at a word, and shown at all; the
    timeline's header within its line: on a projector's 1280x720 as on a
    1920x1080 screen, normal and presenter, a CPU call on floor 3 and a sim:0
    call on floor 8."""
    trace = saved_trace if call == "sample" else SIM_FIXTURE
    steps, by_id = expected_steps(trace)
    step = floor_step(steps, by_id, 3 if call == "sample" else 8)
    size, _, zoom = size.partition(" zoom ")
    args = ["--trace", str(trace), "--step", str(step), "--size", size] + (["--presenter"] if presenter else [])
    args += ["--zoom", zoom] if zoom else []
    state, png, _ = run_app(tmp_path, *args, name=f"{call}_{size}_{zoom}_{presenter}")
    assert state["token_floor"] == (3 if call == "sample" else 8)
    tabs = state["tabs"]
    assert len(tabs) == 7, tabs
    for t in tabs:
        assert not t["clipped"] and t["shown"] == t["text"], t
    assert {t["text"] for t in tabs} >= {"Detail", "Memory", "Streams", "Notes", "Lesson"}
    for row in state["floors"]:
        fit = row["decision_fit"]
        assert not fit["clipped"], (row["floor"], fit)
        if fit["text"]:  # each floor shows its decision, or why it was skipped
            assert fit["shown"].strip(". \n"), (row["floor"], fit)
            assert cut_at_a_word(fit["text"], fit["shown"]), (row["floor"], fit)
        if row["state"] == "skipped":
            assert fit["text"] == "skipped: " + row["skip_reason"], row
    if not presenter:
        assert not state["timeline_header"]["clipped"], state["timeline_header"]
        assert state["timeline_header"]["shown"], state["timeline_header"]
    assert_no_text_clipped(state)


def assert_no_text_clipped(state):
    """Every other text the panels fitted into a space of their own (graph
    nodes, stream cells, table cells, timeline labels, the building's texts):
    none wider than its space, and shortened only at a word."""
    assert state["texts"], "the state dump lists no texts"
    for t in state["texts"]:
        fit = t["fit"]
        assert not fit["clipped"], t
        if fit["shown"] and t["panel"] != "timeline":  # a timeline label is the name, or the name and its time
            assert cut_at_a_word(fit["text"], fit["shown"]), t


@pytest.mark.parametrize("size,normal,presenter", [("1280x720", 1.0, 1.0), ("1920x1080", 1.0, 1.0),
                                                   ("3840x2160", 1.0, 2.0)])
def test_the_presenters_type_keeps_its_share_of_a_4k_screen(tmp_path, saved_trace, size, normal, presenter):
    """Xvfb reports no content scale: a presenter's type still grows with the
    projector's lines (at least its height over 1080), a normal window's not."""
    for mode, want in (("normal", normal), ("presenter", presenter)):
        args = ["--trace", str(saved_trace), "--size", size] + (["--presenter"] if mode == "presenter" else [])
        state, _, _ = run_app(tmp_path, *args, name=f"{mode}_{size}")
        assert state["layout"]["ui_scale"] == pytest.approx(want, abs=1e-3), (mode, size)


@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
def test_the_memory_tables_of_a_run_fit_a_projector(tmp_path, presenter):
    """Code run here has the allocators' statistics: every cell of their
    tables fitted to its column at 1280x720."""
    args = ["--code", AUTOGRAD_SIM, "--panel", "memory", "--size", "1280x720"] + (["--presenter"] if presenter else [])
    state, _, _ = run_app(tmp_path, *args)
    cells = [t for t in state["texts"] if t["panel"] == "memory"]
    assert any(t["fit"]["text"] == "allocated" for t in cells), cells
    assert_no_text_clipped(state)


AUTOGRAD_SIM = ('x = descent.ones(2, 2, device="sim:0", requires_grad=True)\n'
                'loss = (x @ x).sum()\nloss.backward()\ndescent.sim.synchronize()')


@pytest.fixture(scope="module")
def autograd_sim_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("autograd") / "autograd_sim.descent"
    subprocess.run([CLI, "trace", AUTOGRAD_SIM, "--save", str(path)], check=True, capture_output=True, timeout=120)
    return path


@pytest.mark.parametrize("size", ["1280x720", "3840x2160"])
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("panel", ["graph", "streams", "memory", "compare", "detail"])
def test_no_text_of_a_panel_is_clipped(tmp_path, autograd_sim_trace, size, presenter, panel):
    """A backward pass on sim:0, at a step in the middle of it, with each
    right-hand panel: every text fitted to its space, on a projector and on a
    4K screen, normal and presenter."""
    steps, _ = expected_steps(autograd_sim_trace)
    args = ["--trace", str(autograd_sim_trace), "--step", str(len(steps) * 2 // 3), "--size", size, "--panel", panel]
    state, _, _ = run_app(tmp_path, *args + (["--presenter"] if presenter else []), name=f"{panel}_{size}_{presenter}")
    assert panel in state["panels"]
    assert {t["panel"] for t in state["texts"]} >= {"building"}
    if panel in ("graph", "streams"):
        assert panel in {t["panel"] for t in state["texts"]}, state["texts"]
    assert_no_text_clipped(state)


def test_at_720p_every_floor_the_call_reached_shows_its_op_and_time(tmp_path):
    """Issue 43: on a 1280x720 projector a device call's floors keep their op and time, a floor passed
    ("done: caching_alloc") too, without its "done: " where both do not fit; the floors ahead say "?"."""
    import re
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--presenter", "--lesson", "map", "--lesson-step", "1",
                      env={"XDG_DATA_HOME": str(tmp_path / "data")}, name="map720")
    reached = [f for f in s["floors"] if f["span"] and f["shown"] != ["next: ?"]]
    assert len(reached) >= 6, s["floors"]
    for f in reached:
        assert re.search(r"\d (ns|us|ms|s)$", f["shown"][0]), f["shown"]
        assert f["span"].split("::")[-1] in f["shown"][0], f["shown"]
