"""descent.accelerator, as torch.accelerator: the one kind of accelerator this process can use,
so that code written for "whatever GPU there is" runs unchanged. PyTorch's tutorials start with

    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"

descent's accelerator is CUDA (cuda:N). sim:0 is not one: it is descent's own simulated device,
which PyTorch does not have, and code that asks for an accelerator runs on the CPU where there is
no GPU, as it does under PyTorch.

One difference, on purpose: torch's current_accelerator() names the accelerator the build was
compiled for even where no device is present (check_available=False); descent's names it only
where one is present, so that `.type` is never asked of a device that cannot be used.
"""
from . import _C, cuda


def is_available():
    """Whether a CUDA device is present and usable."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device(type='cuda') where a GPU is present, else None."""
    return _C.device("cuda") if is_available() else None


def device_count():
    return cuda.device_count()


def current_device_index():
    return cuda.current_device() if is_available() else -1


def synchronize(device=None):
    """The host waits for every stream of the accelerator."""
    cuda.synchronize(device)


__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available", "synchronize"]
