"""Times a student can trust (issue 23, Note [Cold and warm times] in ui/story.h): every time is labelled
cold or warm, the step bar says which run of a repeated line is on screen, R runs the line on screen
again for warm medians, and M goes to the run with the median warm time."""
import subprocess

import pytest

from test_app import APP, SAMPLE, child_env, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")


def test_repeated_runs_say_which_run_and_warm_medians(tmp_path):
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--repeat", "5", "--step", "80", "--size", "1280x720")
    assert s["run"] == [3, 5] and s["steps"] == 5 * 34
    assert s["span"]["warm_samples"] == 4
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--step", "3", "--size", "1280x720", name="once")
    assert s["run"] == [1, 1] and s["span"]["warm_samples"] == 0


def test_r_runs_the_line_again_warm_and_m_goes_to_the_median_run(tmp_path, xserver):
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--code", SAMPLE, "--state", str(state), "--size", "1280x720"],
                           env=child_env(DISPLAY=xserver), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == 34)
        assert s["run"] == [1, 1]
        win = subprocess.run(["xdotool", "search", "--sync", "--name", "^descent$"], capture_output=True, text=True,
                             env=child_env(DISPLAY=xserver), timeout=30).stdout.split()[0]
        xdotool(xserver, "windowfocus", "--sync", win)
        xdotool(xserver, "key", "r")
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == 5 * 34)
        assert s["run"] == [1, 5] and s["step"] == 0 and s["span"]["warm_samples"] == 4
        xdotool(xserver, "key", "Down")
        s = wait_state(state, lambda s: s["step"] == 1)
        xdotool(xserver, "key", "m")
        s = wait_state(state, lambda s: s["run"][0] != 1)
        k = s["run"][0]
        assert 2 <= k <= 5 and s["step"] == (k - 1) * 34 + 1  # the same place in the median run
    finally:
        app.terminate()
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            app.kill()
