"""What the op-table sweeps need for torch.nn's rows (floors/kernels/nn_kernels.cpp), kept beside them.

test_ops.py, conftest.py, test_autograd.py and test_int_dtypes.py sweep every
row of the op table; these are the nn rows' entries for them, one table each,
for those files to merge (NUMPY_REFERENCE.update(NUMPY_REFERENCE_NN), ...):
- NUMPY_REFERENCE_NN: a float64 numpy reference of each row's sample call;
  native_layer_norm and nll_loss_forward return tuples, whose first element
  the sample sweep compares (as it does max.dim's values);
- UNSUPPORTED_NN: the (row, dtype) pairs whose sample call raises a RuntimeError
  (NotImplementedError and IndexError included, as in PyTorch): integer and
  bool inputs to the float ops, and the samples whose class-index target the
  sample syntax cannot write (a T[...] of the dtype under test is no int64
  target in range: nll_loss_forward, nll_loss, nll_loss_nd, cross_entropy_loss),
  binary_cross_entropy's (its Positive domain reaches 2.1, past 1);
- GRADCHECK_CASES_NN: test_autograd.py's CASES for the differentiable rows;
- REFUSED_NARROW_INT_NN: the (op name, dtype) verdicts the CPU verifier
  answers "unsupported" for uint8, int8, int16 and int32 (test_int_dtypes.py).
"""
import numpy as np

import descent

F = descent.nn.functional
D = descent.float64
B, I64, F32, F64 = descent.bool, descent.int64, descent.float32, descent.float64


def _softmax(x, dim, *rest):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _log_softmax(x, dim, *rest):
    m = x - x.max(axis=dim, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=dim, keepdims=True))


def _softmax_backward_data(g, y, dim, *rest):
    return y * (g - (g * y).sum(axis=dim, keepdims=True))


def _log_softmax_backward_data(g, y, dim, *rest):
    return g - np.exp(y) * g.sum(axis=dim, keepdims=True)


def _native_layer_norm(x, shape, w, b, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return ((x - mean) * rstd * w + b, mean, rstd)


def _bce_with_logits(x, t, weight=None, pos_weight=None, reduction=1):
    loss = (1 - t) * x + np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def _conv2d(x, w, b, stride, pad, dil, groups):
    from test_learner_nn import _np_conv2d
    return _np_conv2d(x, w, b, stride, pad, dil, groups).astype(x.dtype)


def _max_pool2d(x, k, stride, pad, dil):
    from test_learner_nn import _np_max_pool2d
    return _np_max_pool2d(x, k, stride, pad, dil).astype(x.dtype)


NUMPY_REFERENCE_NN = {
    "_softmax": _softmax, "_log_softmax": _log_softmax, "softmax": _softmax, "log_softmax": _log_softmax,
    "_softmax_backward_data": _softmax_backward_data, "_log_softmax_backward_data": _log_softmax_backward_data,
    "native_layer_norm": _native_layer_norm,
    "layer_norm": lambda x, shape, w=None, b=None, eps=1e-5: _native_layer_norm(x, shape, w, b, eps)[0],
    "embedding": lambda w, idx, *rest: w[idx],
    "dropout": lambda x, p, train: x,
    "binary_cross_entropy_with_logits": _bce_with_logits,
    "one_hot": lambda x, n=-1: np.eye(n if n > 0 else x.max() + 1, dtype=np.int64)[x],
    "conv2d": lambda x, w, b=None, stride=(1, 1), pad=(0, 0), dil=(1, 1), groups=1: _conv2d(x, w, b, stride, pad, dil,
                                                                                           groups),
    "max_pool2d": lambda x, k, stride=None, pad=(0, 0), dil=(1, 1), ceil=False: _max_pool2d(x, k, stride or k, pad,
                                                                                             dil),
    # Their samples raise for every dtype (UNSUPPORTED_NN): no reference is called.
    "nll_loss_forward": None, "nll_loss": None, "nll_loss_nd": None, "cross_entropy_loss": None,
    "binary_cross_entropy": None,
}

_FLOAT_ONLY = ["_softmax", "_log_softmax", "softmax", "log_softmax", "_softmax_backward_data",
               "_log_softmax_backward_data", "native_layer_norm", "layer_norm", "binary_cross_entropy_with_logits",
               "gelu", "gelu_backward", "silu", "silu_backward"]
UNSUPPORTED_NN = ({(n, dt) for n in _FLOAT_ONLY for dt in (B, I64)}
                  | {(n, dt) for n in ("nll_loss_forward", "nll_loss", "nll_loss_nd", "cross_entropy_loss",
                                       "binary_cross_entropy") for dt in (B, I64, F32, F64)}
                  | {("embedding", dt) for dt in (B, F32, F64)} | {("one_hot", dt) for dt in (B, F32, F64)}
                  | {("conv2d", B), ("max_pool2d", I64)}  # max_pool2d pads with -inf, which int64 cannot hold
                  # The 16-bit floats and the narrow integers, which test_verifier.py's sweep reaches: the
                  # samples that raise for every dtype, and embedding's and one_hot's integer samples (int64
                  # indices only; one_hot and embedding refuse the narrower ones, as PyTorch does but for int32
                  # indices, which embedding reads).
                  | {(n, dt) for n in ("nll_loss_forward", "nll_loss", "nll_loss_nd", "cross_entropy_loss",
                                       "binary_cross_entropy", "embedding", "one_hot")
                     for dt in (descent.float16, descent.bfloat16)}
                  | {("embedding", dt) for dt in (descent.uint8, descent.int8, descent.int16)}
                  | {("one_hot", dt) for dt in (descent.uint8, descent.int8, descent.int16, descent.int32)})


def _rand(*shape, positive=False):
    t = descent.rand(list(shape), dtype=D) + 0.5 if positive else descent.randn(list(shape), dtype=D)
    return t.requires_grad_()


def _dropout_seeded(a):
    descent.manual_seed(3)  # the same mask at every evaluation gradcheck makes
    return descent.dropout(a, 0.4, True)


GRADCHECK_CASES_NN = {
    "gelu": (lambda a: descent._C._nn.gelu(a) + descent._C._nn.gelu(a * 2, approximate=1), lambda: (_rand(3, 4),)),
    # the backward ops: descent.ops.aten's only, as torch binds them nowhere else
    "gelu_backward": (lambda g, x: descent.ops.aten.gelu_backward(g, x) + descent.ops.aten.gelu_backward(
        g, x, approximate=1), lambda: (_rand(3, 4), _rand(3, 4))),
    "silu": (lambda a: descent._C._nn.silu(a), lambda: (_rand(3, 4),)),
    "silu_backward": (lambda g, x: descent.ops.aten.silu_backward(g, x), lambda: (_rand(3, 4), _rand(3, 4))),
    "_softmax": (lambda a: descent._softmax(a, 1, False), lambda: (_rand(3, 4),)),
    "_log_softmax": (lambda a: descent._log_softmax(a, 0, False), lambda: (_rand(3, 4),)),
    "_softmax_backward_data": (lambda g, y: descent._softmax_backward_data(g, y, 1, D),
                               lambda: (_rand(3, 4), _rand(3, 4, positive=True))),
    "_log_softmax_backward_data": (lambda g, y: descent._log_softmax_backward_data(g, y, 1, D),
                                   lambda: (_rand(3, 4), _rand(3, 4))),
    "softmax": (lambda a: a.softmax(-1), lambda: (_rand(2, 5),)),
    "log_softmax": (lambda a: a.log_softmax(0), lambda: (_rand(2, 5),)),
    "nll_loss_forward": (lambda a: descent._C._nn.nll_loss_forward(a, descent.tensor([2, 0, 2]), None, 1, -100)[0],
                         lambda: (_rand(3, 4),)),
    "nll_loss": (lambda a: descent._C._nn.nll_loss(a, descent.tensor([1, 3, -100]), None, 2), lambda: (_rand(3, 4),)),
    "nll_loss_nd": (lambda a: descent._C._nn.nll_loss_nd(a, descent.tensor([[1, 0], [2, 2]]), None, 0).sum(),
                    lambda: (_rand(2, 3, 2),)),
    "cross_entropy_loss": (lambda a, p: F.cross_entropy(a, descent.tensor([1, 0, 3]), label_smoothing=0.2)
                           + F.cross_entropy(a, p.softmax(1)), lambda: (_rand(3, 4), _rand(3, 4))),
    "native_layer_norm": (lambda a, w, b: descent.native_layer_norm(a, [4], w, b, 1e-5)[0],
                          lambda: (_rand(3, 4), _rand(4), _rand(4))),
    "layer_norm": (lambda a, b: descent.layer_norm(a, [2, 4], None, b), lambda: (_rand(3, 2, 4), _rand(2, 4))),
    "embedding": (lambda w: descent.embedding(w, descent.tensor([[0, 2], [2, 3]])), lambda: (_rand(4, 3),)),
    "dropout": (_dropout_seeded, lambda: (_rand(5, 4),)),
    "binary_cross_entropy": (lambda p, t: F.binary_cross_entropy(p.sigmoid(), t.sigmoid()),
                             lambda: (_rand(3, 4), _rand(3, 4))),
    "binary_cross_entropy_with_logits": (lambda a, t: F.binary_cross_entropy_with_logits(a, t.sigmoid()),
                                         lambda: (_rand(3, 4), _rand(3, 4))),
    "conv2d": (lambda a, w, b: F.conv2d(a, w, b, (2, 1), 1), lambda: (_rand(2, 2, 5, 4), _rand(3, 2, 2, 3), _rand(3))),
    "max_pool2d": (lambda a: F.max_pool2d(a, (2, 3), 1, (1, 1)), lambda: (_rand(2, 2, 5, 4),)),
    "one_hot": (lambda a: (a * F.one_hot(descent.tensor([0, 2, 1]), 3)).sum(), lambda: (_rand(3, 3),)),
}

_NARROW = ("uint8", "int8", "int16", "int32")
REFUSED_NARROW_INT_NN = ({("aten::" + n, dt) for n in (
    "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "softmax.int",
    "log_softmax.int", "nll_loss_forward", "nll_loss", "nll_loss_nd", "cross_entropy_loss", "native_layer_norm",
    "layer_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "one_hot", "gelu", "gelu_backward",
    "silu", "silu_backward") for dt in _NARROW}
    | {("aten::embedding", dt) for dt in ("uint8", "int8", "int16")}
    | {("aten::max_pool2d", dt) for dt in _NARROW})  # its -inf padding (conv2d of integers is exact: not refused)  # int32 indices are read, as PyTorch reads them
