"""The session guard of tests/conftest.py can fail: a session whose test leaves a folder in
the temp directory ends in an error naming it (and the folder is gone afterwards). That a clean session passes is the whole suite passing."""
import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")


def test_a_session_that_leaves_a_temp_folder_fails_naming_it(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_leak.py").write_text(
        "import tempfile\n\n\ndef test_leaks():\n    tempfile.mkdtemp(prefix='planted_leak_')\n")
    env = dict(os.environ, TMPDIR=str(tmp_path / "system_tmp"))
    (tmp_path / "system_tmp").mkdir()
    leak = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_leak.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert leak.returncode != 0, leak.stdout[-2000:]
    assert "left these in the system temp directory: ['planted_leak_" in leak.stdout, leak.stdout[-2000:]
    left = [p.name for p in (tmp_path / "system_tmp").iterdir() if not p.name.startswith("pytest-of-")]
    assert left == [], left      # the guard removed its session folder, the leak included
