"""descent.nn.functional: the layers as functions, as torch.nn.functional.

    F.linear(x, w, b)              # x @ w.T + b, one op: aten::linear
    F.relu(x)                      # aten::relu
    F.mse_loss(y_pred, y, reduction="sum")

As in PyTorch, `linear` *is* the C function of the op (descent._C._nn.linear):
calling it crosses into C++ at once, on floor 2. `mse_loss` is Python first,
as torch's is: it warns when the shapes differ, broadcasts the two, and calls
descent._C._nn.mse_loss with the reduction as the kernels' enum.
"""
import warnings

from .. import _C
from . import _reduction as _Reduction

__all__ = ["linear", "relu", "mse_loss"]

linear = _C._nn.linear


def relu(input, inplace=False):
    """max(0, input), elementwise. inplace=True writes the result into input
    (descent has no relu_ op: the result of aten::relu is copied in)."""
    if inplace:
        return input.copy_(_C.relu(input))
    return _C.relu(input)


def _broadcast_shape(a, b):
    """The shape two shapes broadcast to, with PyTorch's error when they do not."""
    shape = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {max(len(a), len(b)) - i}")
        shape.append(y if x == 1 else x)
    return list(reversed(shape))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The squared differences of input and target: their mean (reduction='mean'),
    their sum ('sum') or each of them ('none')."""
    if not (target.size() == input.size()):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=2)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    shape = _broadcast_shape(list(input.shape), list(target.shape))  # torch.broadcast_tensors
    expanded_input = input if list(input.shape) == shape else input.expand(shape)
    expanded_target = target if list(target.shape) == shape else target.expand(shape)
    return _C._nn.mse_loss(expanded_input, expanded_target, _Reduction.get_enum(reduction))
