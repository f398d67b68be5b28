"""The PyTorch path's optimizers (`sccnlp.node.bert.optim`) as Keras 3 optimizers: the same update, term for term.

LAMB: Adam moments with bias correction, update u = m̂ / (sqrt(v̂) + eps) + wd * p and, for weights with decay,
the trust ratio ||p|| / ||u|| (1 where either norm is 0); AdamW: decoupled decay p *= 1 - lr * wd, then the Adam
step with eps added to sqrt(v) / sqrt(1 - beta2^t), as torch.optim.AdamW does (Keras' own AdamW adds eps before the
bias correction, and its LAMB applies weight decay outside the trust ratio: the runs would drift apart).
Biases and LayerNorm weights get no decay (`sccnlp.node.bert.model.no_decay`, by the weights' BertForPreTraining names).

A step can be cancelled on the device: `apply_step(grads, variables, keep)` with keep = 0 leaves weights, moments
and the bias-correction step unchanged (a non-finite gradient), as the PyTorch optimizers honour `found_inf`.
Gradient clipping and the all-reduce happen before, in the trainer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sccnlp.node.errors import SccError

OPTIMIZERS = ("lamb", "adamw")
BETAS = (0.9, 0.999)
EPS = 1e-6


def build_optimizer(name: str, learning_rate: float, weight_decay: float,
                    decays: Callable[[Any], bool]) -> Any:
    """A Keras optimizer; `decays(variable)` says whether a weight gets weight decay."""
    if name not in OPTIMIZERS:
        raise SccError(f"unknown --optimizer {name!r}: choose one of {', '.join(OPTIMIZERS)}")
    import keras
    import tensorflow as tf

    beta1, beta2 = BETAS

    class BertOptimizer(keras.optimizers.Optimizer):
        def __init__(self) -> None:
            super().__init__(learning_rate=learning_rate, name=name)
            self.kind = name
            self.wd = float(weight_decay)

        def build(self, var_list: Sequence[Any]) -> None:
            if self.built:
                return
            super().build(var_list)
            self._m, self._v = self.add_optimizer_variables(var_list, ["exp_avg", "exp_avg_sq"])
            self._decay = [bool(self.wd) and decays(v) for v in var_list]
            self.keep = self.add_variable((), initializer="ones", name="keep")
            self.applied = self.add_variable((), initializer="zeros", name="applied_steps")

        def apply_step(self, grads: Sequence[Any], variables: Sequence[Any], keep: Any) -> None:
            """Apply `grads` (already all-reduced and clipped) scaled by `keep` (1 = apply, 0 = skip)."""
            self.keep.assign(keep)
            self.apply(list(grads), list(variables))
            self.applied.assign_add(keep)

        def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
            i = self._get_variable_index(variable)
            m, v = self._m[i], self._v[i]
            keep = tf.cast(tf.convert_to_tensor(self.keep), tf.float32)
            lr = tf.cast(learning_rate, tf.float32)
            p = tf.convert_to_tensor(variable)
            g = tf.cast(gradient, tf.float32)
            g = tf.where(tf.math.is_finite(g), g, tf.zeros_like(g))  # a skipped step's NaN must not reach m, v
            t = tf.convert_to_tensor(self.applied) + 1.0
            bc1 = 1.0 - tf.pow(beta1, t)
            bc2 = 1.0 - tf.pow(beta2, t)
            decay = self._decay[i]
            if self.kind == "adamw" and decay:
                p = p * (1.0 - lr * self.wd * keep)
                self.assign(variable, p)
            m_new = tf.convert_to_tensor(m) * (1.0 - keep * (1 - beta1)) + g * (keep * (1 - beta1))
            v_new = tf.convert_to_tensor(v) * (1.0 - keep * (1 - beta2)) + tf.square(g) * (keep * (1 - beta2))
            self.assign(m, m_new)
            self.assign(v, v_new)
            update = m_new / (tf.sqrt(v_new) / tf.sqrt(bc2) + EPS) / bc1
            if self.kind == "lamb" and decay:
                update = update + self.wd * p
                w_norm, u_norm = tf.norm(p), tf.norm(update)
                ratio = tf.where((w_norm > 0) & (u_norm > 0), w_norm / tf.maximum(u_norm, 1e-30), 1.0)
                update = update * ratio
            self.assign(variable, p - lr * keep * update)

    return BertOptimizer()
