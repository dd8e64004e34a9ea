// The MPI process group: Note [One thread makes every MPI call] (process_group_mpi.h).
#include "floors/distributed/process_group_mpi.h"

#define OMPI_SKIP_MPICXX 1  // the C API only (its C++ bindings warn under -Wextra)
#include <mpi.h>

#include <climits>
#include <stdexcept>
#include <utility>

namespace descent::distributed {

namespace {

MPI_Datatype mpi_type(Element e) {
  switch (e) {
    case Element::Bool:
      return MPI_C_BOOL;
    case Element::UInt8:
      return MPI_UINT8_T;
    case Element::Int8:
      return MPI_INT8_T;
    case Element::Int16:
      return MPI_INT16_T;
    case Element::Int32:
      return MPI_INT32_T;
    case Element::Int64:
      return MPI_INT64_T;
    case Element::Float32:
      return MPI_FLOAT;
    case Element::Float64:
      return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return MPI_SUM;
    case ReduceOp::Product:
      return MPI_PROD;
    case ReduceOp::Min:
      return MPI_MIN;
    case ReduceOp::Max:
      return MPI_MAX;
  }
  return MPI_OP_NULL;
}

// MPI counts are ints: a larger call is refused by name, not truncated.
int mpi_count(int64_t count, const char* what) {
  if (count < 0 || count > INT_MAX)
    throw std::runtime_error(std::string(what) + ": " + std::to_string(count) +
                             " elements is more than one MPI call takes (2**31 - 1)");
  return static_cast<int>(count);
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, size_t(n)));
}

}  // namespace

bool Work::is_completed() {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

void Work::wait() {
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

ProcessGroupMPI::ProcessGroupMPI() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error("the MPI library gives less than MPI_THREAD_SERIALIZED");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  worker_ = std::thread([this] { run(); });
}

ProcessGroupMPI::~ProcessGroupMPI() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::shared_ptr<Work> ProcessGroupMPI::enqueue(std::function<void()> call) {
  auto w = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_) throw std::runtime_error("the process group is being destroyed");
    queue_.emplace_back(std::move(call), w);
  }
  cv_.notify_one();
  return w;
}

void ProcessGroupMPI::run() {
  for (;;) {
    std::pair<std::function<void()>, std::shared_ptr<Work>> item;
    {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything enqueued has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.first();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> g(item.second->mu_);
      item.second->done_ = true;
      item.second->error_ = error;
    }
    item.second->cv_.notify_all();
  }
}

std::shared_ptr<Work> ProcessGroupMPI::all_reduce(void* data, int64_t count, Element e, ReduceOp op) {
  const int n = mpi_count(count, "all_reduce");
  return enqueue(
      [=] { check(MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_type(e), mpi_op(op), MPI_COMM_WORLD), "MPI_Allreduce"); });
}

std::shared_ptr<Work> ProcessGroupMPI::broadcast(void* data, int64_t count, Element e, int root) {
  const int n = mpi_count(count, "broadcast");
  if (root < 0 || root >= size_)
    throw std::runtime_error("broadcast: src " + std::to_string(root) + " is not a rank of a group of " +
                             std::to_string(size_));
  return enqueue([=] { check(MPI_Bcast(data, n, mpi_type(e), root, MPI_COMM_WORLD), "MPI_Bcast"); });
}

std::shared_ptr<Work> ProcessGroupMPI::all_gather(const void* in, void* out, int64_t count, Element e) {
  const int n = mpi_count(count, "all_gather");
  return enqueue(
      [=] { check(MPI_Allgather(in, n, mpi_type(e), out, n, mpi_type(e), MPI_COMM_WORLD), "MPI_Allgather"); });
}

std::shared_ptr<Work> ProcessGroupMPI::reduce_scatter(const void* in, void* out, int64_t count, Element e,
                                                      ReduceOp op) {
  const int n = mpi_count(count, "reduce_scatter");
  return enqueue([=] {
    check(MPI_Reduce_scatter_block(in, out, n, mpi_type(e), mpi_op(op), MPI_COMM_WORLD), "MPI_Reduce_scatter_block");
  });
}

std::shared_ptr<Work> ProcessGroupMPI::barrier() {
  return enqueue([] { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); });
}

}  // namespace descent::distributed
