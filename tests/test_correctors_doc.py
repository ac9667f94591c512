"""docs/correctors.md, the theory's prediction for the delay correctors (issue 41), prints
its own table: the page's python block is run as written, and every line it prints must
stand in the page, so the predicted numbers cannot drift from the code that makes them."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "correctors.md"


def _printed(text: str) -> list[str]:
    """The lines the page's one python block prints."""
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "docs/correctors.md", "exec"), {"__name__": "correctors_doc"})
    return out.getvalue().splitlines()


def _missing(text: str, lines: list[str]) -> list[str]:
    have = set(text.splitlines())
    return [line for line in lines if line not in have]


def test_the_prediction_table_is_what_its_code_prints():
    text = DOC.read_text()
    lines = _printed(text)
    assert len(lines) == 12
    assert not _missing(text, lines)


def test_a_changed_number_is_caught():
    text = DOC.read_text()
    lines = _printed(text)
    planted = text.replace("| Muon (0.95) | 4 | 3.88 |", "| Muon (0.95) | 4 | 3.89 |")
    assert [line[:24] for line in _missing(planted, lines)] == ["| Muon (0.95) | 4 | 3.88"]
