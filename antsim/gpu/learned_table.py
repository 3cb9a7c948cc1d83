"""The learned GPU correction's coefficients (``antsim.gpu.learned``), written by
``scripts/fit_gpu_correction.py``: do not edit by hand, refit.

``fingerprint`` is ``antsim.gpu.learned.model_fingerprint()`` of the physical model they were
fitted on; ``provenance`` names the measured files (docs/gpu_learned.md).
"""

from typing import Any

TABLE: dict[str, Any] = {
    "fingerprint": "e98ee2410a0108fd",
    "ridge_lambda": 10.0,
    "intercept": 0.017449158928958968,
    "weights": {
        "dgrad": 0.002684474560434715,
        "wgrad": -0.0018079819740995976,
        "winograd": -0.009276088698469786,
        "fft": -0.0006269297043348172,
        "tensor_cores": -0.0003059645044913152,
        "log_intensity_vs_ridge": -0.0031824443387264353,
        "work_ratio": -0.003979074543020883,
        "wave_tail": 0.004711647284499493,
        "filter_1x1": 0.010485164560491178,
        "filter_large": -0.0160516405540944,
        "strided": 0.008556988427992766,
        "small_c": -0.024010700346116343,
        "small_k": 0.01965718732948892,
        "wide_sm": -0.012218248110066297,
        "wgrad_1x1": 0.01563309397606378,
        "dgrad_strided": -0.012088868980474555,
        "log_time_vs_launch": -0.010420336219374297,
        "cudnn5": 0.026968668905602088,
        "cudnn6": -0.010584502763958333,
        "cudnn8": 0.008737104962940702
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
                "sha256": "3b43deed36fbf9307453896d758e387d1a7cd0061480074fd29932ff4e0434d9",
                "rows": 399
            },
            "p100-pcie fp32": {
                "file": "neusight/neusight_conv_fwd_P100_PCIe_16GB.csv",
                "sha256": "c8f79fee99917a38235024697a5cfa0fc86b119dd066528a14322049f37a1448",
                "rows": 413
            },
            "p4 fp32": {
                "file": "neusight/neusight_conv_fwd_P4.csv",
                "sha256": "af5d39073bd193d6cfd7e1889bf9ed0c030e0bd99339ab8fc5671d55963325b2",
                "rows": 417
            }
        },
        "runs": "scripts/validate_gpu.py RUNS (library, selection, host time, padding)",
        "rows": 3163,
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
        "loo_mean_error": 0.1765,
        "loo_max_error": 0.3001
    }
}
