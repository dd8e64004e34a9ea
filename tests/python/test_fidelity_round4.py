"""What a curious learner checks beside torch, round 4 (issue 40's last bullets): each message,
object and warning here is what PyTorch 2.11 gives for the same code (checked beside torch 2.15
on the CPU, and read off PyTorch's source where the two could differ; the file is named at each).

- errors without an op prefix torch does not print, and older PyTorch's texts brought to 2.11's;
- torch.tensor's errors for data it cannot read (torch/csrc/utils/tensor_new.cpp);
- DispatchKey, DispatchKeySet and the torch._C functions that show the dispatcher's table;
- OpOverload._schema, a FunctionSchema;
- backward(create_graph=True)'s reference-cycle warning.
"""
import warnings

import pytest

import descent

C = descent._C


def message(fn, error):
    with pytest.raises(error) as e:
        fn()
    return str(e.value)


# [SECTION] No op prefix (c10/core/WrapDimMinimal.cpp, maybe_wrap_dim, names no op) ---------------------

DIM_1_OF_1 = "Dimension out of range (expected to be in range of [-1, 0], but got 1)"


@pytest.mark.parametrize("call", [
    lambda x: x.sum(1), lambda x: x.transpose(0, 1), lambda x: x.max(1), lambda x: x.mean(1),
    lambda x: x.softmax(1), lambda x: x.select(1, 0), lambda x: descent.cat([x], 1), lambda x: x.argmax(1),
    lambda x: x.squeeze(1), lambda x: x.sort(1), lambda x: x.var(1), lambda x: x.all(1),
    lambda x: descent.tensor(1.0).sum(1),
], ids=["sum", "transpose", "max", "mean", "softmax", "select", "cat", "argmax", "squeeze", "sort", "var",
        "all", "0-d"])
def test_a_dimension_out_of_range_names_no_op(call):
    assert message(lambda: call(descent.ones(3)), IndexError) == DIM_1_OF_1


def test_view_ops_and_factories_say_what_aten_says():
    x = descent.ones(2, 3)
    # TensorShape.cpp, _permute_size_stride_estimation: "sparse_coo" for every layout, sic
    assert message(lambda: x.permute(0), RuntimeError) == (
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
        "ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1")
    assert message(lambda: x.permute(0, 0), RuntimeError) == "permute(): duplicate dims are not allowed."
    # ExpandUtils.cpp, inferExpandGeometry: the tensor's type and the sizes asked for
    assert message(lambda: x.expand(3), RuntimeError) == (
        "expand(descent.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater or "
        "equal to the number of dimensions in the tensor (2)")
    assert message(lambda: descent.ones(3).expand(-1, 3), RuntimeError) == (
        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0")
    assert message(lambda: descent.ones(3).expand(-2), RuntimeError) == (
        "The expanded size of the tensor (-2) must match the existing size (3) at non-singleton dimension 0.  "
        "Target sizes: [-2].  Tensor sizes: [3]")
    assert message(lambda: x.sum((0, 0)), RuntimeError) == "dim 0 appears multiple times in the list of dims"
    assert message(lambda: descent.arange(0, 5, 0), RuntimeError) == "step must be nonzero"
    assert message(lambda: descent.arange(5, 0), RuntimeError) == (
        "upper bound and lower bound inconsistent with step sign")
    # TensorFactories.cpp: zeros checks in its own words; the others reach empty's
    assert message(lambda: descent.zeros(-2), RuntimeError) == "zeros: Dimension size must be non-negative."
    assert message(lambda: descent.ones(2, -3), RuntimeError) == (
        "Trying to create tensor with negative dimension -3: [2, -3]")
    assert message(lambda: descent.randn(-1), RuntimeError) == (
        "Trying to create tensor with negative dimension -1: [-1]")


def test_bmm_checks_batch_and_contraction_sizes_in_one_message():  # LinearAlgebra.cpp, common_checks_baddbmm_bmm
    assert message(lambda: descent.bmm(descent.ones(2, 3, 4), descent.ones(3, 4, 5)), RuntimeError) == (
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].")
    assert message(lambda: descent.bmm(descent.ones(2, 3), descent.ones(2, 3)), RuntimeError) == (
        "batch1 must be a 3D tensor")


def test_a_zero_slice_step_is_pythons_error_and_a_negative_one_torchs():
    x = descent.ones(5)
    assert message(lambda: x[::0], ValueError) == "slice step cannot be zero"  # PySlice_Unpack's
    assert message(lambda: x[::-1], ValueError) == "step must be greater than zero"


# [SECTION] torch.tensor's data (torch/csrc/utils/tensor_new.cpp) --------------------------------------

@pytest.mark.parametrize("data,error,text", [
    ([[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ([[1], 2], TypeError, "not a sequence"),
    ([1, [2]], TypeError, "'list' object cannot be interpreted as an integer"),
    ([True, [False]], TypeError, "'list' object cannot be interpreted as an integer"),
    ([1.0, [2]], TypeError, "must be real number, not list"),
    ([None], RuntimeError, "Could not infer dtype of NoneType"),
    ([object()], RuntimeError, "Could not infer dtype of object"),
    (["a"], ValueError, "too many dimensions 'str'"),  # a str is a sequence of strs, without end
    ([1, "a"], TypeError, "new(): invalid data type 'str'"),
    ([[1, 2], "ab"], TypeError, "new(): invalid data type 'str'"),
    ("abc", TypeError, "new(): invalid data type 'str'"),
    ([b"a"], TypeError, "new(): invalid data type 'bytes'"),
])
def test_tensor_refuses_data_as_torch_does(data, error, text):
    assert message(lambda: descent.tensor(data), error) == text


# [SECTION] DispatchKey and DispatchKeySet (torch/csrc/utils/python_dispatch.cpp) ----------------------

def test_dispatch_keys_is_a_key_set_object_that_prints_as_torchs():
    ks = C._dispatch_keys(descent.ones(2))
    assert type(ks) is C.DispatchKeySet
    assert str(ks) == repr(ks) == "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)"  # facts.json
    assert ks.has(C.DispatchKey.CPU) and ks.has("AutogradCPU") and not ks.has(C.DispatchKey.CUDA)
    assert ks.has(C.DispatchKey.Autograd)  # an alias: any of its keys
    assert ks == C._dispatch_keys(descent.ones(3, requires_grad=True)) and not ks != C._dispatch_keys(descent.ones(1))
    assert C.DispatchKeySet.from_raw_repr(ks.raw_repr()) == ks
    assert C._dispatch_keyset_to_string(ks) == str(ks)


def test_key_sets_combine_as_c10s():
    cpu, ag = C.DispatchKeySet(C.DispatchKey.CPU), C.DispatchKeySet("AutogradCPU")
    ks = C._dispatch_keys(descent.ones(2))
    assert str(cpu | ag) == "DispatchKeySet(CPU, AutogradCPU)"
    assert str(ks - cpu) == "DispatchKeySet(ADInplaceOrView, AutogradCPU, AutocastCPU)"
    assert str(ks & cpu) == "DispatchKeySet(CPU)"
    assert str(cpu.add(C.DispatchKey.ADInplaceOrView)) == "DispatchKeySet(CPU, ADInplaceOrView)"
    # remove takes the functionality out and keeps the backend (Note [A key set is functionalities times backends])
    assert str(cpu.remove(C.DispatchKey.AutogradCPU)) == "DispatchKeySet(CPU)"
    assert str(C.DispatchKeySet(C.DispatchKey.Autograd)) == "DispatchKeySet()"  # an alias key makes no set
    assert cpu.highestPriorityTypeId() is C.DispatchKey.CPU
    assert (cpu | ag).highestPriorityTypeId() is C.DispatchKey.AutogradCPU


def test_key_sets_refuse_what_torchs_refuse():
    ks = C._dispatch_keys(descent.ones(2))
    with pytest.raises(TypeError, match=r"^__eq__\(\): incompatible function arguments"):
        ks == "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)"
    with pytest.raises(TypeError, match="unhashable type"):
        hash(ks)
    with pytest.raises(TypeError, match=r"^__init__\(\): incompatible constructor arguments"):
        C.DispatchKeySet()
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Nope$"):
        C.DispatchKeySet("Nope")


def test_the_threads_sets_are_key_sets_too():
    assert str(C._dispatch_tls_local_include_set()) == "DispatchKeySet(BackendSelect, ADInplaceOrView)"
    assert C._dispatch_tls_local_exclude_set().has(C.DispatchKey.AutocastCPU)
    with descent.inference_mode():
        assert not C._dispatch_tls_local_include_set().has("ADInplaceOrView")


def test_dispatch_key_is_an_enum_printed_as_torchs():
    k = C.DispatchKey.AutogradCPU
    assert str(k) == "DispatchKey.AutogradCPU" and repr(k).startswith("<DispatchKey.AutogradCPU: ")
    assert k.name == "AutogradCPU" and C.DispatchKey["CPU"] is C.DispatchKey.CPU
    assert C._dispatch_key_name(k) == "AutogradCPU" and C._dispatch_key_parse("CPU") is C.DispatchKey.CPU


# [SECTION] The dispatcher's table (aten/src/ATen/core/dispatch/OperatorEntry.cpp) ---------------------

def test_dispatch_dump_lists_what_the_operator_registered():
    lines = C._dispatch_dump("aten::add.Tensor").splitlines()
    assert lines[:2] == ["name: aten::add.Tensor",
                         "schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"]
    assert lines[3] == "alias analysis kind: FROM_SCHEMA"
    cpu = next(line for line in lines if line.startswith("CPU: "))
    assert cpu.startswith("CPU: registered at floors/kernels/") and cpu.endswith(
        " :: (Tensor _0, Tensor _1, Scalar _2) -> Tensor _0 [ boxed unboxed ]")
    assert any(line.startswith("Autograd[alias]: registered at floors/autograd/") for line in lines)
    assert not any(line.startswith("AutogradCPU") for line in lines)  # registered through the alias
    assert C._dispatch_dump("aten::nope") == "" and C._dispatch_dump("aten::add") == ""  # no overload without a name


def test_dispatch_dump_table_shows_what_each_key_runs():
    table = dict(line.split(": ", 1) for line in C._dispatch_dump_table("aten::add.Tensor").splitlines())
    assert table["CPU"].endswith(" [kernel]") and table["AutogradCPU"].endswith(" [autograd kernel]")
    assert table["ADInplaceOrView"].startswith("fallthrough registered at ")
    assert table["ADInplaceOrView"].endswith(" [backend fallback]")
    linear = dict(line.split(": ", 1) for line in C._dispatch_dump_table("aten::linear").splitlines())
    assert linear["CPU"].endswith(" [math kernel]") and linear["AutogradCPU"].endswith(" [math kernel]")
    assert C._dispatch_dump_table("aten::nope") == ""


def test_has_kernel_for_dispatch_key_asks_about_the_key_as_registered():
    f = C._dispatch_has_kernel_for_dispatch_key
    assert f("aten::add.Tensor", "CPU") and f("aten::add.Tensor", C.DispatchKey.Autograd)
    assert not f("aten::add.Tensor", "AutogradCPU")  # registered through the Autograd alias
    assert not f("aten::add.Tensor", "CompositeImplicitAutograd") and not f("aten::add.Tensor", "BackendSelect")
    assert f("aten::linear", "CompositeImplicitAutograd") and not f("aten::linear", "CPU")
    with pytest.raises(RuntimeError, match="^operator aten::nope does not exist$"):
        f("aten::nope", "CPU")
    with pytest.raises(RuntimeError, match="^could not parse dispatch key: Nope$"):
        f("aten::add.Tensor", "Nope")
    assert C._dispatch_has_kernel("aten::add.Tensor") and not C._dispatch_has_kernel("aten::add")
    assert C._dispatch_kernel_for_dispatch_key_is_fallthrough("aten::add.Tensor", "ADInplaceOrView")
    assert not C._dispatch_kernel_for_dispatch_key_is_fallthrough("aten::add.Tensor", "CPU")


# [SECTION] OpOverload._schema (torch/csrc/jit/python/init.cpp, FunctionSchema) -------------------------

def test_an_overloads_schema_is_a_function_schema():
    s = descent.ops.aten.add.Tensor._schema
    assert str(s) == repr(s) == "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert (s.name, s.overload_name, s.is_mutable) == ("aten::add", "Tensor", False)
    assert [a.name for a in s.arguments] == ["self", "other", "alpha"]
    alpha = s.arguments[2]
    assert str(alpha.type) == "number" and alpha.default_value == 1 and alpha.has_default_value()
    assert alpha.kwarg_only and not s.arguments[0].kwarg_only and s.arguments[0].alias_info is None
    assert [str(r.type) for r in s.returns] == ["Tensor"] and s.returns[0].name == ""


def test_a_schemas_types_aliases_and_returns_read_as_torchs():
    s = descent.ops.aten.add_.Tensor._schema
    assert s.is_mutable and s.arguments[0].is_write and s.arguments[0].alias_info.before_set == {"a"}
    assert s.returns[0].alias_info.is_write
    m = descent.ops.aten.max.dim._schema
    assert [r.name for r in m.returns] == ["values", "indices"] and m.arguments[2].default_value is False
    assert descent.ops.aten.sum.default._schema.overload_name == ""
    assert str(descent.ops.aten.cat.default._schema.arguments[0].type) == "List[Tensor]"
    assert str(descent.ops.aten.linear.default._schema.arguments[2].type) == "Optional[Tensor]"
    assert descent.ops.aten.add.Tensor._schema == descent.ops.aten.add.Tensor._schema
    with pytest.raises(RuntimeError, match="No such operator aten::nope"):
        descent.ops.aten.nope.default._schema


# [SECTION] backward(create_graph=True) (torch/csrc/autograd/engine.cpp, Engine::execute) ---------------

CYCLE = ("Using backward() with create_graph=True will create a reference cycle between the parameter and its "
         "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
         "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
         "to None after use to break the cycle and avoid the leak.")


def test_backward_with_create_graph_warns_once_and_grad_does_not():
    descent.autograd._warned_create_graph.clear()  # TORCH_WARN_ONCE: once a process
    x = descent.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        descent.autograd.grad((x * x).sum(), x, create_graph=True)
        (x * x).sum().backward()
        assert w == []
        (x * x).sum().backward(create_graph=True)
        (x * x).sum().backward(create_graph=True)
    assert [(i.category, str(i.message)) for i in w] == [(UserWarning, CYCLE)]
    assert x.grad.requires_grad  # the gradient's graph was made, as asked
