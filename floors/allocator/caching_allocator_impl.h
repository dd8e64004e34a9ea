// The caching allocator's insides, shared by its two files: the policy
// (caching_allocator.cpp: allocation, frees, the out-of-memory path, cache
// release) and what it reports (caching_allocator_report.cpp: statistics,
// snapshot, history, settings, checks). Not for the other floors: they use
// allocator.h. Note [Caching allocator policy] is in caching_allocator.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "floors/allocator/allocator.h"
#include "floors/core/log.h"
#include "tracer/tracer.h"

namespace descent::alloc {
namespace internal {

// [SECTION] Blocks, segments and free lists ------------------------------------

constexpr size_t kMaxRequest = SIZE_MAX / 4;  // bytes; larger requests are refused outright
constexpr size_t kMiB = 1 << 20;              // bytes

struct Block;

// Order of a free list: by stream, then size, then address. The best fit for
// (stream, size) is the first block not below the key {stream, size, 0}.
// A free list is searched by a key, without a Block to compare with.
struct BlockKey {
  StreamId stream;
  size_t size;
};
struct BlockOrder {
  using is_transparent = void;  // lower_bound(BlockKey)
  bool operator()(const Block* a, const Block* b) const;
  bool operator()(const Block* a, const BlockKey& k) const;
  bool operator()(const BlockKey& k, const Block* b) const;
};
using FreeList = std::set<Block*, BlockOrder>;

struct Block {
  uintptr_t addr = 0;
  size_t size = 0;       // bytes, a multiple of kMinBlockSize
  size_t requested = 0;  // bytes asked by the owner; kept until the free completes, then 0
  StreamId stream = 0;   // the stream it was allocated on
  bool small = false;    // pool
  bool allocated = false;
  bool listed = false;                // on its pool's free list, at `where`
  int event_count = 0;                // events still to pass before the free completes (Note [Deferred frees])
  std::vector<StreamId> stream_uses;  // other streams it was used on (record_stream)
  CachingAllocator* owner = nullptr;  // while allocated: the allocator, for the DataPtr's deleter
  Block* prev = nullptr;              // neighbours in the same segment, address order
  Block* next = nullptr;
  FreeList::iterator where;  // while listed: its node, so leaving the list needs no search

  bool is_split() const { return prev != nullptr || next != nullptr; }
  bool pending() const { return !allocated && event_count > 0; }
};

inline bool BlockOrder::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->addr) < std::tie(b->stream, b->size, b->addr);
}
// The key {stream, size} sits before every block of that stream and size (address 0).
inline bool BlockOrder::operator()(const Block* a, const BlockKey& k) const {
  return std::tie(a->stream, a->size) < std::tie(k.stream, k.size);
}
inline bool BlockOrder::operator()(const BlockKey& k, const Block* b) const {
  return std::tie(k.stream, k.size) <= std::tie(b->stream, b->size);
}

struct Segment {
  size_t size = 0;  // bytes, as asked from the backend
  bool small = false;
  StreamId stream = 0;
  Block* head = nullptr;  // the block at the segment's start; never merged away
};

inline size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

inline size_t round_size(size_t n) { return n < kMinBlockSize ? kMinBlockSize : round_up(n, kMinBlockSize); }

inline size_t get_allocation_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

// "cuda:1" -> 1; 0 when the name has no index.
inline int device_index(const char* name) {
  const char* colon = std::strchr(name, ':');
  return colon == nullptr ? 0 : std::atoi(colon + 1);
}

// [SECTION] Statistics and history ----------------------------------------------

[[gnu::always_inline]] inline void increase(Stat& s, int64_t n) {
  s.current += n;
  s.peak = std::max(s.peak, s.current);
  s.allocated += n;
}
[[gnu::always_inline]] inline void decrease(Stat& s, int64_t n) {
  s.current -= n;
  s.freed += n;
}
// A pool's statistic and the aggregate ("all") move together.
[[gnu::always_inline]] inline void increase(StatArray& a, bool small, size_t n) {
  increase(a[kAggregateStat], static_cast<int64_t>(n));
  increase(a[small ? kSmallPoolStat : kLargePoolStat], static_cast<int64_t>(n));
}
[[gnu::always_inline]] inline void decrease(StatArray& a, bool small, size_t n) {
  decrease(a[kAggregateStat], static_cast<int64_t>(n));
  decrease(a[small ? kSmallPoolStat : kLargePoolStat], static_cast<int64_t>(n));
}

}  // namespace internal

using namespace internal;

// Everything behind the one mutex. Methods named *_locked expect it held.
struct CachingAllocator::Impl {
  explicit Impl(RawBackend& b) : backend(b), device(device_index(b.name())) {}

  RawBackend& backend;
  const int device;
  mutable std::mutex mu;
  FreeList small_free, large_free;
  std::map<uintptr_t, Segment> segments;  // by address
  // Allocated blocks are found from their DataPtr, whose ctx is the Block
  // (Note [The hit path]); only this count is kept of them.
  size_t num_live = 0;
  Block* find_live_locked(void* ptr) const;  // record_stream(void*): through the segments; nullptr if none
  // Pending frees: per stream, the events recorded there in order, each with
  // the block that waits for it (PyTorch's cuda_events).
  std::map<StreamId, std::deque<std::pair<void*, Block*>>> events;
  size_t max_split_size = kNoMaxSplitSize;  // bytes
  DeviceStats stats;
  int64_t num_cache_hits = 0, num_cache_misses = 0, num_splits = 0, num_merges = 0, num_free_retries = 0;
  AllocDecision last;
  int64_t num_unknown_frees = 0;  // see the choices in the Note
  // The history: a ring of at most history_max entries, history_next the oldest once full.
  bool history_on = false;
  size_t history_max = kDefaultHistoryEntries;
  size_t history_next = 0;
  std::vector<TraceEntry> history;

  // Block objects are reused: a split makes one and a merge drops one on
  // every cache hit of a split pool, and the C library's malloc and free
  // for them were a quarter of a hit's time.
  std::vector<Block*> spare_blocks;
  Block* make_block() {
    if (spare_blocks.empty()) return new Block;
    Block* b = spare_blocks.back();
    spare_blocks.pop_back();
    return b;
  }
  void drop_block(Block* b) {
    std::vector<StreamId> uses = std::move(b->stream_uses);  // keeps its capacity for the next block
    uses.clear();
    *b = Block{};
    b->stream_uses = std::move(uses);
    spare_blocks.push_back(b);
  }

  FreeList& free_list(bool small) { return small ? small_free : large_free; }
  const FreeList& free_list(bool small) const { return small ? small_free : large_free; }
  // The free lists' nodes are reused too: a block leaves its list by
  // extract(), which keeps the tree node, and the next block to be listed
  // goes in with that node. A listed block keeps its node's iterator
  // (Block::where), so leaving the list is no search, and a block that
  // replaces another on the list takes its node where that keeps the order
  // (take_node): Note [The hit path].
  std::vector<FreeList::node_type> spare_nodes;
  void unlist(FreeList& list, Block* b) {
    if (!b->listed) return;
    b->listed = false;
    if (spare_nodes.size() < 64)
      spare_nodes.push_back(list.extract(b->where));
    else
      list.erase(b->where);
  }
  void list_block(FreeList& list, Block* b) {
    if (spare_nodes.empty()) {
      b->where = list.insert(b).first;
    } else {
      FreeList::node_type node = std::move(spare_nodes.back());
      spare_nodes.pop_back();
      node.value() = b;
      b->where = list.insert(std::move(node)).position;
    }
    b->listed = true;
  }
  // `b` replaces `holder` (listed) on the list: in holder's own node when b's
  // key sorts between that node's neighbours (the node's value is written in
  // place, which keeps the tree valid since the order holds: no search, no
  // rebalancing), else by the long way. b may be holder itself, its size
  // already changed.
  void take_node(FreeList& list, Block* holder, Block* b) {
    const FreeList::iterator it = holder->where;
    const bool after_prev = it == list.begin() || BlockOrder{}(*std::prev(it), b);
    const bool before_next = std::next(it) == list.end() || BlockOrder{}(b, *std::next(it));
    if (after_prev && before_next) {
      holder->listed = false;
      const_cast<Block*&>(*it) = b;  // a set's element is const only to keep its order, which holds
      b->where = it;
      b->listed = true;
      return;
    }
    unlist(list, holder);
    list_block(list, b);
  }

  // The history is off unless asked for: every hit pays one branch for it.
  void record_trace_locked(TraceEntry::Action action, uintptr_t addr, size_t size, StreamId stream) {
    if (history_on) record_trace_slow_locked(action, addr, size, stream);
  }
  void record_trace_slow_locked(TraceEntry::Action action, uintptr_t addr, size_t size, StreamId stream);
  Block* get_free_block_locked(size_t rounded, bool small, StreamId stream);
  Block* alloc_block_locked(size_t alloc_size, bool small, StreamId stream, bool is_retry);
  void alloc_found_block_locked(Block* b, size_t requested, size_t rounded, AllocDecision& d);
  [[noreturn]] void throw_oom_locked(size_t nbytes, size_t rounded, size_t alloc_size, StreamId stream);
  void free_locked(Block* b, void* ptr);
  void insert_events_locked(Block* b);
  void process_events_locked();
  void synchronize_and_free_events_locked();
  void free_block_locked(Block* b);
  void release_block_locked(Block* b);
  bool release_available_cached_blocks_locked(size_t rounded, bool small, StreamId stream);
  size_t release_cached_blocks_locked();
  CachingStats summary_locked() const;
};

}  // namespace descent::alloc
