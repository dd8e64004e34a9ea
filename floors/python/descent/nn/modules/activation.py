"""descent.nn.ReLU, Sigmoid, Tanh, Softmax and LogSoftmax, as torch.nn's."""
from .. import functional as F
from .module import Module

__all__ = ["ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"]


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


class GELU(Module):
    """x * Phi(x), elementwise (F.gelu: aten::gelu); approximate='tanh' for the tanh form."""

    __constants__ = ["approximate"]

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class SiLU(Module):
    """x * sigmoid(x), elementwise (F.silu: aten::silu)."""

    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise (aten::sigmoid)."""

    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    """tanh(x), elementwise (aten::tanh)."""

    def forward(self, input):
        return input.tanh()


class Softmax(Module):
    """softmax along dim (F.softmax: aten::softmax.int over aten::_softmax); dim=None keeps torch's old guess."""

    __constants__ = ["dim"]

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) along dim (F.log_softmax: aten::log_softmax.int over aten::_log_softmax)."""

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)
