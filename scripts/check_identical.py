"""Byte-identical check: the same commands give the same result JSON bytes before and after a change.

Runs a fixed set of antsim commands (the main job at batch 1, ``simulate`` for three designs, a small
``gpu`` run, a 3-trial sweep export) into a folder and records the SHA-256 of every result JSON in a
manifest; compares two manifests file by file. Usage (docs/development.md, "Byte-identical check")::

    .venv/bin/python scripts/check_identical.py --baseline HEAD            # HEAD's results vs the working tree
    .venv/bin/python scripts/check_identical.py --baseline HEAD~3 --current HEAD --keep /tmp/ident  # two revisions
    .venv/bin/python scripts/check_identical.py --write manifest.json      # record the working tree only
    .venv/bin/python scripts/check_identical.py --against manifest.json    # the working tree vs a manifest

A revision is exported with ``git archive`` into a folder under /tmp (no worktree metadata is added to
the repository, so people committing meanwhile are not disturbed) and run with this checkout's Python
and dependencies, its own ``antsim`` package first on ``PYTHONPATH``. Exit status 0: every hash matches;
1: a file differs, is missing or appeared (one line each); 2: a bad argument or a failed command (one
line; a failed command's log is named).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMA = "antsim.identical/1"


@dataclass(frozen=True)
class Command:
    """One antsim run: its arguments (``{out}`` = this command's output folder) and the JSON files it leaves."""

    name: str
    args: tuple[str, ...]
    outputs: tuple[str, ...]  # glob patterns under the command's output folder


# scripts/main.sh's comparison (designs, GPUs, precisions, regime, seed, baseline) at batch 1 instead of 16,
# so the check stays at a few minutes on two cores; the report's data/comparison.json and results/*.json.
MAIN_ARGS = ("compare", "--arch", "arch_configs/scnn.yaml", "arch_configs/ant.yaml",
             "--gpu", "v100", "h100", "--gpu-precision", "fp32", "fp16",
             "--network", "resnet18-cifar", "--batch", "1", "--regime", "swat", "--seed", "0",
             "--baseline", "scnn", "--no-progress", "--out", "{out}/comparison.json", "--report-out", "{out}/report")


def _simulate(design: str) -> Command:
    return Command(f"simulate-{design}", ("simulate", "--arch", f"arch_configs/{design}.yaml",
                                          "--network", "resnet18-cifar", "--fidelity", "fast", "--seed", "0",
                                          "--no-progress", "--out", "{out}/result.json"), ("result.json",))


COMMANDS: tuple[Command, ...] = (
    Command("main", MAIN_ARGS, ("comparison.json", "report/data/comparison.json", "report/results/*.json")),
    _simulate("scnn"), _simulate("ant"), _simulate("dense"),
    Command("gpu-v100", ("gpu", "--gpu", "v100", "--precision", "fp16", "--network", "resnet18-cifar",
                         "--batch", "8", "--no-progress", "--out", "{out}/result.json"), ("result.json",)),
    Command("sweep-smoke", ("sweep", "sweeps/smoke.yaml", "--n-trials", "3", "--storage", "sqlite:///{out}/smoke.db",
                            "--export", "{out}/export", "--no-figures"), ("export/pareto.json",)),
)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_command(command: Command, tree: Path, out: Path) -> dict[str, str]:
    """Run one command in ``tree`` with that tree's package; the hashes of its outputs, by relative path."""
    folder = out / command.name
    folder.mkdir(parents=True)
    argv = [sys.executable, "-m", "antsim", *(a.replace("{out}", str(folder)) for a in command.args)]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    log = out / f"{command.name}.log"
    with log.open("w") as handle:
        status = subprocess.run(argv, cwd=tree, env=env, stdout=handle, stderr=subprocess.STDOUT).returncode
    if status != 0:
        raise SystemExit(f"check_identical: {command.name} failed in {tree} (exit {status}); see {log}")
    files = sorted({p for pattern in command.outputs for p in folder.glob(pattern)})
    if not files:
        raise SystemExit(f"check_identical: {command.name} wrote none of {', '.join(command.outputs)} in {folder}")
    return {str(p.relative_to(out)): sha256(p) for p in files}


def run_suite(tree: Path, out: Path, label: str) -> dict[str, object]:
    """Every command on ``tree`` into ``out``; the manifest (label, seconds per command, hashes)."""
    files: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for command in COMMANDS:
        start = time.perf_counter()
        files.update(run_command(command, tree, out))
        seconds[command.name] = round(time.perf_counter() - start, 1)
        print(f"check_identical: {label}: {command.name} {seconds[command.name]} s", file=sys.stderr)
    return {"schema": SCHEMA, "source": label, "seconds": seconds, "files": files}


def export_revision(rev: str, into: Path) -> str:
    """``git archive`` of ``rev`` unpacked into ``into``; the full commit id."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True)
    if commit.returncode != 0:
        raise SystemExit(f"check_identical: --baseline/--current: {rev!r} is not a revision of {REPO}")
    into.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", commit.stdout.strip()], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"check_identical: git archive {rev} failed")
    return commit.stdout.strip()


def manifest_of(rev: str | None, work: Path, name: str) -> dict[str, object]:
    """Run the suite on a revision (exported under ``work``) or, with ``rev`` None, on the working tree."""
    if rev is None:
        return run_suite(REPO, work / f"{name}-results", "working tree")
    tree = work / f"{name}-tree"
    commit = export_revision(rev, tree)
    return run_suite(tree, work / f"{name}-results", f"{rev} ({commit[:12]})")


def differences(base: dict[str, object], current: dict[str, object]) -> list[str]:
    b, c = base["files"], current["files"]
    assert isinstance(b, dict) and isinstance(c, dict)
    lines = [f"differs: {f}" for f in sorted(b.keys() & c.keys()) if b[f] != c[f]]
    lines += [f"missing now: {f}" for f in sorted(b.keys() - c.keys())]
    lines += [f"new now: {f}" for f in sorted(c.keys() - b.keys())]
    return lines


def load_manifest(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"check_identical: --against: cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SystemExit(f"check_identical: --against: {path} is not an {SCHEMA} manifest")
    return data


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    side = parser.add_mutually_exclusive_group(required=True)
    side.add_argument("--baseline", metavar="REV", help="build the baseline manifest at this git revision")
    side.add_argument("--against", type=Path, metavar="MANIFEST", help="compare with a saved manifest")
    side.add_argument("--write", type=Path, metavar="MANIFEST", help="only write the current side's manifest")
    parser.add_argument("--current", metavar="REV", help="run this revision instead of the working tree")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep trees, results, logs and manifests here")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.keep is not None and args.keep.exists():
        raise SystemExit(f"check_identical: --keep: {args.keep} exists; name a new folder")
    work = args.keep or Path(tempfile.mkdtemp(prefix="antsim-identical-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        base = load_manifest(args.against) if args.against is not None else None  # a bad file fails first
        if args.baseline is not None:
            base = manifest_of(args.baseline, work, "baseline")
        current = manifest_of(args.current, work, "current")
        if args.write is not None:
            args.write.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
            print(f"check_identical: wrote {len(current['files'])} hashes to {args.write}")  # type: ignore[arg-type]
            return 0
        assert base is not None
        for name, manifest in (("baseline", base), ("current", current)):
            (work / f"{name}.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        lines = differences(base, current)
        for line in lines:
            print(f"check_identical: {line}")
        print(f"check_identical: {base['source']} vs {current['source']}: {len(current['files'])} files, "  # type: ignore[arg-type]
              f"{'all identical' if not lines else f'{len(lines)} differ'}")
        return 1 if lines else 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as stop:  # a one-line refusal or failed command (a str code): exit status 2
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            sys.exit(2)
        raise
