"""Writes the traces the explanation tests read (tests/ui/test_explain.cpp):
every op of the op table run through its sample call on the CPU and on sim:0,
the differentiable ones again with inputs that require grad followed by a
backward pass, and a few statements that reach what the op table's calls do
not (Tensor methods and operators, a copy between devices, a read that waits,
streams and events, del, an error).

    python3 explain_traces.py OUT_DIR [--only NAME,NAME...] [--devices cpu,sim:0,cuda:0]

--only writes just the named statements of EXTRA (not the op table);
--devices runs the op table on those devices (cpu and sim:0 by default). Each
trace is OUT_DIR/<name>.descent (descent's own format); OUT_DIR/index.txt
lists them, one `name<TAB>code` a line. Run with build/python on PYTHONPATH.
"""
import os
import re
import sys

import descent
from descent import _C, tracing

DEVICES = ("cpu", "sim:0")


def tensor_code(text, device, requires_grad, positive):
    """Python for one argument of the op table's sample syntax (Note [One op table])."""
    if text.startswith("T["):
        shape = text[2:text.index("]")]
        t = f"(descent.rand({shape}, device={device!r}){' + 0.5' if positive else ''})"
        if text.endswith("^T"):
            t = f"{t}.transpose(0, 1)"
        return t, text.startswith("T[")
    if text.startswith("("):  # (None, I[5, -1]): a Tensor?[] of None and int64 tensors
        items = re.findall(r"None|I\[[^\]]*\]", text)
        parts = ["None" if i == "None" else f"descent.tensor([{i[2:-1]}], device={device!r})" for i in items]
        return f"[{', '.join(parts)}]", False
    if text in ("float32", "float64", "int64", "bool"):
        return f"descent.{text}", False
    return text, False


def sample_statements(op, device, requires_grad):
    """Setup statements (inputs bound to names) and the call, for one op."""
    setup, args = [], []
    for k, text in enumerate(s.strip() for s in op["sample"].split(";")):
        code, is_tensor = tensor_code(text, device, requires_grad, op["domain"] == "positive")
        if is_tensor:
            name = f"a{k}"
            setup.append(f"{name} = {code}")
            if requires_grad:
                setup.append(f"{name}.requires_grad_(True)")
            args.append(name)
        else:
            args.append(code)
    kwargs = f", device={device!r}" if op["kind"] == "factory" else ""
    call = f"out = descent.{op['python_name']}({', '.join(args)}{kwargs})"
    return setup, call


def run(name, code, out_dir, index, env=None):
    env = {"descent": descent, "__name__": "__explain__"} if env is None else env
    result, error = tracing.run(code, env=env, echo=None)
    result.save(os.path.join(out_dir, name + ".descent"))
    index.append(f"{name}\t{code.replace(chr(10), '; ')}")
    return error


EXTRA = {
    # Tensor methods and operators, a Python number on either side.
    "operators": ("x = descent.ones(2, 2)\ny = x + 1\nz = 2 - x\nx += 1\nb = x == 1\nv = x[0]\nw = x.sum()\n"
                  "f = w.item()"),
    "operators_sim": "x = descent.ones(2, 2, device='sim:0')\ny = x + 1\nx += 1\nb = x == 1\nf = x.sum().item()",
    # Copies between devices, and a read that waits for the device.
    "copies": "x = descent.ones(4)\nd = x.to('sim:0')\nh = d.cpu()\nd2 = d.to(descent.float64)\nprint(d)",
    # Streams and events, waits, the allocator's pool.
    "streams": ("s = descent.sim.Stream()\nx = descent.ones(1024, device='sim:0')\ne = descent.sim.Event()\n"
                "e.record()\ns.wait_event(e)\nwith descent.sim.stream(s):\n    y = x * 2\n"
                "x.record_stream(s)\ne.synchronize()\ns.synchronize()\ndel x\ndescent.sim.synchronize()\n"
                "z = descent.ones(1024, device='sim:0')\ndescent.sim.empty_cache()"),
    # A large block: a new segment, split; then a cached one.
    "allocator": ("a = descent.empty(3 << 20, device='sim:0')\ndel a\nb = descent.empty(1 << 20, device='sim:0')\n"
                  "c = descent.empty(100, device='sim:0')\ndel b, c\ndescent.sim.empty_cache()\n"
                  "p = descent.ones(4).pin_memory()"),
    # del, synchronize alone, an error.
    "del_cpu": "x = descent.ones(2)\ndel x",
    "del_sim": "x = descent.ones(2, device='sim:0')\ndel x",
    "synchronize": "descent.sim.synchronize()",
    "error": "x = descent.ones(2)\nz = descent.ones(3)\ny = x + z",
    # Autograd: a graph, backward, grad mode off.
    "autograd": ("x = descent.ones(2, 2, requires_grad=True)\nw = descent.rand(2, 2, requires_grad=True)\n"
                 "y = (x * w + 1).sum()\ny.backward()\nwith descent.no_grad():\n    z = x * 2"),
    "autograd_sim": ("x = descent.ones(2, 2, device='sim:0', requires_grad=True)\ny = (x * x).sum()\ny.backward()"),
    # Big enough for the intra-op pool and the vector unit; two packed products: one step of
    # the loop nest (its tasks pack their own panels), then K past one kc block (packing items).
    "parallel": ("x = descent.rand(1 << 20)\ny = x.exp()\ns = x.sum()\n"
                 "m = descent.rand(128, 128) @ descent.rand(128, 128)\n"
                 "k = descent.rand(128, 600) @ descent.rand(600, 128)"),
}


def main(out_dir, only=None, devices=DEVICES):
    os.makedirs(out_dir, exist_ok=True)
    index = []
    for op in [] if only else _C._ops():
        key = op["name"].removeprefix("aten::").replace(".", "_")
        for device in devices:
            tag = device.replace(":", "")
            grads = [False]
            if op["derivative"]:
                grads.append(True)
            for requires_grad in grads:
                setup, call = sample_statements(op, device, requires_grad)
                env = {"descent": descent, "__name__": "__explain__"}
                try:
                    exec("\n".join(setup), env)  # inputs made outside the recording
                except Exception as e:  # an op the device has no kernel for
                    print(f"skip {key} on {device}: {e}", file=sys.stderr)
                    continue
                code = call
                if requires_grad:
                    code += "\nl = out.sum() if out.dim() else out\nl.backward()"
                name = f"{key}_{tag}{'_grad' if requires_grad else ''}"
                run(name, code, out_dir, index, env)
    for name, code in EXTRA.items():
        if not only or name in only:
            error = run(name, code, out_dir, index)
            if error is not None and name != "error":
                print(f"{name}: the code raised {error!r}", file=sys.stderr)
    with open(os.path.join(out_dir, "index.txt"), "w") as f:
        f.write("\n".join(index) + "\n")


if __name__ == "__main__":
    args = sys.argv[2:]
    option = {args[k]: args[k + 1] for k in range(0, len(args) - 1, 2)}
    only = option["--only"].split(",") if "--only" in option else None
    main(sys.argv[1], only, tuple(option["--devices"].split(",")) if "--devices" in option else DEVICES)
