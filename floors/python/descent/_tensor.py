"""descent.Tensor: the Python face of a tensor (floor 1).

As torch.Tensor, the class adds to its C base class, descent._C.TensorBase,
only what torch/_tensor.py adds in Python: printing, len() and iteration,
numpy interop, shape and stride helpers, indexing, backward and hooks,
pickling and copying. Its methods and operators that are ops (x.add(y),
x + 1, x.sum(0), x.view(2, 3), x += 1, x == y) are C functions of the base
class, generated from the op table (Note [Tensor methods from the op table],
floors/binding/tensor_methods.cpp): `x + 1` crosses into C++ at once, on
floor 2, as in PyTorch.
"""
from . import _C
from ._formatting import tensor_repr


# A shape, as torch.Size: a tuple of ints that prints as descent.Size([2, 3]); C, as torch.Size is.
Size = _C.Size


# The warnings aten gives once per process (TORCH_WARN_ONCE), by name, once given.
_warned_once = {}


class Tensor(_C.TensorBase):
    __slots__ = ()
    # numpy defers to us in mixed expressions (np.float64(2) + t, np.ones(2) == t):
    # instead of turning the tensor into an array, it calls our reflected operator.
    __array_priority__ = 1000

    # Indexing (x[0], x[1:, None], x[mask], x[0] = 5) is C, as torch's is
    # (THPVariable_getitem and THPVariable_setitem): the mapping slots of
    # _C.TensorBase, which this class inherits (Note [Indexing in C],
    # floors/binding/python_indexing.cpp).

    # Autograd, as torch/_tensor.py has it in Python: the engine and the
    # graph are C++ (floor 4); grad, grad_fn, is_leaf, retain_grad and detach
    # are attributes of the C base class.
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Computes the gradient of this tensor with respect to the graph's leaves, into their .grad."""
        from . import autograd
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None, called when this tensor's gradient is computed."""
        from . import autograd
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return autograd.RemovableHandle(self, self._register_hook(hook))

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) -> None, called on this leaf once backward has accumulated its .grad
        (an optimizer step inside backward, as torch's docs show)."""
        from . import autograd
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        return autograd.RemovableHandle(self, self._register_post_accumulate_grad_hook(hook))

    # Conversions, kept in Python as descent has always had them (torch's are C methods).
    def float(self): return _C.to(self, _C.float32)
    def double(self): return _C.to(self, _C.float64)
    def half(self): return _C.to(self, _C.float16)
    def bfloat16(self): return _C.to(self, _C.bfloat16)
    def long(self): return _C.to(self, _C.int64)
    def int(self): return _C.to(self, _C.int32)
    def short(self): return _C.to(self, _C.int16)
    def char(self): return _C.to(self, _C.int8)
    def byte(self): return _C.to(self, _C.uint8)
    def bool(self): return _C.to(self, _C.bool)

    # shape, ndim, size() and stride() are C (_C.TensorBase), as torch's are.
    @property
    def T(self):
        """The dimensions reversed (aten's numpy_T), with its warnings, once each per process as
        TORCH_WARN_ONCE gives them: on other than 2 dimensions, and on 0."""
        n = self.dim()
        if n != 2 and n != 0 and not _warned_once.get("T"):
            _warned_once["T"] = True
            import warnings
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release. Consider `x.mT` to "
                          "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
                          "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
        if n == 0 and not _warned_once.get("T0"):
            _warned_once["T0"] = True
            import warnings
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                          UserWarning, stacklevel=2)
        return _C.permute(self, list(range(n - 1, -1, -1)))

    # Ops whose Python form is not one row of the op table (floors/python/descent/functional.py).
    def where(self, condition, other):
        """x.where(condition, y): torch.where(condition, x, y) (aten's where.self takes condition first)."""
        return _C.where(condition, self, other)

    def nelement(self): return self.numel()
    def split(self, split_size, dim=0): return _functional().split(self, split_size, dim)
    def chunk(self, chunks, dim=0): return _functional().chunk(self, chunks, dim)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _functional().allclose(self, other, rtol, atol, equal_nan)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return _functional().norm(self, p, dim, keepdim, dtype=dtype)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor of `data`, with this tensor's dtype and device unless given (torch's new_tensor)."""
        from . import tensor
        return tensor(data, dtype=self.dtype if dtype is None else dtype,
                      device=self.device if device is None else device, requires_grad=requires_grad)

    # Devices. to(), cpu(), pin_memory(), is_pinned() and is_cuda are C (the
    # binding, floors/binding/device_object.cpp); these two are Python in descent.
    def cuda(self, device=None, non_blocking=False):
        """This tensor on a CUDA device (the current one, cuda:0, when None): self when
        already there, else a copy (RuntimeError in one line where there is no GPU)."""
        from ._device import _resolve
        return self.to(_resolve("cuda", device), non_blocking=non_blocking)

    def record_stream(self, stream):
        """Marks this tensor's memory as used by work on `stream` too: the caching
        allocator will not hand it out again, once freed, before that work has run."""
        self._record_stream(stream.device, stream.stream_id)

    def numpy(self):
        """A numpy array over this CPU tensor's memory; TypeError for a device tensor,
        with PyTorch's message (Note [Reading a device tensor waits]). A tensor that
        requires grad is refused with PyTorch's RuntimeError, by the buffer every
        numpy path reads (tensor_getbuffer): numpy knows nothing of the graph, so the
        array would silently leave it (detach() says so out loud)."""
        import numpy
        return numpy.asarray(self)

    def __array__(self, dtype=None, copy=None):
        import numpy
        a = numpy.asarray(memoryview(self))
        return a if dtype is None else a.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """What a numpy function of a tensor gives back (numpy.sin(t)): a tensor, as torch.Tensor's does."""
        return _C._tensor(array, None)

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:  # torch._tensor.Tensor.__iter__'s words
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):  # PyTorch 2.11's words (python_variable_methods.cpp)
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins_bool(self.item())

    def __float__(self):
        self._one_element()
        return float(self.item())

    def __int__(self):
        self._one_element()
        return int(self.item())

    def _one_element(self):
        """int() and float() of a tensor: PyTorch's ValueError (dispatch_to_CDouble), where item() raises
        a RuntimeError of its own words."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
    def __index__(self):
        if self.dtype.is_floating_point or self.dtype is _C.bool or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return self.item()

    def __repr__(self):
        return tensor_repr(self)

    def __format__(self, format_spec):
        """f"{t:.2f}": a 0-d tensor formats as its number; others accept only "" (str(t)), as in PyTorch."""
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    # copy.copy, copy.deepcopy and pickle give a new tensor with its own
    # memory, as they do for torch.Tensor (a view comes back contiguous).
    def __copy__(self): return self.clone()
    def __deepcopy__(self, memo): return self.clone()

    def __reduce__(self):
        flat = self.reshape(-1).tolist() if self.numel() else []
        return _rebuild_tensor, (flat, tuple(self.shape), str(self.dtype).rpartition(".")[2])


def _functional():
    from . import functional
    return functional


def _rebuild_tensor(flat, shape, dtype_name):
    """The inverse of Tensor.__reduce__ (pickle)."""
    return _C._tensor(flat, getattr(_C, dtype_name)).reshape(shape)


import builtins as _builtins  # noqa: E402
builtins_bool = _builtins.bool
