"""The beginner's story (issue 23, Note [The beginner's story] in ui/story.h): helper spans (Python helpers
under a statement, each redispatch of an op) folded into their parents, on a flag and on the V key, at the
same moment of the call."""
import subprocess

import pytest

from test_app import APP, focus_window, CLI, SAMPLE, SAMPLE_STEPS, child_env, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)

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
        wait_state(state, lambda s: s["running"] is None and s["steps"] == SAMPLE_STEPS)
        focus_window(xserver)
        xdotool(xserver, "key", "Next")
        wait_state(state, lambda s: s["step"] == 10)
        xdotool(xserver, "key", "Next")
        s = wait_state(state, lambda s: s["step"] == 20)
        span, name = s["span"]["id"], s["span"]["name"]
        xdotool(xserver, "key", "v")
        s = wait_state(state, lambda s: s["fold_helpers"])
        # The four redispatches (ones, add, _to_copy, empty_strided) fold into their calls: 8 steps fewer.
        assert s["steps"] == SAMPLE_STEPS - 8 and s["span"]["name"] != ""
        xdotool(xserver, "key", "v")
        s = wait_state(state, lambda s: not s["fold_helpers"])
        assert s["steps"] == SAMPLE_STEPS
        # Back where it was, or on the call a folded redispatch of the same op went into.
        assert s["span"]["id"] == span or s["span"]["name"] == name
    finally:
        app.terminate()
        app.wait(timeout=10)


TUTORIAL_STEP = """import descent.nn as nn
xx = descent.linspace(-3.0, 3.0, 200).unsqueeze(-1).pow(descent.tensor([1, 2, 3]))
y = descent.sin(descent.linspace(-3.0, 3.0, 200))
model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
loss_fn = nn.MSELoss(reduction="sum")
y_pred = model(xx)
loss = loss_fn(y_pred, y)
model.zero_grad()
loss.backward()
with descent.no_grad():
    for param in model.parameters():
        param -= 1e-6 * param.grad"""


def test_a_tutorial_training_step_descends_the_floors(tmp_path):
    """Issue 22: the nn tutorial's step (forward, loss, backward, the update under no_grad) in the app: the
    module's forward is a floor-1 span, and linear decomposes on floor 3 into t and addmm, as in PyTorch."""
    s, _, _ = run_app(tmp_path, "--code", TUTORIAL_STEP, "--size", "1280x720", name="tutorial")
    assert s["error"] == "" and s["steps"] > 100
    saved = tmp_path / "step.descent"
    subprocess.run([CLI, "trace", TUTORIAL_STEP, "--save", str(saved)], check=True, capture_output=True, timeout=120)
    text = saved.read_text()
    spans = [line.split(" ") for line in text.splitlines() if line.startswith("span ")]
    by_id = {sp[1]: sp for sp in spans}
    names = {(sp[3], sp[7]) for sp in spans}  # (floor, name)
    assert ("1", "Linear.forward") in names and ("1", "Sequential.forward") in names
    linear = [sp for sp in spans if sp[7] == "aten::linear" and sp[3] == "3"]
    assert linear
    kids = {sp[7] for sp in spans if sp[2] == linear[0][1]}
    assert {"aten::t", "aten::addmm"} <= kids, kids
    assert ("3", "aten::mse_loss") in names
    # (descent's format writes a name's spaces as \s)
    assert ("4", "autograd::engine::evaluate_function:\\sAddmmBackward0") in names, sorted(names)
