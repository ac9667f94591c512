"""One word for the delay: the older spellings do not grow back.

The delay of a run is ``lmo.variants.Delay``, stored as ``TrainConfig.delay`` and asked by
every package; "variant" and "mode" were older names for it (``variant_of``, ``mode_of``,
``cfg.mode``, "the trainer's modes"). What remains of them in the delay's own code and prose
(gpu_runs, lmo/variants.py, docs/design.md) is counted here, and the count may only shrink:
the JSON key ``mode`` (the kept records' spelling, ``gpu_runs.delay_fields``), the sweep's
``--variants`` option and its run names, the predictions' ``variant`` column, the retired
forwards ``variant_of`` / ``mode_of`` in lmo/variants.py and words that mean something else
(a file's mode) are part of today's count. ``lmo.variants`` (the module's name) is not counted.
docs/interfaces.md is left out: theory and verify name their recursions "variants".

Likewise the pipeline decides by the run's delay (``run.delay.stale_point``, ...), not by
comparing the schedule's name with "pipedream": the one comparison left is the schedule's own
action list (``gpu_runs.pipeline.schedules.stage_actions``, the layout itself).
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the older names of the delay, as words (``lmo.variants``, the module, excepted)
OLD = re.compile(r"(?<!lmo\.)\b(variants?|variant_of|mode_of|modes?)\b", re.I)
#: today's count (194 over the same files before the delay was stored, at 6f9dfe4)
CEILING = 118
#: a decision by the schedule's name where the run's delay should be asked
BY_SCHEDULE = re.compile(r"schedule\)?\s*[!=]=\s*(\"pipedream\"|PIPEDREAM)")
BY_SCHEDULE_CEILING = {"gpu_runs/pipeline/schedules.py": 1}


def _files():
    return sorted((ROOT / "gpu_runs").rglob("*.py")) + [ROOT / "lmo" / "variants.py", ROOT / "docs" / "design.md"]


def count(pattern: re.Pattern, texts: dict[str, str]) -> dict[str, int]:
    """{file: matches of ``pattern``} for the files with any."""
    return {name: n for name, text in texts.items() if (n := len(pattern.findall(text)))}


def _texts():
    return {str(f.relative_to(ROOT)): f.read_text() for f in _files()}


def test_old_spellings_of_the_delay_do_not_grow_back():
    per = count(OLD, _texts())
    assert sum(per.values()) <= CEILING, (
        f"{sum(per.values())} uses of variant / mode as the delay's name (at most {CEILING}): say "
        f"'the delay' and ask TrainConfig.delay / lmo.variants.Delay; per file: {per}")


def test_the_pipeline_asks_the_delay_not_the_schedule_name():
    per = count(BY_SCHEDULE, _texts())
    assert per == BY_SCHEDULE_CEILING, per


def test_the_counts_can_fail():
    """A planted old spelling and a planted decision by the schedule's name are both counted."""
    texts = _texts()
    texts["gpu_runs/train.py"] += "\nif cfg.mode == 'sync' and variant_of(m):\n    pass\n"
    texts["gpu_runs/pipeline/worker.py"] += "\nx = run.parallel.schedule == \"pipedream\"\n"
    assert sum(count(OLD, texts).values()) == sum(count(OLD, _texts()).values()) + 2
    assert count(BY_SCHEDULE, texts)["gpu_runs/pipeline/worker.py"] == 1
