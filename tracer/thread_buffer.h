// Internal to the tracer: the layout of a thread's buffer of span records
// and the handles that name its spans, shared by the recording side
// (tracer.cpp) and the flows (flows.cpp). Promises nothing to other code.
// See Note [Tracer hot path] and Note [Span handles] in tracer.h.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tracer/tracer.h"

namespace descent::trace::detail {

constexpr int kChunkShift = 14;
constexpr uint32_t kChunkRecords = 1u << kChunkShift;  // 16384 records = 512 KiB per chunk
constexpr uint32_t kMaxRecordsPerThread = 1u << 30;    // keeps indices in int32_t
constexpr uint32_t kDefaultSpanLimit = 1u << 23;       // per thread and recording: 256 MiB of records
constexpr size_t kChunksKeptOnReset = 64;              // 32 MiB stays reserved per thread
constexpr int kArgChunkShift = 14;
constexpr uint32_t kArgChunkRecords = 1u << kArgChunkShift;  // 16384 arguments = 384 KiB per chunk
constexpr size_t kArgChunksKeptOnReset = 16;                 // 6 MiB
constexpr uint32_t kInitialOpenDepth = 256;                  // open spans before the stack grows
constexpr uintptr_t kPrefetchAheadBytes = 16 * sizeof(SpanRecord);
constexpr uint64_t kNsFlagBit = uint64_t{1} << 63;  // record's times are already ns
constexpr uint32_t kSiteCacheEntries = 256;         // per thread: 4 KiB (Note [Span source sites])

// A span's handle: the recording's epoch in the high bits, the span's index
// in its thread's buffer in the low ones (Note [Span handles]).
constexpr uint64_t kHandleEpochMask = 0x7fffffff;  // epoch bits a handle keeps
constexpr int kHandleEpochShift = 32;
constexpr uint64_t kHandleIndexMask = 0xffffffff;

// The handle bits naming recording `epoch`.
constexpr SpanHandle handle_tag(uint64_t epoch) {
  return static_cast<SpanHandle>((epoch & kHandleEpochMask) << kHandleEpochShift);
}
constexpr uint32_t handle_index(SpanHandle h) {
  return static_cast<uint32_t>(static_cast<uint64_t>(h) & kHandleIndexMask);
}
constexpr SpanHandle handle_tag_of(SpanHandle h) { return h & ~static_cast<SpanHandle>(kHandleIndexMask); }

// One thread's spans and arguments, in chunks that never move once made: the
// owner appends without a lock and publishes counts with release stores;
// stop() and snapshot() read what is published, under `mutex`.
struct ThreadBuffer {
  // Owner thread only (the hot path reads these; keep them together).
  uint64_t epoch = UINT64_MAX;           // recording the contents belong to
  SpanHandle tag = kNoSpan;              // handle_tag(epoch): the high bits of this recording's handles
  SpanRecord* cur = nullptr;             // chunk being filled
  uint32_t used = 0;                     // records used in `cur`
  uint32_t count = 0;                    // records in the buffer = index of the next one
  uint32_t depth = 0;                    // open spans
  uint64_t dropped = 0;                  // spans not recorded: the limit was reached or memory ran out
  ArgRecord* arg_cur = nullptr;          // argument chunk being filled
  uint32_t arg_used = kArgChunkRecords;  // arguments used in `arg_cur` (full: none yet)
  uint64_t arg_count = 0;                // arguments in the buffer (up to kMaxArgs per span: past 2^32)
  std::vector<SpanHandle> open = std::vector<SpanHandle>(kInitialOpenDepth);  // open spans' handles, innermost last
  struct CachedSite {
    const char* file = nullptr;  // std::source_location's pointer: equal for one file in one object file
    uint32_t line = 0;
    uint16_t site = 0;
  };
  std::array<CachedSite, kSiteCacheEntries> sites{};  // direct-mapped: source location -> site

  // Shared with stop().
  std::mutex mutex;                                   // guards chunks, arg_chunks; published_epoch is written under it
  std::vector<std::unique_ptr<SpanRecord[]>> chunks;  // only the owner adds (under mutex)
  std::vector<std::unique_ptr<ArgRecord[]>> arg_chunks;  // the same
  std::atomic<uint64_t> published_epoch{
      UINT64_MAX};                           // the recording published_count counts (recorded_spans reads it unlocked)
  std::atomic<uint32_t> published_count{0};  // release-stored after each append
  std::atomic<uint64_t> published_args{0};   // the same, for arguments
  std::atomic<bool> exited{false};           // owner thread has ended
};

inline SpanRecord& record_at(ThreadBuffer* b, uint32_t index) {
  return b->chunks[index >> kChunkShift][index & (kChunkRecords - 1)];
}

}  // namespace descent::trace::detail
