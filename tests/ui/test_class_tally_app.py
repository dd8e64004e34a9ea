"""A class's answers in the presenter's Lesson tab (issue 43): the app, run with
--answers-from DIR, counts the files the students' terminals wrote there
(`descent lesson NAME --answers-to DIR`, Note [A class's answers]) under the
waiting question, and gives the answer away no more than without them."""
import re

from test_app import run_app  # noqa: F401  (skips without the app or Xvfb: test_app's pytestmark)
from test_app import pytestmark  # noqa: F401


def tally_texts(state):
    return [t["fit"]["text"] for t in state["texts"] if t["panel"] == "tally"]


def test_the_class_tally_counts_each_students_pick_and_hides_the_answer(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    answers = tmp_path / "answers"
    answers.mkdir()
    args = ["--size", "1280x720", "--presenter", "--lesson", "map", "--lesson-step", "1", "--answers-from", str(answers)]
    s, _, _ = run_app(tmp_path, *args, env=env, name="none")
    lesson = s["lesson"]
    assert lesson["asking"]
    texts = tally_texts(s)
    assert texts and texts[0].startswith("The class: 0 answers yet"), texts
    name = re.sub(r"[^A-Za-z0-9._@-]", "_", lesson["name"]).strip("._")[:80]  # terminal_class.py's file_name
    q = answers / name / "step-01-q-1"
    q.mkdir(parents=True)
    for student, pick in [("ana", "1"), ("bo", "1"), ("cy", "0"), ("dee", "not a choice")]:
        (q / f"{student}.txt").write_text(pick + "\n")
    s, _, _ = run_app(tmp_path, *args, env=env, name="four")
    texts = tally_texts(s)
    assert texts[0] == "The class: 4 answers", texts
    counts = [int(t) for t in texts[1:] if t.isdigit()]  # each choice's count, beside its button
    assert counts[:2] == [1, 2], texts
    assert "1 named no choice" in texts
    assert s["lesson"]["asking"] and s["lesson"]["predictions"][0]["answer"] == ""  # still nothing given away
