"""The project's own BERT pretraining model: fused QKV, SDPA on views, bf16 compute over fp32 master weights.

Parameter names are those of `transformers`' `BertForPreTraining` (`bert.encoder.layer.3.attention.self.query
.weight`, `cls.predictions.decoder.weight` tied to the word embeddings, ...), so a `state_dict` loads into either
model both ways (tests/unit/bert_train/test_encoder.py).

How it is fast:
- the parameters stay fp32 (they are the optimizer's master weights); each layer casts them to the compute dtype
  (bf16 on GPU) once per use, and activations, the residual stream included, stay bf16; LayerNorm computes in fp32
  and stores bf16 (no autocast: nothing falls back to fp32 activations);
- query, key and value are one matrix product (their weights concatenated) and attention runs on views of its
  output (`scaled_dot_product_attention`, flash when no mask is needed);
- one layer is a pure function of its tensors (`layer_forward`); `torch.compile` compiles it once and every layer
  reuses the compiled code (same shapes), which fuses bias+GeLU and dropout+residual+LayerNorm;
- the last layer computes only the rows the heads read (each pair's [CLS] and the masked positions); keys and values
  still come from every row;
- packed rows (several NSP pairs per row, `pair_ids` per token): attention stays within a pair through a boolean
  block-diagonal mask, position ids restart per pair, and MLM/NSP losses are per pair;
- with `fp8=True` (Hopper/Ada GPUs) the four matrix products of every layer run in float8 through torchao's float8
  training matmul (dynamic tensorwise scales for inputs, weights and output gradients; e4m3 forward, e5m2
  gradients); embeddings, attention, LayerNorm, the heads and the fp32 master weights are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LayerFn = Callable[..., Tensor]
LinearFn = Callable[[Tensor, Tensor, Tensor], Tensor]


def linear_bf16(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """x @ w.T + b in x's dtype (the fp32 master weight cast once for this use)."""
    return F.linear(x, w.to(x.dtype), b.to(x.dtype))


def fp8_linear(emulate: bool = False) -> LinearFn:
    """x @ w.T + b with float8 inputs and weights (torchao's float8 training matmul, tensorwise dynamic scaling;
    `emulate` runs it with fp32 arithmetic for machines without FP8 tensor cores, such as CPU tests). Raises
    ImportError when torchao is not installed."""
    from torchao.float8.config import Float8LinearConfig
    from torchao.float8.float8_linear import matmul_with_hp_or_float8_args
    from torchao.float8.float8_training_tensor import LinearMMConfig, ScaledMMConfig

    config = Float8LinearConfig(emulate=emulate)
    mm_config = LinearMMConfig(*(ScaledMMConfig(emulate, gemm.use_fast_accum, False, config.pad_inner_dim)
                                 for gemm in (config.gemm_config_output, config.gemm_config_grad_input,
                                              config.gemm_config_grad_weight)))

    def linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
        out = matmul_with_hp_or_float8_args.apply(x, w.to(x.dtype).t(), mm_config, config)
        return out + b.to(out.dtype)

    return linear


def _ln(x: Tensor, ln: nn.LayerNorm, dtype: torch.dtype) -> Tensor:
    """LayerNorm in the parameters' dtype (fp32), result in the compute dtype."""
    return F.layer_norm(x.to(ln.weight.dtype), ln.normalized_shape, ln.weight, ln.bias, ln.eps).to(dtype)


def layer_forward(x: Tensor, rows: Tensor | None, mask: Tensor | None, wq: Tensor, bq: Tensor, wk: Tensor,
                  bk: Tensor, wv: Tensor, bv: Tensor, wo: Tensor, bo: Tensor, ln1_w: Tensor, ln1_b: Tensor,
                  wi: Tensor, bi: Tensor, wo2: Tensor, bo2: Tensor, ln2_w: Tensor, ln2_b: Tensor, heads: int,
                  eps: float, p_drop: float, p_attn: float, training: bool,
                  linear: LinearFn = linear_bf16) -> Tensor:
    """One post-LN BERT layer. x [B, S, H] (compute dtype); `rows` [B, R] restricts the output (and the queries)
    to those positions; `mask` [B, 1, S, S] bool (True = may attend) or None; `linear` computes the layer's four
    matrix products (bf16/fp32 by default, `fp8_linear()` for float8)."""
    dtype = x.dtype
    b, s, h = x.shape
    d = h // heads
    qkv = linear(x, torch.cat([wq, wk, wv]), torch.cat([bq, bk, bv])).view(b, s, 3, heads, d)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # views [B, heads, S, d]
    resid = x
    if rows is not None:
        idx = rows[:, None, :, None].expand(-1, heads, -1, d)
        q = q.gather(2, idx)
        resid = x.gather(1, rows[:, :, None].expand(-1, -1, h))
        if mask is not None:
            mask = mask.gather(2, rows[:, None, :, None].expand(-1, 1, -1, s))
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_attn if training else 0.0)
    ctx = ctx.transpose(1, 2).reshape(b, -1, h)
    attn = F.dropout(linear(ctx, wo, bo), p_drop, training)
    y = F.layer_norm((attn + resid).to(ln1_w.dtype), (h,), ln1_w, ln1_b, eps).to(dtype)
    inter = F.gelu(linear(y, wi, bi))
    out = F.dropout(linear(inter, wo2, bo2), p_drop, training)
    return F.layer_norm((out + y).to(ln2_w.dtype), (h,), ln2_w, ln2_b, eps).to(dtype)


class _Linear(nn.Linear):
    """nn.Linear holding parameters only (the layer function uses them)."""


class _SelfAttention(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.query, self.key, self.value = _Linear(h, h), _Linear(h, h), _Linear(h, h)


class _DenseLN(nn.Module):
    def __init__(self, n_in: int, h: int, eps: float) -> None:
        super().__init__()
        self.dense = _Linear(n_in, h)
        self.LayerNorm = nn.LayerNorm(h, eps=eps)


class _Attention(nn.Module):
    def __init__(self, h: int, eps: float) -> None:
        super().__init__()
        self.self = _SelfAttention(h)
        self.output = _DenseLN(h, h, eps)


class _Intermediate(nn.Module):
    def __init__(self, h: int, inter: int) -> None:
        super().__init__()
        self.dense = _Linear(h, inter)


class Layer(nn.Module):
    def __init__(self, h: int, inter: int, eps: float) -> None:
        super().__init__()
        self.attention = _Attention(h, eps)
        self.intermediate = _Intermediate(h, inter)
        self.output = _DenseLN(inter, h, eps)

    def tensors(self) -> tuple[Tensor, ...]:
        a, o = self.attention, self.output
        return (a.self.query.weight, a.self.query.bias, a.self.key.weight, a.self.key.bias, a.self.value.weight,
                a.self.value.bias, a.output.dense.weight, a.output.dense.bias, a.output.LayerNorm.weight,
                a.output.LayerNorm.bias, self.intermediate.dense.weight, self.intermediate.dense.bias,
                o.dense.weight, o.dense.bias, o.LayerNorm.weight, o.LayerNorm.bias)


class _Encoder(nn.Module):
    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(cfg.hidden_size, cfg.intermediate_size, cfg.layer_norm_eps)
                                   for _unused in range(cfg.num_hidden_layers))


class _Embeddings(nn.Module):
    def __init__(self, cfg: Any) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.word_embeddings = nn.Embedding(cfg.vocab_size, h, padding_idx=cfg.pad_token_id)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, h)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, h)
        self.LayerNorm = nn.LayerNorm(h, eps=cfg.layer_norm_eps)


class _Pooler(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.dense = _Linear(h, h)


class _Bert(nn.Module):
    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.embeddings = _Embeddings(cfg)
        self.encoder = _Encoder(cfg)
        self.pooler = _Pooler(cfg.hidden_size)


class _Predictions(nn.Module):
    def __init__(self, cfg: Any, word_embeddings: nn.Embedding) -> None:
        super().__init__()
        self.transform = _DenseLN(cfg.hidden_size, cfg.hidden_size, cfg.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.decoder = _Linear(cfg.hidden_size, cfg.vocab_size)
        self.decoder.weight = word_embeddings.weight  # tied, as in transformers
        self.decoder.bias = self.bias


class _Heads(nn.Module):
    def __init__(self, cfg: Any, word_embeddings: nn.Embedding) -> None:
        super().__init__()
        self.predictions = _Predictions(cfg, word_embeddings)
        self.seq_relationship = _Linear(cfg.hidden_size, 2)


class BertPretrainer(nn.Module):
    """BERT + MLM/NSP heads. `forward` takes a batch of (packed or unpacked) rows and returns (loss, mlm, nsp), or
    with `reduce=False` the per-prediction MLM losses [B, P] and per-pair NSP losses [B, K] (0 where unused)."""

    def __init__(self, cfg: Any, compute_dtype: torch.dtype = torch.float32, compile_mode: str = "none",
                 linear: LinearFn = linear_bf16) -> None:
        super().__init__()
        self.config = cfg
        self.linear = linear
        self.bert = _Bert(cfg)
        self.cls = _Heads(cfg, self.bert.embeddings.word_embeddings)
        self.compute_dtype = compute_dtype
        self.heads = cfg.num_attention_heads
        self.p_drop = float(cfg.hidden_dropout_prob)
        self.p_attn = float(cfg.attention_probs_dropout_prob)
        self.eps = float(cfg.layer_norm_eps)
        self.init_weights(cfg.initializer_range)
        self.layer_fn: LayerFn = layer_forward
        self.last_fn: LayerFn = layer_forward
        if compile_mode != "none":
            mode = None if compile_mode == "default" else compile_mode
            # Two compiled functions (full layer, rows-only last layer); every layer reuses the first.
            self.layer_fn = torch.compile(layer_forward, mode=mode, dynamic=False)
            self.last_fn = torch.compile(layer_forward, mode=mode, dynamic=False)
            self._embed = torch.compile(self._embed, mode=mode, dynamic=False)  # type: ignore[method-assign]
            self._heads = torch.compile(self._heads, mode=mode, dynamic=False)  # type: ignore[method-assign]

    def init_weights(self, std: float) -> None:
        """transformers' BERT initialisation: normal(0, std) matrices and embeddings, zero biases, unit LN."""
        for mod in self.modules():
            if isinstance(mod, nn.Linear | nn.Embedding):
                nn.init.normal_(mod.weight, 0.0, std)
            if isinstance(mod, nn.Linear) and mod.bias is not None:
                nn.init.zeros_(mod.bias)
            if isinstance(mod, nn.LayerNorm):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)
        with torch.no_grad():
            pad = self.config.pad_token_id
            if pad is not None:
                self.bert.embeddings.word_embeddings.weight[pad].zero_()

    # ----------------------------------------------------------------------------------------------- pieces

    def _embed(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> Tensor:
        e = self.bert.embeddings
        x = e.word_embeddings(input_ids) + e.token_type_embeddings(token_type_ids) + \
            e.position_embeddings(position_ids)
        x = F.layer_norm(x, x.shape[-1:], e.LayerNorm.weight, e.LayerNorm.bias, self.eps)
        return F.dropout(x, self.p_drop, self.training).to(self.compute_dtype)

    def _heads(self, cls_rows: Tensor, masked: Tensor, mlm_labels: Tensor,
               nsp_labels: Tensor) -> tuple[Tensor, Tensor]:
        dtype = self.compute_dtype
        pred = self.cls.predictions
        t = F.gelu(F.linear(masked, pred.transform.dense.weight.to(dtype), pred.transform.dense.bias.to(dtype)))
        t = _ln(t, pred.transform.LayerNorm, dtype)
        logits = F.linear(t, pred.decoder.weight.to(dtype), pred.bias.to(dtype)).float()
        mlm = F.cross_entropy(logits.flatten(0, 1), mlm_labels.flatten(), ignore_index=-100, reduction="none")
        pooled = torch.tanh(F.linear(cls_rows, self.bert.pooler.dense.weight.to(dtype),
                                     self.bert.pooler.dense.bias.to(dtype)))
        nsp_logits = F.linear(pooled, self.cls.seq_relationship.weight.to(dtype),
                              self.cls.seq_relationship.bias.to(dtype)).float()
        nsp = F.cross_entropy(nsp_logits.flatten(0, 1), nsp_labels.flatten(), ignore_index=-100, reduction="none")
        return mlm.view(mlm_labels.shape), nsp.view(nsp_labels.shape)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, mlm_positions: Tensor, mlm_labels: Tensor,
                nsp_labels: Tensor, pair_ids: Tensor | None = None, position_ids: Tensor | None = None,
                pair_starts: Tensor | None = None, reduce: bool = True) -> Any:
        """input_ids/token_type_ids [B, S]; mlm_positions/mlm_labels [B, P] (label -100 = none);
        nsp_labels [B] (one pair a row) or [B, K] with pair_starts [B, K] (label -100 = no pair); pair_ids [B, S]
        (pair number of each token; padding its own group) or None when every token may see every other."""
        b, s = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(s, device=input_ids.device).expand(b, -1)
        if nsp_labels.dim() == 1:
            nsp_labels = nsp_labels[:, None]
        if pair_starts is None:
            pair_starts = torch.zeros_like(nsp_labels)
        mask = None if pair_ids is None else (pair_ids[:, None, :, None] == pair_ids[:, None, None, :])
        x = self._embed(input_ids, token_type_ids, position_ids)
        layers: list[Layer] = list(self.bert.encoder.layer)  # type: ignore[arg-type]
        common = (self.heads, self.eps, self.p_drop, self.p_attn, self.training, self.linear)
        for layer in layers[:-1]:
            x = self.layer_fn(x, None, mask, *layer.tensors(), *common)
        k = pair_starts.size(1)
        rows = torch.cat([pair_starts, mlm_positions], dim=1)
        x = self.last_fn(x, rows, mask, *layers[-1].tensors(), *common)
        mlm, nsp = self._heads(x[:, :k], x[:, k:], mlm_labels, nsp_labels)
        if not reduce:
            return mlm, nsp
        n_mlm = (mlm_labels != -100).sum().clamp(min=1)
        n_nsp = (nsp_labels != -100).sum().clamp(min=1)
        mlm_loss = mlm.sum() / n_mlm
        nsp_loss = nsp.sum() / n_nsp
        return mlm_loss + nsp_loss, mlm_loss.detach(), nsp_loss.detach()
