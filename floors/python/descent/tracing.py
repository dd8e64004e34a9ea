"""Tracing from Python: record what every floor did for some code.

    with descent.trace() as t:
        y = descent.ones(2, 2) + 1
    print(t.result.format_tree())

`run(code)` is what `descent trace "<code>"` does: each statement of the code
becomes a floor-1 span named by its source text, and the descent package's
own Python functions (Tensor.__add__, ...) become floor-1 spans inside it.
"""
import ast
import atexit
import os
import sys

from . import _C

PYTHON_FLOOR = 1
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class trace:
    """Context manager: tracing on inside the block; the Trace is `.result`.

    Blocks nest (Note [Nested recordings] in tracer/tracer.h): inside another
    recording, including DESCENT_TRACE=1's, the inner block's Trace holds the
    spans begun inside it, and the outer recording goes on undisturbed."""

    def __init__(self, python_functions=True):
        self.python_functions = python_functions
        self.result = None
        self._since_ns = None  # set when this block nests inside a running recording
        self._hook = False     # whether this block switched the profile hook on

    def __enter__(self):
        if _C._trace_enabled():
            self._since_ns = _C._trace_now_ns()
        else:
            _C._trace_start()
        if self.python_functions and not _hooks:
            _C._set_profile_hook(True, _PACKAGE_DIR, __file__)
            self._hook = True
        if self.python_functions:
            _hooks.append(self)
        return self

    def __exit__(self, *exc):
        if self.python_functions:
            _hooks.remove(self)
        if self._hook:
            _C._set_profile_hook(False)
            if _hooks:  # an outer block still wants Python functions traced
                _C._set_profile_hook(True, _PACKAGE_DIR, __file__)
                _hooks[0]._hook, self._hook = True, False
        if self._since_ns is not None:
            self.result = _C._trace_snapshot(self._since_ns)
        else:
            self.result = _C._trace_stop()
        self.result.set_metadata("device", "cpu (floors 1-6; the device floors 7-8 come later)")
        return False


_hooks = []  # open trace blocks that trace the package's Python functions, outermost first


def run(code, env=None, echo=print):
    """Runs `code` statement by statement, each a floor-1 span. Returns
    (trace, error): error is the exception the code raised, or None. The value
    of a statement that is an expression is echoed, as at a prompt, once the
    recording has stopped (so printing it is not part of the trace)."""
    env = {"descent": sys.modules["descent"], "__name__": "__descent_trace__"} if env is None else env
    tree = ast.parse(code, "<descent trace>", "exec")  # SyntaxError reaches the caller before tracing
    error = None
    values = []
    with trace() as t:
        for stmt in tree.body:
            text = ast.get_source_segment(code, stmt) or type(stmt).__name__
            index = _C._span_begin(PYTHON_FLOOR, text)
            try:
                if isinstance(stmt, ast.Expr):
                    value = eval(compile(ast.Expression(stmt.value), "<descent trace>", "eval"), env)
                    if value is not None:
                        values.append(value)
                else:
                    exec(compile(ast.Module([stmt], []), "<descent trace>", "exec"), env)
            except (Exception, SystemExit) as e:  # the user's code failed or exited: keep what was recorded
                error = e
                break
            finally:
                _C._span_end(index)
    for value in values:
        if echo:
            echo(repr(value))
    return t.result, error


def header(tr):
    text = (f"descent trace: {len(tr.spans())} spans; tracer cost {tr.span_cost_ns:.1f} ns per span "
            f"(included in the times below); device: {tr.metadata.get('device', 'cpu')}")
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
