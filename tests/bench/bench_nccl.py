"""descent.distributed over NCCL beside torch.distributed over NCCL, in the same run (issue 20), on
the GPUs of this host, one process per GPU (here: world size 1 unless --nproc says more and
`descent run` can place them). Rows: all_reduce of 4 KiB (latency) and 256 MiB (bus bandwidth) of
float32, and one DDP training step of an MLP (bucket 25 MiB on both). Medians of --runs runs, each
the mean over many calls after a warm-up; descent and torch run in separate processes, alternately.

    python3 tests/bench/bench_nccl.py --build build [--runs 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

COLLECTIVE = """
import time, sys
LIB = sys.argv[1]
if LIB == "torch":
    import torch as T
    import torch.distributed as dist
else:
    import descent as T
    import descent.distributed as dist
dist.init_process_group("nccl")
for n, reps in ((1024, 2000), (64 << 20, 20)):
    x = T.zeros(n, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    T.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        dist.all_reduce(x)
    T.cuda.synchronize()
    print("ROW", n * 4, (time.perf_counter() - t) / reps * 1e6)
    del x
nn = T.nn
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).to("cuda")
if LIB == "torch":
    from torch.nn.parallel import DistributedDataParallel as DDP
else:
    from descent.nn.parallel import DistributedDataParallel as DDP
ddp = DDP(model, bucket_cap_mb=25)
opt = T.optim.SGD(ddp.parameters(), lr=1e-3)
x, y = T.randn(64, 1024, device="cuda"), T.randn(64, 1024, device="cuda")
loss_fn = nn.MSELoss()
def step():
    opt.zero_grad()
    loss_fn(ddp(x), y).backward()
    opt.step()
for _ in range(10):
    step()
T.cuda.synchronize()
t = time.perf_counter()
for _ in range(50):
    step()
T.cuda.synchronize()
print("ROW ddp", (time.perf_counter() - t) / 50 * 1e6)
dist.destroy_process_group()
"""


def rows(out):
    return {k: float(v) for k, v in re.findall(r"^ROW (\S+) ([\d.]+)$", out, re.M)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="descent-bench-nccl-")
    script = os.path.join(tmp, "coll.py")
    with open(script, "w") as f:
        f.write(COLLECTIVE)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"),
               RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    got = {"torch": {}, "descent": {}}
    for run in range(args.runs):
        for lib in ("torch", "descent"):
            env["MASTER_PORT"] = str(29600 + run * 2 + (lib == "descent"))
            r = subprocess.run([sys.executable, script, lib], capture_output=True, text=True, env=env, timeout=600)
            if r.returncode != 0:
                sys.exit(f"bench_nccl: {lib} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
            for k, v in rows(r.stdout).items():
                got[lib].setdefault(k, []).append(v)
    names = {"4096": "all_reduce 4 KiB (us)", str(256 << 20): "all_reduce 256 MiB (us)", "ddp": "DDP step, MLP 1024-4096-1024, batch 64 (us)"}
    print(f"world size 1, {args.runs} runs, medians\n")
    print("| row | descent | torch | descent / torch |\n|---|---|---|---|")
    for k, name in names.items():
        d, t = statistics.median(got["descent"][k]), statistics.median(got["torch"][k])
        print(f"| {name} | {d:.1f} | {t:.1f} | {d / t:.2f}x |")


if __name__ == "__main__":
    main()
