"""The narrow integer dtypes (issue 17): uint8, int8, int16 (short) and int32
(int) beside int64, with PyTorch's behaviour.

[SECTION] dtype objects and names
[SECTION] Type promotion: the table, Python numbers, 0-d tensors
[SECTION] Printing
[SECTION] numpy and Python lists
[SECTION] Arithmetic: wraparound, true division, float-only ops
[SECTION] Reductions: sums into int64, mean refuses
[SECTION] Conversions, in place, indexing
[SECTION] Devices and the verifier

Where PyTorch's exact behaviour is assumed rather than read off a run, the
test says so ("assumed"); tools/gpu-host-check runs them beside torch.
"""
import pickle
import re

import numpy as np
import pytest

import descent
import nn_op_rows

B, U8, I8, I16, I32, I64 = descent.bool, descent.uint8, descent.int8, descent.int16, descent.int32, descent.int64
F16, BF16, F32, F64 = descent.float16, descent.bfloat16, descent.float32, descent.float64
NARROW = [U8, I8, I16, I32]
NP = {U8: np.uint8, I8: np.int8, I16: np.int16, I32: np.int32, I64: np.int64}


def name(dt):
    return repr(dt).replace("descent.", "")


def raises(kind, text):
    """pytest.raises for exactly `kind`, with `text` in the message."""
    return pytest.raises(kind, match=re.escape(text))


# [SECTION] dtype objects and names ---------------------------------------------------------

def test_dtype_objects_aliases_and_attributes():
    assert descent.int is I32 and descent.short is I16 and descent.long is I64
    assert [repr(d) for d in NARROW] == ["descent.uint8", "descent.int8", "descent.int16", "descent.int32"]
    assert [d.itemsize for d in NARROW] == [1, 1, 2, 4]
    assert not any(d.is_floating_point for d in NARROW)
    assert [d.is_signed for d in (B, U8, I8, I16, I32, I64, F32)] == [False, False, True, True, True, True, True]
    for dt in NARROW:
        assert getattr(descent, name(dt)) is dt and descent.zeros(2, dtype=dt).dtype is dt


# [SECTION] Type promotion ----------------------------------------------------------------------

# torch.promote_types: PyTorch's promoteTypes table, rows and columns in this order.
ORDER = [B, U8, I8, I16, I32, I64, F16, BF16, F32, F64]
TABLE = """
b    u8   i8   i16  i32  i64  f16  bf16 f32  f64
u8   u8   i16  i16  i32  i64  f16  bf16 f32  f64
i8   i16  i8   i16  i32  i64  f16  bf16 f32  f64
i16  i16  i16  i16  i32  i64  f16  bf16 f32  f64
i32  i32  i32  i32  i32  i64  f16  bf16 f32  f64
i64  i64  i64  i64  i64  i64  f16  bf16 f32  f64
f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""
SHORT = dict(zip("b u8 i8 i16 i32 i64 f16 bf16 f32 f64".split(), ORDER))


@pytest.mark.parametrize("row", range(len(ORDER)))
def test_promote_types_is_pytorchs_table(row):
    want = [SHORT[w] for w in TABLE.split("\n")[row + 1].split()]
    a = ORDER[row]
    for b, w in zip(ORDER, want):
        assert descent.promote_types(a, b) is w, (a, b)
        x, y = descent.ones(2, dtype=a), descent.ones(2, dtype=b)
        assert (x + y).dtype is w and (x * y).dtype is w, (a, b)       # tensors with dimensions: the table
        assert (x == y).dtype is B


def test_promote_types_takes_dtypes_only():
    with raises(TypeError, "promote_types(): argument 'type2' (position 2) must be descent.dtype, not int"):
        descent.promote_types(I32, 3)


@pytest.mark.parametrize("dt", NARROW, ids=name)
def test_python_numbers_and_zero_dim_tensors_keep_the_integer_dtype(dt):
    x = descent.tensor([1, 2, 3], dtype=dt)
    assert (x + 1).dtype is dt and (1 + x).dtype is dt and (x * 2).dtype is dt and (x - 1).dtype is dt
    assert (x + True).dtype is dt
    assert (x + descent.tensor(5)).dtype is dt                      # a 0-d int64 tensor does not widen it
    assert (x + 1.5).dtype is F32 and (x * 0.5).dtype is F32        # a Python float: the default float dtype
    assert (x + descent.tensor(1.5, dtype=F64)).dtype is F64         # a 0-d float64 tensor: its own dtype
    assert (x + descent.tensor(1.5, dtype=F16)).dtype is F16
    assert (x + descent.ones(3, dtype=B)).dtype is dt                 # bool + int -> int
    assert (x > 1.5).tolist() == [False, True, True]
    assert (x + 1).tolist() == [2, 3, 4] and (x + 1.5).tolist() == [2.5, 3.5, 4.5]


def test_mixed_integer_values():
    u, i = descent.tensor([200, 0], dtype=U8), descent.tensor([-100, -1], dtype=I8)
    assert (u + i).dtype is I16 and (u + i).tolist() == [100, -1]    # uint8 + int8 -> int16, no wrap
    assert (descent.tensor([30000], dtype=I16) + descent.tensor([30000], dtype=I32)).tolist() == [60000]
    assert (descent.tensor([2 ** 31 - 1], dtype=I32) + descent.tensor([1])).tolist() == [2 ** 31]  # int64


# [SECTION] Printing ------------------------------------------------------------------------------

def test_repr_names_every_integer_dtype_but_int64():
    assert repr(descent.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(descent.tensor([1, 2], dtype=I32)) == "tensor([1, 2], dtype=descent.int32)"
    assert repr(descent.tensor([[1, -2], [30, 4]], dtype=I16)) == \
        "tensor([[ 1, -2],\n        [30,  4]], dtype=descent.int16)"
    assert repr(descent.tensor([255, 0], dtype=U8)) == "tensor([255,   0], dtype=descent.uint8)"
    assert repr(descent.tensor(-7, dtype=I8)) == "tensor(-7, dtype=descent.int8)"
    assert repr(descent.zeros(0, dtype=I32)) == "tensor([], dtype=descent.int32)"
    assert repr(descent.zeros(2, 0, dtype=U8)) == "tensor([], size=(2, 0), dtype=descent.uint8)"
    assert str(descent.arange(3, dtype=I32)) == "tensor([0, 1, 2], dtype=descent.int32)"


# [SECTION] numpy and Python lists -----------------------------------------------------------------

@pytest.mark.parametrize("dt", NARROW + [I64], ids=name)
def test_numpy_round_trip_keeps_the_dtype(dt):
    info = np.iinfo(NP[dt])
    a = np.array([[info.min, 0, 1], [info.max, 7, info.min + 1]], dtype=NP[dt])
    for arr in (a, a.T, a[:, ::2]):
        t = descent.tensor(arr)
        assert t.dtype is dt and t.shape == arr.shape
        back = t.numpy()
        assert back.dtype == arr.dtype
        np.testing.assert_array_equal(back, arr)
        assert t.tolist() == arr.tolist() and all(type(v) is int for v in t.reshape(-1).tolist())
        assert descent.from_numpy(arr).dtype is dt
    assert np.asarray(descent.tensor(a)).dtype == a.dtype        # the buffer protocol, without a copy
    assert type(descent.tensor(a)[0, 0].item()) is int


def test_python_lists_into_narrow_dtypes():
    assert descent.tensor([1, 2], dtype=I32).tolist() == [1, 2]
    assert descent.tensor([-1, 255], dtype=U8).tolist() == [255, 255]   # assumed: c10 wraps -1 into uint8
    assert descent.tensor([1.7, -1.7], dtype=I16).tolist() == [1, -1]
    for dt, v in [(U8, 256), (U8, -256), (I8, 128), (I8, -129), (I16, 2 ** 15), (I32, 2 ** 31)]:
        with raises(RuntimeError, "cannot be converted to type"):
            descent.tensor([v], dtype=dt)
    with raises(RuntimeError, "cannot be converted to type"):
        descent.tensor([float("nan")], dtype=I32)


def test_pickle_keeps_the_dtype():
    t = descent.tensor([[1, -2]], dtype=I8)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is I8 and u.tolist() == [[1, -2]]


# [SECTION] Arithmetic -----------------------------------------------------------------------------

def test_overflow_wraps_as_in_c():
    assert (descent.tensor([255], dtype=U8) + 1).tolist() == [0]
    assert (descent.tensor([255], dtype=U8) + descent.tensor([1], dtype=U8)).tolist() == [0]
    assert (descent.tensor([0], dtype=U8) - 1).tolist() == [255]
    assert (-descent.tensor([1, 0], dtype=U8)).tolist() == [255, 0]
    assert (descent.tensor([127], dtype=I8) + 1).tolist() == [-128]
    assert (-descent.tensor([-128], dtype=I8)).tolist() == [-128]
    assert (descent.tensor([300], dtype=I16) * 300).tolist() == [24464]
    assert (descent.tensor([2 ** 31 - 1], dtype=I32) + 1).tolist() == [-2 ** 31]
    assert (descent.tensor([16], dtype=U8) ** 2).tolist() == [0]
    assert descent.tensor([200, 100], dtype=U8).add(descent.tensor([100, 100], dtype=U8), alpha=2).tolist() == [144, 44]


def test_wrapping_is_the_same_in_both_cpu_variants():
    x = descent.tensor(list(range(256)) * 4, dtype=U8)
    for variant in ("reference", "optimized"):
        descent.set_kernel_variant(variant)
        try:
            assert (x + 200).tolist() == [(v + 200) % 256 for v in x.tolist()]
            assert (x * x).tolist() == [(v * v) % 256 for v in x.tolist()]
        finally:
            descent.set_kernel_variant("auto")


@pytest.mark.parametrize("dt", NARROW, ids=name)
def test_true_division_and_float_only_ops_give_float32(dt):
    x = descent.tensor([7, 2, 0], dtype=dt)
    q = x / descent.tensor([2, 2, 4], dtype=dt)
    assert q.dtype is F32 and q.tolist() == [3.5, 1.0, 0.0]
    assert (x / 2).dtype is F32
    for fn in (descent.sin, descent.exp, descent.sqrt, descent.sigmoid, descent.reciprocal):
        assert fn(x).dtype is F32
    assert descent.sin(x).tolist() == pytest.approx(np.sin(np.array([7, 2, 0], dtype=np.float32)).tolist())
    for fn in (descent.abs, descent.relu):
        assert fn(x).dtype is dt                       # these stay integral
    assert descent.clamp(x, 1, 5).dtype is dt and descent.clamp(x, 1, 5).tolist() == [5, 2, 1]
    assert descent.clamp(x, 0.5).dtype is F32           # a float bound promotes as a Python float
    word = {U8: "Byte", I8: "Char", I16: "Short", I32: "Int"}[dt]
    with raises(RuntimeError, f"result type Float can't be cast to the desired output type {word}"):
        x.div_(descent.tensor([2, 2, 2], dtype=dt))
    with raises(RuntimeError, "Integers to negative integer powers are not allowed."):
        x ** -1
    assert (x ** 2).dtype is dt and (x ** 2).tolist() == [49, 4, 0]


def test_matrix_products_of_integers():
    a = descent.tensor([[1, 2], [3, 4]], dtype=I32)
    assert (a @ a).dtype is I32 and (a @ a).tolist() == [[7, 10], [15, 22]]
    b = descent.tensor([[16, 16]], dtype=U8)
    assert (b @ b.T).tolist() == [[0]]                    # 512 wraps in uint8
    with raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: int != long int"):
        descent.mm(a, a.long())
    assert descent.dot(descent.tensor([1, 2], dtype=I16), descent.tensor([3, 4], dtype=I16)).dtype is I16


# [SECTION] Reductions -----------------------------------------------------------------------------

@pytest.mark.parametrize("dt", NARROW, ids=name)
def test_sums_of_narrow_integers_are_int64(dt):
    info = np.iinfo(NP[dt])
    x = descent.tensor([[info.max, info.max], [1, 2]], dtype=dt)
    assert x.sum().dtype is I64 and x.sum().item() == 2 * int(info.max) + 3
    assert x.sum(1).dtype is I64 and x.sum(1).tolist() == [2 * int(info.max), 3]
    assert x.sum(0, keepdim=True).tolist() == [[int(info.max) + 1, int(info.max) + 2]]
    own = x.sum(dtype=dt)                                      # a dtype keeps the width, and wraps there
    assert own.dtype is dt and own.item() == np.array([2 * int(info.max) + 3]).astype(NP[dt])[0]
    assert x.sum(dtype=F64).dtype is F64
    assert x.max().dtype is dt and x.max().item() == info.max
    values, indices = x.max(1)
    assert values.dtype is dt and indices.dtype is I64 and indices.tolist() == [0, 1]


@pytest.mark.parametrize("dt", NARROW, ids=name)
def test_mean_of_an_integer_tensor_raises_pytorchs_error(dt):
    word = {U8: "Byte", I8: "Char", I16: "Short", I32: "Int"}[dt]
    x = descent.ones(3, dtype=dt)
    with raises(RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                f"complex dtype. Got: {word}"):
        x.mean()
    with raises(RuntimeError, f"Got: {word}"):
        x.mean(0)
    assert x.mean(dtype=F32).item() == 1.0


def test_mse_loss_refuses_integers():
    x = descent.ones(2, dtype=I32)
    with raises(NotImplementedError, "\"mse_cpu\" not implemented for 'Int'"):
        descent._C._nn.mse_loss(x, x)


# [SECTION] Conversions, in place, indexing -------------------------------------------------------

def test_conversion_methods_and_casts():
    x = descent.tensor([2.7, -2.7, 300.0])
    assert x.int().dtype is I32 and x.int().tolist() == [2, -2, 300]
    assert x.short().dtype is I16 and x.char().dtype is I8 and x.byte().dtype is U8
    assert x.char().tolist() == [2, -2, 44]                 # assumed: 300.0 -> int32 300 -> low byte, as x86
    assert descent.tensor([-1.0, 2.5]).byte().tolist() == [255, 2]   # assumed: via int64, as c10 casts to uint8
    assert descent.tensor([255], dtype=U8).to(I8).tolist() == [-1]
    assert descent.tensor([-1], dtype=I8).to(U8).tolist() == [255]
    assert descent.tensor([70000]).int().short().tolist() == [4464]
    assert descent.tensor([3], dtype=I32).to(F16).tolist() == [3.0] and descent.tensor([2, 0], dtype=U8).bool().tolist() == [True, False]
    with raises(RuntimeError, "only Tensors of floating point dtype can require gradients"):
        descent.ones(2, dtype=I32, requires_grad=True)


def test_in_place_ops_cast_into_self_within_the_category():
    x = descent.tensor([250, 1], dtype=U8)
    x += 10
    assert x.dtype is U8 and x.tolist() == [4, 11]
    x += descent.tensor([1, 1], dtype=I32)                   # int32 into uint8: the same category, allowed
    assert x.dtype is U8 and x.tolist() == [5, 12]
    with raises(RuntimeError, "result type Float can't be cast to the desired output type Byte"):
        x += 1.5
    y = descent.zeros(2, dtype=U8)
    y.fill_(-1)                                              # assumed: c10's Scalar takes -1 into uint8 as 255
    assert y.tolist() == [255, 255]
    with raises(RuntimeError, "value cannot be converted to type uint8_t without overflow"):
        y.fill_(256)
    with raises(RuntimeError, "value cannot be converted to type int8_t without overflow"):
        descent.full((2,), 200, dtype=I8)
    assert descent.full((2,), 7, dtype=I16).tolist() == [7, 7]


def test_integer_index_tensors():
    x = descent.arange(10) * 10
    assert x[descent.tensor([1, -1], dtype=I32)].tolist() == [10, 90]
    assert x[descent.tensor(3, dtype=I32)].tolist() == 30            # a 0-d int tensor is an int
    assert [1, 2, 3][descent.tensor(1, dtype=I16)] == 2               # __index__ of any integer dtype
    m = descent.tensor([1, 0, 0, 0, 0, 0, 0, 0, 0, 1], dtype=U8)
    assert x[m].tolist() == [0, 90]                                   # a uint8 index is a mask, as in PyTorch
    y = descent.zeros(4, dtype=I8)
    y[descent.tensor([0, 2], dtype=I32)] = 5
    assert y.tolist() == [5, 0, 5, 0]
    with raises(IndexError, "tensors used as indices must be long, int, byte or bool tensors"):
        x[descent.tensor([1], dtype=I8)]


# [SECTION] Devices and the verifier --------------------------------------------------------------

@pytest.mark.parametrize("dt", NARROW, ids=name)
def test_sim_device_computes_what_the_cpu_does(dt):
    hi = 250 if dt is U8 else 100
    x = descent.tensor(np.arange(24).reshape(4, 6) * 7 % hi, dtype=dt)
    d = x.to("sim:0")
    for f in (lambda t: t + t, lambda t: t * 3, lambda t: -t, lambda t: t - 1, lambda t: t / 3, lambda t: t.sum(),
              lambda t: t.sum(0), lambda t: t.max(), lambda t: t.max(1).indices, lambda t: t @ t.T,
              lambda t: t.T.contiguous(), lambda t: t.to(F32), lambda t: t.to(U8), lambda t: t < 5,
              lambda t: t[descent.tensor([0, 2])], lambda t: descent.sin(t), lambda t: t + descent.tensor(1.5)):
        want, got = f(x), f(d)
        assert got.device == descent.device("sim:0") and got.dtype is want.dtype
        assert got.cpu().tolist() == want.tolist()
    assert descent.arange(5, dtype=dt, device="sim:0").cpu().tolist() == [0, 1, 2, 3, 4]
    assert descent.full((3,), 9, dtype=dt, device="sim:0").cpu().tolist() == [9, 9, 9]


@pytest.mark.parametrize("device", [None, "sim:0"])
def test_the_verifier_covers_the_narrow_integers_bit_for_bit(device):
    vs = [v for v in descent.verify(seed=3, device=device) if v["dtype"] in ("uint8", "int8", "int16", "int32")]
    assert {v["dtype"] for v in vs} == {"uint8", "int8", "int16", "int32"}
    assert len(vs) == 4 * len([o for o in descent._C._ops() if o["kind"] != "collective"])
    failed = [(v["op"], v["dtype"], v["detail"]) for v in vs if not v["passed"]]
    assert not failed, failed
    for v in vs:
        assert v["claim"] in ("bit-for-bit", "single kernel", "unsupported"), v
        assert v["max_abs_diff"] == 0, v
    refused = {(v["op"], v["dtype"]) for v in vs if v["claim"] == "unsupported" and device is None}
    if device is None:
        # issue 42's: floats only, a zero divisor (floor_divide), clamp_'s float bounds (test_verifier.cpp's list)
        learner = ("aten::rand_like", "aten::randn_like", "aten::uniform_", "aten::normal_", "aten::floor_divide",
                   "aten::var", "aten::var.dim", "aten::var.correction", "aten::std", "aten::std.dim",
                   "aten::std.correction", "aten::clamp_", "aten::linalg_vector_norm", "aten::multinomial")
        assert refused == {(op, dt) for op in ("aten::mean", "aten::mean.dim", "aten::div_.Tensor", "aten::rand",
                                               "aten::randn", "aten::mse_loss") + learner
                           for dt in ("uint8", "int8", "int16", "int32")} | {("aten::linspace", "uint8")} \
            | {("aten::randint_like.low_dtype", "uint8")} \
            | nn_op_rows.REFUSED_NARROW_INT_NN
        # linspace's sample starts at -2.5, which uint8 cannot hold (assumed: torch checks start as c10's Scalar does)
        with raises(RuntimeError, "linspace(): start cannot be converted to type uint8_t without overflow"):
            descent.linspace(-2.5, 7.25, 33, dtype=U8)
        assert descent.linspace(0, 10, 5, dtype=U8).tolist() == [0, 2, 5, 7, 10]
