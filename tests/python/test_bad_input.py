"""Hostile input at the binding and the command line: each case once crashed
the interpreter, read outside a tensor, or printed a traceback.

- strings that are not UTF-8 (lone surrogates) as devices, keyword names and
  trace contents;
- ints past int64 as arguments (named, not "must be int, not int") and numpy
  scalars, which PyTorch takes as numbers;
- the buffer protocol: a reader that cannot take strides gets an error for a
  non-contiguous tensor, never the raw storage;
- the `descent` command: files it cannot write, directories and endless
  files given to replay, a very deep trace, an empty op name;
- a daemon thread still running ops when the interpreter exits.
Cases that could crash run in a child interpreter (run_python).
"""
import hashlib
import io
import re

import numpy as np
import pytest

import subprocess

import descent
from conftest import cli, python_env, run_python


def raises(error, *words):
    return pytest.raises(error, match="(?s)" + "".join(f"(?=.*{re.escape(w)})" for w in words))


def run_cli(*args, timeout=60):
    return subprocess.run([cli(), *args], capture_output=True, text=True, timeout=timeout, env=python_env())


# [SECTION] Strings that are not UTF-8 -------------------------------------------------

def test_surrogate_device_string_is_a_runtime_error():
    r = run_python("import descent\ntry:\n    descent.zeros(3, device='\\udc80')\n"
                   "except RuntimeError as e:\n    print('RuntimeError', e)")
    assert r.returncode == 0 and "RuntimeError" in r.stdout and "\\udc80" in r.stdout, r.stderr


def test_surrogate_keyword_name_is_a_type_error():
    r = run_python("import descent\nfor f in (lambda: descent.zeros(3, **{'\\udc80': 1}),\n"
                   "          lambda: descent.max(descent.ones(2), **{'\\udc80': 1})):\n"
                   "    try:\n        f()\n    except TypeError as e:\n        print('TypeError', e)")
    assert r.returncode == 0 and r.stdout.count("TypeError") == 2, r.stderr
    assert "unexpected keyword argument '\\udc80'" in r.stdout


def test_replay_shows_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "odd.trace"
    path.write_bytes(b"descent-trace 1\nmeta note \xfe\nspan_cost 1\nspan 1 0 1 0 0 10 n\xffme 1 k s v\xfe\nend 1\n")
    r = run_cli("replay", str(path))
    assert r.returncode == 0, r.stderr
    assert "n\\xffme" in r.stdout and "Traceback" not in r.stderr
    t = descent._C._load_trace(str(path))
    (span,) = t.spans()
    assert span["name"] == "n\\xffme" and span["args"] == {"k": "v\\xfe"}
    assert t.metadata["note"] == "\\xfe"


def test_trace_paths_must_be_paths(tmp_path):
    with raises(TypeError, "_load_trace()", "expected a file path", "NoneType"):
        descent._C._load_trace(None)
    with descent.trace() as t:
        descent.ones(1)
    t.result.save(tmp_path / "a.trace")                                  # os.PathLike works
    assert descent._C._load_trace(tmp_path / "a.trace").equals(t.result)


# [SECTION] Numbers -----------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.sum(2 ** 63),
    lambda x: descent.zeros(2 ** 63),
    lambda x: x + 2 ** 63,
    lambda x: descent.add(x, x, alpha=2 ** 63),
    lambda x: x.reshape(2, 2 ** 64),
], ids=["dim", "size", "other", "alpha", "int-list-element"])
def test_ints_past_int64_are_named(call):
    with raises(RuntimeError, "Overflow when unpacking long", "does not fit in int64"):
        call(descent.ones(2, 3))


def test_numpy_scalars_are_numbers():
    x = descent.ones(2)
    assert (x + np.int64(2)).tolist() == [3.0, 3.0]
    assert (x * np.float32(0.5)).tolist() == [0.5, 0.5]
    assert (x + np.int64(2)).dtype == descent.float32                 # a wrapped number, like 2
    assert descent.add(x, x, alpha=np.int64(3)).tolist() == [4.0, 4.0]
    assert descent.full([2], np.float32(1.5)).tolist() == [1.5, 1.5]
    assert descent.ones(2, dtype=descent.int64).sum(np.int64(0)).item() == 2


def test_tensor_data_holding_tensors_and_numpy_scalars():
    assert descent.tensor([descent.tensor(1.5), descent.tensor(2.)]).tolist() == [1.5, 2.0]
    assert descent.tensor([np.array(1.5), 2]).tolist() == [1.5, 2.0]
    assert descent.tensor([[np.int64(1), np.int64(2)]]).dtype == descent.int64
    assert descent.tensor([descent.tensor(True), False]).dtype == descent.bool
    with raises((ValueError, RuntimeError), "element"):
        descent.tensor([descent.ones(2), descent.ones(2)])             # only one-element tensors are numbers
    with raises(TypeError, "new(): invalid data type 'bytes'"):
        descent.tensor(b"abc")
    with raises(ValueError, "nested deeper"):
        descent.tensor([[[[[[[[[1]]]]]]]]])


def test_tensor_data_that_changes_while_read():
    r = run_python("import descent\nouter = []\n"
                   "class N:\n    def __float__(self):\n        outer.clear()\n        return 1.0\n"
                   "outer += [[N(), 2.], [3., 4.]]\n"
                   "try:\n    descent.tensor(outer)\nexcept (ValueError, IndexError) as e:\n"
                   "    print(type(e).__name__, e)")
    assert r.returncode == 0 and r.stdout.split()[0] in ("ValueError", "IndexError"), r.stderr   # an error, not a crash


# [SECTION] The buffer protocol ----------------------------------------------------------

def test_flat_readers_get_contiguous_tensors_only():
    t = descent.arange(6.).reshape(2, 3)
    assert bytes(memoryview(t)) == np.arange(6, dtype=np.float32).tobytes()             # contiguous: as is
    assert hashlib.md5(t).hexdigest() == hashlib.md5(np.arange(6, dtype=np.float32).tobytes()).hexdigest()
    for view in (t.transpose(0, 1), descent.ones(1).expand(1000), t[:, ::2]):
        with raises(BufferError, "not contiguous", "x.contiguous()"):
            hashlib.md5(view)
        with raises(BufferError, "not contiguous"):
            io.BytesIO().write(view)
        assert np.asarray(view).shape == tuple(view.shape)             # strided readers still work
    assert bytes(memoryview(t.transpose(0, 1).contiguous())) == np.arange(6, dtype=np.float32).reshape(2, 3).T.tobytes()


# [SECTION] The command line ------------------------------------------------------------

def test_trace_cannot_write_names_the_file(tmp_path):
    r = run_cli("trace", "descent.ones(1)", "--save", str(tmp_path / "no" / "such" / "dir.trace"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "descent trace: cannot write the trace to" in r.stderr and "no/such/dir.trace" in r.stderr
    r = run_cli("trace", "descent.ones(1)", "--chrome", str(tmp_path))
    assert r.returncode == 2 and "cannot write the Chrome trace" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("target,words", [("dir", "it is a directory"), ("/dev/zero", "not a regular file")])
def test_replay_refuses_what_is_not_a_file(tmp_path, target, words):
    r = run_cli("replay", str(tmp_path) if target == "dir" else target, timeout=30)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_replay_of_a_large_non_trace_fails_on_line_one(tmp_path):
    path = tmp_path / "zeros.bin"
    with open(path, "wb") as f:
        f.truncate(512 * 1024 * 1024)                                   # sparse: costs no disk
    r = run_cli("replay", str(path), timeout=30)
    assert r.returncode == 2 and f"{path}:1: bad magic" in r.stderr


def test_replay_of_a_very_deep_trace_is_linear(tmp_path):
    depth = 20000
    lines = ["descent-trace 1", "span_cost 1"]
    lines += [f"span {i} {i - 1} 3 0 {i} {2 * depth - i} s{i} 0" for i in range(1, depth + 1)]
    lines.append(f"end {depth}")
    path = tmp_path / "deep.trace"
    path.write_text("\n".join(lines) + "\n")
    r = run_cli("replay", str(path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"(depth {depth - 1}) " in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) < 200      # indentation stops growing


def test_trace_of_code_that_exits_still_prints_the_trace():
    r = run_cli("trace", "descent.ones(1)\nraise SystemExit(3)")
    assert r.returncode == 3 and "[1 python   ] descent.ones(1)" in r.stdout and "Traceback" not in r.stderr


def test_verify_with_an_empty_op_name():
    r = run_cli("verify", "--op", "")
    assert r.returncode == 2 and "no op named ''" in r.stderr


# [SECTION] Threads at exit ----------------------------------------------------------------

def test_daemon_thread_running_ops_at_exit():
    r = run_python("import threading, time, descent\n"
                   "def spin():\n    while True:\n        descent.ones(10) + 1\n"
                   "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(0.3)\nprint('bye')")
    assert r.returncode == 0 and r.stdout == "bye\n", (r.returncode, r.stderr[-2000:])


def test_empty_tensor_with_huge_sizes_has_no_overflow():
    t = descent.zeros(0).reshape(2 ** 62 + 1, 4, 0)
    assert t.shape == (2 ** 62 + 1, 4, 0) and t.numel() == 0 and t.stride()[1:] == (1, 1)


def test_seeds_out_of_range_are_refused_not_wrapped():
    descent.manual_seed(2 ** 64 - 1)
    a = descent.rand(3).tolist()
    descent.manual_seed(-1)                                             # the same 64 bits
    assert descent.rand(3).tolist() == a
    for bad in (2 ** 64, 2 ** 100, -2 ** 63 - 1):
        with raises(RuntimeError, "manual_seed()", "Overflow when unpacking long"):
            descent.manual_seed(bad)
    with raises(TypeError, "manual_seed()", "must be an int", "float"):
        descent.manual_seed(1.5)


def test_kernel_variant_must_be_a_string():
    with raises(TypeError, "set_kernel_variant()", "'auto', 'reference' or 'optimized'", "NoneType"):
        descent.set_kernel_variant(None)


@pytest.mark.parametrize("make", [
    lambda: descent.arange(6.).reshape(2, 3).transpose(0, 1),
    lambda: descent.tensor([[True, False]]),
    lambda: descent.arange(5),
    lambda: descent.zeros(0, 3, dtype=descent.float64),
    lambda: descent.tensor(2.5),
], ids=["view", "bool", "int64", "empty", "0-d"])
def test_copy_deepcopy_and_pickle_give_independent_tensors(make):
    import copy
    import pickle
    t = make()
    for c in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert isinstance(c, descent.Tensor) and c.dtype == t.dtype and c.shape == t.shape
        assert c.tolist() == t.tolist()
        if c.numel():
            assert c.data_ptr() != t.data_ptr()


def test_numpy_bool_is_not_the_index_one():
    t = descent.arange(3)
    for mask in (True, np.bool_(True)):  # a new dim of size 1, taken whole, as PyTorch reads it
        assert t[mask].shape == (1, 3) and t[mask].tolist() == [[0, 1, 2]]
    assert t[False].shape == (0, 3) and t[np.bool_(False)].shape == (0, 3)
    assert t[np.int64(1)].item() == 1
