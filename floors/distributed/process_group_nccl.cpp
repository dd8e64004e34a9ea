// The NCCL process group: Note [NCCL's own stream] (process_group_nccl.h).
#include "floors/distributed/process_group_nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef DESCENT_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>
#endif

#include "floors/allocator/allocator.h"
#include "floors/core/error.h"
#include "floors/launch/launch.h"
#include "floors/streams/device_memory.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::distributed {

namespace {

void check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  throw Error(str(what, " failed: ", ncclGetErrorString(r), " (NCCL ", NCCL_MAJOR, ".", NCCL_MINOR, ")"));
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(str(what, " failed: ", cudaGetErrorString(e)));
}

int env_int(const char* name, int otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : otherwise;
}

// NCCL's type of a dtype; TypeError for one it has none for (PyTorch's class).
ncclDataType_t nccl_type(ScalarType t, const char* fn) {
  switch (t) {
    case ScalarType::Bool:  // as PyTorch's ProcessGroupNCCL: a byte
    case ScalarType::UInt8:
      return ncclUint8;
    case ScalarType::Int8:
      return ncclInt8;
    case ScalarType::Int32:
      return ncclInt32;
    case ScalarType::Int64:
      return ncclInt64;
    case ScalarType::Float16:
      return ncclFloat16;
    case ScalarType::BFloat16:
      return ncclBfloat16;
    case ScalarType::Float32:
      return ncclFloat32;
    case ScalarType::Float64:
      return ncclFloat64;
    default:
      break;
  }
  // PyTorch's words, with c10's name of the dtype (int16 is the one descent has and NCCL lacks).
  throw TypeError(str("Input tensor data type is not supported for NCCL process group: ",
                      t == ScalarType::Int16 ? "Short" : dtype_name(t), " (", fn, ")"));
}

// A bool is a byte to NCCL: its sum is an "or" (max) and its product an "and" (min), as PyTorch maps them.
ncclRedOp_t nccl_op(ReduceOp op, ScalarType t) {
  if (t == ScalarType::Bool && op == ReduceOp::Avg) throw TypeError("Cannot use ReduceOp.AVG with boolean inputs");
  if (t == ScalarType::Bool && op == ReduceOp::Sum) return ncclMax;
  if (t == ScalarType::Bool && op == ReduceOp::Product) return ncclMin;
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Product:
      return ncclProd;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Avg:  // with one rank, a float's average is NCCL's own kernel (a sum times 1/1)
      return ncclAvg;
  }
  return ncclSum;
}

// A collective done on NCCL's stream at `done`: Note [NCCL's own stream].
class WorkNCCL : public Work {
 public:
  explicit WorkNCCL(std::shared_ptr<streams::EventImpl> done) : done_(std::move(done)) {}
  bool is_completed() override { return done_->query(); }
  bool host_waits() const override { return false; }
  void wait() override {
    trace::ScopedSpan span(trace::Floor::Streams, "wait for NCCL's stream");
    const streams::Stream s = streams::current_stream(done_->stream.device);
    span.arg("stream", s.id);
    span.arg(trace::kDecidedAt, DESCENT_HERE);  // the current stream waits; the host goes on
    done_->block(s);
  }

 private:
  std::shared_ptr<streams::EventImpl> done_;  // the watchdog's too, until it has passed
};

// A collective the watchdog waits for: what it prints, in PyTorch's words, when one times out.
struct InFlight {
  int64_t seq;
  const char* op_type;  // c10d's OpType: ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER
  int64_t numel_in, numel_out;
  std::chrono::steady_clock::time_point start;
  std::shared_ptr<streams::EventImpl> done;
};

constexpr std::chrono::milliseconds kWatchdogPoll{100};  // as PyTorch's watchdog, which wakes every 100 ms

// simulate_nccl_async_error's code, until the watchdog's next look takes it (0: none).
std::atomic<int> g_simulated_error{0};

// NCCL's own error, in PyTorch's words (c10d's getNcclErrorDetailStr): what a watchdog that met it prints.
std::string nccl_error_text(ncclResult_t e, ncclComm_t comm) {
  const char* detail = "Unknown NCCL error!";
  switch (e) {
    case ncclUnhandledCudaError:
      detail = "ncclUnhandledCudaError: Call to CUDA function failed.";
      break;
    case ncclSystemError:
      detail = "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ";
      break;
    case ncclInternalError:
      detail = "ncclInternalError: Internal check failed.";
      break;
    case ncclInvalidArgument:
      detail = "ncclInvalidArgument: Invalid value for an argument.";
      break;
    case ncclInvalidUsage:
      detail = "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.";
      break;
    case ncclRemoteError:
      detail =
          "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.";
      break;
    default:
      break;
  }
  int version = 0;
  (void)ncclGetVersion(&version);
  const char* last = ncclGetLastError(comm);
  return str("NCCL error: ", ncclGetErrorString(e), ", NCCL version ", version / 10000, ".", version % 10000 / 100, ".",
             version % 100, "\n", detail, last && *last ? str("\nLast error:\n", last) : std::string());
}

class ProcessGroupNCCL : public ProcessGroup {
 public:
  explicit ProcessGroupNCCL(std::chrono::milliseconds timeout)
      : rank_(env_int("RANK", 0)), size_(env_int("WORLD_SIZE", 1)), timeout_(timeout) {
    DESCENT_CHECK(size_ >= 1 && rank_ >= 0 && rank_ < size_, ValueError, "init_process_group('nccl'): RANK ", rank_,
                  " is not a rank of WORLD_SIZE ", size_);
    device_ = Device{DeviceType::CUDA, env_int("LOCAL_RANK", 0)};
    streams::check_device(device_);
    check_cuda(cudaSetDevice(device_.index), "cudaSetDevice");
    ncclUniqueId id;
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    share_id(id);
    check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    streams::DeviceRuntime& rt = streams::runtime(DeviceType::CUDA);
    stream_ = streams::Stream{device_, rt.create_stream(device_.index)};
    watchdog_ = std::thread([this] { watch(); });
  }
  ~ProcessGroupNCCL() override {
    (void)cudaSetDevice(device_.index);
    // The watchdog still watches: a collective that never ends takes the process down, not this wait.
    (void)cudaStreamSynchronize(static_cast<cudaStream_t>(streams::runtime(DeviceType::CUDA).native(stream_)));
    {
      std::lock_guard<std::mutex> g(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    watchdog_.join();
    (void)ncclCommDestroy(comm_);
#ifdef DESCENT_HAVE_MPI
    if (mpi_started_) MPI_Finalize();
#endif
  }
  const char* backend() const override { return "nccl"; }
  bool serves(DeviceType t) const override { return t == DeviceType::CUDA; }
  bool ends_mpi() const override { return mpi_started_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op, bool /*async_op: a stream wait either way*/) override {
    void* p = memory_of(t, "all_reduce");
    const ncclDataType_t type = nccl_type(t.dtype(), "all_reduce");
    const ncclRedOp_t rop = nccl_op(op, t.dtype());  // before any wait or launch: a refused op leaves no trace
    return collective(
        "ncclAllReduce", "c10d::allreduce_", {"ALLREDUCE", t.numel(), t.numel()}, {&t},
        [&](cudaStream_t s) { check(ncclAllReduce(p, p, size_t(t.numel()), type, rop, comm_, s), "ncclAllReduce"); });
  }
  std::shared_ptr<Work> broadcast(const Tensor& t, int root, bool) override {
    DESCENT_CHECK(root >= 0 && root < size_, ValueError, "broadcast: src ", root, " is not a rank of a group of ",
                  size_);
    void* p = memory_of(t, "broadcast");
    const ncclDataType_t type = nccl_type(t.dtype(), "broadcast");
    return collective(
        "ncclBroadcast", "c10d::broadcast_", {"BROADCAST", t.numel(), t.numel()}, {&t},
        [&](cudaStream_t s) { check(ncclBroadcast(p, p, size_t(t.numel()), type, root, comm_, s), "ncclBroadcast"); });
  }
  std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in, bool) override {
    check_all_gather(out, in);
    const void* src = memory_of(in, "all_gather");
    void* dst = memory_of(out, "all_gather");
    const ncclDataType_t type = nccl_type(in.dtype(), "all_gather");
    return collective(
        "ncclAllGather", "c10d::allgather_", {"ALLGATHER", in.numel(), out.numel()}, {&out, &in},
        [&](cudaStream_t s) { check(ncclAllGather(src, dst, size_t(in.numel()), type, comm_, s), "ncclAllGather"); });
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, bool) override {
    check_reduce_scatter(out, in);
    const void* src = memory_of(in, "reduce_scatter");
    void* dst = memory_of(out, "reduce_scatter");
    const ncclDataType_t type = nccl_type(out.dtype(), "reduce_scatter");
    const ncclRedOp_t rop = nccl_op(op, out.dtype());
    return collective("ncclReduceScatter", "c10d::reduce_scatter_", {"REDUCE_SCATTER", in.numel(), out.numel()},
                      {&out, &in}, [&](cudaStream_t s) {
                        check(ncclReduceScatter(src, dst, size_t(out.numel()), type, rop, comm_, s),
                              "ncclReduceScatter");
                      });
  }
  // As PyTorch's NCCL barrier: an all_reduce of one element on the device, then the host waits for it.
  std::shared_ptr<Work> barrier(bool) override {
    if (!one_) one_ = std::make_unique<Tensor>(empty_tensor(DimVector{1}, ScalarType::Float32, device_));
    std::shared_ptr<Work> w = all_reduce(*one_, ReduceOp::Sum, true);
    streams::synchronize(stream_, "barrier");
    return w;
  }

 private:
  // A CUDA tensor of this group's device, contiguous: its memory.
  void* memory_of(const Tensor& t, const char* fn) const {
    // The c10d kernels ask serves() first and raise PyTorch's "No backend type ..." (c10d_kernels.cpp); this
    // guards a direct call, as the mpi backend's memory_of does.
    DESCENT_CHECK(t.device().type == DeviceType::CUDA, Error, fn, ": the nccl backend takes CUDA tensors, not ",
                  t.device().str(), " (CPU and sim:0 tensors need mpi)");
    DESCENT_CHECK(t.device() == device_, ValueError, fn, ": the nccl backend takes tensors on ", device_.str(),
                  " (this rank's device), not ", t.device().str());
    DESCENT_CHECK(t.is_contiguous(), ValueError, fn, ": Tensors must be contiguous");
    return t.data_ptr();
  }

  // What the watchdog prints of a collective: c10d's OpType, and the elements in and out.
  struct Kind {
    const char* op_type;
    int64_t numel_in, numel_out;
  };

  // Steps 1 to 3 of Note [NCCL's own stream] around `call`, then the watchdog's (Note [NCCL's watchdog]).
  template <class Call>
  std::shared_ptr<Work> collective(const char* nccl_fn, const char* op, Kind kind,
                                   std::initializer_list<const Tensor*> tensors, Call call) {
    const auto start = std::chrono::steady_clock::now();
    streams::DeviceRuntime& rt = streams::runtime(DeviceType::CUDA);
    const streams::Stream compute = streams::current_stream(device_);
    {
      trace::ScopedSpan span(trace::Floor::Streams, "NCCL's stream waits for the current stream");
      span.arg("stream", stream_.id);
      span.arg("after", compute.id);
      std::unique_ptr<streams::EventImpl> ready = rt.create_event(device_.index, false);
      ready->record(compute);
      ready->block(stream_);
    }
    launch::KernelLaunch k;
    k.kernel = nccl_fn;
    k.op = op;
    {
      launch::CudaLaunchScope scope(stream_, k);  // floor 8; NCCL's kernel correlated to it
      call(static_cast<cudaStream_t>(scope.stream()));
    }
    for (const Tensor* t : tensors) streams::device_allocator(device_).record_stream(t->storage()->data, stream_.id);
    std::shared_ptr<streams::EventImpl> done = rt.create_event(device_.index, false);
    done->record(stream_);
    {
      std::lock_guard<std::mutex> g(mu_);
      in_flight_.push_back({++seq_, kind.op_type, kind.numel_in, kind.numel_out, start, done});
    }
    return std::make_shared<WorkNCCL>(std::move(done));
  }

  // The watchdog's thread: every kWatchdogPoll, forgets the collectives whose
  // event has passed, and takes the process down when one has run past the
  // timeout (Note [NCCL's watchdog]).
  void watch() {
    (void)cudaSetDevice(device_.index);  // its queries touch this group's device alone
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, kWatchdogPoll);
      // The events are asked without the lock, so that a collective being queued does not wait for the driver.
      std::vector<InFlight> watching;
      watching.swap(in_flight_);
      lock.unlock();
      std::erase_if(watching, [](const InFlight& w) {
        try {
          return w.done->query();
        } catch (const std::exception&) {
          return true;  // a device error: the next CUDA call on the stream raises it where it can be caught
        }
      });
      // NCCL's own error (a peer that died, a network that failed) ends the process before any timeout.
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) != ncclSuccess) async = ncclSuccess;  // the query itself failed
      if (const int simulated = g_simulated_error.exchange(0)) async = static_cast<ncclResult_t>(simulated);
      if (async != ncclSuccess && async != ncclInProgress)
        take_the_process_down_for(async, watching.empty() ? nullptr : &watching.front());
      const auto now = std::chrono::steady_clock::now();
      for (const InFlight& w : watching)
        if (now - w.start > timeout_) take_the_process_down(w, now);
      lock.lock();
      in_flight_.insert(in_flight_.begin(), std::make_move_iterator(watching.begin()),
                        std::make_move_iterator(watching.end()));  // before any queued meanwhile: in order
    }
  }

  // PyTorch's words (ProcessGroupNCCL's watchdog, with its default
  // TORCH_NCCL_ASYNC_ERROR_HANDLING=3: the process ends, its communicators
  // are not aborted first).
  std::string work_text(const InFlight& w) const {
    return str("WorkNCCL(SeqNum=", w.seq, ", OpType=", w.op_type, ", NumelIn=", w.numel_in, ", NumelOut=", w.numel_out,
               ", Timeout(ms)=", timeout_.count(), ")");
  }
  std::string going_down() const {
    return str("[Rank ", rank_,
               "] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
               "subsequent GPU operations might run on corrupted/incomplete data. To avoid data inconsistency, we are "
               "taking the entire process down.\n");
  }
  [[noreturn]] static void end_with(const std::string& message) {
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    std::abort();
  }
  [[noreturn]] void take_the_process_down(const InFlight& w, std::chrono::steady_clock::time_point now) const {
    const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(now - w.start).count();
    end_with(str("[Rank ", rank_, "] Watchdog caught collective operation timeout: ", work_text(w), " ran for ", ran,
                 " milliseconds before timing out.\n", going_down()));
  }
  // NCCL's asynchronous error `e`; `running`: the oldest collective not yet passed, if any.
  [[noreturn]] void take_the_process_down_for(ncclResult_t e, const InFlight* running) const {
    const std::string error = nccl_error_text(e, comm_);
    end_with(str(running ? str("[Rank ", rank_, "] Collective ", work_text(*running),
                               " raised the following async exception: ", error, "\n")
                         : std::string(),
                 going_down(), "[Rank ", rank_, "] Process group watchdog thread terminated with exception: ", error,
                 "\n"));
  }

  // Rank 0's unique id to every rank: MPI carries it (ranks come from `descent run`, under mpirun).
  void share_id(ncclUniqueId& id) {
    if (size_ == 1) return;
#ifdef DESCENT_HAVE_MPI
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(nullptr, nullptr);
      mpi_started_ = true;
    }
    // MPI's ranks are the ones that carry the id: they must be RANK and WORLD_SIZE.
    int mpi_rank = 0, mpi_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    DESCENT_CHECK(mpi_rank == rank_ && mpi_size == size_, ValueError, "init_process_group('nccl'): rank ", rank_,
                  " of ", size_, " does not match MPI's rank ", mpi_rank, " of ", mpi_size,
                  " (descent run --nproc N sets both)");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    throw Error(str("init_process_group('nccl') with WORLD_SIZE ", size_,
                    ": descent passes NCCL's id between ranks through MPI, and this build has none"));
#endif
  }

  int rank_, size_;
  Device device_{DeviceType::CUDA, 0};
  ncclComm_t comm_ = nullptr;
  streams::Stream stream_;
  std::unique_ptr<Tensor> one_;  // the barrier's element
  bool mpi_started_ = false;
  // Note [NCCL's watchdog]: the collectives not yet passed, guarded by mu_.
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<InFlight> in_flight_;
  int64_t seq_ = 0;  // c10d's SeqNum: the first collective is 1
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_group(std::chrono::milliseconds timeout) {
  return std::make_unique<ProcessGroupNCCL>(timeout);
}

void set_simulated_nccl_error(int code) {
  DESCENT_CHECK(code > ncclSuccess && code < ncclInProgress, ValueError, "simulate_nccl_async_error: ", code,
                " is not one of NCCL's errors (ncclUnhandledCudaError = 1 to ncclRemoteError = 6)");
  g_simulated_error.store(code);
}

}  // namespace descent::distributed
