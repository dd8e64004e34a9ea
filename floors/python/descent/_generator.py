"""descent.Generator, as torch.Generator: a CPU random stream of its own,
passed as generator= to the random ops (Note [A Generator is a saved CPU
stream], floors/binding/op_table.cpp).

    g = descent.Generator().manual_seed(0)
    descent.rand(3, generator=g)      # torch.rand(3, generator=torch.Generator().manual_seed(0))'s numbers

A call given a generator draws from it and leaves the default stream (the one
descent.manual_seed seeds) where it was. Only CPU generators exist: a device
draws from its own counters (Note [Counter-based random numbers]).

Note [generator= is read in Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
In PyTorch, generator= is an argument of the schema (Generator? generator)
and torch.rand is a C function. descent's schemas have no Generator type, so
the random ops (RANDOM_FUNCTIONS, RANDOM_METHODS below) are wrapped here in
Python: descent.rand is a function whose __wrapped__ is the C one, and it
prints as a Python function where torch's prints as a built-in method. The
ops' schemas and traces are otherwise the same.
"""
import functools

from . import _C

# torch's default_rng_seed_val: the seed of a Generator that was never seeded.
_DEFAULT_SEED = 67280421310721


class Generator:
    """A CPU random stream: mt19937 and its cached normal, as torch's CPUGeneratorImpl."""

    def __init__(self, device="cpu"):
        if str(device) != "cpu":
            raise RuntimeError(f"descent.Generator: only CPU generators exist (a device draws from its own "
                               f"counters), got device '{device}'")
        self.device = _C.device("cpu")
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        """Seeds the stream (as torch: the low 32 bits seed mt19937) and returns the generator."""
        if not isinstance(seed, int):
            raise TypeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        self._seed = seed
        self._state = _C._cpu_rng_seeded(seed)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """A fresh nondeterministic seed, set and returned (torch's Generator.seed)."""
        import random
        return self.manual_seed(random.SystemRandom().getrandbits(63)).initial_seed()

    def get_state(self):
        """The stream's state as a uint8 tensor (its bytes), for set_state."""
        return _C._tensor(list(self._state), _C.uint8)

    def set_state(self, new_state):
        self._state = bytes(new_state.tolist())
        return self

    def __repr__(self):
        return f"<descent._C.Generator object at {id(self):#x}>"


def _drawing_from(fn):
    """fn taking generator=: with one, its draws come from that generator's stream."""
    @functools.wraps(fn)
    def call(*args, generator=None, **kwargs):
        if generator is None:
            return fn(*args, **kwargs)
        if not isinstance(generator, Generator):
            raise TypeError(f"{fn.__name__}(): argument 'generator' must be torch.Generator, not "
                            f"{type(generator).__name__}")
        saved = _C._cpu_rng_state()
        _C._set_cpu_rng_state(generator._state)
        try:
            return fn(*args, **kwargs)
        finally:
            generator._state = _C._cpu_rng_state()
            _C._set_cpu_rng_state(saved)
    return call


# The random ops of torch that take generator=: functions of descent, and methods of Tensor.
RANDOM_FUNCTIONS = ("rand", "randn", "randint", "randperm", "multinomial", "rand_like", "randn_like", "randint_like")
RANDOM_METHODS = ("uniform_", "normal_", "random_", "multinomial")
