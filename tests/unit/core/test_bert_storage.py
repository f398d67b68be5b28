"""The refusal of a BERT launch whose storage lacks room for the next checkpoints: checkpoint sizes from the model,
the automatic and the explicit threshold, and unreadable measurements, each with node, setting and fix."""

from __future__ import annotations

import pytest

from plugins.plugin_utils import bert_storage as bs

GIB = 2 ** 30


@pytest.mark.parametrize(("model", "vocab", "params"), [
    ("base", 30522, 110_106_428),  # BertForPreTraining(bert-base-uncased) as transformers counts it (tied decoder)
    ("large", 30522, 335_174_458),
])
def test_parameter_count_matches_the_reference_models(model: str, vocab: int, params: int) -> None:
    assert bs.bert_params(model, vocab) == pytest.approx(params, rel=0.01)


def test_automatic_threshold_is_two_checkpoints_with_a_floor() -> None:
    large = bs.checkpoint_gib("large", 30522)
    assert 3.5 < large < 4.0  # 12 bytes a parameter
    assert bs.required_free_gib("large", 30522) == pytest.approx(2 * large)
    assert bs.required_free_gib("tiny", 8192) == bs.FLOOR_GIB
    assert bs.required_free_gib("tiny", 8192, min_free_gib=0.25) == 0.25


def test_enough_space_passes() -> None:
    assert bs.free_space_problems(str(8 * GIB) + "\n", "node1", "/mnt/cpfs/bert/runs/r", "large", 30522) == []


def test_too_little_space_is_refused_naming_node_path_setting_and_fix() -> None:
    [msg] = bs.free_space_problems(4 * 2 ** 20, "node1", "/mnt/cpfs/bert/runs/r", "tiny", 8192)
    assert msg.startswith("node1: /mnt/cpfs/bert/runs/r has 0.00 GiB free, below the 1.00 GiB the next checkpoints "
                          "need (bert_min_free_gib 0 = automatic: 2 checkpoints of bert-tiny")
    assert "Fix: free space on that storage" in msg and "set bert_min_free_gib" in msg


def test_explicit_setting_is_named() -> None:
    [msg] = bs.free_space_problems(GIB, "n2", "/r", "large", 30522, min_free_gib=2)
    assert "below the 2.00 GiB" in msg and "(bert_min_free_gib 2)" in msg
    assert bs.free_space_problems(GIB, "n2", "/r", "large", 30522, min_free_gib=0.5) == []


def test_unreadable_measurement_is_a_problem_not_a_traceback() -> None:
    [msg] = bs.free_space_problems("Traceback ... PermissionError", "n3", "/r", "base", 30522)
    assert msg.startswith("n3: the free space of /r could not be read") and "mounted" in msg
