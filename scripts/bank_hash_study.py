"""SCNN fprop cycles and bank-conflict share per accumulator bank hash on a sample of GoogLeNet layers.

    .venv/bin/python scripts/bank_hash_study.py          # densities 1.0 and 0.3, uniform W = A masks
"""

from __future__ import annotations

import sys

from antsim.simulate import simulate_layer
from antsim.sparsity.generators import make_tensors
from antsim.spec.arch import arch_from_dict, load_arch
from antsim.workloads.zoo import network

HASHES = ("mod", "xor", "sliced")


def main() -> int:
    base = load_arch("arch_configs/scnn.yaml").to_dict()
    layers = network("googlenet-imagenet")
    sample = [layer for layer in layers if layer.R == 3][::3][:6] + [layer for layer in layers if layer.R == 1][::8][:4]
    print("| density | layer | H | C | K | R | " + " | ".join(f"{h} cycles, conflict share" for h in HASHES) + " |")
    print("|---" * (6 + len(HASHES)) + "|")
    for density in (1.0, 0.3):
        for layer in sample:
            tensors = make_tensors(layer, density, density, density, model="uniform", seed=1)
            cells = []
            for bank_hash in HASHES:
                arch = arch_from_dict({**base, "accumulators": {**base["accumulators"], "bank_hash": bank_hash}})
                result = simulate_layer(arch, layer, "fprop", tensors, fidelity="fast")
                cells.append(f"{result.cycles} {result.stalls['bank_conflict'] / result.cycles:.0%}")
            print(f"| {density} | {layer.name} | {layer.H} | {layer.C} | {layer.K} | {layer.R} | "
                  + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
