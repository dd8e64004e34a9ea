"""Lessons in the app (issue 21): a lesson opened from the picker with real
key presses under Xvfb, a prediction answered wrong and then one right, the
floors ahead kept hidden until the answer, a hint, an exercise checked that
fails and then passes, the progress still there after a restart; and the
headless --lesson options, with the bad input they must name.

Each test keeps its progress in a folder of its own (XDG_DATA_HOME), never
the user's.
"""
import json
import os
import subprocess
import time

import pytest

from test_app import APP, CLI, focus_window, SAMPLE, child_env, run_app, wait_state, xdotool, xserver  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not APP, reason="the app is not built here")

SOLUTION = "y = descent.ones(4, device=device) * 2"  # lessons/00-map.md, the last step's exercise


def start(tmp_path, display, *args):
    """The app in a window on `display`, its state in tmp_path/live.json, its progress in tmp_path/data."""
    state = tmp_path / "live.json"
    if state.exists():
        state.unlink()
    app = subprocess.Popen([APP, "--state", str(state), "--size", "1280x720", *args],
                           env=child_env(DISPLAY=display, XDG_DATA_HOME=str(tmp_path / "data")),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return app, state


def stop(app):
    app.terminate()
    try:
        app.wait(timeout=10)
    except subprocess.TimeoutExpired:
        app.kill()


def lesson(s):
    return s["lesson"]


def idle(s):
    return s["running"] is None and not lesson(s)["busy"]


def test_a_lesson_from_the_picker_answered_with_keys_and_its_progress_kept(tmp_path, xserver):
    app, state = start(tmp_path, xserver, "--code", SAMPLE)
    try:
        wait_state(state, lambda s: s["running"] is None and s["steps"] > 4)
        focus_window(xserver)
        xdotool(xserver, "key", "l")
        s = wait_state(state, lambda s: lesson(s)["tab"] and lesson(s)["catalog"] >= 10 and idle(s))
        names = [e["name"] for e in lesson(s)["progress"]]
        for _ in range(names.index("autograd")):
            picked = lesson(s)["picked"]
            xdotool(xserver, "key", "Down")
            s = wait_state(state, lambda s, p=picked: lesson(s)["picked"] == p + 1)
        xdotool(xserver, "key", "Return")
        s = wait_state(state, lambda s: lesson(s)["open"] and lesson(s)["name"] == "autograd" and idle(s))
        assert lesson(s)["step"] == 0 and lesson(s)["asking"]
        assert "lesson" in s["panels"]
        # Before the answer, the floors ahead of the token do not give it away.
        ahead = [f for f in s["floors"] if f["state"] == "ahead"]
        assert ahead and all("answer the Lesson tab's question" in f["decision"] for f in ahead), ahead
        assert not any("MulBackward0" in f["decision"] for f in s["floors"])
        # Wrong: MulBackward1 (choice 2). The reveal names the right one; the floors ahead stay hidden while
        # the second question waits (the same span holds its answer).
        token = s["span"]["id"]
        xdotool(xserver, "key", "2")
        s = wait_state(state, lambda s: lesson(s)["predictions"][0]["answered"] and idle(s))
        first = lesson(s)["predictions"][0]
        assert first["right"] is False and first["answer"] == "MulBackward0" and first["evidence_span"]
        assert s["span"]["id"] == token and lesson(s)["asking"]
        assert not any("saved=" in f["decision"] for f in s["floors"])
        # Right: "self, other" (choice 2 of the second question). Now the token goes to the evidence.
        xdotool(xserver, "key", "2")
        s = wait_state(state, lambda s: lesson(s)["predictions"][1]["answered"] and idle(s))
        second = lesson(s)["predictions"][1]
        assert second["right"] is True and not lesson(s)["asking"]
        assert s["span"]["id"] == second["evidence_span"] and s["token_floor"] == 4
        assert any("node=MulBackward0" in f["decision"] for f in s["floors"])
        # Right arrow: the next step, its code run and traced.
        xdotool(xserver, "key", "Right")
        s = wait_state(state, lambda s: lesson(s)["open"] and lesson(s)["step"] == 1 and idle(s))
        assert s["trace_spans"] > 0
    finally:
        stop(app)
    # Quit and start again: the picker shows what was done.
    app, state = start(tmp_path, xserver, "--code", SAMPLE)
    try:
        wait_state(state, lambda s: s["running"] is None and s["steps"] > 4)
        focus_window(xserver)
        xdotool(xserver, "key", "l")
        s = wait_state(state, lambda s: lesson(s)["catalog"] >= 10 and idle(s))
        kept = next(e for e in lesson(s)["progress"] if e["name"] == "autograd")
        assert kept["seen"] == 2 and kept["answered"] == 2 and kept["right"] == 1, kept
        # Delete asks, Enter forgets: every lesson back to nothing done.
        xdotool(xserver, "key", "Delete")
        time.sleep(0.3)
        xdotool(xserver, "key", "Return")
        s = wait_state(state, lambda s: idle(s) and all(e["seen"] == 0 for e in lesson(s)["progress"]))
        assert not lesson(s)["open"]
    finally:
        stop(app)


def test_an_exercise_with_a_hint_checked_failing_then_passing(tmp_path, xserver):
    app, state = start(tmp_path, xserver, "--lesson", "map", "--lesson-step", "6")
    try:
        s = wait_state(state, lambda s: lesson(s)["open"] and idle(s) and "exercise" in lesson(s), timeout=60)
        assert lesson(s)["step"] == 5 and lesson(s)["exercise"]["checked"] is False
        focus_window(xserver)
        xdotool(xserver, "key", "ctrl+h")
        wait_state(state, lambda s: lesson(s)["exercise"]["hints_shown"] == 1)
        # The starting code fails its goal.
        xdotool(xserver, "key", "e")
        wait_state(state, lambda s: lesson(s)["exercise"]["editing"])
        xdotool(xserver, "key", "ctrl+Return")
        s = wait_state(state, lambda s: lesson(s)["exercise"]["checked"] and idle(s), timeout=60)
        ex = lesson(s)["exercise"]
        assert ex["passed"] is False and "floor=8" in ex["reason"], ex
        # Escape leaves the editor and keeps what was typed.
        xdotool(xserver, "key", "e")
        wait_state(state, lambda s: lesson(s)["exercise"]["editing"])
        xdotool(xserver, "key", "ctrl+a")
        xdotool(xserver, "type", "--delay", "20", SOLUTION)
        wait_state(state, lambda s: lesson(s)["exercise"]["editor"].strip() == SOLUTION)
        xdotool(xserver, "key", "Escape")
        s = wait_state(state, lambda s: not lesson(s)["exercise"]["editing"])
        assert lesson(s)["exercise"]["editor"].strip() == SOLUTION
        # The solution passes.
        xdotool(xserver, "key", "e")
        wait_state(state, lambda s: lesson(s)["exercise"]["editing"])
        xdotool(xserver, "key", "ctrl+Return")
        s = wait_state(state, lambda s: lesson(s)["exercise"]["passed"] and idle(s), timeout=60)
        assert "the goal is met" in lesson(s)["exercise"]["reason"]
        assert lesson(s)["exercise"]["attempts"] == 2  # the editor's history: each Check's code
        xdotool(xserver, "key", "alt+Up")
        s = wait_state(state, lambda s: lesson(s)["exercise"]["attempt_shown"] == 0)
        assert lesson(s)["exercise"]["editor"].strip() == "y = descent.ones(4) * 2"  # the first, failing, code
        xdotool(xserver, "key", "alt+Down")
        s = wait_state(state, lambda s: lesson(s)["exercise"]["attempt_shown"] == 1)
        assert lesson(s)["exercise"]["editor"].strip() == SOLUTION
        assert any(f["floor"] == 8 and f["span"] for f in s["floors"])  # the student's code reached the device
    finally:
        stop(app)
    progress = json.loads((tmp_path / "data" / "descent" / "progress.json").read_text())
    assert progress["lessons"]["map"]["exercises"] == {"5": True}


# [SECTION] Headless ------------------------------------------------------------------

def test_headless_a_prediction_before_and_after_its_answer(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "autograd", env=env, name="before")
    assert lesson(s)["asking"] and lesson(s)["predictions"][0]["answer"] == ""  # nothing given away
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "autograd", "--answer", "MulBackward0",
                      "--answer", "a", env=env, name="after")
    first, second = lesson(s)["predictions"]
    assert first["answered"] and first["right"] and first["answer"] == "MulBackward0"
    assert second["answered"] and not second["right"] and second["answer"] == "self, other"
    assert s["span"]["id"] == second["evidence_span"]


def test_while_a_question_waits_the_token_stays_above_its_answer(tmp_path):
    """Asked for a step past the question (--step), the token stays where the step parked it, the
    floors ahead stay hidden, and the status line says why."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "map", "--lesson-step", "1", env=env, name="parked")
    parked = s["step"]
    assert lesson(s)["asking"] and parked + 2 < s["steps"]
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "map", "--lesson-step", "1",
                      "--step", str(s["steps"] - 1), env=env, name="held")
    assert lesson(s)["asking"] and s["step"] == parked
    assert "answer the question first" in json.dumps(s)
    ahead = [f for f in s["floors"] if f["state"] == "ahead"]
    assert ahead and all(f["decision"] == "(answer the Lesson tab's question first)" for f in ahead), ahead


def test_a_step_with_a_pytorch_profile_opens_it_in_the_compare_tab(tmp_path):
    """Lesson 9's ```compare step: PyTorch's own profile of the same code, beside descent's trace."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    s, _, _ = run_app(tmp_path, "--size", "1280x720", "--lesson", "training-step", "--lesson-step", "2", env=env,
                      name="compare")
    assert s["compare"] and s["compare"].endswith("torch_profile_cpu_mlp_step.json"), s["compare"]


def test_headless_lesson_bad_input_is_named(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    _, _, p = run_app(tmp_path, "--lesson", "no-such-lesson", env=env, name="missing", rc=2)
    assert "no lesson called 'no-such-lesson'" in p.stderr
    _, _, p = run_app(tmp_path, "--lesson", "autograd", "--lesson-step", "99", env=env, name="step", rc=2)
    assert "not 99" in p.stderr
    _, _, p = run_app(tmp_path, "--lesson", "autograd", "--answer", "1", "--answer", "1", "--answer", "1",
                      env=env, name="answers", rc=2)
    assert "--answer: the step has 2 question(s)" in p.stderr
    for args in (["--answer", "1"], ["--lesson", "map", "--code", SAMPLE]):
        r = subprocess.run([APP, *args], capture_output=True, text=True, timeout=30, env=child_env())
        assert r.returncode == 2 and "--lesson" in r.stderr


def test_headless_check_of_a_pipe_or_a_missing_file_is_named_not_a_hang(tmp_path):
    """--check reads the code through Note [Reading app.conf safely]: a named pipe at the path would block a
    plain read for ever (issue 41)."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    fifo = tmp_path / "code.py"
    os.mkfifo(fifo)
    began = time.monotonic()
    _, _, p = run_app(tmp_path, "--lesson", "map", "--lesson-step", "6", "--check", str(fifo), env=env,
                      name="fifo", rc=2)
    assert f"--check: {fifo}: not a regular file (a named pipe)" in p.stderr, p.stderr
    assert time.monotonic() - began < 100
    missing = tmp_path / "none.py"
    _, _, p = run_app(tmp_path, "--lesson", "map", "--lesson-step", "6", "--check", str(missing), env=env,
                      name="missing", rc=2)
    assert f"--check: {missing}: no such file" in p.stderr, p.stderr


def test_a_malformed_lesson_is_named_and_the_others_still_open(tmp_path):
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    good = "# Good\n\n```lesson\nteaches: t\nassumes: a\n```\n\n## One\n\n```run cpu\ny = descent.ones(2) + 1\n```\n"
    (lessons / "01-good.md").write_text(good)
    (lessons / "02-bad.md").write_text("# Bad\n\n```lesson\nteaches: t\n```\n")
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "DESCENT_LESSONS": str(lessons)}
    # A lesson from outside the installed folder runs nothing until trusted (Note [Trusting a lesson]).
    # The CLI runs Python over descent._C: it keeps the ASan preload that child_env drops for the app.
    subprocess.run([CLI, "lesson", "--trust", str(lessons / "01-good.md")], env=dict(os.environ, **env), check=True,
                   stdout=subprocess.DEVNULL)
    s, _, _ = run_app(tmp_path, "--lesson", "good", env=env, name="good")
    assert lesson(s)["open"] and lesson(s)["name"] == "good"
    bad = next(e for e in lesson(s)["progress"] if e["name"] == "bad")
    assert "02-bad.md:3:" in bad["error"] and "assumes" in bad["error"], bad
    _, _, p = run_app(tmp_path, "--lesson", "bad", env=env, name="bad", rc=2)
    assert "02-bad.md:3" in p.stderr and "assumes" in p.stderr
