"""descent.fx, as torch.fx: the graph a capture records (Graph, Node, GraphModule).

descent records graphs one way, as make_fx does: by running the function
under a TorchDispatchMode that writes down every aten op reaching the
dispatcher (descent.fx.experimental.proxy_tensor.make_fx). descent.compile
captures through it. There is no symbolic_trace (torch.fx's Python-level
tracer, with Proxy objects): what descent shows is the aten level.
"""
from .graph import Graph, GraphModule, Node, map_arg

__all__ = ["Graph", "GraphModule", "Node", "map_arg"]
