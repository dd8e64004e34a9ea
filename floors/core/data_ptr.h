// DataPtr: a tensor's bytes and how to give them back; where a device type's
// bytes come from. What c10/core/Allocator.h holds, kept in core so that a
// Storage needs nothing of the floors that allocate (6 and 7).
//
// [SECTION] DataPtr
// [SECTION] Allocators by device type
#pragma once

#include <cstddef>

#include "floors/core/device.h"

namespace descent {

// [SECTION] DataPtr ------------------------------------------------------------

using Deleter = void (*)(void* ctx, void* ptr, size_t nbytes);

// Owned memory: the pointer, its size, and the function that frees it.
// Storage (tensor.h) holds one and calls the deleter when it dies.
struct DataPtr {
  void* ptr = nullptr;        // first byte, aligned to alloc::kAlignment (nullptr when nbytes == 0)
  size_t nbytes = 0;          // bytes asked for
  Deleter deleter = nullptr;  // nullptr: nothing to free
  void* ctx = nullptr;        // passed back to the deleter (e.g. the allocator)

  void release() {
    if (deleter) deleter(ctx, ptr, nbytes);
    ptr = nullptr;
    deleter = nullptr;
  }
};

// [SECTION] Allocators by device type -------------------------------------------

// Memory for a device of one type (c10's SetAllocator and GetAllocator): the
// floor that owns that memory sets it when the floors are registered
// (Note [Registering the floors], floors/registration.cpp): floor 6 the
// CPU's, floor 7 the simulated device's and CUDA's. Core calls it
// (allocate_bytes, tensor.h) without knowing the floors above it.
using AllocateFn = DataPtr (*)(size_t nbytes, Device device);
void set_allocator(DeviceType type, AllocateFn fn);
AllocateFn allocator_of(DeviceType type);  // nullptr: none set

}  // namespace descent
