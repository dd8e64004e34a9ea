// Floor 6, the CPU allocator: aligned host memory from the system, counted.
//
// [SECTION] Statistics (atomics)
// [SECTION] Allocation and the deleter
// [SECTION] Queries
//
// There is no cache here: the C library's malloc already keeps its own free
// lists for host memory, and asking it is cheap. What this file adds is
// alignment (kAlignment, one cache line) and counting, so that the app and the
// tests can see how many bytes tensors hold on the host.
//
// Note [Small host blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// glibc's malloc serves small chunks from a per-thread cache (tcache) in a
// few instructions, but aligned_alloc bypasses that cache and carves every
// block out of the arena, freeing the misaligned
// head and tail again (about a third of a 1-element add went there). So a
// small block is asked of malloc with kAlignment - 16 spare bytes and aligned
// by hand (malloc's blocks are 16-aligned); the pointer malloc returned rides
// in the DataPtr's ctx to free(). Large blocks, where the spare bytes would
// not matter but the cache does not apply, keep aligned_alloc.
//
// Choices:
//   * nbytes == 0 gives an empty DataPtr (ptr nullptr, no deleter) and is not
//     counted: nothing was allocated, so nothing will be freed.
//   * allocated_bytes counts the bytes asked (the deleter gets the same number
//     back), not the few padding bytes added to reach a multiple of kAlignment.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "floors/allocator/allocator.h"
#include "tracer/tracer.h"

namespace descent::alloc {
namespace {

// [SECTION] Statistics (atomics) ------------------------------------------------

// Each counter is its own atomic: a reader may see a mix of before and after a
// concurrent allocation, but every counter on its own is exact.
std::atomic<int64_t> g_allocated_bytes{0};       // bytes, live now
std::atomic<int64_t> g_peak_allocated_bytes{0};  // bytes, high-water mark since reset
std::atomic<int64_t> g_num_allocs{0};
std::atomic<int64_t> g_num_frees{0};

// Raises the peak to at least `now` (another thread may raise it concurrently).
void raise_peak(int64_t now) {
  int64_t peak = g_peak_allocated_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_allocated_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

[[noreturn]] void throw_cpu_oom(size_t nbytes) {
  int64_t allocated = g_allocated_bytes.load(std::memory_order_relaxed);
  throw OutOfMemoryError("descent: out of memory on cpu: tried to allocate " + human_bytes(nbytes) + " (" +
                         std::to_string(nbytes) + " bytes); " + human_bytes(static_cast<size_t>(allocated)) + " (" +
                         std::to_string(allocated) + " bytes) allocated by descent's CPU allocator");
}

// [SECTION] Allocation and the deleter ----------------------------------------

constexpr size_t kMallocAlignment = 16;            // what malloc guarantees on x86-64 and aarch64 glibc
constexpr size_t kSmallBlock = 1024 - kAlignment;  // padded sizes up to this stay in glibc's tcache

// The DataPtr deleter: gives the bytes back to the C library and counts it.
// ctx is the pointer malloc returned for a small block, nullptr otherwise.
void cpu_free(void* ctx, void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::free(ctx != nullptr ? ctx : ptr);
  g_allocated_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  g_num_frees.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

DataPtr cpu_allocate(size_t nbytes) {
  trace::ScopedSpan span(trace::Floor::Allocator, "cpu_alloc");
  span.arg("bytes", static_cast<int64_t>(nbytes));
  if (nbytes == 0) return DataPtr{};

  // std::aligned_alloc wants the size to be a multiple of the alignment.
  if (nbytes > SIZE_MAX - (kAlignment - 1)) throw_cpu_oom(nbytes);  // rounding would overflow
  size_t padded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = nullptr;
  void* raw = nullptr;  // Note [Small host blocks]
  if (DESCENT_DECIDES(span, padded <= kSmallBlock)) {
    raw = std::malloc(padded + kAlignment - kMallocAlignment);
    if (raw == nullptr) throw_cpu_oom(nbytes);
    ptr = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + kAlignment - 1) & ~uintptr_t{kAlignment - 1});
  } else {
    ptr = std::aligned_alloc(kAlignment, padded);
    if (ptr == nullptr) throw_cpu_oom(nbytes);
  }

  int64_t now = g_allocated_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
                static_cast<int64_t>(nbytes);
  raise_peak(now);
  g_num_allocs.fetch_add(1, std::memory_order_relaxed);
  return DataPtr{ptr, nbytes, &cpu_free, raw};
}

void register_cpu_allocator() {
  set_allocator(DeviceType::CPU, [](size_t nbytes, Device) { return cpu_allocate(nbytes); });
}

// [SECTION] Queries ---------------------------------------------------------------

CpuStats cpu_stats() {
  CpuStats s;
  s.allocated_bytes = g_allocated_bytes.load(std::memory_order_relaxed);
  s.peak_allocated_bytes = g_peak_allocated_bytes.load(std::memory_order_relaxed);
  s.num_allocs = g_num_allocs.load(std::memory_order_relaxed);
  s.num_frees = g_num_frees.load(std::memory_order_relaxed);
  return s;
}

void cpu_reset_peak() {
  g_peak_allocated_bytes.store(g_allocated_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

// "24.00 MiB": a byte count for people, next to the exact number in messages.
std::string human_bytes(size_t n) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  char buf[32];
  double v = static_cast<double>(n);
  if (v >= kGiB)
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / kGiB);
  else if (v >= kMiB)
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / kMiB);
  else if (v >= kKiB)
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / kKiB);
  else
    std::snprintf(buf, sizeof buf, "%zu B", n);
  return buf;
}

}  // namespace descent::alloc
