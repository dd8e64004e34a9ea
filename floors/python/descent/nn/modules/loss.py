"""descent.nn.MSELoss, as torch.nn.MSELoss."""
from .. import _reduction as _Reduction
from .. import functional as F
from .module import Module

__all__ = ["MSELoss"]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _Reduction.legacy_get_string(size_average, reduce)
        else:
            self.reduction = reduction


class MSELoss(_Loss):
    """The squared differences of input and target, averaged (reduction='mean'),
    summed ('sum') or kept ('none'): F.mse_loss (aten::mse_loss)."""

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)
