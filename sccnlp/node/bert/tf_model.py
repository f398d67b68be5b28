"""BERT pretraining model for TensorFlow: one Keras 3 layer holding the PyTorch path's model, weight for weight.

The architecture and sizes are those of `sccnlp.node.bert.model` (`SIZES`): post-LN encoder, GELU (erf), LayerNorm
eps 1e-12, the MLM head run on the masked positions only with its decoder tied to the word embeddings, NSP on the
pooled [CLS]. Every weight is named after the `transformers` BertForPreTraining parameter it stands for
(`bert.encoder.layer.3.attention.self.query.weight`), so a PyTorch state dict loads into it (`load_hf_state`) and a
non-finite gradient is named as the PyTorch trainer names it. Dense kernels are stored [in, out] (PyTorch: [out, in]).

Variables stay fp32 (the optimizer's master weights); with `compute_dtype="bfloat16"` every matrix product runs in
bf16 on weights cast once per use, while LayerNorm statistics, softmax and both losses are computed in fp32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sccnlp.node.bert.model import SIZES, size_name

LN_EPS = 1e-12
INIT_STD = 0.02  # transformers' initializer_range
PAD_ID = 0
MASK_VALUE = -1e9  # added to the attention scores of padding keys (fp32)


@dataclass(frozen=True)
class Dims:
    """The model's shape; the attribute names are BertConfig's, so sccnlp.node.bert.model's FLOP counts take it."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int

    @classmethod
    def for_model(cls, model: str, vocab_size: int, seq_len: int) -> Dims:
        return cls(**SIZES[size_name(model)], vocab_size=vocab_size, max_position_embeddings=max(512, seq_len))


def hf_shapes(dims: Dims) -> dict[str, tuple[int, ...]]:
    """Every weight, by its BertForPreTraining name, in PyTorch's layout ([out, in] for dense weights)."""
    h, inter = dims.hidden_size, dims.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "bert.embeddings.word_embeddings.weight": (dims.vocab_size, h),
        "bert.embeddings.position_embeddings.weight": (dims.max_position_embeddings, h),
        "bert.embeddings.token_type_embeddings.weight": (2, h),
        "bert.embeddings.LayerNorm.weight": (h,), "bert.embeddings.LayerNorm.bias": (h,),
    }
    for i in range(dims.num_hidden_layers):
        p = f"bert.encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = (h, h), (h,)
        shapes[p + "intermediate.dense.weight"], shapes[p + "intermediate.dense.bias"] = (inter, h), (inter,)
        shapes[p + "output.dense.weight"], shapes[p + "output.dense.bias"] = (h, inter), (h,)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + ln + ".weight"], shapes[p + ln + ".bias"] = (h,), (h,)
    shapes.update({
        "bert.pooler.dense.weight": (h, h), "bert.pooler.dense.bias": (h,),
        "cls.predictions.bias": (dims.vocab_size,),
        "cls.predictions.transform.dense.weight": (h, h), "cls.predictions.transform.dense.bias": (h,),
        "cls.predictions.transform.LayerNorm.weight": (h,), "cls.predictions.transform.LayerNorm.bias": (h,),
        "cls.seq_relationship.weight": (2, h), "cls.seq_relationship.bias": (2,),
    })
    return shapes


def is_dense_weight(name: str, shape: tuple[int, ...]) -> bool:
    """A dense layer's weight: stored transposed here ([in, out]); embeddings and vectors keep their layout."""
    return len(shape) == 2 and name.endswith(".weight") and "embeddings" not in name


def build(dims: Dims, dropout: float = 0.1, attn_dropout: float | None = None, compute_dtype: str = "float32",
          seed: int = 12345) -> Any:
    """The Keras layer (created here so that this module imports without TensorFlow for its pure parts)."""
    import keras
    import tensorflow as tf

    class BertPretrainer(keras.layers.Layer):
        """forward(batch) -> (loss, mlm_loss, nsp_loss); batch: input_ids, segment_ids [B, S], lengths [B],
        mlm_positions, mlm_labels [B, P] (label < 0 = no prediction), nsp_labels [B] (int32)."""

        def __init__(self) -> None:
            super().__init__(name="bert_pretrainer", dtype="float32")
            self.dims = dims
            self.p_drop = float(dropout)
            self.p_attn = float(dropout if attn_dropout is None else attn_dropout)
            self.compute = tf.dtypes.as_dtype(compute_dtype)
            self.by_name: dict[str, Any] = {}
            keras.utils.set_random_seed(seed)
            for name, shape in hf_shapes(dims).items():
                stored = tuple(reversed(shape)) if is_dense_weight(name, shape) else shape
                self.by_name[name] = self.add_weight(name=name, shape=stored, dtype="float32",
                                                     initializer=self._initializer(name), trainable=True)
            self.built = True

        @staticmethod
        def _initializer(name: str) -> Any:
            if name.endswith("LayerNorm.weight"):
                return "ones"
            if name.endswith(".bias"):
                return "zeros"
            normal = keras.initializers.RandomNormal(stddev=INIT_STD)
            if name == "bert.embeddings.word_embeddings.weight":  # the [PAD] row starts at zero (padding_idx)
                def word_init(shape: Any, dtype: Any = None) -> Any:
                    return normal(shape, dtype) * tf.concat([tf.zeros([1, 1]), tf.ones([shape[0] - 1, 1])], 0)
                return word_init
            return normal

        # ------------------------------------------------------------------------------------------ pieces

        def w(self, name: str) -> Any:
            return tf.cast(self.by_name[name], self.compute)

        def dense(self, x: Any, prefix: str) -> Any:
            return tf.matmul(x, self.w(prefix + ".weight")) + self.w(prefix + ".bias")

        def layer_norm(self, x: Any, prefix: str) -> Any:
            x32 = tf.cast(x, tf.float32)
            mean, var = tf.nn.moments(x32, axes=[-1], keepdims=True)
            y = (x32 - mean) * tf.math.rsqrt(var + LN_EPS)
            return tf.cast(y * self.by_name[prefix + ".weight"] + self.by_name[prefix + ".bias"], self.compute)

        def drop(self, x: Any, rate: float, training: bool) -> Any:
            return tf.nn.dropout(x, rate) if training and rate > 0 else x

        def encoder_layer(self, x: Any, key_bias: Any, i: int, training: bool) -> Any:
            p = f"bert.encoder.layer.{i}."
            b, s = tf.shape(x)[0], tf.shape(x)[1]
            heads = self.dims.num_attention_heads
            d = self.dims.hidden_size // heads

            def split(t: Any) -> Any:  # [B, S, H] -> [B, heads, S, d]
                return tf.transpose(tf.reshape(t, [b, s, heads, d]), [0, 2, 1, 3])

            q = split(self.dense(x, p + "attention.self.query"))
            k = split(self.dense(x, p + "attention.self.key"))
            v = split(self.dense(x, p + "attention.self.value"))
            scores = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32) / math.sqrt(d) + key_bias
            probs = self.drop(tf.cast(tf.nn.softmax(scores, axis=-1), self.compute), self.p_attn, training)
            ctx = tf.reshape(tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3]), [b, s, self.dims.hidden_size])
            attn = self.drop(self.dense(ctx, p + "attention.output.dense"), self.p_drop, training)
            y = self.layer_norm(attn + x, p + "attention.output.LayerNorm")
            inter = tf.nn.gelu(self.dense(y, p + "intermediate.dense"), approximate=False)
            out = self.drop(self.dense(inter, p + "output.dense"), self.p_drop, training)
            return self.layer_norm(out + y, p + "output.LayerNorm")

        # ------------------------------------------------------------------------------------------ forward

        def call(self, batch: Mapping[str, Any], training: bool = False) -> tuple[Any, Any, Any]:
            ids = batch["input_ids"]
            s = tf.shape(ids)[1]
            emb = (tf.gather(self.by_name["bert.embeddings.word_embeddings.weight"], ids)
                   + self.by_name["bert.embeddings.position_embeddings.weight"][None, :s]
                   + tf.gather(self.by_name["bert.embeddings.token_type_embeddings.weight"], batch["segment_ids"]))
            x = self.drop(self.layer_norm(emb, "bert.embeddings.LayerNorm"), self.p_drop, training)
            keep = tf.sequence_mask(batch["lengths"], s, dtype=tf.float32)
            key_bias = ((1.0 - keep) * MASK_VALUE)[:, None, None, :]
            for i in range(self.dims.num_hidden_layers):
                x = self.encoder_layer(x, key_bias, i, training)

            labels = batch["mlm_labels"]
            valid = tf.cast(labels >= 0, tf.float32)
            masked = tf.gather(x, batch["mlm_positions"], batch_dims=1)  # [B, P, H]
            t = tf.nn.gelu(self.dense(masked, "cls.predictions.transform.dense"), approximate=False)
            t = self.layer_norm(t, "cls.predictions.transform.LayerNorm")
            logits = tf.cast(tf.matmul(t, self.w("bert.embeddings.word_embeddings.weight"), transpose_b=True),
                             tf.float32) + self.by_name["cls.predictions.bias"]
            ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.maximum(labels, 0), logits=logits)
            mlm = tf.reduce_sum(ce * valid) / tf.maximum(tf.reduce_sum(valid), 1.0)

            pooled = tf.tanh(self.dense(x[:, 0], "bert.pooler.dense"))
            nsp_logits = tf.cast(self.dense(pooled, "cls.seq_relationship"), tf.float32)
            nsp = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["nsp_labels"],
                                                                                logits=nsp_logits))
            return mlm + nsp, mlm, nsp

        # ------------------------------------------------------------------------------------------ weights

        def names(self) -> list[str]:
            """The BertForPreTraining name of each trainable weight, in `trainable_weights` order."""
            by_id = {id(v): n for n, v in self.by_name.items()}
            return [by_id[id(v)] for v in self.trainable_weights]

        def hf_state(self) -> dict[str, np.ndarray]:
            """The weights as a BertForPreTraining-named state dict (NumPy, PyTorch's layout)."""
            out = {}
            for name, var in self.by_name.items():
                value = np.asarray(var.numpy())
                out[name] = value.T if is_dense_weight(name, tuple(reversed(value.shape))) else value
            return out

        def load_hf_state(self, state: Mapping[str, Any]) -> None:
            """Take the weights of a BertForPreTraining-named state dict (NumPy arrays or tensors)."""
            for name, var in self.by_name.items():
                value = np.asarray(state[name], dtype=np.float32)
                if is_dense_weight(name, tuple(value.shape)):
                    value = value.T
                var.assign(value)

    return BertPretrainer()
