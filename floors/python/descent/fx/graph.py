"""descent.fx's Graph, Node and GraphModule, as torch.fx's: the captured program, printable three ways.

    gm = make_fx(f)(x, w, b)
    gm.graph.print_tabular()   # one row per node: opcode, name, target, args, kwargs
    print(gm.code)             # the graph as Python: def forward(self, x_1, w_1, b_1): ...
    gm(x, w, b)                # runs it: each call_function node calls its operator

A Graph is a list of Nodes in execution order. A Node's op is what it does:
'placeholder' (an input), 'get_attr' (a tensor the function closed over,
held by the GraphModule), 'call_function' (an operator, an OpOverload, or
operator.getitem for one result of several), 'output' (what the graph
returns). Its args name other Nodes, so the graph is also a dataflow graph
(node.users). The Python code is generated from the nodes as torch.fx's
CodeGen writes it, down to freeing each value after its last use
(`;  x_1 = None`), and the GraphModule runs that code.
"""
import operator

__all__ = ["Graph", "Node", "GraphModule", "map_arg", "WrappedFloat", "WrappedInt", "unwrap_numbers"]


class WrappedFloat(float):
    """A Python number where the operator takes a Tensor (`1.0 - x` reaches aten.sub.Tensor with 1.0 as
    self, a wrapped number): printed as the number, run as the wrapped 0-d tensor it was."""
    __slots__ = ()

    def __repr__(self):
        return float.__repr__(self)


class WrappedInt(int):
    __slots__ = ()

    def __repr__(self):
        return int.__repr__(self)


def unwrap_numbers(a):
    """a with each WrappedFloat/WrappedInt turned back into the wrapped-number tensor the op expects."""
    if isinstance(a, (WrappedFloat, WrappedInt)):
        import descent
        return descent._C._scalar_tensor(float(a) if isinstance(a, WrappedFloat) else int(a))
    if isinstance(a, (list, tuple)):
        return type(a)(unwrap_numbers(x) for x in a)
    if isinstance(a, dict):
        return {k: unwrap_numbers(v) for k, v in a.items()}
    return a


def map_arg(a, fn):
    """a with every Node in it (in tuples, lists and dicts too) replaced by fn(node)."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    return a


def _nodes_in(a):
    out = []
    map_arg(a, out.append)
    return out


class Node:
    """One step of a Graph: op, name, target, args, kwargs (torch.fx.Node). meta holds what the capture
    knew of its value ('val': shape, dtype, device)."""

    def __init__(self, graph, name, op, target, args, kwargs):
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.args, self.kwargs = tuple(args), dict(kwargs)
        self.users = {}
        self.meta = {}
        for n in _nodes_in((self.args, self.kwargs)):
            n.users[self] = None

    @property
    def all_input_nodes(self):
        seen = []
        for n in _nodes_in((self.args, self.kwargs)):
            if n not in seen:
                seen.append(n)
        return seen

    def __repr__(self):
        return self.name

    def format_node(self):
        """One line, as torch.fx.Node.format_node: '%mm : [num_users=1] = call_function[target=aten.mm.default](args = (%x_1, %w_1), kwargs = {})'."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self.args[0], '%')}"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={_target_str(self.target)}]"
                f"(args = {_fmt(self.args, '%')}, kwargs = {_fmt(self.kwargs, '%')})")


def _target_str(t):
    if t is operator.getitem:
        return "<built-in function getitem>"
    return str(t)


def _fmt(a, prefix=""):
    """args as torch.fx prints them: nodes by name, tuples with their trailing comma."""
    if isinstance(a, Node):
        return prefix + a.name
    if isinstance(a, tuple):
        inner = ", ".join(_fmt(x, prefix) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x, prefix) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v, prefix)}" for k, v in a.items()) + "}"
    return repr(a)


def _code_arg(a):
    """An argument as Python source: nodes by name, dtypes and devices as descent names them."""
    if isinstance(a, Node):
        return a.name
    if isinstance(a, WrappedFloat):
        return f"torch._C._scalar_tensor({float(a)!r})"
    if isinstance(a, WrappedInt):
        return f"torch._C._scalar_tensor({int(a)!r})"
    if isinstance(a, tuple):
        inner = ", ".join(_code_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_code_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_code_arg(v)}" for k, v in a.items()) + "}"
    mod = type(a).__module__ or ""
    if mod.startswith("descent"):  # dtype, device: torch.float32, device(type='cpu')
        return f"torch.{str(a).split('.')[-1]}" if type(a).__name__ == "dtype" else f"torch.device({str(a)!r})"
    return repr(a)


class Graph:
    """The nodes of a captured program, in order (torch.fx.Graph)."""

    def __init__(self):
        self.nodes = []
        self._names = {}
        self.owning_module = None

    def _unique(self, base):
        base = base.replace(".", "_")
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def create_node(self, op, target, args=(), kwargs=None, name=None):
        node = Node(self, self._unique(name or _default_name(target)), op, target, args, kwargs or {})
        self.nodes.append(node)
        return node

    def placeholder(self, name):
        return self.create_node("placeholder", name, name=name)

    def get_attr(self, qualified_name):
        return self.create_node("get_attr", qualified_name, name=qualified_name)

    def call_function(self, target, args=(), kwargs=None):
        return self.create_node("call_function", target, args, kwargs)

    def output(self, result):
        return self.create_node("output", "output", (result,), name="output")

    def find_nodes(self, *, op, target=None):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def __str__(self):
        inputs = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        lines = [f"graph({inputs}):"]
        lines += ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def tabular(self):
        """print_tabular's text: the columns tabulate's 'simple' format lays out."""
        rows = [[n.op, n.name, _target_str(n.target), _fmt(n.args), _fmt(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])

    def print_tabular(self):
        print(self.tabular())

    def python_code(self, root_module="self"):
        """The graph as the source of a forward(self, ...) function, as torch.fx's CodeGen writes it."""
        last_use = {}
        for node in self.nodes:
            for n in _nodes_in((node.args, node.kwargs)):
                last_use[n] = node
        freed_at = {}
        for n, user in last_use.items():
            freed_at.setdefault(user, []).append(n)
        inputs = [n.name for n in self.nodes if n.op == "placeholder"]
        body = []
        for node in self.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                body.append(f"return {_code_arg(node.args[0])}")
                continue
            if node.op == "get_attr":
                stmt = f"{node.name} = self.{node.target}"
            elif node.target is operator.getitem:
                stmt = f"{node.name} = {_code_arg(node.args[0])}[{node.args[1]!r}]"
            else:
                args = [_code_arg(a) for a in node.args] + [f"{k} = {_code_arg(v)}" for k, v in node.kwargs.items()]
                stmt = f"{node.name} = torch.ops.{str(node.target)}({', '.join(args)})"
            free = [n.name for n in freed_at.get(node, [])]
            if free:
                stmt += ";  " + " = ".join(free) + " = None"
            body.append(stmt)
        return "\n".join([f"def forward({', '.join([root_module] + inputs)}):"] + ["    " + s for s in body])


def _default_name(target):
    if target is operator.getitem:
        return "getitem"
    name = getattr(target, "__name__", str(target))
    return name.split(".")[0]  # aten.add.Tensor -> add; mm.default -> mm


class GraphModule:
    """A Graph with the code generated from it and the tensors its get_attr nodes read (torch.fx.GraphModule)."""

    def __init__(self, attrs, graph, class_name="GraphModule"):
        self.graph = graph
        graph.owning_module = self
        self._class_name = class_name
        for k, v in (attrs or {}).items():
            setattr(self, k, v)
        self.recompile()

    def recompile(self):
        import descent
        self.code = self.graph.python_code()
        scope = {"torch": descent, "operator": operator}
        exec(compile(self.code, f"<eval_with_key>.{id(self)}", "exec"), scope)  # noqa: S102 (our own generated code)
        self._forward = scope["forward"]
        return self.code

    def forward(self, *args):
        return self._forward(self, *args)

    __call__ = forward

    def print_readable(self, print_output=True):
        text = f"class {self._class_name}(torch.nn.Module):\n" + "\n".join(
            "    " + line for line in self.code.splitlines())
        if print_output:
            print(text)
        return text

    def __repr__(self):
        return f"{self._class_name}()"
