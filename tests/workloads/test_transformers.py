"""Networks with GEMM layers against published parameter counts and closed-form MAC counts.

Published counts: BERT-base "110M" (Devlin et al., NAACL 2019, Table/Section 3) — 109,482,240 for Hugging
Face's ``bert-base-uncased``; ViT-Lite-7/4 3.72M (Hassani et al., arXiv:2104.05704, Table 1, CIFAR-10);
Zaremba et al.'s medium LSTM 20M (as tabulated by Merity et al., "Regularizing and Optimizing LSTM
Language Models", ICLR 2018, Table 1); VGG-16 138,357,544 (torchvision ``VGG16_Weights.IMAGENET1K_V1``
num_params). What the zoo leaves out (embeddings, biases, LayerNorm, BatchNorm) is added back here by hand.
"""

from __future__ import annotations

import pytest

import antsim
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer
from antsim.workloads.transformers import CNN_HEADS, bert_base
from antsim.workloads.zoo import network


def _gemm_weights(layers: list) -> int:
    return sum(l.parameters for l in layers if isinstance(l, Gemm))


def test_bert_base_parameters_match_the_published_count() -> None:
    layers = network("bert-base")
    assert len(layers) == 12 * 8 and all(isinstance(l, Gemm) for l in layers)
    hidden, ffn, vocab, positions, types = 768, 3072, 30522, 512, 2
    per_layer_bias_ln = 4 * hidden + ffn + hidden + 2 * 2 * hidden  # q,k,v,o biases; FFN biases; 2 LayerNorms
    embeddings = (vocab + positions + types) * hidden + 2 * hidden  # word, position, token type, LayerNorm
    pooler = hidden * hidden + hidden
    total = _gemm_weights(layers) + 12 * per_layer_bias_ln + embeddings + pooler
    assert _gemm_weights(layers) == 12 * (4 * hidden**2 + 2 * hidden * ffn)
    assert total == 109_482_240
    assert round(total / 1e6) == 109 and abs(total - 110e6) / 110e6 < 0.01  # Devlin et al.'s "110M"


def test_bert_macs_closed_form_and_sequence_length() -> None:
    for seq in (128, 512):
        layers = network("bert-base" if seq == 128 else f"bert-base-seq{seq}")
        per_layer = seq * (4 * 768**2 + 2 * 768 * 3072) + 2 * seq * seq * 768  # projections + QK^T + PV
        assert sum(l.macs for l in layers) == 12 * per_layer
    scores = {l.name: l for l in bert_base(64)}["encoder.layer.3.attention.scores"]
    assert (scores.M, scores.N, scores.K, scores.count, scores.a) == (64, 64, 64, 12, "activations")
    batch8 = [l.with_batch(8) for l in network("bert-base")]
    assert sum(l.macs for l in batch8) == 8 * sum(l.macs for l in network("bert-base"))
    assert {l.count for l in batch8 if l.a != "weights"} == {96}  # 12 heads x 8 sequences


def test_vit_lite_parameters_match_the_published_count() -> None:
    layers = network("vit-lite-7-4-cifar")
    conv = [l for l in layers if isinstance(l, Layer)]
    assert len(conv) == 1 and (conv[0].P, conv[0].Q, conv[0].K) == (8, 8, 256)
    dim, depth, tokens = 256, 7, 65
    conv_params = conv[0].C * conv[0].K * conv[0].R * conv[0].S + dim  # with bias
    # per block: proj and MLP biases (qkv has none) and two LayerNorms; class token, positions, final LN, fc bias
    biases_ln = depth * (dim + 2 * dim + dim + 2 * 2 * dim) + dim + tokens * dim + 2 * dim + 10
    total = conv_params + _gemm_weights(layers) + biases_ln
    assert total == 3_716_874
    assert round(total / 1e6, 2) == 3.72


def test_vit_lite_macs_closed_form() -> None:
    layers = network("vit-lite-7-4-cifar")
    dim, tokens = 256, 65
    block = tokens * (3 * dim * dim + dim * dim + 2 * dim * 2 * dim) + 2 * tokens * tokens * dim
    assert sum(l.macs for l in layers) == 3 * dim * 16 * 64 + 7 * block + 10 * dim


def test_lstm_parameters_match_the_published_count() -> None:
    layers = network("lstm-lm-medium")
    hidden, vocab, steps = 650, 10000, 35
    embedding, biases = vocab * hidden, 2 * 2 * 4 * hidden + vocab  # b_ih and b_hh per layer; decoder bias
    total = _gemm_weights(layers) + embedding + biases
    assert _gemm_weights(layers) == 2 * 2 * 4 * hidden * hidden + vocab * hidden
    assert abs(total - 20e6) / 20e6 < 0.02  # 19.78M: Merity et al.'s "20M"
    assert sum(l.macs for l in layers) == steps * (2 * 2 * 4 * hidden * hidden + vocab * hidden)
    gates = [l for l in layers if "weight_hh" in l.name]
    assert all((l.count, l.N, l.batch_dim) == (35, 1, "N") for l in gates)
    assert {l.N for l in (g.with_batch(20) for g in gates)} == {20}


def test_vgg16_with_its_classifier_matches_torchvision() -> None:
    layers = network("vgg16-imagenet-full")
    conv = sum(l.C * l.K * l.R * l.S + l.K for l in layers if isinstance(l, Layer))
    fc = sum(l.parameters + l.M for l in layers if isinstance(l, Gemm))
    assert conv + fc == 138_357_544
    assert round(sum(l.macs for l in layers) / 1e9, 2) == pytest.approx(15.47)  # torchvision GFLOPS, FC included


def _features_after_convs(cnn: str, convs: list) -> int:
    """Width of the feature vector the convolutions hand the classifier, read off the conv layers."""
    if cnn == "vgg16-imagenet":
        return convs[-1].K * 7 * 7  # 7x7 adaptive average pool, flattened
    if cnn.startswith("densenet"):
        return convs[-2].C + convs[-1].K  # the last dense layer's input plus its growth, concatenated
    if cnn.startswith("googlenet"):
        return sum(l.K for l in convs if l.name.startswith("inception5b.") and l.name.split(".")[1] in
                   ("branch1", "branch4") or l.name in ("inception5b.branch2.1.conv", "inception5b.branch3.1.conv"))
    return convs[-1].K  # global average pool of the last conv's channels


@pytest.mark.parametrize("cnn", sorted(CNN_HEADS))
def test_full_networks_are_the_convs_then_their_head(cnn: str) -> None:
    full = network(f"{cnn}-full")
    convs = network(cnn)
    assert full[:len(convs)] == convs
    heads = full[len(convs):]
    assert heads and all(isinstance(l, Gemm) and l.N == 1 and l.weight_shared for l in heads)
    assert heads[0].K == _features_after_convs(cnn, convs)
    assert all(a.M == b.K for a, b in zip(heads, heads[1:], strict=False))  # the FC layers chain
    assert heads[-1].M == (10 if "cifar" in cnn else 1000)


def test_unknown_bert_length_and_head() -> None:
    with pytest.raises(antsim.WorkloadError, match="unknown network"):
        network("bert-large")
    with pytest.raises(antsim.WorkloadError, match="sequence length"):
        bert_base(0)
