"""descent.linalg, as torch.linalg: the vector norms (the matrix functions are not there yet)."""
from .functional import vector_norm


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm of a vector (or of A flattened, for ord None): vector_norm; matrix norms are not supported."""
    if isinstance(dim, int):
        dim = [dim]
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str) or A.dim() != 1 and (dim is None or len(dim) != 1):
        raise NotImplementedError("descent.linalg.norm: matrix norms are not supported (vector_norm is)")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


__all__ = ["norm", "vector_norm"]
