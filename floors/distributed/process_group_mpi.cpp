// The MPI process group: Note [One MPI call at a time, in order] and Note [A synchronous collective runs on
// its caller] (process_group_mpi.h).
#include "floors/distributed/process_group_mpi.h"

#define OMPI_SKIP_MPICXX 1  // the C API only (its C++ bindings warn under -Wextra)
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string_view>
#include <vector>
#include <stdexcept>
#include <utility>

#include "floors/core/error.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::distributed {

namespace {

// The MPI type of a dtype (float16 and bfloat16 have none, as in PyTorch's
// MPI backend, which refuses them).
MPI_Datatype mpi_type(ScalarType t, const char* fn) {
  switch (t) {
    case ScalarType::Bool:
      return MPI_C_BOOL;
    case ScalarType::UInt8:
      return MPI_UINT8_T;
    case ScalarType::Int8:
      return MPI_INT8_T;
    case ScalarType::Int16:
      return MPI_INT16_T;
    case ScalarType::Int32:
      return MPI_INT32_T;
    case ScalarType::Int64:
      return MPI_INT64_T;
    case ScalarType::Float32:
      return MPI_FLOAT;
    case ScalarType::Float64:
      return MPI_DOUBLE;
    default:
      break;
  }
  throw Error(str(fn, ": the mpi backend has no type for ", dtype_name(t), " (MPI has none for 16-bit floats)"));
}

int64_t bytes_of(const Tensor& t) { return t.numel() * int64_t(element_size(t.dtype())); }

// The memory the mpi backend reads and writes: a contiguous CPU or sim:0
// tensor's (sim:0's memory is the host's: its stream is drained first, so
// the kernels queued before are done).
void* memory_of(const Tensor& t, const char* fn) {
  const Device d = t.device();
  DESCENT_CHECK(d.type != DeviceType::CUDA, Error, fn, ": the mpi backend takes CPU and sim:0 tensors, not ", d.str(),
                " (CUDA tensors need nccl)");
  DESCENT_CHECK(t.is_contiguous(), Error, fn, ": Tensors must be contiguous");
  if (d.type == DeviceType::Sim) streams::synchronize(d, "collective");
  return t.data_ptr();
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
    case ReduceOp::Avg:
      break;
  }
  // PyTorch's ProcessGroupMPI has no MPI op for AVG either, and fails on its worker; descent refuses on the caller.
  throw ValueError("ReduceOp.AVG: the mpi backend has no average (nccl has one)");
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

// Note [A collective times out]: what a wait past the timeout raises.
Error timed_out(std::chrono::milliseconds timeout, const char* mpi_fn, const std::string& in) {
  return Error(str("Timed out after ", double(timeout.count()) / 1000, " s waiting for ", mpi_fn,
                   in.empty() ? std::string() : " (" + in + ")",
                   ": the other ranks did not join it (a rank that never calls it, or calls another first). "
                   "The process group is broken: ending it ends every rank (MPI_Abort). "
                   "Note [A collective times out]"));
}

// The tag of the fingerprints' messages (Note [Collectives check their shapes]): a rank's k-th goes with
// every other rank's k-th, as MPI delivers the messages between two ranks in the order they were sent.
constexpr int kFingerprintTag = 0x6473;

}  // namespace

struct ProcessGroupMPI::Exchange {
  Fingerprint mine;
  std::vector<Fingerprint> all;
  std::vector<MPI_Request> requests;
};

struct ProcessGroupMPI::Comm {
  MPI_Comm c = MPI_COMM_NULL;
};

bool WorkMPI::is_completed() {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

void WorkMPI::wait() {
  if (ran_here_) {  // run by the caller, done before its Work was returned: nothing to wait for
    if (error_) std::rethrow_exception(error_);
    return;
  }
  trace::ScopedSpan span(trace::Floor::Streams, "wait for the MPI worker");  // the host waits
  std::unique_lock<std::mutex> g(mu_);
  if (!cv_.wait_for(g, timeout_, [&] { return done_; })) {  // Note [A collective times out]
    broken_->store(true);
    const std::string in = in_call_->load();
    const char* who = in_call_here_->load() ? "a collective run on its caller is in " : "the MPI worker is in ";
    throw timed_out(timeout_, mpi_fn_, in.empty() ? in : who + in);
  }
  if (error_) std::rethrow_exception(error_);
}

ProcessGroupMPI::ProcessGroupMPI(std::chrono::milliseconds timeout) : timeout_(timeout) {
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
  // The group's own communicator: no message of the script's (mpi4py's on the world's, say) can meet the
  // fingerprints' (Note [Collectives check their shapes]).
  comm_ = std::make_unique<Comm>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_->c), "MPI_Comm_dup");
  worker_ = std::thread([this] { run(); });
}

ProcessGroupMPI::~ProcessGroupMPI() {
  bool drained = false;
  {
    std::unique_lock<std::mutex> g(mu_);
    stopping_ = true;
    cv_.notify_all();
    // A broken group ends at once; broken_ is read again after the wait, as a collective on its caller
    // may time out during it (and then notifies).
    drained = cv_.wait_for(g, timeout_, [&] { return worker_done_ || broken_->load(); }) && !broken_->load();
  }
  if (!drained) {  // a wait timed out, or the worker is still in MPI: Note [A collective times out]
    std::fprintf(stderr, "descent: rank %d: a collective timed out; MPI_Abort ends every rank of the job\n", rank_);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);  // does not return
  }
  worker_.join();
  MPI_Comm_free(&comm_->c);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Note [A collective times out]: a broken group makes no more MPI calls.
void ProcessGroupMPI::check_not_broken(const char* mpi_fn) const {
  DESCENT_CHECK(!broken_->load(), Error, mpi_fn,
                ": the process group is broken (a collective timed out: Note [A collective times out]); end it");
}

std::shared_ptr<Work> ProcessGroupMPI::enqueue(const char* mpi_fn, const Tensor* shaped, int64_t extra, bool async_op,
                                               std::vector<Tensor> keep, std::function<void()> call) {
  check_not_broken(mpi_fn);
  auto w = std::make_shared<WorkMPI>();
  w->mpi_fn_ = mpi_fn;
  w->timeout_ = timeout_;
  w->broken_ = broken_;
  w->in_call_ = in_call_;
  w->in_call_here_ = in_call_here_;
  Fingerprint print{};
  print.fill(-1);
  print[0] = static_cast<int64_t>(std::hash<std::string_view>{}(mpi_fn)&0x7fffffff);
  print[4] = extra;
  if (shaped) {
    print[1] = static_cast<int64_t>(shaped->dtype());
    print[2] = shaped->dim();
    print[3] = shaped->numel();
    for (int64_t d = 0; d < shaped->dim() && d < kMaxDims; ++d) print[size_t(kSizesAt + d)] = shaped->size(d);
  }
  Item item{mpi_fn, shaped ? bytes_of(*shaped) : 0, print, std::move(call), w, std::move(keep)};
  std::unique_lock<std::mutex> g(mu_);
  if (stopping_) throw std::runtime_error("the process group is being destroyed");
  // Note [A synchronous collective runs on its caller]: with the worker idle and nothing queued.
  if (!async_op && queue_.empty() && !worker_busy_ && !caller_busy_) {
    caller_busy_ = true;  // the worker takes nothing meanwhile: the MPI calls stay one at a time, in order
    g.unlock();
    struct Done {  // however the call ends: the worker may take what was queued meanwhile
      ProcessGroupMPI& pg;
      ~Done() {
        std::lock_guard<std::mutex> lock(pg.mu_);
        pg.caller_busy_ = false;
        if (!pg.queue_.empty() || pg.stopping_) pg.cv_.notify_all();
      }
    } done{*this};
    w->ran_here_ = true;
    finish(item, run_item(item, true));
    return w;
  }
  trace::ScopedSpan span(trace::Floor::Streams, "enqueue");
  queue_.push_back(std::move(item));
  if (span.active()) {
    span.arg("queue", "mpi");
    span.arg("collective", mpi_fn);
    span.arg("queue_depth", int64_t(queue_.size()));
    span.arg("async_op", async_op);
  }
  cv_.notify_one();
  return w;
}

void ProcessGroupMPI::run() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> g(mu_);
      // Note [A synchronous collective runs on its caller]: nothing while a caller is in MPI.
      cv_.wait(g, [&] { return !caller_busy_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) {  // stopping, and everything enqueued has run
        worker_done_ = true;
        cv_.notify_all();
        return;
      }
      item = std::move(queue_.front());
      queue_.pop_front();
      worker_busy_ = true;
    }
    std::exception_ptr error = run_item(item, false);
    {
      // Idle again before the Work is done: a synchronous call made right after its wait() finds it so.
      std::lock_guard<std::mutex> g(mu_);
      worker_busy_ = false;
    }
    finish(item, std::move(error));
  }
}

std::exception_ptr ProcessGroupMPI::run_item(Item& item, bool here) {
  std::exception_ptr error;
  try {
    // Note [A collective times out]: after a timeout this rank's collectives no longer pair with the
    // others' (the timed-out exchange took a fingerprint): what was queued before it is not run.
    check_not_broken(item.mpi_fn);
    in_call_here_->store(here);
    if (size_ > 1) {
      in_call_->store("the exchange of the ranks' fingerprints");
      check_fingerprints(item.mpi_fn, item.print, here);
    }
    in_call_->store(item.mpi_fn);
    trace::ScopedSpan span(trace::Floor::Streams, item.mpi_fn);  // the collective itself
    if (span.active()) {
      span.arg("bytes", item.bytes);
      span.arg("on", here ? "caller" : "worker");
    }
    item.call();
  } catch (...) {
    error = std::current_exception();
  }
  in_call_->store("");
  item.keep.clear();  // the memory is the caller's again
  return error;
}

void ProcessGroupMPI::finish(Item& item, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> g(item.work->mu_);
    item.work->done_ = true;
    item.work->error_ = std::move(error);
  }
  item.work->cv_.notify_all();
}

// Note [Collectives check their shapes]: before the collective, every rank's fingerprint sent to every
// other, received from every other. `bounded` (Note [A synchronous collective runs on its caller]): the
// receives are polled until the timeout, yielding the core after the first moments (a rank may be seconds
// late, and the machine may have more ranks than cores), else waited for.
void ProcessGroupMPI::check_fingerprints(const char* mpi_fn, const Fingerprint& fingerprint, bool bounded) {
  trace::ScopedSpan span(trace::Floor::Streams, "check the ranks' shapes");  // where the ranks meet
  // On the heap, all of it: after a timeout MPI may still read the send's buffer and write the receives'.
  auto exchange = std::make_unique<Exchange>();
  const Fingerprint& mine = exchange->mine = fingerprint;
  std::vector<Fingerprint>& all = exchange->all;
  std::vector<MPI_Request>& requests = exchange->requests;
  all.assign(static_cast<size_t>(size_), mine);
  requests.reserve(2 * size_t(size_));
  const int n = int(mine.size());
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    requests.emplace_back();
    check(MPI_Irecv(all[size_t(r)].data(), n, MPI_INT64_T, r, kFingerprintTag, comm_->c, &requests.back()),
          "MPI_Irecv (a rank's fingerprint)");
    requests.emplace_back();
    check(MPI_Isend(mine.data(), n, MPI_INT64_T, r, kFingerprintTag, comm_->c, &requests.back()),
          "MPI_Isend (this rank's fingerprint)");
  }
  if (!bounded) {
    check(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall (the fingerprints)");
  } else {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
            "MPI_Testall (the fingerprints)");
      if (done) break;
      if (polls < 4096) continue;
      std::this_thread::yield();
      if (polls % 256 == 0 && std::chrono::steady_clock::now() > deadline) {
        broken_->store(true);
        abandoned_.push_back(std::move(exchange));  // MPI may still use it, until MPI_Abort
        throw timed_out(timeout_, mpi_fn, "this thread is in the exchange of the ranks' fingerprints");
      }
    }
  }
  if (std::all_of(all.begin(), all.end(), [&](const Fingerprint& f) { return f == all[0]; })) return;
  const bool extras_differ =
      std::any_of(all.begin(), all.end(), [&](const Fingerprint& f) { return f[4] != all[0][4]; });
  auto shape = [&](const Fingerprint& f) {
    if (f[1] < 0) return std::string("no tensor");
    std::string s = "[";
    for (int64_t d = 0; d < f[2] && d < kMaxDims; ++d) s += (d ? ", " : "") + std::to_string(f[size_t(kSizesAt + d)]);
    if (f[2] > kMaxDims) s += ", ... (" + std::to_string(f[3]) + " elements)";
    s += "] " + std::string(dtype_name(static_cast<ScalarType>(f[1])));
    if (!extras_differ || f[4] < 0) return s;
    static constexpr const char* kOps[] = {"sum", "product", "min", "max"};
    const bool bcast = std::string_view(mpi_fn) == "MPI_Bcast";
    return s + (bcast ? ", src " + std::to_string(f[4]) : std::string(", op ") + kOps[f[4] & 3]);
  };
  std::string ranks;
  for (size_t r = 0; r < all.size(); ++r) {
    const bool same_op = all[r][0] == mine[0];
    ranks += str(r ? "; " : "", "rank ", r, ": ", same_op ? shape(all[r]) : "another collective");
  }
  throw ValueError(str(mpi_fn, ": the ranks' tensors differ (", ranks,
                       "); every rank must call the same collectives, in the same order, on tensors of one shape "
                       "and dtype. None ran (Note [Collectives check their shapes])."));
}

std::shared_ptr<Work> ProcessGroupMPI::all_reduce(const Tensor& t, ReduceOp op, bool async_op) {
  void* data = memory_of(t, "all_reduce");
  const MPI_Datatype type = mpi_type(t.dtype(), "all_reduce");
  const int n = mpi_count(t.numel(), "all_reduce");
  const MPI_Op mop = mpi_op(op);  // before the queue: an op MPI lacks fails on the caller
  return enqueue("MPI_Allreduce", &t, int64_t(op), async_op, {t},
                 [=, c = comm_->c] { check(MPI_Allreduce(MPI_IN_PLACE, data, n, type, mop, c), "MPI_Allreduce"); });
}

std::shared_ptr<Work> ProcessGroupMPI::broadcast(const Tensor& t, int root, bool async_op) {
  void* data = memory_of(t, "broadcast");
  const MPI_Datatype type = mpi_type(t.dtype(), "broadcast");
  const int n = mpi_count(t.numel(), "broadcast");
  if (root < 0 || root >= size_)
    throw std::runtime_error("broadcast: src " + std::to_string(root) + " is not a rank of a group of " +
                             std::to_string(size_));
  return enqueue("MPI_Bcast", &t, root, async_op, {t},
                 [=, c = comm_->c] { check(MPI_Bcast(data, n, type, root, c), "MPI_Bcast"); });
}

std::shared_ptr<Work> ProcessGroupMPI::all_gather(const Tensor& out, const Tensor& in, bool async_op) {
  check_all_gather(out, in);
  const void* src = memory_of(in, "all_gather");
  void* dst = memory_of(out, "all_gather");
  const MPI_Datatype type = mpi_type(in.dtype(), "all_gather");
  const int n = mpi_count(in.numel(), "all_gather");
  return enqueue("MPI_Allgather", &in, -1, async_op, {out, in},
                 [=, c = comm_->c] { check(MPI_Allgather(src, n, type, dst, n, type, c), "MPI_Allgather"); });
}

std::shared_ptr<Work> ProcessGroupMPI::reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, bool async_op) {
  check_reduce_scatter(out, in);
  const void* src = memory_of(in, "reduce_scatter");
  void* dst = memory_of(out, "reduce_scatter");
  const MPI_Datatype type = mpi_type(out.dtype(), "reduce_scatter");
  const int n = mpi_count(out.numel(), "reduce_scatter");
  const MPI_Op mop = mpi_op(op);
  return enqueue("MPI_Reduce_scatter_block", &in, int64_t(op), async_op, {out, in}, [=, c = comm_->c] {
    check(MPI_Reduce_scatter_block(src, dst, n, type, mop, c), "MPI_Reduce_scatter_block");
  });
}

std::shared_ptr<Work> ProcessGroupMPI::barrier(bool async_op) {
  return enqueue("MPI_Barrier", nullptr, -1, async_op, {}, [c = comm_->c] { check(MPI_Barrier(c), "MPI_Barrier"); });
}

}  // namespace descent::distributed
