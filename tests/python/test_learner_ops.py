"""Issue 42's ops, the ones a learner's notebook meets on its first page:
factories like a tensor, eye, tril/triu, where, masked_fill, argmax, stack,
split/chunk, squeeze, all/any, isclose, floor_divide, var/std, norms, sort,
topk, einsum, unfold, as_strided and the random draws (randint, randperm,
random_, uniform_, normal_, multinomial).

Values against numpy and against torch's own printed output, random draws
against torch's CPU stream computed here from the raw mt19937 words (numpy's
RandomState is the same engine, seeded the same way: Note [PyTorch's CPU
random stream]), gradients against finite differences (descent's gradcheck),
node names and error messages as PyTorch's."""
import math

import numpy as np
import pytest

import descent as torch
from descent.autograd import gradcheck

F, D, I, B = torch.float32, torch.float64, torch.int64, torch.bool


def words(seed, n):
    """The first n 32-bit words of mt19937 seeded as torch.manual_seed(seed) seeds it."""
    return [int(w) for w in np.random.RandomState(seed).randint(0, 2 ** 32, size=n, dtype=np.uint64)]


def node(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None


def leaf(shape, seed=0):
    return torch.tensor(np.random.RandomState(seed).uniform(-2, 2, size=shape)).requires_grad_()


# [SECTION] Factories like a tensor ------------------------------------------------------

def test_like_factories_take_self_sizes_dtype_and_device():
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])
    assert torch.ones_like(x).tolist() == [[1, 1, 1], [1, 1, 1]] and torch.ones_like(x).dtype is I
    assert torch.zeros_like(x, dtype=F).dtype is F and torch.zeros_like(x).sum().item() == 0
    assert torch.full_like(x, 7).tolist() == [[7, 7, 7], [7, 7, 7]]
    assert torch.full_like(x, 2.5, dtype=D).tolist() == [[2.5] * 3] * 2
    assert torch.empty_like(x).shape == x.shape
    t = torch.ones(4, 6).T  # empty_like keeps a dense self's strides (memory_format=preserve)
    assert torch.empty_like(t).stride() == t.stride() and torch.zeros_like(t).stride() == (1, 6)
    assert not torch.ones_like(leaf(3)).requires_grad


def test_new_factories_take_self_dtype_and_device():
    x = torch.ones(2, dtype=D)
    assert x.new_zeros(3).dtype is D and x.new_ones((2, 2)).tolist() == [[1, 1], [1, 1]]
    assert x.new_full((2,), 3.5).tolist() == [3.5, 3.5] and x.new_empty(4, dtype=I).dtype is I
    assert x.new_tensor([1, 2]).dtype is D and x.new_tensor([1, 2], dtype=I).dtype is I


def test_eye_prints_as_torch():
    assert repr(torch.eye(2)) == "tensor([[1., 0.],\n        [0., 1.]])"
    assert torch.eye(2, 3, dtype=I).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert torch.eye(0).shape == (0, 0)
    with pytest.raises(RuntimeError, match="^n must be greater or equal to 0, got -1$"):
        torch.eye(-1)


# [SECTION] Random draws: torch's CPU stream ------------------------------------------------

def test_rand_like_and_randn_like_are_rand_and_randn():
    x = torch.zeros(4, 5)
    torch.manual_seed(3)
    a, b = torch.rand(4, 5), torch.randn(4, 5)
    torch.manual_seed(3)
    assert torch.rand_like(x).tolist() == a.tolist() and torch.randn_like(x).tolist() == b.tolist()
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        torch.rand_like(torch.zeros(3, dtype=I))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        torch.randn_like(torch.zeros(3, dtype=I))


def test_randint_is_word_mod_range():
    torch.manual_seed(0)
    assert torch.randint(10, (5,)).tolist() == [4, 9, 3, 0, 3]  # torch 2.11 prints tensor([4, 9, 3, 0, 3])
    torch.manual_seed(7)
    got = torch.randint(-3, 4, (2, 3))
    assert got.dtype is I and got.flatten().tolist() == [w % 7 - 3 for w in words(7, 6)]
    torch.manual_seed(7)
    assert torch.randint_like(torch.zeros(6), 7).tolist() == [float(w % 7) for w in words(7, 6)]
    with pytest.raises(RuntimeError, match="^random_ expects 'from' to be less than 'to', but got from=5 >= to=5$"):
        torch.randint(5, 5, (2,))


def test_randperm_is_torchs_swaps():
    n = 9
    torch.manual_seed(11)
    perm, w = list(range(n)), words(11, n)
    for i in range(n - 1):
        z = w[i] % (n - i)
        perm[i], perm[i + z] = perm[i + z], perm[i]
    got = torch.randperm(n)
    assert got.dtype is I and got.tolist() == perm and sorted(perm) == list(range(n))
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        torch.randperm(3, dtype=B)


def test_uniform_and_normal_in_place():
    torch.manual_seed(5)
    x = torch.empty(6).uniform_(-2, 3)
    # x * (to - from) + from rounded once, as aten's contracted multiply-add (cpu_generator.h's uniform_real)
    expected = [np.float32(np.float64(np.float32(w & 0xFFFFFF) * np.float32(2 ** -24)) * 5.0 - 2.0)
                for w in words(5, 6)]
    assert x.tolist() == [float(e) for e in expected]
    torch.manual_seed(5)
    small = torch.randn(3)
    torch.manual_seed(5)
    assert torch.allclose(torch.empty(3).normal_(2, 3), small * 3 + 2)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1"):
        torch.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range, but found from=2"):
        torch.empty(3).uniform_(2, 1)
    y = leaf(3) * 1
    assert node(y.uniform_()) == "UniformBackward0"


def test_multinomial_with_replacement_is_torchs_binary_search():
    p = torch.tensor([0.1, 0.2, 0.7], dtype=D)
    torch.manual_seed(2)
    w = words(2, 10)
    cum = np.cumsum([0.1, 0.2, 0.7]) / 1.0
    expected = []
    for k in range(5):  # each sample: one float64 uniform from two words, its low 53 bits
        u = (((w[2 * k] << 32) | w[2 * k + 1]) & ((1 << 53) - 1)) * 2.0 ** -53
        expected.append(int(np.searchsorted(cum, u, side="left")))
    assert torch.multinomial(p, 5, replacement=True).tolist() == expected


def test_multinomial_without_replacement_and_bad_rows():
    torch.manual_seed(0)
    s = torch.multinomial(torch.tensor([[1., 0, 3, 2], [0, 0, 1, 1]]), 2)
    assert s.shape == (2, 2) and s.dtype is I
    for row, probs in zip(s.tolist(), ([1, 0, 3, 2], [0, 0, 1, 1])):
        assert len(set(row)) == 2 and all(probs[i] > 0 for i in row)
    with pytest.raises(RuntimeError, match="^invalid multinomial distribution \\(sum of probabilities <= 0\\)$"):
        torch.multinomial(torch.zeros(3), 1)
    with pytest.raises(RuntimeError, match="^probability tensor contains either `inf`, `nan` or element < 0$"):
        torch.multinomial(torch.tensor([1., -1]), 1)
    with pytest.raises(RuntimeError, match="^cannot sample n_sample > prob_dist.size\\(-1\\) samples without"):
        torch.multinomial(torch.ones(2), 3)
    with pytest.raises(RuntimeError, match="^multinomial only supports floating-point dtypes for input, got: Long$"):
        torch.multinomial(torch.ones(2, dtype=I), 1)


# [SECTION] Masks and positions -----------------------------------------------------------

def test_tril_triu():
    a = np.arange(24.).reshape(2, 3, 4)
    x = torch.tensor(a)
    assert np.array_equal(torch.tril(x).numpy(), np.tril(a)) and np.array_equal(x.triu(1).numpy(), np.triu(a, 1))
    assert np.array_equal(x.transpose(1, 2).tril(-1).numpy(), np.tril(a.transpose(0, 2, 1), -1))
    y = leaf((3, 4))
    assert node(y.tril()) == "TrilBackward0" and node(y.triu()) == "TriuBackward0"
    assert gradcheck(lambda t: t.tril(1), (y,))
    with pytest.raises(RuntimeError, match="^tril: input tensor must have at least 2 dimensions$"):
        torch.tril(torch.ones(3))


def test_where_and_its_number_overloads():
    c = torch.tensor([True, False, True])
    x, y = torch.tensor([1, 2, 3]), torch.tensor([10., 20, 30])
    assert torch.where(c, x, y).tolist() == [1., 20., 3.] and torch.where(c, x, y).dtype is F
    assert torch.where(c, x, 0).tolist() == [1, 0, 3] and torch.where(c, x, 0).dtype is I
    assert torch.where(c, x, 2.5).dtype is F and torch.where(c, 1.0, 0.0).tolist() == [1., 0., 1.]
    assert x.where(c, -x).tolist() == [1, -2, 3]
    with pytest.raises(RuntimeError, match="^where expected condition to be a boolean tensor, but got a tensor "
                                           "with dtype Float$"):
        torch.where(torch.ones(3), x, y)
    a, b = leaf((2, 3)), leaf((3,), 1)
    cond = torch.tensor([[True, False, True], [False, False, True]])
    assert node(torch.where(cond, a, b)) == "WhereBackward0"
    assert gradcheck(lambda u, v: torch.where(cond, u, v), (a, b))


def test_masked_fill_as_attention_does():
    t = 3
    scores = torch.ones(t, t)
    mask = torch.tril(torch.ones(t, t)) == 0
    filled = scores.masked_fill(mask, float("-inf"))
    assert filled.tolist() == [[1, -math.inf, -math.inf], [1, 1, -math.inf], [1, 1, 1]]
    assert torch.ones(2, 3).masked_fill(torch.tensor([True, False, True]), 0).tolist() == [[0, 1, 0], [0, 1, 0]]
    x = leaf((2, 3))
    m = torch.tensor([[True, False, False], [False, True, False]])
    assert node(x.masked_fill(m, 0.5)) == "MaskedFillBackward0"
    assert gradcheck(lambda u: u.masked_fill(m, 0.5), (x,))
    with pytest.raises(RuntimeError, match="^masked_fill_ only supports boolean masks, but got mask with dtype float$"):
        x.masked_fill(torch.ones(2, 3), 0)


# [SECTION] Index reductions, truth values ------------------------------------------------

def test_argmax_argmin():
    x = torch.tensor([[1., 5., 5.], [7., 0., -1.]])
    assert x.argmax().item() == 3 and x.argmin().item() == 5
    assert x.argmax(dim=1).tolist() == [1, 0] and x.argmin(0, keepdim=True).tolist() == [[0, 1, 1]]
    assert torch.argmax(x, keepdim=True).shape == (1, 1)
    assert torch.tensor([1., float("nan"), 3.]).argmax().item() == 1  # NaN is the maximum, as in torch
    assert torch.tensor([1., float("nan"), 3.]).argmin().item() == 1
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified for input.numel\(\) "
                                           r"== 0.$"):
        torch.zeros(0).argmax()
    with pytest.raises(IndexError, match=r"^argmin\(\): Expected reduction dim 1 to have non-zero size.$"):
        torch.zeros(2, 0).argmin(1)
    with pytest.raises(NotImplementedError, match="\"argmax_cpu\" not implemented for 'Bool'"):
        torch.tensor([True]).argmax()
    assert not torch.argmax(leaf(3)).requires_grad


def test_all_any():
    x = torch.tensor([[1, 0, 2], [3, 4, 5]])
    assert x.all().item() is False and x.any().item() is True
    assert x.all(dim=1).tolist() == [False, True] and (x > 0).any(0, keepdim=True).tolist() == [[True, True, True]]
    assert torch.zeros(0).all().item() is True and torch.zeros(0).any().item() is False
    assert torch.tensor([float("nan")]).all().item() is True
    assert torch.tensor([1, 2], dtype=torch.uint8).all().dtype is torch.uint8  # as aten keeps uint8


def test_isclose_allclose():
    a = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    b = torch.tensor([1.0 + 1e-7, 2.1, float("nan"), float("inf")])
    assert torch.isclose(a, b).tolist() == [True, False, False, True]
    assert torch.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert torch.isclose(torch.tensor([1e10], dtype=D), torch.tensor([1.00001e10], dtype=D)).item()
    assert torch.allclose(a[:1], b[:1]) and not torch.allclose(a, b) and a[:2].allclose(b[:2], atol=0.2)
    with pytest.raises(RuntimeError, match="^Float did not match Long$"):
        torch.isclose(torch.ones(2), torch.ones(2, dtype=I))


# [SECTION] Shapes: stack, split, chunk, narrow, squeeze, unfold, as_strided ----------------------

def test_stack():
    a, b = torch.tensor([1, 2]), torch.tensor([3, 4])
    assert torch.stack([a, b]).tolist() == [[1, 2], [3, 4]] and torch.stack((a, b), dim=1).tolist() == [[1, 3], [2, 4]]
    assert torch.stack([a, b], -1).shape == (2, 2)
    with pytest.raises(RuntimeError, match=r"^stack expects each tensor to be equal size, but got \[2\] at entry 0 and "
                                           r"\[3\] at entry 1$"):
        torch.stack([a, torch.ones(3)])
    u, v = leaf((2, 3)), leaf((2, 3), 1)
    assert gradcheck(lambda p, q: torch.stack([p, q], 1), (u, v))


def test_split_chunk_narrow_are_views():
    x = torch.arange(10).view(2, 5)
    parts = x.split(2, dim=1)
    assert [p.shape[1] for p in parts] == [2, 2, 1] and parts[2].tolist() == [[4], [9]]
    assert [p.tolist() for p in torch.split(x, [1, 4], dim=1)][0] == [[0], [5]]
    assert [c.shape[1] for c in x.chunk(2, 1)] == [3, 2] and len(torch.chunk(torch.arange(5), 3)) == 3
    parts[0][0, 0] = 100
    assert x[0, 0].item() == 100  # a view of x's memory
    assert x.narrow(1, 1, 3).tolist() == [[1, 2, 3], [6, 7, 8]] and x.narrow(0, -1, 1).tolist() == [[5, 6, 7, 8, 9]]
    with pytest.raises(RuntimeError, match=r"^split_with_sizes expects split_sizes to sum exactly to 5"):
        x.split([1, 2], 1)
    with pytest.raises(RuntimeError, match=r"^chunk expects `chunks` to be greater than 0, got: 0$"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match=r"^start \(2\) \+ length \(4\) exceeds dimension size \(5\).$"):
        x.narrow(1, 2, 4)
    y = leaf((4, 3))
    assert gradcheck(lambda t: t.split(3)[1] * 2, (y,)) and gradcheck(lambda t: t.narrow(0, 1, 2), (y,))


def test_squeeze_in_every_form():
    x = torch.zeros(2, 1, 3, 1)
    assert x.squeeze().shape == (2, 3) and x.squeeze(1).shape == (2, 3, 1) and x.squeeze(0).shape == (2, 1, 3, 1)
    assert x.squeeze((1, 3)).shape == (2, 3) and torch.squeeze(x, -1).shape == (2, 1, 3)
    assert x.unsqueeze(0).shape == (1, 2, 1, 3, 1) and torch.zeros(()).squeeze(0).shape == ()
    y = leaf((2, 1, 3))
    assert [node(y.squeeze()), node(y.squeeze(1)), node(y.squeeze([1]))] == ["SqueezeBackward0", "SqueezeBackward1",
                                                                             "SqueezeBackward2"]
    assert y.squeeze()._base is y and gradcheck(lambda t: t.squeeze(1) * 3, (y,))


def test_unfold_and_as_strided():
    x = torch.arange(7.)
    assert x.unfold(0, 3, 2).tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert torch.arange(6.).as_strided((2, 2), (1, 2)).tolist() == [[0, 2], [1, 3]]
    with pytest.raises(RuntimeError, match="^maximum size for tensor at dimension 0 is 7 but size is 8$"):
        x.unfold(0, 8, 1)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24$"):
        torch.arange(6.).as_strided((2, 2), (4, 4))
    y = leaf((2, 6))
    assert node(y.unfold(1, 3, 2)) == "UnfoldBackward0"
    assert gradcheck(lambda t: t.unfold(1, 3, 2), (y,))  # overlapping windows add up
    z = leaf((6,))
    assert gradcheck(lambda t: (t * 1).as_strided((3, 2), (1, 1)), (z,))


# [SECTION] Arithmetic: log10, log2, //, clamp, var, std, norms, einsum ----------------------------

def test_log10_log2():
    x = torch.tensor([1., 10., 100., 8.])
    assert x.log10().tolist() == [0.0, 1.0, 2.0, float(np.log10(np.float32(8)))]
    assert torch.log2(x).tolist()[3] == 3.0 and torch.log2(torch.tensor([4])).dtype is F
    y = torch.tensor([0.5, 2.0, 3.0], dtype=D, requires_grad=True)
    assert node(y.log10()) == "Log10Backward0" and node(y.log2()) == "Log2Backward0"
    assert gradcheck(torch.log10, (y,)) and gradcheck(torch.log2, (y,))


def test_floor_divide_rounds_as_python():
    a = torch.tensor([7, -7, 7, -7])
    b = torch.tensor([2, 2, -2, -2])
    assert (a // b).tolist() == [7 // 2, -7 // 2, 7 // -2, -7 // -2] and (a // 2).dtype is I
    f = torch.tensor([7.0, -7.0, 1.0, -0.5])
    assert (f // 0.1).tolist()[0] == 7.0 // 0.1 == 69.0
    assert (f // 2).tolist() == [3.0, -4.0, 0.0, -1.0] and (7 // torch.tensor([2, 3])).tolist() == [3, 2]
    assert math.copysign(1, (torch.tensor([-0.5]) // torch.tensor([2.0])).item()) == -1  # -0.0
    assert (torch.tensor([1.0]) // 0).item() == math.inf
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        a // 0
    with pytest.raises(NotImplementedError, match="\"div_floor_cpu\" not implemented for 'Bool'"):
        torch.tensor([True]) // torch.tensor([True])
    assert not (leaf(3) // 2).requires_grad  # floor_divide records no node, as in torch


def test_clamp_with_tensors_in_place_and_clip():
    x = torch.tensor([[1., 5., -3.], [0., 2., 9.]])
    lo, hi = torch.tensor([0., 1., 2.]), torch.tensor([[4.], [1.]])
    assert x.clamp(min=lo).tolist() == [[1, 5, 2], [0, 2, 9]]
    assert torch.clamp(x, lo, hi).tolist() == [[1, 4, 2], [0, 1, 1]]  # min > max gives max
    assert x.clip(0, 2).tolist() == [[1, 2, 0], [0, 2, 2]]
    y = x.clone()
    assert y.clamp_(max=2) is y and y.tolist() == [[1, 2, -3], [0, 2, 2]]
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        torch.tensor([1, 2]).clamp_(0.5)
    w = leaf((2, 3)) * 1
    assert node(w.clamp_(-1, 1)) == "ClampBackward1"


def test_keepdims_and_axis_as_numpy_spells_them():
    x = torch.tensor([[1., 2.], [3., 4.]])
    assert x.sum(axis=0, keepdims=True).tolist() == [[4., 6.]] and x.mean(axis=1).tolist() == [1.5, 3.5]
    assert torch.argmax(x, axis=1, keepdims=True).tolist() == [[1], [1]]
    with pytest.raises(TypeError, match=r"got \(int, keepdimss=bool\)"):
        x.sum(0, keepdimss=True)


def test_var_std():
    a = np.random.RandomState(1).uniform(-3, 3, size=(4, 5))
    x = torch.tensor(a)
    assert np.isclose(x.var().item(), a.var(ddof=1)) and np.isclose(x.std(unbiased=False).item(), a.std())
    assert np.allclose(x.var(1).numpy(), a.var(1, ddof=1)) and np.allclose(x.std(0, keepdim=True).numpy(),
                                                                           a.std(0, ddof=1, keepdims=True))
    assert np.allclose(x.var(dim=(0, 1), correction=0).numpy(), a.var())
    with pytest.raises(RuntimeError, match="^std and var only support floating point and complex dtypes$"):
        torch.tensor([1, 2]).var()
    y = leaf((3, 4))
    assert gradcheck(lambda t: t.var(1), (y,)) and gradcheck(lambda t: t.std(), (y,))


def test_norms():
    x = torch.tensor([[3., 4.], [6., 8.]])
    assert x.norm().item() == pytest.approx(math.sqrt(125)) and torch.norm(x, dim=1).tolist() == [5.0, 10.0]
    assert torch.linalg.vector_norm(x, ord=1).item() == 21.0 and torch.linalg.norm(x[0]).item() == 5.0
    assert torch.linalg.vector_norm(x, float("inf"), dim=1).tolist() == [4.0, 8.0]
    assert torch.norm(x, p=3).item() == pytest.approx((27 + 64 + 216 + 512) ** (1 / 3))
    with pytest.raises(RuntimeError, match="^linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long$"):
        torch.linalg.vector_norm(torch.tensor([1]))
    y = leaf((2, 3))
    assert gradcheck(lambda t: t.norm(dim=1), (y,))


def test_sort_topk():
    x = torch.tensor([3., 1., float("nan"), 2., 1.])
    v, i = x.sort()
    assert v.tolist()[:4] == [1., 1., 2., 3.] and math.isnan(v.tolist()[4]) and i.tolist() == [1, 4, 3, 0, 2]
    assert x.sort(descending=True).indices.tolist() == [2, 0, 3, 1, 4]
    t = torch.tensor([[1., 9., 3.], [7., 2., 8.]])
    assert t.topk(2).values.tolist() == [[9., 3.], [8., 7.]] and t.topk(1, dim=0, largest=False).indices.tolist() == [[0, 1, 0]]
    with pytest.raises(RuntimeError, match="^selected index k out of range$"):
        t.topk(4)
    y = leaf((3, 4))
    assert node(y.sort(1)[0]) == "SortBackward0" and node(y.topk(2)[0]) == "TopkBackward0"
    assert gradcheck(lambda u: u.sort(0)[0], (y,)) and gradcheck(lambda u: u.topk(2, 1)[0], (y,))


def test_einsum():
    a, b = np.random.RandomState(2).rand(2, 3), np.random.RandomState(3).rand(3, 4)
    ta, tb = torch.tensor(a), torch.tensor(b)
    assert np.allclose(torch.einsum("ij,jk->ik", ta, tb).numpy(), a @ b)
    assert np.allclose(torch.einsum("ij,jk", ta, tb).numpy(), a @ b)  # implicit output: sorted letters seen once
    assert np.allclose(torch.einsum("ij->ji", ta).numpy(), a.T) and np.isclose(torch.einsum("ij->", ta).item(), a.sum())
    assert np.allclose(torch.einsum("i,j->ij", ta[0], tb[0]).numpy(), np.outer(a[0], b[0]))
    c = np.random.RandomState(4).rand(5, 2, 3)
    assert np.allclose(torch.einsum("bij,jk->bik", torch.tensor(c), tb).numpy(), c @ b)
    u, v = leaf((2, 3)), leaf((3, 4), 1)
    assert gradcheck(lambda p, q: torch.einsum("ij,jk->ik", p, q), (u, v))
    with pytest.raises(NotImplementedError):
        torch.einsum("ii->i", torch.ones(2, 2))


def test_nelement():
    assert torch.zeros(2, 3).nelement() == 6


def test_masks_on_a_device_equal_the_cpu():
    """where, masked_fill, tril and triu on sim:0: copy_ and index_put_ beneath (Note [Masks on a device])."""
    x = torch.tensor(np.random.RandomState(5).standard_normal((4, 5)).astype(np.float32))
    m = torch.tensor([True, False, True, False, False])
    d, md = x.to("sim"), m.to("sim")
    for f in (lambda t, k: t.masked_fill(k, float("-inf")), lambda t, k: torch.where(k, t, 0.5),
              lambda t, k: torch.where(k, 2, t), lambda t, k: t.tril(-1), lambda t, k: t.triu(2)):
        got = f(d, md)
        assert got.device == torch.device("sim:0") and got.cpu().tolist() == f(x, m).tolist()
    y = x.clone().to("sim").requires_grad_()
    y.tril().masked_fill(md, 0).sum().backward()
    keep = np.tril(np.ones((4, 5))) * ~np.array([True, False, True, False, False])
    assert y.grad.cpu().tolist() == keep.tolist()


def test_generator_is_its_own_stream():
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    expected = torch.rand(3).tolist()
    torch.manual_seed(123)
    before = torch.rand(2)
    torch.manual_seed(123)
    assert torch.rand(3, generator=g).tolist() == expected  # g's stream: torch.manual_seed(0)'s numbers
    assert torch.rand(2).tolist() == before.tolist()         # the default stream did not move
    g.manual_seed(7)
    assert torch.randint(7, (6,), generator=g).tolist() == [w % 7 for w in words(7, 6)]
    state = g.get_state()
    a = torch.randperm(8, generator=g)
    g.set_state(state)
    assert torch.randperm(8, generator=g).tolist() == a.tolist() and g.initial_seed() == 7
    x = torch.empty(4)
    assert x.uniform_(generator=torch.Generator().manual_seed(0)).tolist() == expected + [x.tolist()[3]]
    with pytest.raises(TypeError, match="argument 'generator' must be torch.Generator, not int"):
        torch.rand(2, generator=3)


def test_the_rest_on_a_device():
    """sort and topk (a host round trip), argmin (argmax of the order reversed), all/any (ne and sum), and the
    random draws on sim:0: uniform_ and normal_ from the device's counters, the integers from the CPU's stream."""
    x = torch.tensor([[3., -1., 7., -1.], [0., 5., 5., float("nan")]])
    d = x.to("sim")
    assert d.sort(1).values.cpu().tolist()[0] == x.sort(1).values.tolist()[0] and d.topk(2).indices.device == d.device
    assert d.argmin(1).cpu().tolist() == x.argmin(1).tolist() == [1, 3] and d.argmin().item() == x.argmin().item()
    i8 = torch.tensor([-128, 127, 0], dtype=torch.int8)
    assert i8.to("sim").argmin().item() == 0 and torch.tensor([3, 0, 255], dtype=torch.uint8).to("sim").argmin().item() == 1
    assert d.all(1).cpu().tolist() == x.all(1).tolist() and d.any().item() is True
    u = torch.empty(1000, device="sim").uniform_(-2, 3)
    a = u.cpu().numpy()
    assert -2 <= a.min() and a.max() < 3 and abs(a.mean() - 0.5) < 0.2
    torch.manual_seed(0)
    assert torch.randint(10, (5,), device="sim").cpu().tolist() == [4, 9, 3, 0, 3]  # the CPU's stream, copied over
    p = torch.randperm(6, device="sim")
    assert p.device == torch.device("sim:0") and sorted(p.cpu().tolist()) == list(range(6))
    assert torch.multinomial(torch.tensor([0., 1.], device="sim"), 3, True).cpu().tolist() == [1, 1, 1]
