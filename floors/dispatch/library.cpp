// Registering kernels as PyTorch does. See Note [Registering kernels like
// TORCH_LIBRARY_IMPL] (library.h).
#include "floors/dispatch/library.h"

#include <deque>
#include <mutex>

#include "tracer/tracer.h"

namespace descent {

namespace {

// Operators defined by Library::def, beyond the table. A deque: entries
// never move, so a pointer to one stays valid while more are defined.
std::deque<OpEntry>& defined_ops() {
  static std::deque<OpEntry> ops;
  return ops;
}
std::mutex& defined_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

// The site as a path from the repository's root ("floors/kernels/register_kernels.cpp:40"):
// __builtin_FILE() is the path the compiler was given, absolute in descent's build.
static std::string site_of(const char* file, int line) {
  if (!*file) return "";
  std::string_view f(file);
  if (const size_t at = f.rfind("/floors/"); at != std::string_view::npos) f.remove_prefix(at + 1);
  return std::string(f) + ":" + std::to_string(line);
}

Library::Library(Kind kind, std::string ns, DispatchKey key, const char* file, int line)
    : kind_(kind), ns_(std::move(ns)), key_(key), where_(site_of(file, line)) {
  if (where_.empty()) where_ = (kind == DEF ? "library " : "library impl ") + ns_ + "/" + dispatch_key_name(key);
  DESCENT_CHECK(kind == DEF || key != DispatchKey::Undefined, ValueError, where_, ": an IMPL library needs a key");
}

const OpEntry* find_operator(std::string_view name) {
  for (const OpEntry& e : ops_for_registration()) {
    if (name == e.name ||
        (name.find("::") == std::string_view::npos && e.schema.ns + "::" + std::string(name) == e.name))
      return &e;
  }
  std::lock_guard<std::mutex> lock(defined_mutex());
  for (const OpEntry& e : defined_ops()) {
    if (name == e.name ||
        (name.find("::") == std::string_view::npos && e.schema.ns + "::" + std::string(name) == e.name))
      return &e;
  }
  return nullptr;
}

void refresh_defined_ops() {
  std::lock_guard<std::mutex> lock(defined_mutex());
  for (OpEntry& e : defined_ops()) e.refresh();
}

std::vector<const OpEntry*> find_overloads(std::string_view qualified_name) {
  std::vector<const OpEntry*> found;
  for (const OpEntry& e : ops_for_registration())
    if (e.schema.qualified_name() == qualified_name) found.push_back(&e);
  std::lock_guard<std::mutex> lock(defined_mutex());
  for (const OpEntry& e : defined_ops())
    if (e.schema.qualified_name() == qualified_name) found.push_back(&e);
  return found;
}

Library& Library::def(const std::string& schema) {
  DESCENT_CHECK(kind_ == DEF, ValueError, where_, ": def() needs a DEF library");
  Schema parsed = parse_schema(schema);
  if (parsed.ns.empty()) parsed.ns = ns_;
  DESCENT_CHECK(parsed.ns == ns_, ValueError, where_, ": cannot define '", parsed.full_name(), "' in namespace '", ns_,
                "'");
  DESCENT_CHECK(find_operator(parsed.full_name()) == nullptr, ValueError, where_, ": '", parsed.full_name(),
                "' is already defined");
  std::lock_guard<std::mutex> lock(defined_mutex());
  OpEntry& e = defined_ops().emplace_back();
  e.id = Op(kNumOps);  // not a row of the table
  e.kind = OpKind::Unary;
  e.exactness = Exactness::Exact;
  e.domain = Domain::Any;
  e.sample = "";
  e.dispatch = "";  // nothing declared: kernels come as they are registered
  e.schema = std::move(parsed);
  e.name = trace::intern(e.schema.full_name());
  e.profiler_name = trace::intern(e.schema.qualified_name());
  e.python_name = trace::intern(e.schema.name);
  e.refresh();  // the fallbacks apply to it as to every op
  return *this;
}

Library& Library::impl(const std::string& name, Kernel k) {
  DESCENT_CHECK(kind_ == IMPL, ValueError, where_, ": impl() needs an IMPL library");
  const OpEntry* e = find_operator(name.find("::") == std::string::npos ? ns_ + "::" + name : name);
  DESCENT_CHECK(e != nullptr, ValueError, where_, ": no operator named '", name, "' to register a ",
                dispatch_key_name(key_), " kernel for");
  register_op_kernel(const_cast<OpEntry&>(*e), key_, k, where_);
  return *this;
}

Library& Library::impl(Op op, Kernel k) {
  DESCENT_CHECK(kind_ == IMPL, ValueError, where_, ": impl() needs an IMPL library");
  register_op_kernel(mutable_op_entry(op), key_, k, where_);
  return *this;
}

Library& Library::fallback(Kernel k) {
  DESCENT_CHECK(kind_ == IMPL, ValueError, where_, ": fallback() needs an IMPL library");
  register_fallback(key_, k, where_);
  return *this;
}

std::vector<DispatchKey> declared_keys(std::string_view dispatch) {
  std::vector<DispatchKey> keys;
  size_t pos = 0;
  while (pos < dispatch.size()) {
    size_t comma = dispatch.find(',', pos);
    std::string_view name =
        dispatch.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    bool found = false;
    for (int k = 1; k <= kNumDispatchKeys && !found; ++k) {
      if (name == dispatch_key_name(DispatchKey(k))) {
        keys.push_back(DispatchKey(k));
        found = true;
      }
    }
    DESCENT_CHECK(found, ValueError, "dispatch: '", name, "' is not a dispatch key (in \"", dispatch, "\")");
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return keys;
}

void check_declared_kernels(const OpEntry& op, std::string_view dispatch) {
  for (DispatchKey declared : declared_keys(dispatch)) {
    // The runtime keys the declaration promises a kernel at: an alias's on the CPU backend.
    DispatchKeySet runtime = is_alias(declared) ? alias_runtime_keys(declared) : DispatchKeySet(declared);
    for (int k = 1; k <= kNumRuntimeKeys; ++k) {
      const DispatchKey rk = DispatchKey(k);
      if (!runtime.has(rk)) continue;
      if (is_alias(declared) && backend_of(rk) != BackendComponent::CPU) continue;
#ifndef DESCENT_HAVE_CUDA
      if (backend_of(rk) == BackendComponent::CUDA) continue;  // no CUDA tensor can exist in this build
#endif
      DESCENT_CHECK(op.own_kernels[runtime_slot(rk)] != nullptr, Error, "'", op.name, "' declares a kernel for ",
                    dispatch_key_name(declared), " (dispatch: \"", dispatch, "\") but none is registered at ",
                    dispatch_key_name(rk));
    }
  }
}

void check_declared_kernels() {
  for (const OpEntry& e : ops_for_registration()) check_declared_kernels(e, e.dispatch);
}

}  // namespace descent
