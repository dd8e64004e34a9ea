"""descent.optim.RMSprop, as torch.optim.RMSprop."""
from .. import _C
from .._tensor import Tensor
from .optimizer import (Optimizer, _evaluate_closure, _addcdiv_, _addcmul_, _lerp_, _single_tensor_only, _use_grad_for_differentiable,
                        _zeros_like)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """For each parameter p with gradient g (PyTorch's algorithm):
        g = -g if maximize;  g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        centered: a = a + (1 - alpha) * (g - a), and v - a * a in place of v below
        with momentum: b = momentum * b + g / (sqrt(v) + eps); p = p - lr * b
        else:          p = p - lr * g / (sqrt(v) + eps)"""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _single_tensor_only(foreach=foreach, capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_group(self, group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:  # lazy state initialization
                state["step"] = _C.zeros([], dtype=_C.float32)
                state["square_avg"] = _zeros_like(p)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = _zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = _zeros_like(p)
            square_avgs.append(state["square_avg"])
            state_steps.append(state["step"])
            if group["momentum"] > 0:
                momentum_buffer_list.append(state["momentum_buffer"])
            if group["centered"]:
                grad_avgs.append(state["grad_avg"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """One update; closure (optional) re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps = [], [], [], [], [], []
            self._init_group(group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs,
                             state_steps)
            rmsprop(params_with_grad, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
                    lr=group["lr"], alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                    momentum=group["momentum"], centered=group["centered"], maximize=group["maximize"])
        return loss


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, *, lr, alpha, eps,
            weight_decay, momentum, centered, maximize):
    """The update itself (torch.optim.rmsprop's _single_tensor_rmsprop), in place."""
    if isinstance(lr, Tensor):
        lr = lr.item()
    for i, param in enumerate(params):
        step = state_steps[i]
        grad = grads[i] if not maximize else -grads[i]
        square_avg = square_avgs[i]
        step += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        _addcmul_(square_avg.mul_(alpha), grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            _lerp_(grad_avg, grad, 1 - alpha)
            # torch: square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_(), the same values
            avg = (square_avg - grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            _addcdiv_(buf.mul_(momentum), grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            _addcdiv_(param, grad, avg, value=-lr)
