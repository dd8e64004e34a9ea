"""Saved traces keep their source (issue 23, Note [Source fingerprints] in tracer/trace.h): a trace names
the version of each file its spans point at, and the app shows a line of this build's sources only when
it is the version the trace was recorded with."""
import re
import subprocess

import pytest

from test_app import APP, CLI, run_app

pytestmark = pytest.mark.skipif(not (APP and CLI), reason="the app is not built here")


def explanation(state):
    return state["explanation"]


def test_a_line_is_shown_only_from_the_version_the_trace_was_recorded_with(tmp_path):
    saved = tmp_path / "ones.descent"
    subprocess.run([CLI, "trace", "descent.ones(2) + 1", "--save", str(saved)], check=True, capture_output=True,
                   timeout=120)  # (the test's own environment: a sanitizer build's Python needs its preload)
    s, _, _ = run_app(tmp_path, "--trace", str(saved), "--step", "4", "--size", "1280x720", name="same")
    source = explanation(s)["source"]
    assert source and explanation(s)["source_match"] == "same"
    file = source.rsplit(":", 1)[0]
    # The same trace, as if recorded by a build where that file was different.
    text = saved.read_text()
    changed = tmp_path / "changed.descent"
    changed.write_text(re.sub(rf"^meta fingerprint\.{re.escape(file)} \S+$", f"meta fingerprint.{file} 0123456789abcdef",
                              text, flags=re.M))
    assert changed.read_text() != text
    s, _, _ = run_app(tmp_path, "--trace", str(changed), "--step", "4", "--size", "1280x720", name="changed")
    assert explanation(s)["source"] == source and explanation(s)["source_match"] == "changed"


def test_a_trace_recorded_before_fingerprints_says_it_cannot_tell(tmp_path):
    saved = tmp_path / "ones.descent"
    subprocess.run([CLI, "trace", "descent.ones(2) + 1", "--save", str(saved)], check=True, capture_output=True,
                   timeout=120)  # (the test's own environment: a sanitizer build's Python needs its preload)
    old = tmp_path / "old.descent"  # as a build before fingerprints wrote it
    old.write_text("".join(line for line in saved.read_text().splitlines(keepends=True)
                           if not line.startswith("meta fingerprint.")))
    s, _, _ = run_app(tmp_path, "--trace", str(old), "--step", "4", "--size", "1280x720")
    assert explanation(s)["source"] and explanation(s)["source_match"] == "unknown"
