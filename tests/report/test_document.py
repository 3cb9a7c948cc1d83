"""``antsim.report.document``: how the report names a GPU design."""

from __future__ import annotations


def test_gpu_designs_read_as_gpu_names_with_their_precision() -> None:
    from antsim.report.document import _gpu_name

    assert [_gpu_name(d) for d in ("v100", "h100-fp16", "a100-bf16-2:4", "my_gpu")] == [
        "V100", "H100 fp16", "A100 bf16 2:4", "my_gpu"]
