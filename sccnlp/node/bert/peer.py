"""The peer every BERT figure is compared with: what a user would write instead of this trainer.

A plain Hugging Face pretraining loop: `transformers.BertForPreTraining` (stock forward, the MLM head on every
position, PyTorch's SDPA attention), bf16 autocast, `torch.optim.AdamW(fused=True)` on GPUs, optionally wrapped in
`torch.compile` (`hf-compile`, the default peer) or run eagerly (`hf-eager`). Same model sizes, the same vocabulary
(30,522 rows padded to a multiple of 64), the same synthetic full-length batches (`max_pred` masked positions per
sequence, random NSP labels) as `python -m sccnlp.node.bert.bench --train-args=--synthetic`. One process, one GPU (or
the CPU for the tests). Used through `python -m sccnlp.node.bert.bench --peer hf-compile`.
"""

from __future__ import annotations

import time
from typing import Any

from sccnlp.node.bert import model as bmodel

PEERS = ("hf-compile", "hf-eager")
DATA_VOCAB = 30522  # BERT's uncased WordPiece vocabulary, as the trainer's synthetic data


def synthetic_batches(batch: int, seq_len: int, max_pred: int, vocab: int, device: Any, distinct: int = 4,
                      seed: int = 0) -> list[dict[str, Any]]:
    """Stock BertForPreTraining inputs: labels -100 except `max_pred` random positions per row."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for _round in range(distinct):
        ids = torch.randint(5, vocab, (batch, seq_len), generator=gen)
        labels = torch.full((batch, seq_len), -100, dtype=torch.long)
        pos = torch.stack([torch.randperm(seq_len - 2, generator=gen)[:max_pred] + 1 for _row in range(batch)])
        labels.scatter_(1, pos, torch.randint(5, vocab, (batch, max_pred), generator=gen))
        out.append({
            "input_ids": ids.to(device),
            "token_type_ids": (torch.arange(seq_len)[None, :] >= seq_len // 2).long().expand(batch, -1)
            .contiguous().to(device),
            "attention_mask": torch.ones(batch, seq_len, dtype=torch.long).to(device),
            "labels": labels.to(device),
            "next_sentence_label": torch.randint(0, 2, (batch,), generator=gen).to(device),
        })
    return out


def bench_peer(peer: str, model: str, seq_len: int, batch: int, steps: int, warmup: int,
               max_pred: int = 0, device_name: str = "") -> dict[str, Any]:
    """Time `steps` optimizer steps of the peer loop after `warmup` (the first holds torch.compile's work)."""
    import torch
    from transformers import BertForPreTraining

    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}: choose one of {', '.join(PEERS)}")
    device = torch.device(device_name or ("cuda" if torch.cuda.is_available() else "cpu"))
    max_pred = max_pred or (20 if seq_len <= 128 else 80)
    config = bmodel.build_config(model, bmodel.pad_vocab(DATA_VOCAB), seq_len, attn="sdpa")
    net: Any = BertForPreTraining(config)
    net = net.to(device)
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, weight_decay=0.01, fused=device.type == "cuda")
    forward = torch.compile(net) if peer == "hf-compile" else net
    data = synthetic_batches(batch, seq_len, max_pred, DATA_VOCAB, device)

    def step(i: int) -> Any:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = forward(**data[i % len(data)]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    sync()
    t0 = time.perf_counter()
    first = float(step(0))
    sync()
    compile_s = time.perf_counter() - t0
    for i in range(1, max(warmup, 1)):
        step(i)
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    losses = [step(i) for i in range(steps)]
    sync()
    seconds = time.perf_counter() - t0
    tokens, masked = steps * batch * seq_len, steps * batch * max_pred
    from sccnlp.node.bert.metrics import peak_flops_for

    peak = peak_flops_for(torch.cuda.get_device_name(device)) if device.type == "cuda" else 0.0
    seq_s = steps * batch / seconds
    return {
        "model": model, "seq_len": seq_len, "batch_per_gpu": batch, "global_batch": batch, "ranks": 1,
        "steps": steps, "warmup": warmup, "data": "synthetic", "peer": peer,
        "seq_per_s": round(seq_s, 1), "seq_per_s_gpu": round(seq_s, 1), "tok_per_s_gpu": round(seq_s * seq_len),
        "real_tok_per_s_gpu": round(tokens / seconds), "padding": 0.0,
        # The same model-FLOPs count as the trainer's figure (the peer's full-vocabulary head does more work than
        # that; it is not credited, so MFU compares like with like).
        "mfu": round(bmodel.step_flops(config, seq_len, tokens, masked) / seconds / peak, 4) if peak else None,
        "step_ms": round(1000 * seconds / steps, 2), "compile_s": round(compile_s, 1),
        "first_loss": round(first, 4), "last_loss": round(float(losses[-1]), 4),
        "mem_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "train_args": f"peer={peer}", "date": time.strftime("%Y-%m-%d"),
    }


def ratios(results: list[dict[str, Any]]) -> list[str]:
    """`label: X.XXx the peer` for each trainer result with a peer result of the same model and seq_len."""
    peers = {(r["model"], r["seq_len"]): r for r in results if r.get("peer") == "hf-compile"}
    lines = []
    for r in results:
        p = peers.get((r["model"], r["seq_len"]))
        if r.get("peer") or p is None:
            continue
        lines.append(f"{r.get('label') or r['model']}: {r['seq_per_s_gpu'] / p['seq_per_s_gpu']:.2f}x the peer "
                     f"({p.get('label') or 'hf-compile'}, Hugging Face + torch.compile: {p['seq_per_s_gpu']:.1f} "
                     f"seq/s/GPU) at {r['model']} seq {r['seq_len']}")
    return lines
