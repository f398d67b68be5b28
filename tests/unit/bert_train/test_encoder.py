"""The project's encoder (sccnlp.node.bert.encoder) against transformers' BertForPreTraining (one forward and
backward, checkpoints both ways, the trainer's optimizer steps against a stock loop's), packed rows against the same
pairs unpacked, and the device-side skip of LAMB."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the encoder tests need torch (pip install torch transformers)")
transformers = pytest.importorskip("transformers", reason="the encoder tests need transformers")

from sccnlp.node.bert import model as bmodel  # noqa: E402
from sccnlp.node.bert import optim, train  # noqa: E402
from sccnlp.node.bert import shards as bshards  # noqa: E402
from sccnlp.node.bert.data import ShardSet, to_batch  # noqa: E402
from sccnlp.node.bert.encoder import BertPretrainer  # noqa: E402
from sccnlp.node.bert.optim import Lamb  # noqa: E402

from .conftest import write_shards  # noqa: E402

VOCAB = 128
# fp32 on both sides, same weights and inputs: loss within 1e-5 (relative), every parameter's gradient within
# 1e-4 of transformers' (relative to that gradient's norm, plus 1e-7 absolute for the key biases, whose gradient is
# zero in exact arithmetic: softmax ignores a constant added to every score).
LOSS_RTOL, GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-4, 1e-7


def _config(dropout: float = 0.0) -> object:
    return bmodel.build_config("bert-tiny", VOCAB, 32, dropout, attn="eager")


def _inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    b, s, p = 4, 32, 5
    lengths = torch.tensor([32, 20, 25, 32])
    ids = torch.randint(5, VOCAB, (b, s), generator=g)
    cols = torch.arange(s)[None, :]
    ids[cols >= lengths[:, None]] = 0
    pos = torch.stack([torch.randperm(18, generator=g)[:p] + 1 for _unused in range(b)]).sort(1).values
    labels = torch.randint(5, VOCAB, (b, p), generator=g)
    labels[1, 3:] = -100  # fewer predictions in one row
    return {"ids": ids, "types": (cols >= 10).long().expand(b, -1), "lengths": lengths, "pos": pos,
            "labels": labels, "nsp": torch.tensor([0, 1, 1, 0])}


def _hf_loss(hf: torch.nn.Module, x: dict[str, torch.Tensor]) -> torch.Tensor:
    mask = (torch.arange(x["ids"].size(1))[None, :] < x["lengths"][:, None]).long()
    full = torch.full(x["ids"].shape, -100).scatter(1, x["pos"], x["labels"])
    return hf(input_ids=x["ids"], token_type_ids=x["types"], attention_mask=mask, labels=full,
              next_sentence_label=x["nsp"]).loss


def _own_loss(own: BertPretrainer, x: dict[str, torch.Tensor]) -> torch.Tensor:
    pair_ids = (torch.arange(x["ids"].size(1))[None, :] >= x["lengths"][:, None]).long()
    return own(x["ids"], x["types"], x["pos"], x["labels"], x["nsp"], pair_ids=pair_ids)[0]


def test_same_loss_and_gradients_as_transformers() -> None:
    torch.manual_seed(0)
    cfg = _config()
    hf = transformers.BertForPreTraining(cfg)
    own = BertPretrainer(cfg)
    assert set(own.state_dict()) == set(hf.state_dict())  # transformers' parameter names, nothing more or less
    own.load_state_dict(hf.state_dict(), strict=True)
    x = _inputs()
    ref, got = _hf_loss(hf, x), _own_loss(own, x)
    assert got.item() == pytest.approx(ref.item(), rel=LOSS_RTOL)
    ref.backward()
    got.backward()
    hf_params = dict(hf.named_parameters())
    checked = 0
    for name, p in own.named_parameters():
        g_ref = hf_params[name].grad
        assert p.grad is not None and g_ref is not None, name
        err = (p.grad - g_ref).norm().item()
        assert err <= GRAD_RTOL * g_ref.norm().item() + GRAD_ATOL, (name, err, g_ref.norm().item())
        checked += 1
    assert checked == len(hf_params) == 46


def test_checkpoints_load_both_ways() -> None:
    torch.manual_seed(1)
    cfg = _config()
    own = BertPretrainer(cfg)
    hf = transformers.BertForPreTraining(cfg)
    hf.load_state_dict(own.state_dict(), strict=True)  # own -> transformers
    x = _inputs(3)
    assert _hf_loss(hf.eval(), x).item() == pytest.approx(_own_loss(own.eval(), x).item(), rel=LOSS_RTOL)
    back = BertPretrainer(cfg)
    back.load_state_dict(hf.state_dict(), strict=True)  # transformers -> own
    for name, value in own.state_dict().items():
        assert torch.equal(value, back.state_dict()[name]), name
    # tied as in transformers: the decoder is the word embedding matrix, its bias the predictions bias
    assert back.cls.predictions.decoder.weight is back.bert.embeddings.word_embeddings.weight
    assert back.cls.predictions.decoder.bias is back.cls.predictions.bias


def test_packed_rows_give_the_same_per_pair_losses(tmp_path: Path) -> None:
    """Pairs from a shard, unpacked (one a row) and packed (several a row): the per-prediction MLM losses and the
    per-pair NSP losses are the same pair by pair (fp64, so within 1e-9)."""
    phase = write_shards(tmp_path / "d", counts=(24,), seq_len=32, max_pred=5, vocab_size=120)
    shards = ShardSet(phase)
    records = shards.take(np.arange(24))
    # shorter pairs so that several share a row: cut each to its first 8..20 tokens (still [CLS] ... ending [SEP])
    rng = np.random.default_rng(0)
    for i in range(24):
        cut = int(rng.integers(8, 21))
        records["input_ids"][i, cut - 1] = 3
        records["input_ids"][i, cut:] = 0
        records["segment_ids"][i, cut:] = 0
        records["lengths"][i] = cut
        keep = records["mlm_positions"][i] < cut - 1
        k = int(keep[: records["mlm_count"][i]].sum())
        records["mlm_positions"][i, :k] = records["mlm_positions"][i][keep][:k]
        records["mlm_positions"][i, k:] = 0
        records["mlm_ids"][i, :k] = records["mlm_ids"][i][keep][:k]
        records["mlm_count"][i] = k
    packed = bshards.pack_fields({k: v.copy() for k, v in records.items()}, 32, 5)
    assert len(packed["lengths"]) < 24 / 1.5  # several pairs a row
    assert sorted(packed["pair_lengths"][packed["pair_lengths"] > 0].tolist()) == sorted(records["lengths"].tolist())
    assert packed["lengths"].max() <= 32

    torch.manual_seed(2)
    model = BertPretrainer(bmodel.build_config("bert-tiny", 120, 32, 0.0), compute_dtype=torch.float64).double()
    model.eval()

    def run(batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return model(batch["input_ids"], batch["token_type_ids"], batch["mlm_positions"], batch["mlm_labels"],
                         batch["nsp_labels"], pair_ids=batch.get("pair_ids"),
                         position_ids=batch.get("position_ids"), pair_starts=batch.get("pair_starts"), reduce=False)

    ub, pb = to_batch(records), to_batch(packed)
    assert pb["real_tokens"] == ub["real_tokens"] and pb["masked"] == ub["masked"]
    u_mlm, u_nsp = run(ub)
    p_mlm, p_nsp = run(pb)
    # map each packed pair back to its record by its tokens
    by_tokens = {tuple(records["input_ids"][i, : records["lengths"][i]].tolist()): i for i in range(24)}
    seen = set()
    for r in range(len(packed["lengths"])):
        k = 0
        for slot in range(bshards.MAX_PAIRS):
            length = int(packed["pair_lengths"][r, slot])
            if not length:
                continue
            start = int(packed["pair_starts"][r, slot])
            i = by_tokens[tuple(packed["input_ids"][r, start:start + length].tolist())]
            seen.add(i)
            c = int(records["mlm_count"][i])
            assert torch.allclose(p_mlm[r, k:k + c], u_mlm[i, :c], rtol=1e-9, atol=1e-9), (r, slot)
            assert p_nsp[r, slot].item() == pytest.approx(u_nsp[i, 0].item(), rel=1e-9)
            k += c
    assert seen == set(range(24))


def test_the_trainer_steps_like_a_stock_transformers_loop(shard_dir: Path) -> None:
    """The trainer's optimizer steps (its encoder, AdamW, schedule and clipping) against the same steps of stock
    BertForPreTraining from the same weights on the same batches: the losses agree step by step."""
    args = train.build_parser().parse_args([
        "--model", "bert-tiny", "--batch-size", "8", "--optimizer", "adamw", "--lr", "3e-3", "--warmup", "3",
        "--dropout", "0", "--compile", "none", "--steps", "12", "--data-dir", str(shard_dir), "--resume", "none"])
    trainer = train.Trainer(args)
    try:
        hf = transformers.BertForPreTraining(trainer.config)
        hf.load_state_dict(trainer.model.state_dict(), strict=True)
        opt = optim.build_optimizer("adamw", hf, args.lr, args.weight_decay, trainer.device)
        sched = optim.build_scheduler(opt, args.steps, args.warmup, args.poly_power)
        batches = iter(trainer.loader)
        got, ref = [], []
        for _step in range(args.steps):
            batch = next(batches)
            got.append(float(trainer.train_step([batch]).loss))
            mask = (torch.arange(batch["input_ids"].size(1))[None, :] < batch["lengths"][:, None]).long()
            labels = torch.full(batch["input_ids"].shape, -100)
            labels = labels.scatter(1, batch["mlm_positions"], batch["mlm_labels"])
            loss = hf(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"], attention_mask=mask,
                      labels=labels, next_sentence_label=batch["nsp_labels"]).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(hf.parameters(), args.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            ref.append(float(loss.detach()))
    finally:
        trainer.comm.close()
    assert got == pytest.approx(ref, rel=1e-4), (got, ref)
    assert got[-1] < got[0]  # both learn, the same way


def test_lamb_skips_a_flagged_step_on_the_device() -> None:
    torch.manual_seed(3)
    p = torch.nn.Parameter(torch.randn(4, 3))
    q = torch.nn.Parameter(torch.randn(3))
    opt = Lamb([{"params": [p], "weight_decay": 0.01}, {"params": [q], "weight_decay": 0.0}], lr=0.1)
    for _unused in range(2):
        p.grad, q.grad = torch.randn(4, 3), torch.randn(3)
        opt.found_inf = torch.zeros(())  # type: ignore[attr-defined]
        opt.step()
    before = [p.detach().clone(), q.detach().clone(), opt.state[p]["exp_avg"].clone(),
              opt.state[p]["exp_avg_sq"].clone()]
    p.grad, q.grad = torch.full((4, 3), float("nan")), torch.randn(3)
    opt.found_inf = torch.ones(())  # type: ignore[attr-defined]
    opt.step()
    after = [p.detach(), q.detach(), opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]]
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert float(opt.state[p]["step"]) == 2.0
    p.grad, q.grad = torch.randn(4, 3), torch.randn(3)
    opt.found_inf = torch.zeros(())  # type: ignore[attr-defined]
    opt.step()
    assert not torch.equal(p.detach(), before[0]) and torch.isfinite(p).all()
