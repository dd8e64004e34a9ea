"""The values view's recorder (Note [Recording the values], descent/_values.py): after each statement of
tracing.run, the tensors the namespace reaches, grouped by the storage they look into, with their cells'
values, sizes, strides, offsets and version counters -- and not one span more in the trace."""
import json

import descent
from descent import _values, tracing

VIEWS = """x = descent.arange(6.).reshape(2, 3)
y = x.t()
z = x[:, 1]
e = descent.ones(1).expand(4)
x[0].add_(10)
w = x + 1
"""


def snapshots(code, env=None):
    tr, err = tracing.run(code, env=env if env is not None else {"descent": descent}, echo=None)
    assert err is None, err
    return tr, json.loads(tr.metadata["values.snapshots"])["snapshots"]


def by_name(snap):
    return {t["name"]: t for t in snap["tensors"]}


def storage(snap, t):
    return next(s for s in snap["storages"] if s["id"] == t["storage"])


def test_one_snapshot_before_the_statements_and_one_after_each():
    _, snaps = snapshots(VIEWS)
    assert [s["statement"] for s in snaps] == [""] + VIEWS.strip().split("\n")
    assert snaps[0]["tensors"] == [] and snaps[0]["storages"] == []


def test_a_view_is_a_window_onto_its_bases_cells():
    _, snaps = snapshots(VIEWS)
    after = snaps[4]  # after the expand
    t = by_name(after)
    assert t["x"]["storage"] == t["y"]["storage"] == t["z"]["storage"]  # one storage, three windows
    assert (t["y"]["sizes"], t["y"]["strides"], t["y"]["offset"]) == ([3, 2], [1, 3], 0)
    assert (t["z"]["sizes"], t["z"]["strides"], t["z"]["offset"]) == ([2], [3], 1)
    assert t["e"]["strides"] == [0] and storage(after, t["e"])["cells"] == 1  # four elements, one cell
    cells = storage(after, t["x"])
    assert cells["cells"] == 6 and cells["values"] == ["0.0", "1.0", "2.0", "3.0", "4.0", "5.0"]
    assert cells["dtype"] == "float32" and cells["itemsize"] == 4 and cells["device"] == "cpu"
    # reshape of a contiguous tensor is a view of arange's result, which no name holds but x._base
    assert t["x"]["base"] == "x._base" and t["y"]["base"] == "x._base"


def test_an_in_place_write_changes_the_cells_and_bumps_the_shared_version():
    _, snaps = snapshots(VIEWS)
    before, after = by_name(snaps[4]), by_name(snaps[5])
    assert storage(snaps[5], after["x"])["values"] == ["10.0", "11.0", "12.0", "3.0", "4.0", "5.0"]
    for name in ("x", "y", "z"):  # the version counter is the storage's, shared by its views
        assert after[name]["version"] == before[name]["version"] + 1, name
    assert after["e"]["version"] == before["e"]["version"]
    w = by_name(snaps[6])["w"]  # an out-of-place result: a storage of its own
    assert w["storage"] != after["x"]["storage"] and w["version"] == 0 and w["base"] == ""


def test_the_recorder_makes_no_span():
    env = {"descent": descent}
    traced, _ = snapshots(VIEWS, env)
    saved = tracing._record_values
    tracing._record_values = lambda recorder, env, text=None, raised=False: None
    try:
        plain, err = tracing.run(VIEWS, env={"descent": descent}, echo=None)
    finally:
        tracing._record_values = saved
    assert err is None and "values.snapshots" not in plain.metadata
    names = lambda tr: [(s["floor"], s["name"]) for s in tr.spans()]  # noqa: E731
    assert names(traced) == names(plain)


def test_containers_gradients_and_a_raising_statement():
    code = "a = descent.ones(2, requires_grad=True)\nparts = [a * 2, a * 3]\nparts[0].sum().backward()\n1 / 0"
    tr, err = tracing.run(code, env={"descent": descent}, echo=None)
    assert isinstance(err, ZeroDivisionError)
    snaps = json.loads(tr.metadata["values.snapshots"])["snapshots"]
    assert snaps[-1]["statement"] == "1 / 0" and snaps[-1]["raised"]
    t = by_name(snaps[3])
    assert {"a", "parts[0]", "parts[1]", "a.grad"} <= set(t)
    assert t["parts[0]"]["grad_fn"] == "MulBackward0" and t["a"]["requires_grad"]
    assert storage(snaps[3], t["a.grad"])["values"] == ["2.0", "2.0"]


def test_caps_and_values_not_read():
    big = "b = descent.zeros(5000)\nc = descent.zeros(300)\nd = descent.ones(3, device='sim:0')"
    _, snaps = snapshots(big)
    last = snaps[-1]
    t = by_name(last)
    assert storage(last, t["b"])["values"] == [] and "5000 elements" in storage(last, t["b"])["why"]
    assert storage(last, t["c"])["cells"] == 300 and len(storage(last, t["c"])["values"]) == _values.MAX_CELLS
    assert storage(last, t["d"])["values"] == [] and "sim:0" in storage(last, t["d"])["why"]
    many = "\n".join(f"v{i} = descent.ones(1)" for i in range(_values.MAX_TENSORS + 3))
    _, snaps = snapshots(many)
    assert len(snaps[-1]["tensors"]) == _values.MAX_TENSORS and snaps[-1]["left_out"] == 3
    lines = "\n".join("q = 1" for _ in range(_values.MAX_SNAPSHOTS + 5))
    tr, _ = tracing.run(lines, env={}, echo=None)
    d = json.loads(tr.metadata["values.snapshots"])
    assert len(d["snapshots"]) == _values.MAX_SNAPSHOTS + 1 and d["statements_left_out"] == 5


def test_an_address_that_comes_back_is_a_new_storage():
    r = _values.Recorder({})
    env = r.env
    env["a"] = descent.ones(3)
    r.snapshot("a = ...")
    first = r.snapshots[-1]["storages"][0]["id"]
    # The same first byte, another tensor object, its version no higher: a new storage there.
    key = next(iter(r._last))
    r._last[key] = (1, 0, {12345})
    r.snapshot("again")
    assert r.snapshots[-1]["storages"][0]["id"] == first + "#2"


def test_values_are_short_and_valid_json():
    assert _values._text(1.0) == "1.0" and _values._text(0.333333) == "0.3333"
    assert _values._text(float("nan")) == "nan" and _values._text(float("-inf")) == "-inf"
    assert _values._text(True) == "True" and _values._text(7) == "7" and _values._text(1e20) == "1e+20"
