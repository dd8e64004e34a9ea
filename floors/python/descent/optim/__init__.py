"""descent.optim: optimizers that update parameters in place from their .grad, as torch.optim.

    optimizer = descent.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
    optimizer.zero_grad(); loss.backward(); optimizer.step()

Each algorithm is PyTorch's single-tensor one, line for line, over descent's
ops (optimizer.py says where an op is composed from others).
"""
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop"]
