"""What `descent lesson` prints, and how: every line through shown() (Note [Text the terminal shows]).

Note [Text the terminal shows]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A terminal obeys the control characters in what it is sent: ESC starts a
sequence that can move the cursor, erase a line, set the window's title or
(on some terminals) write a file; a carriage return or a backspace draws
over what was shown; Unicode's bidirectional overrides reorder a line of
code so that it reads as something else than what runs ("Trojan Source",
CVE-2021-42574). A lesson, the code's output and a student's file can all
hold them, and the point of showing code is that what the student sees is
what runs. So everything this command prints goes through shown(): each C0
control but newline and tab, DEL, the C1 controls (0x80-0x9f: 0x9b is a
one-byte ESC [) and the bidirectional controls are written as escapes
(\\x1b, \\u202e), as Python's repr() writes them.
"""
import re
import sys
import textwrap

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

def shown(text):
    """`text` with its control characters written as escapes (Note [Text the terminal shows])."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                         else f"\\u{ord(m.group()):04x}", text)


def echo(*parts, sep=" ", end="\n", file=None, flush=False):
    """print(), through shown()."""
    print(shown(sep.join(str(p) for p in parts)), end=end, file=file if file is not None else sys.stdout,
          flush=flush)

RULE = "\u2500" * 4


def indent(text, by="    "):
    return textwrap.indent(text.rstrip("\n"), by, lambda line: True)


def line_count(text):
    n = len(text.rstrip("\n").split("\n"))
    return f"{n} line{'s' if n != 1 else ''}"
