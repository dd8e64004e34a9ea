"""descent.ops, as torch.ops: every operator by its name, the table's and those defined with descent.library.

    descent.ops.aten.add(x, y)            # the overloads of aten::add, resolved as descent.add resolves them
    descent.ops.aten.add.Tensor(x, y)     # one overload
    descent.ops.aten.sum.default(x)       # the overload without a name
    descent.ops.mylib.twice(x)            # an operator a Library defined

Each call is parsed against the operator's schema and dispatched as the op
functions of descent._C are: it descends the floors like any op.
"""
from . import _C


class OpOverload:
    """One overload of an operator: aten::add.Tensor."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        return _C._call_operator(self._name, *args, **kwargs)

    def __repr__(self):
        return f"descent.ops.{self._name.replace('::', '.')}"

    @property
    def _schema(self):
        """The operator's schema as an object, as torch's OpOverload._schema (descent/_schema.py)."""
        from ._schema import FunctionSchema
        name = self._name[:-len(".default")] if self._name.endswith(".default") else self._name
        text = _C._operator_schema(name)
        if text is None:
            raise RuntimeError(f"No such operator {name}")
        return FunctionSchema(text)


class OpOverloadPacket(OpOverload):
    """The overloads of one operator name: descent.ops.aten.add; an attribute picks one (.Tensor, .default)."""
    __slots__ = ()

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return OpOverload(f"{self._name}.{overload}")


class _Namespace:
    __slots__ = ("_ns",)

    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return OpOverloadPacket(f"{self._ns}::{name}")

    def __repr__(self):
        return f"descent.ops.{self._ns}"


def __getattr__(ns):
    """descent.ops.aten, descent.ops.mylib, ...: a namespace of operators."""
    if ns.startswith("__"):
        raise AttributeError(ns)
    return _Namespace(ns)
