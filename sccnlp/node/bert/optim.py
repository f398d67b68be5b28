"""Optimizers and learning-rate schedule: LAMB (multi-tensor, few kernels a step), fused AdamW, warmup + poly decay.

Both skip a step on the device when `optimizer.found_inf` (a float tensor) is 1: the trainer never waits for the
GPU to decide whether a gradient was finite."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from sccnlp.node.bert.schedule import warmup_poly
from sccnlp.node.errors import SccError


def lamb_update(params: list[torch.Tensor], grads: list[torch.Tensor], m: list[torch.Tensor],
                v: list[torch.Tensor], step_t: torch.Tensor, keep: torch.Tensor, lr: torch.Tensor, beta1: float,
                beta2: float, eps: float, weight_decay: float, bias_correction: bool) -> None:
    """One LAMB update of a parameter group, in place, with no host synchronisation: `keep` (a device scalar, 0 or
    1) turns it into an identity for a skipped step, `lr` is a device scalar (so a compiled update is reused as the
    schedule moves), `step_t` the group's shared step count."""
    step_t.add_(keep)
    # m = b1 m + (1 - b1) g and v = b2 v + (1 - b2) g^2, each an identity when skipped (keep = 0)
    torch._foreach_mul_(m, 1.0 - keep * (1 - beta1))
    torch._foreach_add_(m, torch._foreach_mul(grads, keep * (1 - beta1)))
    torch._foreach_mul_(v, 1.0 - keep * (1 - beta2))
    torch._foreach_addcmul_(v, grads, torch._foreach_mul(grads, keep * (1 - beta2)))
    if bias_correction:
        bc1 = 1 - beta1 ** step_t.clamp(min=1)
        bc2 = 1 - beta2 ** step_t.clamp(min=1)
    else:
        bc1 = bc2 = torch.ones((), device=step_t.device)
    denom = torch._foreach_sqrt(v)
    torch._foreach_div_(denom, bc2.sqrt())
    torch._foreach_add_(denom, eps)
    update = torch._foreach_div(m, denom)
    del denom
    torch._foreach_div_(update, bc1)
    if weight_decay:
        torch._foreach_add_(update, params, alpha=weight_decay)
        w_norm = torch.stack(torch._foreach_norm(params))
        u_norm = torch.stack(torch._foreach_norm(update))
        ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
        scale = (ratio * -lr * keep).to(params[0].dtype)
        torch._foreach_mul_(update, list(scale.unbind(0)))
    else:
        torch._foreach_mul_(update, (keep * -lr).to(params[0].dtype))
    torch._foreach_add_(params, update)


class Lamb(Optimizer):
    """LAMB (You et al., 2019) as in NVIDIA's BERT recipe, written with torch._foreach_* multi-tensor kernels.

    Per tensor: m, v Adam moments (bias-corrected), update u = m̂ / (sqrt(v̂) + eps) + wd * p, and, for groups with
    weight decay, the trust ratio ||p|| / ||u|| (1 where either norm is 0); p -= lr * ratio * u. All per-tensor
    norms come from one `_foreach_norm`, the ratios stay on the device: no host synchronisation. With
    `compiled=True` (GPU) the update is one torch.compile'd function per group: its element-wise work fuses into a
    few kernels instead of a dozen multi-tensor passes over the parameters, moments and gradients.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01, bias_correction: bool = True,
                 compiled: bool = False) -> None:
        if lr < 0 or eps <= 0 or not 0 <= betas[0] < 1 or not 0 <= betas[1] < 1 or weight_decay < 0:
            raise SccError(f"invalid LAMB settings lr={lr} betas={betas} eps={eps} weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "bias_correction": bias_correction})
        self._update: Any = torch.compile(lamb_update, dynamic=False) if compiled else lamb_update
        self._lr: dict[int, torch.Tensor] = {}  # per group: the learning rate as a device scalar

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """One step. `self.found_inf` (a device float tensor, 1.0 = skip), when set, turns the step into a no-op
        on the device (parameters and moments unchanged), as fused AdamW does: no host synchronisation."""
        loss = closure() if closure is not None else None
        found: torch.Tensor | None = getattr(self, "found_inf", None)
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            states = [self.state[p] for p in params]
            for p, st in zip(params, states):
                if not st:
                    st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
            step_t = states[0]["step"]
            for st in states[1:]:
                st["step"] = step_t
            keep = torch.ones((), device=step_t.device) if found is None else 1.0 - found.to(step_t.device)
            if found is not None:  # a skipped step's NaN/Inf must not reach the moments
                for g in grads:
                    torch.nan_to_num_(g, nan=0.0, posinf=0.0, neginf=0.0)
            lr = self._lr.get(index)
            if lr is None or lr.device != step_t.device:
                lr = self._lr[index] = torch.zeros((), dtype=torch.float32, device=step_t.device)
            lr.fill_(group["lr"])  # a kernel argument, not a host-to-device copy that waits
            beta1, beta2 = group["betas"]
            self._update(params, grads, [st["exp_avg"] for st in states], [st["exp_avg_sq"] for st in states],
                         step_t, keep, lr, beta1, beta2, group["eps"], group["weight_decay"],
                         group["bias_correction"])
        return loss


OPTIMIZERS = ("lamb", "adamw")


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    from sccnlp.node.bert.model import no_decay

    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (plain if no_decay(name) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def build_optimizer(name: str, model: torch.nn.Module, lr: float, weight_decay: float,
                    device: torch.device, compiled: bool = False) -> Optimizer:
    """LAMB (its update compiled when `compiled`) or fused AdamW over the model's decay/no-decay groups."""
    groups = param_groups(model, weight_decay)
    if name == "lamb":
        return Lamb(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=weight_decay, compiled=compiled)
    if name == "adamw":
        # fused on GPU and CPU: one kernel family a step, and it honours `found_inf` (a skipped step, no sync)
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=weight_decay,
                                 fused=True)
    raise SccError(f"unknown --optimizer {name!r}: choose one of {', '.join(OPTIMIZERS)}")


def build_scheduler(optimizer: Optimizer, total_steps: int, warmup: float, power: float) -> Any:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_poly(total_steps, warmup, power))


def grad_norms(grads: list[torch.Tensor]) -> torch.Tensor:
    """Per-tensor L2 norms of the gradients as one fp32 device vector (one multi-tensor norm)."""
    return torch.stack([n.float() for n in torch._foreach_norm(grads)])


def grad_global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """L2 norm over all gradients, on the device (one multi-tensor norm + one small norm)."""
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(grad_norms(grads))


def clip_by_norm(grads: list[torch.Tensor], total_norm: torch.Tensor, max_norm: float) -> None:
    if max_norm > 0 and grads:
        coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        coef = torch.where(torch.isfinite(coef), coef, torch.zeros_like(coef))
        torch._foreach_mul_(grads, coef.to(grads[0].dtype))
