"""A rank that never calls the collective the others wait in (Note [A collective times out]), run
by test_distributed.py with 2 ranks: rank 0's wait raises after the group's timeout, naming the
collective, and ending the broken group ends every rank instead of hanging. With the argument
"async", rank 0's all_reduce is queued for the MPI worker and its Work's wait() times out; without,
the all_reduce runs on rank 0's own thread (Note [A synchronous collective runs on its caller]),
whose wait for rank 1's fingerprint times out."""
import datetime
import sys
import time

import descent
import descent.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
r = dist.get_rank()
if r == 1:
    time.sleep(120)  # never calls the all_reduce: rank 0 waits alone
    raise SystemExit("rank 1 was not ended by rank 0's abort")
start = time.monotonic()
try:
    if sys.argv[1:] == ["async"]:
        work = dist.all_reduce(descent.ones(2), async_op=True)
        assert not work.is_completed()
        work.wait()
    else:
        dist.all_reduce(descent.ones(2))
except RuntimeError as e:
    assert "Timed out after 2 s waiting for MPI_Allreduce" in str(e), e
    where = "the MPI worker" if sys.argv[1:] == ["async"] else "this thread"
    assert f"({where} is in the exchange of the ranks' fingerprints)" in str(e), e
    print(f"rank 0: timed out after {time.monotonic() - start:.1f} s: {e}", flush=True)
else:
    raise AssertionError("the all_reduce returned without rank 1")
try:  # the group is broken: a later collective is refused, not queued behind the stuck one
    dist.all_reduce(descent.ones(2))
except RuntimeError as e:
    assert "the process group is broken" in str(e), e
    print("rank 0: refused after the timeout", flush=True)
dist.destroy_process_group()  # aborts the job: the worker is still inside MPI
print("rank 0: destroy returned", flush=True)
