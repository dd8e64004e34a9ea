"""descent.library and descent.ops, as torch.library and torch.ops: Python kernels at a dispatch key, over a
built-in kernel and for operators defined from Python, calls by an operator's name, and what the trace
shows of them (Note [Python kernels], floors/binding/library_object.cpp)."""
import gc
import itertools
import threading

import pytest

import descent
from descent.library import Library
from descent.lessons import runner

_names = itertools.count()


def fresh(prefix="op"):
    """An operator name no other test has defined (definitions last as long as the process)."""
    return f"{prefix}{next(_names)}"


def spans(t, floor=None, name=None):
    return [s for s in t.result.spans() if (floor is None or s["floor"] == floor) and (name is None or s["name"] == name)]


def test_a_python_kernel_replaces_the_cpu_add_until_the_library_goes():
    x = descent.tensor([1.0, 2.0])
    seen = []

    def my_add(self, other, alpha):
        seen.append((self is x, other.tolist(), alpha))
        return descent.sub(self, other, alpha=-alpha)

    lib = Library("aten", "IMPL")
    lib.impl("add.Tensor", my_add, "CPU")
    try:
        with descent.trace() as t:
            y = x + 10
        assert y.tolist() == [11.0, 12.0] and seen == [(True, 10, 1)]  # 10: a wrapped number, 0-dim  # the caller's very tensor, the defaults
        kernel, = spans(t, 5, "aten::add")
        assert kernel["args"] == {"variant": "python", "python": "test_a_python_kernel_replaces_the_cpu_add_until_"
                                                                    "the_library_goes.<locals>.my_add"}
        redispatch = [s for s in spans(t, 3, "aten::add") if s["args"].get("redispatch")]
        assert redispatch[-1]["args"]["kernel"] == "CPU"
        # Below autograd: the ops the kernel calls are not recorded again (the Autograd keys are excluded).
        assert "Autograd" not in spans(t, 3, "aten::sub")[0]["args"]["keyset"]
        assert descent.add(x, x, alpha=2).tolist() == [3.0, 6.0]  # every CPU add, by any path
    finally:
        lib._destroy()
    with descent.trace() as t:
        assert (x + 10).tolist() == [11.0, 12.0]
    assert spans(t, 5, "aten::add")[0]["args"]["variant"] != "python" and len(seen) == 2


def test_the_built_in_comes_back_for_typed_calls_too():
    """A composite calls its ops through the typed path; with a Python kernel there it boxes, and after the
    library goes the built-in's typed form is back."""
    a, b = descent.ones(2, 3), descent.ones(3, 2)
    calls = []

    def my_mm(self, mat2):
        calls.append(1)
        return descent.ones(self.shape[0], mat2.shape[1]) * 7
    lib = Library("aten", "IMPL")
    lib.impl("mm", my_mm, "CPU")
    assert (a @ b).tolist() == [[7.0, 7.0], [7.0, 7.0]] and calls == [1]  # matmul -> mm, a composite's call
    lib._destroy()
    assert (a @ b).tolist() == [[3.0, 3.0], [3.0, 3.0]] and calls == [1]


def test_define_impl_and_call_through_ops():
    name = fresh("twice")
    lib = Library("lessonlib", "DEF")
    assert lib.define(f"{name}(Tensor x, *, Scalar factor=2) -> Tensor") == f"lessonlib::{name}"
    lib.impl(name, lambda x, factor: x * factor, "CPU")
    op = getattr(descent.ops.lessonlib, name)
    x = descent.tensor([1.0, 3.0])
    with descent.trace() as t:
        assert op(x).tolist() == [2.0, 6.0]
    assert op(x, factor=5).tolist() == [5.0, 15.0]
    assert getattr(op, "default")(x).tolist() == [2.0, 6.0]
    binding, = spans(t, 2, name)
    assert binding["args"]["overload"] == f"lessonlib::{name}"
    assert spans(t, 5, f"lessonlib::{name}")[0]["args"]["variant"] == "python"
    with pytest.raises(TypeError, match=name):
        op(x, 1, 2)
    with pytest.raises(ValueError, match="already defined"):
        lib.define(f"{name}(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match="no kernel is registered"):
        op(x.to("sim:0"))  # a key without a kernel, in PyTorch's words
    lib._destroy()


def test_ops_calls_the_tables_operators_by_name():
    x = descent.tensor([1.0, 2.0])
    assert descent.ops.aten.add(x, x).tolist() == [2.0, 4.0]
    assert descent.ops.aten.add.Tensor(x, x, alpha=3).tolist() == [4.0, 8.0]
    assert descent.ops.aten.sum.default(x).item() == 3.0
    assert descent.ops.aten.max.dim(descent.tensor([[1.0, 5.0]]), 1).values.tolist() == [5.0]
    with pytest.raises(ValueError, match="no operator named 'nolib::nothing'"):
        descent.ops.nolib.nothing(x)


def test_errors_of_a_python_kernel_reach_the_caller_as_they_are():
    name = fresh("fails")
    lib = Library("lessonlib", "DEF")
    lib.define(f"{name}(Tensor x) -> Tensor")

    def broken(x):
        raise ValueError("the kernel's own words")
    lib.impl(name, broken, "CPU")
    with pytest.raises(ValueError, match="the kernel's own words"):
        getattr(descent.ops.lessonlib, name)(descent.ones(1))
    other = Library("lessonlib", "FRAGMENT")
    other.impl(name, lambda x: 5, "Sim")
    with pytest.raises(TypeError, match="returned int where a Tensor belongs"):
        getattr(descent.ops.lessonlib, name)(descent.ones(1, device="sim:0"))
    with pytest.raises(ValueError, match="already has a Python kernel at CPU"):
        other.impl(name, broken, "CPU")
    with pytest.raises(ValueError, match="no dispatch key named 'GPU'"):
        other.impl(name, broken, "GPU")
    with pytest.raises(ValueError, match="no operator named 'aten::nonesuch'"):
        Library("aten", "IMPL").impl("nonesuch", broken, "CPU")
    with pytest.raises(RuntimeError, match="IMPL library"):
        Library("aten", "IMPL").define("x(Tensor a) -> Tensor")
    lib._destroy()
    other._destroy()


def test_a_kernel_on_the_simulated_device_and_from_a_thread():
    x = descent.tensor([1.0, 2.0], device="sim:0")
    lib = Library("aten", "IMPL")
    lib.impl("neg", lambda self: self * -2, "Sim")
    try:
        assert (-x).tolist() == [-2.0, -4.0]
        out = []
        t = threading.Thread(target=lambda: out.append((-x).tolist()))
        t.start()
        t.join(30)
        assert out == [[-2.0, -4.0]]
        assert (-x.cpu()).tolist() == [-1.0, -2.0]  # the CPU key keeps its own kernel
    finally:
        lib._destroy()
    assert (-x).tolist() == [-1.0, -2.0]


def test_a_collected_library_takes_its_kernels_with_it():
    x = descent.ones(2)
    lib = Library("aten", "IMPL")
    lib.impl("neg", lambda self: self * 5, "CPU")
    assert (-x).tolist() == [5.0, 5.0]
    del lib
    gc.collect()
    assert (-x).tolist() == [-1.0, -1.0]


def test_an_endless_python_kernel_is_stopped_by_the_time_limit():
    name = fresh("spins")
    lib = Library("lessonlib", "DEF")
    lib.define(f"{name}(Tensor x) -> Tensor")

    def spin(x):
        while True:
            pass
    lib.impl(name, spin, "CPU")
    with pytest.raises(runner.LimitExceeded):
        with runner.time_limit(0.3):
            getattr(descent.ops.lessonlib, name)(descent.ones(1))
    lib._destroy()


def test_a_fallback_runs_for_every_operator_without_a_kernel_at_its_key():
    """Library("_", "IMPL").fallback(fn, key): an operator with no kernel of its own at the key runs
    fn(op, *args), op the operator; one with a kernel of its own keeps it; _destroy takes it away."""
    seen = []

    def tripled_on_the_host(op, *args):
        seen.append(repr(op))
        return args[0].cpu().mul(3).to(args[0].device)

    mine = Library("fallbacks_test", "DEF")
    mine.define("triple(Tensor x) -> Tensor")
    mine.impl("triple", lambda x: x * 3, "CPU")
    x = descent.ones(2, device="sim:0")
    with pytest.raises(NotImplementedError, match="Could not run 'fallbacks_test::triple' with arguments from the "
                                                  "'Sim' backend"):
        descent.ops.fallbacks_test.triple(x)
    lib = Library("_", "IMPL")
    lib.fallback(tripled_on_the_host, "Sim")
    with descent.trace() as t:
        y = descent.ops.fallbacks_test.triple(x)
    assert y.tolist() == [3.0, 3.0] and str(y.device) == "sim:0"
    assert seen == ["descent.ops.fallbacks_test.triple"]
    kernel = next(s for s in t.result.spans() if s["floor_name"] == "kernels" and s["name"] == "fallbacks_test::triple")
    assert kernel["args"]["variant"] == "python fallback" and kernel["args"]["python"].endswith("tripled_on_the_host")
    assert (x + 1).tolist() == [2.0, 2.0] and len(seen) == 1  # add has a Sim kernel of its own
    lib._destroy()
    with pytest.raises(NotImplementedError, match="'Sim' backend"):
        descent.ops.fallbacks_test.triple(x)


def test_fallbacks_only_in_the_global_namespace_and_fallthrough_kernel():
    with pytest.raises(RuntimeError, match='Fallback can only be registered using library fragment on the global '
                                           'namespace "_" but it is aten'):
        Library("aten", "IMPL").fallback(lambda op, *a: None, "CPU")
    with pytest.raises(AssertionError, match="dispatch_key must not be empty for fallback"):
        Library("_", "IMPL").fallback(lambda op, *a: None)
    # fallthrough_kernel at an op's Autograd key: the dispatcher skips autograd, so no graph is recorded.
    w = descent.ones(2, requires_grad=True)
    assert (-w).grad_fn is not None
    lib = Library("aten", "IMPL")
    lib.impl("neg", descent.library.fallthrough_kernel, "AutogradCPU")
    assert (-w).grad_fn is None
    lib._destroy()
    assert (-w).grad_fn.name() == "NegBackward0"
    with pytest.raises(NotImplementedError, match="should never be called"):
        descent.library.fallthrough_kernel()


def test_a_python_fallback_then_a_fallthrough_at_an_autograd_key():
    """An operator defined with a CPU kernel alone falls through AutogradCPU (c10's fallthrough fallback).
    A Python fallback there catches it; fallthrough_kernel as the fallback (Kernel::Fallthrough through
    swap_fallback) skips the key again; _destroy puts back what each replaced."""
    name = fresh("twice")
    mine = Library("fallthrough_test", "DEF")
    mine.define(f"{name}(Tensor x) -> Tensor")
    mine.impl(name, lambda x: x * 2, "CPU")
    op = getattr(descent.ops.fallthrough_test, name)
    caught = []

    def autograd_fallback(op, *args):
        caught.append(repr(op))
        with descent.inference_mode():  # the Autograd keys excluded: the op's CPU kernel, not this again
            return op(*args)

    x = descent.ones(2)
    assert op(x).tolist() == [2.0, 2.0] and caught == []
    lib = Library("_", "IMPL")
    lib.fallback(autograd_fallback, "AutogradCPU")
    try:
        assert op(x).tolist() == [2.0, 2.0] and caught == [f"descent.ops.fallthrough_test.{name}"]
    finally:
        lib._destroy()
    lib = Library("_", "IMPL")
    lib.fallback(descent.library.fallthrough_kernel, "AutogradCPU")
    try:
        assert op(x).tolist() == [2.0, 2.0] and len(caught) == 1  # skipped: the fallback is gone
    finally:
        lib._destroy()
    assert op(x).tolist() == [2.0, 2.0] and len(caught) == 1
