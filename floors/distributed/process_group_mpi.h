// The MPI process group (c10d's ProcessGroupMPI): collectives over the CPU
// memory of tensors, one worker thread making every MPI call. Work in
// progress (issue 20): the collectives are not ops of the table yet; see
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
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace descent::distributed {

enum class ReduceOp { Sum, Product, Min, Max };

// The element types MPI has a type for (float16 and bfloat16 have none, as in
// PyTorch's MPI backend, which refuses them).
enum class Element { Bool, UInt8, Int8, Int16, Int32, Int64, Float32, Float64 };

// One queued collective: done once the worker ran it, error set if it threw.
class Work {
 public:
  bool is_completed();
  void wait();  // rethrows what the collective raised
 private:
  friend class ProcessGroupMPI;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class ProcessGroupMPI {
 public:
  // MPI_Init_thread (once per process), the world's rank and size.
  ProcessGroupMPI();
  ~ProcessGroupMPI();  // drains the queue; MPI_Finalize
  int rank() const { return rank_; }
  int size() const { return size_; }

  // In place over `count` elements at `data` (every rank's the same count).
  std::shared_ptr<Work> all_reduce(void* data, int64_t count, Element e, ReduceOp op);
  std::shared_ptr<Work> broadcast(void* data, int64_t count, Element e, int root);
  // out holds size() x count elements, rank r's at r x count.
  std::shared_ptr<Work> all_gather(const void* in, void* out, int64_t count, Element e);
  // in holds size() x count elements; rank r gets the reduction of every rank's block r.
  std::shared_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count, Element e, ReduceOp op);
  std::shared_ptr<Work> barrier();

 private:
  std::shared_ptr<Work> enqueue(std::function<void()> call);
  void run();

  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<Work>>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace descent::distributed
