"""repr(tensor) as PyTorch prints it: tensor([[1., 2.], [3., 4.]]), dtype and
device suffixes, and '...' for large tensors."""
import math

from . import _C

_EDGE = 3          # elements kept at each end of a summarized dimension
_THRESHOLD = 1000  # numel above which tensors are summarized


def _format_floats(values):
    finite = [v for v in values if math.isfinite(v)]
    if finite and all(v == int(v) for v in finite) and max(abs(v) for v in finite) < 1e8:
        return lambda v: (f"{v:.0f}." if math.isfinite(v) else _special(v))
    nonzero = [abs(v) for v in finite if v != 0]
    if nonzero and (max(nonzero) >= 1e8 or min(nonzero) < 1e-4 and max(nonzero) / min(nonzero) > 1e3):
        return lambda v: (f"{v:.4e}" if math.isfinite(v) else _special(v))
    return lambda v: (f"{v:.4f}" if math.isfinite(v) else _special(v))


def _special(v):
    return "nan" if v != v else ("inf" if v > 0 else "-inf")


def _collect(t, summarize):
    """The elements to print, as nested lists (None marks '...')."""
    if t.dim() == 0:
        return t.item()
    n = t.shape[0]
    if summarize and n > 2 * _EDGE:
        idx = list(range(_EDGE)) + [None] + list(range(n - _EDGE, n))
    else:
        idx = list(range(n))
    return [None if i is None else _collect(t[i], summarize) for i in idx]


def _flatten(x, out):
    if isinstance(x, list):
        for e in x:
            _flatten(e, out)
    elif x is not None:
        out.append(x)
    return out


def _render(x, fmt, width, indent):
    if not isinstance(x, list):
        return fmt(x).rjust(width)
    if not x:
        return "[]"
    if not isinstance(x[0], list) and not (x[0] is None and len(x) > 1 and isinstance(x[1], list)):
        return "[" + ", ".join("..." if e is None else _render(e, fmt, width, indent) for e in x) + "]"
    sep = ",\n" + " " * (indent + 1)
    parts = ["..." if e is None else _render(e, fmt, width, indent + 1) for e in x]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t):
    summarize = t.numel() > _THRESHOLD
    data = _collect(t, summarize)
    flat = _flatten(data, [])
    if t.dtype is _C.bool:
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    elif t.dtype is _C.int64:
        fmt = str
    else:
        fmt = _format_floats(flat)
    width = max((len(fmt(v)) for v in flat), default=0)
    body = "[]" if t.numel() == 0 and t.dim() > 0 else _render(data, fmt, width, len("tensor("))
    suffix = []
    if t.numel() == 0 and t.dim() != 1:
        suffix.append(f"size={tuple(t.shape)}")
    if t.dtype not in (_C.float32, _C.int64, _C.bool):
        suffix.append(f"dtype=descent.{t.dtype!r}".replace("descent.descent.", "descent."))
    if str(t.device) != "cpu":
        suffix.append(f"device='{t.device}'")
    if t.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
