// The worker pool behind parallel_for. See Note [Intra-op parallelism] in parallel.h.
//
// [SECTION] Thread count
// [SECTION] Jobs and the pool
// [SECTION] parallel_for
//
// The pool's policy, in short:
//   - created on the first loop that goes parallel, never per call; it grows
//     to get_num_threads() - 1 workers as loops ask for them, and never
//     shrinks (a smaller thread count just offers fewer seats);
//   - never destroyed: its workers sleep until the process ends, so no
//     static destructor has to stop them, and exit() never waits on one;
//   - a worker done with a loop spins a moment before it sleeps, so the
//     next loop of the same op finds it awake (Note [Workers spin before
//     they sleep]);
//   - a fork()ed child starts a fresh pool (its parent's workers do not exist
//     in the child, and the old pool's mutex may have been copied locked):
//     the old one is forgotten, never waited for, as PyTorch's pthreadpool
//     leaks its own in a child; the devices raise there instead
//     (Note [Devices after fork], floors/streams/streams.cpp).
#include "floors/kernels/cpu/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "floors/core/error.h"
#include "floors/core/log.h"
#include "tracer/tracer.h"

namespace descent::kernels {

namespace {

// True while this thread runs chunks of a parallel_for; always on a worker.
thread_local bool t_in_parallel = false;

// [SECTION] Thread count ---------------------------------------------------------

int default_num_threads() {
  static const int n = [] {
    if (const char* env = std::getenv("DESCENT_NUM_THREADS"); env && *env) {
      char* rest = nullptr;
      long v = std::strtol(env, &rest, 10);
      if (*rest == '\0' && v >= 1 && v <= kMaxThreads) return int(v);
      log::warn("ignoring DESCENT_NUM_THREADS=", env, " (expected a number of threads from 1 to ", kMaxThreads, ")");
    }
    unsigned hw = std::thread::hardware_concurrency();
    return std::clamp(int(hw), 1, kMaxThreads);
  }();
  return n;
}

std::atomic<int> g_num_threads{0};  // 0 until set_num_threads(): the default

// A loop is cut into up to this many chunks per thread, so that a thread that
// starts late (a worker still waking up, or busy with another loop) finds less
// of the work left, and the others share the rest.
constexpr int64_t kChunksPerThread = 4;

// Note [Workers spin before they sleep]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Waking a thread asleep on a condition variable takes tens of microseconds,
// and the woken workers then took the pool's mutex one after another. A packed
// matmul of 512 x 512 ran two loops (packing B, then the products; one since:
// Note [Packed matmul]), each a few hundred microseconds of work on 16 threads:
// with every worker asleep between them, the caller claims chunks before the
// others wake. So a worker that finishes a loop keeps looking for a seat at
// the next for kSpin before it sleeps, reading the pool's atomic word of seats
// without the mutex, as OpenMP's runtimes do (GOMP_SPINCOUNT, KMP_BLOCKTIME); a
// program that stops calling ops has its workers asleep again within kSpin, and
// a loop that comes within it starts on every thread at once. Measured
// (docs/BENCHMARKS.md): on the dev VM's two threads, 128^3 went from 0.046 to
// 0.041 ms and 512^3 from 0.876 to 0.833; on the H200 host's 16, 512^3 went
// from 2.35 ms to between 1.06 and 2.46 over four runs (its CPU is shared and
// noisy), still far from PyTorch's 0.29 ms: the spinning is not what keeps this
// product from scaling there. Spinning in the two other places a thread of the
// pool slept (on try_lock for the mutex, and the caller for its helpers' last
// chunks) was measured twice and not kept: in the noise in one stop; in the
// next, 14% faster at 256^2 but 8% slower at 512^2. What was kept instead
// takes no mutex at all on the way in or out (Note [Seats at the open job]):
// the caller spins for its helpers' last chunks for kSpin, then sleeps on the
// count of them. Measured on the H200 host (docs/BENCHMARKS.md, session 8):
// the caller's wait after the last task of a 512^2 product went from 18-29 us
// to 1 us, and the product from 1.29 and 1.22x torch's time to 1.13 and 1.14x
// (each process's median turn against its own torch.mm turns).
constexpr auto kSpin = std::chrono::microseconds(100);

// [SECTION] Jobs and the pool -------------------------------------------------------

// One parallel_for call, on its caller's stack: the range cut into `chunks`
// contiguous pieces of `chunk` indices (the last may be shorter).
struct Job {
  Job(RangeFn f, int64_t b, int64_t e, int64_t c, int64_t n, int64_t t)
      : fn(f), begin(b), end(e), chunk(c), chunks(n), threads(t) {}
  const RangeFn fn;
  const int64_t begin, end, chunk, chunks;
  const int64_t threads;         // how many threads it asks for, the caller included
  std::atomic<int64_t> next{0};  // the next chunk nobody has claimed
  std::exception_ptr error;      // the first exception a chunk threw (guarded by the pool's mutex)
  trace::SpanRef span;           // the caller's parallel_for span; invalid when not traced
};

// Note [Seats at the open job]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The pool has one open job at a time, and a caller opens it by offering
// seats: one atomic word holds the job's generation (high 32 bits) and the
// seats left (low 32). A worker takes a seat with one compare-and-swap of that
// word, no lock, so the 15 workers spinning after the last loop (Note [Workers
// spin before they sleep]) join without waiting for each other; before, each
// took the pool's mutex in turn to pop its invitation. A worker holding a seat runs
// chunks, then counts itself done (another atomic word the caller spins on,
// then sleeps on). The caller closes the job when the chunks run out: it
// takes back the seats nobody took (so a worker late by a generation fails its
// swap and never touches the job) and waits for the seats that were taken;
// only then may the job, on its stack, go. Workers asleep are woken through
// the mutex and condition variable only when some are asleep. A second caller
// that finds the job open (another thread's loop running at the same time)
// runs its loop alone on its own thread.
class Pool {
 public:
  // Runs every chunk of `job`, on this thread and on the workers that take a
  // seat; returns when all are done, with the number of threads asked to
  // work. Exceptions are left in job.error.
  int64_t run(Job& job) {
    if (workers_.load(std::memory_order_acquire) < job.threads - 1) {
      std::lock_guard lock(mutex_);
      grow(int(job.threads) - 1);
    }
    const int64_t seats = std::min<int64_t>(job.threads - 1, workers_.load(std::memory_order_acquire));
    if (seats <= 0 || open_.exchange(true, std::memory_order_acquire)) {  // none to help, or the job is taken
      run_chunks(job, false);
      return 1;
    }
    job_ = &job;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = (word_.load(std::memory_order_relaxed) >> 32) + 1;
    word_.store(gen << 32 | uint64_t(seats), std::memory_order_seq_cst);
    if (const int asleep = sleepers_.load(std::memory_order_seq_cst); asleep > 0) {
      { std::lock_guard lock(mutex_); }  // a worker between its last look and its wait is now in the wait
      for (int i = 0; i < std::min<int64_t>(asleep, seats); ++i) wake_.notify_one();
    }
    run_chunks(job, false);
    const uint64_t left = word_.exchange(gen << 32, std::memory_order_acq_rel) & 0xffffffffu;  // close the job
    const int taken = int(seats - int64_t(left));
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int spins = 1;; ++spins) {  // the helpers' last chunks: a spin, then a sleep
      const int done = done_.load(std::memory_order_acquire);
      if (done >= taken) break;
      if (spins % 64 != 0 || std::chrono::steady_clock::now() < until)
        cpu_relax();
      else
        done_.wait(done, std::memory_order_acquire);
    }
    open_.store(false, std::memory_order_release);
    return seats + 1;
  }

 private:
  // Claims chunks until none is left; records the first exception. Each
  // chunk is a span of its thread; on a worker, a flow joins it to the
  // caller's parallel_for span (Note [Flows between threads] in tracer.h).
  void run_chunks(Job& job, bool worker) {
    const bool saved = t_in_parallel;
    t_in_parallel = true;
    for (int64_t c; (c = job.next.fetch_add(1, std::memory_order_relaxed)) < job.chunks;) {
      const int64_t lo = job.begin + c * job.chunk, hi = lo + std::min(job.chunk, job.end - lo);
      trace::ScopedSpan span(trace::Floor::Kernels, "parallel_for chunk");
      if (span.active()) {
        span.arg("begin", lo);
        span.arg("end", hi);
        if (worker) trace::add_flow(job.span, trace::span_ref(span.handle()), "parallel_for");
      }
      try {
        job.fn(lo, hi);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!job.error) job.error = std::current_exception();
      }
    }
    t_in_parallel = saved;
  }

  // Takes a seat at the open job, if one is left (Note [Seats at the open job]).
  Job* take_seat() {
    uint64_t w = word_.load(std::memory_order_acquire);
    while ((w & 0xffffffffu) != 0)
      if (word_.compare_exchange_weak(w, w - 1, std::memory_order_acq_rel, std::memory_order_acquire)) return job_;
    return nullptr;
  }
  bool seats_left() const { return (word_.load(std::memory_order_seq_cst) & 0xffffffffu) != 0; }

  // A worker: takes a seat, helps, reports; between jobs it looks for a seat
  // for kSpin, then sleeps until a caller offers seats. The job's memory is
  // touched only between taking a seat and reporting done, and the caller
  // waits for every seat taken before it returns.
  void work() {
    t_in_parallel = true;  // a worker never opens a parallel region of its own
    for (;;) {
      // Note [Workers spin before they sleep]: the next seat, looked for a moment.
      Job* job = take_seat();
      for (auto until = std::chrono::steady_clock::now() + kSpin; !job;) {
        for (int i = 0; i < 64 && !job; ++i) {
          cpu_relax();
          job = take_seat();
        }
        if (!job && std::chrono::steady_clock::now() >= until) break;
      }
      if (job) {
        run_chunks(*job, true);
        done_.fetch_add(1, std::memory_order_acq_rel);
        done_.notify_one();
        continue;
      }
      std::unique_lock lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return seats_left(); });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // Starts workers until there are `want` (mutex held). A thread that cannot
  // be started is not an error: the callers do the chunks themselves.
  void grow(int want) {
    while (workers_.load(std::memory_order_relaxed) < want) {
      try {
        std::thread(&Pool::work, this).detach();
      } catch (...) {
        return;
      }
      workers_.fetch_add(1, std::memory_order_release);
    }
  }

  std::atomic<bool> open_{false};  // a caller's job holds the seats
  Job* job_ = nullptr;             // that job, published by the store of word_
  std::atomic<uint64_t> word_{0};  // the job's generation << 32 | the seats left
  std::atomic<int> done_{0};       // the job's seats whose workers are done with it
  std::atomic<int> sleepers_{0};   // workers asleep on wake_, or about to be
  std::mutex mutex_;               // for wake_, grow() and job errors
  std::condition_variable wake_;   // workers sleep here when no seat came within kSpin
  std::atomic<int> workers_{0};
};

std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return *p;
  static const bool registered = [] {
    // In a fork()ed child only the forking thread exists: forget the parent's pool.
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  Pool* fresh = new Pool;  // never deleted: see the policy above
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread made one first; this one has no workers yet
  return *p;
}

}  // namespace

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : default_num_threads();
}

void set_num_threads(int n) {
  DESCENT_CHECK(n >= 1 && n <= kMaxThreads, ValueError, "set_num_threads(): expected a number of threads from 1 to ",
                kMaxThreads, ", but got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
}

bool in_parallel_region() { return t_in_parallel; }

// [SECTION] parallel_for -------------------------------------------------------------

void detail::parallel_for_pool(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  if (begin >= end) return;
  const int64_t n = end - begin, g = std::max<int64_t>(grain, 1);
  const int64_t most = (n + g - 1) / g;  // at most one chunk per `grain` indices
  const int64_t threads = t_in_parallel ? 1 : std::min<int64_t>(get_num_threads(), most);
  if (threads <= 1) {
    fn(begin, end);
    return;
  }
  const int64_t chunks = std::min(threads * kChunksPerThread, most);
  const int64_t chunk = (n + chunks - 1) / chunks;  // e.g. 10 in 4 chunks: 3, 3, 3, 1
  Job job(fn, begin, end, chunk, (n + chunk - 1) / chunk, threads);
  trace::ScopedSpan span(trace::Floor::Kernels, "parallel_for");
  job.span = trace::span_ref(span.handle());  // before seats are offered: the workers read it
  span.arg("threads", pool().run(job));
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace descent::kernels
