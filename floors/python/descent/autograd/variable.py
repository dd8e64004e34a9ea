"""descent.autograd.Variable, as PyTorch keeps it: a name from before tensors had autograd.

Since PyTorch 0.4 a Variable *is* a Tensor: Variable(x, requires_grad=True)
returns a Tensor over x's memory that requires grad, and isinstance(t,
Variable) is true of every tensor. `volatile` has had no effect since then
and only warns.
"""
import warnings

from .. import _C
from .._tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data, requires_grad=False): data's memory, outside any graph, as a leaf Tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        if data is None:
            data = _C.empty([0])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t.requires_grad_(requires_grad)
        return t
