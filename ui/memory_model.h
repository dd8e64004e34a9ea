// The memory panel's model: a device's caching allocator before a call, the
// history of what it did during the call, and its blocks at any moment of the
// call, replayed (no ImGui; tests/ui/test_memory_model.cpp).
//
// [SECTION] What a run gives (descent._app.run's "devices")
// [SECTION] Replaying the history
// [SECTION] Drawing helpers
//
// Note [Replaying the allocator's history]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// descent._app.run takes a snapshot of each device's caching allocator (its
// segments and their blocks, torch.cuda.memory_snapshot()'s words) before the
// call, switches the allocator's history on for the call (Note [The
// allocator's history from Python], descent/_device.py), and takes another
// snapshot after. The history's entries carry time_ns on the tracer's clock,
// the clock of the trace's spans, so the panel can show memory as it was at
// the playback's moment: start from the before snapshot and apply, in order,
// every entry up to that time:
//   segment_alloc   a new segment: one free block as large as the segment
//                   (2 MiB, kSmallBuffer, is the small pool's size; every
//                   other size is the large pool's);
//   alloc           the free block starting at addr becomes allocated; the
//                   size asked is rounded as the allocator rounds it
//                   (kMinBlockSize) and the rest split off as a free block
//                   when the allocator would split it (small pool: a rest of
//                   at least kMinBlockSize; large: more than kSmallSize);
//   free_requested  the block waits for other streams (pending free);
//   free_completed  the block is free and merges with free neighbours;
//   segment_free    the segment goes back to the device;
//   oom             nothing changes.
// An entry's time is read inside the allocator's floor-6 span (caching_alloc,
// caching_free), so a step going down into that span shows the block before
// and the step coming up shows it after; the block the span touched is the
// one highlighted. Replaying every entry must give the after snapshot: the
// state dump says whether it does (`replay_matches_after`), which is how the
// tests know the rules above are the allocator's. Two things it does not
// know: a max_split_size set by DESCENT_ALLOC_CONF (the large pool's split
// rule assumes none), and entries dropped when the ring was full (then the
// replay reports the first entry it could not apply and goes on).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ui/story.h"

namespace descent::ui {

// [SECTION] What a run gives (descent._app.run's "devices") ------------------------

enum class BlockState : uint8_t {
  Allocated,    // "active_allocated": a tensor holds it
  PendingFree,  // "active_pending_free": freed, waiting for another stream's work (Note [Deferred frees])
  Free,         // "inactive": cached, free for the next request of its stream and pool
};
const char* block_state_name(BlockState s);                 // memory_snapshot()'s word
BlockState block_state_from_name(const std::string& name);  // Free for an unknown word

struct MemBlock {
  uint64_t address = 0;
  uint64_t size = 0;       // bytes
  uint64_t requested = 0;  // bytes asked for (0 when free)
  BlockState state = BlockState::Free;
};

struct MemSegment {
  uint64_t address = 0;
  uint64_t size = 0;  // bytes
  bool small = true;  // the small pool (2 MiB segments) or the large one
  int64_t stream = 0;
  std::vector<MemBlock> blocks;  // in address order, covering the segment exactly
};

// One history entry (alloc::TraceEntry as Python gives it).
struct MemEntry {
  enum class Action : uint8_t { Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, Oom, Unknown };
  Action action = Action::Unknown;
  uint64_t addr = 0;
  uint64_t size = 0;  // bytes asked (alloc, free_*), the segment's (segment_*)
  int64_t stream = 0;
  int64_t time_ns = 0;  // on the trace's clock
};
const char* entry_action_name(MemEntry::Action a);
MemEntry::Action entry_action_from_name(const std::string& name);

// A few of memory_stats()'s numbers.
struct MemCounters {
  bool valid = false;
  int64_t allocated_bytes = 0;  // allocated_bytes.all.current
  int64_t reserved_bytes = 0;   // reserved_bytes.all.current
  int64_t allocations = 0;      // allocation.all.allocated: blocks handed out since reset
  int64_t segments_made = 0;    // num_device_alloc: each a cache miss
  int64_t cache_hits() const { return allocations - segments_made; }  // served from cached blocks
};

// One device's memory around a call.
struct DeviceMemory {
  std::string device;                     // "sim:0", "cuda:0"
  std::vector<MemSegment> before, after;  // in address order
  std::vector<MemEntry> history;          // oldest first
  MemCounters stats_before, stats_after;
};

// [SECTION] Replaying the history -------------------------------------------------

struct MemoryAt {
  std::vector<MemSegment> segments;  // in address order
  size_t replayed = 0;               // history entries applied (those at or before the time)
  std::string problem;               // the first entry that could not be applied, in words ("" when none)
};

// The device's memory at time t: `before` with every entry up to t applied
// (Note [Replaying the allocator's history]).
MemoryAt replay(const DeviceMemory& d, int64_t t_ns);
// Applies one entry; false (segments unchanged) when it does not fit them.
bool apply_entry(std::vector<MemSegment>& segments, const MemEntry& e);
// Whether two pictures agree segment for segment, block for block.
bool same_memory(const std::vector<MemSegment>& a, const std::vector<MemSegment>& b);

// The block a floor-6 span touched: the first alloc, free_requested or
// free_completed entry inside [start_ns, end_ns]; {SIZE_MAX, 0} when none.
std::pair<size_t, uint64_t> entry_in_span(const DeviceMemory& d, int64_t start_ns, int64_t end_ns);

// The floor-6 span whose block is highlighted at `step`: the step's own span
// when it is on floor 6 (going down or coming up), else the floor-6 span open
// at the step; widened to its outermost floor-6 ancestor (caching_alloc, not
// the raw_malloc inside it). SIZE_MAX when there is none.
size_t allocator_span_at(const Story& s, size_t step);

// A device as the memory panel shows it at a step.
struct DeviceMemoryView {
  MemoryAt at;              // replayed up to the playback's moment
  size_t entry = SIZE_MAX;  // the history entry of the highlighted span (SIZE_MAX: none)
  uint64_t highlight = 0;   // that entry's block address
};
DeviceMemoryView device_memory_at(const DeviceMemory& d, const Story& s, size_t step, int64_t now_ns);

// [SECTION] Drawing helpers -------------------------------------------------------

// Each block's [x0, x1) across a bar `width` pixels wide: widths in
// proportion to size, but none narrower than `min_px` (a 4 KiB block in a
// 2 MiB segment would be a fifth of a pixel); the room that takes comes out of
// the wider blocks.
std::vector<std::pair<float, float>> block_extents(const MemSegment& s, float width, float min_px);

}  // namespace descent::ui
