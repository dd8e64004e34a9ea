"""descent.optim.AdamW, as torch.optim.AdamW: Adam with the weight decay decoupled from the gradient."""
from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled_weight_decay=True (PyTorch 2.11's AdamW is exactly this subclass): each step first
    shrinks the parameter, p = p * (1 - lr * weight_decay), then takes Adam's step with the gradient as it is.
    The default weight_decay is 1e-2, where Adam's is 0."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
        # A state loaded into an AdamW stays decoupled, as torch's keeps it.
        if not self.defaults["decoupled_weight_decay"]:
            raise ValueError("Creating AdamW with decoupled_weight_decay=False is not supported.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
