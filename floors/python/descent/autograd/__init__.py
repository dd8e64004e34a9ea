"""descent.autograd: the backward engine's Python face, as torch.autograd.

    loss.backward()                              # gradients into every leaf's .grad
    descent.autograd.grad(loss, [w, b])          # gradients returned, .grad untouched
    descent.autograd.gradcheck(f, (x, w))        # formulas against finite differences
    class F(descent.autograd.Function): ...      # an op with its own forward and backward (function.py)

The graph is recorded on the way down by the Autograd kernels (floor 4,
floors/autograd/variable_type.cpp) and walked here by the engine
(floors/autograd/engine.cpp, Note [How backward walks the graph]).
"""
import itertools

from .. import _C
from ..grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401  (torch.autograd has them)

from .function import Function, FunctionCtx  # noqa: F401
from .variable import Variable  # noqa: F401  (torch.autograd.Variable: a Tensor since PyTorch 0.4)

Node = _C.Node


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _grads(tensors, grad_tensors):
    grads = _as_tuple(grad_tensors)
    if not grads:
        grads = (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs: got {len(grads)} gradients "
                           f"for {len(tensors)} tensors")
    return grads


_CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak.")
_warned_create_graph = []


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradients of `tensors` and adds them into the leaves' .grad."""
    tensors = _as_tuple(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not _warned_create_graph and all(t.requires_grad for t in tensors):
        # torch/csrc/autograd/engine.cpp, Engine::execute: TORCH_WARN_ONCE when a backward that
        # accumulates into .grad also records the graph (autograd.grad does not warn).
        _warned_create_graph.append(True)
        import warnings
        warnings.warn(_CREATE_GRAPH_CYCLE, UserWarning, stacklevel=2)
    if inputs is not None:
        # backward(inputs=...): only those leaves accumulate, as in PyTorch.
        inputs = _as_tuple(inputs)
        gs = _C._run_backward(tensors, _grads(tensors, grad_tensors), retain_graph, create_graph, inputs, True)
        with no_grad() if not create_graph else enable_grad():
            for t, g in zip(inputs, gs):
                if g is not None:
                    t.grad = g.clone() if t.grad is None else t.grad + g
        return
    _C._run_backward(tensors, _grads(tensors, grad_tensors), retain_graph, create_graph, None, False)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple; .grad is left alone."""
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    result = _C._run_backward(outputs, _grads(outputs, grad_outputs), retain_graph, create_graph, inputs_t,
                              allow_unused)
    if materialize_grads:
        result = tuple(_C.zeros(list(i.shape), dtype=i.dtype, device=i.device) if g is None else g
                       for g, i in zip(result, inputs_t))
    return result


_NO_ANOMALY_MODE = ("descent has no anomaly mode (Note [No anomaly mode], floors/autograd/node.cpp): it does not "
                    "record each node's forward traceback. To find the in-place op that bumped a saved tensor's "
                    "version, trace the code (descent trace \"...\"): every in-place op's ADInplaceOrView kernel, "
                    "which bumps the version, is in the trace.")


def set_detect_anomaly(mode, check_nan=True):
    """torch.autograd.set_detect_anomaly, which descent does not have: NotImplementedError saying why."""
    raise NotImplementedError(_NO_ANOMALY_MODE)


def detect_anomaly(check_nan=True):
    """torch.autograd.detect_anomaly, which descent does not have: NotImplementedError saying why."""
    raise NotImplementedError(_NO_ANOMALY_MODE)


def is_anomaly_enabled():
    """Always False: descent has no anomaly mode (Note [No anomaly mode])."""
    return False


class RemovableHandle:
    """What register_hook returns: handle.remove() takes the hook off again."""

    def __init__(self, owner, hook_id):
        self._owner, self.id = owner, hook_id

    def remove(self):
        if self._owner is not None:
            self._owner._remove_hook(self.id)
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_C._set_handle_class(RemovableHandle)  # what Node.register_hook and register_prehook return


# [SECTION] gradcheck ------------------------------------------------------------------------

class GradcheckError(RuntimeError):
    """A formula's gradient and the finite differences disagree (torch.autograd.gradcheck.GradcheckError)."""


def _indices(shape):
    return itertools.product(*[range(s) for s in shape])


def _numerical_jacobian(fn, inputs, k, eps):
    """d outputs / d inputs[k] by central differences, one column per element of inputs[k]."""
    x = inputs[k]
    cols = []
    data = x.detach()  # the same memory, outside the graph: written in place without touching x's history
    for idx in _indices(tuple(x.shape)):
        orig = data[idx].item()
        data[idx] = orig + eps
        plus = [o.detach().clone() for o in _outputs(fn(*inputs))]
        data[idx] = orig - eps
        minus = [o.detach().clone() for o in _outputs(fn(*inputs))]
        data[idx] = orig
        cols.append([((p - m) / (2 * eps)).reshape(-1).tolist() for p, m in zip(plus, minus)])
    return cols  # cols[element of x][output] = list over output elements


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


def _analytical_jacobian(fn, inputs, k, create_graph=False):
    """d outputs / d inputs[k] from autograd: one backward per output element."""
    outs = _outputs(fn(*inputs))
    rows = []  # rows[output][output element] = list over elements of inputs[k]
    for o in outs:
        per = []
        for j in range(o.numel()):
            g = _C.zeros(list(o.shape), dtype=o.dtype, device=o.device)
            if o.numel():
                g.reshape(-1)[j] = 1.0
            (gx,) = grad(o, inputs[k], g, retain_graph=True, allow_unused=True)
            per.append([0.0] * inputs[k].numel() if gx is None else gx.reshape(-1).tolist())
        rows.append(per)
    return rows


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Checks the gradients autograd computes for fn(*inputs) against central
    finite differences, for every input that requires grad. Use float64."""
    inputs = _as_tuple(inputs)
    for k, x in enumerate(inputs):
        if not (isinstance(x, _C.TensorBase) and x.requires_grad):
            continue
        if x.dtype is not _C.float64:
            import warnings
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating point: "
                          "gradcheck's finite differences are only reliable in float64")
        numerical = _numerical_jacobian(fn, inputs, k, eps)
        analytical = _analytical_jacobian(fn, inputs, k)
        for o, per in enumerate(analytical):
            for j, row in enumerate(per):
                for i, a in enumerate(row):
                    n = numerical[i][o][j]
                    if not abs(a - n) <= atol + rtol * abs(n):
                        msg = (f"Jacobian mismatch for output {o} with respect to input {k},\n"
                               f"at output element {j}, input element {i}: numerical {n!r}, analytical {a!r}")
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """gradcheck of the gradient itself: the formulas' own derivatives
    (create_graph=True) against finite differences of the gradient."""
    inputs = _as_tuple(inputs)
    outs = _outputs(fn(*inputs))
    if grad_outputs is None:
        _C.manual_seed(0)
        grad_outputs = tuple(_C.randn(list(o.shape), dtype=o.dtype, device=o.device).requires_grad_() for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C.TensorBase) and x.requires_grad]

    def first_derivative(*args):
        xs, gos = args[:len(inputs)], args[len(inputs):]
        out = _outputs(fn(*xs))
        gs = grad(out, [xs[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
