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
terminal's `--check` runs the code in a child process, which the grader
kills a little after the limit (Note [The grader's child]).
"""
import contextlib
import ctypes
import gc
import io
import os
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
            entry["evidence"], entry["evidence_span"] = _evidence_line(p.answer, ev), _span_dict(ev)
        except _sel.NoMatch:
            pass
    elif p.answer.kind == "count":
        found = p.answer.selector.all(spans)
        entry["evidence"] = "\n".join(_evidence_line(p.answer, s) for s in found[:8]) + (
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


def _evidence_line(answer, span):
    """The evidence an answer shows: its span with only what the answer read (the argument asked, the
    duration), never the span's other arguments, which can be a later question's answer (Note [Never
    give an answer away])."""
    head = f"[{span.floor} {span.floor_name:9}] {span.name}"
    sel = answer.selector
    if answer.kind == "duration":
        return f"{head}  {span.duration_ns} ns"
    if answer.kind == "value" and sel.arg in span.args:
        return f"{head}  {sel.arg}={_sel.text_of(span.args[sel.arg])}"
    return head


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


def exercise_facts(lesson, index, code_text, limit_s=None):
    """Runs a student's code for the exercise of step `index` in this process (the step's setup first, the
    code traced and time-limited) and evaluates the exercise's checks over what it left, in order, up to
    the first that does not hold. Returns what happened, as plain data but for the trace:
      invalid (why the code does not compile, or ""), stopped (it ran past the limit), output, error
      (the exception as text), raised ("Type: message" of the code's exception, or ""), seconds,
      checks: [{text, outcome ("true", "false", "nomatch", "raised", "limit"), detail}], trace, tree.
    verdict() turns these into passed and a reason."""
    from . import format as _fmt
    step = lesson.steps[index]
    ex = step.exercise
    limit = limit_s or ex.limit_s
    facts = {"invalid": "", "stopped": False, "output": "", "error": "", "raised": "", "seconds": 0.0,
             "checks": [], "trace": None, "tree": ""}
    try:
        code = _fmt.Code(code_text, 1, ex.device, compile(code_text, "<exercise>", "exec", dont_inherit=True))
    except (SyntaxError, ValueError) as e:
        line = f" (line {e.lineno})" if getattr(e, "lineno", None) else ""
        facts["invalid"] = f"the code is not valid Python{line}: {getattr(e, 'msg', None) or e}"
        return facts
    ns = namespace(ex.device)
    if step.compare:  # the step's PyTorch profile, for the exercise's checks as for its answers
        ns["pytorch"] = _C._load_trace(step.compare)
    began = time.perf_counter()
    with _Restore(ns):
        exc = _setup(step, ns, limit)
        trace, output = None, ""
        if exc is None:
            trace, output, exc = _run_code(code, ns, limit)
        facts["seconds"] = time.perf_counter() - began
        facts.update(trace=trace, tree=trace.format_tree() if trace is not None else "", output=output,
                     error=_error_text(exc), raised=f"{type(exc).__name__}: {exc}" if exc is not None else "")
        if isinstance(exc, LimitExceeded):
            facts.update(stopped=True, error="", raised="")
            return facts
        spans = _sel.Spans(trace)
        env = dict(ns)
        env.update(_sel.helpers(spans, trace, output, exc))
        for text, compiled, _ in ex.checks:
            entry = {"text": text, "outcome": "true", "detail": ""}
            facts["checks"].append(entry)
            try:
                with time_limit(limit):
                    ok = bool(eval(compiled, env))  # noqa: S307  (the lesson's own check)
            except _sel.NoMatch as e:
                entry.update(outcome="nomatch", detail=str(e))
            except LimitExceeded:
                entry["outcome"] = "limit"
            except Exception as e:  # noqa: BLE001
                entry.update(outcome="raised", detail=f"{type(e).__name__}: {e}")
            else:
                entry["outcome"] = "true" if ok else "false"
            if entry["outcome"] != "true":
                break
        del env
    return facts


def verdict(ex, facts, limit):
    """(passed, reason) for exercise `ex` from exercise_facts' facts (read in this process, or back from the
    grader's child). It passes only when every one of the exercise's checks was evaluated, in order, and
    held (Note [The grader's child])."""
    if facts["invalid"]:
        return False, facts["invalid"]
    if facts["stopped"]:
        return False, (f"stopped after {limit:g} s: the code did not finish in its time limit "
                       "(an endless loop, or a wait that never ends?)")
    raised = f"\nYour code raised {facts['raised']}" if facts["raised"] else ""
    checks = facts["checks"]
    for (text, _, _), entry in zip(ex.checks, checks):
        if entry["text"] != text:
            return False, f"the grader's report does not match the exercise's checks (`{entry['text']}`)"
        outcome = entry["outcome"]
        if outcome == "true":
            continue
        if outcome == "nomatch":
            return False, f"the goal is not met: {ex.goal}\nThe check `{text}` found nothing: {entry['detail']}{raised}"
        if outcome == "limit":
            return False, f"the check `{text}` did not finish in {limit:g} s"
        if outcome == "raised":
            return False, f"the goal is not met: {ex.goal}\nThe check `{text}` raised {entry['detail']}{raised}"
        return False, f"the goal is not met: {ex.goal}\nThis check is false: `{text}`{raised}"
    if len(checks) != len(ex.checks):
        return False, (f"the goal is not met: {ex.goal}\nNot every check was evaluated ({len(checks)} of "
                       f"{len(ex.checks)})")
    return True, f"the goal is met: {ex.goal}"


def check_exercise(lesson, index, code_text, limit_s=None):
    """Runs a student's code for the exercise of step `index` in this process (traced, time-limited) and
    checks the goal. Returns a dict: passed, reason (one paragraph saying why), trace, tree, output, error,
    seconds, goal. The validator and the app use it; the command's --check grades in a child process
    instead (check_in_child)."""
    ex = lesson.steps[index].exercise
    limit = limit_s or ex.limit_s
    facts = exercise_facts(lesson, index, code_text, limit)
    passed, reason = verdict(ex, facts, limit)
    return {"passed": passed, "reason": reason, "trace": facts["trace"], "tree": facts["tree"],
            "output": facts["output"], "error": facts["error"], "seconds": facts["seconds"], "goal": ex.goal}


# [SECTION] The grader's child ---------------------------------------------------------------------------

# Note [The grader's child]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Graded in the grader's own process, the graded code can end the grader:
# `os._exit(0)` exits with the status a pass gives, and printing "PASSED ..."
# first makes it look like one. So `descent lesson --check` runs the
# student's code, the step's setup and the exercise's checks in a child
# process (the same Python, the same descent on its PYTHONPATH, a session of
# its own), which writes what happened (exercise_facts, as JSON) to a pipe of
# its own, a file descriptor that is neither stdout nor stderr, and ends at
# once with os._exit(0). The parent alone gives the verdict (verdict()): a
# pass needs the child's whole report, every check in it evaluated and true,
# and a child that ended with status 0 after writing it. A child that exits
# before its report (os._exit, sys.exit from a thread, a crash), whatever its
# status, fails with a line saying so; whatever the code printed is shown
# indented under "Your code printed:", never as the grader's own line. The
# time limit holds twice: in the child, the timer of Note [Stopping student
# code] stops the code at --limit with a clear reason; the parent kills the
# child's whole process group (SIGKILL) GRACE_S later, which also stops a C
# call that never returns, and the child dies with the parent
# (PR_SET_PDEATHSIG). This is not a sandbox: code that runs in the child can
# write a report of its own to that pipe, as it could in any process that
# must look at its results. What it guarantees is that ending the process,
# printing, or exiting 0 does not pass.

GRACE_S = 10.0                # how long past --limit the parent waits before it kills the child
REPORT_MAX_BYTES = 16 << 20   # the child's report (most of it, the code's output)
OUTPUT_MAX_BYTES = 1 << 20    # what the child's stdout and stderr may add; the rest is dropped


def _package_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(descent.__file__)))


def check_in_child(lesson, index, code_text, limit_s=None):
    """check_exercise, the code run in a child process and the verdict given here (Note [The grader's child]).
    Returns the same dict, with trace None and tree ""."""
    import json
    import selectors
    import subprocess

    ex = lesson.steps[index].exercise
    limit = limit_s or ex.limit_s
    result = {"passed": False, "reason": "", "trace": None, "tree": "", "output": "", "error": "",
              "seconds": 0.0, "goal": ex.goal}
    request = json.dumps({"path": lesson.path, "text": lesson.source, "step": index, "code": code_text,
                          "limit": limit}).encode("utf-8")
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    env = dict(os.environ)
    env["PYTHONPATH"] = _package_root() + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    argv = [sys.executable, "-c", "import sys; from descent.lessons import runner; "
            f"sys.exit(runner._child_main({req_r}, {rep_w}, {os.getpid()}))"]
    began = time.perf_counter()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 pass_fds=(req_r, rep_w), env=env, start_new_session=True)
    except BaseException:
        for fd in (req_w, rep_r):
            os.close(fd)
        raise
    finally:
        os.close(req_r)
        os.close(rep_w)
    deadline = began + limit + GRACE_S
    report, raw, killed = bytearray(), bytearray(), False
    sel = selectors.DefaultSelector()
    try:
        os.set_blocking(req_w, False)
        sel.register(req_w, selectors.EVENT_WRITE, "request")
        sel.register(rep_r, selectors.EVENT_READ, "report")
        sel.register(child.stdout, selectors.EVENT_READ, "stdout")
        pending, exited_at = memoryview(request), None
        while sel.get_map():
            now = time.perf_counter()
            if now >= deadline:
                killed = True
                break
            if exited_at is None and _exited(child.pid):
                exited_at = now
            if exited_at is not None and now - exited_at > 1.0:  # gone; what is left open is a grandchild's
                break
            for key, _ in sel.select(timeout=min(0.1, deadline - now)):
                if key.data == "request":
                    try:
                        pending = pending[os.write(req_w, pending):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(req_w)
                        os.close(req_w)
                        req_w = -1
                    continue
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    sel.unregister(fd)
                    continue
                keep, cap = (report, REPORT_MAX_BYTES) if key.data == "report" else (raw, OUTPUT_MAX_BYTES)
                if len(keep) <= cap:
                    keep += chunk
    finally:
        sel.close()
        for fd in (req_w, rep_r):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the child, if it still runs, and anything it started
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
        child.stdout.close()
    result["seconds"] = time.perf_counter() - began
    printed = raw[:OUTPUT_MAX_BYTES].decode("utf-8", "replace")
    if killed:
        result["output"] = printed
        result["reason"] = (f"stopped after {limit + GRACE_S:g} s: the code ran past its {limit:g} s limit and could "
                            "not be stopped from Python (a C call that never returns, or a trace too large to read "
                            "back)")
        return result
    facts = _read_report(bytes(report))
    status = child.returncode
    if facts is None:
        result["output"] = printed
        ended = (f"was killed by signal {_signal_name(-status)}" if status < 0 else f"exited with status {status}")
        result["reason"] = (f"not graded: the process running your code {ended} before it reported its checks "
                            "(os._exit, an exit from a thread, or a crash ends it early); only code that runs to "
                            "its end is graded")
        return result
    result["output"] = facts["output"] + printed
    result["error"] = facts["error"]
    if isinstance(facts.get("seconds"), (int, float)):
        result["seconds"] = float(facts["seconds"])  # the code's own time, without the child's start
    if status != 0:
        result["reason"] = f"not graded: the process running your code ended with status {status} after its report"
        return result
    result["passed"], result["reason"] = verdict(ex, facts, limit)
    return result


def _exited(pid):
    """Whether the child has ended, without reaping it: until it is reaped its pid (and so its process
    group's id) cannot be given to another process, so the killpg after it cannot hit a stranger."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _read_report(data):
    """The child's facts from its report, or None when there is no whole, well-formed one."""
    import json
    try:
        facts = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    shape = {"invalid": str, "stopped": bool, "output": str, "error": str, "raised": str, "checks": list,
             "done": bool}
    if not isinstance(facts, dict) or any(not isinstance(facts.get(k), t) for k, t in shape.items()):
        return None
    if not facts["done"]:
        return None
    for entry in facts["checks"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("text"), str) and isinstance(entry.get("detail"), str)
                and entry.get("outcome") in ("true", "false", "nomatch", "raised", "limit")):
            return None
    return facts


def _child_main(request_fd, report_fd, parent_pid):
    """The grader's child (Note [The grader's child]): reads its request, runs exercise_facts, writes the
    facts to `report_fd` and ends at once, whatever the student's code left running."""
    import json
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)
    with os.fdopen(request_fd, "rb") as f:
        req = json.loads(f.read().decode("utf-8"))
    report = os.fdopen(report_fd, "wb")
    from . import format as _fmt
    lesson = _fmt.parse(req["text"], req["path"])
    facts = exercise_facts(lesson, int(req["step"]), req["code"], float(req["limit"]))
    facts.pop("trace")
    facts.pop("tree")
    facts["output"] = facts["output"][:OUTPUT_MAX_BYTES]
    facts["done"] = True
    data = json.dumps(facts, default=str).encode("utf-8", "replace")
    try:
        report.write(data)
        report.close()
    except (OSError, ValueError):
        os._exit(3)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(0)


# [SECTION] Validation ---------------------------------------------------------------------------------

# Note [Never give an answer away]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A prediction is worth asking only if the student has not been shown its
# answer. Three places showed it, and each is closed here or checked by the
# validator:
#   - the evidence printed after a question: it is the span the answer was
#     read from with only what was read (the argument asked, the duration),
#     never the span's other arguments, which are often the next question's
#     answer (_evidence_line);
#   - the step's own prose, its title, or an earlier question's text and
#     explanation in the same step: the validator warns when the computed
#     answer appears there as a word (a number also as its English word)
#     and, for a choice, none of the other choices does;
#   - an earlier step that ran the same code: the terminal printed that
#     step's whole trace, which holds the later step's answers; the
#     validator warns when a step with questions runs the same code, on the
#     same device, as an earlier one (its setup may differ: the trace of the
#     same statements is most often the same).
# These are warnings, not failures: a teacher who means a question as a
# recall of what the prose just said silences it with `allow:
# answer-in-prose` (or `earlier-trace`) in the predict block. Answers that
# are a flag (yes/no, true/false) are not looked for in prose.

_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                 10: "ten", 11: "eleven", 12: "twelve"}


def _appears(answer_text, value, text):
    """Whether the answer is written in `text`, as a word (Note [Never give an answer away])."""
    import re
    if isinstance(value, bool) or answer_text.strip().lower() in ("yes", "no", "true", "false", ""):
        return False
    words = [answer_text.strip()]
    if _sel.is_number(value) and float(value).is_integer() and int(value) in _NUMBER_WORDS:
        words.append(_NUMBER_WORDS[int(value)])
    for w in words:
        if re.search(r"(?<![\w.])" + re.escape(w) + r"(?![\w])", text, re.IGNORECASE):
            return True
    return False


def _given_away(p, entry, text):
    """Whether `text` gives prediction p's computed answer away: the answer is written there, and, for a
    choice that is not a number, none of the other choices is (prose that names every choice decides
    nothing)."""
    if not _appears(entry["answer_text"], entry["answer"], text):
        return False
    if not p.choices or _sel.is_number(entry["answer"]):
        return True
    return not any(_appears(c, c, text) for k, c in enumerate(p.choices) if k != entry["choice"])


def _leaks(lesson, i, r, earlier_runs):
    """The warnings of Note [Never give an answer away] for step i, given its run_step result and the
    (code, device) of the steps before it: [(line, text)]."""
    step = lesson.steps[i]
    out = []
    shown = [step.title, step.prose]
    key = (step.run.text, step.run.device) if step.run is not None else None
    same = key in earlier_runs
    for k, (p, entry) in enumerate(zip(step.predictions, r["predictions"])):
        if not entry["problem"] and "answer-in-prose" not in p.allow and \
                _given_away(p, entry, "\n".join(shown)):
            out.append((p.line, f"step {i + 1}: predict {k + 1}: its answer ({entry['answer_text']}) is written in "
                                 "the step's title, prose or an earlier question before it is asked (reword it, or "
                                 "add 'allow: answer-in-prose')"))
        if same and "earlier-trace" not in p.allow:
            first = earlier_runs[key]
            out.append((p.line, f"step {i + 1}: predict {k + 1}: step {first + 1} ran the same code, and its trace, "
                                 "shown in full, answers this question (run other code, or add 'allow: "
                                 "earlier-trace')"))
        shown += [p.ask, p.explain]
    return out


def _without_last_statement(code):
    """The code without its last top-level statement ("" when it has one), or None when it cannot be cut."""
    import ast
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return None
    if len(body) <= 1:
        return ""
    lines = code.split("\n")
    return "\n".join(lines[:body[-1].lineno - 1]).rstrip() + "\n"


def validate(lesson, log=None, warnings=None):
    """Runs every step of `lesson` as a student would meet it and returns the problems found, each
    'path:line: what' (an empty list: the lesson is sound). See Note [Answers come from the run].
    When `warnings` is a list, the lesson's warnings (Note [Never give an answer away]) are added to it,
    in the same form; they are not problems."""
    problems = []
    earlier_runs = {}  # (code, device) -> the first step that ran it

    def problem(line, text):
        problems.append(f"{lesson.path}:{line}: {text}")

    for i, step in enumerate(lesson.steps):
        if step.run is not None:
            r = run_step(lesson, i)
            if warnings is not None:
                warnings.extend(f"{lesson.path}:{line}: {text}" for line, text in _leaks(lesson, i, r, earlier_runs))
            earlier_runs.setdefault((step.run.text, step.run.device), i)
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
            # The goal checked in full: code that does less than the start (nothing at all, or the start
            # without its last statement) must not pass either.
            cut = _without_last_statement(ex.start.text)
            for what, code in (("no code at all", "pass\n"),
                               ("the starting code without its last statement", cut)):
                if code is None or (code.strip() in ("", "pass") and what != "no code at all"):
                    continue
                if check_exercise(lesson, i, code)["passed"]:
                    problem(ex.line, f"step {i + 1}: the exercise passes with {what}: its checks do not test the "
                                     f"whole goal ({ex.goal})")
            solution = check_exercise(lesson, i, ex.solution.text)
            if not solution["passed"]:
                problem(ex.solution.line - 1, f"step {i + 1}: the exercise's solution fails: {solution['reason']}"
                        + (f"\n{solution['error'].rstrip()}" if solution["error"] else ""))
    return problems
