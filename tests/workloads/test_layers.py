from __future__ import annotations

import pytest

from antsim import Layer, read_layers_csv
from antsim.errors import WorkloadError
from antsim.workloads.layers import write_layers_csv


def test_output_plane_and_macs_match_conv_arithmetic() -> None:
    layer = Layer(name="l", N=2, C=4, K=8, H=9, W=7, R=3, S=3, stride=2, pad=1)
    assert (layer.P, layer.Q) == (5, 4)  # floor((9+2-3)/2)+1, floor((7+2-3)/2)+1
    assert layer.macs == 2 * 8 * 5 * 4 * 4 * 3 * 3


def test_non_square_stride_and_pad() -> None:
    layer = Layer(name="l", N=1, C=1, K=1, H=10, W=10, R=3, S=5, stride=(1, 2), pad=(0, 2))
    assert (layer.stride_h, layer.stride_w, layer.pad_h, layer.pad_w) == (1, 2, 0, 2)
    assert (layer.P, layer.Q) == (8, 5)
    assert Layer.from_dict(layer.to_dict()) == layer


@pytest.mark.parametrize("kwargs,match", [
    (dict(C=0), "C must be a positive int"),
    (dict(R=12), "kernel larger than padded input"),
    (dict(stride=0), "stride must be >= 1"),
    (dict(pad=(1, 2, 3)), "pair of ints"),
])
def test_bad_layers_raise(kwargs: dict, match: str) -> None:
    base = dict(name="x", N=1, C=2, K=2, H=5, W=5, R=3, S=3)
    with pytest.raises(WorkloadError, match=match):
        Layer(**{**base, **kwargs})


def test_csv_round_trip_and_overrides(tmp_path) -> None:
    path = tmp_path / "layers.csv"
    path.write_text("name,N,C,K,H,W,R,S,stride,pad,stride_w,pad_h\n"
                    "a,1,3,8,9,9,3,3,1,1,,\n"
                    "b,2,8,16,9,9,3,3,2,1,1,0\n")
    a, b = read_layers_csv(path)
    assert a.stride == (1, 1) and a.pad == (1, 1)
    assert b.stride == (2, 1) and b.pad == (0, 1) and b.N == 2
    out = tmp_path / "out.csv"
    write_layers_csv([a, b], out)
    assert read_layers_csv(out) == [a, b]


@pytest.mark.parametrize("text,match", [
    ("name,N,C,K,H,W,R,S,stride\n", r"missing \['pad'\]"),
    ("name,N,C,K,H,W,R,S,stride,pad\nx,1,3,8,nine,9,3,3,1,1\n", "line 2: column H must be an integer; got 'nine'"),
    ("name,N,C,K,H,W,R,S,stride,pad\nx,1,3,8,9,9,3,3,1,1\nx,1,3,8,9,9,3,3,1,1\n", "duplicate layer names"),
    ("name,N,C,K,H,W,R,S,stride,pad\nx,1,0,8,9,9,3,3,1,1\n", "line 2: layer 'x': C must be a positive int"),
])
def test_bad_csv_names_file_line_and_value(tmp_path, text: str, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(WorkloadError, match=match) as info:
        read_layers_csv(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_csv(tmp_path) -> None:
    with pytest.raises(WorkloadError, match="not found"):
        read_layers_csv(tmp_path / "nope.csv")
