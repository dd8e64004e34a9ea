// Note [Caching allocator policy]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Asking a device for memory (cudaMalloc) is slow and synchronizes the device,
// so the caching allocator asks for big segments, cuts them into blocks, and
// keeps freed blocks for the next request instead of giving them back. After
// PyTorch's CUDA caching allocator, in our own words:
//
//  1. Rounding. Every request is rounded up to a multiple of kMinBlockSize
//     (512 B): 1 -> 512, 512 -> 512, 513 -> 1024.
//  2. Pools. Rounded sizes <= kSmallSize (1 MiB) use the small pool, larger
//     ones the large pool. A segment and all its blocks belong to one pool and
//     one stream.
//  3. Segments. When no cached block fits, one segment comes from the backend:
//     kSmallBuffer (2 MiB) for the small pool; kLargeBuffer (20 MiB) for large
//     requests under kMinLargeAlloc (10 MiB); otherwise the request rounded up
//     to a multiple of kRoundLarge (2 MiB).
//  4. Best fit. A request takes the smallest free block of the same pool and
//     the same stream that is large enough. Free blocks sit in an ordered set
//     keyed by (stream, size, address), so the search is one lower_bound.
//  5. Splitting. The block is split and its remainder kept free when the
//     remainder is >= kMinBlockSize (small pool) or > kSmallSize (large pool);
//     otherwise the whole block is handed out, spare bytes included.
//  6. Links. The blocks of a segment form a doubly linked list (prev/next) in
//     address order that covers the segment exactly.
//  7. Coalescing. A freed block merges with a free previous and a free next
//     neighbour, so no two neighbours are ever both free (stats: num_merges).
//  8. Streams. Free lists are per stream: a freed block returns to its own
//     stream's list and is never handed to another stream.
//  9. empty_cache() returns every segment whose single block is wholly free to
//     the backend; segments with a live block stay.
// 10. Out of memory. When raw_malloc returns nullptr, the cached segments are
//     released as by empty_cache() and raw_malloc is retried once
//     (num_free_retries). If that fails too, OutOfMemoryError says what was
//     asked, what is allocated and what is reserved (num_ooms).
//
// Choices where PyTorch's design does not carry over, or the API is silent:
//  - allocate(0) gives an empty DataPtr (ptr nullptr, no deleter); not counted.
//  - allocated_bytes counts block sizes (rounded, unsplit spare included), not
//    the bytes asked; a block's asked size is in the snapshot.
//  - Requests above kMaxRequest raise OutOfMemoryError without asking the
//    backend (the rounding arithmetic would overflow).
//  - A deleter called with a pointer this allocator did not hand out cannot
//    throw (deleters run in destructors) and must not abort a teaching app: it
//    is ignored and counted, and check_invariants() then throws, so tests see it.
//  - The destructor returns every segment, live blocks included: an allocator
//    must outlive the DataPtrs it handed out (device allocators live as long as
//    the process).
//
// [SECTION] Blocks, segments and free lists
// [SECTION] Allocation
// [SECTION] Free and coalescing
// [SECTION] Cache release, snapshot and checks
// [SECTION] HostArenaBackend
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "floors/allocator/allocator.h"
#include "floors/core/log.h"
#include "tracer/tracer.h"

namespace descent::alloc {
namespace {

// [SECTION] Blocks, segments and free lists ------------------------------------

constexpr size_t kMaxRequest = SIZE_MAX / 4;  // bytes; larger requests are refused outright

struct Block {
  uintptr_t addr = 0;
  size_t size = 0;        // bytes, a multiple of kMinBlockSize
  size_t requested = 0;   // bytes asked by the owner; 0 while free
  StreamId stream = 0;
  bool small = false;     // pool
  bool allocated = false;
  Block* prev = nullptr;  // neighbours in the same segment, address order
  Block* next = nullptr;
};

// Order of a free list: by stream, then size, then address. The best fit for
// (stream, size) is the first block not below the key {stream, size, 0}.
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    return std::tie(a->stream, a->size, a->addr) < std::tie(b->stream, b->size, b->addr);
  }
};
using FreeList = std::set<Block*, BlockOrder>;

struct Segment {
  size_t size = 0;        // bytes, as asked from the backend
  bool small = false;
  StreamId stream = 0;
  Block* head = nullptr;  // the block at the segment's start; never merged away
};

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

size_t segment_size_for(size_t rounded, bool small) {
  if (small) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

bool should_split(const Block& b, size_t rounded) {
  size_t remainder = b.size - rounded;
  return b.small ? remainder >= kMinBlockSize : remainder > kSmallSize;
}

void raise_peak(int64_t& peak, int64_t now) {
  if (now > peak) peak = now;
}

}  // namespace

// Everything behind the one mutex. Methods named *_locked expect it held.
struct CachingAllocator::Impl {
  explicit Impl(RawBackend& b) : backend(b) {}

  RawBackend& backend;
  mutable std::mutex mu;
  FreeList small_free, large_free;
  std::map<uintptr_t, Segment> segments;        // by address
  std::unordered_map<void*, Block*> live;       // allocated blocks by pointer
  CachingStats stats;
  AllocDecision last;
  int64_t num_unknown_frees = 0;                // see the choices in the Note

  FreeList& free_list(bool small) { return small ? small_free : large_free; }
  const FreeList& free_list(bool small) const { return small ? small_free : large_free; }

  Block* find_best_fit_locked(size_t rounded, bool small, StreamId stream);
  Block* new_segment_locked(size_t requested, size_t rounded, bool small, StreamId stream);
  void* raw_malloc_locked(size_t nbytes);
  size_t release_cached_locked();
  [[noreturn]] void throw_oom_locked(size_t nbytes, const std::string& why);
  void free_locked(void* ptr);
};

// [SECTION] Allocation ---------------------------------------------------------

Block* CachingAllocator::Impl::find_best_fit_locked(size_t rounded, bool small, StreamId stream) {
  FreeList& list = free_list(small);
  Block key;
  key.stream = stream;
  key.size = rounded;
  auto it = list.lower_bound(&key);
  if (it == list.end() || (*it)->stream != stream) return nullptr;  // none of this stream is large enough
  Block* b = *it;
  list.erase(it);
  return b;
}

void* CachingAllocator::Impl::raw_malloc_locked(size_t nbytes) {
  trace::ScopedSpan span(trace::Floor::Allocator, "raw_malloc");
  span.arg("bytes", static_cast<int64_t>(nbytes));
  return backend.raw_malloc(nbytes);
}

// Asks the backend for a segment holding `rounded` bytes, retrying once after
// releasing the cache (`requested` is for the error message). Returns the
// segment's single, free block.
Block* CachingAllocator::Impl::new_segment_locked(size_t requested, size_t rounded, bool small,
                                                  StreamId stream) {
  size_t seg_bytes = segment_size_for(rounded, small);
  void* ptr = raw_malloc_locked(seg_bytes);
  if (ptr == nullptr) {
    const size_t released = release_cached_locked();
    stats.num_free_retries++;
    log::info("caching allocator: the backend refused a ", human_bytes(seg_bytes), " segment; released ", released,
              " cached segments and retried");
    ptr = raw_malloc_locked(seg_bytes);
  }
  if (ptr == nullptr)
    throw_oom_locked(requested, "the backend refused a " + human_bytes(seg_bytes) +
                                  " segment even after the cache was released");

  Block* b = new Block;
  b->addr = reinterpret_cast<uintptr_t>(ptr);
  b->size = seg_bytes;
  b->stream = stream;
  b->small = small;
  segments[b->addr] = Segment{seg_bytes, small, stream, b};
  stats.num_raw_mallocs++;
  stats.reserved_bytes += static_cast<int64_t>(seg_bytes);
  raise_peak(stats.peak_reserved_bytes, stats.reserved_bytes);
  return b;
}

void CachingAllocator::Impl::throw_oom_locked(size_t nbytes, const std::string& why) {
  stats.num_ooms++;
  auto allocated = static_cast<size_t>(stats.allocated_bytes);
  auto reserved = static_cast<size_t>(stats.reserved_bytes);
  throw OutOfMemoryError("descent: out of memory on " + std::string(backend.name()) + ": tried to allocate " +
                         human_bytes(nbytes) + " (" + std::to_string(nbytes) + " bytes); " +
                         human_bytes(allocated) + " allocated, " + human_bytes(reserved) +
                         " reserved by descent's caching allocator; " + why);
}

CachingAllocator::CachingAllocator(RawBackend& backend) : backend_(backend), impl_(new Impl(backend)) {}

CachingAllocator::~CachingAllocator() {
  for (auto& [addr, seg] : impl_->segments) {
    for (Block* b = seg.head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    backend_.raw_free(reinterpret_cast<void*>(addr), seg.size);
  }
  delete impl_;
}

DataPtr CachingAllocator::allocate(size_t nbytes, StreamId stream) {
  trace::ScopedSpan span(trace::Floor::Allocator, "caching_alloc");
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& m = *impl_;
  if (nbytes == 0) {
    m.last = AllocDecision{};
    return DataPtr{};
  }
  if (nbytes > kMaxRequest) m.throw_oom_locked(nbytes, "no backend can hold that much");

  AllocDecision d;
  d.requested = nbytes;
  d.rounded = round_up(nbytes, kMinBlockSize);
  d.small_pool = d.rounded <= kSmallSize;
  span.arg("bytes", static_cast<int64_t>(d.rounded));
  span.arg("pool", d.small_pool ? "small" : "large");

  Block* b = m.find_best_fit_locked(d.rounded, d.small_pool, stream);
  d.cache_hit = b != nullptr;
  if (b == nullptr) b = m.new_segment_locked(nbytes, d.rounded, d.small_pool, stream);

  if (should_split(*b, d.rounded)) {
    Block* rest = new Block;
    rest->addr = b->addr + d.rounded;
    rest->size = b->size - d.rounded;
    rest->stream = stream;
    rest->small = b->small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = d.rounded;
    m.free_list(rest->small).insert(rest);
    m.stats.num_splits++;
    d.split = true;
  }
  b->allocated = true;
  b->requested = nbytes;
  d.block_size = b->size;
  void* ptr = reinterpret_cast<void*>(b->addr);
  m.live[ptr] = b;

  m.stats.num_allocs++;
  (d.cache_hit ? m.stats.num_cache_hits : m.stats.num_cache_misses)++;
  m.stats.allocated_bytes += static_cast<int64_t>(b->size);
  raise_peak(m.stats.peak_allocated_bytes, m.stats.allocated_bytes);
  m.last = d;
  span.arg("hit", d.cache_hit);
  span.arg("block", static_cast<int64_t>(d.block_size));
  return DataPtr{ptr, nbytes, &CachingAllocator::free_block, this};
}

AllocDecision CachingAllocator::last_decision() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last;
}

// [SECTION] Free and coalescing -------------------------------------------------

void CachingAllocator::free_block(void* ctx, void* ptr, size_t /*nbytes*/) {
  if (ptr == nullptr) return;
  auto* self = static_cast<CachingAllocator*>(ctx);
  std::lock_guard<std::mutex> lock(self->impl_->mu);
  self->impl_->free_locked(ptr);
}

void CachingAllocator::Impl::free_locked(void* ptr) {
  auto it = live.find(ptr);
  if (it == live.end()) {
    num_unknown_frees++;  // see the choices in the Note
    return;
  }
  Block* b = it->second;
  live.erase(it);
  trace::ScopedSpan span(trace::Floor::Allocator, "caching_free");
  span.arg("block", static_cast<int64_t>(b->size));
  stats.allocated_bytes -= static_cast<int64_t>(b->size);
  b->allocated = false;
  b->requested = 0;

  FreeList& list = free_list(b->small);
  // Merge into a free previous neighbour: the lower block survives, so a
  // segment's head block is never deleted.
  if (b->prev != nullptr && !b->prev->allocated) {
    Block* p = b->prev;
    list.erase(p);  // its size (part of the key) is about to change
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
    stats.num_merges++;
  }
  if (b->next != nullptr && !b->next->allocated) {
    Block* n = b->next;
    list.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
    stats.num_merges++;
  }
  list.insert(b);
}

// [SECTION] Cache release, snapshot and checks -----------------------------------

// Returns every wholly free segment to the backend; returns how many.
size_t CachingAllocator::Impl::release_cached_locked() {
  size_t released = 0;
  for (auto it = segments.begin(); it != segments.end();) {
    Block* head = it->second.head;
    if (head->allocated || head->next != nullptr) {
      ++it;
      continue;
    }
    free_list(head->small).erase(head);
    backend.raw_free(reinterpret_cast<void*>(it->first), it->second.size);
    stats.reserved_bytes -= static_cast<int64_t>(it->second.size);
    stats.num_raw_frees++;
    delete head;
    it = segments.erase(it);
    released++;
  }
  return released;
}

void CachingAllocator::empty_cache() {
  trace::ScopedSpan span(trace::Floor::Allocator, "empty_cache");
  std::lock_guard<std::mutex> lock(impl_->mu);
  span.arg("segments", static_cast<int64_t>(impl_->release_cached_locked()));
}

CachingStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stats.peak_allocated_bytes = impl_->stats.allocated_bytes;
  impl_->stats.peak_reserved_bytes = impl_->stats.reserved_bytes;
}

Snapshot CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Snapshot snap;
  for (const auto& [addr, seg] : impl_->segments) {
    SegmentInfo info{addr, seg.size, seg.small, seg.stream, {}};
    for (const Block* b = seg.head; b != nullptr; b = b->next)
      info.blocks.push_back(BlockInfo{b->addr - addr, b->size, b->requested, b->allocated});
    snap.segments.push_back(std::move(info));
  }
  snap.stats = impl_->stats;
  return snap;
}

void CachingAllocator::check_invariants() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Impl& m = *impl_;
  auto fail = [](const std::string& what) { throw std::logic_error("descent caching allocator: " + what); };
  if (m.num_unknown_frees > 0)
    fail(std::to_string(m.num_unknown_frees) + " free(s) of pointers this allocator did not hand out");

  int64_t reserved = 0, allocated = 0;
  size_t num_free = 0, num_live = 0;
  for (const auto& [addr, seg] : m.segments) {
    reserved += static_cast<int64_t>(seg.size);
    uintptr_t expect = addr;
    const Block* prev = nullptr;
    for (const Block* b = seg.head; b != nullptr; prev = b, b = b->next) {
      std::string where = "block at offset " + std::to_string(b->addr - addr);
      if (b->addr != expect || b->prev != prev) fail(where + " does not follow its neighbour");
      if (b->size == 0 || b->size % kMinBlockSize != 0) fail(where + " has a bad size");
      if (b->small != seg.small || b->stream != seg.stream) fail(where + " disagrees with its segment");
      if (b->allocated) {
        auto it = m.live.find(reinterpret_cast<void*>(b->addr));
        if (it == m.live.end() || it->second != b) fail(where + " is allocated but not in the live map");
        allocated += static_cast<int64_t>(b->size);
        num_live++;
      } else {
        if (prev != nullptr && !prev->allocated) fail(where + " is free next to a free block");
        auto it = m.free_list(b->small).find(const_cast<Block*>(b));
        if (it == m.free_list(b->small).end() || *it != b) fail(where + " is free but not listed");
        num_free++;
      }
      expect = b->addr + b->size;
    }
    if (expect != addr + seg.size) fail("blocks do not cover their segment exactly");
  }
  if (num_live != m.live.size()) fail("live map and blocks disagree");
  if (num_free != m.small_free.size() + m.large_free.size()) fail("free lists and blocks disagree");
  if (allocated != m.stats.allocated_bytes) fail("allocated_bytes does not match the blocks");
  if (reserved != m.stats.reserved_bytes) fail("reserved_bytes does not match the segments");
}

// [SECTION] HostArenaBackend -----------------------------------------------------

HostArenaBackend::HostArenaBackend(size_t capacity_bytes, const char* name)
    : capacity_(capacity_bytes), name_(name) {}

void* HostArenaBackend::raw_malloc(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (nbytes > capacity_ - in_use_) return nullptr;  // in_use_ <= capacity_ always: no underflow
    in_use_ += nbytes;
  }
  // std::aligned_alloc wants a size that is a non-zero multiple of the alignment.
  void* ptr = std::aligned_alloc(kAlignment, round_up(nbytes == 0 ? 1 : nbytes, kAlignment));
  if (ptr == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= nbytes;
  }
  return ptr;
}

void HostArenaBackend::raw_free(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= nbytes;
}

size_t HostArenaBackend::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace descent::alloc
