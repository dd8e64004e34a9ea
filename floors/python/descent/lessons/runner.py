"""Running a lesson: each step's code traced, its selectors and answers read off that trace, exercises graded.

Everything here returns plain data (dicts of str, numbers, lists, and the
step's Trace object), so the terminal (terminal.py) and the app's embedded
interpreter read the same results. Each step runs in a namespace of its own,
holding `descent` and `device` (the step's device as a string), so a step can
be opened on its own, as the app's Next and Back do.

Note [Stopping student code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An exercise's code is a student's, and `while True: pass` must not hang the
checker. On the main thread a timer signal (setitimer, SIGALRM) raises
LimitExceeded in the code at the limit: it interrupts Python loops and
sleeps alike. On any other thread (the app runs Python on a thread of its
own) a watchdog thread raises it there with PyThreadState_SetAsyncExc, which
takes effect at the thread's next Python instruction. LimitExceeded is a
BaseException, so the student's `except Exception:` does not swallow it. A C
call that never returns cannot be interrupted from Python at all: the
terminal's `--check` adds a last resort that ends the process (terminal.py).
"""
import contextlib
import ctypes
import gc
import io
import signal
import sys
import threading
import time
import traceback

import descent
from descent import _C, tracing

from . import selector as _sel


class LimitExceeded(BaseException):
    """Student code ran past its time limit (Note [Stopping student code])."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises LimitExceeded in the code inside the block when it runs longer than `seconds`."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def on_alarm(signum, frame):
            raise LimitExceeded(f"stopped after {seconds:g} s")
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    target = threading.get_ident()
    done = threading.Event()

    def watchdog():
        if not done.wait(seconds):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(LimitExceeded))
    w = threading.Thread(target=watchdog, name="descent lesson watchdog", daemon=True)
    w.start()
    try:
        yield
    finally:
        done.set()
        w.join()


def device_name(kind):
    """The device a lesson's "cpu" or "gpu" means here: cuda:0 where there is a GPU, else sim:0."""
    if kind != "gpu":
        return "cpu"
    return "cuda:0" if _C._device_count("cuda") > 0 else "sim:0"


def namespace(kind):
    return {"descent": descent, "device": device_name(kind), "__name__": "__descent_lesson__"}


class _Restore:
    """Puts back what a step's code may change for the steps after it: grad and inference mode, the current
    streams, the kernel variant, the number of threads, sim:0's capacity; and empties the step's namespace,
    which drops its tensors and its Libraries (descent.library: their kernels go with them); and the default
    device."""

    def __init__(self, namespace):
        self.namespace = namespace

    def __enter__(self):
        self.state = _C._local_state()
        self.threads = descent.get_num_threads()
        self.capacity = _C._sim_memory_capacity()
        self.streams = [(m, m.current_stream()) for m in (descent.sim, descent.cuda) if m.is_available()]
        self.default_device = descent.get_default_device()  # Note [The default device]: thread state too
        return self

    def __exit__(self, *exc):
        self.namespace.clear()  # the step's tensors, and its descent.library Libraries (their kernels go with them)
        _C._set_local_state(self.state)
        for module, stream in self.streams:
            module.set_stream(stream)
        descent.set_kernel_variant("auto")
        descent.set_default_device(self.default_device)
        if descent.get_num_threads() != self.threads:
            descent.set_num_threads(self.threads)
        gc.collect()
        try:
            _C._synchronize_devices_in_use()
        except RuntimeError:
            pass
        if _C._sim_memory_capacity() != self.capacity:
            try:
                descent.sim.set_memory_capacity(self.capacity)
            except RuntimeError:
                pass  # tensors still live there (a student kept one somewhere global): left as it is
        return False


def _error_text(exc):
    if exc is None:
        return ""
    tb = exc.__traceback__
    return "".join(traceback.format_exception(type(exc), exc, tb.tb_next if tb else None))


def _run_code(code, ns, limit_s=None):
    """Runs `code` (a format.Code) traced, statement by statement. Returns (trace, output, exception)."""
    out = io.StringIO()
    trace, exc = None, None
    guard = time_limit(limit_s) if limit_s else contextlib.nullcontext()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            with guard:
                trace, exc = tracing.run(code.text, env=ns, echo=lambda text: print(text))
        except LimitExceeded as e:
            exc = e
        except SyntaxError as e:  # compiled at parse time, so only a lesson edited under us
            exc = e
    return trace, out.getvalue(), exc


def _setup(step, ns, limit_s=None):
    """Runs the step's setup block untraced; the exception it raised, or None."""
    if step.setup is None:
        return None
    out = io.StringIO()
    guard = time_limit(limit_s) if limit_s else contextlib.nullcontext()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            with guard:
                exec(step.setup.compiled, ns)  # noqa: S102  (the lesson's own code)
        except (Exception, LimitExceeded) as e:  # noqa: BLE001
            return e
    return None


def _span_dict(span):
    return None if span is None else dict(span._d, duration_ns=span.duration_ns, line_text=span.describe())


def _value_dict(value):
    """A computed value as plain data: spans become their dicts, numbers and text stay as they are."""
    if isinstance(value, _sel.Span):
        return _span_dict(value)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return _sel.text_of(value)


def run_step(lesson, index, setup_limit_s=60.0):
    """Runs step `index` of `lesson` traced and reads what it points at. Returns a dict:
      title, prose, device, code, trace (a Trace, or None), tree (its text), output (what it printed),
      error (the exception as text, "" when none), raised (the exception's class name, "" when none),
      looks: [{selector, span (a dict), value, problem}],
      predictions: [{ask, choices, kind ("choice", "number" or "text"), answer (computed), answer_text,
                     choice (its index, or None), evidence (the span's line, when a selector read it),
                     explain, tolerance, problem}];
    `problem` is "" when everything resolved, else why not (what --validate reports)."""
    step = lesson.steps[index]
    result = {"lesson": lesson.name, "step": index, "title": step.title, "prose": step.prose,
              "device": None, "code": None, "trace": None, "tree": "", "output": "", "error": "", "raised": "",
              "looks": [], "predictions": [], "exercise": exercise_dict(step.exercise), "compare": step.compare}
    if step.run is None:
        return result
    ns = namespace(step.run.device)
    result["device"], result["code"], result["compare"] = ns["device"], step.run.text, step.compare
    if step.compare:  # PyTorch's own profile of the same code, for the step's code and its answers
        ns["pytorch"] = _C._load_trace(step.compare)
    with _Restore(ns):
        exc = _setup(step, ns, setup_limit_s)
        trace, output = None, ""
        if exc is None:
            trace, output, exc = _run_code(step.run, ns, setup_limit_s)
        spans = _sel.Spans(trace)
        result.update(trace=trace, tree=trace.format_tree() if trace is not None else "", output=output,
                      error=_error_text(exc), raised=type(exc).__name__ if exc is not None else "")
        env = dict(ns)
        env.update(_sel.helpers(spans, trace, output, exc))
        for sel in step.looks:
            result["looks"].append(_look(sel, spans))
        for p in step.predictions:
            result["predictions"].append(_predict(p, spans, env))
        del env
    return result


def _look(sel, spans):
    entry = {"selector": sel.text, "floor": sel.floor, "span": None, "value": None, "problem": ""}
    try:
        s = sel.one(spans)
        entry["span"] = _span_dict(s)
        entry["value"] = _value_dict(sel.value(spans)) if sel.arg is not None else None
    except _sel.NoMatch as e:
        entry["problem"] = str(e)
    return entry


def _predict(p, spans, env):
    kind = "choice" if p.choices else "text"
    entry = {"ask": p.ask, "choices": list(p.choices), "kind": kind, "answer": None, "answer_text": "",
             "choice": None, "evidence": "", "evidence_span": None, "explain": p.explain,
             "tolerance": str(p.tolerance) if p.tolerance else "", "problem": "", "line": p.line}
    try:
        value = p.answer.compute(spans, env)
    except _sel.NoMatch as e:
        entry["problem"] = f"the answer cannot be read: {e}"
        return entry
    except Exception as e:  # noqa: BLE001  (a lesson's python answer may raise anything)
        entry["problem"] = f"the answer '{p.answer.text}' raised {type(e).__name__}: {e}"
        return entry
    if isinstance(value, _sel.Span):
        value = value.name
    if p.answer.selector is not None and p.answer.kind != "count":
        try:
            ev = p.answer.selector.one(spans)
            entry["evidence"], entry["evidence_span"] = ev.describe(), _span_dict(ev)
        except _sel.NoMatch:
            pass
    elif p.answer.kind == "count":
        found = p.answer.selector.all(spans)
        entry["evidence"] = "\n".join(s.describe() for s in found[:8]) + (
            f"\n... and {len(found) - 8} more" if len(found) > 8 else "")
    if value is None or not isinstance(value, (bool, int, float, str)):
        entry["problem"] = (f"the answer '{p.answer.text}' gave {value!r}: expected a number, a flag or text")
        return entry
    if isinstance(value, float) and value != value:
        entry["problem"] = f"the answer '{p.answer.text}' gave NaN"
        return entry
    entry["answer"] = value
    entry["answer_text"] = _sel.text_of(value)
    if p.choices:
        k = _sel.choice_of(value, p.choices)
        entry["choice"] = k
        if k is None:
            entry["problem"] = (f"the answer computed from the run is {_sel.text_of(value)!r}, which is none of "
                                f"the choices ({', '.join(p.choices)})")
        else:
            entry["answer_text"] = p.choices[k]
    elif _sel.is_number(value):
        entry["kind"] = "number"
    return entry


def judge(lesson, index, k, result, typed):
    """(right, the right answer as text) for a student's answer to prediction k of step `index`, given the
    step's run_step result."""
    entry = result["predictions"][k]
    if entry["problem"]:
        return False, ""
    return _sel.judge(lesson.steps[index].predictions[k], entry["answer"], typed)


def exercise_dict(ex):
    if ex is None:
        return None
    return {"goal": ex.goal, "hints": list(ex.hints), "start": ex.start.text, "solution": ex.solution.text,
            "device": ex.device, "limit_s": ex.limit_s, "checks": [c for c, _, _ in ex.checks]}


def check_exercise(lesson, index, code_text, limit_s=None):
    """Runs a student's code for the exercise of step `index` (traced, time-limited) and checks the goal.
    Returns a dict: passed, reason (one paragraph saying why), trace, tree, output, error, seconds."""
    from . import format as _fmt
    step = lesson.steps[index]
    ex = step.exercise
    limit = limit_s or ex.limit_s
    result = {"passed": False, "reason": "", "trace": None, "tree": "", "output": "", "error": "",
              "seconds": 0.0, "goal": ex.goal}
    try:
        code = _fmt.Code(code_text, 1, ex.device, compile(code_text, "<exercise>", "exec", dont_inherit=True))
    except (SyntaxError, ValueError) as e:
        line = f" (line {e.lineno})" if getattr(e, "lineno", None) else ""
        result["reason"] = f"the code is not valid Python{line}: {getattr(e, 'msg', None) or e}"
        return result
    ns = namespace(ex.device)
    if step.compare:  # the step's PyTorch profile, for the exercise's checks as for its answers
        ns["pytorch"] = _C._load_trace(step.compare)
    began = time.perf_counter()
    with _Restore(ns):
        exc = _setup(step, ns, limit)
        trace, output = None, ""
        if exc is None:
            trace, output, exc = _run_code(code, ns, limit)
        result["seconds"] = time.perf_counter() - began
        result.update(trace=trace, tree=trace.format_tree() if trace is not None else "", output=output,
                      error=_error_text(exc))
        if isinstance(exc, LimitExceeded):
            result["error"] = ""
            result["reason"] = (f"stopped after {limit:g} s: the code did not finish in its time limit "
                                "(an endless loop, or a wait that never ends?)")
            return result
        spans = _sel.Spans(trace)
        env = dict(ns)
        env.update(_sel.helpers(spans, trace, output, exc))
        raised = f"\nYour code raised {type(exc).__name__}: {exc}" if exc is not None else ""
        for text, compiled, _ in ex.checks:
            try:
                with time_limit(limit):
                    ok = bool(eval(compiled, env))  # noqa: S307  (the lesson's own check)
            except _sel.NoMatch as e:
                result["reason"] = f"the goal is not met: {ex.goal}\nThe check `{text}` found nothing: {e}{raised}"
                return result
            except LimitExceeded:
                result["reason"] = f"the check `{text}` did not finish in {limit:g} s"
                return result
            except Exception as e:  # noqa: BLE001
                result["reason"] = (f"the goal is not met: {ex.goal}\nThe check `{text}` raised "
                                    f"{type(e).__name__}: {e}{raised}")
                return result
            if not ok:
                result["reason"] = f"the goal is not met: {ex.goal}\nThis check is false: `{text}`{raised}"
                return result
        del env
    result["passed"] = True
    result["reason"] = f"the goal is met: {ex.goal}"
    return result


# [SECTION] Validation ---------------------------------------------------------------------------------

def validate(lesson, log=None):
    """Runs every step of `lesson` as a student would meet it and returns the problems found, each
    'path:line: what' (an empty list: the lesson is sound). See Note [Answers come from the run]."""
    problems = []

    def problem(line, text):
        problems.append(f"{lesson.path}:{line}: {text}")

    for i, step in enumerate(lesson.steps):
        if step.run is not None:
            r = run_step(lesson, i)
            if r["error"] and not step.run.raises:
                problem(step.run.line, f"step {i + 1} ({step.title}): the run block raised:\n{r['error'].rstrip()}")
            elif step.run.raises and not r["error"]:
                problem(step.run.line, f"step {i + 1} ({step.title}): the run block is marked 'raises' but "
                                       "raised nothing")
            for sel, look in zip(step.looks, r["looks"]):
                if look["problem"]:
                    problem(step.run.line, f"step {i + 1}: look: {look['problem']}")
            for p, entry in zip(step.predictions, r["predictions"]):
                if entry["problem"]:
                    problem(p.line, f"step {i + 1}: predict: {entry['problem']}")
            if log:
                log(f"  step {i + 1}: {len(step.looks)} look(s), {len(step.predictions)} prediction(s) "
                    f"{'ok' if not problems else ''}")
        ex = step.exercise
        if ex is not None:
            start = check_exercise(lesson, i, ex.start.text)
            if start["passed"]:
                problem(ex.start.line - 1, f"step {i + 1}: the exercise's starting code already meets its goal "
                                           f"({ex.goal})")
            solution = check_exercise(lesson, i, ex.solution.text)
            if not solution["passed"]:
                problem(ex.solution.line - 1, f"step {i + 1}: the exercise's solution fails: {solution['reason']}"
                        + (f"\n{solution['error'].rstrip()}" if solution["error"] else ""))
    return problems
