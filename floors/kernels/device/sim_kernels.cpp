// The device loops on the simulated device, and the choice between devices.
//
// [SECTION] Kernel names
// [SECTION] The simulated device's launcher
// [SECTION] Choosing the device
//
// Each loop of device_loops.h is put on sim:0's current stream by
// launch::launch_sim; the stream's worker later calls the block body once per
// block of the grid, and the block body runs the one kernel body, run_thread,
// for thread 0, 1, ..., 255 of the block in turn: what a GPU does with 256
// threads at once, done one after the other. See Note [One kernel body, two
// devices] (device_loops.h). This file is compiled with -ffp-contract=off, as
// the CPU loops are, so the results are the CPU's bit for bit.
#include <atomic>
#include <mutex>

#include "floors/kernels/device/device_loops.h"
#include "floors/kernels/kernels.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::kernels::device {

// [SECTION] Kernel names ---------------------------------------------------------------

const char* kernel_name(const char* kind, Op op, ScalarType a, ScalarType b) {
  // Interned once per (op, a, b): a launch reads a pointer. Each kind uses its own op.
  static std::atomic<const char*> names[kNumOps][kNumScalarTypes][kNumScalarTypes];
  std::atomic<const char*>& slot = names[int(op)][int(a)][int(b)];
  if (const char* n = slot.load(std::memory_order_acquire)) return n;
  std::string s;
  if (*kind == 0)
    s = str(op_entry(op).python_name, "_", dtype_name(a));
  else if (a == b)
    s = str(kind, "_", dtype_name(a));
  else
    s = str(kind, "_", dtype_name(a), "_to_", dtype_name(b));
  const char* n = trace::intern(s);
  slot.store(n, std::memory_order_release);
  return n;
}

// [SECTION] The simulated device's launcher ----------------------------------------------

namespace {

struct SimLaunch {
  Device device;
  template <class Loop>
  void operator()(const launch::KernelLaunch& k, const Loop& loop) const {
    if (loop.n == 0) return;
    launch::launch_sim(streams::current_stream(device), k,
                       [loop, grid = k.grid.x, threads = k.block.x](const launch::Dim3& block) {
                         for (uint32_t t = 0; t < threads; ++t) run_thread(loop, block.x, grid, threads, t);
                       });
  }
};

using DeviceBuild = Build<SimLaunch>;

}  // namespace

namespace sim {
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_DEFINE)
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_SAME_TYPE)
}  // namespace sim

// [SECTION] Choosing the device ----------------------------------------------------------

const char* variant(Device d) { return d.type == DeviceType::CUDA ? "cuda" : "sim"; }

#ifdef DESCENT_HAVE_CUDA
#define DESCENT_ON_DEVICE(d, call) return (d).type == DeviceType::CUDA ? cuda::call : sim::call
#else
// Without the CUDA toolkit no CUDA tensor can exist (the runtime reports no
// device), so every device loop is sim's.
#define DESCENT_ON_DEVICE(d, call)                                                                       \
  DESCENT_CHECK((d).type != DeviceType::CUDA, NotImplementedError, "this build of descent has no CUDA"); \
  return sim::call
#endif

// Each row of the table: its loop on out's device (dst's for copy). The
// copy that moves bytes is the builder's (Build<Launch>::copy).
#define DESCENT_DEVICE_LOOP_CHOOSE(name, params, args, dev) \
  void name params { DESCENT_ON_DEVICE((dev).device(), name args); }
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_CHOOSE)

}  // namespace descent::kernels::device
