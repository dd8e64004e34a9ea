"""DistributedDataParallel, as torch.nn.parallel.DistributedDataParallel does it (issue 20): every
rank holds the whole model and runs its share of the batch; backward's gradients are averaged over
the ranks in buckets, each bucket's all_reduce started as soon as its gradients are all there, so
that the communication overlaps the rest of backward.

Note [DDP's buckets]
~~~~~~~~~~~~~~~~~~~~
At construction the parameters and buffers are broadcast from rank 0 (every rank starts from the
same model; the buffers again before each forward, with broadcast_buffers), and the parameters
split into buckets of at most `bucket_cap_mb` and of one dtype, in the reverse order of
module.parameters(): backward computes the last layer's gradients first, so the first bucket fills
first. A hook on each
parameter's AccumulateGrad node (the node that writes .grad) copies the new gradient into its
bucket's flat buffer, divided by the world size, as PyTorch's default communication hook divides
it; when a bucket is full its all_reduce starts with async_op=True, in bucket order (every rank must
start its collectives in the same order, so a bucket ready early waits for the ones before it).
When the last bucket has started, every Work is waited on and each parameter's .grad is set to its
slice of its bucket: the average of the ranks' gradients. The parameters' .grad then hold what one
process would compute on the whole batch, up to the order of the additions (each rank's mean, then
their sum, where one process sums the whole batch's terms in one go).

Two differences from PyTorch, on purpose: bucket_cap_mb defaults to 1 KiB here where PyTorch's is
25 MiB (and its first bucket 1 MiB), so that a lesson's small model shows several buckets and their
overlap with backward; and the Works are waited on in the hook of the last gradient, where PyTorch's
Reducer queues a callback at the end of backward (the same moment when every parameter gets a
gradient; descent has no find_unused_parameters: a parameter without one is an error, as it is in
PyTorch by default: the next forward raises RuntimeError, as PyTorch's does, where a backward did
not give every parameter a gradient).
"""
from ..modules import Module
from ... import distributed as dist
import descent

_DEFAULT_BUCKET_BYTES = 1024  # Note [DDP's buckets]: small, for lessons
# PyTorch's other keyword arguments, accepted and without effect here (a misspelt one is a TypeError).
_IGNORED = {"check_reduction", "gradient_as_bucket_view", "static_graph", "delay_all_reduce_named_params",
            "param_to_hook_all_reduce", "mixed_precision", "device_mesh", "init_sync", "skip_all_reduce_unused_params"}


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.numel = sum(p.numel() for p in params)
        self.flat = None  # allocated on first use, on the parameters' device
        self.ready = 0
        self.work = None


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, **kwargs):
        super().__init__()
        unknown = sorted(set(kwargs) - _IGNORED)
        if unknown:
            raise TypeError(f"DistributedDataParallel.__init__() got an unexpected keyword argument '{unknown[0]}'")
        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        if find_unused_parameters:
            raise NotImplementedError("descent's DistributedDataParallel has no find_unused_parameters "
                                      "(Note [DDP's buckets])")
        self.module = module
        self.world_size = dist.get_world_size()
        params = [p for p in module.parameters() if p.requires_grad]
        devices = {str(p.device) for p in params}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel's parameters must be on one device, not {sorted(devices)}")
        self.broadcast_buffers = broadcast_buffers
        for p in params:  # every rank starts from rank 0's model
            dist.broadcast(p.detach(), src=0)
        self._broadcast_buffers()
        cap = _DEFAULT_BUCKET_BYTES if bucket_cap_mb is None else int(bucket_cap_mb * 1024 * 1024)
        self.buckets = []
        current, size = [], 0
        for p in reversed(params):  # backward's order, roughly: the last layer first
            nbytes = p.numel() * p.dtype.itemsize
            if current and (size + nbytes > cap or p.dtype != current[0].dtype):  # a bucket is one flat tensor
                self.buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            self.buckets.append(_Bucket(current))
        self._slot = {}  # id(param) -> (bucket index, offset)
        for b, bucket in enumerate(self.buckets):
            offset = 0
            for p in bucket.params:
                self._slot[id(p)] = (b, offset)
                offset += p.numel()
        self._next = 0  # the next bucket to start
        self._params, self._got_grad = params, set()  # which got a gradient this iteration (ids)
        self._grad_accumulators = []  # kept alive: the hooks live on them
        for p in params:
            acc = p.expand(p.shape).grad_fn.next_functions[0][0]
            acc.register_hook(self._hook_for(p))
            self._grad_accumulators.append(acc)

    def forward(self, *inputs, **kwargs):
        if self._next != 0 or any(b.ready for b in self.buckets):
            missing = " ".join(str(i) for i, p in enumerate(self._params) if id(p) not in self._got_grad)
            raise RuntimeError(  # PyTorch's first sentences and its list of indices
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss (descent's "
                "DistributedDataParallel has no find_unused_parameters: Note [DDP's buckets]).\n"
                f"Parameter indices which did not receive grad for rank {dist.get_rank()}: {missing}")
        if self.broadcast_buffers:
            self._broadcast_buffers()
        return self.module(*inputs, **kwargs)

    def _broadcast_buffers(self):
        for b in self.module.buffers():
            dist.broadcast(b.detach(), src=0)

    def _hook_for(self, p):
        def hook(grad_inputs, grad_outputs):
            self._mark_ready(p)
        return hook

    def _mark_ready(self, p):
        b, offset = self._slot[id(p)]
        self._got_grad.add(id(p))
        bucket = self.buckets[b]
        if bucket.flat is None:
            bucket.flat = descent.zeros(bucket.numel, dtype=p.dtype, device=p.device)
        with descent.no_grad():
            bucket.flat[offset:offset + p.numel()].copy_(p.grad.reshape(-1) / self.world_size)
        bucket.ready += 1
        # Start the full buckets, in order (Note [DDP's buckets]).
        while self._next < len(self.buckets) and self.buckets[self._next].ready == len(self.buckets[self._next].params):
            nxt = self.buckets[self._next]
            nxt.work = dist.all_reduce(nxt.flat, async_op=True)
            self._next += 1
        if self._next == len(self.buckets):
            self._finish()

    def _finish(self):
        for bucket in self.buckets:
            bucket.work.wait()
            offset = 0
            for p in bucket.params:
                with descent.no_grad():
                    p.grad.copy_(bucket.flat[offset:offset + p.numel()].view(p.shape))
                offset += p.numel()
            bucket.ready, bucket.work = 0, None
        self._next = 0
        self._got_grad.clear()
