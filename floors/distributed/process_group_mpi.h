// The MPI process group (c10d's ProcessGroupMPI): collectives over the
// memory of CPU and sim:0 tensors (a sim:0 tensor's stream is drained first:
// its memory is the host's), one worker thread making every MPI call; see
// floors/distributed/README.md.
//
// Note [One thread makes every MPI call]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// MPI libraries promise at most MPI_THREAD_SERIALIZED by default (Debian's
// Open MPI 4.1.4 gives it): calls from several threads must never overlap.
// PyTorch's ProcessGroupMPI keeps one worker thread that takes queued work
// in order and makes the MPI call; a collective returns a Work at once
// (async_op=True) and wait() blocks until the worker has run it. The order of
// collectives is then the order the program enqueued them, the same on every
// rank, which MPI requires. descent does the same.
//
// Note [Collectives check their shapes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// MPI trusts every rank to pass the same count: an all_reduce of 4 floats on
// one rank and 6 on another reads past a buffer or waits forever. Before each
// collective the worker gathers every rank's fingerprint of it (which
// collective, the dtype, the number of elements, the shape's first sizes, and
// the root or reduce op: a few int64s, always the same count, so this gather
// itself cannot mismatch) and compares them; where they differ,
// every rank skips the collective and its Work raises ValueError naming each
// rank's shape, instead of a hang. PyTorch checks this only with
// TORCH_DISTRIBUTED_DEBUG=DETAIL; descent always does, for a learner whose
// first DDP script gets a shape wrong, at the cost of one small gather per
// collective (a latency, not a bandwidth: docs/BENCHMARKS.md). What it cannot
// catch: an error raised on one rank before its collective is queued (a
// non-contiguous or float16 tensor there alone), or a rank that never calls
// the collective the others wait in: those still hang.
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "floors/distributed/process_group.h"

namespace descent::distributed {

// One queued collective: done once the worker ran it, error set if it threw.
class WorkMPI : public Work {
 public:
  bool is_completed() override;
  void wait() override;  // the host waits; rethrows what the collective raised
  bool host_waits() const override { return true; }

 private:
  friend class ProcessGroupMPI;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class ProcessGroupMPI : public ProcessGroup {
 public:
  // MPI_Init_thread (once per process), the world's rank and size.
  ProcessGroupMPI();
  ~ProcessGroupMPI() override;  // drains the queue; MPI_Finalize
  const char* backend() const override { return "mpi"; }
  bool serves(DeviceType t) const override { return t != DeviceType::CUDA; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& t, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override;
  std::shared_ptr<Work> barrier() override;
  bool ends_mpi() const override { return true; }

 private:
  // Queues `call` for the worker, which runs it in a floor-7 span named
  // `mpi_fn` ("MPI_Allreduce"): the caller's side is an "enqueue" span.
  // `extra`: what else every rank must agree on (the root, the reduce op), -1 for nothing.
  std::shared_ptr<Work> enqueue(const char* mpi_fn, const Tensor* shaped, int64_t extra, std::function<void()> call);
  // Note [Collectives check their shapes]: which collective, dtype, dimensions, elements, extra, the first kMaxDims
  // sizes.
  static constexpr int kMaxDims = 6, kSizesAt = 5;
  using Fingerprint = std::array<int64_t, kSizesAt + kMaxDims>;
  void check_fingerprints(const char* mpi_fn, const Fingerprint& mine);
  void run();

  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  struct Item {
    const char* mpi_fn;
    int64_t bytes;
    Fingerprint print;
    std::function<void()> call;
    std::shared_ptr<WorkMPI> work;
  };
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace descent::distributed
