"""Guards: what a captured graph assumed of its call, checked on every later call.

Note [Guards]
~~~~~~~~~~~~~
A graph recorded from one call is right for another call only if the other
call would have run the same ops: torch._dynamo writes down what the capture
relied on as guards and checks them before reusing a graph. descent's are
dynamo's, with dynamo's failure messages (what TORCH_LOGS=recompiles prints):
  - a tensor argument (dynamo's TENSOR_MATCH): its dtype, device,
    requires_grad, rank, sizes and strides, exactly: descent's graphs are
    static (dynamo's dynamic=False), so a new shape is a new graph;
  - a Python number, str, bool or None argument: its value (dynamo
    specializes on it: `L['s'] == 2.0`), since the graph holds it as a constant;
  - each tensor (or module) the function reads from its globals or its
    closure, by identity (dynamo's ID_MATCH: `w = descent.randn(3)` again
    rebinds the name, and the graph holds the old tensor); a tensor changed
    in place stays the same object, and the graph reads its new values;
  - the thread's grad mode (dynamo's GLOBAL_STATE guard): with grad off,
    autograd's kernels record nothing, and the replay must agree.
The check is one tuple comparison per call (the call's key, below); only a
miss works out which guard failed and says so.
"""
import descent

__all__ = ["call_key", "describe", "failures"]


def _tensor_key(t):
    return ("T", t.dtype, str(t.device), tuple(t.shape), tuple(t.stride()), bool(t.requires_grad))


def _dtype_name(d):  # descent.float32 -> Float, as c10 names scalar types in dynamo's messages
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(
                str(d).replace("descent.", "").replace("torch.", ""), str(d))


def call_key(args, watched=()):
    """The guarded facts of a call: per argument, a tensor's metadata or a constant's type and value; the
    identity of each tensor the function reads from its globals or closure (`watched`: (label, object)
    pairs, dynamo's ID_MATCH); then the grad mode. Two calls with equal keys pass the same guards. None for
    an argument no guard can hold."""
    key = []
    for a in args:
        if isinstance(a, descent.Tensor):
            key.append(_tensor_key(a))
        elif a is None or isinstance(a, (bool, int, float, str)):
            key.append(("C", type(a), a))
        else:
            return None
    for label, obj in watched:
        key.append(("ID", label, id(obj)))
    key.append(("grad_mode", descent.is_grad_enabled()))
    return tuple(key)


def describe(key, names):
    """The guards of a key, one line each, as dynamo prints its guards (TORCH_LOGS=guards)."""
    out = []
    for name, k in zip(list(names) + [None] * len(key), key[:-1]):
        src = f"L['{name}']"
        if k[0] == "ID":
            out.append(f"ID_MATCH: ___check_obj_id({k[1]}, {k[2]})")
        elif k[0] == "T":
            _, dtype, device, shape, stride, rg = k
            out.append(f"TENSOR_MATCH: check_tensor({src}, {_dtype_name(dtype)}, device={device}, "
                       f"requires_grad={rg}, size={list(shape)}, stride={list(stride)})")
        else:
            out.append(f"CONSTANT_MATCH: {src} == {k[2]!r}")
    out.append(f"GLOBAL_STATE: ___check_global_state() (grad_mode={key[-1][1]})")
    return out


def failures(key, new, names):
    """Why `new` (a call's key) fails the guards of `key`, in dynamo's words: a list of messages."""
    if len(key) != len(new):
        return [f"the call has {len(new) - 1} arguments where the graph had {len(key) - 1}"]
    out = []
    for name, old, cur in zip(list(names) + [None] * len(key), key[:-1], new[:-1]):
        src = f"L['{name}']"
        if old == cur:
            continue
        if old[0] == "ID":
            out.append(f"{old[1]} is not the object the graph captured (ID_MATCH: ___check_obj_id({old[1]}, {old[2]}))")
            continue
        if old[0] != cur[0] or (old[0] == "C" and old[1] is not cur[1]):
            out.append(f"{src} type changed: expected {_kind(old)}, actual {_kind(cur)}")
            continue
        if old[0] == "C":
            out.append(f"{src} == {old[2]!r}")
            continue
        _, dt0, dev0, sh0, st0, rg0 = old
        _, dt1, dev1, sh1, st1, rg1 = cur
        t = f"tensor '{src}'"
        if dt0 != dt1:
            out.append(f"{t} dtype mismatch. expected {_dtype_name(dt0)}, actual {_dtype_name(dt1)}")
        elif dev0 != dev1:
            out.append(f"{t} device mismatch. expected {dev0}, actual {dev1}")
        elif rg0 != rg1:
            out.append(f"{t} requires_grad mismatch. expected requires_grad={int(rg0)}")
        elif len(sh0) != len(sh1):
            out.append(f"{t} rank mismatch. expected {len(sh0)}, actual {len(sh1)}")
        elif sh0 != sh1:
            i = next(i for i in range(len(sh0)) if sh0[i] != sh1[i])
            out.append(f"{t} size mismatch at index {i}. expected {sh0[i]}, actual {sh1[i]}")
        else:
            i = next(i for i in range(len(st0)) if st0[i] != st1[i])
            out.append(f"{t} stride mismatch at index {i}. expected {st0[i]}, actual {st1[i]}")
    if key[-1] != new[-1]:
        out.append("GLOBAL_STATE changed: grad_mode ")
    return out


def _kind(k):
    return "Tensor" if k[0] == "T" else k[1].__name__
