"""descent.autograd.Function: an op whose forward and backward you write in
Python, as torch.autograd.Function.

    class LegendrePolynomial3(descent.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    y = LegendrePolynomial3.apply(x)     # y.grad_fn: <...LegendrePolynomial3Backward object at 0x...>

`apply` runs forward with grad mode off (the ops inside record nothing) and
hands the result to the binding, which records one node for the whole call:
a C++ node on floor 2 whose apply calls backward here, holding the GIL. The
ctx is that node's Python object, so `y.grad_fn is ctx`; see Note [A custom
Function's node] (floors/binding/python_function.cpp).
"""
import itertools

from .. import _C
from ..grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx", "BackwardCFunction"]


class FunctionCtx:
    """What forward can tell backward through ctx, as torch.autograd.function.FunctionCtx.
    Each call only stores its arguments; the binding reads them when forward
    returns (ctx._record)."""

    def save_for_backward(self, *tensors):
        """Keeps tensors (or None) for backward, which reads them as ctx.saved_tensors.
        A tensor written in place between forward and backward is refused then,
        with the version error of any saved tensor."""
        self.to_save = tensors

    def mark_dirty(self, *args):
        """Says which inputs forward wrote in place; they must be returned as outputs."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Says which outputs have no gradient: they do not require grad, and
        backward still receives a gradient (zeros) for each of them."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """False: backward receives None, not zeros, for an output whose gradient never arrived."""
        self.materialize_grads = value


class BackwardCFunction(_C._FunctionBase, FunctionCtx):
    """The base of every Function's ctx class (LegendrePolynomial3Backward):
    the ctx is the graph node's Python object, and the node calls apply."""

    materialize_grads = True

    def apply(self, *args):
        """The node's gradient formula: the Function's backward, called with this ctx."""
        return self._forward_cls.backward(self, *args)


_function_ids = itertools.count()


class FunctionMeta(type):
    """Gives each Function subclass its ctx class, named as PyTorch names its
    node: LegendrePolynomial3 -> LegendrePolynomial3Backward."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls._autograd_function_id = next(_function_ids)
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of a custom differentiable op: subclass it with static
    forward(ctx, *args) and backward(ctx, *grad_outputs), then call
    YourFunction.apply(*args). backward returns one gradient (or None) per
    forward argument. Alternatively forward(*args) and a static
    setup_context(ctx, inputs, output), as in PyTorch 2."""

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs forward and records one node for it (Note [A custom Function's node])."""
        ctx = cls._backward_cls()
        is_executable = is_grad_enabled() and any(isinstance(a, _C.TensorBase) and a.requires_grad for a in args)
        ctx.needs_input_grad = tuple(is_executable and isinstance(a, _C.TensorBase) and a.requires_grad for a in args)
        with no_grad():  # as PyTorch: the ops of forward record nothing of their own
            if cls.setup_context is Function.setup_context:
                outputs = cls.forward(ctx, *args, **kwargs)
            else:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
        single = not isinstance(outputs, tuple)
        result = ctx._record(args, (outputs,) if single else outputs, is_executable)
        return result[0] if single else result

