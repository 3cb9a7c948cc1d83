"""Networks with GEMM layers: BERT-base, a CIFAR ViT, an LSTM language model and the FC heads of the CNNs.

Every builder returns the layers of one training sample (batch 1) in network order; ``with_batch``
scales the batch (``Gemm.batch_dim``). Layout: a linear layer is ``Y (out × tokens) = W (out × in) ·
X (in × tokens)``; attention is two activation × activation GEMMs per head, ``S = Q·Kᵀ`` (scores,
``a="activations"``) and ``C = P·V`` (context, ``a="attention"``: P is the softmax output). What is
counted and the published totals each is checked against (``tests/workloads/test_transformers.py``):

* ``bert_base(seq_len=128)`` — BERT-base (Devlin et al., NAACL 2019: L=12, H=768, A=12, FFN 3072; "110M"
  parameters): the 12 encoder layers' GEMMs, named as Hugging Face's ``BertModel`` modules (query, key,
  value, attention.output.dense, intermediate.dense, output.dense) plus ``attention.scores`` and
  ``attention.context``. Embeddings (lookups), the pooler, biases, LayerNorm and softmax are not GEMMs of
  the encoder stack and are left out; with them added back the parameter count is 109,482,240, the count
  of ``bert-base-uncased``. Default sequence length 128 (the phase-1 pre-training length of Devlin et al.).
* ``vit_lite_7_4()`` — ViT-Lite-7/4 for 32×32 inputs (Hassani et al., "Escaping the Big Data Paradigm
  with Compact Transformers", arXiv:2104.05704, 2021: patch 4, dim 256, depth 7, 4 heads, MLP ratio 2,
  class token; 3.72M parameters on CIFAR-10): the 4×4/4 patch convolution (a conv layer), per block the
  fused qkv (no bias, as in the authors' code), scores, context, proj, linear1, linear2, and the 10-way
  classifier on the class token. 65 tokens (64 patches + class token).
* ``lstm_lm_medium()`` — the 2-layer "medium" LSTM language model of Zaremba et al. ("Recurrent Neural
  Network Regularization", arXiv:1409.2329, 2014: 650 units, 10k-word vocabulary, unrolled 35 steps;
  20M parameters as tabulated by Merity et al., ICLR 2018, Table 1): per layer the input-to-hidden and
  hidden-to-hidden gate GEMMs (4·650 gate rows) at each of the 35 time steps (``count=35``, weights
  shared) and the decoder over all 35 steps. The embedding is a lookup (no GEMM).
* ``cnn_head(name)`` — the fully-connected layers after the convolutions of the zoo's CNNs
  (torchvision's classifiers for the ImageNet models; kuangliu/pytorch-cifar's for the CIFAR ones).
"""

from __future__ import annotations

from antsim.errors import WorkloadError
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer

BERT_SEQ_LEN = 128  # Devlin et al. 2019 pre-train 90 % of the steps at sequence length 128


def _attention(prefix: str, tokens: int, dim: int, heads: int) -> list[Gemm]:
    """Per-head scores S = Q·Kᵀ (tokens × tokens, reduction dim/heads) and context C = P·V."""
    head_dim = dim // heads
    return [Gemm(f"{prefix}.scores", M=tokens, N=tokens, K=head_dim, count=heads, a="activations",
                 batch_dim="count"),
            Gemm(f"{prefix}.context", M=tokens, N=head_dim, K=tokens, count=heads, a="attention",
                 batch_dim="count")]


def bert_base(seq_len: int = BERT_SEQ_LEN, layers: int = 12, hidden: int = 768, heads: int = 12,
              ffn: int = 3072) -> list[Gemm]:
    """BERT-base's encoder stack as GEMMs, one sequence of ``seq_len`` tokens (see the module docstring)."""
    if not isinstance(seq_len, int) or seq_len < 1:
        raise WorkloadError(f"bert-base: sequence length must be a positive int; got {seq_len!r}")
    out: list[Gemm] = []
    for i in range(layers):
        p = f"encoder.layer.{i}"
        out += [Gemm(f"{p}.attention.self.{n}", M=hidden, N=seq_len, K=hidden) for n in ("query", "key", "value")]
        out += _attention(f"{p}.attention", seq_len, hidden, heads)
        out += [Gemm(f"{p}.attention.output.dense", M=hidden, N=seq_len, K=hidden),
                Gemm(f"{p}.intermediate.dense", M=ffn, N=seq_len, K=hidden),
                Gemm(f"{p}.output.dense", M=hidden, N=seq_len, K=ffn)]
    return out


def vit_lite_7_4(classes: int = 10, image: int = 32, patch: int = 4, dim: int = 256, depth: int = 7,
                 heads: int = 4, mlp_ratio: int = 2) -> list[Layer | Gemm]:
    """ViT-Lite-7/4 on one 32×32 image (see the module docstring); names follow the authors' modules."""
    tokens = (image // patch) ** 2 + 1  # patches + class token
    out: list[Layer | Gemm] = [Layer("tokenizer.conv_layers.0.0", N=1, C=3, K=dim, H=image, W=image, R=patch,
                                     S=patch, stride=(patch, patch), pad=(0, 0))]
    for i in range(depth):
        p = f"classifier.blocks.{i}"
        out.append(Gemm(f"{p}.self_attn.qkv", M=3 * dim, N=tokens, K=dim))
        out += _attention(f"{p}.self_attn", tokens, dim, heads)
        out += [Gemm(f"{p}.self_attn.proj", M=dim, N=tokens, K=dim),
                Gemm(f"{p}.linear1", M=mlp_ratio * dim, N=tokens, K=dim),
                Gemm(f"{p}.linear2", M=dim, N=tokens, K=mlp_ratio * dim)]
    out.append(Gemm("classifier.fc", M=classes, N=1, K=dim))  # on the class token only
    return out


LSTM_STEPS = 35  # Zaremba et al. 2014 unroll the medium model for 35 steps


def lstm_lm_medium(vocab: int = 10000, hidden: int = 650, layers: int = 2, steps: int = LSTM_STEPS) -> list[Gemm]:
    """The medium LSTM language model on one sequence of ``steps`` words (see the module docstring)."""
    out: list[Gemm] = []
    for layer in range(layers):
        for kind in ("ih", "hh"):  # gates = W_ih·x_t + W_hh·h_(t-1): one GEMM of each per time step
            out.append(Gemm(f"rnn.weight_{kind}_l{layer}", M=4 * hidden, N=1, K=hidden, count=steps))
    out.append(Gemm("decoder", M=vocab, N=steps, K=hidden))  # every step's hidden state at once
    return out


# (FC layer name, in features, out features) after the convolutions of each zoo CNN.
CNN_HEADS: dict[str, list[tuple[str, int, int]]] = {
    "vgg16-imagenet": [("classifier.0", 25088, 4096), ("classifier.3", 4096, 4096), ("classifier.6", 4096, 1000)],
    "vgg16-cifar": [("classifier", 512, 10)],
    "resnet18-imagenet": [("fc", 512, 1000)],
    "resnet50-imagenet": [("fc", 2048, 1000)],
    "resnet18-cifar": [("linear", 512, 10)],
    "densenet121-imagenet": [("classifier", 1024, 1000)],
    "densenet121-cifar": [("linear", 1024, 10)],
    "wrn-16-8-cifar": [("fc", 512, 10)],
    "googlenet-imagenet": [("fc", 1024, 1000)],
}


def cnn_head(name: str) -> list[Gemm]:
    """The FC layers of zoo CNN ``name`` on one image.

    Raises:
        WorkloadError: a CNN without a listed head.
    """
    if name not in CNN_HEADS:
        raise WorkloadError(f"no FC head listed for {name!r}; known: {', '.join(sorted(CNN_HEADS))}")
    return [Gemm(layer, M=out, N=1, K=inp) for layer, inp, out in CNN_HEADS[name]]


__all__ = ["BERT_SEQ_LEN", "CNN_HEADS", "LSTM_STEPS", "bert_base", "cnn_head", "lstm_lm_medium", "vit_lite_7_4"]
