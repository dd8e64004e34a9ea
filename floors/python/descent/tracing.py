"""Tracing from Python: record what every floor did for some code.

    with descent.trace() as t:
        y = descent.ones(2, 2) + 1
    print(t.result.format_tree())

`run(code)` is what `descent trace "<code>"` does: each statement of the code
becomes a floor-1 span named by its source text, and the descent package's
own Python functions (Tensor.__getitem__, Tensor.backward, ...) become floor-1
spans inside it. Tensor's operators and op methods are C (x + 1 is a floor-2
span at once, as in PyTorch).
"""
import ast
import atexit
import os
import re
import sys
import threading

from . import _C

PYTHON_FLOOR = 1
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class trace:
    """Context manager: tracing on inside the block; the Trace is `.result`.

    Blocks nest, on one thread or across threads, and inside DESCENT_TRACE=1
    (Note [Nested recordings] in tracer/tracer.h): the first block to open
    starts the recording, every block's Trace holds the spans begun (on any
    thread) while it was open, and the last block to close stops the
    recording. Python functions are traced on the threads that opened a block."""

    def __init__(self, python_functions=True):
        self.python_functions = python_functions
        self.result = None
        self._since_ns = None     # when this block opened, on the trace's clock
        self._dropped_before = 0  # spans the recording had dropped by then
        self._hook = False        # whether this block switched its thread's profile hook on

    def __enter__(self):
        global _open_blocks, _blocks_own_recording
        with _lock:
            if _open_blocks == 0:
                # A recording started by someone else (C++, _C._trace_start) is
                # only watched, never stopped, by blocks.
                _blocks_own_recording = not _C._trace_enabled()
                if _blocks_own_recording:
                    _C._trace_start()
            _open_blocks += 1
            self._since_ns = _C._trace_now_ns()
            self._dropped_before = _C._trace_dropped()
        hooks = _thread_hooks()
        if self.python_functions:
            if not hooks:  # the profile hook is per thread: the first block on this thread sets it
                _C._set_profile_hook(True, _PACKAGE_DIR, __file__)
                self._hook = True
            hooks.append(self)
        return self

    def __exit__(self, *exc):
        global _open_blocks
        hooks = _thread_hooks()
        if self in hooks:
            hooks.remove(self)
        if self._hook:
            self._hook = False
            if hooks:  # another block of this thread still wants Python functions: it owns the hook now
                hooks[0]._hook = True
            else:
                _C._set_profile_hook(False)
        with _lock:
            _open_blocks -= 1
            if _open_blocks == 0 and _blocks_own_recording:
                # The work this recording queued on a device runs later: wait
                # for it, so that its device spans are in the trace (the wait
                # is a span of its own, floor 7), as PyTorch's profiler does.
                try:
                    _C._synchronize_devices_in_use()
                except RuntimeError:
                    pass  # a device fault: the code's next device call reports it
                self.result = _C._trace_stop(self._since_ns, self._dropped_before)
            else:
                self.result = _C._trace_snapshot(self._since_ns, self._dropped_before)
        self.result.set_metadata("device", _devices())
        return False


def _devices():
    """The devices this machine offers, for the trace's metadata: "cpu, sim:0 (simulated), cuda:0 (NVIDIA H200)"."""
    from . import cuda
    names = ["cpu", "sim:0 (simulated)"]
    if cuda._is_in_bad_fork():  # asking for a name would raise (Note [Devices after fork])
        names.append("cuda (not usable in a child forked after its parent used it)")
    else:
        names += [f"cuda:{i} ({cuda.get_device_name(i)})" for i in range(cuda.device_count())]
    return ", ".join(names)


class span:
    """A floor-1 span named `name` around a block of the package's own code,
    as torch.autograd.profiler.record_function puts a named range around one:
    `with span("nn.Module: Linear_0", site):`. `site` is a source site from
    site_of() (Note [Span source sites]). With tracing off, entering and
    leaving cost one C call each."""
    __slots__ = ("name", "site", "_handle")

    def __init__(self, name, site=0):
        self.name, self.site = name, site

    def __enter__(self):
        self._handle = _C._span_begin(PYTHON_FLOOR, self.name, self.site)
        return self

    def __exit__(self, *exc):
        _C._span_end(self._handle)
        return False


def site_of(fn):
    """The source site of a function of the package, for span(): its file as
    it lies in the repository (floors/python/descent/...) and its def line."""
    code = fn.__code__
    relative = os.path.relpath(code.co_filename, _PACKAGE_DIR).replace(os.sep, "/")
    return _C._register_site("floors/python/descent/" + relative, code.co_firstlineno,
                             getattr(code, "co_qualname", fn.__qualname__))


_lock = threading.Lock()         # guards the two below
_open_blocks = 0                 # trace blocks open, all threads
_blocks_own_recording = False    # whether the first of them started the recording
_local = threading.local()


def _thread_hooks():
    """This thread's open blocks that trace the package's Python functions, outermost first."""
    if not hasattr(_local, "hooks"):
        _local.hooks = []
    return _local.hooks


def source_segments(code, nodes):
    """The source text of each node, as ast.get_source_segment gives it, from one split of the code
    into lines: get_source_segment splits the whole source again for every node, which made a trace
    of N statements take time in N^2 (`descent trace` of 8,000 statements: 66 s here, now 0.26 s). Lines end at \\r\\n,
    \\r or \\n only, and the columns count UTF-8 bytes, as ast's do."""
    lines, start = [], 0
    for m in re.finditer(r"\r\n|\r|\n", code):
        lines.append(code[start:m.end()])
        start = m.end()
    if start < len(code):
        lines.append(code[start:])
    texts = []
    for node in nodes:
        end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None or node.lineno - 1 >= len(lines):
            texts.append(None)
            continue
        first, last = node.lineno - 1, end_line - 1
        if first == last:
            texts.append(lines[first].encode()[node.col_offset:end_col].decode())
            continue
        head = lines[first].encode()[node.col_offset:].decode()
        tail = lines[last].encode()[:end_col].decode()
        texts.append("".join([head, *lines[first + 1:last], tail]))
    return texts


def run(code, env=None, echo=print, repeat=1):
    """Runs `code` statement by statement, each a floor-1 span. Returns
    (trace, error): error is the exception the code raised, or None. The value
    of a statement that is an expression is echoed, as at a prompt, once the
    recording has stopped (so printing it is not part of the trace). With
    repeat=N the whole code runs N times in the one recording, so that the
    first (cold) call of each line can be told from the warm ones after it;
    only the last run's values are echoed."""
    env = {"descent": sys.modules["descent"], "__name__": "__descent_trace__"} if env is None else env
    tree = ast.parse(code, "<descent trace>", "exec")  # SyntaxError reaches the caller before tracing
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    # Compiled before the recording, so a statement's span holds its running only.
    statements = []
    for stmt, text in zip(tree.body, source_segments(code, tree.body)):
        text = text or type(stmt).__name__
        if isinstance(stmt, ast.Expr):
            statements.append((text, True, compile(ast.Expression(stmt.value), "<descent trace>", "eval")))
        else:
            statements.append((text, False, compile(ast.Module([stmt], []), "<descent trace>", "exec")))
    error = None
    values = []
    statement_cost = _statement_self_cost_ns(env) if repeat > 1 else None
    run_statement = _C._run_statement  # the statement's span is opened and closed in C, around its frame only
    with trace() as t:
        recorder = _record_values(None, env)  # the values view's snapshots (Note [Recording the values], _values.py)
        for _ in range(repeat):
            values.clear()
            for text, is_expression, compiled in statements:
                try:
                    value = run_statement(PYTHON_FLOOR, text, compiled, env)
                except (Exception, SystemExit, KeyboardInterrupt) as e:  # failed, exited or was stopped: keep what was recorded
                    error = e
                    _record_values(recorder, env, text, raised=True)
                    break
                _record_values(recorder, env, text)
                if is_expression and value is not None:
                    values.append(value)
            if error is not None:
                break
    for value in values:
        if echo:
            echo(repr(value))
    t.result.set_metadata("trace.runs", str(repeat))
    if statement_cost is not None:
        t.result.set_metadata("tracer.statement_self_cost_ns", f"{statement_cost:.1f}")
    if recorder is not None and not recorder.broken:
        t.result.set_metadata("values.snapshots", recorder.json())
    names = leaf_names(env)
    if names:  # the app's graph names the leaves from it (Note [Naming the leaves], ui/graph.h)
        t.result.set_metadata("autograd.leaf_names", names)
    return t.result, error


def _record_values(recorder, env, text=None, raised=False):
    """The values after statement `text` (without one: a new Recorder, its first snapshot), with this
    thread's Python-function hook off meanwhile, so that the recorder makes no spans. A recorder that
    fails is marked broken and records no more (the code's run goes on)."""
    if recorder is None and text is not None or recorder is not None and recorder.broken:
        return recorder
    hooked = bool(_thread_hooks())
    if hooked:
        _C._set_profile_hook(False)
    try:
        from . import _values
        if recorder is None:
            return _values.Recorder(env)
        recorder.snapshot(text, raised)
        return recorder
    except Exception:  # noqa: BLE001  (a tensor the recorder cannot read: no values view, the run goes on)
        if recorder is not None:
            recorder.broken = True
        return recorder
    finally:
        if hooked:
            _C._set_profile_hook(True, _PACKAGE_DIR, __file__)


def leaf_names(env):
    """The names in `env` that hold a leaf requiring grad, by the leaf's data_ptr() in hex:
    "0x5f1e2a40=x, y; 0x5f1e2b80=model.weight" -- the variables, and the parameters of the
    modules there. Note [Naming the leaves] in ui/graph.h: the floor-4 spans record the
    data_ptr of the leaf each edge reaches, and the graph joins the two."""
    from .nn.modules.module import Module
    names = {}

    def add(name, v):
        if isinstance(v, _C.TensorBase) and v.requires_grad and v.is_leaf:
            names.setdefault(hex(v.data_ptr()), []).append(name)

    for name, v in list(env.items()):
        if name.startswith("_"):
            continue
        if isinstance(v, Module):
            for pname, p in v.named_parameters():
                add(f"{name}.{pname}", p)
        else:
            add(name, v)
    return "; ".join(f"{ptr}={', '.join(n)}" for ptr, n in names.items())


def _statement_self_cost_ns(env, samples=501, rounds=3):
    """What a statement's span costs itself (Note [Warm medians], tracer/trace.h):
    the median span of a no-op statement run as run() runs each statement
    (through _C._run_statement, in a recording of its own, with the profile
    hook on), less the median time of the same statement untraced, timed
    alone as its span times it (_C._time_statement). The profile hook's
    events for the statement's frame are the most of it. The median of a few
    rounds, each timing both close together, so a busy moment counts once."""
    import statistics
    noop = compile("None", "<descent trace>", "eval")
    costs = []
    for _ in range(rounds):
        untraced = statistics.median(_C._time_statement(noop, env, samples))
        with trace() as cal:
            for _ in range(samples):
                _C._run_statement(PYTHON_FLOOR, "statement calibration", noop, env)
        spans = [s["end_ns"] - s["start_ns"] for s in cal.result.spans() if s["name"] == "statement calibration"]
        if spans:
            costs.append(statistics.median(spans[1:] or spans) - untraced)
    return max(0.0, statistics.median(costs)) if costs else 0.0


def header(tr, runs=1):
    """The line above a trace's tree. With runs > 1 the tree is
    format_tree_repeated(runs)'s: warm medians with the tracer's cost taken
    out (Note [Warm medians] in tracer/trace.h)."""
    clock = tr.metadata.get("tracer.clock", "unknown")
    device = tr.metadata.get("device", "cpu")
    if runs > 1:
        per_arg = tr.metadata.get("tracer.arg_cost_ns")
        self_cost = tr.metadata.get("tracer.span_self_cost_ns")
        statement = tr.metadata.get("tracer.statement_self_cost_ns")
        old_statement = tr.metadata.get("tracer.statement_cost_ns")  # traces saved before the self costs
        extra = (f" inside the spans around it ({float(self_cost):.1f} inside itself)" if self_cost else "") + \
                (f", {float(per_arg):.1f} ns per argument" if per_arg else "") + \
                (f", {statement} ns inside a statement's own span" if statement else "") + \
                (f" and {old_statement} ns more per statement" if old_statement else "")
        text = (f"descent trace: {tr.span_count} spans in {runs} runs; times are warm medians of {runs - 1} "
                f"runs with the tracer's cost taken out: {tr.span_cost_ns:.1f} ns per span{extra} (the first, cold "
                f"run in the last column); clock: {clock}; device: {device}")
    else:
        text = (f"descent trace: {tr.span_count} spans; tracer cost {tr.span_cost_ns:.1f} ns per span "
                f"(included in the times below); clock: {clock}; device: {device}")
    dropped = tr.metadata.get("tracer.dropped_spans")
    if dropped:
        text += f"\nINCOMPLETE: {dropped} spans were dropped at the limit of DESCENT_TRACE_MAX_SPANS spans per thread"
    return text


def trace_whole_program():
    """DESCENT_TRACE=1: trace everything until exit, then print the tree to stderr."""
    t = trace()
    t.__enter__()

    def finish():
        t.__exit__(None, None, None)
        print(header(t.result), file=sys.stderr)
        print(t.result.format_tree(), file=sys.stderr)
        path = os.environ.get("DESCENT_TRACE_CHROME")
        if path:
            t.result.save_chrome(path)

    atexit.register(finish)
