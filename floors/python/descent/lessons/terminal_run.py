"""`descent lesson NAME`: a lesson's steps in the terminal, its predictions asked on stdin (or taken from
--answers), and the exercises' hints (`--hints`, `--solution`)."""
import sys
import textwrap

from . import progress, run_step, store
from . import runner as _runner
from .terminal_class import ClassFolder
from .terminal_text import RULE, echo, indent, line_count


class _Answers:
    """Where answers come from: the --answers list, else stdin (EOF: no answer). At the prompt, an answer
    that cannot be read (a letter past the choices, a word for a number) is asked again; from the list it
    is judged as it is, wrong."""

    def __init__(self, given):
        self.given = None if given is None else [a.strip() for a in given.split(",")]
        self.class_folder = None  # a ClassFolder (--answers-to), or None

    def next(self, prompt, why_not=lambda typed: ""):
        if self.given is not None:
            if not self.given:
                echo(f"{prompt}(no answer given)")
                return None
            a = self.given.pop(0)
            echo(f"{prompt}{a}")
            if why_not(a):
                echo(f"({why_not(a)}: judged wrong)")
            return a
        while True:
            try:
                typed = input(prompt)
            except EOFError:
                echo("(no answer)")
                return None
            problem = why_not(typed)
            if not problem:
                return typed
            echo(f"{problem}. Try again (Ctrl+D shows the answer).")

    def skip(self):
        """Drops the listed answer of a question that cannot be asked, so the next ones stay in step."""
        if self.given:
            self.given.pop(0)


def _unreadable(entry, typed):
    """Why `typed` is no answer to the prediction `entry` at all ("" when it is one, right or wrong)."""
    from .selector import number_in, reading_of
    t = typed.strip()
    choices = entry["choices"]
    if not t:
        return "no answer typed"
    if choices:
        if reading_of(t, choices) is not None:
            return ""
        last = len(choices)
        return (f"'{t}' is none of the choices: type a letter a to {chr(ord('a') + last - 1)}, a number 1 to "
                f"{last}, or a choice's text")
    if entry["kind"] == "number" and number_in(t, entry["ask"]) is None:
        return f"'{t}' is not a number" + (" in a unit the question asks in" if any(c.isdigit() for c in t) else "")
    return ""



def cmd_run(lesson, args):
    answers = _Answers(args.answers)
    if args.answers_to:
        try:
            answers.class_folder = ClassFolder(args.answers_to, lesson, args.student)
        except (OSError, ValueError) as e:
            why = store.reason(e) if isinstance(e, OSError) else str(e)
            echo(f"descent lesson: --answers-to: cannot write into {args.answers_to}: {why}", file=sys.stderr)
            return 2
    steps = range(len(lesson.steps))
    if args.step is not None:
        if not 1 <= args.step <= len(lesson.steps):
            echo(f"descent lesson: '{lesson.name}' has steps 1 to {len(lesson.steps)}, not {args.step}",
                  file=sys.stderr)
            return 2
        steps = [args.step - 1]
    questions = sum(len(lesson.steps[i].predictions) for i in steps)
    if answers.given is not None and len(answers.given) > questions:
        where = f"step {args.step} of '{lesson.name}'" if args.step is not None else f"'{lesson.name}'"
        echo(f"descent lesson: --answers: {where} has {questions} question(s), not {len(answers.given)}",
              file=sys.stderr)
        return 2
    number = f" {lesson.number}" if lesson.number is not None else ""
    echo(f"Lesson{number}: {lesson.title}\n")
    echo(f"What it teaches: {lesson.teaches}")
    echo(f"What it assumes: {lesson.assumes}\n")
    if lesson.intro and args.step is None:
        echo(lesson.intro + "\n")
    asked = right = 0
    for i in steps:
        step = lesson.steps[i]
        echo(f"{RULE} Step {i + 1} of {len(lesson.steps)}: {step.title} {RULE}\n")
        if step.prose:
            echo(step.prose + "\n")
        if step.setup is not None:  # Note [Nothing runs unseen]
            echo(f"First, untraced, the step's setup ({line_count(step.setup.text)}):\n{indent(step.setup.text)}\n")
        if step.run is not None:
            device = _runner.device_name(step.run.device)
            sim = " (a simulated device: this machine has no NVIDIA GPU)" if device == "sim:0" else ""
            echo(f"The code, run on {device}{sim}:\n{indent(step.run.text)}\n")
            r = run_step(lesson, i)
            for k, entry in enumerate(r["predictions"]):
                asked += 1
                right += _ask(lesson, i, k, entry, r, answers)
            if r["output"]:  # after the questions: what a step prints may be an answer
                echo(f"It printed:\n{indent(r['output'])}\n")
            if r["tree"]:
                echo(f"The trace:\n{r['tree'].rstrip()}\n")
            if r.get("compare"):
                echo(f"PyTorch's own profile of the same code: {r['compare']}\n(beside descent's trace: "
                      f"descent app --lesson {lesson.name} --lesson-step {i + 1}, then 3 for the Compare tab)\n")
            if r["error"]:
                echo(f"The code raised (this is the step's outcome):\n{indent(r['error'])}\n")
            for look in r["looks"]:
                if look["problem"]:
                    echo(f"Look at: {look['selector']} -- {look['problem']}\n")
                else:
                    value = f" = {look['value']}" if look["value"] is not None else ""
                    echo(f"Look at ({look['selector']}){value}:\n    {look['span']['line_text']}\n")
        if step.exercise is not None:
            show_exercise(lesson, i)
        progress.mark_seen(lesson.name, i)
    if asked:
        echo(f"{right} of {asked} predictions right.")
    return 0 if right == asked else 1


# Note [Nothing runs unseen]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A step's ```setup runs untraced before its code, so its trace never shows
# it; the terminal prints it, whole, before the step runs, and then the code
# itself. Whole rather than folded to one line: the setup is where the names
# the step's questions are about are made (the longest in lessons/ is 18
# lines), and a fold would hide exactly the lines that run unseen. What a
# lesson from outside the lessons folder runs beyond that (its answers'
# python, its checks) is shown once, when it is trusted (cmd_trust, terminal.py).


def _ask(lesson, i, k, entry, result, answers):
    """Asks prediction k of step i, then reveals the answer with its evidence. Returns whether it was right."""
    from . import answer
    echo(f"Predict: {entry['ask']}")
    for j, c in enumerate(entry["choices"]):
        echo(f"  {chr(ord('a') + j)}) {c}")
    if entry["problem"]:
        answers.skip()
        echo(f"(this question cannot be answered here: {entry['problem']})\n")
        return False
    hint = " (a letter)" if entry["choices"] else (f" (a number, {entry['tolerance']})" if entry["tolerance"]
                                                   else "")
    typed = answers.next(f"Your answer{hint}: ", lambda t: _unreadable(entry, t))
    if typed is None:
        echo(f"The answer: {entry['answer_text']}.")
        verdict = False
    else:
        verdict = answer(lesson, i, k, typed, result)["right"]
        if answers.class_folder is not None:
            answers.class_folder.record(i, k, entry, typed)
        echo(("Right: " if verdict else "Not quite: the answer is ") + f"{entry['answer_text']}.")
    if entry["evidence"]:
        echo(f"The evidence, from this run's trace:\n{indent(entry['evidence'])}")
    if entry["explain"]:
        echo(textwrap.fill(entry["explain"], 100))
    echo()
    return verdict

def show_exercise(lesson, i):
    ex = lesson.steps[i].exercise
    which = [j for j, _ in lesson.exercises()].index(i) + 1
    flag = f" --exercise {which}" if len(lesson.exercises()) > 1 else ""
    echo(f"Exercise: {ex.goal}\n")
    echo(f"Starting code (on {_runner.device_name(ex.device)}):\n{indent(ex.start.text)}\n")
    echo(f"Write your version in a file and check it:  descent lesson {lesson.name} --check FILE.py{flag}")
    echo(f"A hint:  descent lesson {lesson.name} --hints    (the solution: --solution)\n")


def cmd_hints(lesson, solution):
    exercises = lesson.exercises()
    if not exercises:
        echo(f"'{lesson.name}' has no exercise")
        return 0
    for n, (i, ex) in enumerate(exercises, 1):
        echo(f"Exercise {n} (step {i + 1}): {ex.goal}")
        for h in ex.hints:
            echo(textwrap.fill(h, 100, initial_indent="  hint: ", subsequent_indent="        "))
        if solution:
            echo(f"  the solution:\n{indent(ex.solution.text, '    ')}")
        echo()
    return 0
