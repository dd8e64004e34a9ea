// Device memory: one caching allocator (floor 6) per device, over the raw
// memory its runtime gives (cudaMalloc, or the simulated device's arena).
//
// core's allocate_bytes() asks here (through the allocator set by
// register_device_allocators) for every non-CPU tensor's bytes, on the
// calling thread's current stream of that device (Note [Streams and the two
// clocks], streams.h); Note [Caching allocator policy] is the allocator's.
#pragma once

#include <cstddef>

#include "floors/allocator/allocator.h"
#include "floors/core/device.h"
#include "floors/streams/streams.h"

namespace descent::streams {

// The caching allocator of `d` (created on first use). RuntimeError when `d`
// is not a usable device (check_device).
alloc::CachingAllocator& device_allocator(Device d);

// Bytes for a tensor on `d`, from its caching allocator, on d's current stream.
DataPtr device_allocate(size_t nbytes, Device d);
// Makes device_allocate core's allocator for sim and cuda (set_allocator,
// floors/core/data_ptr.h): what allocate_bytes calls for a device tensor.
// Run once by register_floors (Note [Registering the floors]).
void register_device_allocators();

// The simulated device's memory: the arena's capacity in bytes (default
// 8 GiB, or DESCENT_SIM_MEMORY, e.g. "512MiB"). Setting it empties the
// allocator's cache first; RuntimeError while memory is allocated on sim:0.
// Waits on the host, in a floor-7 span named trace::kEndOfRecordingWait
// each, for every device with a caching allocator (those work can have been
// put on) that still has work queued: how a recording that ends takes in the
// device spans of the work already queued (tracing.py), as PyTorch's
// profiler synchronizes at its end. A device with nothing queued is not
// waited for, and leaves no span.
void synchronize_devices_in_use();

size_t sim_memory_capacity();
void set_sim_memory_capacity(size_t bytes);

// Page-locked host memory for Tensor.pin_memory() (host_memory.cpp, Note
// [Pinned host memory]): cudaHostAlloc where a GPU is usable, else aligned
// host memory. Freeing it waits for the devices' queued work first.
DataPtr pinned_allocate(size_t nbytes);

}  // namespace descent::streams
