"""Optimizers and learning-rate schedule: LAMB (multi-tensor, few kernels a step), fused AdamW, warmup + poly decay."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from sccnlp.errors import SccError


class Lamb(Optimizer):
    """LAMB (You et al., 2019) as in NVIDIA's BERT recipe, written with torch._foreach_* multi-tensor kernels.

    Per tensor: m, v Adam moments (bias-corrected), update u = m̂ / (sqrt(v̂) + eps) + wd * p, and, for groups with
    weight decay, the trust ratio ||p|| / ||u|| (1 where either norm is 0); p -= lr * ratio * u. All per-tensor
    norms come from one `_foreach_norm`, the ratios stay on the device: no host synchronisation.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01, bias_correction: bool = True) -> None:
        if lr < 0 or eps <= 0 or not 0 <= betas[0] < 1 or not 0 <= betas[1] < 1 or weight_decay < 0:
            raise SccError(f"invalid LAMB settings lr={lr} betas={betas} eps={eps} weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "bias_correction": bias_correction})

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            states = [self.state[p] for p in params]
            for p, st in zip(params, states):
                if not st:
                    st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["step"] = 0
            step = states[0]["step"] + 1
            for st in states:
                st["step"] = step
            beta1, beta2 = group["betas"]
            m = [st["exp_avg"] for st in states]
            v = [st["exp_avg_sq"] for st in states]
            torch._foreach_lerp_(m, grads, 1 - beta1)
            torch._foreach_mul_(v, beta2)
            torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)
            bc1 = 1 - beta1 ** step if group["bias_correction"] else 1.0
            bc2 = 1 - beta2 ** step if group["bias_correction"] else 1.0
            denom = torch._foreach_sqrt(v)
            torch._foreach_div_(denom, math.sqrt(bc2))
            torch._foreach_add_(denom, group["eps"])
            update = torch._foreach_div(m, denom)
            del denom
            if bc1 != 1.0:
                torch._foreach_div_(update, bc1)
            wd = group["weight_decay"]
            if wd:
                torch._foreach_add_(update, params, alpha=wd)
                w_norm = torch.stack(torch._foreach_norm(params))
                u_norm = torch.stack(torch._foreach_norm(update))
                ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
                scale = (ratio * -group["lr"]).to(params[0].dtype)
                torch._foreach_mul_(update, list(scale.unbind(0)))
                torch._foreach_add_(params, update)
            else:
                torch._foreach_add_(params, update, alpha=-group["lr"])
        return loss


OPTIMIZERS = ("lamb", "adamw")


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    from sccnlp.bert.model import no_decay

    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (plain if no_decay(name) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def build_optimizer(name: str, model: torch.nn.Module, lr: float, weight_decay: float,
                    device: torch.device) -> Optimizer:
    groups = param_groups(model, weight_decay)
    if name == "lamb":
        return Lamb(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=weight_decay)
    if name == "adamw":
        fused = device.type == "cuda"
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=weight_decay,
                                 fused=fused, foreach=None if fused else True)
    raise SccError(f"unknown --optimizer {name!r}: choose one of {', '.join(OPTIMIZERS)}")


def warmup_poly(total_steps: int, warmup: float | int, power: float = 1.0) -> Any:
    """Factor for LambdaLR: linear warmup over `warmup` steps (a fraction < 1 means of total), then
    (1 - progress) ** power down to 0 at `total_steps`."""
    warm = int(warmup * total_steps) if isinstance(warmup, float) and warmup < 1 else int(warmup)

    def factor(step: int) -> float:
        if warm and step < warm:
            return (step + 1) / warm
        progress = (step - warm) / max(1, total_steps - warm)
        return max(0.0, 1.0 - progress) ** power

    return factor


def build_scheduler(optimizer: Optimizer, total_steps: int, warmup: float, power: float) -> Any:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_poly(total_steps, warmup, power))


def grad_global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """L2 norm over all gradients, on the device (one multi-tensor norm + one small norm)."""
    if not grads:
        return torch.zeros(())
    norms = torch._foreach_norm(grads)
    return torch.linalg.vector_norm(torch.stack([n.float() for n in norms]))


def clip_by_norm(grads: list[torch.Tensor], total_norm: torch.Tensor, max_norm: float) -> None:
    if max_norm > 0 and grads:
        coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        torch._foreach_mul_(grads, coef.to(grads[0].dtype))
