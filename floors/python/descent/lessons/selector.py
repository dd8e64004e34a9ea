"""Selectors: what a lesson points at in a trace, and how a prediction's answer is computed from it.

A selector is a line of `key=value` words (a value with spaces is quoted):

    floor=3 span=aten::add arg=kernel            the kernel= of the first floor-3 aten::add
    floor=6 span=caching_alloc nth=2 arg=hit     the second caching_alloc's hit=
    span=aten::add arg.redispatch=true           the aten::add span whose redispatch= is true
    floor=8 under="y = x + 1"                    a launch inside the statement y = x + 1
    floor=9 kernel=mul_float32                   the device's own span of the kernel mul_float32

    floor=N       1-9 or the floor's name (python, binding, dispatch, autograd, kernels,
                  allocator, streams, launch, device)
    span=NAME     the span's name; * and ? match any text / one character
    under=NAME    some span around it has this name (a statement's text, an op)
    kernel=NAME   a launch (floor 8) of this kernel, or the device's span of one (floor 9), joined to
                  its launch by the correlation id: on a GPU the device's span is named by the kernel's
                  symbol, so `kernel=` finds it on sim:0 and on CUDA alike
    arg.KEY=VAL   it has the argument KEY with this value (true/false for a flag; * for any value)
    nth=K         the K-th span that matches, in the order they began (1 = the first, -1 = the last)
    arg=KEY       what the selector reads: that argument of the span (else the span itself)

An answer (a prediction's `answer:`) is a selector, or one of
    count SELECTOR        how many spans match
    duration SELECTOR     the span's time in nanoseconds
    python EXPRESSION     an expression over the step's variables and the helpers
                          span(sel), spans(sel), count(sel), arg(sel), trace, output, error
so the right answer is always read off what ran (Note [Answers come from the run]).

Note [Answers come from the run]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A lesson that wrote its answers in ("the kernel is AutogradCPU") would go on
teaching them after the runtime changed. So a prediction holds no answer,
only where to read it: the validator (`descent lesson --validate`) runs every
step and fails a lesson whose selector finds nothing, whose answer cannot be
computed, or whose computed answer is none of its choices. An answer that
depends on the machine (a time, a library's size) is read the same way, and
a typed number is judged with the prediction's tolerance.
"""
import fnmatch
import functools
import math
import re

FLOORS = {"python": 1, "binding": 2, "dispatch": 3, "autograd": 4, "kernels": 5, "allocator": 6,
          "streams": 7, "launch": 8, "device": 9}
SELECTOR_KEYS = ("floor", "span", "under", "kernel", "nth", "arg")


class SelectorError(ValueError):
    """A selector, answer or tolerance that does not parse (the lesson file is wrong)."""


class NoMatch(LookupError):
    """A selector that finds nothing in a trace (the lesson and the runtime disagree)."""


def text_of(value):
    """How a value is shown and compared: flags as true/false, numbers as Python writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


class Selector:
    def __init__(self, text, floor=None, span=None, under=None, args=(), nth=1, arg=None, kernel=None):
        self.text, self.floor, self.span, self.under, self.kernel = text, floor, span, under, kernel
        self.args, self.nth, self.arg = list(args), nth, arg

    def __repr__(self):
        return f"Selector({self.text!r})"

    @staticmethod
    @functools.lru_cache(maxsize=1024)
    def parse(text):
        """The Selector a line of key=value words makes (remembered: selectors are read again and again,
        and never changed once made); SelectorError naming what is wrong."""
        cls = Selector
        words = _words(text)
        if not words:
            raise SelectorError("expected a selector such as 'floor=3 span=aten::add arg=kernel', found nothing")
        sel = cls(text)
        seen = set()
        for w in words:
            key, eq, value = w.partition("=")
            if not eq:
                raise SelectorError(f"expected key=value in the selector, found {w!r} (keys: floor, span, under, "
                                    "kernel, arg.KEY, nth, arg)")
            if not value:
                raise SelectorError(f"expected a value after '{key}=' in the selector")
            if key.startswith("arg."):
                name = key[4:]
                if not name:
                    raise SelectorError("expected an argument's name after 'arg.' in the selector")
                sel.args.append((name, value))
                continue
            if key not in SELECTOR_KEYS:
                raise SelectorError(f"unknown key '{key}' in the selector: expected floor, span, under, kernel, "
                                    "arg.KEY, nth or arg")
            if key in seen:
                raise SelectorError(f"'{key}=' is given twice in the selector")
            seen.add(key)
            if key == "floor":
                if value.isdigit() and 1 <= int(value) <= 9:
                    sel.floor = int(value)
                elif value in FLOORS:
                    sel.floor = FLOORS[value]
                else:
                    raise SelectorError(f"expected a floor 1-9 or one of {', '.join(FLOORS)} after 'floor=', "
                                        f"found {value!r}")
            elif key == "nth":
                try:
                    sel.nth = int(value)
                except ValueError:
                    sel.nth = 0
                if sel.nth == 0 or abs(sel.nth) > 1_000_000:
                    raise SelectorError(f"expected a whole number after 'nth=' (1 for the first, -1 for the last), "
                                        f"found {value!r}")
            else:
                setattr(sel, key, value)
        return sel

    def matches(self, span, spans):
        if self.floor is not None and span.floor != self.floor:
            return False
        if self.span is not None and not _like(span.name, self.span):
            return False
        if self.kernel is not None and not _like(spans.kernel_of.get(span.id) or "", self.kernel):
            return False
        for key, want in self.args:
            if key not in span.args or not _like(text_of(span.args[key]), want):
                return False
        if self.under is not None:
            p = spans.by_id.get(span.parent)
            while p is not None:
                if _like(p.name, self.under):
                    break
                p = spans.by_id.get(p.parent)
            else:
                return False
        return True

    def all(self, spans):
        """Every span that matches, in the order they began."""
        return [s for s in spans.list if self.matches(s, spans)]

    def one(self, spans):
        """The nth span that matches; NoMatch saying what there was when there is none."""
        found = self.all(spans)
        k = self.nth - 1 if self.nth > 0 else len(found) + self.nth
        if not 0 <= k < len(found):
            raise NoMatch(self._miss(spans, found))
        return found[k]

    def value(self, spans):
        """What the selector reads: the argument named by arg=, else the span."""
        s = self.one(spans)
        if self.arg is None:
            return s
        if self.arg not in s.args:
            have = ", ".join(sorted(s.args)) or "no arguments"
            raise NoMatch(f"the span {s.describe()} has no argument '{self.arg}' (it has: {have})")
        return s.args[self.arg]

    def _miss(self, spans, found):
        if found:
            return f"the selector '{self.text}' matched {len(found)} span(s), so there is no nth={self.nth}"
        near = [s for s in spans.list if self.floor is None or s.floor == self.floor]
        names = sorted({s.name for s in near})
        where = f"floor {self.floor}" if self.floor is not None else "the trace"
        listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return f"the selector '{self.text}' matched no span ({where} has: {listed or 'no spans'})"


def _words(text):
    """The line split at spaces, except inside "..." or '...' (the quotes removed), as a shell would."""
    words, word, quote, has_word = [], [], None, False
    for ch in text:
        if quote is not None:
            if ch == quote:
                quote = None
            else:
                word.append(ch)
        elif ch in "\"'":
            quote, has_word = ch, True
        elif ch.isspace():
            if has_word:
                words.append("".join(word))
                word, has_word = [], False
        else:
            word.append(ch)
            has_word = True
    if quote is not None:
        raise SelectorError(f"expected a closing {quote} in the selector {text!r}")
    if has_word:
        words.append("".join(word))
    return words


def _like(text, pattern):
    """Equal, or matched by a pattern with * and ?."""
    if "*" in pattern or "?" in pattern or "[" in pattern:
        return fnmatch.fnmatchcase(text, pattern)
    return text == pattern


class Span:
    """One span of a trace, read-only: name, floor, floor_name, args, start_ns, end_ns, duration_ns,
    id, parent, thread, file, line. Also reads like the dict Trace.spans() gives (span["args"])."""
    __slots__ = ("_d",)

    def __init__(self, d):
        self._d = d

    def __getattr__(self, key):
        try:
            return self._d[key]
        except KeyError:
            raise AttributeError(key) from None

    def __getitem__(self, key):
        return self._d[key]

    @property
    def duration_ns(self):
        return self._d["end_ns"] - self._d["start_ns"]

    def describe(self):
        """One line, as the tree shows it: [3 dispatch ] aten::add  keyset=... kernel=..."""
        args = " ".join(f"{k}={text_of(v)}" for k, v in self._d["args"].items())
        return f"[{self.floor} {self.floor_name:9}] {self.name}" + (f"  {args}" if args else "")

    def __repr__(self):
        return f"<span {self.describe()}>"


class Spans:
    """A trace's spans, for selectors: .list in the order they began, .by_id, and .kernel_of: the kernel
    each launch (floor 8) and each device span of a launch (floor 9, by its correlation id) is of."""

    def __init__(self, trace):
        raw = trace.spans() if trace is not None else []
        self.list = sorted((Span(d) for d in raw), key=lambda s: (s.start_ns, s.id))
        self.by_id = {s.id: s for s in self.list}
        launches = {s.args["correlation"]: s.args["kernel"] for s in self.list
                    if s.floor == 8 and "correlation" in s.args and "kernel" in s.args}
        self.kernel_of = {}
        for s in self.list:
            if s.floor == 8 and "kernel" in s.args:
                self.kernel_of[s.id] = s.args["kernel"]
            elif s.floor == 9 and s.args.get("correlation") in launches:
                self.kernel_of[s.id] = launches[s.args["correlation"]]


class Answer:
    """How a prediction's right answer is read: kind is "value", "count", "duration" or "python"."""

    def __init__(self, text, kind, selector=None, expression=None):
        self.text, self.kind, self.selector, self.expression = text, kind, selector, expression

    @classmethod
    def parse(cls, text):
        word, _, rest = text.strip().partition(" ")
        if word == "python":
            rest = rest.strip()
            if not rest:
                raise SelectorError("expected a Python expression after 'python'")
            from .format import compile_cached
            try:
                return cls(text, "python", expression=compile_cached(rest, "<answer>", "eval"))
            except SyntaxError as e:
                raise SelectorError(f"expected a Python expression after 'python': {e.msg}") from None
            except (ValueError, OverflowError, RecursionError, MemoryError) as e:
                raise SelectorError(f"expected a Python expression after 'python': {e}") from None
        if word in ("count", "duration"):
            sel = Selector.parse(rest)
            if word == "count" and (sel.arg is not None or sel.nth != 1):
                raise SelectorError("'count' counts every span that matches: it takes no arg= or nth=")
            return cls(text, word, selector=sel)
        sel = Selector.parse(text)
        if sel.arg is None:
            raise SelectorError("expected 'arg=KEY' in the answer's selector (what to read from the span), "
                                "or 'count SELECTOR', 'duration SELECTOR' or 'python EXPRESSION'")
        return cls(text, "value", selector=sel)

    def compute(self, spans, namespace):
        """The right answer, from the step's spans (a Spans) and its namespace (helpers included)."""
        if self.kind == "python":
            return eval(self.expression, namespace)  # noqa: S307  (the lesson's own expression)
        if self.kind == "count":
            return len(self.selector.all(spans))
        if self.kind == "duration":
            return self.selector.one(spans).duration_ns
        return self.selector.value(spans)


def helpers(spans, trace, output="", error=None):
    """The names an answer's or a check's expression may use besides the step's own variables."""
    def span(text):
        return Selector.parse(text).one(spans)

    def all_spans(text):
        return Selector.parse(text).all(spans)

    def count(text):
        return len(Selector.parse(text).all(spans))

    def arg(text):
        return Selector.parse(text).value(spans)

    def roofline(text):
        """Where the span a selector names sits on its device's roofline (Note [A roofline for every kernel span]):
        a dict with bound ("overhead", "memory", "compute"), fraction, intensity, ridge, bytes, flops, seconds."""
        return trace.roofline(span(text).id)

    return {"span": span, "spans": all_spans, "count": count, "arg": arg, "roofline": roofline, "trace": trace,
            "output": output, "error": error}


class Tolerance:
    """How far a typed number may be from the answer: `5` (absolute), `10%` (relative) or `x3` (a factor)."""

    def __init__(self, text, kind, amount):
        self.text, self.kind, self.amount = text, kind, amount

    @classmethod
    def parse(cls, text):
        t = text.strip()
        try:
            if t.endswith("%"):
                kind, amount = "relative", float(t[:-1]) / 100
            elif t[:1] in ("x", "×"):
                kind, amount = "factor", float(t[1:])
            else:
                kind, amount = "absolute", float(t)
        except ValueError:
            raise SelectorError(f"expected a tolerance such as 5, 10% or x3, found {text!r}") from None
        if not math.isfinite(amount) or amount < 0 or (kind == "factor" and amount < 1):
            raise SelectorError(f"expected a tolerance such as 5, 10% or x3 (a factor of 1 or more), found {text!r}")
        return cls(text, kind, amount)

    def accepts(self, guess, right):
        if self.kind == "absolute":
            return abs(guess - right) <= self.amount
        if self.kind == "relative":
            return abs(guess - right) <= self.amount * abs(right)
        if right == 0 or guess == 0:
            return guess == right
        if (guess > 0) != (right > 0):
            return False
        return max(guess / right, right / guess) <= self.amount

    def __str__(self):
        return {"absolute": f"within {self.text}", "relative": f"within {self.text}",
                "factor": f"within a factor of {self.text[1:]}"}[self.kind]


def number_of(text):
    """A typed number (1_000, 2.5e3, -4), or None."""
    try:
        v = float(str(text).strip().replace("_", "").replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


_BYTE_UNITS = {"b": 1, "byte": 1, "bytes": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "kib": 1 << 10,
               "mib": 1 << 20, "gib": 1 << 30}
_TIME_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 1000 ** 2, "s": 1000 ** 3}


def _unit_of(ask, table):
    """The unit of `table` the question asks in (the first one its words name), or None."""
    for word in re.findall(r"[A-Za-zµμ]+", ask):
        if word.lower() in table:
            return word.lower()
    return None


def number_in(typed, ask=""):
    """A typed number, with a unit the question shows or one of its family (Note [Units in a typed
    answer]): "2 MiB" to a question in bytes is 2097152, "256 threads" to "How many threads ..." is 256.
    None when it is not a number, or its unit is not the question's."""
    t = str(typed).strip()
    plain = number_of(t)
    if plain is not None:
        return plain
    m = re.fullmatch(r"([-+0-9.,_eE]+)\s*([A-Za-zµμ]+)", t)
    if not m or number_of(m.group(1)) is None:
        return None
    n, unit = number_of(m.group(1)), m.group(2)
    u = unit.lower()
    for table in (_BYTE_UNITS, _TIME_UNITS):
        asked = _unit_of(ask, table)
        if asked is not None and u in table:
            return n * table[u] / table[asked]
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", ask)}
    if u in words or u + "s" in words or (u.endswith("s") and u[:-1] in words):
        return n  # the thing counted: "256 threads"
    return None


# Note [Units in a typed answer]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A question that asks for bytes is often answered as the trace and the
# tools write it ("2 MiB", memory_summary's KiB and MiB), and one that asks
# "how many threads" as "256 threads". So a typed number may carry a unit:
# a unit of bytes (B, KB, MB, GB in powers of 1000; KiB, MiB, GiB in
# powers of 1024) or of time (ns, µs, ms, s) when the question asks in a
# unit of the same family, converted to it; or a word the question itself
# uses (the thing it counts). Any other word after the number is not a
# number: the terminal asks again rather than judge it wrong.


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def choice_of(value, choices):
    """The index of the choice that the computed answer `value` is, or None."""
    want = text_of(value).strip().lower()
    aliases = {"true": ("true", "yes"), "false": ("false", "no")}.get(want, (want,)) if isinstance(value, bool) \
        else (want,)
    for k, c in enumerate(choices):
        c_norm = c.strip().lower()
        if c_norm in aliases:
            return k
        if is_number(value):
            n = number_of(c_norm)
            if n is not None and n == value:
                return k
    return None


def reading_of(typed, choices):
    """What a student typed, as a choice index (a, b, ..., 1, 2, ..., or the choice's text), or None."""
    t = typed.strip().lower()
    if not t:
        return None
    for k, c in enumerate(choices):
        if t == c.strip().lower():
            return k
    if len(t) == 1 and "a" <= t <= "z" and ord(t) - ord("a") < len(choices):
        return ord(t) - ord("a")
    if t.isdigit() and 1 <= int(t) <= len(choices):
        return int(t) - 1
    return None


def judge(prediction, right, typed):
    """(correct, the right answer as text) for a student's typed answer to a prediction."""
    if prediction.choices:
        k = choice_of(right, prediction.choices)
        shown = prediction.choices[k] if k is not None else text_of(right)
        return (k is not None and reading_of(typed, prediction.choices) == k), shown
    if is_number(right):
        guess = number_in(typed, prediction.ask)
        if guess is None:
            return False, text_of(right)
        tol = prediction.tolerance
        ok = tol.accepts(guess, right) if tol is not None else guess == right
        return ok, text_of(right)
    return typed.strip().lower() == text_of(right).strip().lower(), text_of(right)
