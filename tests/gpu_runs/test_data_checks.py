"""Bad data is refused before training: ids checked over the whole file, headerless files
only when named *.u16, and file names that are not UTF-8."""
import os

import numpy as np
import pytest

import gpu_runs.data as data
from gpu_runs.data import check_token_ids, get_corpus, is_val_document, load_shard
from test_data import write_header_shard


def test_large_id_beyond_the_first_chunk_sets_the_vocab(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "CHECK_CHUNK", 1000)   # several chunks; the big id is in the last
    toks = np.arange(5000) % 200
    toks[4321] = 60000
    write_header_shard(tmp_path / "a.bin", toks)
    c = get_corpus(tmp_path / "a.bin")
    assert c.vocab_size == 60001          # the old prefix scan gave max(201, 50257) = 50257


def test_negative_and_huge_ids_refused_with_file_and_offset(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "CHECK_CHUNK", 700)
    neg = np.arange(3000, dtype=np.int64)
    neg[2222] = -5
    np.save(tmp_path / "neg.npy", neg)
    with pytest.raises(ValueError, match=r"neg\.npy.*-5 at offset 2222"):
        get_corpus(tmp_path / "neg.npy")
    big = np.arange(3000, dtype=np.int64)
    big[1500] = data.MAX_VOCAB
    with pytest.raises(ValueError, match=r"at offset 1500"):
        check_token_ids(big, "big")


def test_headerless_bin_refused_u16_accepted(tmp_path):
    (tmp_path / "random.bin").write_bytes(os.urandom(4000))
    with pytest.raises(ValueError, match=r"random\.bin.*header.*\.u16"):
        get_corpus(tmp_path / "random.bin")
    toks = (np.arange(4000) % 300).astype(np.uint16)
    (tmp_path / "tokens.u16").write_bytes(toks.tobytes())
    c = get_corpus(tmp_path / "tokens.u16")
    assert len(c.train) + len(c.val) == 4000 and c.vocab_size == 50257
    with pytest.raises(ValueError, match="odd.u16"):
        (tmp_path / "odd.u16").write_bytes(b"\x01\x02\x03")
        load_shard(tmp_path / "odd.u16")


def test_non_utf8_file_name(tmp_path):
    d = os.fsencode(tmp_path)
    for i in range(25):
        with open(os.path.join(d, b"doc\xff" + str(i).encode() + b".txt"), "wb") as f:
            f.write(b"some text " * 30)
    c = get_corpus(tmp_path)
    assert len(c.train_docs) + len(c.val_docs) == 25


def test_val_split_unchanged_for_utf8_names():
    import zlib
    for name in ("stdlib:os.py", "caf\u00e9.txt", "pydoc:if"):
        assert is_val_document(name, 7) == (zlib.crc32(name.encode("utf-8")) % 7 == 0)
