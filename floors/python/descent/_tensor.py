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


class Size(tuple):
    """A shape, as torch.Size: a tuple of ints that prints as descent.Size([2, 3])."""
    __slots__ = ()

    def __repr__(self):
        return f"descent.Size({list(self)})"

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


class Tensor(_C.TensorBase):
    __slots__ = ()
    # numpy defers to us in mixed expressions (np.float64(2) + t, np.ones(2) == t):
    # instead of turning the tensor into an array, it calls our reflected operator.
    __array_priority__ = 1000

    def __setitem__(self, index, value):
        """t[i] = v, as torch's __setitem__ (THPVariable_setitem): the ints, slices, None
        and ... of i pick a view of t, and the value goes into it by PyTorch's ops;
        integer and bool tensors or lists in i make it one aten::index_put_ instead
        (Note [Advanced indexing], floors/kernels/indexing.cpp). See Note [x[i] = v
        as PyTorch writes it] below for the ops, in order."""
        # Note [x[i] = v as PyTorch writes it]
        # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
        # torch/csrc/autograd/python_variable_indexing.cpp (THPVariable_setitem,
        # valueToTensor) and aten/src/ATen/TensorIndexing.h (set_item, copy_to):
        #   1. a Python number becomes a 0-d CPU tensor of t's dtype (made without
        #      an op: scalar_tensor_static), then goes through aten::lift_fresh,
        #      before the index is read; a tensor value is taken as it is;
        #   2. the index's views: aten::select for an int, aten::slice for a slice
        #      that is not `:`, aten::unsqueeze for None (applySlicing);
        #   3. copy_to(view, value): aten::copy_ when the shapes are equal; else
        #      aten::fill_ (its Tensor overload) for a 0-d CPU value, whose kernel
        #      copies it in with aten::copy_ (Fill.cpp); else aten::view to drop the
        #      value's leading 1-dims, aten::expand to the view's shape when they
        #      differ, then aten::copy_.
        # So x[0] = 5 on a (2, 3) tensor is lift_fresh, select, fill_ (copy_ below
        # it); on a (3,) tensor lift_fresh, select, copy_; x[1:3] = 0 lift_fresh,
        # slice, fill_; x[0] = t select, then copy_ (t of the row's shape) or view,
        # expand, copy_. Advanced indices: the value, its leading 1-dims dropped by
        # aten::view when it has any, goes to aten::index_put_.
        if _is_array(value):  # a numpy array, read as tensor() reads it
            value = _C._tensor(value, None)
        if not isinstance(value, Tensor):
            if not (isinstance(value, (int, float, bool)) or hasattr(value, "__index__")
                    or hasattr(value, "__float__")):
                raise TypeError(f"can't assign a {type(value).__name__} to a descent.Tensor")
            if not isinstance(value, (int, float, bool)):  # a numpy scalar or another number-like
                value = value.item() if hasattr(value, "item") else \
                    int(value) if hasattr(value, "__index__") else float(value)
            value = _C.lift_fresh(_C._scalar_tensor(value, self.dtype))
        view, indices = self._apply_basic_indices(index)
        if indices:
            shape = _drop_leading_ones(value.shape)
            if len(shape) < value.dim():
                value = _C.view(value, shape)
            _C.index_put_(view, indices, value)
        elif view.shape == value.shape:
            _C.copy_(view, value)
        elif value.dim() == 0 and value.device.type == "cpu":
            _C.fill_(view, value)
        else:
            value = _C.view(value, _drop_leading_ones(value.shape))
            if view.shape != value.shape:
                value = _C.expand(value, list(view.shape))
            _C.copy_(view, value)

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

    @property
    def shape(self):
        return Size(_C.TensorBase.shape.__get__(self))

    @property
    def T(self):
        return _C.permute(self, list(range(self.dim() - 1, -1, -1)))

    @property
    def ndim(self): return self.dim()

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[self._wrap_dim(dim)]

    def stride(self, dim=None):
        s = self._strides()
        return s if dim is None else s[self._wrap_dim(dim)]

    def _wrap_dim(self, dim):
        """`dim` as an index into shape, with PyTorch's error when it is out of range."""
        dim = _operator.index(dim)
        if self.dim() == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        if not -self.dim() <= dim < self.dim():
            raise IndexError(f"Dimension out of range (expected to be in range of [{-self.dim()}, {self.dim() - 1}], "
                             f"but got {dim})")
        return dim

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
        with PyTorch's message (Note [Reading a device tensor waits])."""
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
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous")
        return builtins_bool(self.item())

    def __float__(self): return float(self.item())
    def __int__(self): return int(self.item())
    def __index__(self):
        if self.dtype.is_floating_point or self.dtype is _C.bool or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return self.item()

    def __getitem__(self, index):
        """Indexing as torch's: ints, slices (with steps), None and ... give a view;
        integer and bool tensors, lists of them and True/False are advanced indices,
        applied after the views by one aten::index call, which copies (Note
        [Advanced indexing], floors/kernels/indexing.cpp)."""
        out, indices = self._apply_basic_indices(index)
        if indices:
            return _C.index(out, indices)
        if out is self:  # x[...] is at::alias in torch's THPVariable_getitem (AliasBackward0); x[:] is a full slice
            out = _C.alias(self) if index is Ellipsis or self.dim() == 0 else _C.slice(self, 0, None, None, 1)
        return out

    def _apply_basic_indices(self, index):
        """(view, indices), as PyTorch's applySlicing: the ints, slices, None and ...
        of `index` applied as views, left to right, and the advanced indices left for
        one aten::index or index_put_ call: a list with one entry per dim of the view
        from the first, None where a dim is taken whole (empty when there are none)."""
        if not isinstance(index, tuple):
            index = tuple(index) if _sequence_is_tuple(index) else (index,)
        index = tuple(_index_tensor(i) if _is_index_list(i) else i for i in index)
        if sum(i is Ellipsis for i in index) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        used = sum(i.dim() if isinstance(i, Tensor) and i.dtype in _MASKS else
                   0 if i is None or i is Ellipsis or _is_bool(i) else 1 for i in index)
        if used > self.dim():
            raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
        out, d, src = self, 0, 0  # d: the dim of `out` reached; src: the dim of self it came from
        indices, covered = [], 0  # covered: the dims of `out` that `indices` reaches (a mask covers its dims)

        def advanced(t):  # t indexes the dims of `out` from d on
            nonlocal d, covered
            indices.extend([None] * (d - covered))
            indices.append(t)
            k = t.dim() if t.dtype in _MASKS else 1
            d = covered = d + k

        for i in index:
            if isinstance(i, Tensor) and i.dim() == 0 and not i.dtype.is_floating_point:
                # A 0-d integer tensor is an int, a 0-d bool (or uint8, a byte mask) tensor a bool, as in PyTorch.
                i = builtins_bool(i.item()) if i.dtype is _C.uint8 else i.item()
            if i is Ellipsis:
                d += self.dim() - used
                src += self.dim() - used
            elif i is None:
                out = _C.unsqueeze(out, d)
                d += 1
            elif _is_bool(i):  # a new dim of size 1, taken (True) or not (False)
                out = _C.unsqueeze(out, d)
                advanced(_C.zeros(1 if i else 0, dtype=_C.int64))
            elif isinstance(i, Tensor):
                src += i.dim() if i.dtype in _MASKS else 1
                advanced(i)
            elif isinstance(i, slice):
                if i.step is not None and i.step <= 0:
                    raise ValueError("step must be greater than zero")
                if not (i.start in (None, 0) and i.stop is None and i.step in (None, 1)):  # `:` is no slice, as in PyTorch
                    out = _C.slice(out, d, i.start, i.stop, 1 if i.step is None else i.step)
                d += 1
                src += 1
            elif hasattr(i, "__index__"):  # ints, numpy ints
                k, n = i.__index__(), out.shape[d]
                if not -n <= k < n:  # named by the dim of self, not of the partly indexed view
                    raise IndexError(f"index {k} is out of bounds for dimension {src} with size {n}")
                out = _C.select(out, d, k)
                src += 1
            else:
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                                 "are valid indices (got " + type(i).__name__ + ")")
        return out, indices

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


def _is_array(x):
    """A numpy array (not a tensor): what numpy's __array_interface__ marks."""
    return not isinstance(x, Tensor) and hasattr(type(x), "__array_interface__")


def _sequence_is_tuple(index):
    """Whether a list index is a tuple of indices (x[[0, slice(None)]]) or one
    index (x[[0, 1]]): numpy's old rule, which PyTorch's treatSequenceAsTuple keeps."""
    if isinstance(index, Tensor) or _is_array(index) or not isinstance(index, (list, range)):
        return False
    if len(index) >= 32:
        return False
    return any(isinstance(i, (Tensor, list, tuple, slice)) or _is_array(i) or i is None or i is Ellipsis for i in index)


def _drop_leading_ones(shape):
    """A value's shape without its leading 1-dims, as PyTorch's slicePrefix1sSize drops them
    (t[0] = ones(1, 3) into a (2, 3) tensor)."""
    shape = list(shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    return shape


# The dtypes of an index tensor that masks (covers as many dims as it has):
# bool, and uint8, PyTorch's older mask dtype (floors/kernels/indexing.cpp).
_MASKS = (_C.bool, _C.uint8)


def _is_index_list(i):
    return isinstance(i, (list, tuple, range)) or _is_array(i)


def _index_tensor(i):
    """A list or numpy array used as an index, as a tensor: bool when all its
    elements are bools, uint8 for a uint8 array (a mask, as a bool one), else
    int64 (floats truncated), as PyTorch's indexing_tensor_from_data makes it."""
    t = _C._tensor(i, None) if _is_array(i) else _C._tensor(list(i), None)
    return t if t.dtype in (_C.bool, _C.uint8, _C.int64) else _C.to(t, _C.int64)


def _is_bool(i):
    """True and np.True_ are masks in PyTorch, not the index 1."""
    return isinstance(i, builtins_bool) or getattr(getattr(i, "dtype", None), "kind", None) == "b"


def _rebuild_tensor(flat, shape, dtype_name):
    """The inverse of Tensor.__reduce__ (pickle)."""
    return _C._tensor(flat, getattr(_C, dtype_name)).reshape(shape)


import builtins as _builtins  # noqa: E402
import operator as _operator  # noqa: E402
builtins_bool = _builtins.bool
