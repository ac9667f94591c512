"""The equality table of ``--dp`` (not a test: ``python tests/gpu_runs/dp_equality_table.py``):
max |train loss difference| over 8 steps of the tiny Llama (2 stages, B = 4, M = 2) between
--dp 2 (4 processes), --dp 1 and the single-process trainer, per schedule x optimizer."""
import pathlib
import sys
import tempfile

import numpy as np

sys.path[:0] = [str(pathlib.Path(__file__).resolve().parents[2]), str(pathlib.Path(__file__).parent)]
import test_pipeline_dp as T  # noqa: E402


def main():
    with tempfile.TemporaryDirectory(prefix="dp_table_") as tmp:
        table(pathlib.Path(tmp))


def table(d):
    corpus = d / "corpus"
    corpus.mkdir()
    rng = np.random.default_rng(0)  # the corpus of test_pipeline_llama's fixture
    words = ["pipeline", "stage", "delay", "momentum", "gradient", "weight", "version", "flush",
             "bubble", "schedule", "muon", "adamw", "the", "a", "of", "and", "is", "one", "step"]
    for i in range(40):
        (corpus / f"doc{i:02d}.txt").write_text(" ".join(rng.choice(words, size=400)) + "\n")
    diff = lambda a, b: max(abs(x["train_loss"] - y["train_loss"]) for x, y in zip(a, b))
    print("case               | dp2 vs dp1 | dp2 vs trainer | dp1 vs trainer")
    for s, m, e in T.LLAMA:
        for o in ("adamw", "muon"):
            want, g1, g2, *_ = T.llama_case(s, m, e, o, str(corpus), d / f"{s}{e}{o}")
            name = f"{'sync (1f1b)' if m == 'sync' else '2bw + EF' if e else '2bw'} {o}"
            print(f"{name:18s} | {diff(g2, g1):10.2e} | {diff(g2, want):14.2e} | {diff(g1, want):14.2e}", flush=True)


if __name__ == "__main__":
    main()
