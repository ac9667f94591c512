"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, and a guard that
the session leaves nothing in the system temp directory.

The guard: every process of the session (pytest and the subprocesses it starts, which
inherit TMPDIR) gets a private temp directory for the session; pytest's own ``tmp_path``
folders stay where pytest keeps them (``PYTEST_DEBUG_TEMPROOT``: the real temp directory).
At the end of the session that private directory must be empty, else the session fails
naming what was left (a launch's rank logs, a checkpoint folder, ...); it is removed either
way. A private directory, not a before/after listing of the shared one, so that what other
users' processes write there meanwhile is never blamed on this session."""
import getpass
import os
import shutil
import tempfile

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "25")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))

_SYSTEM_TMP = tempfile.gettempdir()
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", _SYSTEM_TMP)
# torch.compile's kernel cache is meant to outlive a session: where torch keeps it by default
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_SYSTEM_TMP, f"torchinductor_{getpass.getuser()}"))
SESSION_TMP = tempfile.mkdtemp(prefix="delayed_lmo_tests_")
os.environ["TMPDIR"] = SESSION_TMP
tempfile.tempdir = SESSION_TMP


def left_in(directory: str) -> list[str]:
    """What is in ``directory`` (sorted names)."""
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


@pytest.fixture(scope="session", autouse=True)
def nothing_left_in_the_temp_dir():
    """The session's temp directory is empty at its end (module docstring)."""
    yield
    left = left_in(SESSION_TMP)
    shutil.rmtree(SESSION_TMP, ignore_errors=True)
    assert not left, f"the test session left these in the system temp directory: {left}"
