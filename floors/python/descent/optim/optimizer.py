"""descent.optim.Optimizer: the base class of SGD, Adam and RMSprop, as torch.optim.Optimizer.

An optimizer holds param_groups (a list of dicts: "params" and the
hyperparameters, each group with its own) and state (a dict from parameter
to what the algorithm keeps between steps: a momentum buffer, Adam's moving
averages). step() updates the parameters in place, with grad mode off: the
ops it runs (mul_, add_, ...) are ordinary ops, traced beneath a floor-1
span named as torch.profiler names it, "Optimizer.step#SGD.step".
"""
import functools
import warnings
from collections import defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

from .. import _C
from .._tensor import Tensor
from ..grad_mode import enable_grad, set_grad_enabled
from ..nn.modules.module import _reset_grad, _typename
from ..tracing import site_of, span

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _evaluate_closure(closure):
    """The loss a step's closure returns, evaluated with grad mode on (None without a closure), as each of
    torch's optimizers does at the top of its step."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


def _use_grad_for_differentiable(func):
    """step() runs with grad mode off, unless the optimizer is differentiable=True."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        with set_grad_enabled(bool(self.defaults["differentiable"])):
            return func(self, *args, **kwargs)
    return _use_grad


def _profile_hook_step(func):
    """step() inside the floor-1 span "Optimizer.step#SGD.step", as PyTorch's
    profile_hook_step puts it inside record_function."""
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        with span(f"Optimizer.step#{self.__class__.__name__}.step" if _C._trace_enabled() else "", _STEP_SITE):
            return func(self, *args, **kwargs)
    return wrapper


def _get_value(x):
    """A one-element tensor (state["step"]) as a Python number."""
    return x.item() if isinstance(x, Tensor) else x


def _single_tensor_only(**flags):
    """descent runs PyTorch's single-tensor (for-loop) algorithms only."""
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"descent's optimizers have only PyTorch's single-tensor (for-loop) "
                                      f"implementation, without autograd through the step: {name}={value} is not "
                                      "supported")


# [SECTION] torch's in-place helpers, from descent's ops ---------------------------------------
#
# The algorithms are written, line for line, as torch.optim's _single_tensor_*
# functions are. Where those call an op descent does not have (addcmul_,
# addcdiv_, lerp_, maximum), these compose it from ops it has, in the order
# PyTorch's CPU kernel evaluates it, with the number cast to the tensor's
# dtype first as there: so a float32 step rounds as PyTorch's does, up to
# the fused multiply-adds a compiler may form in either.

def _zeros_like(p):
    return _C.zeros(list(p.shape), dtype=p.dtype, device=p.device)


def _addcmul_(self, t1, t2, value=1):
    """self += value * t1 * t2 (torch.Tensor.addcmul_)."""
    return self.add_(t1 * value * t2)


def _addcdiv_(self, t1, t2, value=1):
    """self += value * t1 / t2 (torch.Tensor.addcdiv_)."""
    return self.add_(t1 * value / t2)


def _lerp_(self, end, weight):
    """self += weight * (end - self) (torch.Tensor.lerp_, whose kernel uses this form for weight < 0.5
    and end - (end - self) * (1 - weight) above)."""
    if weight < 0.5:
        return self.add_(end - self, alpha=weight)
    return self.copy_(end - (end - self) * (1 - weight))


def _maximum_(self, other):
    """self = max(self, other), elementwise, in place (torch.maximum(self, other, out=self))."""
    bigger = other > self
    self[bigger] = other[bigger]
    return self


class Optimizer:
    """Base class for all optimizers.

    params: an iterable of tensors, of (name, tensor) pairs, or of dicts
    (parameter groups: {"params": [...], "lr": ...}); defaults: the
    hyperparameters a group takes when it does not give its own."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # each optimizer's own step, inside its span
            cls.step = _profile_hook_step(cls.__dict__["step"])

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        """Adds a group of parameters, with its own hyperparameters (the defaults fill in the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):  # (name, tensor), as named_parameters() yields them
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of every parameter: to None (the default), or to zeros in place."""
        with span(f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad" if _C._trace_enabled() else "",
                  _ZERO_GRAD_SITE):
            for group in self.param_groups:
                for p in group["params"]:
                    _reset_grad(p, set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        raise NotImplementedError

    # [SECTION] state_dict -----------------------------------------------------------------

    def state_dict(self):
        """{"state": {index: per-parameter state}, "param_groups": [...]}, where a
        parameter is named by its position across the groups, not by the tensor.
        The state's tensors are the optimizer's own, not copies, as in PyTorch."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        # "step" stays as saved (a CPU float32 tensor); the rest take the parameter's dtype and device.
        if key == "step":
            return value
        if param.dtype.is_floating_point:
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict):
        """Takes the state and hyperparameters of state_dict(), mapped back onto
        this optimizer's parameters by position."""
        state_dict = state_dict.copy()  # shallow, as Module.load_state_dict
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])  # written into below
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            elif isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            elif isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})


_STEP_SITE = site_of(_profile_hook_step)
_ZERO_GRAD_SITE = site_of(Optimizer.zero_grad)
