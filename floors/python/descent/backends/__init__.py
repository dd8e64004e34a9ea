"""descent.backends, as torch.backends: switches of the backends' kernels.
Only descent.backends.cuda.matmul.allow_tf32 exists (Note [TF32 matmul])."""
from descent.backends import cuda  # noqa: F401
