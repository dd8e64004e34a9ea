"""The lesson file: Markdown with a few fenced blocks, read into plain data.

lessons/README.md is the author's guide; this is its grammar, in the order a
file is read (Note [The lesson format]):

    # Title                         the first line that is not blank
    ```lesson                       teaches: and assumes: (both required)
    prose ...                       the introduction (optional)
    ## Step title                   each step, one or more
    prose, and in any order:
    ```setup                        code run first, untraced (at most one)
    ```run [cpu|gpu] [raises]       the code the step traces (at most one)
    ```look                         selectors: what to look at (needs run)
    ```predict                      ask:, choices:, answer:, tolerance:, explain:
    ```exercise                     goal:, check: (1+), hint: (1+), device:, limit:
    ```start                        the exercise's starting code (follows it)
    ```solution                     its reference solution (follows it)
    ```teacher                      notes for the teacher: never on the projected window
    ```compare                      a PyTorch profile (torch.profiler's JSON) of the same code,
                                    its path from the lesson's folder: the app opens it in the
                                    Compare tab, the step's code reads it as `pytorch` (a Trace)

Any other fenced block (```python, ```text) is prose, shown as it is.

Note [The lesson format]
~~~~~~~~~~~~~~~~~~~~~~~~
A teacher writes and reviews a lesson without compiling anything, so the file
is Markdown that reads well on its own (GitHub shows it as a page), and the
parts a program needs are fenced blocks whose first word says what they are.
Inside the data blocks (lesson, look, predict, exercise) each line is
`key: value`; a value goes on over the lines after it that are indented by
two spaces or more; `choices:` is followed by lines `- choice`; a line
starting with `#` is a comment. The parser reads every line once and stops at
the first problem with a LessonError naming the file, the line and what was
expected there: a lesson is short, and one clear error at a time is what an
author fixes. Code blocks are compiled here, so a syntax error is reported at
its line in the lesson, not when a student reaches the step. Nothing here runs
code: that is runner.py's, and the answers are computed there from the
step's own trace (selector.py).
"""
from dataclasses import dataclass, field
import functools
import hashlib
import os
import re
import warnings

from . import selector as _selector
from . import store as _store

DEVICES = ("cpu", "gpu")
CODE_BLOCKS = ("setup", "run", "start", "solution")
DATA_BLOCKS = ("lesson", "look", "predict", "exercise")
TEXT_BLOCKS = ("teacher", "compare")
BLOCKS = CODE_BLOCKS + DATA_BLOCKS + TEXT_BLOCKS
# The languages a fenced block of prose may name (shown as it is); any other first word is an error, so that
# a misspelt block of ours (```predcit) is not shown to the student as prose, its answer: line and all.
PROSE_LANGUAGES = ("", "python", "py", "pycon", "text", "txt", "output", "console", "sh", "bash", "shell", "c", "cpp",
                   "c++", "cuda", "json", "yaml", "toml", "ini", "cmake", "diff", "markdown", "md", "math")
PREDICT_KEYS = ("ask", "choices", "answer", "tolerance", "explain", "allow")
ALLOWS = ("answer-in-prose", "earlier-trace")  # the validator's warnings a question may silence (`allow:`)
EXERCISE_KEYS = ("goal", "check", "hint", "device", "limit")
LESSON_KEYS = ("teaches", "assumes")
DEFAULT_LIMIT_S = 10.0  # an exercise's time limit when it names none
MAX_LIMIT_S = 600.0
MAX_LESSON_BYTES = 4 << 20  # 4 MiB: the longest lesson is about 20 KiB


class LessonError(Exception):
    """A lesson file that cannot be read: `path:line: what was expected`."""

    def __init__(self, path, line, message):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


@dataclass
class Code:
    text: str
    line: int              # the line of the file where the code's first line is
    device: str = "cpu"    # "cpu" or "gpu"
    compiled: object = None
    raises: bool = False   # a run block marked `raises`: its code is meant to raise (the error is the lesson)


@dataclass
class Prediction:
    ask: str
    answer: "_selector.Answer"
    line: int
    choices: list = field(default_factory=list)   # empty: a typed answer
    tolerance: "_selector.Tolerance" = None
    explain: str = ""
    allow: tuple = ()  # warnings of the validator this question silences (ALLOWS)


@dataclass
class Exercise:
    goal: str
    checks: list           # [(expression text, compiled, line)]
    hints: list
    line: int
    device: str = "cpu"
    limit_s: float = DEFAULT_LIMIT_S
    start: Code = None
    solution: Code = None


@dataclass
class Step:
    title: str
    line: int
    prose: str = ""
    setup: Code = None
    run: Code = None
    looks: list = field(default_factory=list)        # [Selector]
    predictions: list = field(default_factory=list)  # [Prediction]
    exercise: Exercise = None
    teacher: str = ""  # the teacher's notes: the app prints them in its terminal, off the projector
    compare: str = ""  # a PyTorch profile of the same code (a path), for the Compare tab and `pytorch`


@dataclass
class Lesson:
    name: str              # from the file name: 03-dispatcher.md is "dispatcher"
    number: int            # 3, or None when the file name has no number
    path: str
    title: str
    teaches: str
    assumes: str
    intro: str = ""
    steps: list = field(default_factory=list)
    sha256: str = ""       # of the file's bytes as they were read: what trust.py records (Note [Trusting a lesson])
    source: str = field(default="", repr=False)  # the text parsed, for the grader's child (runner.check_in_child)

    def predictions(self):
        """[(step index, prediction)] in the order they are asked."""
        return [(i, p) for i, s in enumerate(self.steps) for p in s.predictions]

    def exercises(self):
        """[(step index, exercise)]."""
        return [(i, s.exercise) for i, s in enumerate(self.steps) if s.exercise is not None]


_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z_-]*)[ \t]*:(.*)$")
_NAME = re.compile(r"^(?:(\d{1,3})-)?([a-z0-9][a-z0-9-]*)\.md$")


def name_of(path):
    """(number, name) from a lesson file's name: '03-dispatcher.md' -> (3, 'dispatcher'); None when it is not one."""
    m = _NAME.match(os.path.basename(path))
    if not m:
        return None
    return (int(m.group(1)) if m.group(1) is not None else None), m.group(2)


def parse_file(path):
    """The Lesson in the file at `path`, read once (its sha256 is of the bytes parsed); LessonError for a
    file that is not one. A FIFO, a device or a file over MAX_LESSON_BYTES is refused unread (Note [Files a
    lesson keeps])."""
    try:
        data = _store.read_bytes(path, MAX_LESSON_BYTES)
    except _store.Unreadable as e:
        raise LessonError(path, 0, f"cannot read the file: {e}") from None
    if data is None:
        raise LessonError(path, 0, "cannot read the file: No such file or directory")
    return parse(data, path)


def parse(data, path="<lesson>"):
    """The Lesson in `data` (str or bytes); LessonError naming `path` and a line when it is not one."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise LessonError(path, line, f"expected UTF-8 text, found the byte 0x{data[e.start]:02x}") from None
    lesson = _Parser(path, text).lesson()
    lesson.sha256, lesson.source = digest, text
    return lesson


class _Parser:
    def __init__(self, path, text):
        self.path = path
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.i = 0  # the index of the next line to read

    def fail(self, line, message):
        raise LessonError(self.path, line, message)

    # [SECTION] The file, top to bottom -------------------------------------------------------

    def lesson(self):
        naming = name_of(self.path)
        number, name = naming if naming else (None, os.path.splitext(os.path.basename(self.path))[0])
        if any("\x00" in raw for raw in self.lines):
            self.fail(next(n for n, raw in enumerate(self.lines, 1) if "\x00" in raw),
                      "expected text, found a NUL character")
        self.skip_blank()
        if self.i >= len(self.lines):
            self.fail(max(1, len(self.lines)), "expected the lesson's title ('# Title'), found an empty file")
        first = self.lines[self.i]
        if not first.startswith("# ") or not first[2:].strip():
            self.fail(self.i + 1, f"expected the lesson's title ('# Title') as the first line, found {_show(first)}")
        title = first[2:].strip()
        self.i += 1
        self.skip_blank()
        start = self.i + 1
        if self.i >= len(self.lines):
            self.fail(len(self.lines), "expected a ```lesson block (teaches: and assumes:) after the title")
        kind, args, body, body_line = self.fence_or_none(known_only=False)
        if kind != "lesson":
            self.fail(start, "expected a ```lesson block (teaches: and assumes:) after the title")
        meta = self.fields(body, body_line, "lesson", LESSON_KEYS, lists=())
        for key in LESSON_KEYS:
            if key not in meta:
                self.fail(start, f"the lesson block needs '{key}:'")
        lesson = Lesson(name, number, self.path, title, meta["teaches"][0][0], meta["assumes"][0][0])
        lesson.intro = self.prose_until_step()
        while self.i < len(self.lines):
            lesson.steps.append(self.step())
        if not lesson.steps:
            self.fail(len(self.lines), "expected at least one step ('## Step title')")
        return lesson

    def skip_blank(self):
        while self.i < len(self.lines) and not self.lines[self.i].strip():
            self.i += 1

    def prose_until_step(self):
        """The prose up to the next '## ' heading; a block of ours there is an error (it belongs to a step)."""
        out = []
        while self.i < len(self.lines) and not self.lines[self.i].startswith("## "):
            line_no = self.i + 1
            kind, _, body, _ = self.fence_or_none(prose=out)
            if kind in BLOCKS:
                self.fail(line_no, f"a ```{kind} block belongs in a step: expected '## Step title' before it")
        return "\n".join(out).strip("\n")

    def step(self):
        line_no = self.i + 1
        heading = self.lines[self.i]
        if not heading[3:].strip():
            self.fail(line_no, "expected a step title after '## '")
        step = Step(heading[3:].strip(), line_no)
        self.i += 1
        prose = []
        pending_exercise = None  # an exercise whose start or solution block is still to come
        while self.i < len(self.lines) and not self.lines[self.i].startswith("## "):
            at = self.i + 1
            kind, args, body, body_line = self.fence_or_none(prose=prose)
            if kind is None or kind not in BLOCKS:
                continue
            if kind in ("setup", "run"):
                if kind == "setup" and args:
                    self.fail(at, "expected nothing after ```setup: it runs on the device of the code it prepares")
                if getattr(step, kind) is not None:
                    self.fail(at, f"a step has at most one ```{kind} block (the first is at line "
                                  f"{getattr(step, kind).line - 1})")
                setattr(step, kind, self.code(kind, args, body, body_line, at))
            elif kind == "look":
                if args:
                    self.fail(at, f"expected nothing after ```look, found {_show(args)}")
                step.looks.extend(self.selectors(body, body_line, at))
            elif kind == "predict":
                if args:
                    self.fail(at, f"expected nothing after ```predict, found {_show(args)}")
                step.predictions.append(self.prediction(body, body_line, at))
            elif kind == "exercise":
                if step.exercise is not None:
                    self.fail(at, f"a step has at most one exercise (the first is at line {step.exercise.line})")
                if args:
                    self.fail(at, f"expected nothing after ```exercise, found {_show(args)}")
                step.exercise = pending_exercise = self.exercise(body, body_line, at)
            elif kind == "compare":
                if args:
                    self.fail(at, f"expected nothing after ```compare, found {_show(args)}")
                paths = [ln.strip() for ln in body if ln.strip()]
                if len(paths) != 1 or step.compare:
                    self.fail(at, "a step has one ```compare block, holding one path (a PyTorch profile)")
                full = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(self.path)), paths[0]))
                if not os.path.isfile(full):
                    self.fail(body_line, f"no PyTorch profile at {paths[0]} (a path from the lesson's folder)")
                step.compare = full
            elif kind == "teacher":
                if args:
                    self.fail(at, f"expected nothing after ```teacher, found {_show(args)}")
                text = "\n".join(body).strip("\n")
                step.teacher = f"{step.teacher}\n\n{text}" if step.teacher else text
            elif kind == "lesson":
                self.fail(at, "a lesson has one ```lesson block, right after its title")
            else:  # start, solution
                if pending_exercise is None:
                    self.fail(at, f"a ```{kind} block must follow its ```exercise block in the same step")
                if getattr(pending_exercise, kind) is not None:
                    self.fail(at, f"the exercise already has a ```{kind} block")
                if args:
                    self.fail(at, f"expected nothing after ```{kind} (the exercise's device: is in its block), "
                                  f"found {_show(args)}")
                code = self.code(kind, pending_exercise.device, body, body_line, at)
                setattr(pending_exercise, kind, code)
        step.prose = "\n".join(prose).strip("\n")
        end = self.i  # the step's last line, for the errors below
        if step.run is None and step.exercise is None:
            self.fail(line_no, "expected a ```run block or an ```exercise block in this step")
        if (step.looks or step.predictions) and step.run is None:
            self.fail(line_no, "a step with ```look or ```predict needs a ```run block: they read its trace")
        if step.exercise is not None:
            for kind in ("start", "solution"):
                if getattr(step.exercise, kind) is None:
                    self.fail(end, f"expected a ```{kind} block for the exercise at line {step.exercise.line}")
        return step

    # [SECTION] Fenced blocks ---------------------------------------------------------------

    def fence_or_none(self, prose=None, known_only=True):
        """At a fence: reads the whole block and returns (kind, args, body lines, line of the body's first
        line); prose blocks (other kinds) go into `prose` as they are. Elsewhere: one line of prose.
        Returns kind None for prose."""
        lines, i = self.lines, self.i
        line = lines[i]
        if line[:3] not in ("```", "~~~"):
            # Prose: take every line up to the next fence or step heading at once.
            end, n = i + 1, len(lines)
            while end < n and lines[end][:3] not in ("```", "~~~", "## "):
                end += 1
            if prose is not None:
                prose.extend(lines[i:end])
            self.i = end
            return None, "", [], 0
        m = _FENCE.match(line)
        if not m:
            if prose is not None:
                prose.append(line)
            self.i += 1
            return None, "", [], 0
        fence, info = m.group(1), m.group(2)
        if fence[0] == "`" and "`" in info:  # `` ```x``` `` is inline code, not a fence (CommonMark)
            if prose is not None:
                prose.append(line)
            self.i += 1
            return None, "", [], 0
        words = info.split()
        kind = words[0] if words else ""
        start = self.i
        self.i += 1
        body = []
        j, n, mark = self.i, len(lines), fence[:3]
        shown_kind = f"{fence}{kind}" if kind else fence
        while True:
            if j >= n:
                self.fail(start + 1, f"this {shown_kind} block is never closed: expected a line '{fence}' after it")
            text = lines[j]
            j += 1
            if text[:1] in "`~ ":
                closing = text.strip()
                if closing[:3] == mark and len(closing) >= len(fence) and closing == fence[0] * len(closing):
                    break
                opened = _FENCE.match(text)
                if opened and opened.group(1) == fence and opened.group(2).split() and "`" not in opened.group(2):
                    # A fence as long as ours with a word after it opens a block: ours was never closed (the
                    # next bare fence would close it, and the rest of the file would be read askew).
                    self.fail(start + 1, f"this {shown_kind} block is never closed: line {j} opens "
                                         f"{_show(text.strip())} inside it (expected a line '{fence}' before it)")
            body.append(text)
        self.i = j
        if known_only and kind not in BLOCKS and kind.lower() not in PROSE_LANGUAGES:
            self.fail(start + 1, f"unknown block kind {_show(kind)}: expected one of the lesson's blocks "
                                 f"({', '.join(BLOCKS)}) or a language for a block of prose "
                                 f"({', '.join(k for k in PROSE_LANGUAGES if k)})")
        if kind not in BLOCKS:
            if prose is not None:
                prose.extend(self.lines[start:self.i])
            return None, "", [], 0
        return kind, " ".join(words[1:]), body, start + 2

    def code(self, kind, args, body, body_line, at):
        device, raises = "cpu", False
        words = args.split()
        if kind == "run" and words and words[-1] == "raises":
            raises = True
            words.pop()
        if len(words) > 1 or (words and words[0] not in DEVICES):
            extra = " [raises]" if kind == "run" else ""
            self.fail(at, f"expected ```{kind} [cpu|gpu]{extra}, found {_show(self.lines[at - 1].strip())}")
        if words:
            device = words[0]
        text = "\n".join(body)
        if not text.strip():
            self.fail(at, f"the ```{kind} block is empty: expected Python code")
        try:
            compiled = compile_cached(text, f"<{kind}>", "exec")
        except SyntaxError as e:
            where = body_line + (e.lineno - 1 if e.lineno else 0)
            where = min(max(where, body_line), body_line + len(body) - 1)
            self.fail(where, f"the ```{kind} block is not valid Python: {e.msg}")
        except (ValueError, OverflowError, RecursionError, MemoryError) as e:
            self.fail(at, f"the ```{kind} block is not valid Python: {e}")
        return Code(text, body_line, device, compiled, raises)

    def fields(self, body, body_line, kind, keys, lists):
        """{key: [(value, line)]} of a data block; a key may repeat (check:, hint:)."""
        out = {}
        key = None  # the key whose value the indented lines continue
        for k, raw in enumerate(body):
            n = body_line + k
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if raw[:1] in (" ", "\t") and key is not None:
                if key in lists:
                    if not stripped.startswith("- ") and stripped != "-":
                        self.fail(n, f"expected a line '- choice' under '{key}:', found {_show(stripped)}")
                    item = stripped[1:].strip()
                    if not item:
                        self.fail(n, f"expected a choice after '-' under '{key}:'")
                    out[key][-1][0].append(item)
                else:
                    value, line = out[key][-1]
                    out[key][-1] = ((value + "\n" + stripped) if value else stripped, line)
                continue
            m = _KEY.match(raw)
            if not m:
                self.fail(n, f"expected 'key: value' in the ```{kind} block (keys: {', '.join(keys)}), "
                             f"found {_show(raw)}")
            key, value = m.group(1), m.group(2).strip()
            if key not in keys:
                self.fail(n, f"unknown key '{key}' in the ```{kind} block: expected one of {', '.join(keys)}")
            if key in lists:
                if value:
                    self.fail(n, f"expected '{key}:' alone on its line, with a line '- choice' for each under it")
                out.setdefault(key, []).append(([], n))
            else:
                out.setdefault(key, []).append((value, n))
        for k, entries in out.items():
            for value, n in entries:
                if k in lists:
                    if not value:
                        self.fail(n, f"expected lines '- choice' under '{k}:'")
                elif not value:
                    self.fail(n, f"expected a value after '{k}:'")
        return out

    def one(self, fields, key, kind, at, required=True):
        """The single value of `key` ((value, line)), or None; an error when it repeats or is missing."""
        entries = fields.get(key, [])
        if len(entries) > 1:
            self.fail(entries[1][1], f"'{key}:' is given twice in the ```{kind} block (first at line "
                                     f"{entries[0][1]})")
        if not entries:
            if required:
                self.fail(at, f"the ```{kind} block needs '{key}:'")
            return None
        return entries[0]

    def selectors(self, body, body_line, at):
        out = []
        for k, raw in enumerate(body):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            try:
                out.append(_selector.Selector.parse(text))
            except _selector.SelectorError as e:
                self.fail(body_line + k, str(e))
        if not out:
            self.fail(at, "the ```look block is empty: expected a selector such as 'floor=3 span=aten::add "
                          "arg=kernel'")
        return out

    def prediction(self, body, body_line, at):
        f = self.fields(body, body_line, "predict", PREDICT_KEYS, lists=("choices",))
        ask = self.one(f, "ask", "predict", at)
        answer = self.one(f, "answer", "predict", at)
        choices = self.one(f, "choices", "predict", at, required=False)
        tolerance = self.one(f, "tolerance", "predict", at, required=False)
        explain = self.one(f, "explain", "predict", at, required=False)
        try:
            parsed = _selector.Answer.parse(answer[0])
        except _selector.SelectorError as e:
            self.fail(answer[1], str(e))
        p = Prediction(ask[0], parsed, at, explain=explain[0] if explain else "")
        allow = self.one(f, "allow", "predict", at, required=False)
        if allow is not None:
            words = allow[0].replace(",", " ").split()
            for w in words:
                if w not in ALLOWS:
                    self.fail(allow[1], f"unknown warning {_show(w)} after 'allow:': expected {' or '.join(ALLOWS)}")
            p.allow = tuple(words)
        if choices is not None:
            items = choices[0]
            if len(items) < 2:
                self.fail(choices[1], "expected at least two choices")
            lowered = [c.lower() for c in items]
            for j, c in enumerate(lowered):
                if c in lowered[:j]:
                    self.fail(choices[1], f"the choice {_show(items[j])} is given twice")
            p.choices = items
            if tolerance is not None:
                self.fail(tolerance[1], "a question with choices has no tolerance: the answer is one of them")
        if tolerance is not None:
            try:
                p.tolerance = _selector.Tolerance.parse(tolerance[0])
            except _selector.SelectorError as e:
                self.fail(tolerance[1], str(e))
        return p

    def exercise(self, body, body_line, at):
        f = self.fields(body, body_line, "exercise", EXERCISE_KEYS, lists=())
        goal = self.one(f, "goal", "exercise", at)
        if not f.get("check"):
            self.fail(at, "the ```exercise block needs at least one 'check:' (a Python expression that is true "
                          "when the goal is met)")
        if not f.get("hint"):
            self.fail(at, "the ```exercise block needs at least one 'hint:'")
        checks = []
        for text, n in f["check"]:
            try:
                checks.append((text, compile_cached(text, "<check>", "eval"), n))
            except SyntaxError as e:
                self.fail(n, f"expected a Python expression after 'check:': {e.msg}")
            except (ValueError, OverflowError, RecursionError, MemoryError) as e:
                self.fail(n, f"expected a Python expression after 'check:': {e}")
        ex = Exercise(goal[0], checks, [h for h, _ in f["hint"]], at)
        device = self.one(f, "device", "exercise", at, required=False)
        if device is not None:
            if device[0] not in DEVICES:
                self.fail(device[1], f"expected 'cpu' or 'gpu' after 'device:', found {_show(device[0])}")
            ex.device = device[0]
        limit = self.one(f, "limit", "exercise", at, required=False)
        if limit is not None:
            try:
                ex.limit_s = float(limit[0].rstrip("s").strip())
            except ValueError:
                self.fail(limit[1], f"expected a number of seconds after 'limit:', found {_show(limit[0])}")
            if not 0 < ex.limit_s <= MAX_LIMIT_S:
                self.fail(limit[1], f"expected a limit between 0 and {MAX_LIMIT_S:g} seconds, found {limit[0]}")
        return ex


@functools.lru_cache(maxsize=1024)
def _compile(text, filename, mode):
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like are the code's own business
            warnings.simplefilter("ignore")
            return compile(text, filename, mode, dont_inherit=True), None
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        return None, e


def compile_cached(text, filename, mode):
    """compile(), remembered: a lesson is parsed again and again (the app, the validator, the
    mutation test) with the same code blocks, and compiling is most of a parse's time."""
    code, error = _compile(text, filename, mode)
    if error is not None:
        raise error
    return code


def _show(text, width=60):
    """A piece of a line for an error message, quoted and cut short."""
    text = text if len(text) <= width else text[:width] + "..."
    return repr(text)
