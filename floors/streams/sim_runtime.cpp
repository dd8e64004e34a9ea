// The simulated device, sim:0: streams as task queues, each drained in order
// by a worker thread of its own; events as marker tasks; memory as a host
// arena behind floor 6's caching allocator.
//
// [SECTION] A stream: a queue and its worker
// [SECTION] Memory
// [SECTION] The runtime
// [SECTION] Events
//
// Note [The simulated device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// sim:0 does for real what a GPU does, on the host: work put on a stream
// runs later, on another thread, in the order it was enqueued; the host
// thread that enqueued it goes on at once, so a traced call shows two clocks
// (Note [Streams and the two clocks], streams.h). A stream is a FIFO of
// tasks (a kernel over its grid of blocks, a copy, an event's marker) and a
// worker thread that takes the front task, runs it, and counts it done.
// Every task gets a sequence number when it is enqueued; "has the stream
// passed this point?" is then `completed >= seq`, which is how events,
// stream queries and synchronization are answered. Two streams are two
// workers, so their work really overlaps. What is simulated: the device is
// the host's own cores, its memory is host memory (an arena whose capacity
// can be set, so that a lesson can run out of memory on a laptop), and its
// speed is the host's. What is not: the queue, the asynchrony, the waiting,
// the allocator and its statistics.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "floors/core/error.h"
#include "floors/core/log.h"
#include "floors/streams/sim_runtime.h"
#include "tracer/tracer.h"

namespace descent::streams {

// Note [Devices after fork] (streams.cpp): a child forked after the first
// worker started has none, so every use of sim:0 there raises instead of waiting.
void poison_fork(DeviceType t);
bool in_bad_fork(DeviceType t);
void check_fork(DeviceType t);

namespace {

// [SECTION] A stream: a queue and its worker --------------------------------------

class SimQueue {
 public:
  explicit SimQueue(Stream s) : stream_(s), worker_(start()) {}
  ~SimQueue() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_work_.notify_all();
    worker_.join();
  }

  // Returns the task's sequence number and the queue's depth with it.
  std::pair<uint64_t, int64_t> enqueue(std::function<void()> task) {
    std::lock_guard<std::mutex> g(mu_);
    tasks_.push_back(std::move(task));
    const uint64_t seq = ++enqueued_;
    cv_work_.notify_one();
    return {seq, int64_t(enqueued_ - completed_)};
  }
  uint64_t enqueued() {
    std::lock_guard<std::mutex> g(mu_);
    return enqueued_;
  }
  bool passed(uint64_t seq) {
    std::lock_guard<std::mutex> g(mu_);
    return completed_ >= seq;
  }
  int64_t depth() {
    std::lock_guard<std::mutex> g(mu_);
    return int64_t(enqueued_ - completed_);
  }
  // The host waits until the stream has run task `seq` (every task so far
  // for the last one enqueued), then raises a device fault if one happened.
  void wait_for(uint64_t seq) {
    std::unique_lock<std::mutex> g(mu_);
    ++waiting_;
    cv_done_.wait(g, [&] { return completed_ >= seq; });
    --waiting_;
    if (fault_) {
      std::exception_ptr f = fault_;
      fault_ = nullptr;
      g.unlock();
      std::rethrow_exception(f);
    }
  }
  void wait_all() { wait_for(enqueued()); }
  int waiting() {
    std::lock_guard<std::mutex> g(mu_);
    return waiting_;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_work_.wait(g, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, nothing left
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      std::exception_ptr fault;
      try {
        task();
      } catch (...) {
        fault = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> g(mu_);
        if (fault && !fault_) fault_ = fault;
        ++completed_;
      }
      cv_done_.notify_all();
    }
  }

  // The worker: from its first, a fork leaves the child without sim:0.
  std::thread start() {
    poison_fork(DeviceType::Sim);
    return std::thread([this] { run(); });
  }

  Stream stream_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::deque<std::function<void()>> tasks_;
  uint64_t enqueued_ = 0, completed_ = 0;
  int waiting_ = 0;  // host threads inside wait_for
  std::exception_ptr fault_;
  bool stop_ = false;
  std::thread worker_;  // last: started once everything above exists
};

// [SECTION] Memory ------------------------------------------------------------------

// "512MiB", "8GiB", "4096" (bytes), "1.5GB": a byte count; false when not one.
bool parse_bytes(const char* text, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || !(v >= 0)) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB" || unit == "KB" || unit == "K")
    scale = 1024.0;
  else if (unit == "MiB" || unit == "MB" || unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "GB" || unit == "G")
    scale = 1024.0 * 1024 * 1024;
  if (scale == 0 || v * scale > 0x1p62) return false;
  *out = size_t(v * scale);
  return true;
}

// The simulated device's raw memory: host memory, counted against a capacity
// (DESCENT_SIM_MEMORY, default 8 GiB), so that the caching allocator above it
// meets out-of-memory exactly as it would on a GPU.
class SimMemory final : public alloc::RawBackend {
 public:
  SimMemory() : capacity_(initial_capacity()) {}
  void* raw_malloc(size_t nbytes) override {
    check_fork(DeviceType::Sim);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (nbytes > capacity_ - std::min(in_use_, capacity_)) return nullptr;
      in_use_ += nbytes;
    }
    void* p =
        std::aligned_alloc(alloc::kAlignment, (nbytes + alloc::kAlignment - 1) / alloc::kAlignment * alloc::kAlignment);
    if (p == nullptr) {
      std::lock_guard<std::mutex> g(mu_);
      in_use_ -= nbytes;
    }
    return p;
  }
  void raw_free(void* ptr, size_t nbytes) override {
    synchronize_device();  // as cudaFree does: no queued work may still touch the memory
    std::free(ptr);
    std::lock_guard<std::mutex> g(mu_);
    in_use_ -= nbytes;
  }
  const char* name() const override { return "sim:0"; }

  // Events for the caching allocator's deferred frees (Note [Deferred frees]),
  // defined below with the runtime. No kernel body may free memory, since
  // the allocator calls these with its mutex held.
  void* record_event(alloc::StreamId stream) override;
  bool event_done(void* event) override;
  void release_event(void* event) override;
  void synchronize_device() override;
  size_t total_memory() override { return capacity(); }
  size_t free_memory() override {
    std::lock_guard<std::mutex> g(mu_);
    return capacity_ - std::min(in_use_, capacity_);
  }
  size_t capacity() {
    std::lock_guard<std::mutex> g(mu_);
    return capacity_;
  }
  void set_capacity(size_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    capacity_ = bytes;
  }
  size_t in_use() {
    std::lock_guard<std::mutex> g(mu_);
    return in_use_;
  }

 private:
  static size_t initial_capacity() {
    const char* env = std::getenv("DESCENT_SIM_MEMORY");
    if (env != nullptr && *env != 0) {
      size_t bytes = 0;
      if (parse_bytes(env, &bytes)) return bytes;
      log::warn("DESCENT_SIM_MEMORY=", env, " is not a size such as 512MiB or 8GiB; using 8 GiB");
    }
    return size_t(8) << 30;
  }
  std::mutex mu_;
  size_t capacity_;
  size_t in_use_ = 0;
};

}  // namespace

// [SECTION] The runtime -------------------------------------------------------------

struct SimRuntime::Impl {
  std::mutex mu;
  std::map<int64_t, std::unique_ptr<SimQueue>> queues;  // stream id -> queue
  int64_t next_stream = 1;
  SimMemory memory;

  // Every use of a stream passes here (Note [Devices after fork]).
  SimQueue& queue(const Stream& s) {
    check_fork(DeviceType::Sim);
    std::lock_guard<std::mutex> g(mu);
    auto it = queues.find(s.id);
    if (it == queues.end()) {
      DESCENT_CHECK(s.id == 0, Error, "sim:0 has no stream ", s.id);
      it = queues.emplace(s.id, std::make_unique<SimQueue>(s)).first;
    }
    return *it->second;
  }
  std::vector<SimQueue*> all() {
    check_fork(DeviceType::Sim);
    std::lock_guard<std::mutex> g(mu);
    std::vector<SimQueue*> r;
    for (auto& [id, q] : queues) r.push_back(q.get());
    return r;
  }
};

// [SECTION] Events ----------------------------------------------------------------

// An event is the sequence number of its marker task on the stream it was
// recorded on; the marker reads the host clock when the worker reaches it,
// which is the event's device time.
struct SimEvent : EventImpl {
  explicit SimEvent(SimRuntime::Impl& rt) : rt_(rt) {}
  void record(const Stream& s) override {
    auto time = std::make_shared<std::atomic<int64_t>>(-1);
    time_ = time;
    seq_ = rt_.queue(s).enqueue([time] { time->store(trace::now_ns()); }).first;
    recorded = true;
    stream = s;
  }
  void block(const Stream& s) override {
    if (!recorded) return;
    SimQueue* q = &rt_.queue(stream);
    const uint64_t seq = seq_;
    // The waiting stream's worker blocks until the recording stream passes the marker.
    rt_.queue(s).enqueue([q, seq] {
      while (!q->passed(seq)) std::this_thread::yield();
    });
  }
  bool query() override { return !recorded || rt_.queue(stream).passed(seq_); }
  void synchronize() override {
    if (recorded) rt_.queue(stream).wait_for(seq_);
  }
  double elapsed_ms(EventImpl& end) override {
    auto& e = static_cast<SimEvent&>(end);
    DESCENT_CHECK(recorded && e.recorded, Error, "Both events must be recorded before calculating elapsed time.");
    DESCENT_CHECK(query() && e.query(), Error, "Both events must be completed before calculating elapsed time.");
    return double(e.time_->load() - time_->load()) / 1e6;
  }

 private:
  SimRuntime::Impl& rt_;
  uint64_t seq_ = 0;
  std::shared_ptr<std::atomic<int64_t>> time_;
};

// In a child forked after sim:0 started (Note [Devices after fork]) no task
// can run any more: a block's deferred free needs no event, and there is no
// work to wait for.
void* SimMemory::record_event(alloc::StreamId stream) {
  if (in_bad_fork(DeviceType::Sim)) return nullptr;  // the allocator takes a null event as passed
  auto ev = SimRuntime::get().create_event(0, false);
  ev->record(Stream{Device{DeviceType::Sim, 0}, stream});
  return ev.release();
}
bool SimMemory::event_done(void* event) {
  return in_bad_fork(DeviceType::Sim) || static_cast<EventImpl*>(event)->query();
}
void SimMemory::release_event(void* event) { delete static_cast<EventImpl*>(event); }
void SimMemory::synchronize_device() { SimRuntime::get().synchronize_device(0); }

SimRuntime::SimRuntime() : impl_(new Impl) {}

SimRuntime& SimRuntime::get() {
  // Never destroyed: worker threads may still be running at exit.
  static SimRuntime* rt = new SimRuntime;
  return *rt;
}

std::string SimRuntime::unavailable_reason() { return ""; }
alloc::RawBackend& SimRuntime::memory(int) { return impl_->memory; }
size_t SimRuntime::capacity() { return impl_->memory.capacity(); }
void SimRuntime::set_capacity(size_t bytes) { impl_->memory.set_capacity(bytes); }
std::string SimRuntime::device_name(int) { return "descent simulated device"; }

int64_t SimRuntime::create_stream(int) {
  check_fork(DeviceType::Sim);
  std::lock_guard<std::mutex> g(impl_->mu);
  const int64_t id = impl_->next_stream++;
  impl_->queues.emplace(id, std::make_unique<SimQueue>(Stream{Device{DeviceType::Sim, 0}, id}));
  return id;
}

void SimRuntime::synchronize(const Stream& s) { impl_->queue(s).wait_all(); }
bool SimRuntime::query(const Stream& s) { return impl_->queue(s).depth() == 0; }
int64_t SimRuntime::queue_depth(const Stream& s) { return impl_->queue(s).depth(); }
int SimRuntime::waiting_hosts(const Stream& s) { return impl_->queue(s).waiting(); }
// Quiet in a forked child (Note [Devices after fork]): pinned memory's and
// the allocator's frees call it from deleters, where nothing may throw, and
// the public waits raise in check_device first.
void SimRuntime::synchronize_device(int) {
  if (in_bad_fork(DeviceType::Sim)) return;
  impl_->queue(Stream{Device{DeviceType::Sim, 0}, 0});  // the default stream exists from here on
  for (SimQueue* q : impl_->all()) q->wait_all();
}

bool SimRuntime::idle(int) {
  if (in_bad_fork(DeviceType::Sim)) return true;  // nothing runs on a forked child's sim:0: nothing to wait for
  for (SimQueue* q : impl_->all())
    if (q->depth() != 0) return false;
  return true;
}

std::unique_ptr<EventImpl> SimRuntime::create_event(int, bool) { return std::make_unique<SimEvent>(*impl_); }

int64_t SimRuntime::enqueue(const Stream& s, std::function<void()> task) {
  return impl_->queue(s).enqueue(std::move(task)).second;
}

// Copies are tasks too. A source in pageable host memory is staged first (the
// host may reuse it as soon as the call returns, as cudaMemcpyAsync allows);
// a destination in pageable host memory is waited for.
void SimRuntime::copy(void* dst, const void* src, size_t nbytes, CopyKind kind, const Stream& s, bool pinned) {
  if (nbytes == 0) return;
  static constexpr const char* kNames[] = {"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)",
                                           "Memcpy DtoD (Device -> Device)"};
  static constexpr const char* kPinnedNames[] = {"Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pinned)",
                                                 "Memcpy DtoD (Device -> Device)"};
  const char* name = (pinned ? kPinnedNames : kNames)[int(kind)];
  std::shared_ptr<char[]> staged;
  if (kind == CopyKind::HostToDevice && !pinned) {
    staged.reset(new char[nbytes]);
    std::memcpy(staged.get(), src, nbytes);
    src = staged.get();
  }
  trace::ScopedSpan span(trace::Floor::Streams, "simMemcpyAsync");
  span.arg("bytes", int64_t(nbytes));
  span.arg("stream", s.id);
  const uint64_t correlation = span.active() ? trace::next_correlation() : 0;
  span.arg("correlation", int64_t(correlation));
  const int64_t depth = enqueue(s, [=] {
    const int64_t start = trace::enabled() ? trace::now_ns() : 0;
    std::memcpy(dst, src, nbytes);
    (void)staged;  // keeps the staged bytes alive until the copy ran
    trace::DeviceSpan d;
    d.name = name;
    d.work = trace::DeviceWork::Memcpy;
    d.bytes = int64_t(nbytes);
    record_sim_span(d, s, start, correlation);
  });
  span.arg("queue_depth", depth);
}

}  // namespace descent::streams
