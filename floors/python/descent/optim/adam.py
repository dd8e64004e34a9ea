"""descent.optim.Adam, as torch.optim.Adam."""
import descent as _descent

from .. import _C
from .._tensor import Tensor
from .optimizer import (Optimizer, _evaluate_closure, _addcdiv_, _addcmul_, _get_value, _lerp_, _maximum_, _single_tensor_only,
                        _use_grad_for_differentiable, _zeros_like)

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """For each parameter p with gradient g, at step t (PyTorch's algorithm):
        g = -g if maximize;  g = g + weight_decay * p  (or p = p * (1 - lr * weight_decay), decoupled)
        m = m + (1 - beta1) * (g - m);   v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v) with amsgrad
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    m, v (and v_max) start at zeros; t is kept as a float32 tensor, state["step"]."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _single_tensor_only(foreach=foreach, fused=fused, capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:  # lazy state initialization
                # torch.tensor(0.0): on the default device (the CPU unless set_default_device moved it), as PyTorch's
                state["step"] = _descent.tensor(0.0, dtype=_C.float32)
                state["exp_avg"] = _zeros_like(p)
                state["exp_avg_sq"] = _zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = _zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update; closure (optional) re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
            beta1, beta2 = group["betas"]
            self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
            adam(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize, decoupled_weight_decay=False):
    """The update itself (torch.optim.adam's _single_tensor_adam), in place."""
    if isinstance(lr, Tensor):
        lr = lr.item()
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        # Decay the first and second moment running averages.
        _lerp_(exp_avg, grad, 1 - beta1)
        _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)

        step = _get_value(step_t)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            _maximum_(max_exp_avg_sqs[i], exp_avg_sq)  # the largest second moment so far normalizes
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        _addcdiv_(param, exp_avg, denom, value=-step_size)
