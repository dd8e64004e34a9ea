"""descent.nn.Linear: y = x @ weight.T + bias, as torch.nn.Linear."""
import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Linear"]


class Linear(Module):
    """Linear(in_features, out_features, bias=True): weight of shape
    (out_features, in_features) and bias of (out_features,), both drawn
    uniformly from [-1/sqrt(in_features), 1/sqrt(in_features)] as PyTorch's
    reset_parameters draws them; forward is F.linear (aten::linear)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        factory_kwargs = {k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None}
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_C.empty([out_features, in_features], **factory_kwargs))
        if bias:
            self.bias = Parameter(_C.empty([out_features], **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5): gain sqrt(2 / (1 + 5)), so the bound is
        # gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in), the bias's bound too.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
