// Note [Caching allocator policy]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Asking a device for memory (cudaMalloc) is slow and synchronizes the device,
// so the caching allocator asks for big segments, cuts them into blocks, and
// keeps freed blocks for the next request instead of giving them back. This is
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), its
// decisions and its names, in our own words:
//
//  1. Rounding. Every request is rounded up to a multiple of kMinBlockSize
//     (512 B): 1 -> 512, 512 -> 512, 513 -> 1024 (round_size).
//  2. Pools. Rounded sizes <= kSmallSize (1 MiB) use the small pool, larger
//     ones the large pool. A segment and all its blocks belong to one pool and
//     one stream.
//  3. Segments. When no cached block fits, one segment comes from the backend
//     (get_allocation_size): kSmallBuffer (2 MiB) for the small pool;
//     kLargeBuffer (20 MiB) for large requests under kMinLargeAlloc (10 MiB);
//     otherwise the request rounded up to a multiple of kRoundLarge (2 MiB).
//  4. Best fit (get_free_block). A request takes the smallest free block of
//     its pool and its stream that is large enough. Free blocks sit in an
//     ordered set keyed by (stream, size, address): the search is one lower_bound.
//  5. Oversize (max_split_size, default unlimited). A request below
//     max_split_size never takes a block of max_split_size or more; a request
//     of max_split_size or more takes a cached block only if it wastes less
//     than kLargeBuffer (20 MiB) of it. Stats oversize_allocations/_segments.
//  6. Splitting (should_split). The block is split and its remainder kept
//     free when the remainder is >= kMinBlockSize (small pool), or when the
//     request is below max_split_size and the remainder is > kSmallSize (large
//     pool); otherwise the whole block is handed out, spare bytes included.
//  7. Links. The blocks of a segment form a doubly linked list (prev/next) in
//     address order that covers the segment exactly.
//  8. Coalescing (free_block). A freed block merges with a free previous and
//     a free next neighbour, so no two neighbours are ever both free.
//  9. Streams. Free lists are per stream: a block returns to its own stream's
//     list and is never handed to another stream. A block also used on other
//     streams (record_stream) is freed only when they have passed the free:
//     Note [Deferred frees].
// 10. Out of memory, in this order (malloc): the free pool; a new segment
//     (alloc_block); release cached oversize blocks of this stream
//     (release_available_cached_blocks, only when max_split_size is set) and
//     try again; wait for every pending free (synchronize_and_free_events),
//     release every cached unsplit segment (release_cached_blocks) and try a
//     last time (num_alloc_retries); then raise OutOfMemoryError with
//     PyTorch's message (num_ooms). Note: a cached block freed by the wait is
//     not searched again; it is released like the others.
// 11. Statistics (memory_stats): PyTorch's families, each split into all /
//     small_pool / large_pool and current / peak / allocated / freed.
//     allocation and allocated_bytes drop when a free is *requested*; active,
//     active_bytes and requested_bytes when it *completes*; inactive_split
//     counts free blocks of split segments, which empty_cache cannot release.
//
// Choices where PyTorch's design does not carry over, or the API is silent:
//  - allocate(0) gives an empty DataPtr (ptr nullptr, no deleter); not counted
//    (as PyTorch, which never calls malloc for 0 bytes).
//  - Requests above kMaxRequest raise OutOfMemoryError without asking the
//    backend (the rounding arithmetic would overflow).
//  - release_available_cached_blocks releases only whole (unsplit) segments;
//    PyTorch assumes an oversize free block is always one.
//  - synchronize_and_free_events waits with one synchronize_device() instead
//    of one cudaEventSynchronize per event: the same wait, one backend call.
//  - A deleter called with a pointer this allocator did not hand out cannot
//    throw (deleters run in destructors) and must not abort a teaching app: it
//    is ignored and counted, and check_invariants() then throws, so tests see it.
//  - The destructor returns every segment, live blocks included, and releases
//    pending events without waiting: an allocator must outlive the DataPtrs it
//    handed out (device allocators live as long as the process).
//  - Of PYTORCH_CUDA_ALLOC_CONF's options only max_split_size_mb is modelled
//    (rule 5; read from DESCENT_ALLOC_CONF). Not modelled:
//    garbage_collection_threshold (cached blocks freed before the device is
//    full; here only rule 10 frees them), roundup_power2_divisions (every size
//    rounds to 512 B, rule 1) and expandable_segments (a segment never grows;
//    the snapshot says is_expandable False). floors/allocator/README.md too.
//
// [SECTION] Allocation
// [SECTION] Out of memory
// [SECTION] Free, deferred frees and coalescing
// [SECTION] Cache release
//
// Blocks, segments, free lists and the Impl behind the mutex are in
// caching_allocator_impl.h; statistics, snapshot, history, settings and the
// checks in caching_allocator_report.cpp.
#include "floors/allocator/caching_allocator_impl.h"
#include "floors/core/log.h"
#include "tracer/tracer.h"

namespace descent::alloc {
namespace {

// DESCENT_ALLOC_CONF, e.g. "max_split_size_mb:256": the max_split_size it
// sets, in bytes (kNoMaxSplitSize when unset).
size_t max_split_size_from_env() {
  const char* conf = std::getenv("DESCENT_ALLOC_CONF");
  if (conf == nullptr || *conf == '\0') return kNoMaxSplitSize;
  const std::string s = conf;
  const std::string key = "max_split_size_mb:";
  auto bad = [&s](const std::string& why) {
    return std::invalid_argument("DESCENT_ALLOC_CONF=\"" + s + "\": " + why +
                                 " (descent understands only \"max_split_size_mb:N\", N > 20)");
  };
  if (s.rfind(key, 0) != 0) throw bad("unrecognized setting");
  const std::string digits = s.substr(key.size());
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw bad("N must be a whole number of MiB");
  const size_t mb = std::stoull(digits);
  if (mb * kMiB <= kLargeBuffer) throw bad("max_split_size_mb too small, must be > 20");
  return mb * kMiB;
}

}  // namespace

std::string format_size(uint64_t n) {
  char buf[48];
  const double v = static_cast<double>(n);
  if (n <= 1024)
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  else if (n <= 1048576)
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024.0);
  else if (n <= 1073741824ULL)
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / 1073741824.0);
  return buf;
}

void CachingAllocator::Impl::record_trace_slow_locked(TraceEntry::Action action, uintptr_t addr, size_t size,
                                                      StreamId stream) {
  TraceEntry e{action, addr, size, stream, trace::now_ns()};
  if (history.size() < history_max) {
    history.push_back(e);
  } else {
    history[history_next] = e;
    history_next = (history_next + 1) % history_max;
  }
}

// [SECTION] Allocation ---------------------------------------------------------

// The best fit of (stream, pool) under the oversize rules (Note rules 4-5),
// still on its free list (alloc_found_block takes it off); nullptr when none.
Block* CachingAllocator::Impl::get_free_block_locked(size_t rounded, bool small, StreamId stream) {
  FreeList& list = free_list(small);
  auto it = list.lower_bound(BlockKey{stream, rounded});
  if (it == list.end() || (*it)->stream != stream) return nullptr;  // none of this stream is large enough
  Block* b = *it;
  if (rounded < max_split_size && b->size >= max_split_size) return nullptr;  // no oversize block for a small request
  if (rounded >= max_split_size && b->size >= rounded + kLargeBuffer) return nullptr;  // too much of it wasted
  return b;
}

// A new segment of alloc_size bytes from the backend, as one free block not
// on any list; nullptr when the backend refuses.
Block* CachingAllocator::Impl::alloc_block_locked(size_t alloc_size, bool small, StreamId stream, bool is_retry) {
  if (is_retry) stats.num_alloc_retries++;
  void* ptr = nullptr;
  {
    trace::ScopedSpan span(trace::Floor::Allocator, "raw_malloc");
    span.arg("bytes", static_cast<int64_t>(alloc_size));
    ptr = DESCENT_DECIDES(span, backend.raw_malloc(alloc_size));  // the device's own allocator, cudaMalloc
  }
  if (ptr == nullptr) return nullptr;
  Block* b = make_block();
  b->addr = reinterpret_cast<uintptr_t>(ptr);
  b->size = alloc_size;
  b->stream = stream;
  b->small = small;
  segments[b->addr] = Segment{alloc_size, small, stream, b};
  increase(stats.segment, small, 1);
  increase(stats.reserved_bytes, small, alloc_size);
  if (alloc_size >= max_split_size) increase(stats.oversize_segments, 1);
  stats.num_device_alloc++;
  record_trace_locked(TraceEntry::Action::SegmentAlloc, b->addr, alloc_size, stream);
  return b;
}

// Hands out `b` (found on its free list, or a new segment on none), split
// first when rule 6 says so; the statistics move as PyTorch's
// alloc_found_block moves them. A split's remainder takes b's place on the
// list (Impl::take_node).
void CachingAllocator::Impl::alloc_found_block_locked(Block* b, size_t requested, size_t rounded, AllocDecision& d) {
  const bool already_split = b->is_split();
  const size_t remaining = b->size - rounded;
  d.split = b->small ? remaining >= kMinBlockSize : rounded < max_split_size && remaining > kSmallSize;
  if (d.split) {
    Block* rest = make_block();
    rest->addr = b->addr + rounded;
    rest->size = remaining;
    rest->stream = b->stream;
    rest->small = b->small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = rounded;
    if (b->listed)
      take_node(free_list(b->small), b, rest);
    else
      list_block(free_list(rest->small), rest);
    num_splits++;
    if (already_split) {
      decrease(stats.inactive_split_bytes, b->small, rounded);  // an inactive split block shrank
    } else {
      increase(stats.inactive_split_bytes, b->small, remaining);  // a whole segment became split
      increase(stats.inactive_split, b->small, 1);
    }
  } else {
    unlist(free_list(b->small), b);
    if (already_split) {
      decrease(stats.inactive_split_bytes, b->small, b->size);  // an inactive split block became active
      decrease(stats.inactive_split, b->small, 1);
    }
  }
  b->allocated = true;
  b->requested = requested;
  num_live++;
  increase(stats.allocation, b->small, 1);
  increase(stats.allocated_bytes, b->small, b->size);
  increase(stats.active, b->small, 1);
  increase(stats.active_bytes, b->small, b->size);
  increase(stats.requested_bytes, b->small, requested);
  if (b->size >= max_split_size) increase(stats.oversize_allocations, 1);
  record_trace_locked(TraceEntry::Action::Alloc, b->addr, requested, b->stream);
  d.block_size = b->size;
}

CachingAllocator::CachingAllocator(RawBackend& backend) : backend_(backend), impl_(new Impl(backend)) {
  try {
    impl_->max_split_size = max_split_size_from_env();
  } catch (...) {
    delete impl_;
    throw;
  }
  impl_->stats.max_split_size = static_cast<int64_t>(impl_->max_split_size);
}

CachingAllocator::~CachingAllocator() {
  for (auto& [stream, queue] : impl_->events)
    for (auto& [event, block] : queue)
      if (event != nullptr) backend_.release_event(event);
  for (auto& [addr, seg] : impl_->segments) {
    for (Block* b = seg.head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    backend_.raw_free(reinterpret_cast<void*>(addr), seg.size);
  }
  for (Block* b : impl_->spare_blocks) delete b;
  delete impl_;
}

DataPtr CachingAllocator::allocate(size_t nbytes, StreamId stream) {
  trace::ScopedSpan span(trace::Floor::Allocator, "caching_alloc");
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& m = *impl_;
  // The decision is made in place: a copy of it read back just after its
  // one-byte fields were written stalled every hit on store forwarding.
  AllocDecision& d = m.last;
  d = AllocDecision{};
  if (nbytes == 0) return DataPtr{};
  m.process_events_locked();  // frees whose events have passed return to the pool first
  if (nbytes > kMaxRequest) m.throw_oom_locked(nbytes, nbytes, nbytes, stream);

  d.requested = nbytes;
  d.rounded = round_size(nbytes);
  d.small_pool = d.rounded <= kSmallSize;
  span.arg("bytes", static_cast<int64_t>(d.rounded));
  span.arg("pool", d.small_pool ? "small" : "large");
  span.arg("stream", stream);

  // Note [Caching allocator policy], rule 10, step by step.
  Block* b = DESCENT_DECIDES(span, m.get_free_block_locked(d.rounded, d.small_pool, stream));  // hit or miss
  d.cache_hit = b != nullptr;
  if (b == nullptr) {
    const size_t alloc_size = get_allocation_size(d.rounded);
    b = m.alloc_block_locked(alloc_size, d.small_pool, stream, false);
    if (b == nullptr && m.release_available_cached_blocks_locked(d.rounded, d.small_pool, stream)) {
      m.num_free_retries++;
      b = m.alloc_block_locked(alloc_size, d.small_pool, stream, false);
    }
    if (b == nullptr) {
      const size_t released = m.release_cached_blocks_locked();
      m.num_free_retries++;
      log::info("caching allocator: ", m.backend.name(), " refused a ", format_size(alloc_size), " segment; released ",
                released, " cached segments and retried");
      b = m.alloc_block_locked(alloc_size, d.small_pool, stream, true);
    }
    if (b == nullptr) m.throw_oom_locked(nbytes, d.rounded, alloc_size, stream);
  }
  (d.cache_hit ? m.num_cache_hits : m.num_cache_misses)++;
  m.alloc_found_block_locked(b, nbytes, d.rounded, d);
  span.arg("hit", d.cache_hit);
  span.arg("block", static_cast<int64_t>(d.block_size));
  span.arg("split", d.split);
  b->owner = this;
  return DataPtr{reinterpret_cast<void*>(b->addr), nbytes, &CachingAllocator::free_block, b};
}

AllocDecision CachingAllocator::last_decision() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last;
}

// [SECTION] Out of memory ---------------------------------------------------------

// PyTorch's message, with descent in PyTorch's place and the backend's kind in
// CUDA's ("sim out of memory." for sim:0). "Tried to allocate" names the
// segment that was refused (alloc_size), as PyTorch does.
void CachingAllocator::Impl::throw_oom_locked(size_t nbytes, size_t rounded, size_t alloc_size, StreamId stream) {
  (void)nbytes;
  stats.num_ooms++;
  const size_t total = backend.total_memory(), free = backend.free_memory();
  record_trace_locked(TraceEntry::Action::Oom, free, rounded, stream);
  const std::string name = backend.name();
  const std::string kind = name.substr(0, name.find(':'));
  const bool cuda = kind == "cuda";
  const auto allocated = static_cast<size_t>(stats.allocated_bytes[kAggregateStat].current);
  const auto reserved = static_cast<size_t>(stats.reserved_bytes[kAggregateStat].current);
  std::string msg =
      (cuda ? std::string("CUDA") : kind) + " out of memory. Tried to allocate " + format_size(alloc_size) + ". ";
  if (total > 0)
    msg += (cuda ? "GPU " + std::to_string(device) : name) + " has a total capacity of " + format_size(total) +
           " of which " + format_size(free) + " is free. ";
  msg += "Of the allocated memory " + format_size(allocated) + " is allocated by descent, and " +
         format_size(reserved - allocated) +
         " is reserved by descent but unallocated. If reserved but unallocated memory is large try setting "
         "DESCENT_ALLOC_CONF=max_split_size_mb:N to avoid fragmentation. See Note [Caching allocator policy] "
         "in floors/allocator/caching_allocator.cpp.";
  throw OutOfMemoryError(msg);
}

// [SECTION] Free, deferred frees and coalescing -----------------------------------

// Note [Deferred frees]
// ~~~~~~~~~~~~~~~~~~~~~
// A block belongs to the stream it was allocated on; work on that stream runs
// in order, so a block freed there can be handed to the next request of that
// stream at once: the request's work queues behind the old. A block read or
// written on *another* stream (record_stream) is different: when its tensor
// dies on the host, kernels queued on that stream may still use it. So free
// does not return it to the pool. It records an event on each stream the
// block was used on (insert_events), the block waits "active_pending_free",
// and allocate() first looks at the oldest event of each stream
// (process_events): when every event of a block has passed, the free
// completes (free_block) and the block is reusable. When memory runs out,
// synchronize_and_free_events waits for the device and completes them all.

// Note [The hit path]
// ~~~~~~~~~~~~~~~~~~~
// Every tensor on a device allocates and frees here, so a cache hit must
// cost about what a mutex does: 0.1 µs is the target (cudaMallocAsync's hit
// is 0.65 µs). The DataPtr's ctx is the Block itself, so a free finds its
// block without a lookup (a hash map of live pointers was a fifth of a hit),
// Block objects are reused (Impl::make_block) instead of being new'd and
// deleted on every split and merge, and so are the free lists' tree nodes
// (Impl::unlist and list_block move them through std::set's node handles):
// a 1 MiB hit went from 407 ns to about 100 ns on the dev VM with no malloc
// left in it (tests/bench/bench_launch.cu). Then the tree itself: a hit
// that splits a cached segment and the free that merges it back moved four
// nodes in and out of the red-black tree (two searches, four rebalancings).
// Now a listed block knows its node (Block::where), and a block that
// replaces another on its list, the split's remainder in place of the block
// it was cut from, the merged block in place of the neighbour it swallowed,
// takes that node when its key sorts there, its value written in place
// (Impl::take_node): for a stream's one free block, always. The lists stay
// in order (check_invariants checks), and a hit searches the tree once, in
// get_free_block. With the decision made in place (Impl::last), no longer
// copied back just after its one-byte fields were written, a stall on
// store forwarding, the hit went from 80 to 52 ns on the dev VM.
void CachingAllocator::free_block(void* ctx, void* ptr, size_t /*nbytes*/) {
  if (ptr == nullptr || ctx == nullptr) return;
  auto* b = static_cast<Block*>(ctx);
  CachingAllocator* self = b->owner;
  if (self == nullptr) return;  // not an allocated block (a DataPtr freed twice): nothing to free or count
  std::lock_guard<std::mutex> lock(self->impl_->mu);
  self->impl_->free_locked(b, ptr);
}

void CachingAllocator::Impl::free_locked(Block* b, void* ptr) {
  if (!b->allocated || reinterpret_cast<void*>(b->addr) != ptr) {
    num_unknown_frees++;  // see the choices in the Note
    return;
  }
  b->owner = nullptr;
  num_live--;
  trace::ScopedSpan span(trace::Floor::Allocator, "caching_free");
  span.arg("block", static_cast<int64_t>(b->size));
  span.arg("stream", b->stream);
  span.arg("waits_on", static_cast<int64_t>(b->stream_uses.size()));
  b->allocated = false;
  decrease(stats.allocation, b->small, 1);
  decrease(stats.allocated_bytes, b->small, b->size);
  record_trace_locked(TraceEntry::Action::FreeRequested, b->addr, b->requested, b->stream);
  if (b->size >= max_split_size) decrease(stats.oversize_allocations, 1);
  if (DESCENT_DECIDES(span, !b->stream_uses.empty())) {  // used on other streams: reused once their events pass
    insert_events_locked(b);
  } else {
    free_block_locked(b);
  }
}

void CachingAllocator::Impl::insert_events_locked(Block* b) {
  for (StreamId s : b->stream_uses) {
    void* event = backend.record_event(s);
    b->event_count++;
    events[s].emplace_back(event, b);
  }
  b->stream_uses.clear();
}

void CachingAllocator::Impl::process_events_locked() {
  if (events.empty()) return;
  trace::ScopedSpan span(trace::Floor::Allocator, "process_events");
  int64_t completed = 0;
  for (auto it = events.begin(); it != events.end();) {
    auto& queue = it->second;
    while (!queue.empty()) {
      auto [event, b] = queue.front();
      if (event != nullptr && !backend.event_done(event)) break;  // later events of this stream wait too
      if (event != nullptr) backend.release_event(event);
      queue.pop_front();
      if (--b->event_count == 0) {
        free_block_locked(b);
        completed++;
      }
    }
    it = queue.empty() ? events.erase(it) : std::next(it);
  }
  span.arg("completed", completed);
}

void CachingAllocator::Impl::synchronize_and_free_events_locked() {
  stats.num_sync_all_streams++;
  if (events.empty()) return;
  {
    trace::ScopedSpan span(trace::Floor::Allocator, "synchronize_device");
    backend.synchronize_device();
  }
  for (auto& [stream, queue] : events)
    for (auto& [event, b] : queue) {
      if (event != nullptr) backend.release_event(event);
      if (--b->event_count == 0) free_block_locked(b);
    }
  events.clear();
}

// The free completes: the block merges with free neighbours and joins its
// pool (Note rule 8); inactive_split moves by the net change, as in PyTorch.
void CachingAllocator::Impl::free_block_locked(Block* b) {
  record_trace_locked(TraceEntry::Action::FreeCompleted, b->addr, b->requested, b->stream);
  const size_t original_size = b->size, requested_size = b->requested;
  const bool small = b->small;
  b->requested = 0;
  FreeList& list = free_list(small);
  auto mergeable = [](const Block* n) { return n != nullptr && !n->allocated && n->event_count == 0; };
  int64_t net_blocks = 0, net_bytes = 0;
  Block* const p = mergeable(b->prev) ? b->prev : nullptr;
  Block* const n = mergeable(b->next) ? b->next : nullptr;
  // The merged block takes the list node of the later (on the list) of the
  // neighbours it swallows: it is larger than both, so that is the node
  // whose place may already be its own (Impl::take_node). The other leaves.
  Block* const holder = p != nullptr && n != nullptr ? (BlockOrder{}(p, n) ? n : p) : p != nullptr ? p : n;
  if (p != nullptr && p != holder) unlist(list, p);
  if (n != nullptr && n != holder) unlist(list, n);
  // Merge into a free previous neighbour: the lower block survives, so a
  // segment's head block is never deleted.
  if (p != nullptr) {
    net_blocks--;
    net_bytes -= static_cast<int64_t>(p->size);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    drop_block(b);
    b = p;
    num_merges++;
  }
  if (n != nullptr) {
    net_blocks--;
    net_bytes -= static_cast<int64_t>(n->size);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    num_merges++;
  }
  if (holder != nullptr)
    take_node(list, holder, b);
  else
    list_block(list, b);
  if (n != nullptr) drop_block(n);  // only now: it may have held the node until take_node
  if (b->is_split()) {
    net_blocks++;
    net_bytes += static_cast<int64_t>(b->size);
  }
  if (net_blocks > 0) increase(stats.inactive_split, small, static_cast<size_t>(net_blocks));
  if (net_blocks < 0) decrease(stats.inactive_split, small, static_cast<size_t>(-net_blocks));
  if (net_bytes > 0) increase(stats.inactive_split_bytes, small, static_cast<size_t>(net_bytes));
  if (net_bytes < 0) decrease(stats.inactive_split_bytes, small, static_cast<size_t>(-net_bytes));
  decrease(stats.active, small, 1);
  decrease(stats.active_bytes, small, original_size);
  decrease(stats.requested_bytes, small, requested_size);
}

void CachingAllocator::record_stream(const DataPtr& p, StreamId stream) {
  if (p.ptr == nullptr || p.deleter != &CachingAllocator::free_block || p.ctx == nullptr ||
      static_cast<Block*>(p.ctx)->owner != this)
    return;  // not ours
  record_stream(p.ptr, stream);
}

Block* CachingAllocator::Impl::find_live_locked(void* ptr) const {
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  auto it = segments.upper_bound(addr);
  if (it == segments.begin()) return nullptr;
  --it;
  for (Block* b = it->second.head; b != nullptr && b->addr <= addr; b = b->next)
    if (b->addr == addr && b->allocated) return b;
  return nullptr;
}

void CachingAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Block* b = impl_->find_live_locked(ptr);
  if (b == nullptr) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", ptr);
    throw std::invalid_argument(std::string("record_stream: ") + buf + " is not a live block of " +
                                impl_->backend.name() + "'s caching allocator");
  }
  if (stream == b->stream) return;  // uses on the allocation stream need no event
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    trace::ScopedSpan span(trace::Floor::Allocator, "record_stream");
    span.arg("stream", stream);
    b->stream_uses.push_back(stream);
  }
}

// [SECTION] Cache release ------------------------------------------------------------

// Returns a whole free segment to the backend.
void CachingAllocator::Impl::release_block_locked(Block* b) {
  const size_t size = b->size;
  const bool small = b->small;
  stats.num_device_free++;
  record_trace_locked(TraceEntry::Action::SegmentFree, b->addr, size, b->stream);
  unlist(free_list(small), b);
  segments.erase(b->addr);
  {
    trace::ScopedSpan span(trace::Floor::Allocator, "raw_free");
    span.arg("bytes", static_cast<int64_t>(size));
    backend.raw_free(reinterpret_cast<void*>(b->addr), size);
  }
  decrease(stats.segment, small, 1);
  decrease(stats.reserved_bytes, small, size);
  if (size >= max_split_size) decrease(stats.oversize_segments, 1);
  drop_block(b);
}

// Only when max_split_size is set: the smallest cached oversize segment of
// this stream and pool that covers the request, or else as many of the
// largest as cover max(request, max_split_size). True when enough was released.
bool CachingAllocator::Impl::release_available_cached_blocks_locked(size_t rounded, bool small, StreamId stream) {
  if (max_split_size == kNoMaxSplitSize) return false;
  FreeList& list = free_list(small);
  const BlockKey key{stream, std::max(rounded, max_split_size)};
  auto it = list.lower_bound(key);
  if (it != list.end() && (*it)->stream == stream && !(*it)->is_split()) {
    release_block_locked(*it);
    return true;
  }
  // No single block is large enough: free oversize blocks, largest first
  // (even when they are not enough, as PyTorch does).
  std::vector<Block*> victims;
  size_t released = 0;
  while (released < key.size && it != list.begin()) {
    --it;
    Block* b = *it;
    if (b->stream != stream || b->size < max_split_size) break;
    if (b->is_split()) continue;  // see the choices in the Note
    victims.push_back(b);
    released += b->size;
  }
  for (Block* b : victims) release_block_locked(b);
  return released >= key.size;
}

// Waits for pending frees, then returns every cached whole segment; returns how many.
size_t CachingAllocator::Impl::release_cached_blocks_locked() {
  synchronize_and_free_events_locked();
  size_t released = 0;
  for (auto it = segments.begin(); it != segments.end();) {
    Block* head = it->second.head;
    ++it;  // release_block_locked erases the segment
    if (head->allocated || head->event_count > 0 || head->next != nullptr) continue;
    release_block_locked(head);
    released++;
  }
  return released;
}

void CachingAllocator::empty_cache() {
  trace::ScopedSpan span(trace::Floor::Allocator, "empty_cache");
  std::lock_guard<std::mutex> lock(impl_->mu);
  span.arg("segments", static_cast<int64_t>(impl_->release_cached_blocks_locked()));
}

}  // namespace descent::alloc
