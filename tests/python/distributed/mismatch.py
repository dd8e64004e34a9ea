"""Ranks that disagree on a collective's shape (Note [Collectives check their shapes]): every rank
gets ValueError naming each rank's shape, at once, and the group goes on working."""
import descent
import descent.distributed as dist

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
try:
    dist.all_reduce(descent.ones(2 + r))
except ValueError as e:
    text = str(e)
    assert text.startswith("MPI_Allreduce: the ranks' tensors differ (rank 0: [2] float32; rank 1: [3] float32"), text
else:
    raise AssertionError("the ranks' shapes differ, and nothing said so")
try:
    dist.broadcast(descent.ones(4, dtype=descent.int64 if r else descent.float32), src=0)
except ValueError as e:
    assert "rank 0: [4] float32; rank 1: [4] int64" in str(e), e
else:
    raise AssertionError("the ranks' dtypes differ, and nothing said so")
try:  # the same first six sizes, not the same number of elements
    dist.all_reduce(descent.ones(1, 1, 1, 1, 1, 1, 2 + 1000 * r))
except ValueError as e:
    assert "rank 0: [1, 1, 1, 1, 1, 1, ... (2 elements)] float32; rank 1: [1, 1, 1, 1, 1, 1, ... (1002 elements)]" in str(e), e
else:
    raise AssertionError("the ranks' element counts differ, and nothing said so")
try:
    dist.broadcast(descent.ones(2), src=r)
except ValueError as e:
    assert "rank 0: [2] float32, src 0; rank 1: [2] float32, src 1" in str(e), e
else:
    raise AssertionError("the ranks' roots differ, and nothing said so")
x = descent.ones(3)
dist.all_reduce(x)  # the group still works
assert x.tolist() == [float(n)] * 3, x
print(f"rank {r} of {n}: mismatch ok")
dist.destroy_process_group()
