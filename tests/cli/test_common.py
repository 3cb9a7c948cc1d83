"""``--density-attn``: the attention matrices' density reaches the GEMM operands and the result's echo."""

from __future__ import annotations

import json
from pathlib import Path

from antsim.cli import main

CSV = ("name,kind,N,C,K,H,W,R,S,stride,pad,stride_h,stride_w,pad_h,pad_w,M,count,a,batch,batch_dim\n"
       "pv,gemm,32,,24,,,,,,,,,,,24,2,attention,1,count\n")


def _valid(tmp_path: Path, density: str) -> tuple[int, dict]:
    layers = tmp_path / "attn.csv"
    layers.write_text(CSV, encoding="utf-8")
    out = tmp_path / f"r{density}.json"
    assert main(["simulate", "--arch", "arch_configs/ant.yaml", "--layers-csv", str(layers), "--density-attn",
                 density, "--no-progress", "--out", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    return sum(r["products"]["valid"] for r in result["records"]), result["workload"]["densities"]


def test_a_sparser_attention_matrix_gives_fewer_valid_products(tmp_path: Path) -> None:
    dense_valid, dense_echo = _valid(tmp_path, "1.0")
    sparse_valid, sparse_echo = _valid(tmp_path, "0.2")
    assert dense_echo["attn"] == 1.0 and sparse_echo["attn"] == 0.2
    assert 0 < sparse_valid < 0.4 * dense_valid  # P·V's valid products scale with P's density (0.2 of 1.0)


def test_an_attention_density_outside_0_1_is_refused(tmp_path: Path, capsys) -> None:
    layers = tmp_path / "attn.csv"
    layers.write_text(CSV, encoding="utf-8")
    assert main(["simulate", "--arch", "arch_configs/ant.yaml", "--layers-csv", str(layers), "--density-attn",
                 "1.5", "--out", str(tmp_path / "r.json")]) == 2
    assert "--density-attn: density of attention matrices must be in (0, 1]; got 1.5" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
