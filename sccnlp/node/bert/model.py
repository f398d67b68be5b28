"""What the BERT sizes are and what a step costs: the model sizes, the `transformers` BertConfig the encoder
(`sccnlp.node.bert.encoder`) and the benchmark's peer are built from, the FLOP counts behind MFU, the weight-decay
rule and whether fp8 can run on a rank.
"""

from __future__ import annotations

from typing import Any

from sccnlp.node.errors import SccError

SIZES: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 256},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
}


def size_name(model: str) -> str:
    name = model.removeprefix("bert-")
    if name not in SIZES:
        raise SccError(f"unknown --model {model!r}: choose one of "
                       f"{', '.join('bert-' + s for s in SIZES)}")
    return name


def pad_vocab(vocab_size: int, multiple: int = 64) -> int:
    """Embedding rows rounded up (tensor-core friendly shapes); the extra rows are never a label."""
    return -(-vocab_size // multiple) * multiple


def build_config(model: str, vocab_size: int, seq_len: int, dropout: float = 0.1, attn: str = "sdpa",
                 attn_dropout: float | None = None) -> Any:
    from transformers import BertConfig

    dims = SIZES[size_name(model)]
    # One Any-valued mapping: BertConfig's typed signature has no attn_implementation (a PretrainedConfig kwarg).
    settings: dict[str, Any] = {
        "vocab_size": vocab_size, "max_position_embeddings": max(512, seq_len), "type_vocab_size": 2,
        "hidden_dropout_prob": dropout,
        "attention_probs_dropout_prob": dropout if attn_dropout is None else attn_dropout,
        "attn_implementation": attn, **dims}
    return BertConfig(**settings)


def encoder_params(config: Any) -> int:
    """Parameters of the encoder layers (N_encoder: no embeddings, pooler or heads)."""
    h, inter = config.hidden_size, config.intermediate_size
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h  # attn qkvo, ffn, two LayerNorms
    return int(config.num_hidden_layers * per_layer)


def head_flops_per_prediction(config: Any) -> float:
    """Training FLOPs of the MLM head for one masked position: 6 x (transform h*h + decoder h*V)."""
    h = config.hidden_size
    return 6.0 * (h * h + h * config.vocab_size)


def flops_per_token(config: Any, seq_len: int) -> float:
    """Encoder training FLOPs per token: 6 x N_encoder + 12 x layers x hidden x seq (attention scores and
    context, forward and backward). BERT-large at seq 128: 1.85e9; at 512: 1.96e9."""
    return 6.0 * encoder_params(config) + 12.0 * config.num_hidden_layers * config.hidden_size * seq_len


def step_flops(config: Any, seq_len: int, tokens: int, masked: int) -> float:
    """Model FLOPs of `tokens` real (non-padding) tokens and `masked` MLM predictions (docs/bench/bert.md):
    tokens x (6 N_encoder + 12 L d s) + masked x 6 (d^2 + d V). Padding and the skipped rows of the last layer are
    not counted as work; attention is counted over the row length s."""
    return tokens * flops_per_token(config, seq_len) + masked * head_flops_per_prediction(config)


def no_decay(name: str) -> bool:
    """Biases and LayerNorm weights get no weight decay (BERT recipe)."""
    return name.endswith(".bias") or "LayerNorm" in name or "layer_norm" in name


FP8_MIN_CAPABILITY = (8, 9)  # Ada and Hopper: the first GPUs with FP8 tensor cores (compat_matrix.yml: fp8)


def fp8_problem(device_type: str, gpu_name: str, capability: tuple[int, int] | None, torchao_error: str) -> str:
    """Why `--precision fp8` cannot run on this rank ('' when it can): it needs an NVIDIA GPU with FP8 tensor cores
    (compute capability 8.9 or newer) and torchao's float8 training in the training venv."""
    if device_type != "cuda":
        return ("--precision fp8 needs an NVIDIA GPU with FP8 tensor cores (Ada, Hopper or newer); this rank runs "
                "on the CPU. Fix: use --precision auto (bert_precision: auto)")
    if capability is None or tuple(capability) < FP8_MIN_CAPABILITY:
        have = "unknown" if capability is None else f"{capability[0]}.{capability[1]}"
        return (f"--precision fp8 needs FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, "
                f"Blackwell); this rank's GPU {gpu_name} has compute capability {have}. Fix: use --precision bf16 "
                "(bert_precision: bf16)")
    if torchao_error:
        return (f"--precision fp8 needs torchao's float8 training in the training venv ({torchao_error}). Fix: "
                "install torchao==0.18.0 into the training venv (it is not in the pip lock yet) or use --precision "
                "bf16")
    return ""
