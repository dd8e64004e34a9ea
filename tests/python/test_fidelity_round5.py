"""Issue 40, round 5: what a learner checks beside torch, each with torch's value
measured on torch 2.15's CPU build (the reference is 2.11; these did not change).

- backward()'s root: torch.profiler shows aten::ones_like (then empty_like,
  empty_strided, fill_); descent's engine calls aten::ones, because ones_like
  is CompositeImplicitAutograd here (CompositeExplicitAutograd in aten), so a
  dispatch mode would see its parts, not aten.ones_like (not done: issue 40).
- a float32 sum's order: descent's is fixed, torch's varies with its threads
  (Note [Cascade summation], floors/kernels/cpu/reference.cpp).
- inference mode's exclude set is c10's Autograd bit (test_dispatch_keys.py).
"""
import pytest

import descent


def test_a_root_without_a_gradient_keeps_torchs_errors():
    x = descent.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does not have a grad_fn$"):
        descent.ones(1).backward()
    y = (x * 3).sum()
    y.backward(descent.tensor(2.0))  # a given gradient: nothing made
    assert x.grad.tolist() == [6.0] * 3


def test_a_float_sum_does_not_depend_on_the_threads():
    # torch 2.15 CPU: 999999.4375, 999999.5625, 999999.875, 1000000.125 on 1, 2, 3, 4 threads
    before = descent.get_num_threads()
    try:
        got = set()
        for n in (1, 2):
            descent.set_num_threads(n)
            got.add(descent.full((10**7,), 0.1).sum().item())
    finally:
        descent.set_num_threads(before)
    assert got == {1000000.0}


def test_an_index_reduction_of_nothing_is_an_index_error():
    # aten's check_argmax_argmin: TORCH_CHECK_INDEX, where max() of nothing is TORCH_CHECK (RuntimeError)
    for name in ("argmax", "argmin"):
        with pytest.raises(IndexError, match=rf"^{name}\(\): Expected reduction dim to be specified for input\.numel\(\) "
                                             r"== 0\.$"):
            getattr(descent.zeros(0), name)()
    with pytest.raises(RuntimeError, match=r"^max\(\): Expected reduction dim to be specified") as e:
        descent.zeros(0).max()
    assert not isinstance(e.value, IndexError)
