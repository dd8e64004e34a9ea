"""descent.nn.MaxPool2d, as torch.nn.MaxPool2d."""
from .. import functional as F
from .module import Module

__all__ = ["MaxPool2d"]


class MaxPool2d(Module):
    """The largest element of each kernel_size window, windows stride apart (by default kernel_size): F.max_pool2d
    (aten::max_pool2d, Note [conv2d and max_pool2d gather windows], nn_kernels.cpp)."""

    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")
