#!/usr/bin/env python3
"""Facts read off torch.distributed on the H200 host (issue 20; run there with one GPU:
python3 tools/torch-c10d-facts.py): the c10d:: ops' schemas and the keys they have kernels at, the
events PyTorch's profiler records for an NCCL all_reduce, and the errors of bad input (a CPU tensor,
an unsupported dtype, a collective before init, DDP's unused parameter). Its output from PyTorch
2.11 is tests/python/data/torch_c10d_facts_h200.txt; the tests quote it where they hold descent to it."""
import os
import torch
import torch.distributed as dist


def show(label, fn):
    try:
        print(f"{label} => {fn()!r}")
    except BaseException as e:
        print(f"{label} !! {type(e).__name__}: {e}")


os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29511")
show("all_reduce before init", lambda: dist.all_reduce(torch.ones(2, device="cuda")))
for name in ("allreduce_", "broadcast_", "allgather_", "allgather_into_tensor_coalesced", "_allgather_base_",
             "reduce_scatter_", "_reduce_scatter_base_", "barrier"):
    op = getattr(torch.ops.c10d, name, None)
    print("SCHEMA", name, "=>", op.default._schema if op is not None else None)
    if op is not None:
        dump = torch._C._dispatch_dump(f"c10d::{name}")
        print("KERNELS", name, "=>", [ln.split(":")[0].strip() for ln in dump.splitlines() if "registered at" in ln])
dist.init_process_group("nccl")
x = torch.ones(1024, device="cuda")
print("KEYS cuda tensor =>", torch._C._dispatch_keys(x))
dist.all_reduce(x)
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    y = torch.ones(1024, device="cuda")
    dist.all_reduce(y)
    w = dist.all_reduce(y, async_op=True)
    w.wait()
    torch.cuda.synchronize()
for e in prof.events():
    print("EVENT", e.name, "| device", e.device_type, "| parent", e.cpu_parent.name if e.cpu_parent else None)
prof.export_chrome_trace("/tmp/c10d_allreduce_trace.json")
show("cpu tensor", lambda: dist.all_reduce(torch.ones(2)))
for dt in (torch.int16, torch.bool, torch.complex64, torch.float8_e4m3fn, torch.uint16):
    def go(dt=dt):
        t = torch.ones(2, device="cuda").to(dt)
        dist.all_reduce(t)
        torch.cuda.synchronize()
        return t.cpu().tolist() if dt != torch.float8_e4m3fn else t.float().cpu().tolist()
    show(f"dtype {dt}", go)
show("bool max via sum", lambda: (lambda t: (dist.all_reduce(t), t.tolist()))(torch.tensor([True, False], device="cuda")))
show("work type", lambda: type(dist.all_reduce(torch.ones(2, device="cuda"), async_op=True)).__mro__)
show("work repr", lambda: repr(dist.all_reduce(torch.ones(2, device="cuda"), async_op=True)))
show("all_gather wrong list", lambda: dist.all_gather([], torch.ones(2, device="cuda")))
show("reduce_scatter wrong list", lambda: dist.reduce_scatter(torch.ones(2, device="cuda"), []))
show("broadcast bad src", lambda: dist.broadcast(torch.ones(2, device="cuda"), src=3))
show("noncontiguous", lambda: dist.all_reduce(torch.ones(4, 4, device="cuda").t()))
show("get_backend", lambda: dist.get_backend())
show("ReduceOp.SUM", lambda: (repr(dist.ReduceOp.SUM), str(dist.ReduceOp.SUM)))
from torch.nn.parallel import DistributedDataParallel as DDP
m = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2), "b": torch.nn.Linear(2, 2)}).cuda()
class Two(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = torch.nn.Linear(2, 2); self.b = torch.nn.Linear(2, 2)
    def forward(self, x):
        return self.a(x)
ddp = DDP(Two().cuda())
ddp(torch.ones(1, 2, device="cuda")).sum().backward()
show("ddp unused second forward", lambda: ddp(torch.ones(1, 2, device="cuda")))
print("DDP bucket_bytes_cap default =>", DDP(torch.nn.Linear(2, 2).cuda()).bucket_bytes_cap)
dist.destroy_process_group()
show("all_reduce after destroy", lambda: dist.all_reduce(torch.ones(2, device="cuda")))
