"""The values the app's values view draws (ui/values_model.h): after each
statement descent.tracing.run runs, the small tensors the code's namespace
can reach, each storage as its cells and each tensor as its window onto them.

Note [Recording the values]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
A view shares its base's memory: `y = x.t()` has cells of its own in no
place, only sizes, strides and a storage offset into x's. To draw that, the
app needs, after each statement, every tensor the user's names reach (a
name, an item of a list, tuple or dict held by a name, a tensor's .grad, a
view's ._base), grouped by the storage it looks into. Python cannot name a
storage here (descent has no untyped_storage()), so a storage is its first
byte, data_ptr() less storage_offset() elements, and its extent the farthest
cell any tensor on it reaches. Its values come from each tensor's tolist():
element (i, j, ...) of a tensor is cell offset + i*stride[0] + j*stride[1] +
... of its storage, so the tensors on a storage fill its cells between them
(a cell no tensor reaches is unknown, "?"); an expand's stride 0 sends many
elements to one cell. Nothing of this makes a span: data_ptr, stride,
storage_offset, _version, _base and a CPU tensor's tolist() run no op, and
tracing.run switches its Python-function hook off around the recorder
(so this module's functions are not floor-1 spans). A device tensor's values
are not read (reading them is a copy to the host, floors 7 and 8 in the
trace): its cells are drawn empty, with the reason.

A freed storage's address can come back for the next allocation, so the
same first byte is the same storage only when one tensor object holds it in
both snapshots, or its version counter (shared by the storage's views, as
torch's) went up; otherwise it is a new one (its id gets "#2", "#3", ...),
and the app does not light its cells as an in-place write. The sizes are
capped (kept in the trace's metadata "values.snapshots" as JSON): at most
MAX_SNAPSHOTS statements, MAX_TENSORS tensors and MAX_CELLS cells of a
storage each; past a cap the snapshot says how many it left out.
"""
import json

from . import _C

MAX_SNAPSHOTS = 100  # statements recorded (the first 100 of a script; the rest say nothing)
MAX_TENSORS = 24     # tensors per snapshot
MAX_CELLS = 256      # cells of a storage whose values are kept (a bigger one shows its first 256)
MAX_READ = 4096      # elements of a tensor read with tolist(); a bigger one is not read


def _flat(v, out):
    if isinstance(v, list):
        for x in v:
            _flat(x, out)
    else:
        out.append(v)


def _text(v):
    """A cell's value as the view shows it: short, and valid JSON whatever it is (nan, inf)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return f"{v:.1f}" if v.is_integer() and abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


def _is_tensor(v):
    return isinstance(v, _C.TensorBase)


def _reachable(env):
    """(name, tensor) for every tensor the namespace reaches, names first, in the namespace's order."""
    seen, out = set(), []

    def add(name, t):
        if id(t) in seen or len(out) >= 4 * MAX_TENSORS:
            return
        seen.add(id(t))
        out.append((name, t))

    for name, v in list(env.items()):
        if name.startswith("__"):
            continue
        if _is_tensor(v):
            add(name, v)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v[:16]):
                if _is_tensor(x):
                    add(f"{name}[{i}]", x)
        elif isinstance(v, dict):
            for k, x in list(v.items())[:16]:
                if _is_tensor(x):
                    add(f"{name}[{k!r}]", x)
    for name, t in list(out):  # what the names' tensors hold: gradients and bases
        g = t.grad if t.is_leaf else None  # a non-leaf's .grad warns, as torch's does
        if g is not None:
            add(f"{name}.grad", g)
        b = t._base
        if b is not None:
            add(f"{name}._base", b)
    return out


class Recorder:
    """The snapshots of one run: the first before its first statement, then one after each."""

    def __init__(self, env):
        self.env = env
        self.snapshots = []
        self.left_out = 0      # statements past MAX_SNAPSHOTS
        self.broken = False    # a snapshot failed (tracing.run then keeps none)
        self._last = {}    # storage key -> (generation, version, ids of the tensor objects on it)
        self._generation = {}
        self.snapshot("")

    def snapshot(self, statement, raised=False):
        if len(self.snapshots) > MAX_SNAPSHOTS:
            self.left_out += 1
            return
        tensors, storages, now = [], {}, {}
        found = _reachable(self.env)
        for name, t in found[:MAX_TENSORS]:
            itemsize = t.dtype.itemsize
            offset = t.storage_offset()
            first = t.data_ptr() - offset * itemsize
            sizes, strides = list(t.shape), list(t.stride())
            device = str(t.device)
            key = (first, device)
            version = t._version
            n = 1
            for s in sizes:
                n *= s
            end = offset + sum((s - 1) * st for s, st in zip(sizes, strides)) + 1 if n > 0 else offset
            st = storages.get(key)
            if st is None:
                st = storages[key] = {"first": first, "dtype": str(t.dtype).replace("descent.", ""),
                                      "itemsize": itemsize, "device": device, "cells": 0, "values": {},
                                      "why": ""}
                now[key] = (version, set())
            st["cells"] = max(st["cells"], end)
            now[key] = (max(now[key][0], version), now[key][1] | {id(t)})
            if device != "cpu":
                st["why"] = f"on {device}: its values are not read (reading them copies them to the host)"
            elif n > MAX_READ:
                st["why"] = st["why"] or f"{name} has {n} elements; values are read from tensors of at most {MAX_READ}"
            else:
                flat = []
                _flat(t.tolist(), flat)
                index = [0] * len(sizes)
                for v in flat:
                    cell = offset + sum(i * s for i, s in zip(index, strides))
                    if cell < MAX_CELLS:
                        st["values"][cell] = _text(v)
                    for d in range(len(sizes) - 1, -1, -1):  # the next index, row-major
                        index[d] += 1
                        if index[d] < sizes[d]:
                            break
                        index[d] = 0
            base = t._base
            tensors.append({"name": name, "key": key, "sizes": sizes, "strides": strides, "offset": offset,
                            "version": version, "requires_grad": bool(t.requires_grad),
                            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else "",
                            "base": next((m for m, u in found if base is not None and u is base), "")})
        ids = {}
        for key, (version, objects) in now.items():
            last = self._last.get(key)
            gen = self._generation.get(key, 1)
            if last is not None and not (objects & last[2]) and version <= last[1]:
                gen += 1  # the address came back for a new storage
            self._generation[key] = gen
            self._last[key] = (gen, version, objects)
            ids[key] = f"{key[1]}:0x{key[0]:x}" + (f"#{gen}" if gen > 1 else "")
        for key in list(self._last):
            if key not in now:
                del self._last[key]  # freed, or no name reaches it: a storage there later is new
        out_storages = []
        for key, st in storages.items():
            cells = st["cells"]
            # none read (a device's, or too big): no values, and `why` says so; else "?" where no tensor reaches
            values = [st["values"].get(i, "?") for i in range(min(cells, MAX_CELLS))] if st["values"] else []
            out_storages.append({"id": ids[key], "dtype": st["dtype"], "itemsize": st["itemsize"],
                                 "device": st["device"], "cells": cells, "values": values,
                                 "why": st["why"]})
        for t in tensors:
            t["storage"] = ids[t.pop("key")]
        self.snapshots.append({"statement": statement, "raised": raised, "tensors": tensors,
                               "storages": out_storages, "left_out": max(0, len(found) - MAX_TENSORS)})

    def json(self):
        return json.dumps({"snapshots": self.snapshots, "statements_left_out": self.left_out},
                          separators=(",", ":"))
