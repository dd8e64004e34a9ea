// Dispatch keys and key sets: how the dispatcher decides which kernel runs.
//
// See Note [Dispatch key priority] and Note [Computing the key set].
#pragma once

#include <bit>
#include <cstdint>
#include <string>

namespace descent {

// Note [Dispatch key priority]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every call carries a set of keys. The dispatcher runs the kernel of the
// highest-priority key in the set; that kernel may do its part and then
// "redispatch" with its own key (and everything above it) removed, so the call
// walks down the keys in order. A key registered as a fallthrough is skipped.
// A key's priority is its position in this enum: later is higher.
//
// - Backend keys (CPU, Sim, CUDA) are the bottom: they own the memory, so
//   their kernels do the actual work. Every tensor has exactly one.
// - BackendSelect sits above the backends for factory functions (empty, ones,
//   arange...): they have no tensor argument to take a backend from, so its
//   kernel reads the `device` argument, adds that backend's key and
//   redispatches. Other ops fall through it.
// - Autograd sits above all of them: it must see the call first, record the
//   graph node, and only then let the backend compute (by redispatching below
//   itself). Tensors that require grad contribute it; NoGradGuard excludes it.
//   Until floor 4 exists, every op falls through it.
enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU = 1,            // host kernels, run on the calling thread
  Sim = 2,            // the simulated device
  CUDA = 3,           // a real NVIDIA GPU
  BackendSelect = 4,  // factories: pick the backend from the device argument
  Autograd = 5,       // record the graph, then redispatch below
};
constexpr int kNumDispatchKeys = 6;

const char* dispatch_key_name(DispatchKey k);  // "CPU", "Sim", ...

// A set of keys as a bitmask: bit k is DispatchKey k. The highest set bit is
// the key that runs.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(k == DispatchKey::Undefined ? 0 : uint32_t(1) << int(k)) {}
  constexpr static DispatchKeySet from_bits(uint32_t b) { DispatchKeySet s; s.bits_ = b; return s; }

  constexpr uint32_t bits() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool has(DispatchKey k) const { return (bits_ >> int(k)) & 1; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_bits(bits_ & o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  constexpr bool operator==(const DispatchKeySet&) const = default;

  // The highest-priority key, Undefined when empty.
  constexpr DispatchKey highest() const {
    return bits_ == 0 ? DispatchKey::Undefined : DispatchKey(31 - std::countl_zero(bits_));
  }
  // The keys strictly below k (what a kernel at k redispatches to).
  constexpr DispatchKeySet below(DispatchKey k) const { return from_bits(bits_ & ((uint32_t(1) << int(k)) - 1)); }

  std::string str() const;      // "Autograd|CPU"
  const char* name() const;     // the same, interned: safe as a span argument

 private:
  uint32_t bits_ = 0;
};

}  // namespace descent
