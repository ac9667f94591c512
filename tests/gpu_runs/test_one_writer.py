"""Every file gpu_runs writes goes through the one atomic helper, gpu_runs.verified_files
(temporary file, fsync, os.replace): no module writes a file in place (issue 50)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "gpu_runs"
#: (an in-memory tarfile, ``fileobj=``, writes no file) the helper itself; the lock file's pid (a lock, not a file anyone reads whole); the forked
#: ranks' stdout / stderr (file descriptors 1 and 2)
ALLOWED = {"verified_files.py", "run_lock.py", "pipeline/launch.py"}
IN_PLACE = re.compile(r"\.write_text\(|\.write_bytes\(|\bopen\([^)]*[\"'](?:w|a|wb|ab|w\+|r\+b?)[\"']|"
                      r"\.savefig\(|\btorch\.save\(|\bnp\.save\w*\(|\bjson\.dump\(")


def test_no_module_writes_a_file_in_place():
    found = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if IN_PLACE.search(code) and "verified_files." not in code and "fileobj=" not in code:
                found.append(f"gpu_runs/{rel}:{i}: {line.strip()}")
    assert not found, "write through gpu_runs.verified_files (atomic_write / write_text / atomic_save):\n" + \
        "\n".join(found)


def test_the_check_sees_an_in_place_write():
    assert IN_PLACE.search('(out / "config.json").write_text(json.dumps(cfg))')
    assert IN_PLACE.search('with open(path, "a") as f:')
    assert IN_PLACE.search("fig.savefig(path, dpi=120)")
    assert not IN_PLACE.search("path.read_text()")
