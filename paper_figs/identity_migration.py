"""Re-key kept records by their identity (:mod:`paper_figs.records.identity`) and merge the records
of one training: ``python -m paper_figs.identity_migration [--dry-run]``.

Before identity keys, a run's key hashed its configuration as spelled, so an explicit preset
momentum and an omitted one, or a run with and without diagnostics, were stored twice (17
pairs with bit-identical curves). This moves every record to ``run_key(config)``; records
that land on one key and were made on one machine kind must have the same validation curve
(else it refuses: they are not one training); the one with diagnostics is kept. Records of
one identity made on two machine kinds are one configuration trained twice (6 of Figure 3's
seed-0 runs, whose diagnosed twins were trained on another CPU): the diagnosed one is kept,
and ``--dry-run`` prints how far the two realizations ended apart. ``MAP_FILE`` gets
``moves`` (old key -> new key) and ``kept_from`` (new key -> the old key of the record kept
under it: what a sample drawn by key before the migration drew it by); the tests check that
every old key maps to one record.
Idempotent: a store already keyed by identity is left as it is.
"""
from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

from .records.cache import config_hash, write_atomically
from .records.identity import diagnosed, run_key
from .records.machine_regimes import machine_kind
from .records.kept import KeptError, KeptStore, content_sha256, dumps, seal

MAP_FILE = Path(__file__).resolve().parent / "identity_migration.json"


def original_keys(key: str, path: Path = MAP_FILE) -> tuple[str, ...]:
    """The keys the record now under ``key`` was stored under before the migration (itself
    alone if it did not move): a record that was two records of one training is each of them
    for a sample drawn by key before the migration (paper_figs.cross_machine)."""
    return _before(str(path)).get(key, (key,))


@functools.lru_cache(maxsize=None)
def _before(path: str) -> dict:
    p = Path(path)
    if not p.exists():
        return {}
    m = json.loads(p.read_text())
    out: dict[str, tuple] = {}
    for old, new in sorted(m["moves"].items()):
        # a key that was a record's key before the migration too counts as one of its keys
        base = (new,) if m["kept_from"].get(new, new) == new else ()
        out[new] = out.get(new, base) + (old,)
    return out


def curve(rec: dict) -> list:
    """The (step, val_loss) pairs of a record: what two records of one training share exactly."""
    return [(r.get("step"), r.get("val_loss")) for r in rec["result"].get("log", [])]


def read(store: KeptStore, key: str) -> dict:
    """A record as stored, checked as it was written: its sha256, and its key either the old
    spelling's hash or the identity's."""
    rec = json.loads(store.path(key).read_text())
    if rec.get("sha256") != content_sha256(rec) or key not in (config_hash(rec["config"]), run_key(rec["config"])):
        raise KeptError(f"kept record {store.path(key)}: broken (sha256 or key); restore it before migrating")
    return rec


def plan(store: KeptStore) -> dict[str, str]:
    """{old key: new key} for every record; ValueError when two records of one new key differ
    in their curve."""
    moves, by_new = {}, {}
    for key in store.keys():
        rec = read(store, key)
        new = run_key(rec["config"])
        moves[key] = new
        other = by_new.setdefault(new, rec)
        if other is not rec and curve(other) != curve(rec) and machine(other) == machine(rec):
            raise ValueError(f"kept records {other['key']} and {key} share the identity {new} and the machine "
                             f"{machine(rec)!r} but not their validation curve: they are not one training")
    return moves


def machine(rec: dict) -> str:
    """The machine kind a record was made on (:func:`paper_figs.records.machine_regimes.machine_kind`)."""
    return machine_kind(rec.get("provenance") or {})


def migrate(store: KeptStore, moves: dict[str, str]) -> dict[str, str]:
    """Apply ``moves``: write each identity's record (the diagnosed one where there is one) under
    its new key, resealed, and remove the old files. Returns {new key: the old key of the
    record kept under it} for every key that was written."""
    groups: dict[str, list[dict]] = {}
    for old, new in moves.items():
        groups.setdefault(new, []).append(read(store, old))
    kept_from = {}
    for new, recs in groups.items():
        best = next((r for r in recs if diagnosed(r["config"])), recs[0])
        if best["key"] != new or len(recs) > 1:
            kept_from[new] = best["key"]
            write_atomically(store.path(new), dumps(seal({**best, "key": new, "provenance": amended(best, recs, new)})))
    for old in sorted(old for old in moves if old not in groups):
        store.path(old).unlink()
    return kept_from


def amended(best: dict, recs: list[dict], new: str) -> dict:
    """``best``'s provenance with the re-keying said in its ``amended`` note."""
    prov = dict(best.get("provenance") or {})
    others = [r["key"] for r in recs if r is not best]
    moved = f"key {best['key']} -> {new}" if best["key"] != new else f"key {new} unchanged"
    note = (f"{moved} (paper_figs.records.identity: a preset momentum spelled out or omitted, with or "
            f"without diagnostics, is one run)" + (f"; merged with {', '.join(others)}" if others else "")
            + ". Results unchanged.")
    prov["amended"] = f"{prov['amended']}; {note}" if prov.get("amended") else note
    return prov


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.identity_migration",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print the moves and change nothing")
    a = ap.parse_args(argv)
    store = KeptStore()
    moves = plan(store)
    changed = {o: n for o, n in moves.items() if o != n}
    groups: dict[str, list] = {}
    for o, n in moves.items():
        groups.setdefault(n, []).append(read(store, o))
    for n, recs in sorted(groups.items()):
        if len({machine(r) for r in recs}) > 1:
            ends = ", ".join(f"{r['key']} {machine(r)} {r['result']['final_val_loss']:.4f}" for r in recs)
            print(f"identity {n}: made on two machine kinds ({ends})")
    merged = len(moves) - len(set(moves.values()))
    print(f"{len(moves)} records, {len(changed)} re-keyed, {merged} merged into another record of their training, "
          f"{len(set(moves.values()))} after")
    if a.dry_run or not changed:
        return 0
    kept_from = migrate(store, moves)
    old = json.loads(MAP_FILE.read_text()) if MAP_FILE.exists() else {"moves": {}, "kept_from": {}}
    write_atomically(MAP_FILE, json.dumps({"moves": {**old["moves"], **changed}, "kept_from": {**old["kept_from"], **kept_from}},
                                   indent=1, sort_keys=True) + "\n")
    print(f"written: {store.root} and {MAP_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
