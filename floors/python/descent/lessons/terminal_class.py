"""A class's answers: `--answers-to DIR` writes each student's answers into a shared folder, `--tally DIR`
counts them (Note [A class's answers])."""
import os
import re
import sys

from . import store
from .terminal_text import echo

# Note [A class's answers]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A teacher asking a class wants to see how many picked each choice before
# revealing the answer, without a server: every student's terminal runs
# `descent lesson NAME --answers-to DIR`, DIR a folder they all can write (a
# network share, a shared home), and each answer is one small file,
# DIR/LESSON/step-KK-q-N/STUDENT.txt, holding the choice's index (or the
# typed text); a student who answers again replaces their own file, whole
# (store.write_atomic), so a count is one answer per student.
# `descent lesson NAME --tally DIR` reads the folder and prints, for each
# question, how many chose each choice (and how many answered), so the
# presenter can show it. The student's name is --student, else $USER@host;
# it becomes a file name, so only letters, digits and . _ - @ are kept.

class ClassFolder:
    """Where --answers-to writes a student's answers (Note [A class's answers])."""

    def __init__(self, root, lesson, student=None):
        import getpass
        import socket
        if student is None:
            try:
                student = f"{getpass.getuser()}@{socket.gethostname()}"
            except (KeyError, OSError):
                student = f"student-{os.getpid()}"
        self.student = file_name(student)
        if not self.student:
            raise ValueError(f"--student {student!r} leaves no letter or digit for a file name")
        self.folder = os.path.join(root, file_name(lesson.name))
        os.makedirs(self.folder, exist_ok=True)

    def record(self, i, k, entry, typed):
        from .selector import reading_of
        d = os.path.join(self.folder, f"step-{i + 1:02d}-q-{k + 1}")
        choice = reading_of(typed, entry["choices"]) if entry["choices"] else None
        text = str(choice) if choice is not None else typed.strip()
        try:
            os.makedirs(d, exist_ok=True)
            store.write_atomic(os.path.join(d, self.student + ".txt"), (text + "\n").encode("utf-8"))
        except OSError as e:
            echo(f"(your answer was not written into {d}: {store.reason(e)})")


def file_name(text):
    return re.sub(r"[^A-Za-z0-9._@-]", "_", text).strip("._")[:80]


def cmd_tally(lesson, args):
    """Counts the class's answers in args.tally per question and choice (Note [A class's answers])."""
    folder = os.path.join(args.tally, file_name(lesson.name))
    if not os.path.isdir(folder):
        echo(f"descent lesson: no answers to '{lesson.name}' in {args.tally} (students write them with "
             f"descent lesson {lesson.name} --answers-to {args.tally})", file=sys.stderr)
        return 1
    steps = range(len(lesson.steps)) if args.step is None else [args.step - 1]
    for i in steps:
        if not 0 <= i < len(lesson.steps):
            echo(f"descent lesson: '{lesson.name}' has steps 1 to {len(lesson.steps)}, not {args.step}",
                 file=sys.stderr)
            return 2
        for k, p in enumerate(lesson.steps[i].predictions):
            d = os.path.join(folder, f"step-{i + 1:02d}-q-{k + 1}")
            picked = []
            try:
                names = sorted(n for n in os.listdir(d) if n.endswith(".txt"))
            except OSError:
                names = []
            for n in names:
                try:
                    data = store.read_bytes(os.path.join(d, n), 4096)
                except store.Unreadable:
                    continue
                if data is not None:
                    picked.append(data.decode("utf-8", "replace").strip())
            echo(f"Step {i + 1}, question {k + 1}: {p.ask}")
            echo(f"  {len(picked)} answer{'s' if len(picked) != 1 else ''}")
            if p.choices:
                for j, c in enumerate(p.choices):
                    n = picked.count(str(j))
                    echo(f"  {chr(ord('a') + j)}) {n:3}  {'#' * n:20}  {c}")
            else:
                counts = {}
                for a in picked:
                    counts[a] = counts.get(a, 0) + 1
                for a, n in sorted(counts.items(), key=lambda kv: -kv[1])[:12]:
                    echo(f"  {n:3}  {a}")
            echo()
    return 0
