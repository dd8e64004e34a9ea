"""AOT autograd: a captured forward and the backward autograd would run for it, as two explicit graphs.

Note [Partitioning the joint graph]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
AOTAutograd (torch/_functorch/aot_autograd.py) traces the forward and the
backward together into one joint graph, then partitions it: a forward graph
that returns the outputs and the tensors the backward needs (the saved
tensors), and a backward graph that takes those and the outputs' gradients
(tangents) and returns the inputs' gradients. descent records the joint the
same way it records any graph, by running it: the forward is the capture
(Note [Capturing by running]); then autograd.grad runs the engine on the
capture's own autograd graph, with a tangent per output, under a recording
mode that keeps the forward's tensor-to-node map, so each backward formula's
ops land in the backward graph and each tensor a formula reads from the
forward (a saved `self`, a saved result) resolves to the forward node that
made it. Those forward nodes are exactly what the forward must save. (A
saved result comes back from autograd as another tensor object over the same
storage, so the map also knows a tensor by its data pointer, sizes,
strides and dtype.) The partition is AOTAutograd's default_partition in
effect: save what the formulas read; its min-cut partitioner would instead
recompute cheap pointwise values in the backward to save memory, which
descent does not do. The pair runs as one autograd.Function named
CompiledFunction, so the call's grad_fn is CompiledFunctionBackward, one
node where eager records one per op. Before it is used, its gradients on
the capture's inputs are checked bit for bit against the ones autograd
computed (the verifier's third check); a mismatch, a backward on a device
(whose engine thread the mode does not see), or an output that is not a
tensor keeps the plain replay, with the reason noted.
"""
import descent
from ..fx.experimental.proxy_tensor import ProxyTorchDispatchMode, eliminate_dead_code
from ..fx.graph import Graph, GraphModule, map_arg

__all__ = ["AotUnsupported", "partition"]


class AotUnsupported(RuntimeError):
    pass


def _flat_tensors(result):
    if isinstance(result, descent.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and all(isinstance(r, descent.Tensor) for r in result):
        return list(result)
    raise AotUnsupported("the function's result is not a tensor or a tuple of tensors")


def _copy(graph, nodes, env):
    for n in nodes:
        new = graph.create_node(n.op, n.target, map_arg(n.args, lambda a: env[a]),
                                map_arg(n.kwargs, lambda a: env[a]), name=n.name)
        new.meta = dict(n.meta)
        env[n] = new


def partition(gm, mode, inputs, result, compile_fn=None):
    """(forward GraphModule, backward GraphModule, CompiledFunction class, lifted constants, note) from a
    capture (gm, its recording mode, the call's inputs and result). AotUnsupported says why not."""
    outs = _flat_tensors(result)
    if any(str(t.device) != "cpu" for t in inputs + outs):
        raise AotUnsupported("the tensors are not on the CPU (a device's backward runs on its own thread)")
    fw_nodes = [n for n in mode.all_nodes if n.op != "output"]
    tensor_inputs = [t for t in inputs if isinstance(t, descent.Tensor)]
    lifted = [name for name, t in gm.__dict__.items() if name.startswith("_tensor_constant") and t.requires_grad]
    diff_inputs = [t for t in tensor_inputs if t.requires_grad] + [getattr(gm, k) for k in lifted]
    diff_outs = [o for o in outs if o.requires_grad]
    if not diff_inputs or not diff_outs:
        raise AotUnsupported("nothing to differentiate")
    # The backward, recorded into its own graph, resolving forward tensors through the forward's map.
    bw_graph = Graph()
    rec = ProxyTorchDispatchMode(bw_graph, {}, env=mode.env, by_storage=mode.by_storage,
                                 decomposition_table=mode.decomposition_table)  # a formula's composites too
    tangents = [descent.ones_like(o) for o in diff_outs]
    tangent_nodes = []
    for i, t in enumerate(tangents):
        node = bw_graph.placeholder(f"tangents_{i + 1}")
        rec.bind(t, node)
        tangent_nodes.append(node)
    with rec:
        grads = descent.autograd.grad(diff_outs, diff_inputs, tangents, retain_graph=True, allow_unused=True)
    if rec.constants:
        raise AotUnsupported(f"the backward read {len(rec.constants)} tensor(s) the forward graph did not make")
    grad_nodes = [None if g is None else rec.node_of(g) for g in grads]
    fw_set = set(fw_nodes)
    bw_nodes = [n for n in bw_graph.nodes if n.op != "placeholder"]
    saved = []
    for n in bw_nodes + [g for g in grad_nodes if g is not None]:
        for a in (n.all_input_nodes if n in bw_nodes else [n]):
            if a in fw_set and a not in saved:
                saved.append(a)
    # The forward graph: primals (the inputs, then the lifted constants), its ops, (outputs..., saved...).
    fw = Graph()
    env, primal = {}, 0
    for n in fw_nodes:
        if n.op == "placeholder" or (n.op == "get_attr" and n.target in lifted):
            primal += 1
            env[n] = fw.placeholder(f"primals_{primal}")
            env[n].meta = dict(n.meta)
    _copy(fw, [n for n in fw_nodes if n not in env], env)
    out_nodes = [mode.node_of(o) for o in outs]
    fw.output(tuple(env[n] for n in out_nodes + saved))
    eliminate_dead_code(fw)
    consts = {k: getattr(gm, k) for k in gm.__dict__ if k.startswith("_tensor_constant") and k not in lifted}
    fw_gm = GraphModule(consts, fw, "GraphModule")
    # The backward graph: (saved..., tangents...) -> a gradient per primal.
    bw = Graph()
    benv = {}
    for n in saved:
        benv[n] = bw.placeholder(env[n].name if env[n].op == "placeholder" else n.name)
        benv[n].meta = dict(n.meta)
    for t in tangent_nodes:
        benv[t] = bw.placeholder(t.name)
        benv[t].meta = dict(t.meta)
    _copy(bw, bw_nodes, benv)
    by_input = dict(zip([id(t) for t in diff_inputs], grad_nodes))
    primal_tensors = tensor_inputs + [getattr(gm, k) for k in lifted]
    bw.output(tuple(benv[by_input[id(t)]] if by_input.get(id(t)) is not None else None for t in primal_tensors))
    eliminate_dead_code(bw)
    bw_gm = GraphModule({}, bw, "GraphModule")
    n_out = len(outs)
    single = isinstance(result, descent.Tensor)
    fw_run, bw_run = fw_gm, bw_gm
    if compile_fn is not None:  # the backend's compiler, on each graph (the inductor fuses them)
        with descent.no_grad():
            fw_run, bw_run = compile_fn(fw_gm, primal_tensors), compile_fn(bw_gm, tangents)

    def forward(ctx, *primals):
        r = fw_run(*primals)
        ctx.save_for_backward(*r[n_out:])
        return r[0] if single else tuple(r[:n_out])

    def backward(ctx, *grad_outputs):
        return tuple(bw_run(*ctx.saved_tensors, *grad_outputs))
    cls = type("CompiledFunction", (descent.autograd.Function,),
               {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls.kernels = list(getattr(fw_run, "kernels", [])) + list(getattr(bw_run, "kernels", []))
    # The verifier's third check: the explicit backward against autograd's, on the capture's inputs.
    got = cls.apply(*primal_tensors)
    got_outs = _flat_tensors(got)
    g2 = descent.autograd.grad([got_outs[outs.index(o)] for o in diff_outs], diff_inputs, tangents, allow_unused=True)
    for a, b in zip(grads, g2):
        if (a is None) != (b is None) or (a is not None and not bool((a == b).all())):
            raise AotUnsupported("the partitioned backward's gradients differ from autograd's")
    note = (f"AOT autograd: forward {sum(n.op == 'call_function' for n in fw.nodes)} ops saving "
            f"{len(saved)} tensor(s) [{', '.join(n.name for n in saved)}], backward "
            f"{sum(n.op == 'call_function' for n in bw.nodes)} ops; gradients bitwise equal to autograd's")
    return fw_gm, bw_gm, cls, lifted, saved, note
