from __future__ import annotations

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nvidia_smi_q import parse_nvidia_smi_q


def test_h100_new_ecc_layout(fixture_text):
    out = parse_nvidia_smi_q(fixture_text("nvidia_smi_q", "h100_535.183.01.txt"))
    assert out["driver_version"] == "535.183.01" and out["cuda_version"] == "12.2" and out["attached_gpus"] == 8
    assert len(out["gpus"]) == 8
    assert len({g["uuid"] for g in out["gpus"]}) == 8
    gpu = out["gpus"][0]
    assert gpu["product_name"] == "NVIDIA H100 80GB HBM3" and gpu["pci_bus_id"] == "00000000:53:00.0"
    assert gpu["pci_device_id"] == "0x233010DE" and gpu["persistence_mode"] == "Enabled"
    assert gpu["ecc_mode_current"] == "Enabled" and gpu["ecc_mode_pending"] == "Enabled"
    assert gpu["ecc_errors"]["volatile"] == {"correctable": 0, "uncorrectable": 0}
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure_occurred": False}
    assert gpu["retired_pages"]["single_bit"] is None  # N/A on Hopper
    assert gpu["memory_total_mib"] == 81559 and gpu["memory_used_mib"] == 0
    assert gpu["temperature_gpu_c"] == 36 and gpu["power_draw_w"] == 71.97 and gpu["power_limit_w"] == 700.0
    assert gpu["clocks_mhz"]["sm"] == 345 and gpu["max_clocks_mhz"]["graphics"] == 1980
    assert gpu["reset_required"] is False and gpu["fabric_state"] == "Completed"


def test_v100_old_driver_single_double_bit(fixture_text):
    out = parse_nvidia_smi_q(fixture_text("nvidia_smi_q", "v100_418.67_traverse.txt"))
    assert out["driver_version"] == "418.67" and out["cuda_version"] == "10.1"
    assert out["attached_gpus"] == 4 and len(out["gpus"]) == 1  # the README shows only the first GPU
    gpu = out["gpus"][0]
    assert gpu["product_name"] == "Tesla V100-SXM2-32GB" and gpu["pci_bus_id"] == "00000004:04:00.0"
    assert gpu["ecc_mode_current"] == "Enabled"  # printed as "Ecc Mode" by 418
    assert gpu["ecc_errors"]["aggregate"] == {"correctable": 0, "uncorrectable": 0}
    assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert gpu["remapped_rows"] is None
    assert gpu["memory_total_mib"] == 32480 and gpu["power_limit_w"] == 300.0


def test_titan_v_new_driver_ecc_not_available(fixture_text):
    out = parse_nvidia_smi_q(fixture_text("nvidia_smi_q", "titanv_560.35.03.txt"))
    gpu = out["gpus"][0]
    assert out["driver_version"] == "560.35.03" and gpu["product_architecture"] == "Volta"
    assert gpu["ecc_mode_current"] is None
    assert gpu["ecc_errors"]["volatile"] == {"correctable": None, "uncorrectable": None}


def test_nonzero_counts_are_summed_over_sram_and_dram():
    text = """Attached GPUs : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H200
    ECC Errors
        Volatile
            SRAM Correctable              : 2
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 1
            DRAM Correctable              : 5
            DRAM Uncorrectable            : 3
"""
    gpu = parse_nvidia_smi_q(text)["gpus"][0]
    assert gpu["ecc_errors"]["volatile"] == {"correctable": 7, "uncorrectable": 4}
    assert gpu["ecc_errors"]["aggregate"] == {"correctable": None, "uncorrectable": None}
