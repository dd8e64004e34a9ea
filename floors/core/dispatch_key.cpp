// Dispatch keys and key sets: names, the highest key, printing.
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "floors/core/dispatch_key.h"

namespace descent {

const char* dispatch_key_name(DispatchKey k) {
  static constexpr const char* kNames[kNumDispatchKeys] = {"Undefined",
                                                           "CPU",
                                                           "CUDA",
                                                           "Sim",
                                                           "BackendSelect",
                                                           "Python",
                                                           "ADInplaceOrView",
                                                           "AutogradCPU",
                                                           "AutogradCUDA",
                                                           "AutogradSim",
                                                           "AutocastCPU",
                                                           "AutocastCUDA",
                                                           "AutocastSim",
                                                           "Autograd",
                                                           "CompositeExplicitAutograd",
                                                           "CompositeImplicitAutograd"};
  const int i = int(k);
  return i >= 0 && i < kNumDispatchKeys ? kNames[i] : "?";
}

Functionality functionality_of(DispatchKey k) {
  const DispatchKeySet s(k);
  return s.highest_functionality();
}

BackendComponent backend_of(DispatchKey k) {
  if (!is_per_backend(functionality_of(k))) return BackendComponent::Invalid;
  return DispatchKeySet(k).highest_backend();
}

DispatchKey per_backend_key(Functionality f, BackendComponent b) {
  if (b == BackendComponent::Invalid) return DispatchKey::Undefined;
  const int off = int(b) - 1;
  if (f == Functionality::Dense) return DispatchKey(int(DispatchKey::CPU) + off);
  if (f == Functionality::AutogradFunctionality) return DispatchKey(int(DispatchKey::AutogradCPU) + off);
  return DispatchKey::Undefined;
}

DispatchKey DispatchKeySet::highest() const {
  const Functionality f = highest_functionality();
  if (f == Functionality::None) return DispatchKey::Undefined;
  if (is_per_backend(f)) return per_backend_key(f, highest_backend());
  // The functionality keys that are not per backend, in enum order.
  switch (f) {
    case Functionality::BackendSelect:
      return DispatchKey::BackendSelect;
    case Functionality::Python:
      return DispatchKey::Python;
    case Functionality::ADInplaceOrView:
      return DispatchKey::ADInplaceOrView;
    case Functionality::AutocastCPU:
      return DispatchKey::AutocastCPU;
    case Functionality::AutocastCUDA:
      return DispatchKey::AutocastCUDA;
    case Functionality::AutocastSim:
      return DispatchKey::AutocastSim;
    default:
      return DispatchKey::Undefined;
  }
}

namespace {

// The runtime keys of a set, lowest priority first: functionality by
// functionality, and within a per-backend one, backend by backend.
std::vector<DispatchKey> runtime_keys(DispatchKeySet s) {
  std::vector<DispatchKey> out;
  for (int f = 1; f <= kNumFunctionalities; ++f) {
    if (!s.has_functionality(Functionality(f))) continue;
    if (!is_per_backend(Functionality(f))) {
      out.push_back(DispatchKeySet::functionality(Functionality(f)).highest());
      continue;
    }
    for (int b = 1; b <= kNumBackends; ++b) {
      if ((s & DispatchKeySet::backend(BackendComponent(b))).empty()) continue;
      out.push_back(per_backend_key(Functionality(f), BackendComponent(b)));
    }
  }
  return out;
}

std::string joined(DispatchKeySet s, const char* sep) {
  std::string out;
  for (DispatchKey k : runtime_keys(s)) {
    if (!out.empty()) out += sep;
    out += dispatch_key_name(k);
  }
  return out;
}

}  // namespace

std::string DispatchKeySet::str() const { return joined(*this, ", "); }

// One name per possible set, computed the first time it is asked for and
// never freed, so that it lives as long as an interned string (core is below
// the tracer and cannot intern): two threads asking at once build it twice,
// and the one that loses the exchange frees its copy.
const char* DispatchKeySet::name() const {
  constexpr int kBits = kNumBackends + kNumFunctionalities;
  static std::array<std::atomic<const char*>, (size_t(1) << kBits)> names{};
  const uint32_t b = repr_ & ((uint32_t(1) << kBits) - 1);
  const char* n = names[b].load(std::memory_order_acquire);
  if (!n) {
    // The table holds the allocation itself (not a string object around it),
    // so the leak checker sees every name reachable from a static at exit.
    const std::string text = empty() ? std::string("{}") : joined(*this, "|");
    char* made = new char[text.size() + 1];
    std::memcpy(made, text.c_str(), text.size() + 1);
    if (names[b].compare_exchange_strong(n, made, std::memory_order_acq_rel))
      n = made;
    else
      delete[] made;  // n is the winner's
  }
  return n;
}

DispatchKeySet tensor_keys(BackendComponent b, bool inference) {
  DispatchKeySet ks = DispatchKeySet(per_backend_key(Functionality::Dense, b));
  if (!inference) {
    ks = ks | DispatchKeySet(DispatchKey::ADInplaceOrView) |
         DispatchKeySet(per_backend_key(Functionality::AutogradFunctionality, b));
  }
  switch (b) {
    case BackendComponent::CPU:
      return ks.add(DispatchKey::AutocastCPU);
    case BackendComponent::CUDA:
      return ks.add(DispatchKey::AutocastCUDA);
    case BackendComponent::Sim:
      return ks.add(DispatchKey::AutocastSim);
    default:
      return ks;
  }
}

DispatchKeySet alias_runtime_keys(DispatchKey k) {
  const DispatchKeySet all_backends = DispatchKeySet::backend(BackendComponent::CPU) |
                                      DispatchKeySet::backend(BackendComponent::CUDA) |
                                      DispatchKeySet::backend(BackendComponent::Sim);
  const DispatchKeySet dense = DispatchKeySet::functionality(Functionality::Dense) | all_backends;
  switch (k) {
    case DispatchKey::Autograd:
      return kAutogradKeys;
    case DispatchKey::CompositeExplicitAutograd:
      return dense;
    case DispatchKey::CompositeImplicitAutograd:
      return dense | kAutogradKeys;
    default:
      return DispatchKeySet(k);
  }
}

}  // namespace descent
