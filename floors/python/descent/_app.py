"""What the app (ui/, which embeds this interpreter) asks of the package.

The app owns no runtime logic: it runs the user's code through run() below,
which traces it with descent.tracing like `descent trace` does, and reads the
Trace object that comes back. Everything the code prints is captured for the
app's console; an exception is returned as text, never raised into the app.
"""
import contextlib
import io
import sys
import traceback

from . import _C, tracing

_env = None  # the console's namespace: one for the app's whole life


def namespace():
    """The namespace the app's code and console statements run in."""
    global _env
    if _env is None:
        _env = {"descent": sys.modules["descent"], "__name__": "__descent_app__"}
    return _env


def memory():
    """The CPU allocator's statistics now."""
    return dict(_C._cpu_allocator_stats())


def _devices_to_watch():
    """The devices whose caching allocator a run records: sim:0, and cuda:0 where a GPU is usable.
    Switching the history on makes the device's allocator; that costs a CPU-only line nothing, since a
    recording waits at its end only for devices with work still queued (tracing.py)."""
    kinds = ["sim"] + (["cuda"] if _C._device_count("cuda") > 0 else [])
    return [_C.device(f"{k}:0") for k in kinds]


def _device_memory(d):
    """One device's caching allocator now: its segments (memory_snapshot()'s dicts) and memory_stats()."""
    return {"segments": _C._memory_snapshot(d), "stats": dict(_C._memory_stats(d))}


def _watched(body):
    """Runs body() -> (trace, output, error) with the devices' allocator history switched on, and returns
    run()'s dict around what it gave: trace, output, error, before, after and devices."""
    watched = _devices_to_watch()
    dev_before = [_device_memory(d) for d in watched]
    for d in watched:
        _C._record_memory_history(d, True)
    before = memory()
    try:
        trace, output, error = body()
    finally:
        after = memory()
        devices = []
        for d, b in zip(watched, dev_before):
            history = _C._memory_history(d)
            _C._record_memory_history(d, False)
            if history or b["segments"]:  # a device the code used, now or before
                devices.append({"device": str(d), "before": b, "after": _device_memory(d), "history": history})
    return {"trace": trace, "output": output, "error": error, "before": before, "after": after,
            "devices": devices}


def run(code, repeat=1):
    """Runs `code` traced, `repeat` times (each statement a floor-1 span each
    time, so the app can show warm medians). Returns a dict: trace (a Trace,
    or None when the code does not parse), output (what it printed), error
    (the exception as text, or ""), before and after (memory()), and devices:
    for each device watched, {"device", "before", "after" (_device_memory),
    "history" (the caching allocator's entries during the run, time_ns on the
    trace's clock)} -- what the memory panel replays (Note [Replaying the
    allocator's history], ui/memory_model.h). The history is switched on for
    the run and off after it (which drops entries recorded before the run, as
    switching it off does in PyTorch); see _devices_to_watch for which devices,
    each kept only when it holds memory or the run used it."""
    def body():
        out = io.StringIO()
        result, error = None, ""
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                result, exc = tracing.run(code, env=namespace(), repeat=repeat)
                if exc is not None:
                    error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
            except SyntaxError as e:
                error = "".join(traceback.format_exception_only(type(e), e))
            except BaseException as e:  # noqa: BLE001  (the app must survive anything the code does)
                error = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return result, out.getvalue(), error
    return _watched(body)


# [SECTION] Lessons ------------------------------------------------------------------

# The lesson open in the app, and its step's run_step result (answers are judged against it).
_open = {"lesson": None, "step": None, "result": None}


def _span_id(span):
    return span["id"] if isinstance(span, dict) else None


def _step_json(lesson, k, r):
    """What the app shows of step k: its text and what its selectors found, never a prediction's answer
    (the app asks for the judgement, so nothing on screen gives the answer away before the reveal)."""
    from .lessons import device_name
    step = lesson.steps[k]
    ex = r["exercise"]
    return {
        "kind": "step",
        "lesson": {"name": lesson.name, "number": lesson.number, "title": lesson.title, "teaches": lesson.teaches,
                   "assumes": lesson.assumes, "intro": lesson.intro, "steps": [s.title for s in lesson.steps]},
        "step": k, "title": step.title, "prose": step.prose, "teacher": step.teacher, "compare": step.compare,
        "device": r["device"] or "", "code": r["code"] or "", "output": r["output"], "error": r["error"],
        "raised": r["raised"], "expected_raise": bool(step.run is not None and step.run.raises),
        "looks": [{"selector": x["selector"], "span_id": _span_id(x["span"]), "problem": x["problem"]}
                  for x in r["looks"]],
        "predictions": [{"ask": p["ask"], "choices": p["choices"], "kind": p["kind"], "problem": p["problem"]}
                        for p in r["predictions"]],
        "exercise": None if ex is None else {"goal": ex["goal"], "hints": ex["hints"], "start": ex["start"],
                                             "solution": ex["solution"], "device": device_name(ex["device"]),
                                             "limit_s": ex["limit_s"]},
    }


def _evidence(prediction, p):
    """The evidence of an answer as the app shows it: the span and the one argument the answer was read
    from ("[4 autograd] aten::mul  node=MulBackward0"), not the span's whole line, whose other arguments
    can be the next question's answer; the whole line when the answer is not one argument."""
    sel, span = prediction.answer.selector, p["evidence_span"]
    if sel is None or not sel.arg or not span or sel.arg not in span["args"]:
        return p["evidence"]
    from .lessons.selector import text_of
    return f"[{span['floor']} {span['floor_name']}] {span['name']}  {sel.arg}={text_of(span['args'][sel.arg])}"


def lesson(request):
    """A lesson request from the app (ui/lesson.cpp), as JSON text {"do": ...}:
      catalog                      every lesson with its progress
      open name step               runs the step traced (descent.lessons.run_step) and marks it seen
      answer k typed               judges prediction k of the open step, recording the first answer
      reveal k                     the answer of prediction k without recording one (a teacher's reveal)
      check code                   grades exercise code (traced, time-limited), recording the outcome
      reset [name]                 forgets the progress (of one lesson, or all)
    Returns run()'s dict (trace None where nothing ran) with "lesson": the reply as JSON text, whose
    "kind" is catalog, step, answer, check or error (a LessonError or bad request, its text in "error")."""
    import json

    from . import lessons as L

    def reply(data, result=None):
        result = result or {"trace": None, "output": "", "error": "", "before": memory(), "after": memory(),
                            "devices": []}
        data.setdefault("progress", L.progress.of(_open["lesson"].name) if _open["lesson"] else {})
        result["lesson"] = json.dumps(data, default=str)
        return result

    try:
        req = json.loads(request)
        do = req.get("do")
        if do == "catalog":
            return reply({"kind": "catalog", "lessons": L.catalog(), "progress_file": L.progress.path()})
        if do == "reset":
            L.progress.reset(req.get("name"))
            return reply({"kind": "catalog", "lessons": L.catalog(), "progress_file": L.progress.path()})
        if do == "open":
            les = L.load(str(req["name"]))
            k = int(req.get("step", 0))
            if not 0 <= k < len(les.steps):
                raise L.LessonError(les.path, 0, f"the lesson has steps 1 to {len(les.steps)}, not {k + 1}")
            held = {}

            def body():
                held["r"] = L.run_step(les, k)
                return held["r"]["trace"], "", ""
            result = _watched(body)
            r = held["r"]
            _open.update(lesson=les, step=k, result=r)
            L.progress.mark_seen(les.name, k)
            return reply(_step_json(les, k, r), result)
        les, k, r = _open["lesson"], _open["step"], _open["result"]
        if les is None:
            return reply({"kind": "error", "error": "no lesson is open"})
        if "step" in req and (req.get("name"), req["step"]) != (les.name, k):
            return reply({"kind": "error", "error": f"that was for step {int(req['step']) + 1} of "
                                                     f"{req.get('name')}; step {k + 1} of {les.name} is open now"})
        if do in ("answer", "reveal"):
            i = int(req["k"])
            if not 0 <= i < len(r["predictions"]):
                return reply({"kind": "error", "error": f"step {k + 1} has no prediction {i + 1}"})
            p = r["predictions"][i]
            evidence = _evidence(les.steps[k].predictions[i], p)
            if do == "answer":
                a = L.answer(les, k, i, str(req.get("typed", "")), r)
            else:
                a = {"right": None, "answer_text": p["answer_text"], "evidence": p["evidence"], "explain": p["explain"]}
            a.update(kind="answer", k=i, revealed=do == "reveal", typed=str(req.get("typed", "")), evidence=evidence,
                     evidence_span_id=_span_id(p["evidence_span"]), problem=p["problem"])
            return reply(a)
        if do == "check":
            held = {}

            def body():
                held["c"] = L.check(les, k, str(req.get("code", "")))
                c = held["c"]
                return c["trace"], c["output"], c["error"]
            result = _watched(body)
            c = held["c"]
            return reply({"kind": "check", "passed": c["passed"], "reason": c["reason"], "output": c["output"],
                          "error": c["error"], "seconds": c["seconds"]}, result)
        return reply({"kind": "error", "error": f"unknown lesson request {do!r}"})
    except L.LessonError as e:
        return reply({"kind": "error", "error": str(e)})
    except Exception:  # noqa: BLE001  (the app shows it; it must not end the app)
        return reply({"kind": "error", "error": traceback.format_exc()})
