"""The fp8 option and the compiled LAMB update on the CPU: float8 matrix products (torchao, emulated: the same
casts and scales as on FP8 tensor cores, fp32 arithmetic) against the bf16/fp32 path, the refusal of fp8 where it
cannot run, and the compiled update against the eager one."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the precision tests need torch (pip install torch)")
torchao = pytest.importorskip("torchao", reason="the fp8 tests need torchao (requirements/ci.txt)")

from sccnlp.node.bert import model as bmodel  # noqa: E402
from sccnlp.node.bert.encoder import BertPretrainer, fp8_linear, linear_bf16  # noqa: E402
from sccnlp.node.bert.optim import Lamb  # noqa: E402

from .test_trainer import run_train  # noqa: E402

VOCAB = 128


def _batch(seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    b, s, p = 8, 32, 5
    ids = torch.randint(5, VOCAB, (b, s), generator=g)
    types = (torch.arange(s)[None, :] >= 12).long().expand(b, -1)
    pos = torch.stack([torch.randperm(s - 1, generator=g)[:p] + 1 for _unused in range(b)]).sort(1).values
    labels = torch.randint(5, VOCAB, (b, p), generator=g)
    nsp = torch.randint(0, 2, (b,), generator=g)
    return ids, types, pos, labels, nsp


def _pair(seed: int = 0) -> tuple[BertPretrainer, BertPretrainer]:
    cfg = bmodel.build_config("bert-tiny", VOCAB, 32, 0.0)
    torch.manual_seed(seed)
    ref = BertPretrainer(cfg, torch.float32, linear=linear_bf16)
    fp8 = BertPretrainer(cfg, torch.float32, linear=fp8_linear(emulate=True))
    fp8.load_state_dict(ref.state_dict())
    return ref, fp8


def test_fp8_matmuls_track_full_precision_loss_and_gradients() -> None:
    """One step: float8 e4m3/e5m2 rounding (3 and 2 mantissa bits, tensorwise scales) moves the loss by well under
    1% and keeps every layer gradient's direction (cosine > 0.99) on a random BERT-tiny."""
    ref, fp8 = _pair()
    batch = _batch()
    loss_ref, loss_fp8 = ref(*batch)[0], fp8(*batch)[0]
    assert loss_fp8.item() == pytest.approx(loss_ref.item(), rel=0.01)
    assert loss_fp8.item() != loss_ref.item()  # the float8 path really ran
    loss_ref.backward()
    loss_fp8.backward()
    got = dict(fp8.named_parameters())
    checked = 0
    for name, p in ref.named_parameters():
        if ".encoder.layer." not in name or not name.endswith(".weight") or "LayerNorm" in name:
            continue  # the matrices of the products run in float8 (biases and LayerNorm stay in full precision)
        g_ref, g_fp8 = p.grad.flatten(), got[name].grad.flatten()
        cosine = torch.nn.functional.cosine_similarity(g_ref, g_fp8, dim=0).item()
        assert cosine > 0.99, (name, cosine)
        checked += 1
    assert checked >= 12  # q, k, v, attention output, intermediate, output of each of bert-tiny's 2 layers


def test_fp8_trains_like_full_precision() -> None:
    """20 AdamW steps on one repeated batch: the fp8 loss curve ends within 2% of the full-precision one."""
    ref, fp8 = _pair(seed=1)
    batch = _batch(seed=1)
    with torch.no_grad():
        start = ref(*batch)[0].item()
    ends = []
    for model in (ref, fp8):
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        for _unused in range(20):
            loss = model(*batch)[0]
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        ends.append(loss.item())
    assert ends[0] < 0.8 * start  # it learns
    assert ends[1] == pytest.approx(ends[0], rel=0.02), ends


@pytest.mark.parametrize(("device", "name", "capability", "missing", "says"), [
    ("cpu", "", None, "", "runs on the CPU"),
    ("cuda", "Tesla V100-SXM2-16GB", (7, 0), "", "compute capability 7.0"),
    ("cuda", "NVIDIA A100-SXM4-80GB", (8, 0), "", "compute capability 8.0"),
    ("cuda", "NVIDIA H100 80GB HBM3", (9, 0), "No module named 'torchao'", "No module named 'torchao'"),
])
def test_fp8_refused_where_it_cannot_run(device: str, name: str, capability: tuple[int, int] | None,
                                         missing: str, says: str) -> None:
    problem = bmodel.fp8_problem(device, name, capability, missing)
    assert says in problem and "Fix:" in problem
    if capability is not None and not missing:
        assert name in problem  # the GPU that lacks FP8 is named


@pytest.mark.parametrize("capability", [(8, 9), (9, 0), (10, 0)])
def test_fp8_accepted_on_ada_hopper_blackwell(capability: tuple[int, int]) -> None:
    assert bmodel.fp8_problem("cuda", "GPU", capability, "") == ""


def test_trainer_refuses_fp8_on_cpu_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = run_train(["--synthetic", "--model", "bert-tiny", "--seq-len", "32", "--batch-size", "2",
                               "--steps", "1", "--precision", "fp8", "--resume", "none"], capsys)
    assert rc != 0
    assert "--precision fp8 needs an NVIDIA GPU with FP8 tensor cores" in err and "Traceback" not in err


def test_compiled_lamb_update_matches_eager() -> None:
    """The torch.compile'd update (what GPUs run) gives the eager update's parameters and moments, skipped step
    and a moving learning rate included."""
    torch.manual_seed(5)
    init = [torch.randn(6, 4), torch.randn(4), torch.randn(5)]
    results = []
    for compiled in (False, True):
        params = [torch.nn.Parameter(t.clone()) for t in init]
        opt = Lamb([{"params": params[:2], "weight_decay": 0.01}, {"params": params[2:], "weight_decay": 0.0}],
                   lr=0.05, compiled=compiled)
        g = torch.Generator().manual_seed(7)
        for step in range(4):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g)
            if step == 2:
                params[0].grad[0, 0] = float("inf")
            opt.found_inf = torch.tensor(1.0 if step == 2 else 0.0)  # type: ignore[attr-defined]
            for group in opt.param_groups:
                group["lr"] = 0.05 * (step + 1)
            opt.step()
        results.append([p.detach().clone() for p in params] + [opt.state[params[0]]["exp_avg_sq"].clone()])
    for eager, compiled in zip(*results):
        torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-6)
