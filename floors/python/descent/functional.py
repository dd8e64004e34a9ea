"""descent.functional, as torch/functional.py: the functions of torch that are
Python over ops (split, einsum, norm), and the few that descent writes in
Python where aten has an op whose result the op table cannot express
(chunk and allclose). Each calls ops of the table, so a trace shows those.

Note [split and chunk are narrow]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
aten's split, split_with_sizes and chunk return Tensor[], which descent's
schemas have no return type for: here they are written in Python, each
piece one aten::narrow (a slice view), with aten's checks and messages. The
pieces are the same views of the same memory; their grad_fn is
SliceBackward0 where torch's is SplitBackward0 (or
SplitWithSizesBackward0), with the same gradients.

Note [einsum is permute, mul and sum]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
aten::einsum takes a str, which descent's schemas have no type for; here it
is Python: each operand is permuted to one order of all the equation's
letters and viewed with size 1 for the letters it lacks, the operands are
multiplied (broadcasting), the letters that are not in the output are summed
out, and the result is permuted to the output's order. aten contracts pairs
with bmm instead; the values agree within the summation bound, and the
gradient comes from the parts. Ellipses and a letter repeated within one
operand (a diagonal) are not supported (NotImplementedError).
"""
from . import _C


def _split_sizes(size, split_size):
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0:
        if size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        return [0]
    return [min(split_size, size - start) for start in range(0, size, split_size)] or [0]


def split(tensor, split_size_or_sections, dim=0):
    """The tensor in pieces along dim: of split_size elements each (the last
    may be smaller), or of the sizes listed (Note [split and chunk are narrow])."""
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = dim + tensor.dim() if dim < 0 else dim
    if not 0 <= d < tensor.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-tensor.dim()}, {tensor.dim() - 1}], "
                         f"but got {dim})")
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        sizes = _split_sizes(size, split_size_or_sections)
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_C.narrow(tensor, d, start, s))
        start += s
    return tuple(pieces)


def chunk(input, chunks, dim=0):
    """The tensor in `chunks` pieces along dim (fewer when it does not divide), as aten's chunk: split into
    pieces of ceil(size / chunks) (Note [split and chunk are narrow])."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = input.shape[dim]
    return split(input, (size + chunks - 1) // chunks if size else 0, dim) if size else split(input, [0] * chunks, dim)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close (isclose, then all and item, as aten's allclose)."""
    return bool(_C.all(_C.isclose(input, other, rtol, atol, equal_nan)).item())


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm as torch/functional.py writes it for vectors: linalg_vector_norm with ord 2 for "fro", p for
    a number; "nuc" and matrix norms are not supported."""
    if out is not None:
        raise NotImplementedError("descent.norm: out= is not supported")
    if isinstance(dim, int):
        dim = [dim]
    if isinstance(p, str):
        if p != "fro" or (dim is not None and len(dim) > 2):
            raise NotImplementedError(f"descent.norm: p={p!r} is not supported (a vector norm only)")
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: aten::linalg_vector_norm (Note [vector_norm decomposes], composites.cpp)."""
    from . import ops
    if isinstance(dim, int):
        dim = [dim]
    return ops.aten.linalg_vector_norm(x, ord, dim, keepdim, dtype=dtype)


def einsum(equation, *operands):
    """Einstein summation (Note [einsum is permute, mul and sum])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "." in eq:
        raise NotImplementedError("descent.einsum: ellipsis ('...') is not supported")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    letters = []
    for term, op in zip(terms, operands):
        if not term.isalpha() and term != "":
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(term)} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        if len(term) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                               f"number of dimensions ({op.dim()}) for operand {terms.index(term)} and no ellipsis "
                               f"was given")
        if len(set(term)) != len(term):
            raise NotImplementedError("descent.einsum: a subscript repeated within one operand is not supported")
        letters += [c for c in term if c not in letters]
    if not arrow:  # implicit output: the letters seen once, in alphabetical order
        out = "".join(sorted(c for c in letters if sum(t.count(c) for t in terms) == 1))
    order = letters  # every letter, first seen first
    sizes = {}
    product = None
    for term, op in zip(terms, operands):
        for c, n in zip(term, op.shape):
            if c in sizes and sizes[c] != n and n != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c} has sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, n), n)
        present = [c for c in order if c in term]
        t = _C.permute(op, [term.index(c) for c in present]) if present else op
        t = t.reshape([op.shape[term.index(c)] if c in term else 1 for c in order])
        product = t if product is None else product * t
    summed = [i for i, c in enumerate(order) if c not in out]
    if summed:
        product = product.sum(summed)
    kept = [c for c in order if c in out]
    return _C.permute(product, [kept.index(c) for c in out]) if out else product
