"""descent.nn.functional: the layers as functions, as torch.nn.functional.

    F.linear(x, w, b)              # x @ w.T + b, one op: aten::linear
    F.relu(x)                      # aten::relu
    F.mse_loss(y_pred, y, reduction="sum")

As in PyTorch, `linear` *is* the C function of the op (descent._C._nn.linear):
calling it crosses into C++ at once, on floor 2. `mse_loss` is Python first,
as torch's is: it warns when the shapes differ, broadcasts the two, and calls
descent._C._nn.mse_loss with the reduction as the kernels' enum.

The rest are torch.nn.functional's too, over the ops PyTorch calls:
softmax and log_softmax (aten::softmax.int over aten::_softmax),
cross_entropy (aten::cross_entropy_loss: log_softmax then nll_loss_nd),
nll_loss, one_hot, binary_cross_entropy(_with_logits), dropout (aten::dropout),
embedding (aten::embedding) and layer_norm (aten::layer_norm over
native_layer_norm); each checks in Python what torch's checks in Python.
"""
import warnings

from .. import _C
from . import _reduction as _Reduction

__all__ = ["linear", "relu", "gelu", "silu", "mse_loss", "softmax", "log_softmax", "cross_entropy", "nll_loss",
           "one_hot", "sigmoid", "tanh", "binary_cross_entropy", "binary_cross_entropy_with_logits", "dropout",
           "embedding", "layer_norm", "conv2d", "max_pool2d"]

linear = _C._nn.linear


def relu(input, inplace=False):
    """max(0, input), elementwise. inplace=True writes the result into input
    (descent has no relu_ op: the result of aten::relu is copied in)."""
    if inplace:
        return input.copy_(_C.relu(input))
    return _C.relu(input)


# gelu's approximation as descent's schema takes it: an int where aten's is a str
# (Note [Where descent's schemas differ from aten's], ops.h).
_GELU_APPROXIMATE = {"none": 0, "tanh": 1}


def gelu(input, *, approximate="none"):
    """x * Phi(x), elementwise, Phi the standard normal's CDF (aten::gelu); approximate='tanh':
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))). approximate is keyword-only, as
    torch._C._nn.gelu's (torch's F.gelu is that function)."""
    if not isinstance(approximate, str):
        raise TypeError(f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__}")
    if approximate not in _GELU_APPROXIMATE:
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _C._nn.gelu(input, approximate=_GELU_APPROXIMATE[approximate])


def silu(input, inplace=False):
    """x * sigmoid(x), elementwise (aten::silu). inplace=True writes the result into input
    (descent has no silu_ op: the result of aten::silu is copied in)."""
    if inplace:
        return input.copy_(_C._nn.silu(input))
    return _C._nn.silu(input)


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


# [SECTION] softmax and the losses over it ------------------------------------------

def _get_softmax_dim(name, ndim, stacklevel):
    """The dim an old call without dim= meant (torch's rule: 0 for 0-, 1- and 3-D, else 1), with its warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim (aten::softmax.int); dtype casts the input first."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return input.softmax(dim) if dtype is None else input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed as x - max - log(sum(exp(x - max))) (aten::log_softmax.int)."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return input.log_softmax(dim) if dtype is None else input.log_softmax(dim, dtype=dtype)


def _reduction_of(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    return _Reduction.get_enum(reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """The cross-entropy of the logits `input` ([N, C], [C] or [N, C, d1, ...]) against class indices or class
    probabilities (a float target of input's shape): aten::cross_entropy_loss, log_softmax then nll_loss."""
    return _C._nn.cross_entropy_loss(input, target, weight, _reduction_of(size_average, reduce, reduction),
                                     ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] (times weight[target[n]]), averaged over the weights of the samples kept
    (aten::nll_loss_nd, which calls nll_loss_forward)."""
    return _C._nn.nll_loss_nd(input, target, weight, _reduction_of(size_average, reduce, reduction), ignore_index)


def one_hot(tensor, num_classes=-1):
    """An int64 tensor of tensor's shape + [num_classes], 1 at each element's class (aten::one_hot);
    num_classes=-1: the largest class + 1."""
    return _C._nn.one_hot(tensor, num_classes)


def sigmoid(input):
    """1 / (1 + exp(-x)), elementwise (aten::sigmoid)."""
    return input.sigmoid()


def tanh(input):
    """tanh(x), elementwise (aten::tanh)."""
    return input.tanh()


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log(x) + (1 - t) log(1 - x)) of probabilities x (aten::binary_cross_entropy)."""
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = weight.expand(_broadcast_shape(list(target.shape), list(weight.shape)))
    return _C._nn.binary_cross_entropy(input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed from the logits without a log of 0
    (aten::binary_cross_entropy_with_logits); pos_weight weighs the positives of each class."""
    reduction_enum = _reduction_of(size_average, reduce, reduction)
    if not (target.size() == input.size()):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    return _C.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction_enum)


# [SECTION] dropout, embedding, layer_norm ----------------------------------------------

def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p), when training (aten::dropout).
    inplace=True writes the result into input."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _C.dropout(input, p, training)
    return input.copy_(out) if inplace and out is not input else out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of weight that the indices in input name (aten::embedding); padding_idx's row gets no gradient."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        raise NotImplementedError("embedding(): max_norm (aten::embedding_renorm_) is not implemented in descent")
    return _C.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dims, normalized_shape (aten::layer_norm)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _C.layer_norm(input, list(normalized_shape), weight, bias, eps)


# [SECTION] conv2d and max_pool2d -------------------------------------------------------

def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The 2-D cross-correlation of input ([N, C, H, W] or [C, H, W]) with weight ([OC, C / groups, KH, KW]),
    plus bias (aten::conv2d); padding may be 'valid' (none) or 'same' (stride 1)."""
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            k, d = list(weight.shape[2:]), _pair(dilation)
            total = [d[i] * (k[i] - 1) for i in range(2)]
            if any(t % 2 for t in total):
                raise NotImplementedError("conv2d(): padding='same' with an even kernel (uneven padding) is not "
                                          "implemented in descent")
            padding = [t // 2 for t in total]
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
    return _C.conv2d(input, weight, bias, _pair(stride), _pair(padding), _pair(dilation), groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The largest element of each window (aten::max_pool2d); stride defaults to kernel_size."""
    if return_indices:
        raise NotImplementedError("max_pool2d(): return_indices=True (aten::max_pool2d_with_indices) is not "
                                  "implemented in descent")
    return _C.max_pool2d(input, _pair(kernel_size), None if stride is None or stride == [] else _pair(stride),
                         _pair(padding), _pair(dilation), ceil_mode)
