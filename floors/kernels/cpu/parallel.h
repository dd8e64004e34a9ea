// Intra-op parallelism for the CPU kernels: parallel_for over an index range,
// run by a persistent pool of worker threads. PyTorch's at::parallel_for.
//
// [SECTION] Thread count
// [SECTION] parallel_for
//
// Note [Intra-op parallelism]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A large loop (a 1<<20-element add, the rows of a 512x512 matrix product) is
// cut into contiguous chunks that several threads run at once. The threads
// belong to a pool made by the first loop that goes parallel and kept for the
// life of the process: starting a thread costs a system call, a stack and tens
// of microseconds every time, waking a sleeping one much less. The calling
// thread works too, rather than sleeping while others work: it offers n - 1
// seats to the workers (Note [Seats at the open job] in parallel.cpp), then
// claims chunks from the same counter they claim from, so n threads share the
// loop; when a worker is slow to wake, the caller simply does more of the
// chunks itself (there are up to four chunks per thread for that reason). Once
// the counter runs out it takes back the seats nobody took and waits only for
// the helpers that took one. A second thread whose loop comes while another's
// is running runs its own alone. Chunks are contiguous runs of indices, so
// each thread streams through its own stretch of memory with the same
// vectorized inner loop as before, and two threads share a cache line only
// where chunks meet. Results stay bit for
// bit what one thread computes: every output element is computed by the same
// code, from the same inputs, in the same order (a matrix product is split by
// output tiles, and an element's blocks of K run in order, whichever threads
// run them; a long sum is split at a fixed level of its cascade,
// Note [Cascade summation], so its order does not depend on the threads). A
// loop no longer than its grain runs inline on the caller (one compare and
// branch, before the pool is touched), and so does a loop opened from inside a
// chunk: no nested parallelism. An exception thrown by a chunk is carried back
// and rethrown on the caller (the first one wins) once every chunk has
// finished. Traced, the loop is a "parallel_for" span and every chunk a
// "parallel_for chunk" span (begin=, end=) of the thread that ran it; a
// worker's chunk is joined to the loop by a flow, an arrow in Perfetto
// (Note [Flows between threads] in tracer/tracer.h).
#pragma once

#include <cstdint>
#include <type_traits>

namespace descent::kernels {

// [SECTION] Thread count ---------------------------------------------------------

constexpr int kMaxThreads = 1024;  // the largest set_num_threads() accepts

// The thread count, PyTorch's names. Default: $DESCENT_NUM_THREADS when it is a
// number from 1 to kMaxThreads (any other value is ignored with a warning),
// else std::thread::hardware_concurrency().
int get_num_threads();        // threads a parallel loop uses, the caller included
void set_num_threads(int n);  // 1 to kMaxThreads, else ValueError; 1 makes every loop serial
bool in_parallel_region();    // true while this thread runs a chunk of a parallel_for

// One iteration of a spin-wait: tells the core this thread is waiting.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// [SECTION] parallel_for -----------------------------------------------------------

// The unit grains are counted in, PyTorch's GRAIN_SIZE (elements of a cheap
// loop); each kernel asks for a multiple that suits the cost of its element
// (optimized.cpp). A loop no longer than its grain stays on one thread.
constexpr int64_t kGrainSize = 32768;

// A non-owning reference to a callable `void(int64_t begin, int64_t end)`: two
// pointers, no allocation (a std::function may allocate). Must not outlive it.
class RangeFn {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, RangeFn>)
      RangeFn(const F& f)  // NOLINT: implicit, as std::function's
      : obj_(&f), call_([](const void* o, int64_t b, int64_t e) { (*static_cast<const F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  const void* obj_;
  void (*call_)(const void*, int64_t, int64_t);
};

namespace detail {
// Everything past the inline check: nesting, thread count, the pool (parallel.cpp).
void parallel_for_pool(int64_t begin, int64_t end, int64_t grain, RangeFn fn);
}  // namespace detail

// Calls fn(b, e) on contiguous pieces [b, e) that together cover [begin, end)
// exactly once, at most one piece per `grain` indices, on at most
// get_num_threads() threads (this one included); returns when all are done.
// Inline, as one fn(begin, end) on this thread, when end - begin <= grain,
// inside another parallel_for, or with one thread. See Note [Intra-op
// parallelism].
template <typename F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  if (end - begin <= grain) [[likely]] {  // the small-tensor path: nothing else is touched
    if (begin < end) fn(begin, end);
    return;
  }
  detail::parallel_for_pool(begin, end, grain, RangeFn(fn));
}

}  // namespace descent::kernels
