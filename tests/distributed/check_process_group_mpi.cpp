// Every collective of the MPI process group against what one process computes
// (run under mpirun: tests/distributed/README.md). Prints "ok" on each rank,
// or what differed. WORK IN PROGRESS (issue 20): not in ctest yet.
#include <cstdio>
#include <vector>

#include "floors/distributed/process_group_mpi.h"

using namespace descent::distributed;

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what, int rank) {
    if (!ok) {
      std::printf("rank %d: %s differs\n", rank, what);
      ++failures;
    }
  };
  {
    ProcessGroupMPI pg;
    const int r = pg.rank(), n = pg.size();
    std::vector<float> x = {float(r + 1), float(2 * r)};
    pg.all_reduce(x.data(), 2, Element::Float32, ReduceOp::Sum)->wait();
    expect(x[0] == float(n * (n + 1) / 2) && x[1] == float(n * (n - 1)), "all_reduce sum", r);
    std::vector<int64_t> m = {r};
    auto w = pg.all_reduce(m.data(), 1, Element::Int64, ReduceOp::Max);  // async: wait() later
    w->wait();
    expect(w->is_completed() && m[0] == n - 1, "all_reduce max (async)", r);
    std::vector<double> b = {r == 0 ? 3.5 : 0.0};
    pg.broadcast(b.data(), 1, Element::Float64, 0)->wait();
    expect(b[0] == 3.5, "broadcast", r);
    std::vector<int32_t> mine = {r, 10 * r}, all(size_t(2 * n));
    pg.all_gather(mine.data(), all.data(), 2, Element::Int32)->wait();
    bool gathered = true;
    for (int k = 0; k < n; ++k) gathered &= all[size_t(2 * k)] == k && all[size_t(2 * k + 1)] == 10 * k;
    expect(gathered, "all_gather", r);
    std::vector<float> blocks(size_t(n), float(r + 1)), out(1);
    pg.reduce_scatter(blocks.data(), out.data(), 1, Element::Float32, ReduceOp::Sum)->wait();
    expect(out[0] == float(n * (n + 1) / 2), "reduce_scatter", r);
    pg.barrier()->wait();
    bool refused = false;
    try {
      pg.broadcast(b.data(), 1, Element::Float64, n);
    } catch (const std::exception&) {
      refused = true;
    }
    expect(refused, "a broadcast from a rank outside the group refused", r);
    std::printf("rank %d of %d: %s\n", r, n, failures ? "FAILED" : "ok");
  }
  return failures ? 1 : 0;
}
