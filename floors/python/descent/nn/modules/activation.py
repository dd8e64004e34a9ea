"""descent.nn.ReLU, as torch.nn.ReLU."""
from .. import functional as F
from .module import Module

__all__ = ["ReLU"]


class ReLU(Module):
    """max(0, x), elementwise (aten::relu)."""

    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""
