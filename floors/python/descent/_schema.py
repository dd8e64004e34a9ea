"""descent._schema: an operator's schema as an object, as torch._C.FunctionSchema
(what `torch.ops.aten.add.Tensor._schema` is): name, overload_name, arguments and
returns, each argument with its name, type, default, kwarg_only and alias_info.

    s = descent.ops.aten.add.Tensor._schema
    s                        # aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    s.name, s.overload_name  # 'aten::add', 'Tensor'
    s.arguments[2].type      # number   (a Scalar, as TorchScript names it)

The text is descent's op table's (Note [Where descent's schemas differ from
aten's]): the types are parsed from it the way torch's schema parser reads
aten's, and printed as TorchScript's types print (int[] is List[int], int? is
Optional[int], Scalar is number, ScalarType an int).
"""
import ast

__all__ = ["FunctionSchema", "Argument", "AliasInfo"]

# TorchScript's name for each schema base type (torch/csrc/jit/frontend/schema_type_parser.cpp).
_BASE_TYPES = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool",
               "Scalar": "number", "ScalarType": "int", "Layout": "int", "MemoryFormat": "int",
               "Device": "Device", "str": "str", "Generator": "Generator"}


class _Type:
    """A TorchScript type as str() prints it: Tensor, Optional[int], List[Tensor]."""
    __slots__ = ("_text",)

    def __init__(self, text):
        self._text = text

    def __str__(self):
        return self._text

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, _Type) and other._text == self._text

    def __hash__(self):
        return hash(self._text)


class AliasInfo:
    """What a Tensor(a) or Tensor(a!) annotation says: the alias sets and whether it is written."""
    __slots__ = ("is_write", "before_set", "after_set")

    def __init__(self, is_write, before_set, after_set):
        self.is_write, self.before_set, self.after_set = is_write, before_set, after_set


class Argument:
    """One argument (or return) of a schema, as torch._C.Argument."""
    __slots__ = ("name", "type", "default_value", "_has_default", "kwarg_only", "alias_info")

    def __init__(self, name, type_, default_value, has_default, kwarg_only, alias_info):
        self.name, self.type, self.default_value = name, type_, default_value
        self._has_default, self.kwarg_only, self.alias_info = has_default, kwarg_only, alias_info

    def has_default_value(self):
        return self._has_default

    @property
    def is_write(self):
        return self.alias_info is not None and self.alias_info.is_write

    @property
    def is_out(self):  # an out= argument: written, and keyword-only
        return self.kwarg_only and self.is_write


class FunctionSchema:
    """An operator's schema: str() is its text, as torch._C.FunctionSchema."""
    __slots__ = ("name", "overload_name", "arguments", "returns", "_text")

    def __init__(self, text):
        self._text = text
        head, _, rets = text.partition(") -> ")
        full, _, args = head.partition("(")
        self.name, _, self.overload_name = full.partition(".")
        self.arguments = []
        kwarg_only = False
        for a in _split(args):
            if a == "*":
                kwarg_only = True
                continue
            decl, eq, default = a.partition("=")
            type_text, _, name = decl.rpartition(" ")
            t, alias = _parse_type(type_text)
            self.arguments.append(Argument(name, t, _default(default) if eq else None, bool(eq), kwarg_only, alias))
        rets = rets[1:-1] if rets.startswith("(") else rets
        self.returns = []
        for r in _split(rets):
            type_text, _, name = r.partition(" ")
            t, alias = _parse_type(type_text)
            self.returns.append(Argument(name, t, None, False, False, alias))

    @property
    def is_mutable(self):
        return any(a.is_write for a in self.arguments)

    def __str__(self):
        return self._text

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, FunctionSchema) and other._text == self._text

    def __hash__(self):
        return hash(self._text)


def _split(text):
    """The comma-separated items of a schema's list, commas inside [] or () kept."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def _parse_type(text):
    """'Tensor(a!)' -> (Tensor, AliasInfo(True, {'a'}, {'a'})); 'int[1]?' -> (Optional[List[int]], None)."""
    alias = None
    if "(" in text:
        base, _, rest = text.partition("(")
        annot, _, suffix = rest.partition(")")
        write = annot.endswith("!")
        before, _, after = annot.rstrip("!").partition(" -> ")
        alias = AliasInfo(write, {before.strip()}, {(after or before).strip()})
        text = base + suffix
    optional = text.endswith("?")
    text = text[:-1] if optional else text
    if "[" in text:
        inner, _, _ = text.partition("[")
        inner_optional = inner.endswith("?")
        inner_type = _BASE_TYPES.get(inner.rstrip("?"), inner.rstrip("?"))
        t = f"List[{f'Optional[{inner_type}]' if inner_optional else inner_type}]"
    else:
        t = _BASE_TYPES.get(text, text)
    return _Type(f"Optional[{t}]" if optional else t), alias


def _default(text):
    """A default as torch's parser reads it: 1, 1.5, True, None, [], 'mean'."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # an enum's name (contiguous_format), kept as written
