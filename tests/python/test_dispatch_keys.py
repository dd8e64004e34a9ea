"""PyTorch's key model: the keys a tensor carries, the thread's include and
exclude sets, grad mode as a flag and inference mode as excluded keys, each
printed as torch prints them (../shared/fixtures/pytorch-h200/facts.json,
copied here as literals)."""
import descent
from descent import _C

import pytest

CPU_KEYS = "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)"  # facts.json: dispatch_keys_of.cpu
CUDA_KEYS = "DispatchKeySet(CUDA, ADInplaceOrView, AutogradCUDA, AutocastCUDA)"  # facts.json: dispatch_keys_of.cuda
SIM_KEYS = "DispatchKeySet(Sim, ADInplaceOrView, AutogradSim, AutocastSim)"  # the same shape, descent's own backend


def keys(t):  # a DispatchKeySet, as torch's, printed (Note [The thread's key sets as descent prints them])
    return str(_C._dispatch_keys(t))


def included():
    return str(_C._dispatch_tls_local_include_set())


def excluded():
    return str(_C._dispatch_tls_local_exclude_set())


def test_every_cpu_tensor_carries_pytorchs_keys():
    x = descent.ones(2, 3)
    assert keys(x) == CPU_KEYS
    assert keys(descent.arange(4)) == CPU_KEYS  # facts.json: cpu_int
    x.requires_grad_()
    assert keys(x) == CPU_KEYS  # facts.json: cpu_requires_grad
    assert keys(x[0]) == CPU_KEYS  # a view too


def test_the_threads_sets_start_as_c10s():
    assert included() == "DispatchKeySet(BackendSelect, ADInplaceOrView)"
    assert excluded() == "DispatchKeySet(AutocastCPU, AutocastCUDA, AutocastSim)"


def test_no_grad_is_a_flag_and_changes_no_key():
    x = descent.ones(2)
    assert descent.is_grad_enabled()
    with descent.no_grad():
        assert not descent.is_grad_enabled()
        assert keys(descent.ones(2)) == CPU_KEYS
        assert excluded() == "DispatchKeySet(AutocastCPU, AutocastCUDA, AutocastSim)"
        with descent.enable_grad():
            assert descent.is_grad_enabled()
        assert not descent.is_grad_enabled()
    assert descent.is_grad_enabled()
    assert keys(x) == CPU_KEYS

    @descent.no_grad()
    def f():
        return descent.is_grad_enabled()
    assert f() is False and descent.is_grad_enabled()
    with descent.set_grad_enabled(False):
        assert not descent.is_grad_enabled()


def test_inference_mode_excludes_the_autograd_keys():
    x = descent.ones(2)
    with descent.inference_mode():
        assert descent.is_inference_mode_enabled() and not descent.is_grad_enabled()
        y = descent.ones(2)
        assert y.is_inference() and not x.is_inference()
        assert keys(y) == "DispatchKeySet(CPU, AutocastCPU)"
        assert included() == "DispatchKeySet(BackendSelect)"
        # c10's autograd_dispatch_keyset: the Autograd bit with no backend bit, which prints as nothing
        # (torch adds "AutogradOther, AutogradNestedTensor", keys descent has not): torch 2.15 prints
        # DispatchKeySet(AutogradOther, AutogradNestedTensor, AutocastCPU, ...), has(Autograd) True,
        # has(AutogradCPU) False.
        ex = _C._dispatch_tls_local_exclude_set()
        assert str(ex) == "DispatchKeySet(AutocastCPU, AutocastCUDA, AutocastSim)"
        assert ex.has(_C.DispatchKey.Autograd) and not ex.has(_C.DispatchKey.AutogradCPU)
        assert ex != _C.DispatchKeySet(_C.DispatchKey.AutocastCPU) | _C.DispatchKeySet(_C.DispatchKey.AutocastCUDA) \
            | _C.DispatchKeySet(_C.DispatchKey.AutocastSim)  # the bit is there, unprinted
        assert not descent.ones(2, requires_grad=True).mul(2).requires_grad  # and no call records a graph
        with descent.inference_mode(False):
            assert descent.is_grad_enabled() and not descent.is_inference_mode_enabled()
    assert not descent.is_inference_mode_enabled()
    assert included() == "DispatchKeySet(BackendSelect, ADInplaceOrView)"
    try:
        with descent.inference_mode():
            raise KeyError("x")
    except KeyError:
        pass
    assert descent.is_grad_enabled() and not descent.is_inference_mode_enabled()  # restored by an exception too


def test_the_trace_shows_the_autograd_check_and_adinplaceorview_falling_through():
    x = descent.ones(2)
    with descent.trace() as t:
        x + x
    dispatch = [s for s in t.result.spans() if s["floor_name"] == "dispatch"]
    assert len(dispatch) == 2, t.result.format_tree()
    first, below = dispatch[0]["args"], dispatch[1]["args"]
    assert first["keyset"] == "CPU|BackendSelect|ADInplaceOrView|AutogradCPU"
    assert first["kernel"] == "AutogradCPU"               # every op with a derivative pays this check
    assert first["fallthrough"] == "BackendSelect|ADInplaceOrView"
    check = next(s for s in t.result.spans() if s["floor_name"] == "autograd")
    assert check["args"]["graph"] == "none: no input requires grad"
    assert below["redispatch"] and below["kernel"] == "CPU"


def test_bad_arguments():
    import pytest
    with pytest.raises(TypeError):
        descent.set_grad_enabled(1)
    with pytest.raises(TypeError):
        descent.inference_mode("yes")
    with pytest.raises(TypeError):
        _C._dispatch_keys(3)


def test_a_device_tensor_carries_its_backends_keys():
    """A device tensor's keys are the CPU's with its own backend in each place,
    as torch's CUDA tensors have CUDA, AutogradCUDA and AutocastCUDA."""
    x = descent.ones(2, device="sim:0")
    assert keys(x) == SIM_KEYS
    assert keys(x + 1) == SIM_KEYS
    assert keys(x[0]) == SIM_KEYS
    assert keys(descent.ones(2).to("sim:0")) == SIM_KEYS
    assert keys(x.cpu()) == CPU_KEYS
    y = descent.ones(2, device="sim:0", requires_grad=True)
    assert keys(y) == SIM_KEYS
    with descent.inference_mode():
        assert keys(descent.ones(2, device="sim:0")) == "DispatchKeySet(Sim, AutocastSim)"


def test_a_device_call_dispatches_to_its_backends_autograd_key():
    x = descent.ones(2, device="sim:0")
    with descent.trace() as t:
        x + x
    first = next(s for s in t.result.spans() if s["floor_name"] == "dispatch")["args"]
    assert first["keyset"] == "Sim|BackendSelect|ADInplaceOrView|AutogradSim"
    assert first["kernel"] == "AutogradSim"


@pytest.mark.skipif(not descent.cuda.is_available(), reason="no CUDA device here")
def test_a_cuda_tensor_carries_pytorchs_keys():
    x = descent.ones(2, device="cuda")
    assert keys(x) == CUDA_KEYS  # facts.json: dispatch_keys_of.cuda
    x.requires_grad_()
    assert keys(x) == CUDA_KEYS  # facts.json: cuda_requires_grad
    assert keys(descent.ones(2).cuda()) == CUDA_KEYS
