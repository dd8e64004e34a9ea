"""descent.nn.Flatten, as torch.nn.Flatten."""
from .module import Module

__all__ = ["Flatten"]


class Flatten(Module):
    """Flattens the dims start_dim..end_dim into one (by default all but the
    batch dim): input.flatten(start_dim, end_dim)."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
