"""The modules of descent.nn, one file each as in torch/nn/modules/."""
from .activation import ReLU
from .container import Sequential
from .flatten import Flatten
from .linear import Linear
from .loss import MSELoss
from .module import Module

__all__ = ["Module", "Sequential", "Linear", "ReLU", "Flatten", "MSELoss"]
