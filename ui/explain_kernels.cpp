// Why a span of floors 5 and 6 did what it did: the loop a kernel chose,
// the allocator's hit, split or new segment. See Note [Explaining a span] in explain.h; the reading of a
// span they share is explain_span.h.
//
// [SECTION] Floor 5: kernels
// [SECTION] Floor 6: the allocators
#include "ui/explain_span.h"
#include "ui/models.h"
#include "ui/roofline.h"

namespace descent::ui::explaining {

// [SECTION] Floor 5: kernels -------------------------------------------------------

// Notes and PyTorch places for an op's own loop.
void op_specific(Explanation& e, const std::string& op) {
  const std::string o = short_op(op);
  if (o == "sum" || o == "mean" || starts_with(o, "sum") || starts_with(o, "mean")) {
    note(e, "Cascade summation");
    pytorch(e, "aten/src/ATen/native/cpu/SumKernel.cpp", "cascade_sum");
  } else if (o == "mm" || o == "bmm" || o == "mv" || o == "dot" || o == "matmul") {
    note(e, "Register-blocked matmul");
    pytorch(e, "aten/src/ATen/native/CPUBlas.cpp", "cpublas::gemm");
  } else if (starts_with(o, "index")) {
    note(e, "Advanced indexing");
    pytorch(e, "aten/src/ATen/native/cpu/IndexKernel.cpp", "index_kernel, index_put_kernel");
  } else if (o == "rand" || o == "randn") {
    note(e, "Counter-based random numbers");
    pytorch(e, "aten/src/ATen/core/DistributionsHelper.h", "uniform_real_distribution, normal_distribution");
  } else if (starts_with(o, "max")) {
    pytorch(e, "aten/src/ATen/native/cpu/Reduce.h", "binary_kernel_reduce");
  } else if (is_inplace_name(op)) {
    note(e, "In-place ops");
  }
}

// Whether the kernel span at `a` runs a factory: its dispatch was redispatched by BackendSelect.
bool is_factory(const At& a) {
  const Span* d = a.parent();
  if (!d || d->floor != Floor::Dispatch || !flag(*d, "redispatch")) return false;
  const size_t pd = a.s.parent_index[a.parent_index()];
  return pd != SIZE_MAX && str(a.t().spans[pd], "kernel") == "BackendSelect";
}

// Where the kernel sat on its device's roofline, when it recorded its work
// and the trace holds the device's peaks (Note [A roofline for every kernel
// span], floors/kernels/roofline.cpp; ui/roofline.h).
void roofline_sentences(Explanation& e, const At& a) {
  const RooflinePoint p = roofline_of(a.s, a.i);
  if (!p.known) return;
  const std::string pct = share_text(p);
  const std::string time = trace::format_duration(int64_t(p.seconds * 1e9));
  std::string s = "On the roofline: it moved " + si_text(p.bytes, "B");
  if (p.flops > 0) {
    char in[32];
    std::snprintf(in, sizeof in, "%.3g", p.intensity());
    s += " and did " + si_text(p.flops, "FLOP") + " (" + in + " FLOP per byte)";
  } else {
    s += " and did no arithmetic";
  }
  s += " in " + time +
       (p.on_device_clock ? std::string(" on the device's clock (its kernels' spans)")
                          : " (" + time_source(timing_of(a.s, a.i)) + ", the kernel span's inclusive time)") +
       ": " + si_text(p.bytes_per_s(), "B/s") + (p.flops > 0 ? ", " + si_text(p.flops_per_s(), "FLOP/s") : "") + ".";
  say(e, s);
  char ridge[32];
  std::snprintf(ridge, sizeof ridge, "%.3g", p.ridge());
  const std::string bw = si_text(p.peak_bytes_per_s, "B/s"), fl = si_text(p.peak_flops_per_s, "FLOP/s");
  switch (p.bound) {
    case RooflinePoint::Bound::Overhead:
      say(e, pct + " of what " + p.device +
                 " could do at this intensity: overhead-bound. The time went "
                 "to getting started (" +
                 (p.on_device_clock ? "the kernel's launch and ramp-up on the device, a few "
                                      "microseconds however small the work"
                                    : "the checks, the output's allocation, the loop's set-up") +
                 "), not to the elements: twice the elements would cost almost nothing more. Fusing small ops or "
                 "batching them is how this is won.");
      break;
    case RooflinePoint::Bound::Memory:
      say(e, p.flops > 0 ? "Below the ridge point (" + std::string(ridge) +
                               " FLOP per byte: the peak FLOP/s over "
                               "the peak bytes/s), memory bounds it: it reached " +
                               pct + " of the bandwidth, " + bw +
                               ". Fewer bytes (a smaller dtype, a fused op) would make it faster; faster arithmetic "
                               "would not."
                         : "It does no arithmetic, so only memory can bound it: it reached " + pct +
                               " of the bandwidth, " + bw + ".");
      break;
    case RooflinePoint::Bound::Compute:
      say(e, "Above the ridge point (" + std::string(ridge) + " FLOP per byte), arithmetic bounds it: it reached " +
                 pct + " of " + p.peak_flops_name + "' peak, " + fl +
                 ". Only faster arithmetic (wider vectors, tensor "
                 "cores) makes it faster.");
      break;
  }
  if (!p.peak_how.empty()) say(e, "The roof of " + p.device + ": " + p.peak_how + ".");
  note(e, "A roofline for every kernel span");
}

Explanation cpu_loop(const At& a, const std::string& variant, const std::string& what);

Explanation kernel_span(const At& a) {
  const std::string variant = str(a.sp, "variant");
  const std::string dtype = str(a.sp, "dtype");
  const int64_t numel = num(a.sp, "numel");
  const std::string what =
      numel >= 0 ? plural(numel, "element", "elements") + (dtype.empty() ? "" : " of " + dtype) : "";
  // Special spans of the copy kernels (copy_kernels.cpp).
  if (a.sp.name == "contiguous on the host" || a.sp.name == "contiguous on the device" ||
      a.sp.name == "cast on the device" || a.sp.name == "cast into self") {
    Explanation e = make("kernel.copy_step", "A step of a copy: " + a.sp.name);
    say(e,
        "A copy between devices moves one contiguous block of bytes; a strided source is made contiguous, and a "
        "change of dtype is made by a cast on one side, before or after the bytes move.");
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/Copy.cpp", "copy_impl");
    return e;
  }
  // An item of the packed CPU matmul's loop nest (packed_matmul.cpp).
  if (a.sp.name == "pack A" || a.sp.name == "pack B" || a.sp.name == "tile task") {
    const bool task = a.sp.name == "tile task", own = has(a.sp, "packed_its_own_panels");
    const bool a_in_place = has(a.sp, "a_read_in_place"), b_in_place = has(a.sp, "b_read_in_place");
    const int64_t waited = num(a.sp, "waited_for_packing_ns", 0) + num(a.sp, "waited_for_step_before_ns", 0) +
                           num(a.sp, "waited_for_readers_ns", 0);
    Explanation e = make("kernel.packed_item", task ? "A task of the packed matmul: tiles of C, step " +
                                                          str(a.sp, "step", "?") + ", task " + str(a.sp, "task", "?")
                                                    : "The packed matmul copies " + a.sp.name.substr(5) +
                                                          " into panels, step " + str(a.sp, "step", "?"));
    say(e, task ? "One task of the product: a block of C's rows by a block of its columns, computed a tile at a time "
                  "by the microkernel (12 x 32 floats with AVX-512), which keeps the tile in registers and reads "
                  "panels of A and B laid out in the order it reads them." +
                      (own ? " This product is one step of the loop nest, so there is no later step to overlap "
                             "shared packing with: whatever the task packed, it packed itself, into its own "
                             "thread's buffers, still in its own cache when the microkernel reads them."
                           : std::string()) +
                      (a_in_place ? " A was read in place, not packed: its rows are contiguous and K fits in one "
                                    "block, so they lie almost as a panel already and a copy would only cost time; "
                                    "only a panel cut by A's last rows was packed."
                                  : std::string()) +
                      (b_in_place ? std::string(" B was read in place") + (a_in_place ? " too" : "") +
                                        ": its rows are contiguous, and each task would otherwise pack the B panels "
                                        "it reads again; only a panel cut by B's last columns was packed."
                                  : std::string())
                : "Before any product, the operands are copied into panels laid out in the order the microkernel "
                  "reads them, sized to the caches: each panel is packed once and shared by every task that "
                  "uses it (where A's rows already lie almost as a panel, only its last, partial panel is "
                  "packed).");
    say(e,
        std::string(own ? "Every thread of the loop claims the next task of one list"
                        : "Every thread of the loop claims the next item of one list (packing first, then the tasks)") +
            " and waits only for the items it needs" +
            (waited > 0 ? ": this one waited " + trace::format_duration(waited) + " for them." : "."));
    note(e, "Packed matmul");
    if (a_in_place || b_in_place || a.sp.name == "pack A") note(e, "Panels read in place");
    pytorch(e, "aten/src/ATen/native/CPUBlas.cpp", "cpublas::gemm");
    return e;
  }
  // A c10d:: operator's kernel (floors/distributed/c10d_kernels.cpp): no loop, a hand-off.
  if (has(a.sp, "backend") && starts_with(a.sp.name, "c10d::")) {
    const std::string backend = str(a.sp, "backend"), device = str(a.sp, "device");
    Explanation e = make("kernel.collective", "The kernel of " + a.sp.name + " hands the call to " + backend);
    say(e,
        "A collective is an operator like any other: the dispatcher picked this kernel from the tensors' key "
        "set (the " +
            device +
            " key), as it picks add's. It runs no loop of its own: it asks the default process group for its "
            "backend of " +
            device + " tensors (c10d's getBackend) and hands it the call, which returns a Work.");
    say(e, backend == "nccl"
               ? "NCCL's part follows on floor 7 (its own stream, made to wait for the current one) and floor 8 "
                 "(the NCCL call, a launch whose kernel the device runs)."
               : "MPI's part follows on floor 7: the call is queued for the MPI worker, the thread that makes the MPI "
                 "calls one at a time, or, made without async_op while the worker is idle, made on this thread.");
    note(e, "Collectives are c10d ops");
    pytorch(e, "torch/csrc/distributed/c10d/Ops.cpp", "allreduce_CPU, allreduce_CUDA: getBackend(DEV)->allreduce");
    return e;
  }
  if (a.sp.name == "copy each rank's block out") {
    Explanation e = make("kernel.allgather_copy", "all_gather copies each rank's block into its tensor");
    say(e,
        "The backend gathered every rank's tensor into one flat buffer; now that the Work has been waited "
        "on, each rank's block is copied into its tensor of the list (with NCCL, queued on the current "
        "stream, which waits for NCCL's).");
    note(e, "Collectives are c10d ops");
    pytorch(e, "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
            "ProcessGroupNCCL::allgather: copies out of the flattened output");
    return e;
  }
  if (variant.empty()) {
    Explanation e = make("kernel.stopped", "The kernel of " + a.sp.name + " stopped before choosing a loop");
    say(e,
        "It recorded no variant (and no dtype or element count): the call left the kernel by an exception "
        "during its checks, before the output was made. The error says which check: shapes that do not "
        "broadcast, a dtype the op refuses, a number that does not fit.");
    note(e, "Explaining a span");
    note(e, "Type promotion");
    // The op's own check where PyTorch has one (mm's meta function), TensorIterator's for an elementwise op
    // (Note [PyTorch's place for a failed check], models.cpp).
    if (const PyTorchCheck c = pytorch_check_of(a.sp.name, ""); !c.file.empty())
      e.pytorch.push_back({c.file, c.function + ": " + c.what});
    else
      pytorch(e, "aten/src/ATen/TensorIterator.cpp", "TensorIteratorBase::build: the checks before the loop");
    return e;
  }
  if (starts_with(variant, "view")) {
    Explanation e = make("kernel.view", a.sp.name + " is a view: no loop, no copy");
    say(e,
        "The result shares the input's memory: a new tensor header with its own sizes, strides and offset over "
        "the same storage, so no memory is asked for and no element moves.");
    if (contains(variant, "no base")) {
      say(e,
          "It is recorded as no view (no base): the result is over memory nothing else holds (reshape's copy, "
          "a product's output), so autograd need not track the aliasing.");
    } else {
      say(e, "The result remembers its base, so that autograd can see an in-place write through it.");
      note(e, "Version counter and view base");
    }
    note(e, "Views and strides");
    pytorch(e, "aten/src/ATen/native/TensorShape.cpp", "view, transpose, as_strided");
    return e;
  }
  if (variant == "between devices" || variant == "none (same memory)") {
    Explanation e = make("kernel.copy",
                         variant == "between devices" ? "A copy between devices" : "A copy onto itself: nothing to do");
    say(e, variant == "between devices"
               ? "Source and destination are on different devices: the bytes move as one queued copy on the "
                 "device's stream (floor 7), not as a loop of this kernel."
               : "Source and destination are the same memory: the copy has nothing to move.");
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/Copy.cpp", "copy_impl");
    pytorch(e, "aten/src/ATen/native/cuda/Copy.cu", "copy_kernel_cuda: cudaMemcpyAsync on the current stream");
    return e;
  }
  if (variant == "sim" || variant == "cuda") {
    Explanation e = make("kernel.device", "The kernel of " + a.sp.name + " enqueues its loop on " +
                                              (variant == "sim" ? std::string("sim:0") : std::string("the GPU")));
    say(e,
        "One kernel body serves every device: everything before the loop (its checks, the result's shape and "
        "dtype, the output's memory from the device's caching allocator) ran here on the host, as for the CPU. "
        "Only the loop differs: it becomes one device kernel over " +
            (what.empty() ? std::string("the output") : what) +
            ", put on the current stream (floors 7 and 8), unless there is nothing to compute.");
    say(e, "The host returns without waiting for it: the kernel runs later, when the device reaches it in the queue.");
    note(e, "One kernel body, two devices");
    note(e, "Streams and the two clocks");
    pytorch(e, "aten/src/ATen/native/cuda/CUDALoops.cuh", "gpu_kernel_impl, launch_vectorized_kernel");
    if (has(a.sp, "rung")) {  // a product: which rung of the device's ladder ran (Note [The matmul ladder])
      say(e,
          "A product on a device has a ladder of kernels, plainest first: naive, shared_tiles, register_tiles, "
          "wmma (tensor cores) and, on compute capability 9.0, wgmma fed by TMA. This one ran the " +
              str(a.sp, "rung") + " rung (" + str(a.sp, "kernel") +
              "); descent bench matmul --ladder times every rung beside cuBLAS.");
      note(e, "The matmul ladder");
      if (str(a.sp, "rung") == "wgmma") note(e, "Hopper matmul");
    } else {
      op_specific(e, a.sp.name);
    }
    if (str(a.sp, "math") == "tf32") {
      say(e,
          "It ran in TF32, because descent.backends.cuda.matmul.allow_tf32 is True: each float32 operand was cut "
          "to a 10-bit mantissa on its way into the tensor cores, so the result is close to float32's but not its "
          "bits. cuBLAS's TF32 is several times faster than its float32; descent's TF32 kernel is a plain wmma "
          "rung, not yet faster than its own float32 tiles (docs/BENCHMARKS.md).");
      note(e, "TF32 matmul");
    }
    roofline_sentences(e, a);
    return e;
  }
  return cpu_loop(a, variant, what);
}

// A CPU loop, reference or optimized: what it ran and why (kernel_span's last case).
Explanation cpu_loop(const At& a, const std::string& variant, const std::string& what) {
  Explanation e =
      make(variant == "optimized" ? "kernel.optimized" : "kernel.reference",
           "The kernel of " + a.sp.name + " ran the " + variant + " loop" + (what.empty() ? "" : " over " + what));
  if (is_factory(a)) {
    say(e,
        "A factory: it made its output on the device its device argument named (BackendSelect sent the call "
        "here), with the cpu_alloc under it, and fills it.");
  } else {
    say(e,
        "Before the loop it checked its arguments, worked out the result's shape and dtype (broadcasting and "
        "promoting, for an op of two operands) and asked the allocator for the output (the cpu_alloc under it, "
        "when it made one).");
  }
  int threads = 0;
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    if (k.name == "parallel_for") threads = std::max<int>(threads, static_cast<int>(num(k, "threads", 1)));
  }
  if (variant == "optimized") {
    std::string s = "It took the optimized loop: a contiguous fast path the compiler vectorizes";
    if (has(a.sp, "isa"))
      s += ", here with the vector unit's " + str(a.sp, "isa") + " instructions (the widest the CPU has, unless set)";
    s += threads > 1
             ? ", split over " + std::to_string(threads) + " threads of the intra-op pool (the parallel_for under it)."
             : ", on this one thread (too little work to wake the pool).";
    say(e, s);
    if (has(a.sp, "rung")) {  // a matmul: which rung of the CPU's ladder ran (Note [Matmul rungs])
      const std::string rung = str(a.sp, "rung");
      say(e,
          "A product has a ladder of CPU kernels, plainest first: reference (three loops), register (a block of "
          "outputs kept in vector registers) and packed (BLIS's panels of A and B copied to fit the caches, "
          "then a register-blocked microkernel). This one ran the " +
              rung + " rung" + (rung == "packed" ? ", which wins from about 80^3 multiply-adds up." : ".") +
              " descent bench matmul --ladder --device cpu times every rung beside torch.");
      note(e, "Matmul rungs");
    }
    note(e, "Intra-op parallelism");
  } else if (is_factory(a)) {
    say(e, "A factory on the CPU has one loop, the fill, named reference: there is nothing to choose.");
  } else {
    say(e,
        "It took the reference loop: plain strided loops written for reading. The optimized loop was not used: "
        "it does not apply to these inputs (it wants contiguous operands of the result's shape), this op has none "
        "on the CPU, or reference kernels were asked for (descent trace --reference).");
  }
  say(e,
      "A CPU kernel runs right here on the calling thread: when it returns the work is done, and nothing is "
      "queued on floors 7 and 8.");
  roofline_sentences(e, a);
  note(e, "One op table");
  op_specific(e, a.sp.name);
  pytorch(e, "aten/src/ATen/TensorIterator.cpp", "TensorIteratorBase::build: broadcasting, promotion, the output");
  pytorch(e, "aten/src/ATen/native/DispatchStub.h",
          "DispatchStub: the loop for the CPU's vector unit (DEFAULT, AVX2, AVX512)");
  pytorch(e, "aten/src/ATen/native/cpu/Loops.h", "cpu_kernel_vec");
  return e;
}

Explanation parallel_span(const At& a) {
  if (a.sp.name == "parallel_for") {
    const int64_t threads = num(a.sp, "threads", 1);
    Explanation e = make("kernel.parallel_for", "The loop is split over " + plural(threads, "thread", "threads"));
    say(e,
        "The loop is long enough to be worth waking the intra-op pool: its range is cut into chunks of at least "
        "a grain of elements, run by " +
            plural(threads, "thread", "threads") +
            " (this one among them), each "
            "chunk a span on its own thread (the timeline shows them), and this thread waits for all of them.");
    note(e, "Intra-op parallelism");
    pytorch(e, "aten/src/ATen/Parallel.h", "at::parallel_for");
    return e;
  }
  Explanation e = make("kernel.parallel_chunk", "A chunk of a parallel loop: elements " + str(a.sp, "begin", "?") +
                                                    " to " + str(a.sp, "end", "?"));
  say(e,
      "One chunk of a loop that parallel_for split: the elements from begin up to end, run by one thread of the "
      "intra-op pool. A flow joins it to the loop that handed it out.");
  note(e, "Intra-op parallelism");
  note(e, "Flows between threads");
  pytorch(e, "aten/src/ATen/ParallelNative.cpp", "invoke_parallel");
  return e;
}

// [SECTION] Floor 6: the allocators ------------------------------------------------

Explanation cpu_alloc(const At& a) {
  const int64_t bytes = num(a.sp, "bytes");
  const Span* p = a.parent();
  Explanation e = make("allocator.cpu_alloc", "The CPU allocator: " + bytes_text(bytes));
  if (p && p->floor == Floor::Binding) {
    e.kind = "allocator.wrapped_number";
    e.title = "The CPU allocator: " + bytes_text(bytes) + " for a Python number";
    say(e, "The binding is making a 0-d tensor of a Python number (a \"wrapped number\": an int64 or a double, " +
               bytes_text(bytes) + "), before any op runs.");
    note(e, "Type promotion");
    pytorch(e, "aten/src/ATen/ScalarOps.h", "scalar_to_tensor, wrapped_scalar_tensor");
  } else if (p && p->floor == Floor::Kernels) {
    say(e, "The kernel of " + p->name + " asks for its output: " + bytes_text(bytes) +
               (has(*p, "numel") ? " for " + plural(num(*p, "numel"), "element", "elements") +
                                       (has(*p, "dtype") ? " of " + str(*p, "dtype") : "")
                                 : std::string()) +
               ".");
  } else if (p && p->floor == Floor::Dispatch) {
    say(e,
        "A kernel makes a 0-d tensor of a number argument before its loop (x ** 2 makes its exponent one, as "
        "PyTorch's wrapped numbers): " +
            bytes_text(bytes) + ".");
  } else if (p && p->floor == Floor::Autograd) {
    say(e, "Autograd's kernel asks for memory while recording: " + bytes_text(bytes) + ".");
  } else {
    say(e, "A tensor's memory on the host: " + bytes_text(bytes) + ".");
  }
  say(e,
      "Host memory needs no cache of descent's own: the C library's malloc keeps free lists and is cheap to ask. "
      "The allocator aligns each block to a cache line and counts the bytes; small blocks are taken from malloc "
      "and aligned by hand, so they come from its fast per-thread cache.");
  note(e, "Small host blocks");
  pytorch(e, "c10/core/CPUAllocator.cpp", "DefaultCPUAllocator::allocate");
  pytorch(e, "c10/core/impl/alloc_cpu.cpp", "alloc_cpu");
  return e;
}

Explanation caching_alloc(const At& a) {
  const int64_t bytes = num(a.sp, "bytes"), block = num(a.sp, "block");
  const std::string pool = str(a.sp, "pool"), stream = str(a.sp, "stream", "?");
  const bool hit = flag(a.sp, "hit"), split = flag(a.sp, "split");
  if (!has(a.sp, "hit")) {
    Explanation e = make("allocator.caching_alloc", "The caching allocator: " + bytes_text(bytes));
    say(e, "A device tensor's memory comes from the device's caching allocator; this span recorded only the size.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::malloc");
    return e;
  }
  int64_t segment = -1;
  for (size_t c : a.children()) {
    if (a.t().spans[c].name == "raw_malloc") segment = num(a.t().spans[c], "bytes");
  }
  Explanation e =
      make(hit ? "allocator.cache_hit" : "allocator.cache_miss",
           std::string(hit ? "Cache hit: " : "Cache miss: ") + bytes_text(bytes) + " from the " + pool + " pool");
  say(e, "The request, rounded up to a multiple of 512 B, is " + bytes_text(bytes) + ", which puts it in the " + pool +
             " pool (" + (pool == "small" ? "1 MiB or less" : "over 1 MiB") +
             "); the search is for the smallest "
             "free block of that pool and of stream " +
             stream + " that is large enough.");
  if (hit) {
    say(e,
        "One was found: the device was not asked for anything, which is what makes a cached allocation cost "
        "about as little as a CPU one.");
  } else {
    say(e, "None was free, so the allocator asked the device for a new segment" +
               (segment >= 0 ? " of " + bytes_text(segment) : std::string()) +
               " (the raw_malloc under this span: cudaMalloc, or the simulated device's host arena)" +
               (segment > bytes ? ", larger than the request, so that later requests are served from the rest."
                                : ": a large request gets a segment of its own size, rounded up to 2 MiB."));
  }
  if (split) {
    say(e, "The block was larger than the request, so it was split: this tensor takes " + bytes_text(block) +
               " and the remainder stays free in the pool for the next request.");
  } else {
    say(e, "The block was handed out whole (" + bytes_text(block) +
               "): what would be left over is too small to keep "
               "as a block of its own.");
  }
  note(e, "Caching allocator policy");
  if (hit) note(e, "The hit path");
  pytorch(e, "c10/cuda/CUDACachingAllocator.cpp",
          hit ? "DeviceCachingAllocator::malloc, get_free_block, should_split"
              : "DeviceCachingAllocator::malloc, alloc_block");
  return e;
}

Explanation allocator_other(const At& a) {
  const std::string& n = a.sp.name;
  Explanation e;
  if (n == "raw_malloc") {
    const int64_t bytes = num(a.sp, "bytes");
    e = make("allocator.raw_malloc", "A new segment from the device: " + bytes_text(bytes));
    say(e,
        "Asking the device itself (cudaMalloc, or the simulated device's host arena) is slow and synchronizes "
        "the device, so it asks for whole segments: 2 MiB for the small pool, 20 MiB for a large request under "
        "10 MiB, a large one rounded up to 2 MiB. The segment becomes the pool's blocks.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::alloc_block (cudaMalloc)");
  } else if (n == "caching_free") {
    const int64_t waits = num(a.sp, "waits_on", 0);
    e = make("allocator.free", "A block goes back to the pool: " + bytes_text(num(a.sp, "block")));
    const Span* p = a.parent();
    const std::string who = p && p->floor == Floor::Python
                                ? "The statement dropped the last reference to a device tensor"
                                : "The last reference to a device tensor went away";
    if (waits > 0) {
      say(e, who + ", but its block was also used on " + plural(waits, "other stream", "other streams") +
                 " (record_stream): an event is recorded on each, and the block returns to the free pool of stream " +
                 str(a.sp, "stream", "?") + " only once they have passed, since a kernel there may still read it.");
      note(e, "Deferred frees");
    } else {
      say(e, who + ": its block returns to the free pool of stream " + str(a.sp, "stream", "?") +
                 ", merged with free neighbours, for the next request.");
    }
    say(e, "Nothing is given back to the device: that is empty_cache's job.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::free, free_block");
  } else if (n == "process_events") {
    e = make("allocator.process_events", "Deferred frees whose events have passed: " + str(a.sp, "completed", "?"));
    say(e,
        "Before searching the pool, the allocator returns the blocks whose other streams have passed the events "
        "recorded when they were freed; " +
            str(a.sp, "completed", "?") + " completed now.");
    note(e, "Deferred frees");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::process_events");
  } else if (n == "record_stream") {
    e = make("allocator.record_stream", "A block is marked as used on stream " + str(a.sp, "stream", "?"));
    say(e,
        "record_stream tells the allocator that another stream uses this tensor, so that its free waits for "
        "that stream's work instead of handing the block out while a kernel may still read it.");
    note(e, "Deferred frees");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::recordStream");
  } else if (n == "empty_cache") {
    e = make("allocator.empty_cache",
             "empty_cache: " + plural(num(a.sp, "segments", 0), "segment", "segments") + " given back");
    say(e,
        "Every cached segment with no block in use is given back to the device (raw_free); a segment with any "
        "block still allocated stays.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::emptyCache");
  } else if (n == "raw_free") {
    e = make("allocator.raw_free", "A segment goes back to the device: " + bytes_text(num(a.sp, "bytes")));
    say(e, "A whole free segment is returned to the device (cudaFree, or the simulated device's arena).");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::release_block (cudaFree)");
  } else if (n == "synchronize_device") {
    e = make("allocator.synchronize", "Out of memory: the allocator waits for every pending free");
    say(e,
        "The device refused a new segment, so the allocator waits for the device, completes every deferred free, "
        "releases the cached segments and tries once more before raising OutOfMemoryError.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "synchronize_and_free_events");
  } else if (n == "pinned_alloc") {
    e = make("allocator.pinned",
             "Pinned host memory: " + bytes_text(num(a.sp, "bytes")) + " (" + str(a.sp, "api") + ")");
    say(e,
        "Page-locked host memory, which the device can copy from without staging it first, so a copy from it "
        "can be asynchronous for the host.");
    if (str(a.sp, "api") != "cudaHostAlloc") {
      say(e,
          "With no GPU usable it is ordinary aligned host memory marked pinned: a copy from it to sim:0 reads "
          "the bytes when the copy runs, as a GPU would.");
    }
    note(e, "Pinned host memory");
    pytorch(e, "aten/src/ATen/cuda/CachingHostAllocator.cpp", "CachingHostAllocator");
  }
  return e;
}

}  // namespace descent::ui::explaining
