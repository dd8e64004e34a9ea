"""Moving through long stories (issue 23; Note [Jumping through a story] in
ui/navigate.h): the jump keys land on the step of their kind, Ctrl+F finds
spans by name, the step's label says which way the token went, and the
timeline keeps the current span wide enough to see. Real key presses through
xdotool, against the story computed here from the saved trace's spans.
"""
import subprocess
import time

import pytest

from test_app import (APP, BACKWARD, CLI, SIM_CODE, child_env, expected_steps, pytestmark, run_app,  # noqa: F401
                      token_floor, wait_state, xdotool, xserver)

# A backward pass on the CPU (autograd nodes on the told thread), then an add
# on sim:0 (a launch on floor 8): every kind of jump has somewhere to go.
NAV_CODE = BACKWARD + "\n" + SIM_CODE
NODE_PREFIX = "autograd::engine::evaluate_function: "


def traced(tmp_path_factory, name, code):
    """`code` traced by the CLI and saved as NAME.descent."""
    path = tmp_path_factory.mktemp(name) / f"{name}.descent"
    r = subprocess.run([CLI, "trace", code, "--save", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="module")
def nav_trace(tmp_path_factory):
    return traced(tmp_path_factory, "nav", NAV_CODE)


def targets(steps, by_id):
    """Each jump kind's steps, computed from the spans (not by the app)."""
    def down_on(floor, prefix=""):
        return [k for k, (s, down) in enumerate(steps) if down and s["floor"] == floor and s["name"].startswith(prefix)]
    floors = [token_floor(st, by_id) for st in steps]
    return {
        "statement": down_on(1),
        "floor change": [k for k in range(1, len(steps)) if floors[k] != floors[k - 1]],
        "autograd node": down_on(4, NODE_PREFIX),
        "launch": down_on(8),
        "kernel": down_on(5),
    }


# The key forward, the key back, the kind (Shift goes back, except for the brackets).
JUMP_KEYS = [("period", "shift+period", "statement"), ("bracketright", "bracketleft", "floor change"),
             ("b", "shift+b", "autograd node"), ("g", "shift+g", "launch"), ("e", "shift+e", "kernel")]


class LiveApp:
    """The app in a window on the test's X server, showing a trace file."""

    def __init__(self, tmp_path, display, *args):
        self.state_path, self.display = tmp_path / "live.json", display
        self.proc = subprocess.Popen([APP, *args, "--state", str(self.state_path), "--size", "1600x1000"],
                                     env=child_env(DISPLAY=display), stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def focus(self):
        win = subprocess.run(["xdotool", "search", "--sync", "--name", "^descent$"], capture_output=True, text=True,
                             env=child_env(DISPLAY=self.display), timeout=30).stdout.split()[0]
        xdotool(self.display, "windowfocus", "--sync", win)

    def key(self, *keys):
        for k in keys:
            xdotool(self.display, "key", k)
            time.sleep(0.15)

    def wait(self, pred, timeout=30):
        return wait_state(self.state_path, pred, timeout)

    def close(self):
        assert self.proc.poll() is None  # still running
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def test_the_jump_keys_land_on_the_next_step_of_their_kind(tmp_path, nav_trace, xserver):
    steps, by_id = expected_steps(nav_trace)
    want = targets(steps, by_id)
    assert all(len(v) >= 2 or k == "launch" for k, v in want.items()), {k: len(v) for k, v in want.items()}
    assert want["launch"] and want["autograd node"], "the trace has a launch and backward's nodes"
    app = LiveApp(tmp_path, xserver, "--trace", str(nav_trace))
    try:
        app.wait(lambda s: s["step"] == 0 and s["steps"] == len(steps))
        app.focus()
        for forward, back, kind in JUMP_KEYS:
            at = want[kind]
            app.key("Home")
            app.wait(lambda s: s["step"] == 0)
            first = next(k for k in at if k > 0)
            app.key(forward)
            s = app.wait(lambda s: s["step"] == first)
            span, down = steps[first]
            assert s["span"]["name"] == span["name"] and s["token_floor"] == token_floor(steps[first], by_id)
            if kind != "floor change":
                assert s["direction"] == "down" and s["span"]["floor"] == {"statement": 1, "autograd node": 4,
                                                                           "launch": 8, "kernel": 5}[kind]
            later = [k for k in at if k > first]
            if later:
                app.key(forward)
                app.wait(lambda s: s["step"] == later[0])
                app.key(back)
                app.wait(lambda s: s["step"] == first)
            else:  # nothing after: the step stays, and the toolbar says so
                app.key(forward)
                s = app.wait(lambda s: s["jump_said"] == f"no {kind} after this step")
                assert s["step"] == first
        # Nothing before the first step: said, and the step stays.
        app.key("Home", "shift+g")
        s = app.wait(lambda s: s["jump_said"] == "no launch before this step")
        assert s["step"] == 0
        app.close()
    finally:
        app.proc.kill()


def test_ctrl_f_finds_spans_by_name(tmp_path, nav_trace, xserver):
    steps, _ = expected_steps(nav_trace)
    found = sorted(k for k, (s, down) in enumerate(steps) if down and "mul" in s["name"].lower())
    assert len(found) >= 3, found
    app = LiveApp(tmp_path, xserver, "--trace", str(nav_trace))
    try:
        app.wait(lambda s: s["step"] == 0)
        app.focus()
        app.key("ctrl+f")
        app.wait(lambda s: s["search"]["open"] and s["search"]["has_keys"])
        xdotool(xserver, "type", "--delay", "40", "MuL")  # any case
        s = app.wait(lambda s: s["search"]["text"] == "MuL")
        assert s["step"] == 0, "typing a letter is not a key of the app while the field has the keyboard"
        assert s["search"]["matches"] == len(found)
        assert s["search"]["label"] == f'{len(found)} spans named "MuL"'
        app.key("Return")
        s = app.wait(lambda s: s["step"] == found[0] and s["search"]["has_keys"])  # Enter lets go; it is taken back
        assert s["search"]["label"] == f"1 of {len(found)}" and "mul" in s["span"]["name"].lower()
        app.key("Return")  # Enter keeps finding: the field keeps the keyboard
        app.wait(lambda s: s["step"] == found[1] and s["search"]["label"] == f"2 of {len(found)}"
                 and s["search"]["has_keys"])
        app.key("F3")
        app.wait(lambda s: s["step"] == found[2] and s["search"]["label"] == f"3 of {len(found)}")
        app.key("shift+F3")
        app.wait(lambda s: s["step"] == found[1])
        app.key("Home")  # in the field: the start of the text, not of the story
        for _ in range(3):
            app.key("Delete")
        xdotool(xserver, "type", "--delay", "40", "softmax")
        s = app.wait(lambda s: s["search"]["label"] == 'no span named "softmax"')
        app.key("Return")
        s = app.wait(lambda s: s["search"]["has_keys"])
        assert s["step"] == found[1] and s["search"]["matches"] == 0
        # Esc closes the field, and the keys step again.
        app.key("Escape")
        app.wait(lambda s: not s["search"]["open"] and "search" not in s["panels"])
        app.key("Right")
        app.wait(lambda s: s["step"] == found[1] + 1)
        app.close()
    finally:
        app.proc.kill()


def test_the_step_label_says_which_way_and_down_and_up_go_that_way(tmp_path, nav_trace, xserver):
    """Down goes to the next step down into a span, Up to the next step up out
    of one, so the token moves the way the key names; Right (J) is the next
    step whichever way it goes, and the label says "down into" or "up from"."""
    steps, by_id = expected_steps(nav_trace)
    up = next(k for k, (s, down) in enumerate(steps) if not down and k + 1 < len(steps) and not steps[k + 1][1])
    app = LiveApp(tmp_path, xserver, "--trace", str(nav_trace), "--step", str(up))
    try:
        s = app.wait(lambda s: s["step"] == up)
        assert s["step_label"].endswith("up from " + steps[up][0]["name"]), s["step_label"]
        assert s["step_label"].startswith(f"{up + 1} / {len(steps)}  floor {token_floor(steps[up], by_id)},")
        app.focus()
        app.key("Right")
        s = app.wait(lambda s: s["step"] == up + 1)
        assert s["direction"] == "up" and "up from " + steps[up + 1][0]["name"] in s["step_label"]
        app.key("Down")  # past the steps up, to the next one down
        want = next(k for k in range(up + 2, len(steps)) if steps[k][1])
        s = app.wait(lambda s: s["step"] == want)
        assert s["direction"] == "down" and s["step_label"].endswith("down into " + steps[want][0]["name"])
        app.key("Home", "Up")  # from the start, to the first step up
        first_up = next(k for k in range(len(steps)) if not steps[k][1])
        s = app.wait(lambda s: s["step"] == first_up)
        assert s["direction"] == "up"
        app.close()
    finally:
        app.proc.kill()


LOOP = "x = descent.ones(2, 2)\nfor i in range(200):\n    x = x + 1"


@pytest.fixture(scope="module")
def loop_trace(tmp_path_factory):
    return traced(tmp_path_factory, "loop", LOOP)


def test_the_timeline_keeps_the_current_span_readable(tmp_path, loop_trace):
    """Following the step, a kernel of one iteration in a 200-iteration loop
    is zoomed to at least 40 px (at the whole trace's scale it is a pixel)."""
    steps, _ = expected_steps(loop_trace)
    kernels = [k for k, (s, down) in enumerate(steps) if down and s["floor"] == 5]
    assert len(steps) > 2000 and len(kernels) >= 200
    for step in (kernels[len(kernels) // 2], kernels[-1]):
        s, png, _ = run_app(tmp_path, "--trace", str(loop_trace), "--step", str(step), "--size", "1280x720",
                            name=f"s{step}")
        view = s["timeline_view"]
        assert view["follow"] and view["current_px"] >= 40, view
        assert s["span"]["inclusive_ns"] * 1280 / view["whole_ns"] < 40, "at the whole trace's scale: too narrow"
        assert view["end_ns"] - view["start_ns"] < view["whole_ns"] / 10, view


def test_jumping_keeps_the_kernel_wide_on_the_timeline(tmp_path, loop_trace, xserver):
    app = LiveApp(tmp_path, xserver, "--trace", str(loop_trace))
    try:
        app.wait(lambda s: s["steps"] > 2000)
        app.focus()
        app.key("End")
        app.wait(lambda s: s["step"] == s["steps"] - 1)
        seen = []
        for _ in range(3):
            before = app.wait(lambda s: True)["step"]
            app.key("shift+e")
            s = app.wait(lambda s: s["step"] < before and s["span"]["floor"] == 5)
            s = app.wait(lambda s: s["timeline_view"]["current_px"] > 0 and s["step"] < before)
            seen.append(s["timeline_view"]["current_px"])
        assert min(seen) >= 40, seen
        app.close()
    finally:
        app.proc.kill()
