"""The modules of descent.nn, one file each as in torch/nn/modules/."""
from .activation import GELU, LogSoftmax, ReLU, SiLU, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .normalization import LayerNorm
from .pooling import MaxPool2d
from .sparse import Embedding

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh",
           "Softmax", "LogSoftmax", "Dropout", "Embedding", "LayerNorm", "Flatten", "MSELoss", "CrossEntropyLoss",
           "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "Conv2d", "MaxPool2d"]
