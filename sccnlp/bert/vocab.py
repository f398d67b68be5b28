"""WordPiece vocabulary: train one with `tokenizers` or check a given `vocab.txt`, and load the fast tokenizer."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sccnlp.errors import SccError

# BERT's special tokens. DATA_FORMAT.md fixes [PAD] = 0; the others are looked up by name in the vocabulary.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_VOCAB = 65536  # token ids are stored as uint16


def read_vocab(path: str | os.PathLike[str]) -> list[str]:
    """Tokens of a vocab.txt (one a line), checked for the BERT special tokens and the uint16 id range."""
    file = Path(path)
    if not file.is_file():
        raise SccError(f"vocabulary file {file} does not exist: give an existing vocab.txt (one token a line) or "
                       "leave the vocabulary unset to train one from the corpus")
    tokens = file.read_text(encoding="utf-8").splitlines()
    while tokens and not tokens[-1].strip():
        tokens.pop()
    if not tokens:
        raise SccError(f"vocabulary file {file} is empty: give a vocab.txt with one token a line")
    if tokens[0] != "[PAD]":
        raise SccError(f"vocabulary file {file} starts with {tokens[0]!r}, the shard format needs [PAD] as token 0 "
                       "(BERT order: [PAD] [UNK] [CLS] [SEP] [MASK] ...): use a BERT vocab.txt")
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise SccError(f"vocabulary file {file} lacks the special token(s) {' '.join(missing)}: use a BERT vocab.txt")
    if len(tokens) > MAX_VOCAB:
        raise SccError(f"vocabulary file {file} has {len(tokens)} tokens, the shard format stores ids as uint16 "
                       f"(at most {MAX_VOCAB}): use a smaller vocabulary")
    return tokens


def check_vocab_size(path: str | os.PathLike[str], tokens: Sequence[str], expected: int) -> None:
    """A given vocabulary must have exactly the size the model is configured for (`expected` > 0)."""
    if expected and len(tokens) != expected:
        raise SccError(f"vocabulary size mismatch: {path} has {len(tokens)} tokens but the vocabulary size is set "
                       f"to {expected} (bert_vocab_size / --vocab-size): set it to {len(tokens)} or give the "
                       "vocab.txt the model was configured for")


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def train_vocab(corpus: str | os.PathLike[str], vocab_size: int, lowercase: bool, out_file: str | os.PathLike[str],
                min_frequency: int = 2, limit_alphabet: int = 1000) -> list[str]:
    """Train a WordPiece vocabulary of `vocab_size` tokens on `corpus`; write it atomically to `out_file`."""
    if vocab_size < len(SPECIAL_TOKENS) + 100 or vocab_size > MAX_VOCAB:
        raise SccError(f"vocabulary size {vocab_size} is out of range: choose between {len(SPECIAL_TOKENS) + 100} "
                       f"and {MAX_VOCAB} (8192 for the demo, 30522 like BERT)")
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                       lowercase=lowercase)
    tokenizer.train(files=[str(corpus)], vocab_size=vocab_size, min_frequency=min_frequency,
                    limit_alphabet=limit_alphabet, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                    wordpieces_prefix="##")
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".vocab-") as tmp:
        tokenizer.save_model(tmp)
        written = Path(tmp) / "vocab.txt"
        tokens = read_vocab(written)
        shutil.move(str(written), out.with_suffix(".tmp"))
        os.replace(out.with_suffix(".tmp"), out)
    return tokens


def load_tokenizer(vocab_file: str | os.PathLike[str], lowercase: bool) -> Any:
    """The fast (Rust) BERT WordPiece tokenizer over `vocab_file`."""
    from tokenizers import BertWordPieceTokenizer

    return BertWordPieceTokenizer(str(vocab_file), clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                  lowercase=lowercase)


def encode_sentences(tokenizer: Any, sentences: Sequence[str], batch: int = 8192) -> list[list[int]]:
    """Token ids of each sentence (no special tokens), encoded in batches."""
    ids: list[list[int]] = []
    for start in range(0, len(sentences), batch):
        encodings = tokenizer.encode_batch(list(sentences[start:start + batch]), add_special_tokens=False)
        ids.extend(enc.ids for enc in encodings)
    return ids
