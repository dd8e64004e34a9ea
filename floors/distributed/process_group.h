// The default process group of this process (c10d's): what
// init_process_group makes and every collective uses, over one of two
// backends: mpi (CPU and sim:0 tensors, process_group_mpi.h) and nccl (CUDA
// tensors, process_group_nccl.h). The c10d:: operators' kernels call it
// (c10d_kernels.cpp, Note [Collectives are c10d ops]); see README.md.
#pragma once

#include <memory>
#include <string>

#include "floors/core/tensor.h"

namespace descent::distributed {

// Avg is nccl's alone (ncclAvg), as in PyTorch, whose MPI and Gloo backends lack it.
enum class ReduceOp { Sum, Product, Min, Max, Avg };

// What a collective returns (c10d's Work). wait() is the backend's: with
// mpi the host waits until the backend's thread has made the call (and
// rethrows what it raised); with nccl the calling thread's current stream
// waits for NCCL's stream, and the host goes on (Note [NCCL's own stream]).
class Work {
 public:
  virtual ~Work() = default;
  virtual bool is_completed() = 0;
  virtual void wait() = 0;
  // Whether wait() waits on the host (mpi), so that the collective is done once it returns.
  virtual bool host_waits() const = 0;
};

// c10d's ProcessGroup: one backend's collectives over tensors, each started
// on every rank in the same order. The tensors are contiguous, of the
// backend's devices, the same shape on every rank.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual const char* backend() const = 0;  // "mpi", "nccl"
  // Whether the group has a backend for tensors of this device type (c10d's getBackend(type)).
  virtual bool serves(DeviceType t) const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Each takes PyTorch's async_op: false when the caller waits for the Work at once (the mpi backend
  // then runs it on the caller where it can: Note [A synchronous collective runs on its caller]).
  // In place: every rank's t becomes the reduction of all ranks' t.
  virtual std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op, bool async_op) = 0;
  virtual std::shared_ptr<Work> broadcast(const Tensor& t, int root, bool async_op) = 0;
  // out holds size() x in.numel() elements, rank r's at r x in.numel().
  virtual std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in, bool async_op) = 0;
  // in holds size() x out.numel() elements; rank r gets the reduction of every rank's block r.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, bool async_op) = 0;
  virtual std::shared_ptr<Work> barrier(bool async_op) = 0;
  // Whether ending this group ended MPI (MPI_Finalize), which cannot start again in the process.
  virtual bool ends_mpi() const = 0;

 protected:
  // The sizes all_gather and reduce_scatter take (above), for every backend: ValueError otherwise.
  void check_all_gather(const Tensor& out, const Tensor& in) const;
  void check_reduce_scatter(const Tensor& out, const Tensor& in) const;
};

// Whether this build has an MPI library, and NCCL (found at configure time).
bool have_mpi();
bool have_nccl();

// Makes the default group with `backend` ("mpi" or "nccl"); ValueError
// (PyTorch's words) when one exists already or the backend is unknown,
// RuntimeError for a backend this build lacks.
// `timeout_ms`: how long a collective may be waited for (mpi: Note [A
// collective times out]) or may run (nccl: Note [NCCL's watchdog]).
// descent.distributed passes PyTorch's defaults when given none: 30 minutes
// for the CPU backends, 10 for nccl.
void init_process_group(const std::string& backend, int64_t timeout_ms = 30 * 60 * 1000);
// The default group; ValueError (PyTorch's words) before init_process_group.
ProcessGroup& default_group();
bool is_initialized();
// Note [NCCL's watchdog]: the default group's watchdog meets `code` (an
// ncclResult_t) as NCCL's own error at its next look, as a failed peer
// would make it: a test's stand-in. ValueError unless the group is nccl's.
void simulate_nccl_async_error(int code);
// Drains and ends the default group (and MPI, where the group started it:
// a process has one MPI, which cannot start again).
void destroy_process_group();

// The Works the c10d:: kernels return, by handle (Note [Collectives are c10d
// ops], floors/dispatch/ops.h): kept until forget_work; work_of raises Error
// for a handle it does not hold.
int64_t keep_work(std::shared_ptr<Work> w);
std::shared_ptr<Work> work_of(int64_t handle);
void forget_work(int64_t handle);

// Registers the c10d:: operators' kernels at CPU, Sim and CUDA (c10d_kernels.cpp);
// called by register_floors (Note [Registering the floors]).
void register_c10d_kernels();

}  // namespace descent::distributed
