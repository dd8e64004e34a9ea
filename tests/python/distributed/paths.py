"""Note [A synchronous collective runs on its caller], run by test_distributed.py with 2 and 4
ranks: the k-th collectives of the ranks pair up whether each rank runs its collective on its own
thread or through its MPI worker, and whether another thread queues collectives meanwhile."""
import threading

import descent
import descent.distributed as dist

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()

# Rank 0 holds its worker with an async all_reduce, so its next, synchronous one is queued behind it;
# the other ranks run both on their own threads. The pairs are the program's order on every rank.
x, y = descent.ones(1000), descent.full((3,), 2.0)
if r == 0:
    w = dist.all_reduce(x, async_op=True)
    dist.all_reduce(y)
    w.wait()
else:
    dist.all_reduce(x)
    dist.all_reduce(y)
assert x.tolist() == [float(n)] * 1000 and y.tolist() == [2.0 * n] * 3, (x, y)

# Two threads of each rank, one making synchronous collectives (on itself while the worker is idle,
# queued while it is busy), the other async ones waited for at once (through the worker). Every one
# is an all_reduce of ones(4), so whichever pairs with whichever across the ranks, each gives n.
results = {"sync": [], "async": []}


def sync():
    for _ in range(40):
        t = descent.ones(4)
        dist.all_reduce(t)
        results["sync"].append(t.tolist())


def async_():
    for _ in range(40):
        t = descent.ones(4)
        dist.all_reduce(t, async_op=True).wait()
        results["async"].append(t.tolist())


threads = [threading.Thread(target=sync), threading.Thread(target=async_)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert all(v == [float(n)] * 4 for vs in results.values() for v in vs) and len(results["sync"]) == 40, results
dist.destroy_process_group()
print(f"rank {r} of {n}: paths ok", flush=True)
