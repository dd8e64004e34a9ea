"""Tracing: `with descent.trace()`, the `descent trace` / `descent replay`
commands and DESCENT_TRACE=1.

- spans nest and are monotonic: t.result.check() == "" and, checked here
  independently, every span has start <= end, lies inside its parent, and
  siblings follow each other without overlapping;
- a traced `descent.ones(2, 2) + 1` reaches floors 1, 2, 3, 5 and 6 and shows
  keyset=, variant= and bytes=;
- --save then replay prints the same tree; --chrome writes Chrome Trace Event
  JSON ("X" events); a saved trace loads back equal to the original;
- malformed trace files: replay exits non-zero naming the file and the line,
  without a Python traceback;
- an exception in the traced code: exit 1, the error printed, the partial
  tree printed; a SyntaxError: exit 2.
The CLI is $DESCENT_CLI, else the build's `descent` script (conftest.cli()).
"""
import json
import re
import subprocess

import pytest

import descent
from conftest import cli, python_env, run_python

FLOORS = ["[1 python", "[2 binding", "[3 dispatch", "[5 kernels", "[6 allocator"]


def run_cli(*args, timeout=120, **env):
    return subprocess.run([cli(), *args], capture_output=True, text=True, timeout=timeout, env=python_env(**env))


def tree_lines(text):
    """The lines of the printed span tree: '[<floor> <floor name>] ...', indented."""
    return [line for line in text.splitlines() if re.match(r"\s*\[\d [a-z]+ *\] ", line)]


def check_spans(spans):
    """Our own structure check: ids unique, parents exist, start <= end,
    children inside their parent, siblings ordered and not overlapping."""
    by_id = {s["id"]: s for s in spans}
    assert len(by_id) == len(spans) and all(i > 0 for i in by_id)
    children = {}
    for s in spans:
        assert s["start_ns"] <= s["end_ns"], s
        if s["parent"]:
            p = by_id[s["parent"]]
            assert p["start_ns"] <= s["start_ns"] and s["end_ns"] <= p["end_ns"], (s, p)
            assert p["thread"] == s["thread"]
        children.setdefault((s["thread"], s["parent"]), []).append(s)
    for sibs in children.values():
        for a, b in zip(sibs, sibs[1:]):
            assert a["start_ns"] <= b["start_ns"], "siblings are listed in start order"
            assert a["end_ns"] <= b["start_ns"], (a, b)
    keys = [(s["thread"], s["start_ns"], s["id"]) for s in spans]
    assert keys == sorted(keys)


# [SECTION] In-process tracing ----------------------------------------------------------

def test_trace_context_manager():
    x = descent.ones(3, 4)
    with descent.trace() as t:
        y = x + 1
        z = (y @ x.T).sum(0)
        w = descent.max(z * 2.0, 0)
    assert w.values.item() > 0 and not descent._C._trace_enabled()
    tr = t.result
    assert tr.check() == ""
    spans = tr.spans()
    check_spans(spans)
    floors = {s["floor"] for s in spans}
    assert {1, 2, 3, 5, 6} <= floors
    names = {s["name"] for s in spans}
    assert {"add", "matmul", "sum", "max", "cpu_alloc"} <= names  # floor 2: Python names
    # x + 1 crosses into C++ at Tensor.__add__, a slot of the C base class: its
    # first span is floor 2's, with no floor-1 wrapper above it (Note [Tensor
    # methods from the op table]).
    add = [s for s in spans if s["name"] == "add"]
    assert add[0]["floor"] == 2 and add[0]["parent"] == 0 and add[0]["args"]["python"] == "Tensor.__add__"
    assert {"aten::add", "aten::matmul", "aten::sum", "aten::max"} <= names  # floors 3 and 5: the profiler's names
    kernels = [s for s in spans if s["floor"] == 5]
    assert all("variant" in s["args"] for s in kernels)
    assert all(isinstance(s["args"].get("bytes"), int) for s in spans if s["name"] == "cpu_alloc")
    assert any(s["args"].get("overload") == "aten::max.dim" for s in spans if s["floor"] == 2)
    text = tr.format_tree()
    assert all(f in text for f in FLOORS) and "keyset=" in text and tr.span_cost_ns > 0
    assert "device" in tr.metadata


def test_trace_stops_on_exception():
    with pytest.raises(TypeError):
        with descent.trace() as t:
            descent.ones(2) + "a"
    assert not descent._C._trace_enabled() and t.result.check() == ""


def test_spans_name_their_source_site():
    """Note [Span source sites]: C++ spans name descent's file and line,
    relative to the repository root; the profile hook's spans name the
    package's file in floors/python/descent/ and the line of the `def`."""
    x = descent.ones(2)
    with descent.trace() as t:
        x + 1
        len(x)
    spans = t.result.spans()
    for s in spans:
        if s["floor"] in (2, 3, 5, 6):
            assert s["file"].startswith("floors/") and s["line"] > 0, s
    assert any(s["file"].startswith("floors/dispatch/") for s in spans if s["floor"] == 3)
    assert any(s["file"].startswith("floors/binding/") for s in spans if s["floor"] == 2)
    size = [s for s in spans if s["name"] == "Tensor.__len__"]
    assert size and all(s["file"] == "floors/python/descent/_tensor.py" for s in size)
    assert size[0]["line"] == type(x).__len__.__code__.co_firstlineno
    events = json.loads(t.result.chrome_json())["traceEvents"]
    assert any(e.get("args", {}).get("src") == f"floors/python/descent/_tensor.py:{size[0]['line']}" for e in events)


def test_trace_blocks_nest():
    with descent.trace() as outer:
        x = descent.ones(2)
        with descent.trace() as inner:
            y = x * 2
            with descent.trace(python_functions=False) as innermost:
                y - 1
                len(y)
        y + 3
        y.numpy()
    assert not descent._C._trace_enabled()
    names = lambda t: [s["name"] for s in t.result.spans()]
    assert {"ones", "mul", "sub", "add", "Tensor.__len__", "Tensor.numpy"} <= set(names(outer))
    assert "mul" in names(inner) and "sub" in names(inner)
    assert "ones" not in names(inner) and "add" not in names(inner)
    # The outer block still traces Python functions after an inner one without them ended.
    assert "Tensor.numpy" in names(outer) and "Tensor.__len__" in names(inner)
    assert "sub" in names(innermost) and "mul" not in names(innermost)
    for t in (outer, inner, innermost):
        assert t.result.check() == ""
        check_spans(t.result.spans())


def test_trace_blocks_nest_across_threads():
    """The outer block may close first: the recording goes on until the last
    block closes, each block gets its own thread's Python functions, and no
    profile hook is left behind on any thread."""
    import threading
    import sys
    inside, outer_done, result = threading.Event(), threading.Event(), {}

    def worker():
        with descent.trace() as t:
            inside.set()
            len(descent.ones(2))
            outer_done.wait(10)
            descent.ones(2).numpy()
        result["t"] = t

    with descent.trace() as outer:
        th = threading.Thread(target=worker)
        th.start()
        inside.wait(10)
        len(descent.ones(2))
    assert descent._C._trace_enabled()            # the worker's block is still open
    outer_done.set()
    th.join()
    assert not descent._C._trace_enabled() and sys.getprofile() is None
    inner = [s["name"] for s in result["t"].result.spans()]
    assert "Tensor.__len__" in inner and "Tensor.numpy" in inner  # a window holds every thread's spans
    assert not any(n.startswith(("Condition", "Event", "trace.", "_thread_hooks")) for n in inner)
    assert "Tensor.__len__" in [s["name"] for s in outer.result.spans()]
    descent._C._trace_start()                     # afterwards: no hook left on this thread
    len(descent.ones(2))
    assert "Tensor.__len__" not in [s["name"] for s in descent._C._trace_stop().spans()]


def test_trace_block_inside_descent_trace_env():
    r = run_python("import descent\n"
                   "with descent.trace() as t:\n"
                   "    descent.ones(2) * 5\n"
                   "print('inner', sorted({s['name'] for s in t.result.spans()}))\n", DESCENT_TRACE="1")
    assert r.returncode == 0, r.stderr
    assert "inner" in r.stdout and "'mul'" in r.stdout
    assert "descent trace:" in r.stderr and "mul" in r.stderr
    with descent.trace(python_functions=False) as t:
        descent.ones(2) + 1
    assert 1 not in {s["floor"] for s in t.result.spans()}


def test_trace_from_threads():
    import threading
    with descent.trace() as t:
        threads = [threading.Thread(target=lambda: descent.ones(16) * 3) for _ in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    spans = t.result.spans()
    assert t.result.check() == "" and len({s["thread"] for s in spans}) >= 2
    check_spans(spans)


def test_save_and_load_round_trip(tmp_path):
    with descent.trace() as t:
        descent.arange(6).view(2, 3).T.contiguous() + descent.tensor(1.5)
    path = str(tmp_path / "t.trace")
    t.result.save(path)
    t2 = descent._C._load_trace(path)
    assert t.result.equals(t2) and t2.equals(t.result)
    assert t2.format_tree() == t.result.format_tree() and t2.spans() == t.result.spans()
    assert t2.metadata == t.result.metadata and t2.span_cost_ns == t.result.span_cost_ns
    with descent.trace() as other:
        descent.ones(1)
    assert not other.result.equals(t2) and not t2.equals("not a trace")
    events = json.loads(t.result.chrome_json())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == len(t.result.spans())


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot open"):
        descent._C._load_trace(str(tmp_path / "missing.trace"))
    bad = tmp_path / "bad.trace"
    bad.write_text("descent-trace 1\nspan_cost 1\nspan 1 0 2 0 5 9 add 0\n")
    with pytest.raises(ValueError, match=r"bad\.trace:4: truncated"):
        descent._C._load_trace(str(bad))


def test_structurally_invalid_trace_loads_but_check_reports_it(tmp_path):
    """The loader checks the syntax; check() the structure (parents, nesting)."""
    path = tmp_path / "orphan.trace"
    path.write_text("descent-trace 1\nspan_cost 1\nspan 1 0 2 0 10 20 add 0\nspan 2 7 3 0 12 30 add 0\nend 2\n")
    t = descent._C._load_trace(str(path))
    problems = t.check()
    assert "parent 7 does not exist" in problems


# [SECTION] The command line ---------------------------------------------------------------

CODE = "descent.ones(2, 2) + 1"


def test_cli_trace_reaches_the_floors():
    r = run_cli("trace", CODE)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for floor in FLOORS:
        assert floor in out, floor
    for word in ["keyset=", "variant=", "bytes="]:
        assert word in out, word
    assert "tensor([[2., 2.],\n        [2., 2.]])" in out          # the value is echoed
    assert out.count("descent trace:") == 1 and tree_lines(out)[0].startswith("[1 python   ] " + CODE)
    r = run_cli("trace", "--reference", CODE)
    kernel_lines = [line for line in r.stdout.splitlines() if "[5 kernels" in line]
    # Every loop is the reference (_to_copy's own span only says it copied: its copy_ ran the loop).
    assert any("variant=reference" in line for line in kernel_lines)
    assert not any("variant=optimized" in line for line in kernel_lines), kernel_lines


def test_cli_save_replay_chrome(tmp_path):
    saved, chrome = str(tmp_path / "a.trace"), str(tmp_path / "a.json")
    r = run_cli("trace", CODE, "--save", saved, "--chrome", chrome)
    assert r.returncode == 0, r.stderr
    replay = run_cli("replay", saved)
    assert replay.returncode == 0, replay.stderr
    assert tree_lines(replay.stdout) == tree_lines(r.stdout) and tree_lines(r.stdout)
    header = [line for line in r.stdout.splitlines() if line.startswith("descent trace:")]
    assert header and header[0] in replay.stdout
    with open(chrome) as f:
        doc = json.load(f)
    x_events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(x_events) == len(tree_lines(r.stdout))
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in x_events)
    loaded = descent._C._load_trace(saved)
    assert loaded.check() == "" and len(loaded.spans()) == len(x_events)
    check_spans(loaded.spans())
    chrome2 = str(tmp_path / "b.json")
    assert run_cli("replay", saved, "--chrome", chrome2).returncode == 0
    with open(chrome2) as f:
        assert json.load(f) == doc                                     # the replayed trace is the same


@pytest.fixture(scope="module")
def saved_lines(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("trace") / "good.trace")
    assert run_cli("trace", CODE, "--save", path).returncode == 0
    with open(path) as f:
        return f.read().splitlines()


MALFORMED = {
    "empty": lambda ls: [],
    "bad-magic": lambda ls: ["garbage"] + ls[1:],
    "bad-version": lambda ls: ["descent-trace 99"] + ls[1:],
    "truncated": lambda ls: ls[:-1],
    "cut-mid-span": lambda ls: ls[:-3] + [ls[-3][:20]],
    "bad-number": lambda ls: [ln.replace("span 2 ", "span x ", 1) for ln in ls],
    "unknown-line": lambda ls: ls[:-1] + ["bogus 1 2"] + ls[-1:],
    "duplicate-id": lambda ls: ls[:-1] + [ls[-2]] + ls[-1:],
    "wrong-count": lambda ls: ls[:-1] + ["end 999"],
    "after-end": lambda ls: ls + ["span 99 0 1 0 1 2 x 0"],
    "binary": lambda ls: ["\x00\x01\x02 descent"],
}


@pytest.mark.parametrize("kind", MALFORMED)
def test_replay_malformed(kind, saved_lines, tmp_path):
    path = tmp_path / "bad.trace"
    lines = MALFORMED[kind](list(saved_lines))
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    r = run_cli("replay", str(path))
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr.startswith(f"descent replay: {path}:"), r.stderr
    line_no = int(r.stderr.split(f"{path}:")[1].split(":")[0])
    assert 1 <= line_no <= len(lines) + 1


def span_fields(line):
    """'span ID PARENT FLOOR THREAD START END NAME NARGS ...' split at spaces."""
    return line.split(" ")


# Files that parse but whose spans do not form a tree: replay refuses them and
# says which span is wrong (check()), rather than dropping spans from the tree.
STRUCTURE = {
    "missing-parent": lambda f: f[:2] + ["999"] + f[3:],
    "own-parent": lambda f: f[:2] + [f[1]] + f[3:],
    "ends-before-start": lambda f: f[:6] + [str(int(f[5]) - 10 ** 9)] + f[7:],
}


@pytest.mark.parametrize("kind", STRUCTURE)
def test_replay_bad_structure(kind, saved_lines, tmp_path):
    lines = list(saved_lines)
    idx = next(i for i, ln in enumerate(lines) if ln.startswith("span ") and span_fields(ln)[2] != "0")
    lines[idx] = " ".join(STRUCTURE[kind](span_fields(lines[idx])))
    path = tmp_path / "bad.trace"
    path.write_text("\n".join(lines) + "\n")
    problems = descent._C._load_trace(str(path)).check()
    assert problems
    r = run_cli("replay", str(path))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"descent replay: {path}: the spans do not form a tree") and problems in r.stderr


def test_cli_trace_over_the_span_limit_says_it_is_incomplete():
    code = "for i in range(5000): descent.ones(1)"   # 5 spans a call: past one 16384-span chunk
    r = run_cli("trace", code, DESCENT_TRACE_MAX_SPANS="1")
    assert r.returncode == 0, r.stderr
    assert "INCOMPLETE:" in r.stdout and "spans were dropped" in r.stdout
    assert "[descent warning] the trace is missing" in r.stderr
    assert "DESCENT_TRACE_MAX_SPANS=1 is taken as 16384" in r.stderr
    bad = run_cli("trace", "descent.ones(1)", DESCENT_TRACE_MAX_SPANS="lots")
    assert bad.returncode == 0 and "DESCENT_TRACE_MAX_SPANS=lots is not a positive number" in bad.stderr
    assert "INCOMPLETE" not in bad.stdout


def test_replay_missing_file(tmp_path):
    r = run_cli("replay", str(tmp_path / "nope.trace"))
    assert r.returncode != 0 and "cannot open" in r.stderr and "Traceback (most recent" not in r.stderr


def test_cli_exception_in_traced_code():
    r = run_cli("trace", "x = descent.ones(2)\ny = x + 'a'\nz = 3")
    assert r.returncode == 1
    assert "TypeError: unsupported operand type(s) for +: 'Tensor' and 'str'" in r.stderr
    lines = tree_lines(r.stdout)
    assert lines[0].startswith("[1 python   ] x = descent.ones(2)")
    assert any(line.startswith("[1 python   ] y = x + 'a'") for line in lines)   # the partial tree
    assert not any("z = 3" in line for line in lines)                           # nothing after the error
    assert any("[2 binding" in line and "add" in line for line in lines)


def test_cli_syntax_error():
    r = run_cli("trace", "x = (")
    assert r.returncode == 2 and "not valid Python" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("loop", ["while True: pass", "x = descent.ones(2)\nwhile True: x + 1",
                                  "import time\ntime.sleep(60)"])
def test_cli_trace_ends_at_once_on_ctrl_c(loop):
    """SIGINT (Ctrl-C) while the code runs: exit 130 within a moment, one line
    on stderr and no traceback, even when the loop has recorded millions of
    spans (they are not collected into a trace to be thrown away)."""
    import signal
    import time
    p = subprocess.Popen([cli(), "trace", "print('started', flush=True)\n" + loop], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    try:
        assert p.stdout.readline().strip() == "started"
        time.sleep(0.5)  # well inside the loop
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        p.kill()
    assert p.returncode == 130, (p.returncode, err)
    assert err == "descent trace: interrupted (Ctrl-C); nothing is shown\n"
    assert took < 2.0, took


def test_a_stopped_statement_keeps_its_trace():
    """tracing.run takes KeyboardInterrupt as the statement's outcome, as it
    takes an exception: the app's Stop shows it, with the trace of what ran."""
    result, error = descent.tracing.run("x = descent.ones(2)\nraise KeyboardInterrupt\ny = 1")
    assert isinstance(error, KeyboardInterrupt)
    names = [s["name"] for s in result.spans() if s["floor"] == 1 and s["parent"] == 0]
    assert names == ["x = descent.ones(2)", "raise KeyboardInterrupt"]


def test_descent_trace_env(tmp_path):
    chrome = str(tmp_path / "env.json")
    r = run_python("import descent; descent.ones(2) + 1", DESCENT_TRACE="1", DESCENT_TRACE_CHROME=chrome)
    assert r.returncode == 0 and r.stdout == ""
    assert "descent trace:" in r.stderr
    for floor in FLOORS[1:]:
        assert floor in r.stderr, floor
    with open(chrome) as f:
        assert any(e["ph"] == "X" for e in json.load(f)["traceEvents"])
    quiet = run_python("import descent; descent.ones(2) + 1", DESCENT_TRACE="0")
    assert quiet.returncode == 0 and quiet.stderr == ""


# --repeat, parallel_for's flows, the Chrome export's tids and otherData, the clock.

def test_cli_trace_repeat_shows_warm_medians_without_the_tracers_cost(tmp_path):
    saved = str(tmp_path / "r.trace")
    r = run_cli("trace", "--repeat", "5", CODE, "--save", saved)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    header = [line for line in out.splitlines() if line.startswith("descent trace:")]
    assert len(header) == 1 and "in 5 runs" in header[0]
    m = re.search(r"times are warm medians of 4 runs with the tracer's cost taken out: ([0-9.]+) ns per span inside "
                  r"the spans around it \(([0-9.]+) inside itself\), ([0-9.]+) ns per argument, ([0-9.]+) ns inside a "
                  r"statement's own span", header[0])
    assert m and float(m.group(1)) > 0, header[0]
    assert "clock: " in header[0]
    assert out.count("tensor([[2., 2.],") == 1                          # only the last run's value is echoed
    assert re.search(r"the last of 5 runs +warm +cold", out)
    lines = tree_lines(out)
    assert lines[0].startswith("[1 python   ] " + CODE)
    assert sum(line.startswith("[1 python") for line in lines) == 1      # one run's tree, not five
    times = r"(-|\d+(\.\d+)? [nmu]?s)"
    assert all(re.search(rf"  {times} +{times}$", line) for line in lines), lines
    # The numbers are the trace's own: warm medians of runs 2..5, corrected.
    loaded = descent._C._load_trace(saved)
    spans, warm = loaded.spans(), loaded.warm_medians(5)
    roots = [s for s, w in zip(spans, warm) if w is not None and s["parent"] == 0]
    assert len(roots) == 1 and roots[0]["name"] == CODE
    assert sum(w is not None for w in warm) == len(lines)
    assert all(w[2] == 4 for w in warm if w is not None)                 # every warm run matched
    # Replaying the saved trace shows the same repeated tree.
    replay = run_cli("replay", saved)
    assert replay.returncode == 0 and tree_lines(replay.stdout) == lines
    assert "in 5 runs" in replay.stdout
    bad = run_cli("trace", "--repeat", "0", CODE)
    assert bad.returncode == 2 and "--repeat" in bad.stderr


def test_repeat_cut_short_by_an_exception_prints_the_plain_tree():
    r = run_cli("trace", "--repeat", "3", "descent.ones(2) + 1\nraise ValueError('boom')")
    assert r.returncode == 1 and "boom" in r.stderr
    assert "tracer cost" in r.stdout and tree_lines(r.stdout)


def test_corrected_warm_time_takes_the_tracer_cost_out():
    result, error = descent.tracing.run("descent.ones(2) + 1", echo=None, repeat=3)
    assert error is None
    spans, warm = result.spans(), result.warm_medians(3)
    cost = result.span_cost_ns                                  # what a span costs the spans around it
    # A statement's span costs itself what a no-op statement's span measures beyond the
    # statement untraced (Note [Warm medians]); a span inside it costs the whole of cost.
    statement = float(result.metadata["tracer.statement_self_cost_ns"])
    assert statement >= 0
    assert 0 <= float(result.metadata["tracer.span_self_cost_ns"]) <= cost
    roots = [s for s in spans if s["parent"] == 0 and s["name"] == "descent.ones(2) + 1"]
    assert len(roots) == 3
    per_arg = float(result.metadata["tracer.arg_cost_ns"])  # and each argument a span records
    assert per_arg >= 0
    inside = lambda root: [s for s in spans if s["thread"] == root["thread"]  # noqa: E731
                           and root["start_ns"] <= s["start_ns"] and s["end_ns"] <= root["end_ns"]]
    corrected = [max(r["end_ns"] - r["start_ns"] - statement - cost * (len(inside(r)) - 1)
                     - per_arg * sum(len(s["args"]) for s in inside(r)), 0) for r in roots]
    w = warm[spans.index(roots[-1])]
    assert w[2] == 2
    assert abs(w[0] - (corrected[1] + corrected[2]) / 2) <= 1       # the median of two: their mean, in ns
    assert abs(w[1] - corrected[0]) <= 1
    assert cost > 0
    with pytest.raises(ValueError):
        result.warm_medians(2)      # 3 runs of one statement do not split into 2


def test_run_statement_is_the_statement_in_a_span_of_its_own():
    env = {"descent": descent, "x": descent.ones(2)}
    code = compile("x + 1", "<test>", "eval")
    with descent.trace() as t:
        value = descent._C._run_statement(1, "x + 1", code, env)
    assert value.tolist() == [2.0, 2.0]
    spans = t.result.spans()
    root = [s for s in spans if s["name"] == "x + 1"]
    assert len(root) == 1 and root[0]["floor"] == 1 and root[0]["parent"] == 0
    assert any(s["parent"] == root[0]["id"] and s["floor"] == 2 for s in spans)      # the add's binding span inside
    assert "__builtins__" in env                                                      # as eval() leaves globals
    assert descent._C._run_statement(1, "x + 1", code, env).tolist() == [2.0, 2.0]           # tracing off: no span, same value
    with descent.trace() as t:
        with pytest.raises(ZeroDivisionError):
            descent._C._run_statement(1, "1 / 0", compile("1 / 0", "<test>", "eval"), env)
    assert [s["name"] for s in t.result.spans() if s["parent"] == 0] == ["1 / 0"]     # closed despite the error
    assert descent._C._run_statement(1, "y = 3", compile("y = 3", "<test>", "exec"), env) is None and env["y"] == 3
    with pytest.raises(TypeError):
        descent._C._run_statement(1, "x", "x", env)
    with pytest.raises(ValueError):
        descent._C._run_statement(0, "x", code, env)


def test_time_statement_times_each_run_untraced():
    env = {"x": descent.ones(1)}
    times = descent._C._time_statement(compile("x + x", "<test>", "eval"), env, 51)
    assert len(times) == 51 and all(ns >= 0 for ns in times)
    assert sorted(times)[25] > 0                                    # an add takes time
    with pytest.raises(ZeroDivisionError):
        descent._C._time_statement(compile("1 / 0", "<test>", "eval"), env, 3)
    with pytest.raises(ValueError):
        descent._C._time_statement(compile("x", "<test>", "eval"), env, 0)


def test_parallel_for_chunks_on_workers_are_joined_by_flows(tmp_path):
    saved = descent.get_num_threads()
    descent.set_num_threads(2)
    try:
        for _ in range(20):  # a worker slow to wake may leave every chunk to the caller: try again
            with descent.trace() as t:
                descent.ones(4096, 4096) + 1
            if t.result.flows():
                break
    finally:
        descent.set_num_threads(saved)
    spans = {s["id"]: s for s in t.result.spans()}
    flows = t.result.flows()
    assert flows
    loops = [s for s in spans.values() if s["name"] == "parallel_for"]
    assert loops
    for src, dst, name in flows:
        assert name == "parallel_for"
        assert spans[src]["name"] == "parallel_for"
        assert spans[dst]["name"] == "parallel_for chunk"
        assert spans[dst]["thread"] != spans[src]["thread"]
        assert {"begin", "end"} <= set(spans[dst]["args"])
    # The Chrome export draws each flow as an "s" and an "f" event on those threads.
    doc = json.loads(t.result.chrome_json())
    starts = [e for e in doc["traceEvents"] if e["ph"] == "s"]
    finishes = [e for e in doc["traceEvents"] if e["ph"] == "f"]
    assert len(starts) == len(finishes) == len(flows)
    chrome = str(tmp_path / "p.json")
    t.result.save_chrome(chrome)
    assert len(descent._C._load_trace(chrome).flows()) == len(flows)


def test_chrome_export_tids_start_at_one_and_extra_data_is_in_other_data():
    with descent.trace() as t:
        descent.ones(2, 2) + 1
    doc = json.loads(t.result.chrome_json())
    tids = {e["tid"] for e in doc["traceEvents"] if "tid" in e}
    assert tids and min(tids) == 1
    assert "metadata" not in doc
    assert doc["otherData"]["span_cost_ns"] == pytest.approx(t.result.span_cost_ns)
    assert doc["otherData"]["tracer.clock"] == t.result.metadata["tracer.clock"]


def test_the_trace_names_its_clock():
    with descent.trace() as t:
        descent.ones(2)
    assert t.result.metadata["tracer.clock"] in ("tsc (invariant)", "steady_clock")
    r = run_python("import descent\nwith descent.trace() as t: descent.ones(2)\n"
                   "print(t.result.metadata['tracer.clock'])", DESCENT_TRACER_CLOCK="steady_clock")
    assert r.returncode == 0 and r.stdout.strip() == "steady_clock", r.stderr
    r = run_cli("trace", "descent.ones(2)", DESCENT_TRACER_CLOCK="steady_clock")
    assert r.returncode == 0 and "clock: steady_clock" in r.stdout


def test_a_span_left_open_across_stop_and_start_cannot_close_a_new_one():
    C = descent._C
    assert not C._trace_enabled()
    C._trace_start()
    stale = C._span_begin(1, "old")
    C._trace_stop()
    C._trace_start()
    fresh = C._span_begin(1, "new")
    C._span_end(stale)                   # must not close "new"
    with descent.trace():                # a block inside the running recording
        descent.ones(2)
    C._span_end(fresh)
    result = C._trace_stop()
    assert result.check() == ""
    spans = result.spans()
    new = [s for s in spans if s["name"] == "new"][0]
    children = [s for s in spans if s["parent"] == new["id"]]
    assert children and all(c["end_ns"] <= new["end_ns"] for c in children)


def test_a_span_the_package_opens_names_its_source_site():
    from descent import tracing
    C = descent._C

    def opener():
        pass

    site = tracing.site_of(opener)
    assert site > 0 and tracing.site_of(opener) == site  # registered once
    with descent.trace() as t:
        with tracing.span("a named range", site):
            descent.ones(2)
    spans = t.result.spans()
    s, = [s for s in spans if s["name"] == "a named range"]
    assert s["floor"] == 1 and s["line"] == opener.__code__.co_firstlineno
    assert s["file"].endswith(opener.__code__.co_filename.rsplit("/", 1)[1])
    assert any(x["name"] == "aten::ones" and x["start_ns"] >= s["start_ns"] for x in spans)
    with pytest.raises(ValueError, match="no source site"):
        C._span_begin(1, "x", 60000)
    assert C._span_begin(1, "untraced", site) == -1  # tracing off: nothing opened


def packed_product_items(m, k, n):
    """A traced m x k by k x n product on the packed rung and 2 threads: its
    operands, its result and the spans of its loop nest's items (skips the
    test on a CPU without FMA, where the packed rung does not run)."""
    descent._C._set_matmul_rung("cpu", "packed")
    saved = descent.get_num_threads()
    descent.set_num_threads(2)
    try:
        a, b = descent.rand(m, k), descent.rand(k, n)
        with descent.trace() as t:
            c = a @ b
    finally:
        descent.set_num_threads(saved)
        descent._C._set_matmul_rung("cpu", "auto")
    items = [s for s in t.result.spans() if s["name"] in ("pack A", "pack B", "tile task")]
    if not items:
        pytest.skip("this CPU has no FMA unit: the packed rung does not run")
    return a, b, c, items


def test_the_packed_matmul_traces_each_item_of_its_loop_nest():
    # Note [Packed matmul]: every packing item and every task of C is a span of
    # the thread that ran it, named by what it did, with its step of the loop nest.
    _, _, _, items = packed_product_items(300, 700, 200)
    steps = sorted({s["args"]["step"] for s in items})
    assert steps == list(range(len(steps)))
    for step in steps:
        mine = [s for s in items if s["args"]["step"] == step]
        tasks = sorted(s["args"]["task"] for s in mine if s["name"] == "tile task")
        panels = sorted(s["args"]["panel"] for s in mine if s["name"] == "pack A")
        assert tasks == list(range(len(tasks))) and tasks
        assert panels == list(range(len(panels))) and panels
        for s in mine:  # a wait is recorded only where the item had to wait, and names what for
            waits = {k for k in s["args"] if k.startswith("waited_for_")}
            assert waits <= ({"waited_for_packing_ns", "waited_for_step_before_ns"} if s["name"] == "tile task"
                             else {"waited_for_readers_ns"})
            assert all(s["args"][k] >= 0 for k in waits)
    assert any(s["name"] == "pack B" for s in items)


def test_a_product_of_one_step_packs_its_panels_in_its_tasks():
    # Note [Packed matmul]: with K within one kc block there is no later step to
    # overlap shared packing with, so on several threads each task packs the
    # panels it reads itself: no packing items, every task says so. Note
    # [Panels read in place]: A and B contiguous, their whole panels are read
    # in place, and every task says that too (192 columns: whole panels of B
    # for 16 and 32 columns, so every task holds one).
    a, b, c, items = packed_product_items(300, 64, 192)
    ref = a.numpy().astype("float64") @ b.numpy().astype("float64")
    tasks = [s for s in items if s["name"] == "tile task"]
    assert tasks == items and len(tasks) > 1
    assert sorted(s["args"]["task"] for s in tasks) == list(range(len(tasks)))
    assert all(s["args"]["packed_its_own_panels"] == 1 for s in tasks)
    assert all(s["args"]["a_read_in_place"] == 1 and s["args"]["b_read_in_place"] == 1 for s in tasks)
    assert abs(c.numpy() - ref).max() < 1e-4


def test_statement_texts_are_ast_s_segments_in_one_pass():
    """tracing.source_segments gives what ast.get_source_segment gives, statement by statement
    (multi-line statements, semicolons, UTF-8 before a column, \\r\\n and \\r line ends, a form feed),
    from one split of the source: a trace of many statements takes time in their number, not its
    square (issue 41: 8,000 statements took 66 s)."""
    import ast
    from descent import tracing
    code = ("x = 1; y = 'é€😀'; z = [1,\n     2]\r\nif x:\r    w = 'ü' + \\\n  'v'\n\x0cq = (\n 3)\n"
            "def f(a,\n      b):\n    return a\n")
    tree = ast.parse(code)
    assert tracing.source_segments(code, tree.body) == [ast.get_source_segment(code, s) for s in tree.body]
    many = "\n".join(f"a{i} = {i}" for i in range(20000))
    result, error = tracing.run(many, env={})
    assert error is None and sum(1 for s in result.spans() if s["name"].startswith("a1999")) == 11


def test_a_trace_too_large_for_the_memory_is_refused_up_front(tmp_path):
    """Note [Memory a loaded trace needs]: under an address-space limit that leaves too little room,
    `descent replay` refuses the file with its size and the memory it would need, in one line, instead
    of dying of std::bad_alloc part way in."""
    import os
    import sys
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("ASan reserves terabytes of address space: RLIMIT_AS cannot be set under it")
    path = tmp_path / "big.descent"
    with open(path, "w") as f:  # a well-formed trace of 400k root spans, about 30 MB
        f.write("descent-trace 2\nspan_cost 1\n")
        for i in range(1, 400001):
            f.write(f"span {i} 0 1 0 {i * 10} {i * 10 + 5} x\\s=\\s{i} 0\n")
        f.write("end 400000\n")
    code = ("import resource\n"
            "from descent import _C\n"  # imported first: its own mappings are not the file's room
            "pages = int(open('/proc/self/statm').read().split()[0])\n"
            "limit = pages * resource.getpagesize() + (80 << 20)\n"  # 80 MB of room: the file needs ~140
            "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
            f"try:\n    _C._load_trace({str(path)!r})\nexcept ValueError as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused:" in r.stdout and re.search(r"too large to open here: the file is 1\d\.\d MB, a loaded trace takes about \d+\.\d MB", r.stdout), r.stdout + r.stderr
    assert "of memory, and" in r.stdout and "is free" in r.stdout, r.stdout
