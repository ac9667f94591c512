"""Where a result was produced: the command, the commit and the machine.

Every training record in the cache carries ``provenance()``, and :mod:`paper_figs.keep`
copies it into the kept record, so the report can say of any number "trained by
``make figs PROFILE=full`` at commit X on machine Y".
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE_DIRS = ("lmo", "theory", "verify", "gpu_runs", "paper_figs")  # what decides a run's numbers
DATA_DIRS = (":(exclude)paper_figs/kept",)  # kept records are results, not code: new ones are not dirt


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """``git rev-parse --short=12 HEAD`` of this checkout, ``+dirty`` if the code directories
    have uncommitted changes, or ``unknown (not a git checkout)``."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", *CODE_DIRS, *DATA_DIRS],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def machine() -> str:
    """CPU model, logical CPUs, OS, Python and torch versions, e.g.
    ``Intel(R) Xeon(R) ... x2, Linux 6.1, Python 3.12.3, torch 2.13.0``."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        import torch
        tv = f", torch {torch.__version__}"
    except ImportError:
        tv = ""
    return (f"{cpu} x{os.cpu_count()}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}{tv}")


@functools.lru_cache(maxsize=1)
def cpu_capability() -> str | None:
    """The vector instruction set torch dispatches its CPU kernels to
    (``torch.backends.cpu.get_cpu_capability()``, e.g. ``AVX512``; ``ATEN_CPU_CAPABILITY``
    overrides it): with the CPU model it names the kind of machine a run was made on
    (``paper_figs.records.machine_regimes.machine_kind``). None without torch."""
    try:
        import torch
        return str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError):
        return None


def provenance(command: str) -> dict:
    """{"command", "commit", "machine", "cpu_capability", "finished_at"} of a result produced
    now by ``command``."""
    return {"command": command, "commit": commit(), "machine": machine(), "cpu_capability": cpu_capability(),
            "finished_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def describe(prov: dict | None) -> str:
    """One line for the report: 'trained by `CMD` at commit C on MACHINE, DATE'."""
    if not prov:
        return "provenance not recorded"
    return (f"trained by `{prov.get('command', '?')}` at commit {prov.get('commit', '?')} "
            f"on {prov.get('machine', '?')}, {prov.get('finished_at', '?')}")
