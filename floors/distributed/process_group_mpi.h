// The MPI process group (c10d's ProcessGroupMPI): collectives over the
// memory of CPU and sim:0 tensors (a sim:0 tensor's stream is drained first:
// its memory is the host's), one MPI call at a time, in the order the
// program asked for them; see floors/distributed/README.md.
//
// Note [One MPI call at a time, in order]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// MPI libraries promise at most MPI_THREAD_SERIALIZED by default (Debian's
// Open MPI 4.1.4 gives it): calls from several threads must never overlap.
// PyTorch's ProcessGroupMPI keeps one worker thread that takes queued work
// in order and makes the MPI call; a collective returns a Work at once
// (async_op=True) and wait() blocks until the worker has run it. The order of
// collectives is then the order the program enqueued them, the same on every
// rank, which MPI requires. descent does the same for every collective with
// async_op=True, and for any other that finds the worker busy; a synchronous
// collective that finds it idle, with nothing queued, runs on its caller
// instead, the worker kept out of MPI meanwhile (Note [A synchronous
// collective runs on its caller]). Either way the calls never overlap and
// run in the program's order.
//
// Note [A synchronous collective runs on its caller]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Handing a collective to the worker and waiting for it costs two wake-ups
// of a sleeping thread: the worker's, then the caller's. For a small
// all_reduce they were most of its time (on the development VM, 2 ranks,
// 4 KiB: a C program's MPI_Allreduce 1.1 us, descent's all_reduce 11.3 us
// through the worker and 4.5 us on its caller; docs/BENCHMARKS.md), and
// spinning instead only took the core from the other threads (on two
// cores, each rank's MPI already spins). So a call without async_op, which
// would wait at once, makes the MPI calls itself when the worker is idle and
// nothing is queued: its spans are on the caller's row, with on=caller. This
// is where descent differs from PyTorch, whose every collective goes through
// the worker. It keeps Note [A collective times out]: the caller first
// trades fingerprints with every rank (Note [Collectives check their
// shapes]) by non-blocking sends and receives, polled against the group's
// timeout, and enters the blocking collective only once every rank has sent
// its fingerprint of this same collective, so a rank that never calls it
// is caught in the exchange. What that bound does not cover: a rank whose
// exchange completes just as a peer's times out enters the collective, and
// there waits without one, until the peer, its group broken, ends the job
// (MPI_Abort, at its destroy_process_group or its end); through the
// worker, its wait() would have raised first. The MPI calls are the
// blocking ones, as the worker's: MPI's non-blocking collectives, polled
// against the timeout, were slower than the hand-offs they would save
// (docs/BENCHMARKS.md, session 4).
//
// Note [Collectives check their shapes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// MPI trusts every rank to pass the same count: an all_reduce of 4 floats on
// one rank and 6 on another reads past a buffer or waits forever. Before each
// collective every rank sends every other its fingerprint of it (which
// collective, the dtype, the number of elements, the shape's first sizes, and
// the root or reduce op: a few int64s, always the same count, so this
// exchange itself cannot mismatch) and compares the ones it receives; where
// they differ, every rank skips the collective and its Work raises ValueError
// naming each rank's shape, instead of a hang. PyTorch checks this only with
// TORCH_DISTRIBUTED_DEBUG=DETAIL; descent always does, for a learner whose
// first DDP script gets a shape wrong, at the cost of a few small messages
// per collective (a latency, not a bandwidth: docs/BENCHMARKS.md). What it
// cannot catch: an error raised on one rank before its collective is queued
// (a non-contiguous or float16 tensor there alone), or a rank that never
// calls the collective the others wait in: for those, Note [A collective
// times out].
//
// Note [A collective times out]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A rank that never calls the collective the others are in leaves them
// waiting inside MPI, and an MPI call cannot be interrupted. PyTorch's
// ProcessGroupMPI has no bound (its wait() waits forever); its NCCL backend's
// watchdog has one. descent adds one of its own to the mpi backend:
// Work.wait() waits at most the group's timeout (init_process_group(timeout=...),
// PyTorch's default of 30 minutes for the CPU backends), counted from the
// wait, and a collective run on its caller (Note [A synchronous collective
// runs on its caller]) waits for the other ranks' fingerprints at most as
// long; then it raises RuntimeError naming the collective and the call MPI
// is in (on the worker or on a caller), and the group is broken: a later
// collective is refused, and one queued before is not run (its fingerprint
// would pair with another collective's: the timed-out exchange took one). MPI
// still holds the call (the worker's, or the caller's unanswered receives),
// so the group cannot end cleanly: ending it (destroy_process_group, or the
// script's end) calls MPI_Abort, which ends every rank of the job (PyTorch's
// watchdog likewise tears the process down). Ending a group whose worker is
// still busy past the timeout does the same, so no script hangs forever at
// its end. The NCCL backend's bound is its watchdog's (Note [NCCL's
// watchdog]).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "floors/distributed/process_group.h"

namespace descent::distributed {

// One queued collective: done once the worker ran it, error set if it threw.
class WorkMPI : public Work {
 public:
  bool is_completed() override;
  // The host waits, at most the group's timeout (Note [A collective times out]); rethrows what the collective raised.
  void wait() override;
  bool host_waits() const override { return true; }

 private:
  friend class ProcessGroupMPI;
  const char* mpi_fn_ = "";
  std::chrono::milliseconds timeout_{0};
  std::shared_ptr<std::atomic<const char*>> in_call_;  // the group's
  std::shared_ptr<std::atomic<bool>> in_call_here_;    // the group's
  std::shared_ptr<std::atomic<bool>> broken_;          // the group's: set when a wait times out
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool ran_here_ =
      false;  // run on its caller (Note [A synchronous collective runs on its caller]): nothing to wait for
  std::exception_ptr error_;
};

class ProcessGroupMPI : public ProcessGroup {
 public:
  // MPI_Init_thread (once per process), the world's rank and size; each Work waits at most `timeout`.
  explicit ProcessGroupMPI(std::chrono::milliseconds timeout);
  // Drains the queue; MPI_Finalize. MPI_Abort instead where a wait timed out, or the worker is
  // still busy after the timeout (Note [A collective times out]).
  ~ProcessGroupMPI() override;
  const char* backend() const override { return "mpi"; }
  bool serves(DeviceType t) const override { return t != DeviceType::CUDA; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op, bool async_op) override;
  std::shared_ptr<Work> broadcast(const Tensor& t, int root, bool async_op) override;
  std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in, bool async_op) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, bool async_op) override;
  std::shared_ptr<Work> barrier(bool async_op) override;
  bool ends_mpi() const override { return true; }

 private:
  // Queues `call` for the worker, which runs it in a floor-7 span named
  // `mpi_fn` ("MPI_Allreduce"): the caller's side is an "enqueue" span. Without
  // `async_op`, where the worker is idle and nothing is queued, runs it on this
  // thread instead (Note [A synchronous collective runs on its caller]).
  // `extra`: what else every rank must agree on (the root, the reduce op), -1 for nothing.
  // `keep`: the tensors whose memory `call` reads or writes, held by the queue until the worker has run
  // it (as PyTorch's WorkEntry holds src and dst), whatever becomes of the caller's Work.
  std::shared_ptr<Work> enqueue(const char* mpi_fn, const Tensor* shaped, int64_t extra, bool async_op,
                                std::vector<Tensor> keep, std::function<void()> call);
  // Note [Collectives check their shapes]: which collective, dtype, dimensions, elements, extra, the first kMaxDims
  // sizes.
  static constexpr int kMaxDims = 6, kSizesAt = 5;
  using Fingerprint = std::array<int64_t, kSizesAt + kMaxDims>;
  struct Item {
    const char* mpi_fn;
    int64_t bytes;
    Fingerprint print;
    std::function<void()> call;
    std::shared_ptr<WorkMPI> work;
    std::vector<Tensor> keep;
  };
  // Checks the fingerprints and makes the call, returning what it raised (nothing once the group is broken); on
  // the worker, or on the caller (`here`), whose wait for the other ranks' fingerprints is bounded by the timeout.
  std::exception_ptr run_item(Item& item, bool here);
  void finish(Item& item, std::exception_ptr error);  // marks its Work done, with `error`
  void check_not_broken(const char* mpi_fn) const;    // Error once a collective has timed out
  // Raises ValueError where the ranks' fingerprints differ; RuntimeError where `bounded` and some rank's
  // has not come within the timeout.
  void check_fingerprints(const char* mpi_fn, const Fingerprint& mine, bool bounded);
  void run();

  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool worker_busy_ = false;  // the worker runs an item
  bool caller_busy_ = false;  // a caller runs one (Note [A synchronous collective runs on its caller])
  bool worker_done_ = false;  // run() returned: the queue is drained
  // One exchange of fingerprints: this rank's, every rank's, the sends' and receives' requests.
  struct Exchange;
  // Exchanges that timed out, their requests still pending in MPI: kept until MPI_Abort.
  std::vector<std::unique_ptr<Exchange>> abandoned_;
  struct Comm;                  // the group's MPI communicator, a duplicate of MPI_COMM_WORLD
  std::unique_ptr<Comm> comm_;  // (mpi.h stays out of this header)
  std::chrono::milliseconds timeout_;
  std::shared_ptr<std::atomic<bool>> broken_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<const char*>>
      in_call_ =  // what the worker or caller is in now ("" when idle), for the timeout's message
      std::make_shared<std::atomic<const char*>>("");
  std::shared_ptr<std::atomic<bool>> in_call_here_ = std::make_shared<std::atomic<bool>>(false);  // by a caller
  std::thread worker_;
};

}  // namespace descent::distributed
