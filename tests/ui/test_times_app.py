"""Times a student can trust (issue 23, Note [Cold and warm times] in ui/story.h): every time is labelled
cold or warm, the step bar says which run of a repeated line is on screen, R runs the line on screen
again for warm medians, and M goes to the run with the median warm time."""
import subprocess
import time

import pytest

from test_app import APP, focus_window, SAMPLE, SAMPLE_STEPS, child_env, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")


def test_repeated_runs_say_which_run_and_warm_medians(tmp_path):
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--repeat", "5", "--step", str(2 * SAMPLE_STEPS + 12), "--size", "1280x720")
    assert s["run"] == [3, 5] and s["steps"] == 5 * SAMPLE_STEPS
    assert s["span"]["warm_samples"] == 4
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--step", "3", "--size", "1280x720", name="once")
    assert s["run"] == [1, 1] and s["span"]["warm_samples"] == 0


def test_r_runs_the_line_again_warm_and_m_goes_to_the_median_run(tmp_path, xserver):
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--code", SAMPLE, "--state", str(state), "--size", "1280x720"],
                           env=child_env(DISPLAY=xserver), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == SAMPLE_STEPS)
        assert s["run"] == [1, 1]
        focus_window(xserver)
        xdotool(xserver, "key", "r")
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == 5 * SAMPLE_STEPS)
        assert s["run"] == [1, 5] and s["step"] == 0 and s["span"]["warm_samples"] == 4
        xdotool(xserver, "key", "Right")
        s = wait_state(state, lambda s: s["step"] == 1)
        xdotool(xserver, "key", "m")
        s = wait_state(state, lambda s: s["run"][0] != 1)
        k = s["run"][0]
        assert 2 <= k <= 5 and s["step"] == (k - 1) * SAMPLE_STEPS + 1  # the same place in the median run
    finally:
        app.terminate()
        try:
            app.wait(timeout=10)
        except subprocess.TimeoutExpired:
            app.kill()


# [SECTION] The remembered layout (Note [The remembered layout], ui/layout.h) ------------------

def test_zoom_keys_and_a_dragged_border_are_remembered(tmp_path, xserver):
    env = child_env(DISPLAY=xserver, XDG_CONFIG_HOME=str(tmp_path / "config"))
    state = tmp_path / "live.json"

    def start():
        if state.exists():
            state.unlink()
        return subprocess.Popen([APP, "--code", SAMPLE, "--state", str(state), "--size", "1280x720"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    app = start()
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == SAMPLE_STEPS)
        assert s["layout"]["zoom"] == 1.0 and s["layout"]["split_x"] == 0.56
        win = focus_window(xserver)
        xdotool(xserver, "key", "ctrl+equal")
        xdotool(xserver, "key", "ctrl+equal")
        s = wait_state(state, lambda s: s["layout"]["zoom"] > 1.2 and s["layout"]["ui_scale"] > 1.2)
        assert abs(s["layout"]["ui_scale"] - 1.21) < 0.01 and s["speed"] == 1.0  # Ctrl+= is not "faster"
        # Drag the border between the building and the right panel 128 px to the right: the moves
        # and the press may reach the app between two frames (ui/main.cpp, feed_mouse).
        x, y = int(1280 * 0.56), 300
        xdotool(xserver, "mousemove", "--window", win, str(x), str(y))
        xdotool(xserver, "mousedown", "1")
        for k in range(1, 9):
            xdotool(xserver, "mousemove", "--window", win, str(x + 16 * k), str(y))
        s = wait_state(state, lambda s: s["layout"]["split_x"] > 0.65)
        xdotool(xserver, "mouseup", "1")
        assert abs(s["layout"]["split_x"] - 0.66) < 0.02
        conf = tmp_path / "config" / "descent" / "app.conf"
        deadline = time.time() + 30  # written after the frame that ended the drag
        while time.time() < deadline and not (conf.exists() and "split_x = 0.66" in conf.read_text()):
            time.sleep(0.1)
    finally:
        app.terminate()
        app.wait(timeout=10)
    conf = (tmp_path / "config" / "descent" / "app.conf").read_text()
    assert "zoom = 1.21" in conf and "split_x = 0.66" in conf, conf
    app = start()
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == SAMPLE_STEPS)
        assert abs(s["layout"]["zoom"] - 1.21) < 0.001 and abs(s["layout"]["split_x"] - 0.66) < 0.02
    finally:
        app.terminate()
        app.wait(timeout=10)


def test_a_malformed_layout_file_is_skipped_line_by_line(tmp_path, xserver):
    conf = tmp_path / "config" / "descent"
    conf.mkdir(parents=True)
    (conf / "app.conf").write_text("zoom = banana\nsplit_x = 0.7\n")
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--code", SAMPLE, "--state", str(state), "--size", "1280x720"],
                           env=child_env(DISPLAY=xserver, XDG_CONFIG_HOME=str(tmp_path / "config")),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] == SAMPLE_STEPS)
        assert s["layout"]["zoom"] == 1.0 and s["layout"]["split_x"] == 0.7  # the bad line skipped, the good kept
    finally:
        app.terminate()
        app.wait(timeout=10)
    # Headless runs read no layout (a picture never depends on the last window); --zoom is theirs.
    s, _, _ = run_app(tmp_path, "--code", SAMPLE, "--zoom", "1.5", env={"XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert s["layout"]["zoom"] == 1.5 and s["layout"]["split_x"] == 0.56
    r = subprocess.run([APP, "--zoom", "9"], capture_output=True, text=True, timeout=30, env=child_env())
    assert r.returncode == 2 and "--zoom: expected a factor from 0.5 to 3" in r.stderr
