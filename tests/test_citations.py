"""Every source that code, configs, tables and docs cite is a file of the repository (issue 17).

A clone must be able to trace each number to its source: a cited ``docs/…`` page (or any other ``.md``)
must exist, a cited section ``§N`` must be a heading of that page, a GPU spec's source tag must be
defined in docs/gpu_specs.md, and nothing may point into the team's shared folder, which does not ship.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What ships and cites: the package (code, energy tables, GPU specs), configs, sweeps, scripts, tests, docs.
SCANNED = ("antsim", "arch_configs", "sweeps", "scripts", "tests", "docs", "README.md", "BENCHMARKS.md")
# Top-level folders a citation of a repository file starts with (other paths name files of other projects).
REPO_DIRS = ("docs", "antsim", "arch_configs", "sweeps", "scripts", "tests")
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".sh", ".toml", ".cfg", ".txt"}
SKIPPED_PARTS = {"__pycache__", "results", ".pytest_cache"}
THIS = Path(__file__).resolve()

# A path into the unshipped shared folder, or its design primer.
SHARED = re.compile(r"(?:\.\./|/work/|/path/to/)shared\b|\bshared/data/|\bDESIGN\.md\b|\bSTYLE\.md\b")
# A cited Markdown file, with an optional section right after it ("docs/sources.md §1.3", "… (§4.5)").
MD_CITE = re.compile(r"(?P<path>(?:[\w.-]+/)*[\w.-]+\.md)(?:\s*\(?\s*§\s*(?P<section>\d+(?:\.\d+)*[a-z]?)(?!\.?\w))?")
# A relative Markdown link: [text](target.md#anchor).
MD_LINK = re.compile(r"\]\((?P<target>[^)#\s]+\.md)(?:#[^)]*)?\)")
# A cited repository file: a path under a top-level folder with a file suffix ("antsim/spec/encoding.py").
REPO_PATH = re.compile(r"(?<![\w/.-])((?:docs|antsim|arch_configs|sweeps|scripts|tests)/[\w./-]*\w"
                       r"\.(?:py|yaml|yml|csv|md|sh|json|npz|toml))\b")
# A line about another project's repository: its paths are that repository's, not ours.
OTHER_REPO = re.compile(r"GitHub `[\w.-]+/[\w.-]+`|github\.com/")
# Pages that once lived in the shared folder: a bare mention of one must resolve to the docs/ rewrite.
FORMERLY_SHARED = ("energy_area_reference.md", "gpu_specs.md")
# A heading that carries a section number: "## 1.3 Outer-product …", "### 1e. Off-chip DRAM …".
NUMBERED_HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*[a-z]?)[.\s]", re.MULTILINE)
# GPU spec source tags: "[C3]", "[Hb, N]", "[N, C11]"; "[C]"/"[I]"/"[U]"/"[S]" alone are provenance marks.
TAG_GROUP = re.compile(r"\[((?:C\d+|V|Hb|HH|T|R|Q|N|S)(?:\s*,\s*(?:C\d+|V|Hb|HH|T|R|Q|N|S))*)\]")


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [p for p in candidates if p.is_file() and p.suffix in SUFFIXES
                  and not SKIPPED_PARTS.intersection(p.relative_to(ROOT).parts) and p.resolve() != THIS]
    return files


def cites_the_repository(cited: str) -> bool:
    """Whether a ``.md`` mention names a file of this repository (a docs page, a repo path), not an output
    name such as ``report.md`` or another project's file."""
    docs_pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    first, _, _ = cited.partition("/")
    return (first in REPO_DIRS and "/" in cited) or cited in docs_pages or Path(cited).name in FORMERLY_SHARED


def resolve_md(cited: str, citing: Path) -> Path | None:
    """The repository file a Markdown citation names: relative to the root, to the citing file, or in docs/."""
    for base in (ROOT, citing.parent, ROOT / "docs"):
        candidate = (base / cited).resolve()
        if candidate.is_file() and ROOT in candidate.parents:
            return candidate
    return None


@cache
def sections(doc: Path) -> frozenset[str]:
    return frozenset(NUMBERED_HEADING.findall(doc.read_text(encoding="utf-8")))


def citation_problems(text: str, citing: Path) -> list[str]:
    """Every citation in ``text`` that a clone cannot follow, as 'line N: why'."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        problems += [f"line {number}: cites the unshipped shared folder: {m.group(0)!r}" for m in SHARED.finditer(line)]
        for match in MD_CITE.finditer(line):
            cited, section = match.group("path"), match.group("section")
            if any(ch in cited for ch in "*<>{}") or not cites_the_repository(cited):
                continue
            doc = resolve_md(cited, citing)
            if doc is None:
                problems.append(f"line {number}: {cited} is not a file of the repository")
            elif section is not None and section not in sections(doc):
                problems.append(f"line {number}: {cited} has no section §{section}")
        if not OTHER_REPO.search(line):
            for match in REPO_PATH.finditer(line):
                cited = match.group(1)
                if not any(ch in cited for ch in "*<>{}") and "NAME" not in cited and not (
                        (ROOT / cited).exists() or (citing.parent / cited).exists()):
                    problems.append(f"line {number}: {cited} is not a file of the repository")
        for match in MD_LINK.finditer(line):
            target = match.group("target")
            if "://" not in target and not (citing.parent / target).resolve().is_file():
                problems.append(f"line {number}: link {target} is not a file of the repository")
    return list(dict.fromkeys(problems))  # one line per problem even when two rules see it


def undefined_table_sections(text: str) -> list[str]:
    """The "ref §N" citations of an energy/area table that are not sections of docs/energy_area_reference.md."""
    known = sections(ROOT / "docs" / "energy_area_reference.md")
    return sorted({s for s in re.findall(r"\bref §(\d+[a-z]?)", text) if s not in known})


def undefined_gpu_tags(text: str) -> list[str]:
    defined = (ROOT / "docs" / "gpu_specs.md").read_text(encoding="utf-8")
    tags = {tag.strip() for group in TAG_GROUP.findall(text) for tag in group.split(",")}
    return sorted(tag for tag in tags if f"**{tag}**" not in defined and f"**[{tag}]**" not in defined)


FILES = scanned_files()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_every_citation_resolves_inside_the_repository(path: Path) -> None:
    problems = citation_problems(path.read_text(encoding="utf-8", errors="replace"), path)
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)


GPU_SPECS = [*sorted((ROOT / "antsim" / "gpu" / "specs").glob("*.yaml")),
             *sorted((ROOT / "arch_configs" / "gpus").glob("*.yaml"))]


@pytest.mark.parametrize("path", GPU_SPECS, ids=[str(p.relative_to(ROOT)) for p in GPU_SPECS])
def test_gpu_spec_source_tags_are_defined_in_the_docs(path: Path) -> None:
    assert undefined_gpu_tags(path.read_text(encoding="utf-8")) == []


TABLES = sorted((ROOT / "antsim" / "energy" / "tables").glob("*.yaml"))


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_energy_table_ref_sections_exist(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "docs/energy_area_reference.md" in text  # the header names the page its "ref §N" means
    assert text.count("ref §") > 10 and undefined_table_sections(text) == []


def test_the_checker_catches_what_it_is_for(tmp_path: Path) -> None:
    citing = ROOT / "antsim" / "x.py"
    assert citation_problems("see ../shared/data/gpu_specs.md", citing)
    assert citation_problems("(/work/shared/data/energy_area_reference.md)", citing)
    assert citation_problems("as DESIGN.md §1.3 says", citing)
    assert citation_problems("docs/no_such_page.md", citing) == [
        "line 1: docs/no_such_page.md is not a file of the repository"]
    assert citation_problems("tests/data/nothing/README.md and report.md", citing) == [
        "line 1: tests/data/nothing/README.md is not a file of the repository"]
    assert citation_problems("as in antsim/sim/nothing.py", citing) == [
        "line 1: antsim/sim/nothing.py is not a file of the repository"]
    assert citation_problems("GitHub `owner/repo`, `scripts/their_tool.py`; antsim/spec/encoding.py", citing) == []
    assert citation_problems("docs/sources.md §9.9", citing) == ["line 1: docs/sources.md has no section §9.9"]
    good = "docs/sources.md §1.3, docs/energy_area_reference.md §2c, gpu_specs.md (§4.5)"
    assert citation_problems(good, citing) == []
    assert citation_problems("docs/sources.md §1.N: a section pattern, not a section", citing) == []
    assert citation_problems("[the guide](commands/simulate.md#workload)", ROOT / "docs" / "x.md") == []
    assert citation_problems("[gone](commands/nothing.md)", ROOT / "docs" / "x.md") == [
        "line 1: link commands/nothing.md is not a file of the repository"]
    assert undefined_gpu_tags("# [C3] and [Hb, N] and [C99]") == ["C99"]
    assert undefined_table_sections("# 0.8 pJ (ref §1a [I]); 3 (ref §7z)") == ["7z"]
