"""Decompositions: composite aten ops written in primitives, so the inductor backend can fuse them.

    from descent._compile.decompositions import select_decomp_table
    gm = make_fx(lambda x: x.softmax(-1), decomposition_table=select_decomp_table())(x)
    print(gm.code)    # max.dim, getitem, sub, exp, sum.dim_IntList, div: no _softmax

Note [Decomposing before fusion]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
descent's CPU kernels for _softmax, native_layer_norm or mse_loss are one
opaque loop each; a fused kernel cannot look inside them. Inductor first
decomposes such ops into a small set of primitives (torch/_decomp/
decompositions.py registers each with @register_decomposition, and
torch/_inductor/decomposition.py selects the table, select_decomp_table()),
so the pieces join the pointwise chains and reductions around them. descent
does the same, with torch's names and torch's formulas, where descent has
the primitives: the recording mode (make_fx's decomposition_table,
descent/fx/experimental/proxy_tensor.py) runs an op's decomposition in its
place, beneath autograd, and records the primitives it calls. The op's
autograd node is still the op's (SoftmaxBackward0), whose backward formula
calls _softmax_backward_data, which decomposes in turn.

Where descent's primitives differ from torch's: descent has no amax, so the
row maximum is max.dim's values (the same numbers: a maximum is exact); no
rsqrt, so rstd is reciprocal(sqrt(var + eps)) (two roundings where rsqrt has
one), and no var_mean, so the variance is the mean of the squared
deviations (correction=0), as native_layer_norm's kernel computes it; and
`x ** 2` is written `x * x`, as inductor lowers pow(x, 2). descent has no
gelu or silu op (F.gelu and F.silu are not there to call), so there is
nothing of theirs to decompose.

The decomposed result is not eager's bit for bit: eager's kernels add a
row in a plain running total, the decomposition through the sum's cascade
(Note [Cascade summation]). For a row of n elements, the two sums of its
(positive) exponentials are within (n - 1) * u and cascade_depth(n) * u of
the exact one, relatively (Higham), so a softmax output agrees with eager's
within b * u * |y| and a log_softmax output within b * u * (1 + |y|), b =
bound_ulps(n) = n + cascade_depth(n) + 2 (the two roundings of the division
or subtraction added); layer_norm's within b * u * (|w| * |x̂| + |y|), its
mean and variance being sums too. mse_loss's decomposition is the kernel's
own order, bit for bit. test_compile_decompositions.py checks each against
its eager op on random inputs.
"""
import descent

from .._ops import op_overload

__all__ = ["register_decomposition", "get_decompositions", "core_aten_decompositions", "select_decomp_table",
           "decomposition_table", "bound_ulps"]

decomposition_table = {}  # OpOverload -> the Python function that computes it in primitives


def register_decomposition(ops):
    """@register_decomposition(aten_op or [ops]): the function computes those ops (torch._decomp's)."""
    ops = ops if isinstance(ops, (list, tuple)) else [ops]

    def wrap(fn):
        for op in ops:
            decomposition_table[op_overload(op) if isinstance(op, str) else op] = fn
        return fn
    return wrap


def get_decompositions(ops):
    """The table's entries for these ops (OpOverloads or their names), as torch._decomp.get_decompositions."""
    keys = {op_overload(op) if isinstance(op, str) else op for op in ops}
    return {k: v for k, v in decomposition_table.items() if k in keys}


def core_aten_decompositions():
    """Every decomposition descent has (torch's core_aten_decompositions is the set to Core ATen)."""
    return dict(decomposition_table)


def select_decomp_table():
    """The table the inductor backend captures with (torch/_inductor/decomposition.py's select_decomp_table)."""
    return dict(decomposition_table)


def bound_ulps(n, dtype=None):
    """How many units in the last place a decomposed softmax-like output of rows of n elements may be from
    eager's (Note [Decomposing before fusion])."""
    from .verify import cascade_depth
    return n + cascade_depth(n) + 2


def _dims(dim, nd):
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d + nd if d < 0 else d for d in dims]


@register_decomposition("aten::_softmax")
def _softmax(x, dim, half_to_float):
    if half_to_float or x.dtype not in (descent.float32, descent.float64):
        return NotImplemented
    x_max = x.max(dim, keepdim=True).values if x.dim() > 0 else x
    unnormalized = (x - x_max).exp()
    return unnormalized / unnormalized.sum(dim, keepdim=True)


@register_decomposition("aten::_log_softmax")
def _log_softmax(x, dim, half_to_float):
    if half_to_float or x.dtype not in (descent.float32, descent.float64):
        return NotImplemented
    x_max = x.max(dim, keepdim=True).values if x.dim() > 0 else x
    shifted = x - x_max
    shifted_logsumexp = shifted.exp().sum(dim, keepdim=True).log()
    return shifted - shifted_logsumexp


@register_decomposition("aten::_softmax_backward_data")
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    new_grad_output = grad_output * output
    return new_grad_output - output * new_grad_output.sum(dim, keepdim=True)


@register_decomposition("aten::_log_softmax_backward_data")
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    return grad_output - output.exp() * grad_output.sum(dim, keepdim=True)


@register_decomposition("aten::mse_loss")
def mse_loss(input, target, reduction=1):
    floats = (descent.float32, descent.float64)
    if reduction not in (0, 1, 2) or input.dtype not in floats or target.dtype != input.dtype:
        return NotImplemented  # the kernel's own error
    diff = input - target
    loss = diff * diff  # (input - target) ** 2, as inductor lowers pow(x, 2)
    return loss if reduction == 0 else loss.mean() if reduction == 1 else loss.sum()


@register_decomposition("aten::native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    shape = list(normalized_shape)
    if not shape or len(shape) > input.dim() or list(input.shape[input.dim() - len(shape):]) != shape or \
            input.numel() == 0 or input.dtype not in (descent.float32, descent.float64):
        return NotImplemented  # the kernel's own error (or its empty result)
    dims = list(range(input.dim() - len(shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)  # var_mean(correction=0)'s variance
    rstd = (var + eps).sqrt().reciprocal()  # rsqrt(var + eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd
