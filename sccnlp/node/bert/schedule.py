"""The learning-rate schedule both trainers share (no framework import): linear warmup, then polynomial decay."""

from __future__ import annotations

from collections.abc import Callable


def warmup_poly(total_steps: int, warmup: float | int, power: float = 1.0) -> Callable[[int], float]:
    """Factor of the peak learning rate at a step: linear warmup over `warmup` steps (a fraction < 1 means of
    total), then (1 - progress) ** power down to 0 at `total_steps`."""
    warm = int(warmup * total_steps) if isinstance(warmup, float) and warmup < 1 else int(warmup)

    def factor(step: int) -> float:
        if warm and step < warm:
            return (step + 1) / warm
        progress = (step - warm) / max(1, total_steps - warm)
        return max(0.0, 1.0 - progress) ** power

    return factor
