"""descent.nn.LayerNorm, as torch.nn.LayerNorm."""
import numbers

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True): over the last dims
    (normalized_shape), (x - mean) / sqrt(var + eps) * weight + bias, weight starting at ones and bias at zeros
    (F.layer_norm: aten::layer_norm over aten::native_layer_norm)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        factory_kwargs = {k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None}
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(_C.empty(list(self.normalized_shape), **factory_kwargs))
            if bias:
                self.bias = Parameter(_C.empty(list(self.normalized_shape), **factory_kwargs))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
