"""descent.compile on cuda: each fused pointwise group CUDA C++ generated from its IR and compiled by NVRTC
(Note [A fused kernel on cuda through NVRTC], floors/kernels/fused/cuda_fused.h). NVRTC needs no GPU: the
generated sources are compiled wherever descent was built with the CUDA toolkit; what launches them runs
only where there is a GPU, and skips elsewhere."""
import numpy as np
import pytest

import descent
from descent import _C
from descent._compile import device_kernel, verify

BUILT = _C._fused_cuda_built()
GPU = BUILT and descent.cuda.is_available()
needs_nvrtc = pytest.mark.skipif(not BUILT, reason="descent was built without the CUDA toolkit (no NVRTC)")
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA device")


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def bits(t):
    a = np.asarray(t.cpu())
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def chain(x, b):
    return ((x + b).relu() * 0.1).sigmoid() * x - b.exp()


def eight(x):  # the chain of 8 pointwise ops
    return (((x * 1.5).sin() + 0.5).tanh() * 2.0).abs().sqrt().sigmoid()


def cpu_kernels(fn, *args):
    cf = descent.compile(fn)
    cf(*args)
    return cf.kernels


@needs_nvrtc
@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_the_generated_source_of_every_suite_case_compiles_with_nvrtc(dtype):
    # The suite's functions' groups, as the CPU fuses them (cuda takes their pointwise ones), in CUDA C++.
    descent.manual_seed(0)
    n = 0
    for name, fn, make in verify._suite_cases():
        args = [a.detach().to(dtype=dtype) if a.dtype.is_floating_point else a for a in make()]
        with descent.no_grad():
            for k in cpu_kernels(fn, *args):
                if k.reduction is not None:
                    continue
                src = device_kernel.cuda_source(k.ir, k.shape, str(k.dtype).split(".")[-1], "fused_k")
                assert 'extern "C" __global__ void fused_k(' in src and "--fmad=false" in src
                assert _C._fused_nvrtc_compile(src, 90) > 0, name
                n += 1
    assert n >= 5


@needs_nvrtc
def test_constants_and_broadcast_inputs_in_the_source():
    ir = ("%in0 = input float32 [4, 5] stride [5, 1]\n%in1 = input float32 [5] stride [1]\n%t0 = add %in0 %in1\n"
          "%t1 = div %t0 const inf\n%t2 = mul %t1 const -0.1\nout0 = %t2\nout1 = %t0")
    src = device_kernel.cuda_source(ir, [4, 5], "float32", "fused_poi_add_div_mul_0")
    assert "const T in1 = p1[(i % 5) * 1];" in src and "T(-0.1)" in src
    assert "__longlong_as_double(9218868437227405312ll)" in src  # inf, by its bits
    assert "o0[i] = t2;" in src and "o1[i] = t0;" in src
    k = device_kernel.CudaKernel.__new__(device_kernel.CudaKernel)
    k.source = src
    assert k.read_ir() == ir  # what the verifier reads: the IR the compiled source carries
    assert _C._fused_nvrtc_compile(src, 90) > 0


@needs_nvrtc
def test_nvrtc_errors_are_shown():
    with pytest.raises(RuntimeError, match=r"NVRTC failed to compile the fused kernel \(NVRTC_ERROR_COMPILATION\)"):
        _C._fused_nvrtc_compile('extern "C" __global__ void k() { undeclared(); }', 90)
    with pytest.raises(ValueError, match="no CUDA expression for the IR's op gelu"):
        device_kernel.cuda_source("%in0 = input float32 [3] stride [1]\n%t0 = gelu %in0\nout0 = %t0", [3],
                                  "float32", "k")


@pytest.mark.skipif(BUILT, reason="descent was built with the CUDA toolkit")
def test_without_the_toolkit_nvrtc_is_named():
    with pytest.raises(RuntimeError, match="built without the CUDA toolkit"):
        _C._fused_nvrtc_compile("", 90)


@needs_nvrtc
@pytest.mark.skipif(GPU, reason="a CUDA device is here")
def test_a_load_without_a_gpu_raises():
    with pytest.raises(RuntimeError):
        _C._fused_cuda_load('extern "C" __global__ void k(long long n) {}', "k", 0, 0)
    with pytest.raises(ValueError, match="no fused cuda kernel has handle 12345"):
        _C._fused_cuda_launch(12345, [], 1, 0)


# [SECTION] On the GPU (the lead runs these on the GPU machine) ---------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_a_chain_is_one_nvrtc_kernel_bitwise_eager(dtype):
    descent.manual_seed(3)
    x, b = descent.randn(600, 70, dtype=dtype, device="cuda:0"), descent.randn(70, dtype=dtype, device="cuda:0")
    cf = descent.compile(chain)
    assert np.array_equal(bits(cf(x, b)), bits(chain(x, b)))
    (k,) = cf.kernels
    assert k.backend == "cuda" and k.device == "cuda:0" and k.verdict.proved
    assert k.name.startswith("fused_poi_add_relu_mul_sigmoid_mul_sub_")
    with descent.trace() as t:
        cf(x, b)
        descent.cuda.synchronize()
    spans = t.result.spans()
    launches = [s for s in spans if s["name"] == "cudaLaunchKernel"]
    assert [s["args"]["kernel"] for s in launches] == [k.name]  # one launch, floor 8's span around it
    assert [s["name"] for s in spans if s["floor"] == 9] == [k.name]  # CUPTI's kernel: the one that ran


@needs_gpu
def test_a_reduction_follows_its_fused_chain_on_cuda():
    descent.manual_seed(4)
    x = descent.randn(300, 700, device="cuda:0")
    f = lambda x: (x.exp() * 2.0).sum(1)  # noqa: E731
    cf = descent.compile(f)
    assert np.array_equal(bits(cf(x)), bits(f(x)))
    (k,) = cf.kernels
    assert k.reduction is None and k.ops == ["aten.exp.default", "aten.mul.Tensor"]


@needs_gpu
def test_the_verifier_suite_holds_on_cuda():
    rows = verify.suite(devices=("cuda:0",))
    failed = [r for r in rows if not r[1]]
    assert not failed, verify.format_suite(failed)
    assert all(r[0].endswith(" on cuda:0") for r in rows)


@needs_gpu
def test_eight_ops_first_compile_and_cache_hit():
    # The targets: first-call compile <= 50 ms on cuda (NVRTC and the load); printed for the record.
    x = descent.randn(1 << 20, device="cuda:0")
    cf = descent.compile(eight)
    assert np.array_equal(bits(cf(x)), bits(eight(x)))
    (k,) = cf.kernels
    print(f"\n8-op chain: NVRTC + load {k.compile_s * 1e3:.1f} ms")
    assert k.compile_s < 0.5
    again = descent.compile(eight)
    again(x)
    assert again.kernels[0].cache_hit  # the same source on the same device: NVRTC runs once
