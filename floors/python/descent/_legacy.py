"""The legacy tensor types: descent.FloatTensor, LongTensor, DoubleTensor, BoolTensor, ... as torch's.

Old tutorials still write them, as constructors and in isinstance checks:

    x = descent.LongTensor([1, 2, 3])        # an int64 tensor
    w = descent.FloatTensor(3, 4)            # uninitialized float32 memory, [3, 4]
    isinstance(x, descent.LongTensor)        # True: an int64 tensor on the CPU

Each is a class whose instances are the plain Tensors of its dtype on the CPU
(PyTorch's legacy type objects check dtype and device the same way); calling
one makes a Tensor of its dtype as descent.Tensor(...) makes a float32 one
(Note [The legacy constructor], floors/binding/tensor_object.cpp).
"""
from . import _C
from ._tensor import Size, Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
           "IntTensor", "LongTensor", "BoolTensor"]


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        if not args:
            t = _C.empty([0], dtype=cls.dtype)
        elif all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (
                len(args) == 1 and isinstance(args[0], Size)):
            sizes = list(args[0]) if isinstance(args[0], Size) else list(args)
            if any(s < 0 for s in sizes):
                raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {sizes}")
            t = _C.empty(sizes, dtype=cls.dtype)
        elif len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype:
                raise TypeError(f"expected {_TYPE_WORDS[cls.dtype]} (got {_TYPE_WORDS.get(args[0].dtype, '?')})")
            t = _C.alias(args[0])
        elif len(args) == 1:
            t = _C._tensor(args[0], cls.dtype)
        else:
            raise TypeError(f"new() received an invalid combination of arguments - got {tuple(type(a).__name__ for a in args)}")
        return t if device is None or str(device) == "cpu" else t.to(device)

    def __repr__(cls):
        return f"<class 'descent.{cls.__name__}'>"


_TYPE_WORDS = {_C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16",
               _C.uint8: "Byte", _C.int8: "Char", _C.int16: "Short", _C.int32: "Int", _C.int64: "Long",
               _C.bool: "Bool"}


def _legacy(name, dtype):
    return _LegacyTensorMeta(name, (), {"dtype": dtype, "__module__": "descent"})


FloatTensor = _legacy("FloatTensor", _C.float32)
DoubleTensor = _legacy("DoubleTensor", _C.float64)
HalfTensor = _legacy("HalfTensor", _C.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _C.bfloat16)
ByteTensor = _legacy("ByteTensor", _C.uint8)
CharTensor = _legacy("CharTensor", _C.int8)
ShortTensor = _legacy("ShortTensor", _C.int16)
IntTensor = _legacy("IntTensor", _C.int32)
LongTensor = _legacy("LongTensor", _C.int64)
BoolTensor = _legacy("BoolTensor", _C.bool)
