"""descent.fx.experimental.proxy_tensor.make_fx, as torch's: a function's aten graph, recorded by running it.

    gm = make_fx(lambda x, w, b: x @ w + b)(x, w, b)
    print(gm.code)
    # def forward(self, x_1, w_1, b_1):
    #     mm = torch.ops.aten.mm.default(x_1, w_1);  x_1 = w_1 = None
    #     add = torch.ops.aten.add.Tensor(mm, b_1);  mm = b_1 = None
    #     return add

make_fx runs the function once on the real inputs under a TorchDispatchMode
(ProxyTorchDispatchMode) that records each op reaching the Python key as a
call_function node, and which node made each tensor, so the next op's args
name nodes: Note [Capturing by running] says what that sees and misses.
This is torch's tracing_mode="real"; descent has no fake or symbolic tensors.
"""
import inspect
import operator

from ...utils._python_dispatch import TorchDispatchMode
from ..graph import Graph, GraphModule, WrappedFloat, WrappedInt

__all__ = ["make_fx", "ProxyTorchDispatchMode", "DataDependentError"]

# Note [Capturing by running]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The mode sees ops, not Python. What a graph records is the aten ops one
# call made, beneath autograd (so `x @ w` is aten.mm, linear is aten.t and
# aten.addmm, and an op's autograd node is not in it: replaying the graph
# through the dispatcher records autograd's nodes again). What it cannot
# record is what the function did in Python between the ops: a branch on a
# tensor's value (bool(x.sum() > 0), x.item()) took one side on this call's
# values, so the mode stops at aten._local_scalar_dense, the op every read
# of a value goes through, and raises DataDependentError (descent.compile
# turns it into a graph break). Python numbers become constants of the
# graph (a number the binding wrapped into a 0-d tensor, `x * 2`'s 2, too,
# as make_fx writes it); a tensor the function closed over (a weight) becomes a get_attr
# node, a _tensor_constant the GraphModule holds, as make_fx makes it.


class DataDependentError(RuntimeError):
    """The function read a traced tensor's value into Python (item(), bool(), float()): its control flow may
    depend on data, which a graph cannot record."""


def _val(t):
    return {"shape": tuple(t.shape), "stride": tuple(t.stride()), "dtype": t.dtype, "device": t.device}


class ProxyTorchDispatchMode(TorchDispatchMode):
    """Records every op reaching the Python key into `graph` (make_fx's mode)."""

    def __init__(self, graph, constants, env=None, by_storage=None, decomposition_table=None):
        super().__init__()
        self.graph, self.constants = graph, constants
        # OpOverload -> a function computing it in primitives: it runs in the op's place and its ops are
        # recorded instead (Note [Decomposing before fusion], descent/_compile/decompositions.py).
        self.decomposition_table = decomposition_table or {}
        self.env = {} if env is None else env  # id(tensor) -> (tensor, node): the tensor is kept, its id not reused
        # (data pointer, sizes, strides, dtype) -> node: the same values under another tensor object
        # (a saved result autograd hands back: Note [Partitioning the joint graph], descent/_compile/aot.py).
        self.by_storage = {} if by_storage is None else by_storage
        self.mutated = []  # (op, node) of each in-place op on a tensor the graph did not make

    def bind(self, t, node):
        self.env[id(t)] = (t, node)
        node.meta["val"] = _val(t)
        if t.numel() > 0:
            self.by_storage[(t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)] = node

    def node_of(self, t):
        hit = self.env.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        if t.numel() > 0 and str(t.device) == "cpu":
            node = self.by_storage.get((t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype))
            if node is not None:
                return node
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = t
        node = self.graph.get_attr(name)
        self.bind(t, node)
        return node

    def map(self, a):
        import descent
        if isinstance(a, descent.Tensor):
            hit = self.env.get(id(a))
            if hit is None or hit[0] is not a:
                number = descent._C._wrapped_number(a)  # `x * 2`'s 2: the graph holds the number
                if number is not None:
                    return number
            return self.node_of(a)
        if isinstance(a, (list, tuple)):
            return type(a)(self.map(x) for x in a)
        return a

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        import descent
        kwargs = kwargs or {}
        if func.name() == "aten::_local_scalar_dense" and any(
                isinstance(a, descent.Tensor) and id(a) in self.env for a in args):
            raise DataDependentError(
                f"data-dependent: the function read a traced tensor's value into Python ({func}: .item(), "
                "bool(), float() or int() of a tensor), so what it does next depends on the data")
        decomposition = self.decomposition_table.get(func)
        if decomposition is not None:
            with self:  # beneath autograd still (its keys stay excluded): the primitives come back to this mode
                r = decomposition(*args, **kwargs)
            if r is not NotImplemented:
                return r
        margs, mkwargs = self.map(args), self.map(kwargs)
        if args and isinstance(args[0], descent.Tensor) and not isinstance(margs[0], descent.fx.Node):
            # A number as `Tensor self` (1.0 - x as aten.sub.Tensor): marked, so a replay wraps it again.
            if isinstance(margs[0], bool):
                margs = (self.node_of(args[0]),) + tuple(margs[1:])
            else:
                wrapped = WrappedFloat(margs[0]) if isinstance(margs[0], float) else WrappedInt(margs[0])
                margs = (wrapped,) + tuple(margs[1:])
        out = func(*args, **kwargs)
        node = self.graph.call_function(func, margs, mkwargs)
        if func.name().split(".")[0].endswith("_") and args and isinstance(args[0], descent.Tensor):
            first = margs[0]
            if first.op in ("placeholder", "get_attr"):
                self.mutated.append((func, first))
        if isinstance(out, descent.Tensor):
            self.bind(out, node)
        elif isinstance(out, tuple):
            for i, o in enumerate(out):
                if isinstance(o, descent.Tensor):
                    self.bind(o, self.graph.call_function(operator.getitem, (node, i)))
        return out


def _placeholder_names(f, n):
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(n):
        p = params[i] if i < len(params) else None
        if p is None or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            names.append(f"arg{i}_1")
        else:
            names.append(f"{p.name}_1")
    return names


def _output(mode, result):
    import descent
    if isinstance(result, descent.Tensor):
        return mode.node_of(result)
    if isinstance(result, (tuple, list)):
        return type(result)(_output(mode, r) for r in result)
    if result is None or isinstance(result, (bool, int, float, str)):
        return result
    raise TypeError(f"make_fx: the function returned a {type(result).__name__}; a graph returns tensors, tuples "
                    "and lists of them, and Python constants")


def eliminate_dead_code(graph):
    """Drops call_function nodes whose value no one uses (an op's autograd kernel's by-products), keeping
    in-place ops, which act by writing. Returns how many went."""
    gone = 0
    for node in reversed(list(graph.nodes)):
        if node.op not in ("call_function", "get_attr") or node.users:
            continue
        if node.op == "call_function" and node.target is not operator.getitem and \
                node.target.name().split(".")[0].endswith("_"):
            continue
        for n in node.all_input_nodes:
            n.users.pop(node, None)
        graph.nodes.remove(node)
        gone += 1
    return gone


def capture(f, args, names=None, decomposition_table=None):
    """Runs f(*args) under the recording mode: (GraphModule, f's result, the mode). Tensors among args are
    the placeholders; anything else is passed as it is and is a constant of the graph. An op of
    decomposition_table is recorded as the primitives its decomposition calls."""
    import descent
    graph, constants = Graph(), {}
    mode = ProxyTorchDispatchMode(graph, constants, decomposition_table=decomposition_table)
    for a, name in zip(args, names or _placeholder_names(f, len(args))):
        if isinstance(a, descent.Tensor):
            mode.bind(a, graph.placeholder(name))
    with mode:
        result = f(*args)
    graph.output(_output(mode, result))
    mode.all_nodes = list(graph.nodes)  # before dead code goes: AOT autograd's backward may read it
    eliminate_dead_code(graph)
    return GraphModule(constants, graph), result, mode


def make_fx(f, decomposition_table=None, tracing_mode="real", **kwargs):
    """make_fx(f)(*args) -> GraphModule: the aten graph of f on these inputs (torch's make_fx, real tracing).
    With decomposition_table ({OpOverload: function}), each op in it is recorded as what its function calls
    (descent._compile.decompositions.select_decomp_table(), as torch._decomp's tables)."""
    if tracing_mode != "real":
        raise NotImplementedError(f"make_fx(tracing_mode={tracing_mode!r}): descent traces real tensors only")
    def wrapped(*args):
        return capture(f, args, decomposition_table=decomposition_table)[0]
    return wrapped
