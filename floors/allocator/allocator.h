// Floor 6, the allocator: where every tensor's bytes come from.
//
// [SECTION] DataPtr: bytes plus how to give them back
// [SECTION] CPU allocator
// [SECTION] Caching allocator (device memory; unit-tested over host memory)
//
// See floors/allocator/README.md for the floor in a paragraph, and
// Note [Caching allocator policy] in caching_allocator.cpp for the policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace descent::alloc {

// [SECTION] DataPtr: bytes plus how to give them back ------------------------

using Deleter = void (*)(void* ctx, void* ptr, size_t nbytes);

// Owned memory: the pointer, its size, and the function that frees it.
// Storage (floors/core) holds one and calls the deleter when it dies.
struct DataPtr {
  void* ptr = nullptr;         // first byte, aligned to kAlignment (nullptr when nbytes == 0)
  size_t nbytes = 0;           // bytes asked for
  Deleter deleter = nullptr;   // nullptr: nothing to free
  void* ctx = nullptr;         // passed back to the deleter (e.g. the allocator)

  void release() {
    if (deleter) deleter(ctx, ptr, nbytes);
    ptr = nullptr;
    deleter = nullptr;
  }
};

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
CpuStats cpu_stats();
void cpu_reset_peak();

// [SECTION] Caching allocator -------------------------------------------------

constexpr size_t kMinBlockSize = 512;            // bytes: every size is rounded up to this
constexpr size_t kSmallSize = 1 << 20;           // bytes: requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2 << 20;         // bytes: small-pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20 << 20;        // bytes: large requests under 10 MiB get 20 MiB segments
constexpr size_t kMinLargeAlloc = 10 << 20;      // bytes: at or above this, segments are the request rounded
constexpr size_t kRoundLarge = 2 << 20;          // bytes: ... up to a multiple of 2 MiB

using StreamId = int64_t;  // which stream a block belongs to; 0 is the default stream

// Where the caching allocator gets raw memory: cudaMalloc for a GPU, a host
// arena for the simulated device and for the unit tests.
struct RawBackend {
  virtual ~RawBackend() = default;
  virtual void* raw_malloc(size_t nbytes) = 0;  // nullptr when out of memory
  virtual void raw_free(void* ptr, size_t nbytes) = 0;
  virtual const char* name() const = 0;         // e.g. "sim:0", "cuda:0"
};

struct CachingStats {
  int64_t allocated_bytes = 0;       // in blocks handed out now
  int64_t reserved_bytes = 0;        // in segments held from the backend
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocs = 0;            // allocate() calls that succeeded
  int64_t num_cache_hits = 0;        // served from a cached free block
  int64_t num_cache_misses = 0;      // needed a new segment from the backend
  int64_t num_splits = 0;
  int64_t num_merges = 0;            // coalescings on free
  int64_t num_raw_mallocs = 0;
  int64_t num_raw_frees = 0;
  int64_t num_ooms = 0;              // allocations that raised OutOfMemoryError
  int64_t num_free_retries = 0;      // raw mallocs retried after emptying the cache
};

// A picture of memory for the app to draw: every segment and its blocks.
struct BlockInfo {
  size_t offset = 0;      // from the segment's start, bytes
  size_t size = 0;        // bytes
  size_t requested = 0;   // bytes asked for (0 for a free block)
  bool allocated = false;
};
struct SegmentInfo {
  uintptr_t address = 0;
  size_t size = 0;        // bytes
  bool small_pool = false;
  StreamId stream = 0;
  std::vector<BlockInfo> blocks;  // in address order, covering the segment exactly
};
struct Snapshot {
  std::vector<SegmentInfo> segments;  // in address order
  CachingStats stats;
};

// What one allocate() decided, for the tracer and for tests.
struct AllocDecision {
  size_t requested = 0;   // bytes asked
  size_t rounded = 0;     // after rounding to kMinBlockSize
  bool small_pool = false;
  bool cache_hit = false; // found a free block of this stream's pool
  bool split = false;     // the block was split and its remainder kept free
  size_t block_size = 0;  // size of the block handed out
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawBackend& backend);
  ~CachingAllocator();  // returns every segment to the backend
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Opens a floor-6 span "caching_alloc" with arguments bytes (rounded), pool,
  // hit, block. Raises OutOfMemoryError.
  DataPtr allocate(size_t nbytes, StreamId stream = 0);
  // The decision the last allocate() on this allocator made.
  AllocDecision last_decision() const;
  // Frees every cached segment that has no allocated block.
  void empty_cache();
  CachingStats stats() const;
  void reset_peak();
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

// A RawBackend over host memory with a capacity, for the simulated device and
// the tests. raw_malloc returns nullptr once `capacity_bytes` would be exceeded.
class HostArenaBackend : public RawBackend {
 public:
  HostArenaBackend(size_t capacity_bytes, const char* name);
  void* raw_malloc(size_t nbytes) override;
  void raw_free(void* ptr, size_t nbytes) override;
  const char* name() const override { return name_; }
  size_t in_use() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  size_t in_use_ = 0;
  const char* name_;
};

}  // namespace descent::alloc
