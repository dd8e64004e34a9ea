"""The verifier (descent.verify) and the kernel variants.

descent.verify(op, seed) runs the reference and the optimized kernel of each
op on its sample call, for every dtype, and returns verdicts. Checked here:
every verdict passes, for seeds 1, 2 and 3; every op of the table has one
verdict per dtype; the claims are the right ones (exact ops that ran the
optimized loop claim "bit-for-bit", float sum/mean claim "bound" and stay
within it, ops with one loop claim "single kernel", refused dtypes are
"unsupported" and match the TypeErrors the ops raise); the `descent verify`
and `descent ops` commands. Then descent.set_kernel_variant and
descent._C._last_variant: which loop ran, per thread.
"""
import subprocess
import threading

import numpy as np
import pytest

import descent
from conftest import ALL_DTYPES, DTYPES, OPS_BY_KEY, UNSUPPORTED, cli, python_env, random_array, to_np

OPS = {op["name"]: op for op in descent._C._ops() if op["kind"] != "collective"}  # the rows the verifier holds
SEEDS = [1, 2, 3]


def dirty_the_heap():
    """Frees tensors full of different non-zero bytes, so that the next
    allocations (empty()'s) start with different leftovers, as they do in a
    long-running program: the verdicts of empty() must not depend on them."""
    for k in range(1, 9):
        for dt in DTYPES:
            descent.full([4, 6], k if dt is not descent.bool else True, dtype=dt)


@pytest.fixture(scope="module")
def verdicts():
    dirty_the_heap()
    return {seed: descent.verify(seed=seed) for seed in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(OPS))
def test_every_verdict_passes(name, seed):
    dirty_the_heap()
    vs = descent.verify(name, seed)
    assert [v["dtype"] for v in vs] == ["bool", "int64", "float32", "float64", "float16", "bfloat16", "uint8", "int8",
                                        "int16", "int32"]
    failed = [(v["dtype"], v["claim"], v["detail"]) for v in vs if not v["passed"]]
    assert not failed, failed


@pytest.mark.parametrize("seed", SEEDS)
def test_every_op_has_one_verdict_per_dtype(verdicts, seed):
    vs = verdicts[seed]
    assert len(vs) == len(OPS) * len(ALL_DTYPES)
    assert {(v["op"], v["dtype"]) for v in vs} == {(n, repr(d).split(".")[1]) for n in OPS for d in ALL_DTYPES}


@pytest.mark.parametrize("seed", SEEDS)
def test_claims(verdicts, seed):
    for v in verdicts[seed]:
        op = OPS[v["op"]]
        if v["claim"] == "unsupported":
            assert v["passed"] and v["detail"] and v["variants"] == "", v
            continue
        ran = v["variants"].split(" vs ")
        assert len(ran) == 2, v
        if op["kind"] == "matmul":  # every optimized rung of the CPU's ladder (Note [Matmul rungs])
            assert ran[1] in ("register+packed", "register"), v
            assert v["claim"] == ("bound" if "packed" in ran[1] else "bit-for-bit"), v
        elif ran[1] != "optimized":
            assert v["claim"] == "single kernel", v
        elif op["exactness"] in ("exact", "device_math") or v["dtype"] in ("bool", "int64", "uint8", "int8", "int16",
                                                                              "int32"):
            assert v["claim"] == "bit-for-bit" and v["max_abs_diff"] == 0, v
        else:
            assert v["claim"] == "bound", v
        assert v["max_abs_diff"] <= v["bound"] or v["claim"] != "bound", v


@pytest.mark.parametrize("seed", SEEDS)
def test_sum_mean_float_claim_bound(verdicts, seed):
    for v in verdicts[seed]:
        if v["op"] in ("aten::sum", "aten::sum.dim_IntList", "aten::mean", "aten::mean.dim") \
                and v["dtype"] in ("float32", "float64"):
            assert v["claim"] == "bound" and v["variants"] == "reference vs optimized", v
            assert v["passed"] and 0 <= v["max_abs_diff"] <= v["bound"] and v["bound"] > 0, v


def test_optimized_loops_run(verdicts):
    """Every elementwise op and sum/mean/max/matmul has a float32 fast path that the sample reaches."""
    fast = ("reference vs optimized", "reference vs register+packed")  # a product: its rungs (Note [Matmul rungs])
    ran = {v["op"] for v in verdicts[1] if v["dtype"] == "float32" and v["variants"] in fast}
    wanted = {n for n, op in OPS.items() if op["kind"] in ("unary", "binary")} | {
        "aten::sum", "aten::sum.dim_IntList", "aten::mean", "aten::mean.dim", "aten::max", "aten::matmul",
        "aten::add_.Tensor", "aten::mul_.Tensor", "aten::div_.Tensor", "aten::fill_.Scalar"}
    assert wanted <= ran, wanted - ran


def test_unsupported_matches_the_ops(verdicts):
    refused = {(v["op"], v["dtype"]) for v in verdicts[1] if v["claim"] == "unsupported"}
    assert refused == {(OPS_BY_KEY[n]["name"], repr(d).split(".")[1]) for n, d in UNSUPPORTED}


def test_verify_unknown_op_names_it():
    with pytest.raises(RuntimeError, match="verify\\(\\): no op named 'no_such_op'"):
        descent.verify("no_such_op")


def test_cli_verify_and_ops():
    r = subprocess.run([cli(), "verify", "--op", "add", "--seed", "2"], capture_output=True, text=True,
                       timeout=120, env=python_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("bit-for-bit") == 10 and "10 of 10 verdicts hold" in r.stdout
    r = subprocess.run([cli(), "verify", "--op", "nope"], capture_output=True, text=True, timeout=120,
                       env=python_env())
    assert r.returncode == 2 and "no op named 'nope'" in r.stderr
    r = subprocess.run([cli(), "ops"], capture_output=True, text=True, timeout=120, env=python_env())
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(descent._C._ops())
    assert all(op["schema"] in r.stdout for op in OPS.values())
    # Each row says which keys have kernels, as native_functions.yaml's dispatch: does.
    # (Sim and CUDA where one boxed kernel serves the devices too: Note [One kernel body, two devices].)
    assert {op["dispatch"] for op in OPS.values()} <= {"CPU", "CPU, Sim, CUDA", "BackendSelect, CPU, Sim, CUDA",
                                                       "CompositeImplicitAutograd", "BackendSelect, CPU",
                                                       "BackendSelect, CompositeImplicitAutograd"}
    assert OPS["aten::add.Tensor"]["dispatch"] == "CPU, Sim, CUDA"
    assert all(op["dispatch"] in line for op, line in zip(descent._C._ops(), r.stdout.splitlines()))
    # ... and which node autograd records for it (Note [One derivative per op]).
    lines = dict(zip((op["name"] for op in descent._C._ops()), r.stdout.splitlines()))
    assert "MmBackward0" in lines["aten::mm"] and "(its parts')" in lines["aten::matmul"]
    assert " - " in lines["aten::eq.Tensor"]
    # `descent ops | head -1`: a reader that leaves early is not an error (no traceback, status 0).
    p = subprocess.Popen([cli(), "ops"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=python_env(), bufsize=0)
    p.stdout.close()  # before it has started: its first write finds no reader
    assert p.wait(timeout=120) == 0
    assert p.stderr.read() == b""


# [SECTION] Kernel variants -----------------------------------------------------------------

def test_variant_reference_and_auto():
    x = descent.ones(4, 5)
    descent.set_kernel_variant("reference")
    x + x
    assert descent._C._last_variant() == "reference"
    descent.set_kernel_variant("auto")
    x + x
    assert descent._C._last_variant() == "optimized"
    y = descent.ones(5, 4)
    x.T + y                                       # the fast path needs inputs laid out like the output
    assert descent._C._last_variant() == "reference"
    x.T + x.T                                     # ... which may be transposed, as both are here
    assert descent._C._last_variant() == "optimized"
    x + 1                                         # ... or a broadcast scalar
    assert descent._C._last_variant() == "optimized"
    descent.set_kernel_variant("optimized")
    descent.exp(x)
    assert descent._C._last_variant() == "optimized"


def test_variant_of_other_kernels():
    x = descent.ones(4, 5)
    x.view(5, 4)
    assert descent._C._last_variant() == "view"
    x.contiguous()
    assert descent._C._last_variant() == "none"   # already contiguous: nothing ran
    descent.zeros(3)
    assert descent._C._last_variant() == "reference"
    x == x                                        # comparisons have one loop
    assert descent._C._last_variant() == "reference"


@pytest.mark.parametrize("bad", ["fast", "", "Reference", "auto "])
def test_bad_variant_names(bad):
    with pytest.raises(ValueError, match="auto"):
        descent.set_kernel_variant(bad)


def test_variant_is_per_thread():
    descent.set_kernel_variant("reference")
    seen = []

    def work():
        descent.ones(8) + descent.ones(8)
        seen.append(descent._C._last_variant())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == ["optimized"]                  # the other thread still runs "auto"
    descent.ones(8) + descent.ones(8)
    assert descent._C._last_variant() == "reference"


@pytest.mark.parametrize("name", ["add", "mul", "div", "exp", "tanh", "sigmoid", "matmul", "sum", "max"])
def test_variants_agree(name, rng):
    """The two loops agree: bit for bit, except sum within the summation bound."""
    a = descent.tensor(random_array(rng, (16, 33), descent.float32))
    b = descent.tensor(random_array(rng, (16, 33) if name != "matmul" else (33, 7), descent.float32))
    fn = getattr(descent, name)
    args = (a, b) if name in ("add", "mul", "div", "matmul") else (a,)
    results = {}
    for variant in ("reference", "auto"):
        descent.set_kernel_variant(variant)
        results[variant] = to_np(fn(*args)).copy()
        assert descent._C._last_variant() == ("reference" if variant == "reference" else "optimized")
    if name == "sum":
        bound = 2 * a.numel() * 2.0 ** -24 * float(np.abs(to_np(a)).sum())
        assert abs(float(results["reference"]) - float(results["auto"])) <= bound
    else:
        assert results["reference"].tobytes() == results["auto"].tobytes()


def test_a_collective_is_not_the_verifiers_and_says_why():
    """c10d's rows need a process group: no sample call, no reference (test_distributed.py holds them)."""
    with pytest.raises(ValueError, match="c10d::allreduce_ has no sample call: a collective needs a process group"):
        descent.verify("c10d::allreduce_")
