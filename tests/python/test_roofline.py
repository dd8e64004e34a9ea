"""The roofline from Python (Note [A roofline for every kernel span]): a trace carries its devices'
peaks, Trace.roofline(span_id) places a kernel span under them, and the lessons' roofline() helper
reads it."""
import pytest

import descent
from descent.lessons.selector import Spans, helpers


def kernel(tr, name):
    return [s for s in tr.result.spans() if s["floor"] == 5 and s["name"] == name][-1]


@pytest.mark.parametrize("device", ["cpu", "sim:0"])
def test_a_tiny_add_is_overhead_bound(device):
    x = descent.ones(4, device=device)
    with descent.trace() as tr:
        x + x
    meta = tr.result.metadata
    assert float(meta[f"peak.{device}.bytes_per_s"]) > 0 and "measured" in meta[f"peak.{device}.how"]
    p = tr.result.roofline(kernel(tr, "aten::add")["id"])
    assert p["known"] and p["device"] == device and p["bound"] == "overhead"
    assert p["bytes"] == 48 and p["flops"] == 4 and p["intensity"] == pytest.approx(4 / 48)
    assert 0 < p["fraction"] < 0.1 and p["seconds"] > 0


def test_what_has_no_point_says_so():
    x = descent.ones(4)
    with descent.trace() as tr:
        x.view(2, 2)
    view = kernel(tr, "aten::view")
    assert tr.result.roofline(view["id"])["known"] is False  # a view moves nothing
    binding = [s for s in tr.result.spans() if s["floor"] == 2][0]
    assert tr.result.roofline(binding["id"])["known"] is False  # not a kernel span
    with pytest.raises(IndexError, match="the trace has no span 999999"):
        tr.result.roofline(999999)


def test_the_lessons_helper_reads_it():
    a = descent.randn(64, 64)
    with descent.trace() as tr:
        a @ a
    roofline = helpers(Spans(tr.result), tr.result)["roofline"]
    p = roofline("floor=5 span=aten::mm")
    assert p["flops"] == 2 * 64 ** 3 and p["bytes"] == 3 * 64 * 64 * 4
    assert p["intensity"] == pytest.approx(2 * 64 ** 3 / (3 * 64 * 64 * 4))
