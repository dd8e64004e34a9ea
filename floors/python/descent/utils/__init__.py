"""descent.utils: torch.utils's data loading (descent.utils.data)."""
from . import data  # noqa: F401
