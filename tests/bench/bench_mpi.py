"""descent.distributed's all_reduce over MPI beside a plain C program's MPI_Allreduce, in the same
run (issue 20: within 1.1x). Both on N ranks of this machine under mpirun, 4 KiB and 64 MiB of
float32, the mean over many calls after a warm-up; three runs, their medians.

    python3 tests/bench/bench_mpi.py --build build [--nproc 2] [--runs 3]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

PLAIN = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long sizes[2] = {1024, 16L << 20};
  int reps[2] = {2000, 10};
  for (int s = 0; s < 2; ++s) {
    float* x = calloc(sizes[s], sizeof(float));
    for (int w = 0; w < 3; ++w) MPI_Allreduce(MPI_IN_PLACE, x, sizes[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < reps[s]; ++i) MPI_Allreduce(MPI_IN_PLACE, x, sizes[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%ld %.3f\n", sizes[s] * 4, (MPI_Wtime() - t) / reps[s] * 1e6);
    free(x);
  }
  MPI_Finalize();
  return 0;
}
"""

DESCENT = """
import time, descent, descent.distributed as dist
dist.init_process_group("mpi")
for n, reps in ((1024, 2000), (16 << 20, 10)):
    x = descent.zeros(n)
    for _ in range(3):
        dist.all_reduce(x)
    dist.barrier()
    t = time.perf_counter()
    for _ in range(reps):
        dist.all_reduce(x)
    if dist.get_rank() == 0:
        print(n * 4, (time.perf_counter() - t) / reps * 1e6)
dist.destroy_process_group()
"""


def times(out):
    return {int(b): float(us) for b, us in re.findall(r"^(\d+) ([\d.]+)$", out, re.M)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        sys.exit("bench_mpi: needs mpicc and mpirun (Debian's libopenmpi-dev, openmpi-bin)")
    tmp = tempfile.mkdtemp(prefix="descent-bench-mpi-")
    with open(os.path.join(tmp, "plain.c"), "w") as f:
        f.write(PLAIN)
    subprocess.run(["mpicc", "-O2", "-o", os.path.join(tmp, "plain"), os.path.join(tmp, "plain.c")], check=True)
    with open(os.path.join(tmp, "desc.py"), "w") as f:
        f.write(DESCENT)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    plain, desc = {}, {}
    for _ in range(args.runs):
        out = subprocess.run(["mpirun", "--oversubscribe", "-np", str(args.nproc), os.path.join(tmp, "plain")],
                             capture_output=True, text=True, check=True, env=env).stdout
        for b, us in times(out).items():
            plain.setdefault(b, []).append(us)
        out = subprocess.run([sys.executable, "-m", "descent", "run", "--nproc", str(args.nproc),
                              os.path.join(tmp, "desc.py")], capture_output=True, text=True, check=True, env=env).stdout
        for b, us in times(out).items():
            desc.setdefault(b, []).append(us)
    print(f"| bytes | plain MPI_Allreduce | descent all_reduce | ratio | ({args.nproc} ranks, median of {args.runs}) |")
    print("|---|---|---|---|---|")
    for b in sorted(plain):
        mp, md = statistics.median(plain[b]), statistics.median(desc[b])
        print(f"| {b} | {mp:.1f} us | {md:.1f} us | {md / mp:.2f}x | |")


if __name__ == "__main__":
    main()
