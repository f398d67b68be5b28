# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Whether the storage of a BERT run has room for its next checkpoints: the size of one checkpoint of a model
(weights and the optimizer's two moments, fp32) and the refusal the bert role shows before it launches a run.
Pure functions: the node only reports its free bytes."""

from __future__ import annotations

# hidden size, layers, intermediate size (sccnlp.node.bert.model.SIZES; the node-side package is not imported here)
MODEL_DIMS = {"tiny": (64, 2, 256), "base": (768, 12, 3072), "large": (1024, 24, 4096)}
BYTES_PER_PARAM = 12  # fp32 weight + two fp32 optimizer moments (LAMB, AdamW)
CHECKPOINTS_AHEAD = 2  # the next checkpoint is written beside the kept ones, then the oldest goes; one more as margin
FLOOR_GIB = 1.0
GIB = 2 ** 30


def bert_params(model: str, vocab_size: int, max_positions: int = 512) -> int:
    """Parameters of a BERT pretraining model (encoder, embeddings, pooler, MLM and NSP heads), to within 1%."""
    hidden, layers, inter = MODEL_DIMS[model]
    vocab = -(-max(int(vocab_size), 1) // 64) * 64  # the trainer rounds up to a multiple of 64
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    embeddings = (vocab + max_positions + 2) * hidden + 2 * hidden
    heads = hidden * hidden + hidden + hidden * hidden + 3 * hidden + vocab + 2 * hidden + 2
    return layers * per_layer + embeddings + heads


def checkpoint_gib(model: str, vocab_size: int) -> float:
    return bert_params(model, vocab_size) * BYTES_PER_PARAM / GIB


def required_free_gib(model: str, vocab_size: int, min_free_gib: float = 0.0) -> float:
    """bert_min_free_gib when set (> 0), else room for CHECKPOINTS_AHEAD checkpoints, at least FLOOR_GIB."""
    if float(min_free_gib) > 0:
        return float(min_free_gib)
    return max(FLOOR_GIB, CHECKPOINTS_AHEAD * checkpoint_gib(model, vocab_size))


def free_space_problems(free_bytes: object, node: str, path: str, model: str, vocab_size: int,
                        min_free_gib: float = 0.0) -> list[str]:
    """[] when `path` on `node` has the free space the next checkpoints need, else one message with the fix."""
    if model not in MODEL_DIMS:
        return ["%s: bert_model %s is not one of %s" % (node, model, ", ".join(MODEL_DIMS))]
    try:
        free = int(str(free_bytes).strip())
    except ValueError:
        return ["%s: the free space of %s could not be read (%r): check that the shared storage is mounted"
                % (node, path, str(free_bytes).strip()[-200:])]
    need = required_free_gib(model, vocab_size, min_free_gib)
    if free >= need * GIB:
        return []
    how = ("bert_min_free_gib %g" % float(min_free_gib)) if float(min_free_gib) > 0 else (
        "bert_min_free_gib 0 = automatic: %d checkpoints of bert-%s at about %.2f GiB each, at least %g GiB"
        % (CHECKPOINTS_AHEAD, model, checkpoint_gib(model, vocab_size), FLOOR_GIB))
    return ["%s: %s has %.2f GiB free, below the %.2f GiB the next checkpoints need (%s): a checkpoint write would "
            "fail mid-run. Fix: free space on that storage (old runs under bert_runs_root, old data under "
            "bert_data_root) or enlarge it; set bert_min_free_gib only if you know the checkpoints are smaller"
            % (node, path, free / GIB, need, how)]
