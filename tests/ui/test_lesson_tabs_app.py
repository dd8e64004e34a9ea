"""A lesson's question waits, and the student switches tab (issue 43): the Graph and Detail tabs must not
show what the question asks (lesson 4 step 1: node=MulBackward0, saved=self, other), and the token stays
held where it was parked. Real clicks and key presses under Xvfb: the tabs' buttons at 1280x720 are in the
right panel's first row (Detail at x 750, Graph at x 970, y 106; tools/screenshots' layout), and while the
Lesson tab is in front the digits answer, so a student reaches the other tabs with the mouse.

Headless, every tab in front in turn: nothing of the state dump but the lesson's own text names the answer
(the floors ahead and the skipped floors' reasons hidden on every tab, the Compare tab's op lists too).
"""
TABS_Y = 106
TAB_X = {"detail": 750, "graph": 970}
import subprocess

import pytest

from test_app import APP, child_env, focus_window, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)
from test_lessons_app import stop

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")


def test_switching_tab_while_a_question_waits_gives_nothing_away(tmp_path, xserver):
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--state", str(state), "--size", "1280x720", "--lesson", "autograd"],
                           env=child_env(DISPLAY=xserver, XDG_DATA_HOME=str(tmp_path / "data")),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = wait_state(state, lambda s: s["lesson"]["open"] and s["lesson"]["asking"] and s["running"] is None
                       and not s["lesson"]["busy"], timeout=60)
        token = s["span"]["id"]
        win = focus_window(xserver)
        for panel in ("graph", "detail"):
            xdotool(xserver, "mousemove", "--window", win, str(TAB_X[panel]), str(TABS_Y), "click", "1")
            s = wait_state(state, lambda s, p=panel: s["panels"] and p in s["panels"] and not s["lesson"]["tab"])
            assert s["lesson"]["asking"], s["lesson"]
            assert not s["graph"], s["graph"]  # no node of the graph is drawn
            assert s["explanation"] is None or "MulBackward0" not in str(s["explanation"]), s["explanation"]
            # The token may not be moved past the question on this tab either.
            xdotool(xserver, "key", "End")
            s = wait_state(state, lambda s: s["frame"] > 0)
            assert s["span"]["id"] == token, (panel, s["span"])
        xdotool(xserver, "key", "l")
        s = wait_state(state, lambda s: s["lesson"]["tab"] and "lesson" in s["panels"])
        assert s["lesson"]["asking"]
    finally:
        stop(app)


@pytest.mark.parametrize("panel", ["detail", "memory", "compare", "graph", "streams", "notes"])
def test_no_tab_in_front_names_the_waiting_answer(tmp_path, panel):
    import json
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "autograd", "--panel", panel,
                      env={"XDG_DATA_HOME": str(tmp_path / "data")}, name=panel)
    assert s["lesson"]["asking"] and panel in s["panels"], (s["lesson"]["asking"], s["panels"])
    outside = json.dumps({k: v for k, v in s.items() if k != "lesson"})
    for answer in ("MulBackward0", "self, other"):  # lesson 4 step 1's two answers
        assert answer not in outside, (panel, answer)
    assert not [t for t in s["texts"] if t["panel"] == "compare"], "the Compare tab listed the ops"
    for f in s["floors"]:
        if f["state"] == "skipped":
            assert f["shown"] == ["skipped (why: after the answer)"], f
