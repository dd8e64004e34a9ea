"""The beginner's story (issue 23, Note [The beginner's story] in ui/story.h): helper spans (Python helpers
under a statement, each redispatch of an op) folded into their parents, on a flag and on the V key, at the
same moment of the call."""
import subprocess

import pytest

from test_app import APP, SAMPLE, child_env, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")

BACKWARD = "x = descent.ones(2, requires_grad=True)\n(x * 2).sum().backward()"


def test_folding_leaves_out_helpers_and_redispatches(tmp_path):
    whole, _, _ = run_app(tmp_path, "--code", BACKWARD, "--size", "1280x720", name="whole")
    folded, _, _ = run_app(tmp_path, "--code", BACKWARD, "--size", "1280x720", "--fold-helpers", name="folded")
    assert folded["fold_helpers"] and folded["steps"] < whole["steps"]
    assert folded["trace_spans"] == whole["trace_spans"]  # the same trace, told with fewer steps


def test_v_folds_and_unfolds_at_the_same_moment(tmp_path, xserver):
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--code", SAMPLE, "--state", str(state), "--size", "1280x720"],
                           env=child_env(DISPLAY=xserver), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_state(state, lambda s: s["running"] is None and s["steps"] == 34)
        win = subprocess.run(["xdotool", "search", "--sync", "--name", "^descent$"], capture_output=True, text=True,
                             env=child_env(DISPLAY=xserver), timeout=30).stdout.split()[0]
        xdotool(xserver, "windowfocus", "--sync", win)
        xdotool(xserver, "key", "Next")
        wait_state(state, lambda s: s["step"] == 10)
        xdotool(xserver, "key", "Next")
        s = wait_state(state, lambda s: s["step"] == 20)
        span = s["span"]["id"]
        xdotool(xserver, "key", "v")
        s = wait_state(state, lambda s: s["fold_helpers"])
        assert s["steps"] == 30 and s["span"]["name"] != ""
        xdotool(xserver, "key", "v")
        s = wait_state(state, lambda s: not s["fold_helpers"])
        assert s["steps"] == 34
        assert s["span"]["id"] == span or s["span"]["name"] == "aten::add"  # back where it was (or its op)
    finally:
        app.terminate()
        app.wait(timeout=10)
