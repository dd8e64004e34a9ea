// Registering kernels as PyTorch does (torch/library.h): a library per
// namespace and key, with impl() for one operator and fallback() for all.
//
// [SECTION] Library
//
// Note [Registering kernels like TORCH_LIBRARY_IMPL]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In PyTorch, TORCH_LIBRARY(aten, m) { m.def("add.Tensor(...)"); } defines
// operators, and TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("add.Tensor", k); }
// gives them kernels, each from the file that owns the kernel, run when the
// library loads. descent does the same with one difference: the op table
// (ops.h) is the one source of truth for which operators exist and which
// keys must have kernels, so the built-in operators are defined by their
// rows, not by def() calls (def() defines operators beyond the table, such
// as a test's or a lesson's). A library for a key gives:
//   - impl(name, kernel): the kernel of one operator at the library's key
//     (an alias key, Autograd or CompositeImplicitAutograd, registers it at
//     every runtime key it stands for);
//   - fallback(kernel): the kernel of every operator that has none of its
//     own at that key, or Fallthrough: the key is skipped for them
//     (ADInplaceOrView and Autograd until floor 4, the Autocast keys,
//     BackendSelect for ops that are not factories).
// Registration takes a lock and may run on any thread; a call reads the
// kernel table without one, so registering while another thread calls the
// same op is only safe for tests that wait. Once every floor has
// registered, each row's declared keys are checked: a kernel the table
// promises and nobody registered is an error at start-up, naming the
// operator, never a surprise at its first call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "floors/dispatch/dispatcher.h"

namespace descent {

// [SECTION] Library ----------------------------------------------------------

class Library {
 public:
  enum Kind {
    DEF,   // defines operators in a namespace (TORCH_LIBRARY)
    IMPL,  // registers kernels for one key (TORCH_LIBRARY_IMPL); ns "_" for fallbacks only
  };
  // `file` and `line` default to the constructing call's: where _dispatch_dump says a kernel was registered.
  Library(Kind kind, std::string ns, DispatchKey key = DispatchKey::Undefined, const char* file = __builtin_FILE(),
          int line = __builtin_LINE());

  // Defines an operator beyond the op table from its schema
  // ("ns::name.overload(...) -> ..."), in this library's namespace. Its
  // kernels come from impl() like any other. TypeError/ValueError for a
  // malformed schema, a wrong namespace or a name already defined.
  Library& def(const std::string& schema);
  // Registers `k` as the kernel of operator `name` ("add.Tensor" or
  // "aten::add.Tensor") at this library's key. ValueError for an unknown
  // operator, naming it, and for a second kernel at the same key.
  Library& impl(const std::string& name, Kernel k);
  Library& impl(Op op, Kernel k);  // the same for a row of the op table, by its id
  // Registers `k` for every operator at this library's key, below their own kernels.
  Library& fallback(Kernel k);

  DispatchKey key() const { return key_; }
  const std::string& ns() const { return ns_; }

 private:
  Kind kind_;
  std::string ns_;
  DispatchKey key_;
  std::string where_;  // "file:line", for errors
};

// An operator by its name ("aten::add.Tensor", or without the namespace):
// a row of the op table or one defined by Library::def; nullptr when unknown.
const OpEntry* find_operator(std::string_view name);
// Recomputes the kernels of the operators Library::def made, after a key's
// fallback changed (the table's own are the dispatcher's to refresh).
void refresh_defined_ops();
// Every overload of an operator name without one ("aten::max": aten::max and
// aten::max.dim), rows of the table first; empty when there is none.
std::vector<const OpEntry*> find_overloads(std::string_view qualified_name);

// The keys of a row's `dispatch` column (Note [One op table]), in order:
// "BackendSelect, CPU" -> {BackendSelect, CPU}. ValueError for a name that
// is not a key.
std::vector<DispatchKey> declared_keys(std::string_view dispatch);
// Checks one operator against a declaration: each declared key must hold one
// of `op`'s own kernels (a fallback does not count). An alias key stands for
// its runtime keys on the CPU backend (CompositeImplicitAutograd: CPU and
// AutogradCPU), descent's only backend with kernels. Throws Error naming the
// operator and the key that has none. Pure: tests call it on a copy of an
// entry with a declaration of their own.
void check_declared_kernels(const OpEntry& op, std::string_view dispatch);
// Checks every row of the op table against its own declaration (Note
// [Registering kernels like TORCH_LIBRARY_IMPL]). Run by register_floors,
// once every floor has registered (Note [Registering the floors]).
void check_declared_kernels();

}  // namespace descent
