"""descent.Tensor: the Python face of a tensor (floor 1).

Each operator and method here is one line that reaches descent._C, where the
binding (floor 2) parses the arguments against the op's schema. Tracing shows
these functions as floor-1 spans. The in-place forms (x += y, x.add_(y),
t[i] = v) are ops of their own too (aten::add_.Tensor, aten::copy_,
aten::fill_.Scalar) whose kernels write into the tensor's memory.
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

    # Operators, as in PyTorch: an operand of a type the op does not take
    # (None, a string, ...) makes the operator return NotImplemented, so Python
    # answers as for any two unrelated types: `t == None` is False and `t + None`
    # raises "unsupported operand type(s) for +: 'Tensor' and 'NoneType'".
    # A Python number on either side becomes a 0-d "wrapped number".
    def __add__(self, other):
        try: return _C.add(self, other)
        except TypeError: return NotImplemented
    def __radd__(self, other):
        try: return _C.add(self, other)
        except TypeError: return NotImplemented
    def __sub__(self, other):
        try: return _C.sub(self, other)
        except TypeError: return NotImplemented
    def __rsub__(self, other):
        try: return _C.sub(_reflected(other), self)
        except TypeError: return NotImplemented
    def __mul__(self, other):
        try: return _C.mul(self, other)
        except TypeError: return NotImplemented
    def __rmul__(self, other):
        try: return _C.mul(self, other)
        except TypeError: return NotImplemented
    def __truediv__(self, other):
        try: return _C.div(self, other)
        except TypeError: return NotImplemented
    def __rtruediv__(self, other):
        try: return _C.div(_reflected(other), self)
        except TypeError: return NotImplemented
    def __pow__(self, other):
        try: return _C.pow(self, other)
        except TypeError: return NotImplemented
    def __rpow__(self, other):
        try: return _C.pow(_reflected(other), self)
        except TypeError: return NotImplemented
    # matmul takes no numbers (ones(2) @ 2 is a TypeError, as in PyTorch); a
    # numpy array on either side is read as tensor() reads it.
    def __matmul__(self, other):
        try: return _C.matmul(self, _C._tensor(other, None) if _is_array(other) else other)
        except TypeError: return NotImplemented
    def __rmatmul__(self, other):
        if not _is_array(other): return NotImplemented
        return _C.matmul(_C._tensor(other, None), self)
    def __neg__(self): return _C.neg(self)
    def __abs__(self): return _C.abs(self)
    def __eq__(self, other):
        try: return _C.eq(self, other)
        except TypeError: return NotImplemented
    def __ne__(self, other):
        try: return _C.ne(self, other)
        except TypeError: return NotImplemented
    def __lt__(self, other):
        try: return _C.lt(self, other)
        except TypeError: return NotImplemented
    def __le__(self, other):
        try: return _C.le(self, other)
        except TypeError: return NotImplemented
    def __gt__(self, other):
        try: return _C.gt(self, other)
        except TypeError: return NotImplemented
    def __ge__(self, other):
        try: return _C.ge(self, other)
        except TypeError: return NotImplemented
    __hash__ = object.__hash__

    # In place, as in PyTorch: the op's kernel writes into this tensor's own
    # memory, so every view of it sees the change (after x += 1, x[0:1] has
    # changed too), x.add_(1) is x, and x._version goes up by one. The checks
    # (overlap, shape, dtype) are the kernel's: Note [In-place ops].
    def __iadd__(self, other):
        try: return _C.add_(self, other)
        except TypeError: return NotImplemented
    def __isub__(self, other):
        try: return _C.sub_(self, other)
        except TypeError: return NotImplemented
    def __imul__(self, other):
        try: return _C.mul_(self, other)
        except TypeError: return NotImplemented
    def __itruediv__(self, other):
        try: return _C.div_(self, other)
        except TypeError: return NotImplemented
    def add_(self, other, *, alpha=1): return _C.add_(self, other, alpha=alpha)
    def sub_(self, other, *, alpha=1): return _C.sub_(self, other, alpha=alpha)
    def mul_(self, other): return _C.mul_(self, other)
    def div_(self, other): return _C.div_(self, other)
    def fill_(self, value): return _C.fill_(self, value)
    def zero_(self): return _C.zero_(self)

    def __setitem__(self, index, value):
        """t[i] = v, as torch's __setitem__: a tensor is copy_'d into the view t[i]
        (broadcast and cast), a number fills it (fill_)."""
        view = self[index]
        if isinstance(value, Tensor):
            _C.copy_(view, value)
        elif _is_array(value):  # a numpy array, read as tensor() reads it
            _C.copy_(view, _C._tensor(value, None))
        elif isinstance(value, (int, float, bool)) or hasattr(value, "__index__") or hasattr(value, "__float__"):
            _C.fill_(view, value)
        else:
            raise TypeError(f"can't assign a {type(value).__name__} to a descent.Tensor")

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

    @property
    def data(self):
        """The same memory outside the graph (a detached alias), as torch's .data."""
        return self.detach()

    # Methods with PyTorch's names.
    def add(self, other, *, alpha=1): return _C.add(self, other, alpha=alpha)
    def sub(self, other, *, alpha=1): return _C.sub(self, other, alpha=alpha)
    def mul(self, other): return _C.mul(self, other)
    def div(self, other): return _C.div(self, other)
    def pow(self, exponent): return _C.pow(self, exponent)
    def eq(self, other): return _C.eq(self, other)
    def ne(self, other): return _C.ne(self, other)
    def lt(self, other): return _C.lt(self, other)
    def le(self, other): return _C.le(self, other)
    def gt(self, other): return _C.gt(self, other)
    def ge(self, other): return _C.ge(self, other)
    def matmul(self, other): return _C.matmul(self, other)
    def neg(self): return _C.neg(self)
    def abs(self): return _C.abs(self)
    def exp(self): return _C.exp(self)
    def log(self): return _C.log(self)
    def sqrt(self): return _C.sqrt(self)
    def relu(self): return _C.relu(self)
    def sigmoid(self): return _C.sigmoid(self)
    def tanh(self): return _C.tanh(self)
    # x.sum() is aten::sum (SumBackward0), x.sum(0) aten::sum.dim_IntList (SumBackward1), as in PyTorch.
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return _C.sum(self, dtype=dtype) if dim is None and not keepdim else _C.sum(self, dim, keepdim, dtype=dtype)
    def mean(self, dim=None, keepdim=False, *, dtype=None):
        return _C.mean(self, dtype=dtype) if dim is None and not keepdim else _C.mean(self, dim, keepdim, dtype=dtype)
    def max(self, *args, **kwargs): return _C.max(self, *args, **kwargs)
    def view(self, *shape): return _C.view(self, *shape)
    def reshape(self, *shape): return _C.reshape(self, *shape)
    def transpose(self, dim0, dim1): return _C.transpose(self, dim0, dim1)
    def t(self): return _C.t(self)
    def permute(self, *dims): return _C.permute(self, *dims)
    def expand(self, *sizes): return _C.expand(self, *sizes)
    def unsqueeze(self, dim): return _C.unsqueeze(self, dim)
    def contiguous(self): return _C.contiguous(self)
    def clone(self): return _C.clone(self)
    def copy_(self, src): return _C.copy_(self, src)
    def to(self, dtype=None, device=None, copy=False):
        if isinstance(dtype, (str, _C.device)):  # x.to("cpu")
            dtype, device = None, dtype
        return _C.to(self, dtype, device, copy)
    def float(self): return _C.to(self, _C.float32)
    def double(self): return _C.to(self, _C.float64)
    def long(self): return _C.to(self, _C.int64)
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

    def numpy(self):
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
        if self.dtype is not _C.int64 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return self.item()

    def __getitem__(self, index):
        """Indexing with ints, slices (with steps), None and ...: every step is a view."""
        if not isinstance(index, tuple):
            index = (index,)
        if sum(i is Ellipsis for i in index) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        used = sum(1 for i in index if i is not None and i is not Ellipsis)
        if used > self.dim():
            raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
        out, d, src = self, 0, 0  # d: the dim of `out` reached; src: the dim of self it came from
        for i in index:
            if i is Ellipsis:
                d += self.dim() - used
                src += self.dim() - used
            elif i is None:
                out = _C.unsqueeze(out, d)
                d += 1
            elif isinstance(i, slice):
                if i.step is not None and i.step <= 0:
                    raise ValueError("step must be greater than zero")
                if not (i.start in (None, 0) and i.stop is None and i.step in (None, 1)):  # `:` is no slice, as in PyTorch
                    out = _C.slice(out, d, i.start, i.stop, 1 if i.step is None else i.step)
                d += 1
                src += 1
            elif hasattr(i, "__index__") and not _is_bool(i):  # ints, numpy ints, int tensors
                k, n = i.__index__(), out.shape[d]
                if not -n <= k < n:  # named by the dim of self, not of the partly indexed view
                    raise IndexError(f"index {k} is out of bounds for dimension {src} with size {n}")
                out = _C.select(out, d, k)
                src += 1
            else:
                raise TypeError(f"descent supports indexing with ints, slices, None and ...; got {type(i).__name__}")
        if out is self and self.dim() > 0:  # x[:] or x[...]: still a new view, as torch's (its node: AliasBackward0)
            out = _C.slice(self, 0, None, None, 1)
        return out

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


def _reflected(other):
    """The left operand of a reflected operator (2 - t, array - t) as a tensor:
    a number becomes a 0-d wrapped number, an array a tensor as tensor() reads it."""
    return _C._tensor(other, None) if _is_array(other) else _C._scalar_tensor(other)


def _is_bool(i):
    """True and np.True_ are masks in PyTorch, not the index 1."""
    return isinstance(i, builtins_bool) or getattr(getattr(i, "dtype", None), "kind", None) == "b"


def _rebuild_tensor(flat, shape, dtype_name):
    """The inverse of Tensor.__reduce__ (pickle)."""
    return _C._tensor(flat, getattr(_C, dtype_name)).reshape(shape)


import builtins as _builtins  # noqa: E402
import operator as _operator  # noqa: E402
builtins_bool = _builtins.bool
