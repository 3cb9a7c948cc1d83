"""Arguments and helpers shared by several commands (workload selection, progress, output paths)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from antsim.errors import AntsimError, WorkloadError
from antsim.progress import tqdm_bar
from antsim.results import WorkloadEcho, check_writable_folder
from antsim.sparsity.densities import DensityError, check_density
from antsim.vocabulary import FIDELITIES, PHASES, Phase
from antsim.workloads.gemm import Gemm
from antsim.workloads.layers import Layer, read_layers_csv

T = TypeVar("T")

DEFAULT_NETWORK = "resnet18-cifar"


def add_workload_arguments(parser: argparse.ArgumentParser, default_network: str | None = DEFAULT_NETWORK) -> None:
    """``--network``, ``--layers-csv``, ``--batch``, ``--phases``."""
    group = parser.add_argument_group("workload")
    group.add_argument("--network", default=None,
                       help=f"network from the zoo (default {default_network}; see 'antsim zoo')")
    group.add_argument("--layers-csv", type=Path, default=None, help="layers CSV instead of a zoo network")
    # None = "not given": the data's own batch (a layers CSV's N column, a tensors file's N) stands, and a
    # zoo network runs at batch 1; a given --batch replaces it and says so on stderr.
    group.add_argument("--batch", type=int, default=None,
                       help="batch size N (default: the layers CSV's N column or the tensors file's batch;"
                            " 1 for a zoo network); given, it replaces the data's N")
    group.add_argument("--phases", default=",".join(PHASES), help="comma-separated subset of fprop,dgrad,wgrad")
    parser.set_defaults(_default_network=default_network)


def parse_phases(text: str) -> tuple[Phase, ...]:
    phases = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases:
        raise AntsimError(f"--phases: unknown phase {bad[0] if bad else text!r}; known: {', '.join(PHASES)}")
    return tuple(p for p in PHASES if p in phases)


def note(command: str, message: str) -> None:
    """One ``antsim COMMAND: message`` line on stderr (what the CLI decided for the user)."""
    sys.stderr.write(f"antsim {command}: {message}\n")
    sys.stderr.flush()


def data_batch(layers: list[Layer], source: str) -> int:
    """The one batch size ``layers`` share.

    Raises:
        WorkloadError: the layers carry different N (``source`` names the file).
    """
    def batch_of(layer: Any) -> int:  # a GEMM layer's N counts columns; its batch is its own field
        return layer.batch if isinstance(layer, Gemm) else layer.N

    batches = list(dict.fromkeys(batch_of(layer) for layer in layers))
    if len(batches) > 1:
        first = {n: next(l.name for l in layers if batch_of(l) == n) for n in batches[:2]}
        raise WorkloadError(f"{source}: column N: layers differ in batch ({batches[0]} at {first[batches[0]]!r},"
                            f" {batches[1]} at {first[batches[1]]!r}); give --batch N to run them at one batch")
    return batches[0]


def tensors_batch(tensors: Mapping[str, Any], source: str) -> int:
    """The batch of a tensors file: the N of its activations, the same for every layer.

    Raises:
        WorkloadError: layers whose activations differ in N.
    """
    batches = {name: int(t.activations.shape[0]) for name, t in tensors.items() if t.activations.ndim == 4}
    values = list(dict.fromkeys(batches.values()))
    if not values:
        raise WorkloadError(f"{source}: no 4-D activations to read the batch from")
    if len(values) > 1:
        names = {v: next(n for n, b in batches.items() if b == v) for v in values[:2]}
        raise WorkloadError(f"{source}: activations differ in batch ({values[0]} at {names[values[0]]!r},"
                            f" {values[1]} at {names[values[1]]!r})")
    return values[0]


def loaded_tensors(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``--tensors`` file, read once per command (cached on ``args``); None without ``--tensors``."""
    path = getattr(args, "tensors", None)
    if path is None:
        return None
    if getattr(args, "_tensors_cache", None) is None:
        from antsim.sparsity.tensors import load_tensors

        args._tensors_cache = load_tensors(path)
    return args._tensors_cache


def _chosen_batch(args: argparse.Namespace, tensors: Mapping[str, Any] | None, data: tuple[int, str] | None,
                  batch_hint: tuple[int, str] | None) -> tuple[int, str]:
    """The batch and where it came from: the tensors file's, else ``--batch``, else the layers CSV's
    (``data``), else ``batch_hint``, else 1; a replaced batch is noted on stderr."""
    if tensors is not None:
        found = tensors_batch(tensors, str(args.tensors))
        if args.batch is not None and args.batch != found:
            raise AntsimError(f"--batch {args.batch}: the tensors file {args.tensors} holds batch {found};"
                              " drop --batch (the operands set it)")
        if data is not None and data[0] != found and args.batch is None:
            raise AntsimError(f"{args.layers_csv}: column N is {data[0]} but the tensors file {args.tensors}"
                              f" holds batch {found}")
        if data is not None and data[0] != found:
            note(getattr(args, "command", "?"), f"--batch {found} replaces batch {data[0]} of {data[1]}")
        return found, f"{args.tensors} (tensors file)"
    if args.batch is not None:
        replaced = data or batch_hint
        if replaced is not None and replaced[0] != args.batch:
            note(getattr(args, "command", "?"), f"--batch {args.batch} replaces batch {replaced[0]} of {replaced[1]}")
        return args.batch, "--batch"
    if data is not None:
        return data
    if batch_hint is not None:
        return batch_hint
    return 1, "default (zoo networks are batch 1; give --batch N)"


def resolve_workload(args: argparse.Namespace, batch_hint: tuple[int, str] | None = None
                     ) -> tuple[list[Layer], WorkloadEcho]:
    """Layers and the workload echo ``{network, layers_csv, batch, batch_source, phases, layers}``.

    The batch is the data's: a layers CSV's N column, else a tensors file's N (``--tensors``), else
    ``batch_hint`` (``(N, where)``, e.g. a measurement CSV's N column), else 1 for a zoo network. A given
    ``--batch`` replaces a layers CSV's N or a hint's (and says so on stderr); it must agree with a tensors
    file, whose operands have that batch.

    Raises:
        AntsimError: ``--batch`` < 1, both or neither of ``--network``/``--layers-csv``, layers of mixed N,
            or a ``--batch`` that disagrees with the tensors file.
    """
    from antsim.workloads.zoo import network

    if args.batch is not None and args.batch < 1:
        raise AntsimError(f"--batch must be >= 1; got {args.batch}")
    if args.network and args.layers_csv:
        raise AntsimError("give either --network or --layers-csv, not both")
    phases = list(parse_phases(args.phases))
    tensors = loaded_tensors(args)
    if args.layers_csv:
        layers = read_layers_csv(args.layers_csv)
        name = args.layers_csv.stem
        data = (data_batch(layers, str(args.layers_csv)), f"{args.layers_csv} column N")
    else:
        name = args.network or args._default_network
        if name is None:
            raise AntsimError("give --network NAME or --layers-csv FILE")
        layers = network(name)
        data = None
    batch, source = _chosen_batch(args, tensors, data, batch_hint)
    layers = [layer.with_batch(batch) for layer in layers]
    workload = WorkloadEcho.of(network=name, layers_csv=str(args.layers_csv) if args.layers_csv else None,
                               batch=batch, batch_source=source, phases=phases,
                               layers=[layer.to_dict() for layer in layers])
    return layers, workload


def csv_batch_hint(paths: Iterable[Path]) -> tuple[int, str] | None:
    """The batch of the first measurement CSV among ``paths`` with an ``N`` column (see ``measured_batch``)."""
    from antsim.measure.external import measured_batch

    for path in paths:
        if Path(path).suffix.lower() == ".csv" and Path(path).is_file():
            hint = measured_batch(path)
            if hint is not None:
                return hint
    return None


def progress(items: Iterable[T], total: int | None = None, desc: str = "", unit: str = "it") -> Iterator[T]:
    """A tqdm progress bar on stderr (``antsim.progress.tqdm_bar``, the library's)."""
    return tqdm_bar(items, total=total, desc=desc, unit=unit)


def check_out_path(path: Path, suffixes: tuple[str, ...], flag: str = "--out") -> Path:
    """Reject an output file path that cannot be written, before any work is done.

    Refused: an unsupported suffix, an existing folder (or other non-file) at the path, a parent that is
    a file, and a folder (the nearest existing one, where the missing ones would be created) that this
    process may not write into.
    """
    if path.suffix.lower() not in suffixes:
        raise AntsimError(f"{flag} {path}: must end in {' or '.join(suffixes)}")
    if path.is_dir():
        raise AntsimError(f"{flag} {path}: is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise AntsimError(f"{flag} {path}: exists and is not a regular file")
    check_writable_folder(path, flag)
    return path


def seed_value(text: str) -> int:
    """argparse type of ``--seed``: an integer in [0, 2**32) (numpy's seed range; a negative seed is refused)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32); got {value}")
    return value


# Default operand densities of generated operands: the ANT paper's 90 % sparse W / A / dY regime
# (antsim.simulate.DEFAULT_DENSITIES); flags default to None so "given" can be told from "default".
_DENSITY_FLAGS = (("w", "density_w", "--density-w"), ("a", "density_a", "--density-a"),
                  ("g", "density_g", "--density-g"), ("a_saved", "density_a_saved", "--density-a-saved"),
                  ("attn", "density_attn", "--density-attn"))


def batch_sample_value(text: str) -> int:
    """``--batch-sample``: a non-negative int."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer (0 = every image); got {text!r}")
    return value


def add_sparsity_arguments(parser: argparse.ArgumentParser, title: str = "sparsity and simulation") -> None:
    """Operand densities, generator or tensors file, fidelity, seed — shared by ``simulate`` and ``compare``."""
    group = parser.add_argument_group(title)
    group.add_argument("--density-w", type=float, default=None, help="weight density (default 0.1)")
    group.add_argument("--density-a", type=float, default=None, help="activation density (default 0.1)")
    group.add_argument("--density-g", type=float, default=None, help="output-gradient dY density (default 0.1)")
    group.add_argument("--density-a-saved", type=float, default=None,
                       help="density of the top-k copy of A saved for wgrad (SWAT; default: wgrad uses A)")
    group.add_argument("--density-attn", type=float, default=None,
                       help="density of attention matrices (softmax P of GEMM layers, top-k per query;"
                            " default 1.0: a softmax has no zeros; antsim.sparsity.gemm)")
    group.add_argument("--regime", default=None,
                       help="named training regime setting every density and the generator: swat (W 0.1, A"
                            " 0.5, saved A 0.1, dY 1.0) | swat-gs (dY 0.1) | uniform (all 0.1, Bernoulli);"
                            " --density-*/--sparsity given beside it override its values")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--sparsity", default=None,
                        help="operand generator: swat (calibrated on captured SWAT tensors, the default) |"
                             " topk_field | uniform | channel")
    source.add_argument("--tensors", type=Path, default=None,
                        help="tensors .npz file instead of generated ones (its batch and densities are used)")
    group.add_argument("--fidelity", choices=FIDELITIES, default="fast",
                       help="fast (vector granularity, default) or exact (every product)")
    group.add_argument("--batch-sample", type=batch_sample_value, default=0, metavar="K",
                       help="fast fidelity: map K images of each layer's batch and estimate the others from"
                            " them (antsim.dataflow.sampling; error in BENCHMARKS.md); default 0 = every image")
    group.add_argument("--seed", type=seed_value, default=0, help="seed of the operand generators (default 0)")
    group.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def resolve_densities(args: argparse.Namespace) -> dict[str, float]:
    """``{"w", "a", "g"[, "a_saved", "attn"]}`` from the regime and the density flags, each by the one rule
    of ``antsim.sparsity.densities`` (in (0, 1]).

    Raises:
        AntsimError: a density outside (0, 1] (naming the flag), or a density flag next to ``--tensors``
            (the file's operands have their own densities, so the flag could not apply).
    """
    from antsim.simulate import check_densities

    given = {key: getattr(args, attr) for key, attr, _flag in _DENSITY_FLAGS if getattr(args, attr) is not None}
    base = _apply_regime(args)
    if getattr(args, "tensors", None) is not None and given:
        flag = next(f for key, _attr, f in _DENSITY_FLAGS if key in given)
        raise AntsimError(f"{flag} {given[next(iter(given))]}: cannot apply with --tensors {args.tensors}"
                          " (its operands carry their own densities, recorded in the result)")
    for key, _attr, flag in _DENSITY_FLAGS:
        if key in given:
            try:
                check_density(key, given[key])
            except DensityError as exc:
                raise AntsimError(f"{flag}: {exc}") from None
    return check_densities({**base, **given})


def _apply_regime(args: argparse.Namespace) -> dict[str, float]:
    """The ``--regime``'s densities (empty without one); fills ``args.sparsity`` with the regime's generator
    (else ``swat``) when ``--sparsity`` was not given."""
    from antsim.sparsity.regimes import regime

    chosen = regime(args.regime) if getattr(args, "regime", None) else None
    if chosen is not None and getattr(args, "tensors", None) is not None:
        raise AntsimError(f"--regime {args.regime}: cannot apply with --tensors {args.tensors} (its operands carry"
                          " their own densities)")
    if getattr(args, "sparsity", None) is None:
        args.sparsity = chosen.sparsity if chosen is not None else "swat"
    return dict(chosen.densities) if chosen is not None else {}


def resolve_tensors(args: argparse.Namespace, layers: list[Layer]) -> dict[str, Any] | None:
    """The ``--tensors`` file's operands, checked to cover every layer with matching shapes."""
    tensors = loaded_tensors(args)
    if tensors is None:
        return None
    for layer in layers:
        if layer.name not in tensors:
            raise WorkloadError(f"{args.tensors}: no tensors for layer {layer.name!r}")
        try:
            tensors[layer.name].check_shapes(layer)
        except WorkloadError as exc:
            raise WorkloadError(f"{args.tensors}: {exc}") from None
    return tensors


def check_sparsity_model(name: str) -> None:
    """Reject an unknown ``--sparsity`` generator name."""
    from antsim.sparsity.generators import sparsity_models

    if name not in sparsity_models():
        raise AntsimError(f"--sparsity: unknown model {name!r}; known: {', '.join(sparsity_models())}")
