// The simulated device's runtime (Note [The simulated device], sim_runtime.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "floors/streams/streams.h"

namespace descent::streams {

class SimRuntime final : public DeviceRuntime {
 public:
  static SimRuntime& get();
  DeviceType type() const override { return DeviceType::Sim; }
  int device_count() override { return 1; }
  std::string unavailable_reason() override;
  std::string device_name(int index) override;
  alloc::RawBackend& memory(int index) override;
  int64_t create_stream(int index) override;
  void* native(const Stream&) override { return nullptr; }
  void synchronize(const Stream& s) override;
  bool query(const Stream& s) override;
  int64_t queue_depth(const Stream& s) override;
  void synchronize_device(int index) override;
  bool idle(int index) override;
  std::unique_ptr<EventImpl> create_event(int index, bool enable_timing) override;
  void copy(void* dst, const void* src, size_t nbytes, CopyKind kind, const Stream& s, bool pinned) override;

  // How many host threads wait for stream s now (inside a synchronize): lets
  // a test's kernel hold its stream until the host is waiting, so that the
  // order it records does not depend on how the threads were scheduled.
  int waiting_hosts(const Stream& s);

  // Puts `task` on stream s; returns the queue's depth with it.
  int64_t enqueue(const Stream& s, std::function<void()> task);

  // The arena's capacity (device_memory.h: sim_memory_capacity).
  size_t capacity();
  void set_capacity(size_t bytes);

  struct Impl;

 private:
  SimRuntime();
  Impl* impl_;
};

}  // namespace descent::streams
