"""descent.compile, as torch.compile: capture a function's aten graph once, guard it, replay it.

    @descent.compile
    def f(x, w, b):
        return (x @ w + b).relu()

    f(x, w, b)        # first call: captured (make_fx's mode), guarded, compiled by the backend
    f(x, w, b)        # guards pass: the graph runs, the Python of f does not
    f(x2, w, b)       # x2 has another shape: a guard fails, f is captured again
    print(f.explain())   # captures, guard failures and graph breaks, in order

What each step is, and where PyTorch does it:
  - capture (torch/_dynamo reads the bytecode; descent runs the function
    under a TorchDispatchMode instead: Note [Capturing by running],
    descent/fx/experimental/proxy_tensor.py),
  - guards (torch/_dynamo/guards.py: Note [Guards], guards.py),
  - graph breaks (Note [Graph breaks], below),
  - the backend: "eager" replays the graph op by op, "inductor" (the
    default) fuses its pointwise chains into generated kernels
    (descent/_compile/fusion.py), a callable is handed (GraphModule,
    example_inputs) as a torch.compile backend is.
"""
import builtins
import functools
import inspect
import time
import warnings

from . import guards as _guards
from .. import _C
from ..tracing import site_of as _site_of, span as _span

__all__ = ["compile", "CompiledFunction", "Unsupported", "explain", "reset", "list_backends", "counters"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "eager", "aot_eager")
recompile_limit = 8  # torch._dynamo.config.recompile_limit: entries per function before it stays eager

# Totals over every compiled function, as torch._dynamo.utils.counters.
counters = {"captures": 0, "cache_hits": 0, "recompiles": 0, "graph_breaks": 0, "eager_calls": 0}


class Unsupported(RuntimeError):
    """A graph break under fullgraph=True (torch._dynamo.exc.Unsupported)."""


class InvalidBackend(RuntimeError):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `descent._compile.list_backends()` for available backends.")


def list_backends():
    return list(_BACKENDS)


# Note [Graph breaks]
# ~~~~~~~~~~~~~~~~~~~
# torch._dynamo splits a function where it meets what it cannot put in a
# graph (a branch on a tensor's value, print, an unsupported call): it
# compiles the pieces and runs the break itself in Python. descent's capture
# records ops by running the function (Note [Capturing by running]), so it
# cannot split it: where the function reads a traced tensor's value
# (item(), bool(), float()), prints, returns something a graph cannot
# return, or mutates an argument in place, the call is a graph break of the
# whole function: it runs eager, the reason is recorded (explain()), and
# later calls that pass the same guards run eager at once without trying
# again. With fullgraph=True a break raises Unsupported instead, as
# torch.compile(fullgraph=True) does.


class _Entry:
    """One cache entry: the guards' key, and either a compiled graph or the graph break's reason."""
    __slots__ = ("key", "gm", "run", "reason", "compile_s", "calls", "index", "all_tensors")

    def __init__(self, key, gm=None, run=None, reason=None, compile_s=0.0):
        self.key, self.gm, self.run, self.reason, self.compile_s, self.calls = key, gm, run, reason, compile_s, 0
        self.index = 0
        # Every argument a tensor (the key says, guard by guard): the call's arguments are the graph's inputs.
        self.all_tensors = key is not None and all(k[0] == "T" for k in key if k[0] in ("T", "C"))


class CompiledFunction:
    """What descent.compile(fn) returns: call it as fn. .explain() tells what happened; .entries holds the
    cache (one per guard set); .graphs the captured GraphModules."""

    def __init__(self, fn, mode, backend, fullgraph, dynamic, options):
        self._fn, self.mode, self.backend, self.fullgraph, self.options = fn, mode, backend, fullgraph, options
        self.dynamic = dynamic
        self.entries = {}  # key -> _Entry
        self._latest = None
        self.events = []  # what happened, in order: the explain text's lines
        try:
            fwd = getattr(fn, "forward", None)  # a module: its forward's parameters name the guards
            self._sig = inspect.signature(fwd if callable(fwd) else fn)
            params = list(self._sig.parameters.values())
        except (TypeError, ValueError):
            self._sig, params = None, []
        self._plain = self._sig is not None and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)
        self._names = [p.name for p in params]
        has_var = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
        self._nparams = None if has_var or self._sig is None else len(params)  # defaults filled in below it
        self._where = _where(fn)
        self._watch = _watched(fn)
        self.eager_forever = False
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<descent.compile of {getattr(self._fn, '__qualname__', self._fn)!r}>"

    @property
    def _orig_mod(self):
        """What was compiled (torch's OptimizedModule._orig_mod)."""
        return self._fn

    def __getattr__(self, name):
        # A compiled module is still the module: parameters(), train(), state_dict() are its own.
        if name.startswith("__") or name in ("_fn", "entries"):
            raise AttributeError(name)
        return getattr(self._fn, name)

    @property
    def kernels(self):
        """Every fused kernel of every entry (the inductor backend's: descent/_compile/fusion.py)."""
        return [k for e in self.entries.values() for k in getattr(e.run, "kernels", [])]

    @property
    def graphs(self):
        return [e.gm for e in self.entries.values() if e.gm is not None]

    def _bind(self, args, kwargs):
        if not kwargs and (self._nparams is None or len(args) == self._nparams):
            return args
        if self._sig is None:
            return None
        bound = self._sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in self._sig.parameters.values()):
            return None
        return tuple(bound.arguments.values())

    def _arg_names(self, n):
        return [self._names[i] if i < len(self._names) else f"args_{i}" for i in range(n)]

    def __call__(self, *args, **kwargs):
        if self.eager_forever:
            counters["eager_calls"] += 1
            return self._fn(*args, **kwargs)
        flat = self._bind(args, kwargs)
        key = None if flat is None else _guards.call_key(flat, [(label, get()) for label, get in self._watch])
        entry = self.entries.get(key) if key is not None else None
        if entry is not None:
            entry.calls += 1
            if entry.run is not None:
                counters["cache_hits"] += 1
                tensors = flat if entry.all_tensors else [a for a in flat if _is_tensor(a)]
                if _C._trace_enabled():  # Note [The compiled call in a trace]
                    with _span(f"descent.compile: guards passed, entry {entry.index}/0", _SITE):
                        pass
                    with _span(f"descent.compile: run graph {entry.index}/0", _SITE):
                        return entry.run(*tensors)
                return entry.run(*tensors)
            counters["eager_calls"] += 1
            return self._fn(*args, **kwargs)
        return self._miss(flat, key, args, kwargs)

    def _miss(self, flat, key, args, kwargs):
        names = self._arg_names(0 if flat is None else len(flat))
        if key is None:
            return self._break(None, "an argument is neither a tensor nor a Python constant (int, float, bool, str, "
                               "None): no guard can hold it", args, kwargs)
        if self._latest is not None:
            counters["recompiles"] += 1
            # Each entry's first failing guard, the newest first, as dynamo's recompile log lists them.
            self.events.append(f"recompile {self._where}, triggered by the following guard failure(s):")
            for i, e in reversed(list(enumerate(self.entries.values()))):
                fails = _guards.failures(e.key, key, names)
                self.events.append(f"    - 0/{i}: {fails[0] if fails else 'a guard failed'}")
        if len(self.entries) >= recompile_limit:
            warnings.warn(f"descent.compile hit recompile_limit ({recompile_limit}) for {self._where}: "
                          "it runs eager from now on")
            self.events.append(f"recompile_limit ({recompile_limit}) reached: eager from now on")
            self.eager_forever = True
            return self._fn(*args, **kwargs)
        with _span(f"descent.compile: capture {len(self.entries)}/0" if _C._trace_enabled() else "", _SITE):
            return self._capture(flat, key, names, args, kwargs)

    def _capture(self, flat, key, names, args, kwargs):
        from ..fx.experimental.proxy_tensor import DataDependentError, capture
        t0 = time.perf_counter()
        printed = []
        real_print = builtins.print

        def watching_print(*a, **k):  # print is a side effect a graph cannot replay: Note [Graph breaks]
            printed.append(1)
            return real_print(*a, **k)
        builtins.print = watching_print
        try:
            gm, result, mode = capture(self._fn, flat, [f"{n}_1" for n in names], self._decompositions())
        except DataDependentError as e:
            builtins.print = real_print
            # The capture stopped at the read; the function runs eager for this call.
            return self._break(key, str(e), args, kwargs)
        except TypeError as e:
            builtins.print = real_print
            if "make_fx: the function returned" not in str(e):
                raise
            return self._break(key, str(e).replace("make_fx: ", ""), args, kwargs, result_known=False)
        finally:
            builtins.print = real_print
        if printed:
            return self._break(key, "print() is a side effect the graph cannot replay", None, None, result=result)
        if mode.mutated:
            func, node = mode.mutated[0]
            what = node.name[:-2] if node.op == "placeholder" else node.name
            return self._break(key, f"mutates its input '{what}' in place ({func})", None, None, result=result)
        counters["captures"] += 1
        index, mark = len(self.entries), len(self.events)
        run = self._aot(gm, mode, flat, result)
        if run is None:
            run = self._backend_compile(gm, [a for a in flat if _is_tensor(a)])
        dt = time.perf_counter() - t0
        entry = _Entry(key, gm, run, compile_s=dt)
        entry.index = index
        self.entries[key] = entry
        self._latest = entry
        n_ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        head = [f"capture {index}/0: {n_ops} ops, backend={self._backend_name()}, {dt * 1e3:.1f} ms"]
        head += [f"    guard: {g}" for g in _guards.describe(key, names)]
        self.events[mark:mark] = head  # before the backend's notes
        return result

    def _break(self, key, reason, args, kwargs, result=None, result_known=True):
        counters["graph_breaks"] += 1
        self.events.append(f"graph break: {reason}")
        if self.fullgraph:
            raise Unsupported(f"descent.compile(fullgraph=True): graph break in {self._where}: {reason}")
        if key is not None:
            entry = _Entry(key, reason=reason)
            self.entries[key] = entry
            self._latest = entry
        if args is None and result_known:
            return result  # the capture ran the function: its result stands
        counters["eager_calls"] += 1
        return self._fn(*args, **kwargs)

    def _aot(self, gm, mode, flat, result):
        """The AOT autograd pair as one CompiledFunction (Note [Partitioning the joint graph], aot.py), where
        the call records a backward; None where it does not, or cannot (the reason noted)."""
        import descent
        if self.backend not in ("inductor", "aot_eager") or not descent.is_grad_enabled():
            return None
        tensors = [a for a in flat if _is_tensor(a)]
        consts = [v for k, v in gm.__dict__.items() if k.startswith("_tensor_constant")]
        if not any(t.requires_grad for t in tensors + consts):
            return None
        from . import aot
        from . import fusion
        compile_fn = (lambda g, ex: fusion.compile_graph(g, ex, self)) if self.backend == "inductor" else None
        try:
            fw, bw, cls, lifted, saved, note = aot.partition(gm, mode, list(flat), result, compile_fn)
        except aot.AotUnsupported as e:
            self.events.append(f"    AOT autograd off: {e}; the graph is replayed through autograd")
            return None
        self.events.append(f"    {note}")
        params = [getattr(gm, k) for k in lifted]

        def run(*tensors):
            return cls.apply(*tensors, *params)
        run.forward_graph, run.backward_graph, run.saved = fw, bw, [n.name for n in saved]
        run.kernels = cls.kernels
        return run

    def _decompositions(self):
        """The inductor backend captures with inductor's decompositions (Note [Decomposing before fusion]);
        "eager" and "aot_eager" keep the ops as they are, as torch's do."""
        if self.backend != "inductor":
            return None
        from .decompositions import select_decomp_table
        return select_decomp_table()

    def _backend_name(self):
        return self.backend if isinstance(self.backend, str) else getattr(self.backend, "__name__", "custom")

    def _backend_compile(self, gm, example_inputs):
        if callable(self.backend):
            return self.backend(gm, example_inputs)
        if self.backend == "inductor":
            from . import fusion
            return fusion.compile_graph(gm, example_inputs, self)
        return gm  # "eager", "aot_eager": the graph replayed op by op

    def explain(self):
        """What happened to this function, in order: captures (with their guards), guard failures, breaks."""
        n_graphs = sum(1 for e in self.entries.values() if e.gm is not None)
        n_breaks = sum(1 for line in self.events if line.startswith("graph break"))
        head = [f"descent.compile of {self._where}: {n_graphs} graph(s), {n_breaks} graph break(s), "
                f"{len(self.entries)} cache entr{'y' if len(self.entries) == 1 else 'ies'}"]
        return "\n".join(head + self.events)

    @property
    def break_reasons(self):
        return [e.reason for e in self.entries.values() if e.reason is not None]


# Note [The compiled call in a trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Inside `with descent.trace()`, a compiled call opens floor-1 spans named
# for what the compiler did: "descent.compile: capture 0/0" around the first
# call (the capture's ops and the kernel build beneath it), and on a hit
# "descent.compile: guards passed, entry 0/0" then "descent.compile: run
# graph 0/0", beneath which a fused kernel is one span ("fused kernel
# <hash>") where eager shows one trip down the floors per op. (The issue asks
# for a compiler row of its own above the dispatcher; these are floor-1 spans.)
_SITE = 0


def _watched(fn):
    """(label, getter) for each tensor or module fn reads from its globals or closure: ID_MATCH guards."""
    import descent
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    kinds = (descent.Tensor, descent.nn.Module)
    out = []
    g = getattr(fn, "__globals__", {})
    for name in code.co_names:
        if isinstance(g.get(name), kinds):
            out.append((f"G['{name}']", lambda g=g, name=name: g.get(name)))
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            if isinstance(cell.cell_contents, kinds):
                out.append((f"L['{name}']", lambda cell=cell: cell.cell_contents))
        except ValueError:  # an empty cell
            pass
    return out


_Tensor = None


def _is_tensor(a):
    global _Tensor
    if _Tensor is None:
        import descent
        _Tensor = descent.Tensor
    return isinstance(a, _Tensor)


def _where(fn):
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", repr(fn))
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code else name


def _register_site():
    global _SITE
    _SITE = _site_of(CompiledFunction.__call__)


_register_site()


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """descent.compile(fn, ...) -> a function that captures fn's graph on its first call and replays it while
    its guards hold; without fn, a decorator (torch.compile's signature)."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise InvalidBackend(backend)
    if not isinstance(backend, str) and not callable(backend):
        raise InvalidBackend(backend)
    if dynamic:
        warnings.warn("descent.compile(dynamic=True): descent's graphs are static; each new shape is a new graph "
                      "(Note [Guards])")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("descent.compile: the argument must be callable")
    if disable:
        return model
    return CompiledFunction(model, mode or "default", backend, fullgraph, dynamic, options or {})


def explain(fn):
    """explain(fn)(*args): compiles fn with the eager backend, calls it once, and returns its explain() text
    (torch._dynamo.explain's purpose, descent's format)."""
    def run(*args, **kwargs):
        cf = fn if isinstance(fn, CompiledFunction) else compile(fn, backend="eager")
        cf(*args, **kwargs)
        return cf.explain()
    return run


def reset():
    """Forgets the totals (torch._dynamo.reset); compiled functions keep their own caches."""
    for k in counters:
        counters[k] = 0
