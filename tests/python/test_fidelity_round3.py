"""What a curious learner checks beside torch, round 2's mechanisms and texts (issue 40):
each value, flag and message here is what PyTorch 2.11 gives for the same code, read off
PyTorch's source where no torch is installed (the file and function are named at each test).

- a view made in no_grad mode, written in place with grad mode on (handle_view_on_rebase);
- AccumulateGrad stealing a gradient, and mm's backward handing back the weight's layout;
- Tensor.register_post_accumulate_grad_hook;
- the version-counter error's hint, and anomaly mode's absence said out loud;
- grad_fn._saved_* of a value the node did not save, and after backward freed it;
- the warnings: .grad of a non-leaf, x.T on other than 2 dimensions;
- torch.return_types.sort / topk / max printed as torch prints them.
"""
import warnings

import pytest

import descent

NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
                "code by moving both the view and the inplace either both inside the no_grad block (if you "
                "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
NO_GRAD_VIEW_INDIRECT = NO_GRAD_VIEW.replace("is being modified",
                                             "its base or another view of its base has been modified")


# [SECTION] A view made in no_grad mode (torch/csrc/autograd/variable.cpp, handle_view_on_rebase) ----------

def test_a_view_made_in_no_grad_mode_requires_grad_as_its_base_and_is_a_leaf():
    x = descent.ones(3, requires_grad=True)
    y = x * 1
    with descent.no_grad():
        v = y[:2]
    assert v.requires_grad and v.is_leaf and v.grad_fn is None and v._base is y


@pytest.mark.parametrize("base_is_leaf", [False, True])
def test_writing_a_no_grad_view_in_place_with_grad_on_is_refused(base_is_leaf):
    x = descent.ones(3, requires_grad=True)
    base = x if base_is_leaf else x * 1
    with descent.no_grad():
        v = base[:2]
    with pytest.raises(RuntimeError) as e:
        v.mul_(2)
    assert str(e.value) == NO_GRAD_VIEW
    assert v._version == 0  # refused before anything was written


def test_a_view_of_a_no_grad_view_keeps_the_mark():
    y = descent.ones(3, requires_grad=True) * 1
    with descent.no_grad():
        v = y[:2]
    w = v[:1]  # made with grad mode on, of a marked view: marked too (propagate_creation_meta)
    with pytest.raises(RuntimeError, match="view of a view which was created in no_grad mode|A view was created"):
        w.add_(1)


def test_a_write_to_the_base_makes_the_no_grad_views_grad_fn_raise():
    y = descent.ones(3, requires_grad=True) * 1
    with descent.no_grad():
        v = y[:2]
        y.add_(1)  # even with grad off, as in PyTorch: the view's next grad_fn read raises
    with pytest.raises(RuntimeError) as e:
        v.grad_fn
    assert str(e.value) == NO_GRAD_VIEW_INDIRECT
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified"):
        v * 2  # an op taking v with grad on reads its grad_fn


def test_a_no_grad_view_written_in_no_grad_mode_and_a_grad_mode_view_are_fine():
    y = descent.ones(3, requires_grad=True) * 1
    with descent.no_grad():
        v = y[:2]
        v.mul_(2)  # both inside the block: not tracked, as the message advises
    u = y[1:]
    u.mul_(3)  # both outside: tracked
    assert type(u.grad_fn).__name__ == "AsStridedBackward0"
    assert type(y.grad_fn).__name__ == "CopySlices"


# [SECTION] AccumulateGrad (torch/csrc/autograd/functions/accumulate_grad.h) ------------------------------

def test_a_gradient_no_one_else_holds_becomes_grad_without_a_copy():
    x = descent.ones(4, requires_grad=True)
    seen = []
    y = x.view(2, 2)
    y.register_hook(lambda g: seen.append(g.data_ptr()))  # the (2, 2) gradient; ViewBackward0 views it
    (y * 2).sum().backward()
    assert x.grad.data_ptr() == seen[0]  # stolen: new_grad.detach(), the same memory
    assert x.grad._base is None and x.grad.grad_fn is None


def test_a_gradient_someone_holds_is_copied_into_grad():
    x = descent.ones(3, requires_grad=True)
    g = descent.full((3,), 2.0)
    x.backward(g)  # the caller still holds g
    assert x.grad.data_ptr() != g.data_ptr() and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_transposed_gradient_is_copied_in_the_leafs_layout():
    x = descent.ones(2, 3, requires_grad=True)
    x.t().backward(descent.ones(3, 2))  # TBackward0 hands back a transposed gradient
    assert x.grad.is_contiguous() and x.grad.stride() == (3, 1)  # clone_obey_contract


def test_a_linear_layers_weight_gradient_is_laid_out_as_the_weight_and_taken_as_it_is():
    lin = descent.nn.Linear(3, 2)
    lin(descent.ones(4, 3)).sum().backward()
    # addmm(bias, x, weight.t()): weight.t() is column-major, so mm_mat2_backward computes its
    # gradient as (g.t() @ x).t(); TBackward0's .t() makes it the weight's (2, 3) contiguous.
    assert lin.weight.grad.is_contiguous() and lin.weight.grad.stride() == (3, 1)
    assert lin.weight.grad.tolist() == [[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]


@pytest.mark.parametrize("transposed", [False, True])
def test_mm_gradients_are_right_for_either_layout(transposed):
    a = descent.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    b = descent.tensor([[1.0, -1.0, 2.0], [0.5, 3.0, -2.0]])
    a = (a.t().contiguous().t() if transposed else a.clone()).requires_grad_()
    b = (b.t().contiguous().t() if transposed else b.clone()).requires_grad_()
    g = descent.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    descent.mm(a, b).backward(g)
    assert a.grad.tolist() == descent.mm(g, b.detach().t()).tolist()
    assert b.grad.tolist() == descent.mm(a.detach().t(), g).tolist()


# [SECTION] Tensor.register_post_accumulate_grad_hook (torch/_tensor.py) ----------------------------------

def test_a_post_accumulate_grad_hook_sees_the_leaf_after_its_grad_is_set():
    v = descent.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))  # torch's docstring example
    v.backward(descent.tensor([1.0, 2.0, 3.0]))
    assert [round(e, 4) for e in v.tolist()] == [-0.01, -0.02, -0.03] and v.requires_grad
    h.remove()
    v.backward(descent.tensor([1.0, 2.0, 3.0]))
    assert [round(e, 4) for e in v.tolist()] == [-0.01, -0.02, -0.03]


def test_post_accumulate_grad_hooks_run_in_order():
    t = descent.rand(3, requires_grad=True)
    ref = t.detach().clone()
    t.register_post_accumulate_grad_hook(lambda p: p.sub_(p.grad))
    t.register_post_accumulate_grad_hook(lambda p: p.mul_(4.0))
    t.sum().backward()
    assert descent.allclose(t.detach(), 4.0 * (ref - 1.0))  # PyTorch's test_post_accumulate_grad_hook_multiple_hooks


def test_post_accumulate_grad_hooks_refuse_what_torch_refuses():
    leaf = descent.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered on non-leaf tensors$"):
        (2.0 * leaf).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        descent.rand(3).register_post_accumulate_grad_hook(lambda t: None)
    leaf.register_post_accumulate_grad_hook(lambda t: t)  # the leaf itself counts as None (_call_hooks)
    leaf.sum().backward()
    leaf.register_post_accumulate_grad_hook(lambda t: t * 1)
    with pytest.raises(RuntimeError, match="^Tensor post accumulate grad hooks should return None.$"):
        leaf.sum().backward()


# [SECTION] grad_fn._saved_* (tools/autograd/gen_autograd_functions.py, GETTER_BODY_SAVEDVAR) ------------

def test_a_value_the_node_did_not_save_reads_as_none():
    x = descent.ones(2, requires_grad=True)
    w = descent.full((2,), 3.0)
    fn = (x * w).grad_fn  # only x requires grad: MulBackward0 saves other (w), not self
    assert fn._saved_self is None and fn._saved_other.tolist() == [3.0, 3.0]
    with pytest.raises(AttributeError):
        fn._saved_result  # mul's formula never reads its result: no such attribute


def test_a_saved_value_after_backward_freed_it_raises():
    x = descent.ones(2, requires_grad=True)
    y = x.exp()
    assert y.grad_fn._saved_result.tolist() == y.tolist()
    y.sum().backward()
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.grad_fn._saved_result


# [SECTION] torch.device (c10/core/Device.h) ------------------------------------------------------------

def test_a_device_named_without_an_index_has_none():
    d = descent.device("cuda")
    assert d.index is None and str(d) == "cuda" and repr(d) == "device(type='cuda')" and d.type == "cuda"
    assert d != descent.device("cuda:0") and descent.device("cuda:0").index == 0
    assert descent.device("cuda", 1) == descent.device("cuda:1") and descent.device(1) == descent.device("cuda:1")
    assert descent.device(d) is d
    assert descent.ones(2).device.index is None and descent.ones(2).device == descent.device("cpu")
    assert descent.device("cpu") != descent.device("cpu:0")
    assert descent.ones(2, device="sim:0").device.index == 0
    assert descent.ones(2).to(descent.device("sim")).device == descent.device("sim:0")


# [SECTION] Warnings ------------------------------------------------------------------------------------

NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                 "attribute won't be populated during autograd.backward(). If you indeed want the .grad field to "
                 "be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access "
                 "the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
                 "github.com/pytorch/pytorch/pull/30531 for more informations.")


def test_reading_a_non_leafs_grad_warns_as_torch():  # aten/src/ATen/core/TensorBody.h, grad()
    x = descent.ones(2, requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert y.grad is None
        assert x.grad is None  # a leaf: no warning
        y.retain_grad()
        assert y.grad is None  # retains its grad: no warning
    assert [(i.category, str(i.message)) for i in w] == [(UserWarning, NON_LEAF_GRAD)]


def test_x_T_on_other_than_two_dimensions_warns_once():  # aten/src/ATen/native/TensorShape.cpp, numpy_T
    descent._tensor._warned_once.clear()  # TORCH_WARN_ONCE: once a process
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert descent.ones(2, 3, 4).T.shape == (4, 3, 2)
        descent.ones(2, 3, 4).T
        descent.ones(2, 3).T
    assert len(w) == 1 and w[0].category is UserWarning
    assert str(w[0].message).startswith("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                                        "shape is deprecated and it will throw an error in a future release.")


# [SECTION] torch.return_types (torch/csrc/utils/structseq.cpp) -----------------------------------------

def test_values_and_indices_print_as_torch_return_types():
    x = descent.tensor([3.0, 1.0, 2.0])
    assert repr(x.sort()) == ("descent.return_types.sort(\nvalues=tensor([1., 2., 3.]),\n"
                              "indices=tensor([1, 2, 0]))")
    assert repr(x.topk(2)) == "descent.return_types.topk(\nvalues=tensor([3., 2.]),\nindices=tensor([0, 2]))"
    m = x.view(1, 3).max(1)
    assert repr(m) == "descent.return_types.max(\nvalues=tensor([3.]),\nindices=tensor([0]))"
    assert type(m).__name__ == "max" and type(x.sort()).__name__ == "sort" and type(m) is type(x.view(1, 3).max(1))
    values, indices = m
    assert m.values is values and m.indices is indices and m[0] is values


# [SECTION] The version counter's error (torch/csrc/autograd/saved_variable.cpp, unpack) ----------------

def test_a_saved_tensor_written_in_place_raises_torchs_message_and_hint():
    x = descent.ones(2, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert str(e.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[descent.FloatTensor [2]], which is output 0 of ExpBackward0, is at version 1; expected version 0 "
        "instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True).")


def test_anomaly_mode_says_it_is_not_here():  # Note [No anomaly mode]
    assert descent.autograd.is_anomaly_enabled() is False
    with pytest.raises(NotImplementedError, match="descent has no anomaly mode"):
        descent.autograd.set_detect_anomaly(True)
    with pytest.raises(NotImplementedError, match="descent trace"):
        descent.autograd.detect_anomaly()
