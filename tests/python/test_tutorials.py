"""PyTorch's "Learning PyTorch with Examples" scripts, run with
`import descent as torch` (issue 22).

Each script below is the tutorial's code (pytorch/tutorials,
beginner_source/examples_tensor/, examples_autograd/ and examples_nn/), re-typed line for line
with its prose comments left out; `import torch` reads `import descent as
torch`, and nothing else differs: every loop runs the tutorial's full count
of iterations (all eight take a few seconds). The tests check that the loss
falls as it does on torch; where torch is installed (the GPU host) the same
text runs on torch beside it.
"""
import contextlib
import io
import math
import random
import statistics

import numpy as np
import pytest

import descent

POLYNOMIAL_TENSOR = '''
import math
import descent as torch


dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

a = torch.randn((), device=device, dtype=dtype)
b = torch.randn((), device=device, dtype=dtype)
c = torch.randn((), device=device, dtype=dtype)
d = torch.randn((), device=device, dtype=dtype)

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + (b * x) + (c * x.pow(2)) + (d * x.pow(3))

    loss = (y_pred - y).pow(2).sum().item()
    if t % 100 == 99:
        print(t, loss)

    grad_y_pred = -2.0 * (y - y_pred)
    grad_a = grad_y_pred.sum()
    grad_b = torch.matmul(input=grad_y_pred, other=x).sum()
    grad_c = torch.matmul(input=grad_y_pred, other=x.pow(2)).sum()
    grad_d = torch.matmul(input=grad_y_pred, other=x.pow(3)).sum()

    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d


print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
'''

# examples_autograd/polynomial_autograd.py as it reads with torch.set_default_device (a later
# revision asks torch.accelerator instead and zeroes the grads with `a.grad = 0.`, which torch
# itself refuses with a TypeError; test_the_accelerator_line_runs_unchanged runs its first lines).
POLYNOMIAL_AUTOGRAD = '''
import descent as torch
import math

dtype = torch.float
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_default_device(device)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

a = torch.randn((), dtype=dtype, requires_grad=True)
b = torch.randn((), dtype=dtype, requires_grad=True)
c = torch.randn((), dtype=dtype, requires_grad=True)
d = torch.randn((), dtype=dtype, requires_grad=True)

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    loss.backward()

    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
'''

POLYNOMIAL_CUSTOM_FUNCTION = '''
import descent as torch
import math


class LegendrePolynomial3(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

learning_rate = 5e-6
for t in range(2000):
    P3 = LegendrePolynomial3.apply

    y_pred = a + b * P3(c + d * x)

    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    loss.backward()

    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f'Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)')
'''

POLYNOMIAL_NN = '''
import descent as torch
import math


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)

loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-6
for t in range(2000):

    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    model.zero_grad()

    loss.backward()

    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]

print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + {linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
'''

POLYNOMIAL_OPTIM = '''
import descent as torch
import math


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)
loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-6
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
for t in range(2000):
    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    optimizer.zero_grad()

    loss.backward()

    optimizer.step()


linear_layer = model[0]
print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + {linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
'''

# The version of polynomial_optim.py the tutorial shipped before, with RMSprop
# (its prose still says "Here we will use RMSprop").
POLYNOMIAL_OPTIM_RMSPROP = POLYNOMIAL_OPTIM.replace(
    "learning_rate = 1e-6\noptimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)",
    "learning_rate = 1e-3\noptimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)")

POLYNOMIAL_MODULE = '''
import descent as torch
import math


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = Polynomial3()

criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for t in range(2000):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f'Result: {model.string()}')
'''

DYNAMIC_NET = '''
import random
import descent as torch
import math


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y

    def string(self):
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?'


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = DynamicNet()

criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(30000):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 2000 == 1999:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f'Result: {model.string()}')
'''


def run(script, seed=0, torch_module=None):
    """Runs a script as __main__ would, seeded, and returns (the losses it
    printed as (t, loss) pairs, its last line). With torch_module the text
    imports that instead of descent."""
    if torch_module is not None:
        script = script.replace("import descent as torch", "import torch")
        torch_module.manual_seed(seed)
    else:
        descent.manual_seed(seed)
    random.seed(seed)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(script, "<tutorial>", "exec"), {"__name__": "__main__"})
    finally:  # a script's set_default_device stays with the script
        (torch_module or descent).set_default_device(None)
    lines = out.getvalue().splitlines()
    losses = [(int(t), float(v)) for t, v in (line.split() for line in lines[:-1])]
    return losses, lines[-1]


def check_falls(losses, every, count, below):
    """The script printed `count` losses, every `every` steps, falling to below `below`."""
    assert [t for t, _ in losses] == [every * (i + 1) - 1 for i in range(count)]
    values = [v for _, v in losses]
    assert all(v == v for v in values)  # no NaN
    assert values[-1] < values[0] and values[-1] < below


def custom_function_losses_in_float64():
    """The custom Function tutorial's descent, worked in float64 numpy with
    P3's derivative written out: the losses it prints, as (t, loss)."""
    x = np.linspace(-math.pi, math.pi, 2000)
    y = np.sin(x)
    a, b, c, d = 0.0, -1.0, 0.0, 0.3
    losses = []
    for t in range(2000):
        u = c + d * x
        p3 = 0.5 * (5 * u ** 3 - 3 * u)
        r = a + b * p3 - y
        if t % 100 == 99:
            losses.append((t, float((r ** 2).sum())))
        dp3 = 1.5 * (5 * u ** 2 - 1)
        grads = (2 * r.sum(), 2 * (r * p3).sum(), 2 * (r * b * dp3).sum(), 2 * (r * b * dp3 * x).sum())
        a, b, c, d = (v - 5e-6 * g for v, g in zip((a, b, c, d), grads))
    return losses


def test_polynomial_tensor():
    losses, result = run(POLYNOMIAL_TENSOR)
    check_falls(losses, 100, 20, below=100.0)
    assert result.startswith("Result: y = ") and result.endswith(" x^3")


def test_polynomial_autograd():
    losses, result = run(POLYNOMIAL_AUTOGRAD)
    check_falls(losses, 100, 20, below=100.0)
    assert result.startswith("Result: y = ") and result.endswith(" x^3")
    assert descent.get_default_device() == descent.device("cpu")  # set back after the script


def test_set_default_device_moves_the_factories_only():
    """Note [The default device]: factories called without a device make their tensors on the
    default one; an op on tensors stays where its tensors are; None puts the CPU back."""
    descent.set_default_device("sim:0")
    try:
        made = [descent.zeros(2), descent.linspace(0, 1, 3), descent.tensor([1.0]), descent.randn(()),
                descent.arange(3), descent.full((2,), 7.0)]
        assert [str(t.device) for t in made] == ["sim:0"] * 6
        assert str(descent.get_default_device()) == "sim:0"
        cpu = descent.ones(2, device="cpu")
        assert str(cpu.device) == "cpu" and str((cpu + 1).device) == "cpu"
        with descent.trace() as t:
            descent.zeros(2)
        keys = [s["args"].get("keyset", "") for s in t.result.spans()
                if s["floor_name"] == "dispatch" and s["name"] == "aten::zeros"]
        assert keys and "Sim" in keys[-1], [(s["floor_name"], s["name"], s["args"]) for s in t.result.spans()]
    finally:
        descent.set_default_device(None)
    assert str(descent.zeros(1).device) == "cpu"
    with pytest.raises(TypeError, match="expected a device"):
        descent.set_default_device(3)


def test_the_accelerator_line_runs_unchanged():
    """The newest revision of the autograd tutorial picks its device through torch.accelerator."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile("import descent as torch\n"
                     "device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() "
                     "else \"cpu\"\n"
                     "print(f\"Using {device} device\")\n", "<tutorial>", "exec"), {})
    want = "cuda" if descent.cuda.is_available() else "cpu"
    assert out.getvalue() == f"Using {want} device\n"
    assert (descent.accelerator.current_accelerator() is None) == (not descent.cuda.is_available())


def test_polynomial_custom_function():
    losses, result = run(POLYNOMIAL_CUSTOM_FUNCTION)
    check_falls(losses, 100, 20, below=10.0)
    # Its start is fixed (a, b, c, d are given), so its whole curve is known.
    expected = custom_function_losses_in_float64()
    assert [v for _, v in losses] == pytest.approx([v for _, v in expected], rel=1e-3)
    assert result.startswith("Result: y = ") and "* P3(" in result


def test_polynomial_nn():
    losses, result = run(POLYNOMIAL_NN)
    check_falls(losses, 100, 20, below=50.0)
    assert result.startswith("Result: y = ") and result.endswith(" x^3")


def test_polynomial_optim():
    losses, result = run(POLYNOMIAL_OPTIM)
    check_falls(losses, 100, 20, below=50.0)
    assert result.startswith("Result: y = ")


def test_polynomial_optim_with_rmsprop():
    losses, _ = run(POLYNOMIAL_OPTIM_RMSPROP)
    check_falls(losses, 100, 20, below=50.0)


def test_polynomial_module():
    losses, result = run(POLYNOMIAL_MODULE)
    check_falls(losses, 100, 20, below=100.0)
    assert result.startswith("Result: y = ") and result.endswith(" x^3")


def test_dynamic_net():
    losses, result = run(DYNAMIC_NET)
    check_falls(losses, 2000, 15, below=20.0)
    assert result.endswith(" x^5 ?")


# The scripts whose start is random (randn, and DYNAMIC_NET's random.randint too), and how many seeds each runs on
# either side in test_against_torch. On the H200 host (16 cores, torch 2.11) torch's side of these runs took 59 s
# with DYNAMIC_NET on two seeds: its 30000 steps take 12 s a run, POLYNOMIAL_AUTOGRAD's about 2 s (it runs on
# CUDA where there is one), the others 0.2-0.8 s; descent's side took about 0.1 s a run (DYNAMIC_NET 2.5 s) on
# a 2-core CPU machine. DYNAMIC_NET runs one seed, so that the cases take under a minute (about 55 s) there: its
# final losses spread least (see below), well inside the 15% of MARGIN_OF_MEDIAN.
RANDOM_STARTS = {"POLYNOMIAL_TENSOR": 8, "POLYNOMIAL_AUTOGRAD": 5, "POLYNOMIAL_NN": 8, "POLYNOMIAL_OPTIM": 8,
                 "POLYNOMIAL_OPTIM_RMSPROP": 8, "POLYNOMIAL_MODULE": 8, "DYNAMIC_NET": 1}
# How far past torch's own [min, max] over those seeds descent's median final loss may lie: half the width of
# that range, and at least 15% of torch's median final loss (a few seeds can fall close together and measure a
# spread narrower than it is). Measured over 30 seeds on either side (DYNAMIC_NET 10; torch 2.15, CPU), the
# final losses lay in 8.85-14.6 for the plain gradient descents, 8.85-84 for RMSprop (a long tail) and
# 8.53-8.98 for DYNAMIC_NET, each side alike, while every first loss printed was 69 or more. Drawing the seeds
# above at random from those runs, the criterion failed in 1.8% of draws for POLYNOMIAL_AUTOGRAD (5 seeds),
# 0.3% for POLYNOMIAL_TENSOR and POLYNOMIAL_MODULE, 0.1% or less for the others.
MARGIN, MARGIN_OF_MEDIAN = 0.5, 0.15


@pytest.mark.parametrize("name", ["POLYNOMIAL_CUSTOM_FUNCTION", *RANDOM_STARTS])
def test_against_torch(name):
    """The same text on torch. The custom Function's start is fixed, so its
    curve is compared point by point. Every other script starts from random
    numbers, and descent's generator draws other numbers than torch's for a
    seed, so a single run proves little: each runs on both sides over the
    seeds 0..n-1 (RANDOM_STARTS), and descent's median final loss must lie
    within torch's own spread: [min, max] of torch's final losses, widened
    on either side by MARGIN times its width, or by MARGIN_OF_MEDIAN times
    torch's median where that is more. The band is checked to be meaningful:
    its top lies below every first loss either side printed, so a script that
    stopped learning cannot pass."""
    torch = pytest.importorskip("torch")
    script = globals()[name]
    if name == "POLYNOMIAL_CUSTOM_FUNCTION":
        ours, _ = run(script)
        theirs, _ = run(script, torch_module=torch)
        assert [t for t, _ in ours] == [t for t, _ in theirs]
        assert [v for _, v in ours] == pytest.approx([v for _, v in theirs], rel=1e-3)
        return
    seeds = range(RANDOM_STARTS[name])
    ours = [run(script, seed)[0] for seed in seeds]
    theirs = [run(script, seed, torch_module=torch)[0] for seed in seeds]
    assert all([t for t, _ in o] == [t for t, _ in theirs[0]] for o in ours + theirs)
    ours_final = sorted(o[-1][1] for o in ours)
    theirs_final = sorted(t[-1][1] for t in theirs)
    lo, hi = theirs_final[0], theirs_final[-1]
    margin = max(MARGIN * (hi - lo), MARGIN_OF_MEDIAN * statistics.median(theirs_final))
    band = (lo - margin, hi + margin)
    median = statistics.median(ours_final)
    assert band[0] <= median <= band[1], (f"descent's median final loss {median} outside torch's spread widened, "
                                          f"{band}: descent {ours_final}, torch {theirs_final}")
    first = min(r[0][1] for r in ours + theirs)
    assert band[1] < first, f"the band {band} reaches the first losses printed ({first}): it tells nothing"
