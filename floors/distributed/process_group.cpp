// The default process group (process_group.h).
#include "floors/distributed/process_group.h"

#include <mutex>
#include <string_view>

#include "floors/core/error.h"
#ifdef DESCENT_HAVE_MPI
#include "floors/distributed/process_group_mpi.h"
#endif
#ifdef DESCENT_HAVE_NCCL
#include "floors/distributed/process_group_nccl.h"
#endif

namespace descent::distributed {

namespace {
std::mutex g_mu;
std::unique_ptr<ProcessGroup> g_group;
bool g_finalized = false;  // MPI cannot start again in the same process
}  // namespace

void ProcessGroup::check_all_gather(const Tensor& out, const Tensor& in) const {
  DESCENT_CHECK(out.numel() == in.numel() * size() && out.dtype() == in.dtype(), ValueError,
                "all_gather: the output must hold world_size x ", in.numel(), " elements of ", dtype_name(in.dtype()));
}

void ProcessGroup::check_reduce_scatter(const Tensor& out, const Tensor& in) const {
  DESCENT_CHECK(in.numel() == out.numel() * size() && out.dtype() == in.dtype(), ValueError,
                "reduce_scatter: the input must hold world_size x ", out.numel(), " elements of ",
                dtype_name(out.dtype()));
}

bool have_mpi() {
#ifdef DESCENT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool have_nccl() {
#ifdef DESCENT_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

void init_process_group(const std::string& backend, int64_t timeout_ms) {
  DESCENT_CHECK(timeout_ms > 0, ValueError, "init_process_group(): timeout must be positive, not ", timeout_ms, " ms");
  std::lock_guard<std::mutex> g(g_mu);
  DESCENT_CHECK(!g_group, ValueError, "trying to initialize the default process group twice!");
  DESCENT_CHECK(backend == "mpi" || backend == "nccl", ValueError, "Invalid backend: '", backend,
                "' (descent has 'mpi' for CPU and sim:0 tensors, and 'nccl' for CUDA ones)");
  DESCENT_CHECK(!g_finalized, Error,
                "MPI was ended by a destroyed process group and cannot start again in this process");
  if (backend == "nccl") {
    DESCENT_CHECK(
        have_nccl(), Error,
        "Distributed package doesn't have NCCL built in: descent found no NCCL beside the CUDA toolkit when "
        "it was configured (PyTorch's nvidia-nccl-cu13 package brings it); 'mpi' takes CPU and sim:0 tensors");
#ifdef DESCENT_HAVE_NCCL
    g_group = make_nccl_group(std::chrono::milliseconds(timeout_ms));
#endif
    return;
  }
  DESCENT_CHECK(have_mpi(), Error,
                "Distributed package doesn't have MPI built in: descent found no MPI library when it was configured "
                "(tools/install-deps installs Debian's Open MPI)");
#ifdef DESCENT_HAVE_MPI
  g_group = std::make_unique<ProcessGroupMPI>(std::chrono::milliseconds(timeout_ms));
#endif
}

ProcessGroup& default_group() {
  std::lock_guard<std::mutex> g(g_mu);
  DESCENT_CHECK(g_group != nullptr, ValueError,
                "Default process group has not been initialized, please make sure to call init_process_group.");
  return *g_group;
}

bool is_initialized() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_group != nullptr;
}

void simulate_nccl_async_error(int code) {
  std::lock_guard<std::mutex> g(g_mu);
  DESCENT_CHECK(g_group && std::string_view(g_group->backend()) == "nccl", ValueError,
                "simulate_nccl_async_error: the default process group is not nccl's");
#ifdef DESCENT_HAVE_NCCL
  set_simulated_nccl_error(code);
#else
  (void)code;
#endif
}

void destroy_process_group() {
  std::lock_guard<std::mutex> g(g_mu);
  DESCENT_CHECK(g_group != nullptr, ValueError,
                "Default process group has not been initialized, please make sure to call init_process_group.");
  if (g_group->ends_mpi()) g_finalized = true;
  g_group.reset();
}

}  // namespace descent::distributed
