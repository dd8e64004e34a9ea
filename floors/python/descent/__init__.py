"""descent: a tensor runtime in eight floors, traced at every floor.

Floor 1 is this package. What you type here has PyTorch's names:

    import descent
    x = descent.ones(2, 2)
    y = x + 1            # Tensor.__add__, a C slot of descent._C.TensorBase (floor 2) -> ...

Every op is a function of descent._C generated from the op table
(floors/dispatch/ops.h), and each op taking a tensor first is a method and
operator of Tensor's C base class too; this package adds the rest of the
Tensor class, tensor(), the printing, and the tracing commands.
"""
import os as _os

from . import _C
from ._C import (  # noqa: F401  (dtypes, devices and errors keep PyTorch's names)
    OutOfMemoryError, bfloat16, bool, device, dtype, float16, float32, float64, get_default_device, get_num_threads,
    int8, int16, int32, int64, manual_seed, promote_types, set_default_device, set_num_threads, uint8,
)
from ._tensor import Size, Tensor

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16

_C._set_tensor_class(Tensor)

# Every op of the table is a function here: descent.add, descent.sum, ...
# but those PyTorch keeps in torch._C._nn (python_module: nn), which stay in
# descent._C._nn, as torch.linear does not exist and torch._C._nn.linear does.
__all__ = ["Size", "Tensor", "tensor", "from_numpy", "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
           "BoolTensor", "ByteTensor", "manual_seed", "promote_types", "verify", "set_kernel_variant", "trace",
           "set_num_threads", "get_num_threads", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision"]
for _op in _C._ops():
    if _op["python_module"] in ("nn", "hidden"):  # hidden: no Python function in PyTorch either (threshold_backward)
        continue
    globals()[_op["python_name"]] = getattr(_C, _op["python_name"])
    __all__.append(_op["python_name"])

# The random ops take generator= (descent/_generator.py: Note [A Generator is a saved CPU stream]).
from ._generator import RANDOM_FUNCTIONS as _RANDOM_FUNCTIONS, RANDOM_METHODS as _RANDOM_METHODS  # noqa: E402
from ._generator import Generator, _drawing_from  # noqa: E402,F401
for _name in _RANDOM_FUNCTIONS:
    globals()[_name] = _drawing_from(globals()[_name])
for _name in _RANDOM_METHODS:
    setattr(Tensor, _name, _drawing_from(getattr(_C.TensorBase, _name)))
__all__.append("Generator")


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (a number, nested lists, a numpy
    array or a tensor), on `device` (the CPU by default), as torch.tensor. The
    dtype is inferred as PyTorch does: bools -> bool, ints -> int64, any float
    -> float32. On a device the elements are made on the host and copied over
    (floor 7), as PyTorch's torch.tensor copies them."""
    t = _C._tensor(data, dtype)
    if device is None:
        device = _C.get_default_device()  # Note [The default device] (settings.cpp)
    if str(device) != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_()
    return t


def from_numpy(array):
    """A CPU tensor over the numpy array's own memory, as torch.from_numpy: a write into either is seen by the
    other (Note [from_numpy shares the array's memory], floors/binding/tensor_from_data.cpp)."""
    return _C._from_numpy(array)


def verify(op=None, seed=1, device=None):
    """Runs the reference and the optimized kernel of every op (or one) on the
    same inputs, for every dtype, and returns the verdicts. With a device
    ("sim:0", "cuda:0"), runs the ops there instead, against the CPU's
    reference loops (Note [Device claims], floors/kernels/verify/verifier.cpp).
    _C._verify_matmul_rungs(seed, device) holds every rung of the device's
    matmul ladder the same way (Note [The matmul ladder])."""
    return _C._verify(seed, op, None if device is None else str(device))


def set_float32_matmul_precision(precision):
    """PyTorch's switch for float32 products: "highest" keeps float32 (the
    default); "high" and "medium" let a CUDA device run them in TF32, as
    descent.backends.cuda.matmul.allow_tf32 = True does (Note [TF32 matmul]).
    Another value is ignored with a warning, as PyTorch ignores it."""
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"Ignoring invalid value for float32 matmul precision: {precision!r} "
                      "(expected 'highest', 'high' or 'medium')")
        return
    _C._set_cublas_allow_tf32(precision != "highest")


def get_float32_matmul_precision():
    """"highest", or "high" while float32 products may run in TF32."""
    return "high" if _C._get_cublas_allow_tf32() else "highest"


def set_kernel_variant(variant):
    """'auto' (default), 'reference' or 'optimized' kernels for this thread."""
    _C._set_variant(variant)


from .grad_mode import (  # noqa: E402
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .tracing import trace  # noqa: E402
from . import autograd  # noqa: E402,F401
from . import nn, optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401  (torch.utils.data)
from ._legacy import (  # noqa: E402,F401  (torch.FloatTensor, ...: Note [The legacy constructor])
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
    ShortTensor,
)
from . import accelerator, backends, cuda, sim  # noqa: E402,F401
from . import library, ops  # noqa: E402,F401  (torch.library and torch.ops)
from .functional import allclose, chunk, einsum, norm, split  # noqa: E402,F401  (torch/functional.py's, in Python)
from . import linalg  # noqa: E402,F401
from ._compile import compile  # noqa: E402,F401  (torch.compile: the compiler floor, descent/_compile/)
from . import fx  # noqa: E402,F401

if _os.environ.get("DESCENT_TRACE", "") not in ("", "0"):
    from . import tracing as _tracing
    _tracing.trace_whole_program()
