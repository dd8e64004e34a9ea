// The worker pool behind parallel_for. See Note [Intra-op parallelism] in parallel.h.
//
// [SECTION] Thread count
// [SECTION] Jobs and the pool
// [SECTION] parallel_for
//
// The pool's policy, in short:
//   - created on the first loop that goes parallel, never per call; it grows
//     to get_num_threads() - 1 workers as loops ask for them, and never
//     shrinks (a smaller thread count just invites fewer of them);
//   - never destroyed: its workers sleep until the process ends, so no
//     static destructor has to stop them, and exit() never waits on one;
//   - a worker done with a loop spins a moment before it sleeps, so the
//     next loop of the same op finds it awake (Note [Workers spin before
//     they sleep]);
//   - a fork()ed child starts a fresh pool (its parent's workers do not exist
//     in the child, and the old pool's mutex may have been copied locked).
#include "floors/kernels/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
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
// and the woken workers then take the pool's mutex one after another. A packed
// matmul of 512 x 512 ran two loops (packing B, then the products; one since:
// Note [Packed matmul]), each a few hundred microseconds of work on 16 threads:
// with every worker asleep between them, the caller claims chunks before the
// others wake. So a worker that finishes a loop keeps looking for the next
// invitation for kSpin before it sleeps, reading an atomic count of invitations
// without the mutex, as OpenMP's runtimes do (GOMP_SPINCOUNT, KMP_BLOCKTIME); a
// program that stops calling ops has its workers asleep again within kSpin, and
// a loop that comes within it starts on every thread at once. Measured
// (docs/BENCHMARKS.md): on the dev VM's two threads, 128^3 went from 0.046 to
// 0.041 ms and 512^3 from 0.876 to 0.833; on the H200 host's 16, 512^3 went
// from 2.35 ms to between 1.06 and 2.46 over four runs (its CPU is shared and
// noisy), still far from PyTorch's 0.29 ms: the spinning is not what keeps this
// product from scaling there. Spinning in the two other places a thread of the
// pool sleeps (on try_lock for the mutex, and the caller for its helpers' last
// chunks) was measured twice and not kept: in the noise in one stop; in the
// next, 14% faster at 256^2 but 8% slower at 512^2 (docs/BENCHMARKS.md).
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
  // Guarded by the pool's mutex:
  int helpers = 0;                   // workers that took an invitation and are not done with it
  std::exception_ptr error;          // the first exception a chunk threw
  std::condition_variable finished;  // notified when `helpers` drops to 0
  trace::SpanRef span;               // the caller's parallel_for span; invalid when not traced
};

class Pool {
 public:
  // Runs every chunk of `job`, on this thread and on the workers it invites;
  // returns when all are done, with the number of threads asked to work.
  // Exceptions are left in job.error.
  int64_t run(Job& job) {
    int64_t invited = 0;
    {
      std::lock_guard lock(mutex_);
      grow(int(job.threads) - 1);
      try {
        for (; invited < std::min<int64_t>(job.threads - 1, workers_); ++invited) invitations_.push_back(&job);
      } catch (...) {  // out of memory for the queue: no helpers, this thread does it all
        std::erase(invitations_, &job);
        invited = 0;
      }
      pending_.store(int64_t(invitations_.size()), std::memory_order_release);
    }
    for (int64_t i = 0; i < invited; ++i) wake_.notify_one();
    run_chunks(job, false);
    std::unique_lock lock(mutex_);
    std::erase(invitations_, &job);  // withdraw the invitations nobody took: every chunk is claimed
    pending_.store(int64_t(invitations_.size()), std::memory_order_release);
    job.finished.wait(lock, [&] { return job.helpers == 0; });
    return invited + 1;
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

  // A worker: sleeps until invited, helps, reports, sleeps again. The job's
  // memory is touched only between taking an invitation (under the mutex) and
  // the last `helpers` decrement (under the mutex too), so the caller, which
  // waits for helpers == 0 under the same mutex, never returns while a
  // worker still holds a pointer to it.
  void work() {
    t_in_parallel = true;  // a worker never opens a parallel region of its own
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return !invitations_.empty(); });
      Job* job = invitations_.front();
      invitations_.pop_front();
      pending_.store(int64_t(invitations_.size()), std::memory_order_release);
      ++job->helpers;
      lock.unlock();
      run_chunks(*job, true);
      lock.lock();
      if (--job->helpers == 0) job->finished.notify_one();
      // Note [Workers spin before they sleep]: the next invitation, looked for a moment without the mutex.
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (pending_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) cpu_relax();
      lock.lock();
    }
  }

  // Starts workers until there are `want` (mutex held). A thread that cannot
  // be started is not an error: the callers do the chunks themselves.
  void grow(int want) {
    while (workers_ < want) {
      try {
        std::thread(&Pool::work, this).detach();
      } catch (...) {
        return;
      }
      ++workers_;
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;     // workers wait here for invitations
  std::deque<Job*> invitations_;     // one entry per helper a job asks for
  std::atomic<int64_t> pending_{0};  // invitations_.size(), for the workers that spin
  int workers_ = 0;
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
  job.span = trace::span_ref(span.handle());  // before the workers are invited: they read it
  span.arg("threads", pool().run(job));
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace descent::kernels
