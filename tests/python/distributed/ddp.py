"""DistributedDataParallel over MPI, run by test_distributed.py under `descent run --nproc N`: an
MLP trained 20 steps on each rank's share of the batch gives the parameters one process gets on the
whole batch, within a stated bound (Note [DDP's buckets]: the same sum in another order)."""
import descent
import descent.distributed as dist
from descent.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()


def mlp():
    return descent.nn.Sequential(descent.nn.Linear(8, 16), descent.nn.ReLU(), descent.nn.Linear(16, 4))


descent.manual_seed(0)
reference = mlp()  # one process, the whole batch
descent.manual_seed(1 + r)  # each rank starts from its own weights: DDP's broadcast makes them rank 0's
model = mlp()
if r == 0:
    with descent.no_grad():
        for p, q in zip(model.parameters(), reference.parameters()):
            p.copy_(q)
ddp = DDP(model, bucket_cap_mb=300 / 2**20)  # 300 bytes: the 4 parameters in 3 buckets
assert len(ddp.buckets) == 3, [len(b.params) for b in ddp.buckets]
for p, q in zip(model.parameters(), reference.parameters()):
    assert p.tolist() == q.tolist(), "the parameters were not broadcast from rank 0"

descent.manual_seed(42)
batch = 24  # shared evenly by 1, 2 or 4 ranks
X, Y = descent.randn(batch, 8), descent.randn(batch, 4)
share = batch // n
x, y = X[r * share:(r + 1) * share], Y[r * share:(r + 1) * share]
loss_fn = descent.nn.MSELoss()
opt = descent.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = descent.optim.SGD(reference.parameters(), lr=0.1)
# Each bucket's all_reduce starts as soon as its gradients are there, during backward: count the
# gradients ready when each starts.
started = []
all_reduce = dist.all_reduce


def spy(tensor, *args, **kwargs):
    started.append(sum(b.ready for b in ddp.buckets))
    return all_reduce(tensor, *args, **kwargs)


dist.all_reduce = spy
for step in range(20):
    opt.zero_grad()
    loss_fn(ddp(x), y).backward()
    opt.step()
    ref_opt.zero_grad()
    loss_fn(reference(X), Y).backward()
    ref_opt.step()
dist.all_reduce = all_reduce
sizes = [len(b.params) for b in ddp.buckets]
assert started[:3] == [sizes[0], sizes[0] + sizes[1], 4], (started[:3], sizes)  # not all at the end
# The bound: float32 sums of 24 terms regrouped (each rank's mean, then the ranks' sum), through 20 steps.
worst = max((p - q).abs().max().item() for p, q in zip(model.parameters(), reference.parameters()))
assert worst <= 2e-6, worst


class Unused(descent.nn.Module):  # b gets no gradient: the next forward says so, as PyTorch's DDP does
    def __init__(self):
        super().__init__()
        self.a, self.b = descent.nn.Linear(2, 2), descent.nn.Linear(2, 2)

    def forward(self, x):
        return self.a(x)


unused = DDP(Unused())
unused(descent.ones(1, 2)).sum().backward()
try:
    unused(descent.ones(1, 2))
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e), e
    # PyTorch's list of the parameters without a gradient: b's weight and bias (torch_c10d_facts_h200.txt).
    assert f"Parameter indices which did not receive grad for rank {r}: 2 3" in str(e), e
else:
    raise AssertionError("a parameter without a gradient went unnoticed")
print(f"rank {r} of {n}: ddp ok, worst difference {worst:.2e}")
dist.destroy_process_group()
