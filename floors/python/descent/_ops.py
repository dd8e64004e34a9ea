"""descent._ops, as torch._ops: the operator objects a __torch_dispatch__ mode is handed.

    func                      # aten.add.Tensor: str() as PyTorch prints an OpOverload
    func.name()               # 'aten::add.Tensor', the operator name
    func.overloadpacket       # aten.add: the overloads of the name
    func(*args, **kwargs)     # calls the operator: from inside a mode, beneath the Python key

An OpOverload is a descent.ops.OpOverload (calling it dispatches the operator
by name) that prints with PyTorch's names and compares by operator, so
`func == descent.ops.aten.mm.default` holds. One object per operator
(op_overload caches them), as torch.ops.aten.mm.default is always the same object.
"""
from . import ops as _ops

__all__ = ["OpOverload", "OpOverloadPacket", "op_overload"]


class OpOverloadPacket:
    """The overloads of one operator name: aten.add."""
    __slots__ = ("_qualified",)

    def __init__(self, qualified):
        self._qualified = qualified  # "aten::add"

    @property
    def __name__(self):
        return self._qualified.split("::", 1)[1]

    def __str__(self):
        return self._qualified.replace("::", ".")

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"

    def __eq__(self, other):
        return isinstance(other, OpOverloadPacket) and other._qualified == self._qualified

    def __hash__(self):
        return hash(self._qualified)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return op_overload(f"{self._qualified}.{overload}")


class OpOverload(_ops.OpOverload):
    """One overload of an operator, as torch._ops.OpOverload: str() is 'aten.add.Tensor'."""
    __slots__ = ("_qualified", "_overloadname")

    def __init__(self, name):
        qualified, _, overload = name.partition(".")
        overload = overload or "default"
        super().__init__(f"{qualified}.{overload}")
        self._qualified, self._overloadname = qualified, overload

    def name(self):
        """'aten::add.Tensor' (the overload without a name: 'aten::sum', as PyTorch)."""
        return self._qualified if self._overloadname == "default" else f"{self._qualified}.{self._overloadname}"

    @property
    def overloadpacket(self):
        return OpOverloadPacket(self._qualified)

    @property
    def __name__(self):
        return f"{self._qualified.split('::', 1)[1]}.{self._overloadname}"

    @property
    def namespace(self):
        return self._qualified.split("::", 1)[0]

    def __str__(self):
        return f"{self._qualified.replace('::', '.')}.{self._overloadname}"

    def __repr__(self):
        return f"<OpOverload(op='{self._qualified.replace('::', '.')}', overload='{self._overloadname}')>"

    def __eq__(self, other):
        return isinstance(other, _ops.OpOverload) and op_overload(other._name) is self

    def __hash__(self):
        return hash(self._name)


_cache = {}


def op_overload(name):
    """The OpOverload of an operator name ('aten::add.Tensor', 'aten::sum' or 'aten::sum.default'), one per operator."""
    key = name if "." in name.partition("::")[2] else f"{name}.default"
    op = _cache.get(key)
    if op is None:
        op = _cache[key] = OpOverload(key)
    return op
