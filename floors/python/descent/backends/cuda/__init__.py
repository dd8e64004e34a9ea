"""descent.backends.cuda, as torch.backends.cuda: `matmul.allow_tf32` says
whether a float32 product on a CUDA device may run on tensor cores in TF32
(off unless set, as in PyTorch). See Note [TF32 matmul] in
floors/kernels/ladder/cuda_matmul_4_wmma.cu: the kernel span then says math=tf32,
and the result differs from float32's in its last bits, by design."""
from descent import _C


class cuBLASModule:
    def __getattr__(self, name):
        if name == "allow_tf32":
            return _C._get_cublas_allow_tf32()
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            return _C._set_cublas_allow_tf32(value)
        raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()
