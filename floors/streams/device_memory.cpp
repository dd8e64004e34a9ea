// Device memory: one caching allocator per device, created on first use over
// the raw memory of the device's runtime (device_memory.h).
#include "floors/streams/device_memory.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "floors/core/error.h"
#include "floors/streams/sim_runtime.h"
#include "tracer/trace.h"

namespace descent::streams {

namespace {
struct Allocators {
  std::mutex mu;  // guards creation; a created allocator is published in `ready` and never destroyed
  std::map<std::pair<int, int>, std::unique_ptr<alloc::CachingAllocator>> by_device;
  std::atomic<alloc::CachingAllocator*> ready[3][kMaxDeviceIndex + 1] = {};
};
Allocators& allocators() {
  static Allocators* a = new Allocators;  // never destroyed: tensors may outlive static destructors
  return *a;
}
}  // namespace

alloc::CachingAllocator& device_allocator(Device d) {
  Allocators& a = allocators();
  // Every tensor allocation comes here: one load once the allocator exists.
  const bool in_table = d.type != DeviceType::CPU && d.index >= 0 && d.index <= kMaxDeviceIndex;
  if (in_table)
    if (alloc::CachingAllocator* c = a.ready[int(d.type)][d.index].load(std::memory_order_acquire)) return *c;
  check_device(d);  // raises for the CPU and for an index out of range
  std::lock_guard<std::mutex> g(a.mu);
  auto& slot = a.by_device[{int(d.type), d.index}];
  if (!slot) slot = std::make_unique<alloc::CachingAllocator>(runtime(d.type).memory(d.index));
  a.ready[int(d.type)][d.index].store(slot.get(), std::memory_order_release);
  return *slot;
}

DataPtr device_allocate(size_t nbytes, Device d) { return device_allocator(d).allocate(nbytes, current_stream(d).id); }

void synchronize_devices_in_use() {
  const char* why = trace::kEndOfRecordingWait;
  Allocators& a = allocators();
  for (int t = 1; t < 3; ++t)
    for (int i = 0; i <= kMaxDeviceIndex; ++i)
      if (a.ready[t][i].load(std::memory_order_acquire) != nullptr && !runtime(DeviceType(t)).idle(i))
        synchronize(Device{DeviceType(t), i}, why);
}

size_t sim_memory_capacity() { return SimRuntime::get().capacity(); }

void set_sim_memory_capacity(size_t bytes) {
  alloc::CachingAllocator& a = device_allocator(Device{DeviceType::Sim, 0});
  a.empty_cache();
  DESCENT_CHECK(a.stats().allocated_bytes == 0, Error, "cannot change sim:0's memory capacity while ",
                alloc::human_bytes(size_t(a.stats().allocated_bytes)), " are allocated on it: free its tensors first");
  SimRuntime::get().set_capacity(bytes);
}

void register_device_allocators() {
  set_allocator(DeviceType::Sim, device_allocate);
  set_allocator(DeviceType::CUDA, device_allocate);
}

}  // namespace descent::streams
