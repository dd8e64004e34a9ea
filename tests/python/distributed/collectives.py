import os
import descent
import descent.distributed as dist

dist.init_process_group("mpi")
try:
    dist.init_process_group("mpi")
except ValueError as e:
    assert str(e) == "trying to initialize the default process group twice!", e
else:
    raise AssertionError("a second init_process_group was not refused")
r, n = dist.get_rank(), dist.get_world_size()
assert os.environ["RANK"] == str(r) and os.environ["WORLD_SIZE"] == str(n)
for device in ["cpu", "sim:0"]:
    x = descent.tensor([float(r + 1), float(2 * r)], device=device)
    dist.all_reduce(x)
    assert x.tolist() == [n * (n + 1) / 2, n * (n - 1)], x
    m = descent.tensor([r], device=device)
    w = dist.all_reduce(m, op=dist.ReduceOp.MAX, async_op=True)
    w.wait()
    assert w.is_completed() and m.tolist() == [n - 1]
    b = descent.tensor([3.5 if r == 0 else 0.0], device=device)
    dist.broadcast(b, src=0)
    assert b.tolist() == [3.5]
    outs = [descent.zeros(2, dtype=descent.int32, device=device) for _ in range(n)]
    dist.all_gather(outs, descent.tensor([r, 10 * r], dtype=descent.int32, device=device))
    assert [o.tolist() for o in outs] == [[k, 10 * k] for k in range(n)], outs
    out = descent.zeros(2, device=device)
    dist.reduce_scatter(out, [descent.full((2,), float(r + 1), device=device) for _ in range(n)])
    assert out.tolist() == [n * (n + 1) / 2] * 2, out
    dist.barrier()
    # An async collective whose Work is dropped at once: the MPI queue holds its tensors (the flat input
    # made here among them) until the worker has run it, and a later collective runs after it.
    out = descent.zeros(2, device=device)
    dist.reduce_scatter(out, [descent.full((2,), float(r + 1), device=device) for _ in range(n)], async_op=True)
    dist.barrier()
    assert out.tolist() == [n * (n + 1) / 2] * 2, out
    try:
        # With 2 ranks, 3 + 1 elements are the 2 x 2 the output needs in all, but not a block per rank.
        dist.reduce_scatter(out, [descent.ones(3 if k == 0 else 1, device=device) for k in range(n)])
    except ValueError as e:
        assert "reduce_scatter: input_list[0] is not of the output's size" in str(e), e
    else:
        raise AssertionError("inputs of the wrong sizes were taken")
try:
    dist.all_reduce(descent.ones(2, dtype=descent.float16))
except RuntimeError as e:
    assert "no type for float16" in str(e), e
else:
    raise AssertionError("float16 was not refused")
try:  # refused on the caller, before any rank waits in MPI
    dist.all_reduce(descent.ones(2), op=dist.ReduceOp.AVG)
except ValueError as e:
    assert "the mpi backend has no average" in str(e), e
else:
    raise AssertionError("ReduceOp.AVG was taken by mpi")
dist.destroy_process_group()
print(f"rank {r} of {n}: ok", flush=True)
