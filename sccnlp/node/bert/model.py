"""BERT pretraining model (transformers' BertForPreTraining) with the MLM head run on masked positions only.

The encoder and heads are the stock `transformers` modules (parameter names such as
`bert.encoder.layer.3.attention.self.query.weight`); only the forward differs: the hidden states of the (at most
`max_pred`) masked positions are gathered before the head transform and the vocabulary projection, which skips
~85% of the head's work and of its logits' memory.
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


def build_model(config: Any, full_head: bool = False) -> Any:
    """BertForPreTraining's modules under a forward that returns (loss, mlm_loss, nsp_loss).

    `full_head` runs the MLM head over every position, as the stock model does (the slow baseline).
    """
    import torch
    from torch import nn
    from transformers import BertForPreTraining

    class _BertPretrainer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            hf = BertForPreTraining(config)
            self.config = config
            self.bert = hf.bert
            self.cls = hf.cls
            if self.cls.predictions.decoder.weight is not self.bert.embeddings.word_embeddings.weight:
                self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

        def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                    mlm_positions: torch.Tensor, mlm_labels: torch.Tensor,
                    nsp_labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            out = self.bert(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                            return_dict=False)
            sequence, pooled = out[0], out[1]
            hidden = sequence.size(-1)
            if full_head:
                logits = self.cls.predictions(sequence).float()  # [B, S, V]
                mlm_labels = torch.full(input_ids.shape, -100, dtype=mlm_labels.dtype, device=input_ids.device) \
                    .scatter(1, mlm_positions, mlm_labels)
            else:
                masked = sequence.gather(1, mlm_positions.unsqueeze(-1).expand(-1, -1, hidden))  # [B, P, H]
                logits = self.cls.predictions(masked).float()
            mlm_loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), mlm_labels.view(-1),
                                                   ignore_index=-100)
            nsp_logits = self.cls.seq_relationship(pooled).float()
            nsp_loss = nn.functional.cross_entropy(nsp_logits, nsp_labels)
            return mlm_loss + nsp_loss, mlm_loss.detach(), nsp_loss.detach()

    return _BertPretrainer()


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
