"""repr(tensor) as PyTorch prints it, character for character.

The rules are those of PyTorch's torch/_tensor_str.py, restated here:

- Which elements: all of them, unless the tensor has more than THRESHOLD;
  then each dimension longer than 2 * EDGE_ITEMS keeps EDGE_ITEMS at each end
  and shows '...' in between.
- How they look: one mode and one width for the whole tensor, chosen from the
  elements shown (see _Formatter). Every element is right-aligned to the width.
- Layout: a 1-D row wraps so that no line passes LINE_WIDTH; the rows of a
  2-D block are on lines of their own, and the blocks of a 3-D tensor are
  separated by one blank line (two for 4-D, and so on).
- Suffixes: ', dtype=...' unless the dtype is float32, int64 or bool (which
  the printed values already tell apart), ', size=...' for an empty tensor
  that is not 1-D, and an empty tensor always names a dtype other than float32.
"""
import math

from . import _C

PRECISION = 4      # digits after the point
THRESHOLD = 1000   # elements; more than this and the tensor is summarized
EDGE_ITEMS = 3     # elements kept at each end of a summarized dimension
LINE_WIDTH = 80    # characters in a line, for wrapping rows and suffixes
PREFIX = "tensor("


# [SECTION] Which elements are shown ---------------------------------------------------

def _summarized(t):
    """t.tolist(), except that a dimension longer than 2 * EDGE_ITEMS keeps only
    its ends, with ... (Python's Ellipsis) where the middle was."""
    n = t.shape[0]
    if t.dim() == 1:
        if n <= 2 * EDGE_ITEMS:
            return t.tolist()
        return t[:EDGE_ITEMS].tolist() + [...] + t[n - EDGE_ITEMS:].tolist()
    if n <= 2 * EDGE_ITEMS:
        return [_summarized(t[i]) for i in range(n)]
    head = [_summarized(t[i]) for i in range(EDGE_ITEMS)]
    tail = [_summarized(t[i]) for i in range(n - EDGE_ITEMS, n)]
    return head + [...] + tail


def _flatten(nested):
    """The numbers in nested lists, skipping the ... markers."""
    if isinstance(nested, list):
        for x in nested:
            yield from _flatten(x)
    elif nested is not ...:
        yield nested


# [SECTION] How each element looks -----------------------------------------------------

class _Formatter:
    """One mode and one width for every element of a tensor.

    bool and the integers print as Python prints them. A floating tensor looks at its
    nonzero finite values only (zeros, nan and inf never change the choice):
    - "int" when all are whole numbers: '3.' (nan and inf get no point);
    - "sci" when the largest magnitude is more than 1000 times the smallest,
      or more than 1e8, or (unless all are whole) one is below 1e-4: '1.0000e-05';
    - "fixed" otherwise: '0.5000'.
    The width is that of the widest of those values (at least 1); an element
    wider than that (a nan, -inf, or a zero in sci mode) simply sticks out.
    """

    def __init__(self, dtype, values):
        self.floating = dtype.is_floating_point
        if not self.floating:
            self.mode = "str"
            self.width = max((len(str(v)) for v in values), default=1)
            return
        shown = [v for v in values if math.isfinite(v) and v != 0]
        self.mode = "int"
        if shown:
            largest = max(abs(v) for v in shown)
            smallest = min(abs(v) for v in shown)
            whole = all(v == math.ceil(v) for v in shown)
            spread = largest / smallest > 1000 or largest > 1e8
            if spread or (not whole and smallest < 1e-4):
                self.mode = "sci"
            elif not whole:
                self.mode = "fixed"
        self.width = max((len(self._text(v)) for v in shown), default=1)

    def _text(self, v):
        if self.mode == "str":
            return str(v)
        if self.mode == "sci":
            return f"{v:.{PRECISION}e}"
        if self.mode == "fixed":
            return f"{v:.{PRECISION}f}"
        return f"{v:.0f}." if math.isfinite(v) else f"{v:.0f}"

    def format(self, v):
        return self._text(v).rjust(self.width)


# [SECTION] Layout ---------------------------------------------------------------------

def _row(values, fmt, indent):
    """A 1-D row whose '[' sits at column indent, wrapped to LINE_WIDTH."""
    cells = [" ..." if v is ... else fmt.format(v) for v in values]
    per_line = max(1, (LINE_WIDTH - indent) // (fmt.width + len(", ")))
    lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _block(nested, dims, fmt, indent):
    """A (sub)tensor of dims dimensions whose '[' sits at column indent."""
    if dims == 0:
        return fmt.format(nested)
    if dims == 1:
        return _row(nested, fmt, indent)
    parts = ["..." if x is ... else _block(x, dims - 1, fmt, indent + 1) for x in nested]
    # A 2-D block puts its rows on lines of their own; each dimension above adds a blank line.
    return "[" + ("," + "\n" * (dims - 1) + " " * (indent + 1)).join(parts) + "]"


def _with_suffixes(text, suffixes):
    """Appends ', suffix' for each suffix, starting a new line where the line would
    pass LINE_WIDTH. Like PyTorch, the line the data ends on counts two characters
    more than it has."""
    used = len(text) - (text.rfind("\n") + 1) + 2
    for s in suffixes:
        if used + len(", ") + len(s) > LINE_WIDTH:
            text += ",\n" + " " * len(PREFIX) + s
            used = len(PREFIX) + len(s)
        else:
            text += ", " + s
            used += len(", ") + len(s)
    return text + ")"


# [SECTION] repr -----------------------------------------------------------------------

def tensor_repr(t):
    suffixes = []
    owner = t  # grad_fn and requires_grad are read from t; the values from a host copy
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
        # One wait and one copy for the whole tensor, named for the trace (Note
        # [Reading a device tensor waits], floors/binding/device_object.cpp).
        t = t.detach()._host("print")
    if t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not _C.float32:  # no values to tell an empty int64 or bool tensor apart
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        values = _summarized(t) if t.dim() > 0 and t.numel() > THRESHOLD else t.tolist()
        fmt = _Formatter(t.dtype, list(_flatten(values)))
        body = _block(values, t.dim(), fmt, len(PREFIX))
        if t.dtype not in (_C.float32, _C.int64, _C.bool):
            suffixes.append(f"dtype={t.dtype!r}")
    # As torch prints them: a result autograd recorded names its node, a leaf says it requires grad.
    if owner.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(owner.grad_fn).__name__}>")   # the class's name, as torch's _tensor_str
    elif owner.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(PREFIX + body, suffixes)
