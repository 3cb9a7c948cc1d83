"""Compare results and write reports (``antsim compare``, ``antsim report``).

- ``compare_results(results, sources, baseline) -> Comparison``: speedups and energy reductions over a
  baseline per (layer, phase), layer, phase and network, with geomeans (schema ``antsim.compare/1``);
- ``load_results(paths)``: ``antsim.result/1`` JSON and measurement CSV files;
- ``build_report(comparison, out, sweep_dir=None)``: the report folder (HTML, Markdown, figures, data).

Figures follow docs/development.md habit 10: ``antsim.report.data`` / ``antsim.report.sweep`` compute plot-ready
infos, ``antsim.report.figures`` draws them (matplotlib imported lazily).
"""

from __future__ import annotations

from antsim.report.build import build_report
from antsim.report.compare import SCHEMA, Comparison, compare_results
from antsim.report.inputs import load_results

__all__ = ["SCHEMA", "Comparison", "build_report", "compare_results", "load_results"]
