// Device memory: one caching allocator per device, created on first use over
// the raw memory of the device's runtime (device_memory.h).
#include "floors/streams/device_memory.h"

#include <map>
#include <memory>
#include <mutex>

#include "floors/core/error.h"
#include "floors/streams/sim_runtime.h"

namespace descent::streams {

namespace {
struct Allocators {
  std::mutex mu;
  std::map<std::pair<int, int>, std::unique_ptr<alloc::CachingAllocator>> by_device;
};
Allocators& allocators() {
  static Allocators* a = new Allocators;  // never destroyed: tensors may outlive static destructors
  return *a;
}
}  // namespace

alloc::CachingAllocator& device_allocator(Device d) {
  check_device(d);
  Allocators& a = allocators();
  std::lock_guard<std::mutex> g(a.mu);
  auto& slot = a.by_device[{int(d.type), d.index}];
  if (!slot) slot = std::make_unique<alloc::CachingAllocator>(runtime(d.type).memory(d.index));
  return *slot;
}

alloc::DataPtr device_allocate(size_t nbytes, Device d) {
  return device_allocator(d).allocate(nbytes, current_stream(d).id);
}

size_t sim_memory_capacity() { return SimRuntime::get().capacity(); }

void set_sim_memory_capacity(size_t bytes) {
  alloc::CachingAllocator& a = device_allocator(Device{DeviceType::Sim, 0});
  a.empty_cache();
  DESCENT_CHECK(a.stats().allocated_bytes == 0, Error, "cannot change sim:0's memory capacity while ",
                alloc::human_bytes(size_t(a.stats().allocated_bytes)),
                " are allocated on it: free its tensors first");
  SimRuntime::get().set_capacity(bytes);
}

}  // namespace descent::streams

namespace descent {
alloc::DataPtr device_allocate_bytes(size_t nbytes, Device device) { return streams::device_allocate(nbytes, device); }
}  // namespace descent
