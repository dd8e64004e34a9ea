"""descent.library, as torch.library: define operators and give them kernels from Python.

    # A kernel of your own for an operator that exists: every CPU add now runs my_add.
    lib = descent.library.Library("aten", "IMPL")
    lib.impl("add.Tensor", my_add, "CPU")       # my_add(self, other, alpha) -> Tensor
    ...
    lib._destroy()                              # the built-in kernel comes back

    # A new operator, with a kernel per key, called through descent.ops.
    lib = descent.library.Library("mylib", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    descent.ops.mylib.twice(x)

A Python kernel takes the operator's arguments in its schema's order (as the
stack holds them: defaults filled in), those after the schema's `*` as
keywords (add.Tensor's alpha=...), as PyTorch hands them, and returns a Tensor, or a tuple of
them for an operator with several results. It runs at its key like any
kernel: the dispatcher picks it, its span is floor 5's with variant=python,
and the ops it calls descend the floors beneath it (Note [Python kernels],
floors/binding/library_object.cpp). A kernel registered over a built-in one
replaces it until the library is destroyed (`_destroy()`, or when the Library
object is collected), as in PyTorch.

    # A fallback: every operator without a CPU kernel of its own runs it.
    lib = descent.library.Library("_", "IMPL")
    lib.fallback(lambda op, *args: ..., "CPU")  # op: the operator, a descent.ops OpOverload
    lib.fallback(descent.library.fallthrough_kernel, "AutocastCPU")  # the dispatcher skips the key

What descent does not have of torch.library: impl_abstract/register_fake,
custom_op, with_keyset=True, and keys beyond descent's (its keys: CPU, Sim, CUDA, their Autograd keys, the
aliases Autograd and CompositeImplicitAutograd, BackendSelect, ADInplaceOrView).
"""
from . import _C

__all__ = ["Library", "fallthrough_kernel"]


def fallthrough_kernel():
    """A dummy function to pass to Library.impl or Library.fallback in order to register a fallthrough:
    the dispatcher skips the key and goes on to the next one, as torch.library.fallthrough_kernel."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class Library:
    """Library(ns, kind, dispatch_key=""): kind "DEF" defines operators in the namespace `ns` (and may give
    them kernels), "IMPL" only gives kernels, to `ns`'s operators; "FRAGMENT" does both, as "DEF" does here.
    `dispatch_key` is the key impl() uses when it is given none."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind} (DEF, IMPL or FRAGMENT)")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"a library's namespace must be an identifier, not {ns!r}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._handles = []

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Defines an operator from its schema ("twice(Tensor x) -> Tensor") in this library's namespace;
        returns its name. ValueError for a malformed schema or a name already defined."""
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed on an IMPL library: use a DEF or FRAGMENT one")
        return _C._library_define(self.ns, schema)

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Registers `fn` as the kernel of operator `op_name` ("add.Tensor", or "aten::add.Tensor") at
        `dispatch_key` (this library's own key by default, else CompositeImplicitAutograd, as in PyTorch)."""
        if with_keyset:
            raise NotImplementedError("impl(with_keyset=True): descent's Python kernels are not handed the key set")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        fn_name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        self._handles.append(_C._library_impl(name, key, None if fn is fallthrough_kernel else fn, fn_name))

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        """Registers `fn` as the fallback of `dispatch_key`: every operator without a kernel of its own at the
        key runs fn(op, *args), op being the operator (a descent.ops OpOverload). fallthrough_kernel makes the
        key one the dispatcher skips. Only a library of the global namespace "_" registers fallbacks."""
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if self.ns != "_":
            raise RuntimeError("Fallback can only be registered using library fragment on the global namespace "
                               f'"_" but it is {self.ns}')
        if dispatch_key == "":
            raise AssertionError("dispatch_key must not be empty for fallback")
        if with_keyset:
            raise NotImplementedError("fallback(with_keyset=True): descent's Python kernels are not handed the key set")
        fn_name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        self._handles.append(_C._library_fallback(dispatch_key, None if fn is fallthrough_kernel else fn, fn_name))

    def _destroy(self):
        """Removes every kernel this library registered, putting back what each replaced. (Operators it
        defined stay defined, without those kernels.)"""
        while self._handles:
            _C._library_remove(self._handles.pop())

    def __del__(self):
        try:
            self._destroy()
        except Exception:  # noqa: BLE001  (interpreter shutdown: the module may be gone)
            pass
