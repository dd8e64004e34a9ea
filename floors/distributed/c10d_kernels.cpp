// The kernels of c10d's operators, the last rows of the op table (Note
// [Collectives are c10d ops], floors/dispatch/ops.h), as PyTorch's Ops.cpp:
// one kernel an operator, registered at CPU, Sim and CUDA, which asks the
// default group for its backend of the tensors' device type and hands the
// call to it (process_group_mpi.cpp, process_group_nccl.cpp). The Work comes
// back as an int handle, kept here until descent.distributed's Work lets it go.
//
// [SECTION] The Works
// [SECTION] The kernels
// [SECTION] Registration
#include <map>
#include <memory>
#include <mutex>

#include "floors/dispatch/library.h"
#include "floors/distributed/process_group.h"
#include "tracer/tracer.h"

namespace descent::distributed {

// [SECTION] The Works -----------------------------------------------------------

namespace {

std::mutex g_works_mu;
std::map<int64_t, std::shared_ptr<Work>> g_works;
int64_t g_next_work = 0;

}  // namespace

int64_t keep_work(std::shared_ptr<Work> w) {
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works[++g_next_work] = std::move(w);
  return g_next_work;
}

std::shared_ptr<Work> work_of(int64_t handle) {
  std::lock_guard<std::mutex> g(g_works_mu);
  auto it = g_works.find(handle);
  DESCENT_CHECK(it != g_works.end(), Error, "no collective with handle ", handle);
  return it->second;
}

void forget_work(int64_t handle) {
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works.erase(handle);
}

// [SECTION] The kernels ---------------------------------------------------------

namespace {

// c10d's RedOpType, as the schemas carry it.
ReduceOp reduce_op_of(int64_t v) {
  switch (v) {
    case 0:
      return ReduceOp::Sum;
    case 1:
      return ReduceOp::Avg;
    case 2:
      return ReduceOp::Product;
    case 3:
      return ReduceOp::Min;
    case 4:
      return ReduceOp::Max;
    default:
      throw ValueError(str("reduce_op ", v, " is not one descent has (SUM 0, AVG 1, PRODUCT 2, MIN 3, MAX 4)"));
  }
}

// process_group.getBackend(device type), as the kernel of PyTorch's backend key asks it: the
// default group (the only one: process_group 0) must have a backend for the tensors' device.
ProcessGroup& backend_for(const OpEntry& op, int64_t group, const Tensor& t, trace::ScopedSpan& span) {
  DESCENT_CHECK(group == 0, ValueError, op.name, ": process_group ", group,
                " is not a group descent has (0: the default group, the only one)");
  ProcessGroup& g = default_group();
  const DeviceType d = t.device().type;
  DESCENT_CHECK(g.serves(d), Error, "No backend type associated with device type ", device_type_name(d), " (", op.name,
                ": the default group is ", g.backend(), "'s, for ",
                d == DeviceType::CUDA ? "CPU and sim:0 tensors; CUDA tensors need nccl)"
                                      : "CUDA tensors; CPU and sim:0 tensors need mpi)");
  span.arg("backend", g.backend());
  span.arg("device", device_type_name(d));
  span.arg(trace::kDecidedAt, DESCENT_HERE);  // the backend the group has for this device type
  return g;
}

const Tensor& only(const OpEntry& op, const OptionalTensorList& ts, const char* what) {
  DESCENT_CHECK(ts.size() == 1, ValueError, op.name, ": ", what, " holds ", ts.size(),
                " tensors; descent's collectives take one a rank");
  return ts[0];
}

void done(Stack& s, std::shared_ptr<Work> w) { s.set_result(IValue(int64_t(keep_work(std::move(w))))); }

// allreduce_(Tensor[] tensors, int process_group, int reduce_op, Tensor? sparse_indices, bool async_op, int timeout)
void allreduce_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& t = only(op, s[0].to_tensor_list(), "tensors");
  DESCENT_CHECK(s[3].is_none(), ValueError, op.name, ": sparse tensors are not descent's");
  ProcessGroup& g = backend_for(op, s[1].to_int(), t, span);
  done(s, g.all_reduce(t, reduce_op_of(s[2].to_int()), s[4].to_bool()));
}

// broadcast_(Tensor[] tensors, int process_group, int root_rank, int root_tensor, bool async_op, int timeout)
void broadcast_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& t = only(op, s[0].to_tensor_list(), "tensors");
  ProcessGroup& g = backend_for(op, s[1].to_int(), t, span);
  done(s, g.broadcast(t, int(s[2].to_int()), s[4].to_bool()));
}

// What allgather_ returns: the backend's Work on one flat buffer (the
// backends hold the memory they use until they are done with it: the MPI
// queue its tensors, NCCL's stream through record_stream), whose wait()
// then copies each rank's block of it into its output tensor (with nccl, on
// the current stream, which wait() has made wait for NCCL's): unlike
// PyTorch, whose backends copy as part of the collective, an async
// all_gather's list is filled at wait(), not before.
class AllGatherWork : public Work {
 public:
  AllGatherWork(std::shared_ptr<Work> w, Tensor flat, OptionalTensorList outs)
      : w_(std::move(w)), flat_(std::move(flat)), outs_(std::move(outs)) {}
  bool is_completed() override { return w_->is_completed(); }
  bool host_waits() const override { return w_->host_waits(); }
  void wait() override {
    w_->wait();
    std::lock_guard<std::mutex> g(copy_mu_);  // wait() runs without the GIL: two threads may wait on one Work
    if (copied_) return;
    copied_ = true;
    trace::ScopedSpan span(trace::Floor::Kernels, "copy each rank's block out");
    for (int k = 0; k < outs_.size(); ++k) {
      const Tensor block = call(Op::view, call(Op::select, flat_, int64_t(0), int64_t(k)), outs_[k].sizes());
      call(Op::copy_, outs_[k], block);
    }
  }

 private:
  std::shared_ptr<Work> w_;
  Tensor flat_;  // the backend's output: world_size rows of the input's numel
  OptionalTensorList outs_;
  std::mutex copy_mu_;
  bool copied_ = false;
};

// allgather_(Tensor[] output_tensors, Tensor[] input_tensors, int process_group, bool async_op, int timeout)
void allgather_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const OptionalTensorList outs = s[0].to_tensor_list();
  const Tensor in = call(Op::contiguous, only(op, s[1].to_tensor_list(), "input_tensors"));
  ProcessGroup& g = backend_for(op, s[2].to_int(), in, span);
  DESCENT_CHECK(outs.size() == g.size(), ValueError, "all_gather: tensor_list has ", outs.size(),
                " tensors, the group ", g.size(), " ranks");
  for (int k = 0; k < outs.size(); ++k)
    DESCENT_CHECK(outs[k].numel() == in.numel() && outs[k].dtype() == in.dtype() && outs[k].device() == in.device(),
                  ValueError, "all_gather: tensor_list[", k, "] is not of the input's size, dtype and device");
  Tensor flat = empty_tensor(DimVector{g.size(), in.numel()}, in.dtype(), in.device());
  std::shared_ptr<Work> w = g.all_gather(flat, in, s[3].to_bool());
  done(s, std::make_shared<AllGatherWork>(std::move(w), std::move(flat), outs));
}

// reduce_scatter_(Tensor[] output_tensors, Tensor[] input_tensors, int process_group, int reduce_op, bool async_op,
// int timeout): rank r's output is the reduction of every rank's input_tensors[r].
void reduce_scatter_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& out = only(op, s[0].to_tensor_list(), "output_tensors");
  ProcessGroup& g = backend_for(op, s[2].to_int(), out, span);
  const OptionalTensorList& ins = s[1].to_tensor_list();
  DESCENT_CHECK(ins.size() == g.size(), ValueError, "reduce_scatter: input_list has ", ins.size(),
                " tensors, the group ", g.size(), " ranks");
  OptionalTensorList flat_parts;
  for (int k = 0; k < ins.size(); ++k) {
    DESCENT_CHECK(ins[k].numel() == out.numel() && ins[k].dtype() == out.dtype() && ins[k].device() == out.device(),
                  ValueError, "reduce_scatter: input_list[", k, "] is not of the output's size, dtype and device");
    flat_parts.push_back(call(Op::reshape, ins[k], DimVector{-1}));
  }
  const Tensor flat = call(Op::cat, flat_parts, int64_t(0));
  done(s, g.reduce_scatter(out, flat, reduce_op_of(s[3].to_int()),
                           s[4].to_bool()));  // the backend holds flat until it ran
}

// barrier(Tensor tensor, int process_group, int[] device_ids, bool async_op, int timeout): the tensor
// is there for the dispatcher alone, to pick the backend key (PyTorch's is a one-element tensor).
void barrier_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  ProcessGroup& g = backend_for(op, s[1].to_int(), s[0].to_tensor(), span);
  done(s, g.barrier(s[3].to_bool()));
}

}  // namespace

// [SECTION] Registration --------------------------------------------------------

void register_c10d_kernels() {
  for (DispatchKey key : {DispatchKey::CPU, DispatchKey::Sim, DispatchKey::CUDA}) {
    Library m(Library::IMPL, "c10d", key, __FILE__, __LINE__);
    m.impl(Op::c10d_allreduce_, Kernel(allreduce_kernel));
    m.impl(Op::c10d_broadcast_, Kernel(broadcast_kernel));
    m.impl(Op::c10d_allgather_, Kernel(allgather_kernel));
    m.impl(Op::c10d_reduce_scatter_, Kernel(reduce_scatter_kernel));
    m.impl(Op::c10d_barrier, Kernel(barrier_kernel));
  }
}

}  // namespace descent::distributed
