"""The learned GPU correction's coefficients (``antsim.gpu.learned``), written by
``scripts/fit_gpu_correction.py``: do not edit by hand, refit.

``fingerprint`` is ``antsim.gpu.learned.model_fingerprint()`` of the physical model they were
fitted on; ``provenance`` names the measured files (docs/gpu_learned.md).
"""

from typing import Any

TABLE: dict[str, Any] = {
    "fingerprint": "01be595870a7155f",
    "ridge_lambda": 10.0,
    "intercept": 0.01892777079841331,
    "weights": {
        "dgrad": 0.013094986215252258,
        "wgrad": 0.00020918684057227743,
        "winograd": -0.009595377050963996,
        "fft": 0.029867652299501692,
        "tensor_cores": -0.002075415467165017,
        "log_intensity_vs_ridge": -0.0022264702061139275,
        "work_ratio": -0.002498675433973553,
        "wave_tail": 0.0018532955116838973,
        "filter_1x1": 0.006566022543616694,
        "filter_large": -0.0070042238317884805,
        "strided": 0.009321571029016916,
        "small_c": -0.014482015988558224,
        "small_k": 0.01440751905921811,
        "wide_sm": -0.015077587222910811,
        "wgrad_1x1": 0.009005716854323378,
        "dgrad_strided": -0.0051804483247196685,
        "log_time_vs_launch": -0.009678530136004108,
        "cudnn5": 0.019529588686065424,
        "cudnn6": -0.00851385555159736,
        "cudnn8": -0.0076812305792223175
    },
    "provenance": {
        "command": "scripts/fit_gpu_correction.py",
        "refit": ".venv/bin/python scripts/fit_gpu_correction.py",
        "data_files": {
            "p100 fp32": {
                "file": "deepbench/deepbench_conv_P100.csv",
                "sha256": "ad52dd93edd0e6b98269752ba1ec7a4e0e4545e1da74b098ce48c8417b9deb55",
                "rows": 282
            },
            "titanxp fp32": {
                "file": "deepbench/deepbench_conv_TitanXp.csv",
                "sha256": "e410fd63eb1fea0bd1c23de0be64cdaaa62d051ba4f6defd0b04fb9a2424d8d4",
                "rows": 282
            },
            "gtx1080ti fp32": {
                "file": "deepbench/deepbench_conv_1080Ti.csv",
                "sha256": "a11a8345d1e5af0273d0adeb14825bd04faef0fe021153a7219ad70e8631d56f",
                "rows": 282
            },
            "titanx-maxwell fp32": {
                "file": "deepbench/deepbench_conv_TitanX_Maxwell.csv",
                "sha256": "07c28fac35a67eb77da3e9e3aa67b30959d6157e75ae609b4a83c2308d5b2d08",
                "rows": 272
            },
            "m40 fp32": {
                "file": "deepbench/deepbench_conv_M40.csv",
                "sha256": "2d4cc27b6a5d312673b2a1fe94f011288cfe3ed2580a2b5fbd97d6932ba72e5f",
                "rows": 272
            },
            "t4 fp32": {
                "file": "deepbench/deepbench_conv_T4.csv",
                "sha256": "b6cdaf60f2e5e9a79be99b6223d692d800a0bc94e706787389d71c43611476d2",
                "rows": 272
            },
            "t4 fp16": {
                "file": "deepbench/deepbench_conv_T4.csv",
                "sha256": "b6cdaf60f2e5e9a79be99b6223d692d800a0bc94e706787389d71c43611476d2",
                "rows": 272
            },
            "a100-80gb-pcie fp32": {
                "file": "neusight/neusight_conv_fwd_A100_80GB_PCIe.csv",
                "sha256": "af24a70fb134349e1478f92088a98bc42896169091242585fd9fe563f85b30ad",
                "rows": 4787
            },
            "p100-pcie fp32": {
                "file": "neusight/neusight_conv_fwd_P100_PCIe_16GB.csv",
                "sha256": "36ce7d5a9e63ba1ceceb6be0a2c28b6862eef344300112db2cade921898faeb9",
                "rows": 4952
            },
            "p4 fp32": {
                "file": "neusight/neusight_conv_fwd_P4.csv",
                "sha256": "c2390a469f44070fc1c5df3b79fcfa3bf04a8c40757883d86f50e61a585d3a67",
                "rows": 4996
            }
        },
        "runs": "scripts/validate_gpu.py RUNS (library, selection, host time, padding)",
        "rows": 16669,
        "lambda_grid": [
            0.001,
            0.003,
            0.01,
            0.03,
            0.1,
            0.3,
            1.0,
            3.0,
            10.0
        ],
        "lambda_rule": "leave-one-GPU-out mean group error",
        "loo_mean_error": 0.1606,
        "loo_max_error": 0.2269
    }
}
