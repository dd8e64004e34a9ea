// Why a span of floors 7 to 9 did what it did: the stream and its queue,
// the launch's grid, the kernel on the device's own clock. See Note [Explaining a span] in explain.h; the reading of a
// span they share is explain_span.h.
//
// [SECTION] Floor 7: streams
// [SECTION] Floors 8 and 9: the launch and the device
#include "ui/explain_span.h"

namespace descent::ui::explaining {

// [SECTION] Floor 7: streams -------------------------------------------------------

std::string depth_clause(int64_t depth) {
  if (depth < 0) return "";
  if (depth == 0) return " The device had already taken it by the time the queue was read (depth 0).";
  if (depth == 1) return " The queue held only this work: nothing ahead of it, the device can start at once.";
  return " The queue held " + std::to_string(depth) + " items: this one and " + std::to_string(depth - 1) +
         " ahead of it, which the device runs first.";
}

// A collective's spans on floor 7 (floors/distributed): MPI's queue and calls (on the worker, or on the caller),
// and NCCL's stream.
Explanation collective_span(const At& a) {
  const std::string& n = a.sp.name;
  Explanation e;
  if (n == "enqueue") {
    e = make("streams.mpi_enqueue", "Queued for the MPI worker: " + str(a.sp, "collective"));
    say(e,
        "The collective is not run here: it is put in the queue of the MPI worker, the thread that makes the "
        "MPI calls one at a time, in the order the program asked for them, the same on every rank." +
            depth_clause(num(a.sp, "queue_depth")));
    if (str(a.sp, "async_op") == "false")
      say(e,
          "The call was made without async_op, but the worker was busy, or other work was queued: this thread "
          "waits for the worker at once. (Had it been idle, this thread would have made the call itself.)");
    else
      say(e, "The host goes on; wait() on its Work waits for the worker.");
    note(e, "One MPI call at a time, in order");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupMPI.cpp", "ProcessGroupMPI::enqueue");
  } else if (starts_with(n, "MPI_") && str(a.sp, "on") == "caller") {
    e = make("streams.mpi_call_here", n + " of " + bytes_text(num(a.sp, "bytes")) + ", on the calling thread");
    say(e,
        "The call was made without async_op, so the program waits for it at once, and the MPI worker was "
        "idle with nothing queued: this thread makes the MPI call itself, sparing two hand-offs between "
        "threads. Every rank is in the same call now; it returns when this rank's part is done.");
    say(e, "Here descent differs from PyTorch, whose ProcessGroupMPI hands every collective to its worker.");
    note(e, "A synchronous collective runs on its caller");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupMPI.cpp", "ProcessGroupMPI::enqueue");
  } else if (starts_with(n, "MPI_")) {
    e = make("streams.mpi_call", n + " of " + bytes_text(num(a.sp, "bytes")) + ", on the MPI worker");
    say(e,
        "The worker thread makes the MPI call itself: every rank is in the same call now, and it returns "
        "when this rank's part of the collective is done.");
    note(e, "One MPI call at a time, in order");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupMPI.cpp", "ProcessGroupMPI::runLoop");
  } else if (n == "check the ranks' shapes") {
    e = make("streams.mpi_check", "The ranks compare what they are about to do");
    say(e,
        "Before the collective every rank sends every other its fingerprint of it (which collective, dtype, "
        "shape, root or op): where they differ, every rank raises ValueError instead of hanging. This is "
        "where the ranks meet: a rank that arrives early waits here.");
    note(e, "Collectives check their shapes");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp", "ProcessGroupWrapper::runCollectiveChecks");
  } else if (n == "wait for the MPI worker") {
    e = make("streams.mpi_wait", "The host waits for the MPI worker");
    say(e,
        "Work.wait() on an MPI collective blocks this thread until the worker has made the call (and raises "
        "what it raised).");
    note(e, "One MPI call at a time, in order");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupMPI.cpp", "WorkMPI::wait");
  } else if (n == "NCCL's stream waits for the current stream" || n == "wait for NCCL's stream") {
    const bool before = n[0] == 'N';
    e = make(before ? "streams.nccl_before" : "streams.nccl_after",
             before ? "NCCL's stream waits for the current stream" : "The current stream waits for NCCL's");
    say(e, before ? "An event recorded on the current stream, and NCCL's own stream made to wait for it: the "
                    "collective starts only once the kernels that wrote the tensor have run. The host does not wait."
                  : "Work.wait() on a NCCL collective is a stream wait: kernels launched after it run after the "
                    "collective, and the host goes on at once.");
    note(e, "NCCL's own stream");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            before ? "ProcessGroupNCCL::collective: syncStream" : "WorkNCCL::synchronizeStream");
  }
  return e;
}

Explanation streams_span(const At& a) {
  const std::string& n = a.sp.name;
  const std::string api = str(a.sp, "api");
  const std::string stream = str(a.sp, "stream");
  Explanation e;
  // A kernel's enqueue is this floor's own; the MPI worker's (queue=mpi) and the other collective spans are
  // collective_span's.
  const bool kernel_enqueue = n == "enqueue" && str(a.sp, "queue") != "mpi";
  if (Explanation c = kernel_enqueue ? Explanation{} : collective_span(a); !c.kind.empty()) {
    e = std::move(c);
  } else if (n == "enqueue") {
    e = make("streams.enqueue", "Queued on stream " + (stream.empty() ? std::string("?") : stream));
    say(e, "A device op is not run, it is queued: the launch below puts the kernel on stream " + stream +
               ", this thread's current stream for the device, a first-in first-out queue the device drains on its "
               "own." +
               depth_clause(num(a.sp, "queue_depth")));
    say(e, "The host returns as soon as the work is queued; the kernel runs later, on the device's clock.");
    note(e, "Streams and the two clocks");
    note(e, "The queue at time t");
    pytorch(e, "c10/cuda/CUDAStream.h", "getCurrentCUDAStream");
  } else if (n == "simMemcpyAsync" || n == "cudaMemcpyAsync") {
    e = make("streams.copy", "A copy of " + bytes_text(num(a.sp, "bytes")) + " queued on stream " + stream);
    note(e, "Copies between devices");
    say(e,
        "The bytes move as one piece of work on the stream, in order with the kernels queued before it, with no "
        "kernel launch (" +
            n + "); the device's Memcpy span, joined by correlation " + str(a.sp, "correlation", "?") +
            ", shows when it really ran." + depth_clause(num(a.sp, "queue_depth")));
    if (has(a.sp, "pinned")) {
      say(e, flag(a.sp, "pinned") ? "The host memory is pinned, so the copy need not be staged."
                                  : "The host memory is pageable, so the copy is staged through a pinned buffer.");
      note(e, "Pinned host memory");
    }
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/cuda/Copy.cu", "copy_kernel_cuda: cudaMemcpyAsync on the current stream");
  } else if (n == "event_record") {
    e = make("streams.event_record", "An event is recorded on stream " + stream);
    say(e,
        "An event is a marker put in the stream's queue: it passes when the device reaches it, after the work "
        "queued before it. The host does not wait.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::record");
  } else if (n == "stream_wait_event") {
    e = make("streams.wait_event", "Stream " + stream + " waits for an event (the host does not)");
    say(e, "Work queued on stream " + stream +
               " from now on starts only after the event has passed on its own "
               "stream: one stream waits for another on the device, and the host goes on.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::block");
  } else if (n == "event_synchronize") {
    e = make("streams.event_synchronize", "The host waits for an event on stream " + stream);
    say(e,
        "The host stops until the device has passed the event, that is until the work queued before it on its "
        "stream has run.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::synchronize");
  } else if (contains(api, "ynchronize")) {
    const bool device = has(a.sp, "device") && !has(a.sp, "stream");
    const bool end = n == trace::kEndOfRecordingWait;
    const bool read = !end && n != "synchronize" && n != "stream_synchronize";
    e = make(end    ? "streams.end_of_recording"
             : read ? "streams.read_wait"
                    : "streams.synchronize",
             "The host waits: " + api + (device ? " on " + str(a.sp, "device") : " on stream " + stream));
    if (end) {
      say(e,
          "The recording itself waits here for the work queued on the device, so that every kernel's span is in "
          "the trace. It belongs to the recording, not to your code: warm medians leave it out.");
      note(e, "Warm medians");
    } else if (read) {
      say(e, n + " needs the tensor's values on the host, so the host must wait for the kernels that compute them.");
      note(e, "Reading a device tensor waits");
    } else if (a.parent() && a.parent()->floor == Floor::Kernels) {
      say(e, "The kernel of " + a.parent()->name +
                 " copies to the host: the bytes can be read only once the copy "
                 "queued on the stream has run, so it waits for the stream here.");
      note(e, "Copies between devices");
    }
    say(e, std::string("The host stops until ") +
               (device ? "every stream of " + str(a.sp, "device") + " is empty" : "stream " + stream + " is empty") +
               (!has(a.sp, "queue_depth")       ? std::string(".")
                : num(a.sp, "queue_depth") == 0 ? std::string(": nothing was queued when it asked, so it did not wait.")
                                                : ": " + plural(num(a.sp, "queue_depth"), "item was", "items were") +
                                                      " still queued when it asked."));
    if (num(a.sp, "queue_depth") != 0) {
      say(e, "This is where the device's time shows up on the host: until now the host only queued work.");
    }
    note(e, "Streams and the two clocks");
    pytorch(e, device ? "c10/cuda/CUDAFunctions.cpp" : "c10/cuda/CUDAStream.h",
            device ? "device_synchronize (cudaDeviceSynchronize)" : "CUDAStream::synchronize (cudaStreamSynchronize)");
  }
  return e;
}

// [SECTION] Floors 8 and 9: the launch and the device -----------------------------

// The device span whose correlation is the launch's, and the reverse.
size_t correlated(const trace::Trace& t, size_t i, bool device_side) {
  const int64_t c = num(t.spans[i], "correlation");
  if (c <= 0) return SIZE_MAX;
  for (size_t k = 0; k < t.spans.size(); ++k) {
    if (k == i || (t.spans[k].floor == Floor::Device) != device_side) continue;
    if (num(t.spans[k], "correlation") == c) return k;
  }
  return SIZE_MAX;
}

Explanation launch_span(const At& a) {
  const std::string kernel = str(a.sp, "kernel");
  const int64_t grid = num(a.sp, "grid", 1) * num(a.sp, "grid_y", 1) * num(a.sp, "grid_z", 1);
  const int64_t block = num(a.sp, "block", 0);
  const bool cuda = starts_with(a.sp.name, "cuda");
  Explanation e = make("launch", "Launch " + kernel + ": " + plural(grid, "block", "blocks") + " of " +
                                     plural(block, "thread", "threads"));
  note(e, "What a launch is");
  std::string s = "The kernel is launched over a grid of " + plural(grid, "block", "blocks") + " of " +
                  std::to_string(block) + " threads each (" + std::to_string(grid * block) + " threads";
  const size_t k = a.ancestor_on(Floor::Kernels);
  if (k != SIZE_MAX && has(a.t().spans[k], "numel")) {
    s += " for " + plural(num(a.t().spans[k], "numel"), "element", "elements") + " of " + a.t().spans[k].name;
  }
  s += "), " + std::to_string(std::max<int64_t>(0, num(a.sp, "shared_bytes", 0))) +
       " B of shared memory per block, "
       "on stream " +
       str(a.sp, "stream", "?") + ".";
  say(e, s);
  if (cuda) {
    say(e,
        "cudaLaunchKernel returns as soon as the launch is queued; the GPU runs the kernel when its stream gets "
        "there. CUPTI reports when it really ran, joined to this span by correlation " +
            str(a.sp, "correlation", "?") + ".");
    note(e, "A launch's host cost");
  } else {
    say(e,
        "On the simulated device the launch hands the same kernel body to the stream's worker thread, which runs "
        "it block by block over the grid when it reaches it; correlation " +
            str(a.sp, "correlation", "?") + " joins this span to the device's.");
    note(e, "The simulated device");
  }
  note(e, "What a launch is");
  pytorch(e, "aten/src/ATen/native/cuda/CUDALoops.cuh",
          "launch_vectorized_kernel: kernel<<<grid, num_threads, 0, stream>>>");
  pytorch(e, "c10/cuda/CUDAException.h", "C10_CUDA_KERNEL_LAUNCH_CHECK");
  return e;
}

Explanation device_span(const At& a) {
  const bool copy = str(a.sp, "work") == "memcpy" || starts_with(a.sp.name, "Memcpy");
  const bool memset = starts_with(a.sp.name, "Memset");
  const std::string device = str(a.sp, "device");
  Explanation e = make(copy     ? "device.memcpy"
                       : memset ? "device.memset"
                                : "device.kernel",
                       (copy || memset ? "The device copies: " : "The device runs ") + a.sp.name);
  std::string s = "This is the device's own clock: the work ran on " +
                  (device.empty() ? std::string("the device") : device) + " stream " + str(a.sp, "stream", "?") +
                  " for " + trace::format_duration(a.sp.duration_ns());
  const size_t launch = correlated(a.t(), a.i, false);
  if (launch != SIZE_MAX) {
    const int64_t gap = a.sp.start_ns - a.t().spans[launch].start_ns;
    s += ", starting " + trace::format_duration(gap) + " after the host began to queue it (" +
         a.t().spans[launch].name + ")";
  }
  say(e, s + ". The gap is the queue: the host had moved on long before.");
  note(e, "Device spans");
  note(e, "The queue at time t");
  if (contains(device, "sim"))
    note(e, "The simulated device");
  else if (contains(device, "cuda"))
    note(e, "Device activity from CUPTI");
  if (copy) note(e, "Copies between devices");
  pytorch(e, "torch/csrc/profiler/kineto_shim.cpp",
          "the profiler's bridge to Kineto, which reads CUPTI's activity records");
  return e;
}

}  // namespace descent::ui::explaining
