"""descent.nn: modules, parameters and losses, as torch.nn.

    model = descent.nn.Sequential(descent.nn.Linear(3, 1), descent.nn.Flatten(0, 1))
    loss = descent.nn.MSELoss(reduction="sum")(model(x), y)

Pure Python over the ops, as torch.nn is: a Module call is a floor-1 span
("nn.Module: Linear_0"), and the ops its forward runs descend the floors as
any op does (modules/module.py, Note [A module call's span]).
"""
from . import functional, init, parallel  # noqa: F401
from .modules import (BCELoss, BCEWithLogitsLoss, Conv2d, CrossEntropyLoss, Dropout, Embedding, Flatten,  # noqa: F401
                      GELU, LayerNorm, Linear, LogSoftmax, MaxPool2d, Module, ModuleDict, ModuleList, MSELoss, NLLLoss,
                      ReLU, Sequential, SiLU, Sigmoid, Softmax, Tanh)
from .parameter import Parameter  # noqa: F401

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Linear", "ReLU", "GELU", "SiLU",
           "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Dropout", "Embedding", "LayerNorm", "Flatten", "MSELoss",
           "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "Conv2d", "MaxPool2d", "functional", "init",
           "parallel"]
