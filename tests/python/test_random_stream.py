"""The CPU's random numbers are PyTorch's (Note [PyTorch's CPU random stream],
floors/kernels/cpu/cpu_generator.h).

- the engine: the words under rand are std::mt19937's for the same seed (the
  C++ standard's first words and its 10000th word), seeded by the low 32 bits;
- torch's own numbers: what torch 2.11 prints after torch.manual_seed(0), to
  the four decimals it prints (the full-precision values of more cases come
  from tools/torch-random-check.py, run where torch is installed);
- the algorithms, rebuilt here from rand's uniforms with glibc's log, sin and
  cos: randn below 16 elements is normal_distribution<double> with its cached
  sine, from 16 on Box-Muller over blocks of 16 with the tail drawn again
  (bit for bit in float64; in float32 within 4e-6, since torch's x86 kernel,
  which descent follows, has a float32 theta and Cephes' log and sincos, Note
  [torch's AVX2 Box-Muller]);
- a device draws from its own generator: its numbers are not the CPU's, and
  it leaves the CPU's stream where it was.
"""
import math

import numpy as np
import pytest

import descent

F, D, H, BF = descent.float32, descent.float64, descent.float16, descent.bfloat16
MASK53 = (1 << 53) - 1

# What torch 2.11 printed on the CPU (4 decimals), by call after torch.manual_seed(0).
TORCH_2_11 = {
    "randn(3)": [1.5410, -0.2934, -2.1788],
    "rand(3)": [0.4963, 0.7682, 0.0885],
    "randint(0, 10, (5,))": [4, 9, 3, 0, 3],
}

def close_to_printed(got, printed):
    """Each value rounds to what torch printed with 4 decimals."""
    assert len(got) == len(printed), (got, printed)
    for g, p in zip(got, printed):
        assert abs(g - p) <= 0.5e-4 + 1e-9, (got, printed)


def seeded(seed, fn):
    descent.manual_seed(seed)
    return fn()


# [SECTION] The engine: mt19937 -------------------------------------------------------------

def test_the_words_are_std_mt19937s():
    # std::mt19937's first outputs: 3499211612, 581869302, 3890346734 for the
    # default seed 5489; 2357136044 for seed 0. A float32 uniform is the low
    # 24 bits of one word, a float64 one the low 53 bits of two.
    words = [3499211612, 581869302, 3890346734]
    assert [int(x * 2**24) for x in seeded(5489, lambda: descent.rand(3).tolist())] == [w & 0xFFFFFF for w in words]
    assert int(seeded(5489, lambda: descent.rand(1, dtype=D).item()) * 2**53) == ((words[0] << 32) | words[1]) & MASK53
    assert int(seeded(0, lambda: descent.rand(1).item()) * 2**24) == 2357136044 & 0xFFFFFF


def test_the_ten_thousandth_word():
    # The C++ standard ([rand.predef]): the 10000th invocation of a default
    # mt19937 gives 4123659995, 16 regenerations of the state in.
    last = seeded(5489, lambda: descent.rand(5000, dtype=D))[-1].item()
    assert int(last * 2**53) & 0xFFFFFFFF == 4123659995


def test_the_seed_keeps_its_low_32_bits():
    base = seeded(0, lambda: descent.rand(5).tolist())
    assert seeded(2**32, lambda: descent.rand(5).tolist()) == base
    assert seeded(2**64 - 1, lambda: descent.rand(5).tolist()) == seeded(-1, lambda: descent.rand(5).tolist()) \
        == seeded(2**32 - 1, lambda: descent.rand(5).tolist())
    assert seeded(1, lambda: descent.rand(5).tolist()) != base


# [SECTION] Torch's own numbers -------------------------------------------------------------

def test_randn_3_is_torchs():
    close_to_printed(seeded(0, lambda: descent.randn(3).tolist()), TORCH_2_11["randn(3)"])
    # Below 16 elements the sample is a double rounded to the dtype: float64 gives the same numbers, unrounded.
    wide = seeded(0, lambda: descent.randn(3, dtype=D).tolist())
    assert [float(np.float32(x)) for x in wide] == seeded(0, lambda: descent.randn(3).tolist())


def test_rand_3_is_torchs():
    close_to_printed(seeded(0, lambda: descent.rand(3).tolist()), TORCH_2_11["rand(3)"])


def test_randint_is_torchs():
    if not hasattr(descent, "randint"):
        pytest.skip("descent has no randint yet (the CPU stream has random_from_to: cpu_generator.h)")
    assert seeded(0, lambda: descent.randint(0, 10, (5,)).tolist()) == TORCH_2_11["randint(0, 10, (5,))"]


# [SECTION] The algorithms -------------------------------------------------------------------

def blocks(u):
    """torch's normal_fill_16 on one block of 16 uniforms, in float64: pair (j, j + 8),
    r = sqrt(-2 log(1 - u[j])), theta = 2 pi u[j + 8]."""
    z = [0.0] * 16
    for j in range(8):
        r, theta = math.sqrt(-2.0 * math.log(1.0 - u[j])), 2.0 * math.pi * u[j + 8]
        z[j], z[j + 8] = r * math.cos(theta), r * math.sin(theta)
    return z


@pytest.mark.parametrize("seed", [0, 7])
def test_small_randn_is_normal_distribution_double(seed):
    u = seeded(seed, lambda: descent.rand(8, dtype=D).tolist())  # four pairs of float64 uniforms
    want = []
    for k in range(0, 8, 2):
        r = math.sqrt(-2.0 * math.log1p(-u[k + 1]))  # the second uniform is the radius's,
        theta = 2.0 * math.pi * u[k]  # the first the angle's
        want += [r * math.cos(theta), r * math.sin(theta)]
    assert seeded(seed, lambda: descent.randn(7, dtype=D).tolist()) == want[:7]
    assert seeded(seed, lambda: descent.randn(2, 2).tolist()) == [[float(np.float32(w)) for w in want[i:i + 2]]
                                                                  for i in (0, 2)]


def test_the_cached_sine_outlives_the_call():
    four = seeded(0, lambda: descent.randn(4, dtype=D).tolist())
    descent.manual_seed(0)
    assert descent.randn(3, dtype=D).tolist() + descent.randn(1, dtype=D).tolist() == four
    descent.manual_seed(0)
    descent.randn(3, dtype=D)
    descent.rand(5)  # a uniform neither reads nor clears it
    descent.randn(20)  # nor does the block algorithm
    assert descent.randn(1, dtype=D).item() == four[3]
    descent.manual_seed(0)
    descent.randn(3, dtype=D)
    descent.manual_seed(0)  # manual_seed forgets it
    assert descent.randn(1, dtype=D).item() == four[0]


@pytest.mark.parametrize("dtype", [F, D], ids=["float32", "float64"])
@pytest.mark.parametrize("n", [16, 17, 32, 40])
def test_randn_from_16_is_box_muller_over_blocks(dtype, n):
    tail = n % 16 != 0
    u = seeded(3, lambda: descent.rand(n + (16 if tail else 0), dtype=dtype).tolist())  # the same uniforms
    want = []
    for i in range(0, n - 15, 16):
        want += blocks(u[i:i + 16])
    if tail:  # the last 16 elements again, from 16 fresh uniforms
        want = want[:n - 16] + blocks(u[n:n + 16])
    got = seeded(3, lambda: descent.randn(n, dtype=dtype).tolist())
    if dtype is D:
        assert got == want
    else:  # float32's theta and Cephes' log and sincos: within a few float32 roundings of 2 pi r
        assert np.all(np.abs(np.array(got) - np.array(want)) <= 4e-6), (got, want)


def test_rand_keeps_the_low_bits_of_each_word():
    # float16 keeps 11 bits, bfloat16 8: torch's uniform_real in the type
    # (Note [PyTorch's CPU random stream] says which torch this follows).
    assert seeded(0, lambda: descent.rand(1, dtype=H).item()) == (2357136044 & 0x7FF) / 2**11
    assert seeded(0, lambda: descent.rand(1, dtype=BF).item()) == (2357136044 & 0xFF) / 2**8
    for dtype, digits in ((F, 24), (D, 53), (H, 11), (BF, 8)):
        u = seeded(1, lambda: descent.rand(4000, dtype=dtype).tolist())
        assert all(0.0 <= x < 1.0 and (x * 2**digits).is_integer() for x in u)


# [SECTION] A device draws from its own generator --------------------------------------------------

def test_a_device_draws_its_own_stream():
    cpu = seeded(0, lambda: descent.randn(3).tolist())
    sim = seeded(0, lambda: descent.randn(3, device="sim:0").cpu().tolist())
    assert sim != cpu  # Philox counters (random.h), as torch's CUDA numbers are not its CPU ones
    assert seeded(0, lambda: descent.randn(3, device="sim:0").cpu().tolist()) == sim
    descent.manual_seed(0)
    descent.randn(100, device="sim:0")
    assert descent.randn(3).tolist() == cpu  # the device's draws leave the CPU's stream alone


# What tools/torch-random-check.py read off torch 2.11 on the H100 host's CPU (session 12), printed to 8
# significant digits: the in-place draws behind nn.init. uniform_ rounds x * (to - from) + from once, as aten's
# contracted multiply-add does (floors/kernels/cpu/cpu_generator.h's uniform_real).
TORCH_2_11_INIT = {
    "uniform_(-2, 3) of 20, first 8": [0.48128295, 1.841109, -1.5576129, -1.3398476, -0.46288592, 1.1703935,
                                       0.45046705, 2.4822237],
    "normal_(2, 3) of 5": [6.6229882, 1.1197133, -4.5363684, 3.7052939, -1.253567],
    "Linear(3, 2) twice: weight, bias": [-0.0043225177, 0.30971584, -0.47518533, -0.4248946, -0.22236897,
                                         0.15482073, -0.23799711, 0.021387115],
}


def f32_reprs(values):
    return [f"{np.float32(v):.8g}" for v in values]


def test_nn_init_draws_are_torchs_bit_for_bit():
    got = seeded(0, lambda: descent.nn.init.uniform_(descent.empty(20), -2.0, 3.0).tolist()[:8])
    assert f32_reprs(got) == f32_reprs(TORCH_2_11_INIT["uniform_(-2, 3) of 20, first 8"])
    got = seeded(0, lambda: descent.nn.init.normal_(descent.empty(5), 2.0, 3.0).tolist())
    assert f32_reprs(got) == f32_reprs(TORCH_2_11_INIT["normal_(2, 3) of 5"])

    def two_linears():
        a, b = descent.nn.Linear(3, 2), descent.nn.Linear(3, 2)
        return a.weight.reshape(-1).tolist() + b.bias.tolist()
    assert f32_reprs(seeded(0, two_linears)) == f32_reprs(TORCH_2_11_INIT["Linear(3, 2) twice: weight, bias"])
