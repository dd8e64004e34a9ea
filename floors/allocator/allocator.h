// Floor 6, the allocator: where every tensor's bytes come from.
//
// [SECTION] Errors and sizes
// [SECTION] CPU allocator
// [SECTION] Caching allocator (device memory; unit-tested over host memory)
//
// See floors/allocator/README.md for the floor in a paragraph, and
// Note [Caching allocator policy] in caching_allocator.cpp for the policy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "floors/core/data_ptr.h"

namespace descent::alloc {

// [SECTION] Errors and sizes ----------------------------------------------------

// Raised when memory cannot be found even after freeing the cache. The message
// says what was asked, what is allocated and what is reserved.
struct OutOfMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "24.00 MiB": a byte count for people, shown beside the exact number in messages.
std::string human_bytes(size_t nbytes);

// [SECTION] CPU allocator ------------------------------------------------------

constexpr size_t kAlignment = 64;  // bytes; one cache line, enough for AVX-512 loads

struct CpuStats {
  int64_t allocated_bytes = 0;       // live now
  int64_t peak_allocated_bytes = 0;  // high-water mark since reset
  int64_t num_allocs = 0;            // allocations since reset
  int64_t num_frees = 0;             // frees since reset
};

// Aligned host memory from the system, counted. Thread-safe (atomics).
// Opens a floor-6 span "cpu_alloc" with argument "bytes".
DataPtr cpu_allocate(size_t nbytes);
// Makes cpu_allocate core's allocator for cpu (set_allocator,
// floors/core/data_ptr.h). Run once by register_floors (Note [Registering
// the floors]).
void register_cpu_allocator();
CpuStats cpu_stats();
void cpu_reset_peak();

// [SECTION] Caching allocator -------------------------------------------------

constexpr size_t kMinBlockSize = 512;             // bytes: every size is rounded up to this
constexpr size_t kSmallSize = 1 << 20;            // bytes: requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2 << 20;          // bytes: small-pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20 << 20;         // bytes: large requests under 10 MiB get 20 MiB segments
constexpr size_t kMinLargeAlloc = 10 << 20;       // bytes: at or above this, segments are the request rounded
constexpr size_t kRoundLarge = 2 << 20;           // bytes: ... up to a multiple of 2 MiB
constexpr size_t kNoMaxSplitSize = SIZE_MAX;      // bytes: max_split_size's default, every block may be split
constexpr size_t kDefaultHistoryEntries = 10000;  // trace entries record_memory_history keeps by default

using StreamId = int64_t;  // which stream a block belongs to; 0 is the default stream

// Where the caching allocator gets raw memory and asks about streams: the
// CUDA runtime for a GPU, the simulated device's runtime for sim:0, a host
// arena for the unit tests. Every method is called with the allocator's mutex
// held, so none may call back into the allocator.
struct RawBackend {
  virtual ~RawBackend() = default;
  virtual void* raw_malloc(size_t nbytes) = 0;  // nullptr when out of memory
  // Must not return while work queued on the device may still touch ptr:
  // cudaFree synchronizes the device; the simulated device must do the same.
  virtual void raw_free(void* ptr, size_t nbytes) = 0;
  virtual const char* name() const = 0;  // e.g. "sim:0", "cuda:0"

  // Streams and events, for record_stream (Note [Deferred frees]). The
  // defaults suit a backend without streams: every event completes at once.
  virtual void* record_event(StreamId stream) {  // an event recorded now on `stream`; nullptr: complete already
    (void)stream;
    return nullptr;
  }
  virtual bool event_done(void* event) {  // the device has passed it (never called with nullptr)
    (void)event;
    return true;
  }
  virtual void release_event(void* event) { (void)event; }  // done with it (never called with nullptr)
  virtual void synchronize_device() {}                      // the host waits for every stream of the device
  // The device's memory, for the out-of-memory message; 0 when unknown.
  virtual size_t total_memory() { return 0; }  // bytes
  virtual size_t free_memory() { return 0; }   // bytes free on the device now, for anyone
};

// One statistic as PyTorch keeps it (c10::CachingDeviceAllocator::Stat).
struct Stat {
  int64_t current = 0;    // now
  int64_t peak = 0;       // highest `current` since reset_peak()
  int64_t allocated = 0;  // sum of every increase since reset_accumulated()
  int64_t freed = 0;      // sum of every decrease since reset_accumulated()
};
enum StatType : uint8_t { kAggregateStat = 0, kSmallPoolStat = 1, kLargePoolStat = 2 };
using StatArray = std::array<Stat, 3>;  // indexed by StatType: "all", "small_pool", "large_pool"

// PyTorch's DeviceStats, field for field; memory_stats() flattens it into
// torch.cuda.memory_stats()'s keys ("allocated_bytes.all.current", ...).
struct DeviceStats {
  StatArray allocation;              // blocks handed out (counts)
  StatArray segment;                 // segments held from the backend (counts)
  StatArray active;                  // blocks allocated or waiting for events (counts)
  StatArray inactive_split;          // free blocks in split segments: cannot be released (counts)
  StatArray allocated_bytes;         // bytes of blocks handed out
  StatArray reserved_bytes;          // bytes of segments
  StatArray active_bytes;            // bytes of active blocks
  StatArray inactive_split_bytes;    // bytes of inactive split blocks
  StatArray requested_bytes;         // bytes asked for by the active blocks' owners
  int64_t num_alloc_retries = 0;     // raw mallocs retried after release_cached_blocks
  int64_t num_ooms = 0;              // OutOfMemoryErrors raised
  int64_t num_sync_all_streams = 0;  // synchronize_and_free_events calls (empty_cache, OOM path)
  int64_t num_device_alloc = 0;      // raw_malloc calls that succeeded
  int64_t num_device_free = 0;       // raw_free calls
  Stat oversize_allocations;         // blocks of >= max_split_size handed out
  Stat oversize_segments;            // segments of >= max_split_size
  int64_t max_split_size = -1;       // bytes; -1: unlimited (SIZE_MAX, as PyTorch reports it)
};

// torch.cuda.memory_stats(): (key, value) in PyTorch's order (sorted by key).
using MemoryStats = std::vector<std::pair<std::string, int64_t>>;

// descent's short summary, kept for its callers; memory_stats() is PyTorch's.
struct CachingStats {
  int64_t allocated_bytes = 0;  // in blocks handed out now
  int64_t reserved_bytes = 0;   // in segments held from the backend
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocs = 0;        // allocate() calls that succeeded
  int64_t num_cache_hits = 0;    // served from a cached free block
  int64_t num_cache_misses = 0;  // needed a new segment from the backend
  int64_t num_splits = 0;
  int64_t num_merges = 0;  // coalescings on free
  int64_t num_raw_mallocs = 0;
  int64_t num_raw_frees = 0;
  int64_t num_ooms = 0;          // allocations that raised OutOfMemoryError
  int64_t num_free_retries = 0;  // raw mallocs retried after releasing cached blocks
};

// One entry of the allocation history (PyTorch's _record_memory_history trace).
struct TraceEntry {
  enum class Action : uint8_t { Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, Oom };
  Action action = Action::Alloc;
  uintptr_t addr = 0;  // the block or segment; for Oom, the device's free bytes (as PyTorch)
  size_t size = 0;     // bytes: asked (alloc, free_*), segment size (segment_*), rounded request (oom)
  StreamId stream = 0;
  int64_t time_ns = 0;  // on the tracer's clock (trace::now_ns())
};
// "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom".
const char* action_name(TraceEntry::Action a);

// A picture of memory for the app to draw, in torch.cuda.memory_snapshot()'s words.
struct BlockInfo {
  uintptr_t address = 0;
  size_t size = 0;            // bytes
  size_t requested_size = 0;  // bytes asked for (0 when inactive)
  std::string state;          // "active_allocated", "active_pending_free" (waits for events) or "inactive"
};
struct SegmentInfo {
  int device = 0;  // the index in the backend's name ("cuda:1" -> 1)
  uintptr_t address = 0;
  size_t total_size = 0;      // bytes
  size_t allocated_size = 0;  // bytes in active_allocated blocks
  size_t active_size = 0;     // bytes in active blocks (allocated or pending free)
  size_t requested_size = 0;  // bytes asked for by the active blocks
  StreamId stream = 0;
  std::string segment_type;       // "small" or "large"
  std::vector<BlockInfo> blocks;  // in address order, covering the segment exactly
};
struct Snapshot {
  std::vector<SegmentInfo> segments;      // in address order
  std::vector<TraceEntry> device_traces;  // the history, oldest first (empty unless recorded)
  CachingStats stats;
};

// What one allocate() decided, for the tracer and for tests.
struct AllocDecision {
  size_t requested = 0;  // bytes asked
  size_t rounded = 0;    // after rounding to kMinBlockSize
  bool small_pool = false;
  bool cache_hit = false;  // found a free block of this stream's pool
  bool split = false;      // the block was split and its remainder kept free
  size_t block_size = 0;   // size of the block handed out
};

class CachingAllocator {
 public:
  // Reads DESCENT_ALLOC_CONF="max_split_size_mb:N" (std::invalid_argument when malformed).
  explicit CachingAllocator(RawBackend& backend);
  ~CachingAllocator();  // returns every segment to the backend
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Opens a floor-6 span "caching_alloc" with arguments bytes (rounded), pool,
  // hit, block, split, stream. Raises OutOfMemoryError.
  DataPtr allocate(size_t nbytes, StreamId stream = 0);
  // The block behind `p` is used on `stream` too: when freed, it waits for the
  // work queued there until then (Note [Deferred frees]). A DataPtr of another
  // allocator is ignored (as PyTorch); a pointer that is not a live block of
  // this one raises std::invalid_argument.
  void record_stream(const DataPtr& p, StreamId stream);
  void record_stream(void* ptr, StreamId stream);
  // The decision the last allocate() on this allocator made.
  AllocDecision last_decision() const;
  // torch.cuda.empty_cache(): waits for pending frees, then returns every
  // cached segment that has no active block.
  void empty_cache();

  CachingStats stats() const;
  DeviceStats device_stats() const;
  MemoryStats memory_stats() const;  // exactly torch.cuda.memory_stats()'s keys
  void reset_peak();                 // reset_peak_memory_stats: every peak = current
  void reset_accumulated();          // reset_accumulated_memory_stats: allocated, freed and the num_* counts

  // Blocks of at least this many bytes are never split (PYTORCH_CUDA_ALLOC_CONF's
  // max_split_size_mb). std::invalid_argument unless > kLargeBuffer;
  // std::logic_error while the allocator holds segments (call empty_cache()).
  void set_max_split_size(size_t bytes);
  size_t max_split_size() const;  // kNoMaxSplitSize when unlimited

  // The allocation history (torch.cuda.memory._record_memory_history): off by
  // default; a ring of the last `max_entries`. Disabling drops the entries.
  void record_memory_history(bool enabled, size_t max_entries = kDefaultHistoryEntries);
  std::vector<TraceEntry> memory_history() const;  // oldest first

  Snapshot snapshot() const;
  RawBackend& backend() { return backend_; }
  // Debug check for tests: throws std::logic_error naming the first problem
  // found (a deleter called with a pointer this allocator never handed out,
  // blocks not tiling their segment, free lists or statistics out of step).
  void check_invariants() const;

 private:
  struct Impl;
  static void free_block(void* ctx, void* ptr, size_t nbytes);  // the DataPtr deleter
  RawBackend& backend_;
  Impl* impl_;
};

// "24.00 MiB": PyTorch's format_size (bytes up to 1024, then KiB, MiB, GiB with two decimals).
std::string format_size(uint64_t nbytes);

// A RawBackend over host memory with a capacity, for the simulated device and
// the tests. raw_malloc returns nullptr once `capacity_bytes` would be exceeded.
class HostArenaBackend : public RawBackend {
 public:
  HostArenaBackend(size_t capacity_bytes, const char* name);
  void* raw_malloc(size_t nbytes) override;
  void raw_free(void* ptr, size_t nbytes) override;
  const char* name() const override { return name_; }
  size_t total_memory() override { return capacity_; }
  size_t free_memory() override { return capacity_ - in_use(); }
  size_t in_use() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  size_t in_use_ = 0;
  const char* name_;
};

}  // namespace descent::alloc
