"""descent.nn.Parameter: a tensor that a Module registers as its own, as torch.nn.Parameter."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module's parameter: assigned to a Module's attribute
    it is registered (module.parameters() yields it), and it requires grad
    unless told otherwise. It shares data's memory and version counter, outside
    any graph (Tensor._make_subclass, floors/binding/tensor_object.cpp).

    The results of ops on a Parameter are plain Tensors, as in PyTorch."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass  # all done in __new__

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __copy__(self):
        return self.__deepcopy__({})

    def __reduce__(self):
        return type(self), (self.data, self.requires_grad)
