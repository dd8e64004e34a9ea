"""descent.distributed, as torch.distributed (issue 20): one default process group over MPI for CPU
and sim:0 tensors, started under `descent run --nproc N`, or over NCCL for CUDA tensors (where the
build found NCCL), and its collectives: all_reduce, broadcast, all_gather, reduce_scatter and
barrier, each synchronous or, with async_op=True, returning a Work. Each is a call of a c10d::
operator (descent.ops.c10d.allreduce_, ...), which descends the floors as any op: the dispatcher
picks the kernel of the tensors' backend key, and the kernel hands the work to the group's backend
(Note [Collectives are c10d ops]). With mpi, wait() blocks until it ran; with nccl, it makes the
current stream wait for NCCL's, and the host goes on (Note [NCCL's own stream])."""
import atexit
import enum
import os

from descent import _C
from descent import ops as _ops

_c10d = _ops.c10d
# The operators, looked up once (each call still descends every floor).
_allreduce_, _broadcast_, _allgather_ = _c10d.allreduce_, _c10d.broadcast_, _c10d.allgather_
_reduce_scatter_, _barrier = _c10d.reduce_scatter_, _c10d.barrier
_GROUP = 0  # the default group's id, the only group descent has


class RedOpType(enum.Enum):
    """c10d's reduce operations, numbered as c10d numbers them (the c10d:: operators take the number)."""
    SUM = 0
    AVG = 1  # nccl only, as in PyTorch
    PRODUCT = 2
    MIN = 3
    MAX = 4


class ReduceOp:
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX


def _red(op):
    if isinstance(op, RedOpType):
        return op.value
    raise TypeError(f"op must be a ReduceOp (descent.distributed.ReduceOp.SUM, ...), not {type(op).__name__}")


class Work:
    """A collective started with async_op=True. wait(): with mpi the host waits until it ran (and
    raises what it raised); with nccl the current stream waits for NCCL's and the host goes on
    (Note [NCCL's own stream]). is_completed() says whether it has run. It keeps its tensors alive
    until then (nccl: the caching allocator keeps their memory for NCCL's stream)."""

    def __init__(self, handle, keep=()):
        self._handle, self._keep = handle, keep
        self._waited = self._done = False

    def is_completed(self):
        return self._done or _C._dist_is_completed(self._handle)

    def wait(self, timeout=None):
        if not self._waited:
            self._done = _C._dist_wait(self._handle)  # raises again on a second wait after a failure
            self._waited = True
            self._keep = ()
        return True

    def __del__(self):
        if not self._done and _C is not None:
            _C._dist_release(self._handle)


def _finish(handle, keep, async_op):
    """With async_op, the collective's Work; else it is waited for here, with no Work made (a few
    hundred nanoseconds of a small collective's time), and its handle let go however the wait ends."""
    if async_op:
        return Work(handle, keep)
    done = False
    try:
        done = _C._dist_wait(handle)  # mpi: the handle is let go; nccl: a stream wait, the handle kept
    finally:
        if not done:
            _C._dist_release(handle)
    return None


def is_available():
    return True


def is_mpi_available():
    return _C._dist_have_mpi()


def is_nccl_available():
    return _C._dist_have_nccl()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """The default process group. With backend "mpi" the ranks come from MPI (`descent run --nproc N`
    starts them), and world_size and rank, when given, must agree with it, as in PyTorch. With
    "nccl" (CUDA tensors) they come from torchrun's RANK and WORLD_SIZE (0 of 1 when unset), and the
    rank's GPU is cuda:LOCAL_RANK. timeout (a datetime.timedelta): how long an mpi collective may be
    waited for (Note [A collective times out]), or an nccl one may run before the watchdog ends the
    process (Note [NCCL's watchdog]). No backend: nccl where it is built and a GPU is there, else mpi."""
    if backend is None:
        import descent
        backend = "nccl" if _C._dist_have_nccl() and descent.cuda.is_available() else "mpi"
    backend = str(backend).lower()
    if backend == "nccl":
        for name, value in (("RANK", rank), ("WORLD_SIZE", world_size)):
            if value not in (-1, None):
                os.environ[name] = str(value)
    # PyTorch's default_pg_timeout, and default_pg_nccl_timeout for nccl
    seconds = (600.0 if backend == "nccl" else 1800.0) if timeout is None else timeout.total_seconds()
    _C._dist_init(backend, seconds)
    atexit.register(_end_at_exit)
    if world_size not in (-1, None) and world_size != _C._dist_world_size():
        raise ValueError(f"world_size {world_size} does not match MPI's {_C._dist_world_size()}")
    if rank not in (-1, None) and rank != _C._dist_rank():
        raise ValueError(f"rank {rank} does not match MPI's {_C._dist_rank()}")


def is_initialized():
    return _C._dist_is_initialized()


def get_rank(group=None):
    return _C._dist_rank()


def get_world_size(group=None):
    return _C._dist_world_size()


def get_backend(group=None):
    return _C._dist_backend()


def destroy_process_group(group=None):
    _C._dist_destroy()


def _end_at_exit():
    """A script that never calls destroy_process_group: its group ends while Python still runs, so
    MPI_Finalize is not left to a static destructor after the interpreter is gone. (PyTorch's
    ProcessGroupMPI registers std::atexit(mpiExit) in C++ for the same end; descent's worker
    thread must be joined while the interpreter can still be waited on, hence a Python hook.)"""
    if _C._dist_is_initialized():
        _C._dist_destroy()


def barrier(group=None, async_op=False, device_ids=None):
    import descent
    # The tensor is for the dispatcher, to pick the backend's key: a CUDA one for nccl, as PyTorch's.
    device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if get_backend() == "nccl" else "cpu"
    one = descent.empty(1, device=device)
    return _finish(_barrier(one, _GROUP, list(device_ids or []), async_op, -1), (one,), async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    return _finish(_allreduce_([tensor], _GROUP, _red(op), None, async_op, -1), (tensor,), async_op)


def broadcast(tensor, src, group=None, async_op=False, group_src=None):
    return _finish(_broadcast_([tensor], _GROUP, src, 0, async_op, -1), (tensor,), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Rank k's tensor into tensor_list[k] of every rank; the copies out of one flat buffer happen at
    wait() (c10d_kernels.cpp)."""
    return _finish(_allgather_(list(tensor_list), [tensor], _GROUP, async_op, -1), (tensor_list, tensor), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    return _finish(_reduce_scatter_([output], list(input_list), _GROUP, _red(op), async_op, -1),
                   (output, input_list), async_op)


def _rank_env():
    """torchrun's variables, from the ones Open MPI's mpirun sets for each rank."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK")
    if rank is None:
        return
    os.environ.setdefault("RANK", rank)
    os.environ.setdefault("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.environ.setdefault("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
