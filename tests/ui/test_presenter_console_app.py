"""The presenter's console (issue 43, Note [The presenter's console] in ui/panel_console.cpp): F2 in presenter
mode opens a console in large type on a 1280x720 projector; while it is shown every key goes to it, so typing
Python fires none of the app's shortcuts (E, T, S, the digits, + and .), and an exception is a red line, not
a crash. Real key presses (xdotool) under an Xvfb of the projector's size.
"""
import os
import shutil
import time
import subprocess

import pytest

from test_app import APP, child_env, focus_window, wait_state, xdotool
from test_lessons_app import stop

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")

CODE = "x = descent.ones(2) + 1"


@pytest.fixture
def projector():
    """An X server of a projector's 1280x720, on which presenter mode goes full screen."""
    if not shutil.which("Xvfb") or not shutil.which("xdotool"):
        pytest.skip("Xvfb or xdotool missing")
    r, w = os.pipe()
    x = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                         pass_fds=(w,), env=child_env(), stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        display = ":" + f.readline().strip()
    yield display
    x.terminate()
    x.wait(timeout=10)


def grab(display, path):
    """The screen as the class sees it (for a person to look at; nothing is asserted on it)."""
    try:
        from PIL import ImageGrab
        ImageGrab.grab(xdisplay=display).save(path)
    except Exception:  # noqa: BLE001  (Pillow without X support: no picture, the test stands)
        pass


def shortcuts(s):
    """What the shortcuts the typed text holds would change: the tab (1, 2), pace (T), speed (+), the
    beginner's story (V), presenter mode (P), playing (Space)."""
    return (s["right_tab"], s["pace"], s["speed"], s["fold_helpers"], s["presenter"], s["playing"])


def test_typing_in_the_presenter_console_fires_no_shortcut(tmp_path, projector):
    state = tmp_path / "live.json"
    app = subprocess.Popen([APP, "--presenter", "--code", "descent.ones(2, 2) + 1", "--state", str(state)],
                           env=child_env(DISPLAY=projector, XDG_CONFIG_HOME=str(tmp_path / "config")),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = wait_state(state, lambda s: s["running"] is None and s["steps"] > 0, timeout=60)
        assert s["presenter"] and not s["presenter_console"]
        before, lines = shortcuts(s), s["console_lines"]
        focus_window(projector)
        xdotool(projector, "key", "F2")
        s = wait_state(state, lambda s: s["presenter_console"] and s["console_has_keys"])
        assert "presenter_console" in s["panels"] and "console" not in s["panels"]
        assert s["layout"]["ui_scale"] >= 1.0  # the presenter's type, not shrunk for 720 lines
        xdotool(projector, "type", "--delay", "40", CODE)
        s = wait_state(state, lambda s: s["console_input"] == CODE)
        xdotool(projector, "key", "Return")
        s = wait_state(state, lambda s: s["running"] is None and s["source"] == CODE, timeout=60)
        assert s["error"] == "", s["error"]
        assert s["console_lines"] == lines + 1 and s["console_last"] == ">>> " + CODE
        assert shortcuts(s) == before, (shortcuts(s), before)
        assert s["presenter_console"]
        # It ran in the console's namespace: x is there, with the values the line made.
        xdotool(projector, "type", "--delay", "40", "print(x.tolist())")
        xdotool(projector, "key", "Return")
        s = wait_state(state, lambda s: s["running"] is None and "[2.0, 2.0]" in s["console_last"], timeout=60)
        grab(projector, tmp_path / "presenter_console.png")
        # An exception is the console's red line, and the app carries on.
        xdotool(projector, "type", "--delay", "40", "x.reshape(3)")
        xdotool(projector, "key", "Return")
        s = wait_state(state, lambda s: s["running"] is None and "RuntimeError" in s["console_last"], timeout=60)
        assert "shape '[3]' is invalid for input of size 2" in s["console_last"], s["console_last"]
        assert app.poll() is None and shortcuts(s) == before and s["presenter_console"]
        time.sleep(0.5)  # (the console scrolls to its newest line a frame later)
        grab(projector, tmp_path / "presenter_console_error.png")
        # Esc closes it, and the keys are shortcuts again.
        xdotool(projector, "key", "Escape")
        s = wait_state(state, lambda s: not s["presenter_console"])
        xdotool(projector, "key", "2")
        s = wait_state(state, lambda s: s["right_tab"] == "memory")
        assert "presenter_console" not in s["panels"]
    finally:
        stop(app)
