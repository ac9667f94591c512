"""Kept results: finished training runs stored in the repository, one small record per run.

Layout: ``paper_figs/kept/<key>.json``, ``key`` = the run's cache key (``run_key``: the hash of
the identity, :mod:`paper_figs.records.identity`, of its full TrainConfig without the where-to-write
fields, :func:`paper_figs.records.runs.full_config`), so
a kept record is found exactly when the wanted run has the same configuration, trainer
defaults included. One record (a few KB)::

    {"format": 2, "key": ..., "settings": {profile's TrainConfig arguments},
     "config": {the full TrainConfig; run_key(config) == key},
     "result": {"final_val_loss": ..., "log": [one row per evaluation: step, val_loss,
                train_loss, lr], "head": [every logged row up to HEAD_STEPS: step,
                train_loss, lr], "n_params": ..., "tokens_per_s": ...,
                "diagnostics": [one row per diagnostics record, DIAG_FIELDS; only for a
                run trained with diag_every > 0]},
     "wall_s": ..., "provenance": {"command", "commit", "machine", "finished_at"},
     "sha256": sha256 of the canonical JSON of every other field}

Integrity: :meth:`KeptStore.get` checks, at every read, that the config hashes to the key
*and* that ``sha256`` matches the record's content (config, result, log, provenance), so
a result edited by hand is refused by name (:class:`KeptError`), never reported as kept.

``head`` is what :mod:`paper_figs.replay` retrains and compares. Records are written by
``python -m paper_figs.keep`` from a finished cache, never by hand.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import hashlib

from .cache import KeyedDir, canonical_json, to_jsonable, write_atomically
from .identity import run_key

KEPT_DIR = Path(__file__).resolve().parent.parent / "kept"
FORMAT = 2
HEAD_STEPS = 30
EVAL_FIELDS = ("step", "val_loss", "train_loss", "lr")
HEAD_FIELDS = ("step", "train_loss", "lr", "val_loss")
#: the theory diagnostics' scalars a record keeps (gpu_runs.diagnostics; what gpu_runs.predict reads)
DIAG_FIELDS = ("step", "eta", "d_norm", "update_norm", "r", "r_over_eta", "r_over_d", "r_over_eta_matrix",
               "L_local", "sigma", "rho", "momentum_error", "momentum_error_debiased")


class KeptError(ValueError):
    """A kept record that cannot be trusted (unreadable, wrong format, hash mismatch)."""


def content_sha256(rec: dict) -> str:
    """sha256(canonical_json(record without its ``sha256`` field))."""
    return hashlib.sha256(canonical_json({k: v for k, v in rec.items() if k != "sha256"}).encode()).hexdigest()


def seal(rec: dict) -> dict:
    """``rec`` with its ``sha256`` field (re)computed."""
    body = {k: v for k, v in rec.items() if k != "sha256"}
    return {**body, "sha256": content_sha256(body)}


def compact(record: dict) -> dict:
    """The kept form of a cache record ``{"key", "config", "settings", "result", ...}``."""
    for k in ("key", "config", "result"):
        if k not in record:
            raise KeptError(f"record: no {k!r} field (is it a training record of the cache?)")
    key, log = record["key"], record["result"].get("log", [])
    if run_key(record["config"]) != key:
        raise KeptError(f"record {key}: its config does not hash to its key")
    evals = [{f: r[f] for f in EVAL_FIELDS if f in r} for r in log if r.get("val_loss") is not None]
    head = [{f: r[f] for f in HEAD_FIELDS if f in r} for r in log if r.get("step", 0) <= HEAD_STEPS]
    res = {"final_val_loss": record["result"].get("final_val_loss"), "log": evals, "head": head}
    diags = [{f: r["diagnostics"][f] for f in DIAG_FIELDS if f in r["diagnostics"]} for r in log if r.get("diagnostics")]
    if diags:   # a run trained with --diag-every (records without diagnostics keep their old form)
        res["diagnostics"] = diags
    for k in ("n_params", "tokens_per_s"):
        if k in record["result"]:
            res[k] = record["result"][k]
    return seal(to_jsonable({"format": FORMAT, "key": key, "settings": record.get("settings", {}),
                             "config": record["config"], "result": res, "wall_s": record.get("wall_s"),
                             "provenance": record.get("provenance")}))


def dumps(rec: dict) -> str:
    """JSON text, one top-level field per line and one log row per line (reviewable diffs)."""
    lines = []
    for k, v in rec.items():
        if k == "result":
            inner = []
            for rk, rv in v.items():
                if isinstance(rv, list):
                    rows = ",\n".join("   " + json.dumps(r, sort_keys=True) for r in rv)
                    inner.append(f'  {json.dumps(rk)}: [\n{rows}\n  ]' if rv else f'  {json.dumps(rk)}: []')
                else:
                    inner.append(f"  {json.dumps(rk)}: {json.dumps(rv)}")
            lines.append(f'"result": {{\n' + ",\n".join(inner) + "\n }")
        else:
            lines.append(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}")
    return "{\n " + ",\n ".join(lines) + "\n}\n"


class KeptStore(KeyedDir):
    """The directory of kept records (``paper_figs/kept/`` unless told otherwise)."""

    def __init__(self, root: str | os.PathLike = KEPT_DIR):
        super().__init__(root)

    def get(self, key: str) -> dict | None:
        """The record of ``key``, None if there is none; :class:`KeptError` if it is broken."""
        p = self.path(key)
        if not p.exists():
            return None
        try:
            rec = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise KeptError(f"kept record {p}: unreadable ({e})") from e
        if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("key") != key:
            raise KeptError(f"kept record {p}: not a format-{FORMAT} record of key {key}")
        if run_key(rec.get("config", {})) != key:
            raise KeptError(f"kept record {p}: its config does not hash to {key} (edited by hand?)")
        if rec.get("sha256") != content_sha256(rec):
            raise KeptError(f"kept record {p}: its content does not match its sha256 (a result, log or "
                            f"provenance was edited by hand); restore it with `git checkout {p}` or retrain "
                            f"the run and keep it with `python -m paper_figs.keep`")
        return rec

    def broken(self) -> list[str]:
        """One line per record that :meth:`get` refuses (unreadable, wrong format, edited)."""
        bad = []
        for k in self.keys():
            try:
                self.get(k)
            except KeptError as e:
                bad.append(str(e))
        return bad

    def refuse_broken(self, say) -> bool:
        """Say each refused record and a summary line through ``say``; True if there was any
        (the callers then exit 1: a record that cannot be trusted is never read, nor counted
        as merely missing). A file that is not a record at all (:meth:`strays`) gets a
        warning and is ignored."""
        for p in self.strays():
            say(f"warning: {p} is not a kept record (records are named <key>.json, key in "
                f"lowercase hex); ignored")
        bad = self.broken()
        for line in bad:
            say(line)
        if bad:
            say(f"{len(bad)} kept record(s) refused: restore them (git checkout) or retrain them; nothing was run")
        return bool(bad)

    def stale(self, wanted_keys) -> list[str]:
        """The keys of the kept records that match none of ``wanted_keys`` (a profile's runs)."""
        wanted = set(wanted_keys)
        return [k for k in self.keys() if k not in wanted]

    def put(self, rec: dict) -> Path:
        """Write a compact record atomically; returns its path."""
        return write_atomically(self.path(rec["key"]), dumps(rec))
