// Names of dispatch keys and key sets.
#include <array>
#include <atomic>

#include "floors/dispatch/dispatch_key.h"
#include "tracer/tracer.h"

namespace descent {

const char* dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined: return "Undefined";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::Sim: return "Sim";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::BackendSelect: return "BackendSelect";
    case DispatchKey::Autograd: return "Autograd";
  }
  return "?";
}

std::string DispatchKeySet::str() const {
  if (empty()) return "{}";
  std::string s;
  for (int k = kNumDispatchKeys - 1; k > 0; --k) {
    if (!has(DispatchKey(k))) continue;
    if (!s.empty()) s += '|';
    s += dispatch_key_name(DispatchKey(k));
  }
  return s;
}

// One interned name per possible set, computed the first time it is asked for.
const char* DispatchKeySet::name() const {
  static std::array<std::atomic<const char*>, (1u << kNumDispatchKeys)> names{};
  uint32_t b = bits_ & ((1u << kNumDispatchKeys) - 1);
  const char* n = names[b].load(std::memory_order_acquire);
  if (!n) {
    n = trace::intern(str());
    names[b].store(n, std::memory_order_release);
  }
  return n;
}

}  // namespace descent
