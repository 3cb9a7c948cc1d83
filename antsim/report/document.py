"""The report's two documents: a self-contained ``index.html`` and a ``report.md``.

Both open with the headline (the subject design's speedup and energy reduction over SCNN and over each
GPU), then the network summary, the figures with captions, a per-phase table and the inputs a reader
needs to rerun the report.
"""

from __future__ import annotations

import base64
import json
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from antsim.report import tables as tb
from antsim.report.compare import fmt_energy, fmt_ratio, fmt_time
from antsim.version import __version__

if TYPE_CHECKING:
    from antsim.report.build import ReportContent

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1120px;padding:12px 20px;color:#222;line-height:1.4}
h1{font-size:1.45em;margin:.3em 0}h2{font-size:1.15em;margin:1.2em 0 .3em;border-bottom:1px solid #ddd}
.sub{color:#555;font-size:.9em;margin:.2em 0 .6em}
.headline{border:2px solid #0072B2;border-radius:8px;background:#f3f8fc;padding:8px 14px;margin:8px 0 14px}
.headline h2{border:none;margin:.1em 0 .3em;font-size:1.1em}
.headline table td,.headline table th{padding:2px 14px 2px 0;text-align:left}
.headline .num{font-size:1.45em;font-weight:700;color:#0072B2}
table.t{border-collapse:collapse;font-size:.85em;margin:.4em 0}
table.t th,table.t td{border:1px solid #ccc;padding:3px 7px;text-align:right}
table.t td{white-space:nowrap}
table.wrap td{white-space:normal;text-align:left}
table.t th:first-child,table.t td:first-child{text-align:left}
figure{margin:10px 0 22px}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#333;margin-top:4px}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:.8em;white-space:pre-wrap;overflow-wrap:anywhere}
.note{font-size:.85em;color:#555}
"""


def _pretty_name(design: str) -> str:
    return {"ant": "ANT", "scnn": "SCNN", "ant_oracle": "ANT-oracle", "dense": "dense"}.get(design, design)


def _gpu_name(design: str) -> str:
    """``v100`` → ``V100``, ``h100-fp16`` → ``H100 fp16``: builtin GPU names are lower-case file stems
    (readers know them as V100), suffixed with the precision when not fp32 (antsim.gpu.gpu_design_name)."""
    gpu, _, rest = design.partition("-")
    name = gpu.upper() if gpu.isalnum() else gpu
    return f"{name} {rest.replace('-', ' ')}" if rest else name


def headline_lines(content: ReportContent) -> list[tuple[str, str, str]]:
    """(versus, speedup, energy reduction) per reference design of the headline."""
    h = content.headline
    lines = []
    for i, ref in enumerate(h.references):
        name = _gpu_name(ref) if h.backends[i] == "gpu" else _pretty_name(ref)
        kind = " (GPU)" if h.backends[i] == "gpu" else ""
        lines.append((f"{_pretty_name(h.subject)} over {name}{kind}", _ratio_text(h.speedup[i]),
                      _ratio_text(h.energy_reduction[i])))
    return lines


def paper_note(content: ReportContent) -> str:
    """Published context for ANT over SCNN (empty when the headline is about something else)."""
    h = content.headline
    if h.subject != "ant" or "scnn" not in h.references:
        return ""
    return (" For context, the ANT paper (Lew et al., ISCA 2022) reports 3.71× geomean speedup and 4.40× lower"
            " energy over an SCNN-like baseline across five networks in 90%-sparse training; the sparsity regime"
            " and architecture parameters above decide how close this run comes.")


def busy_note(content: ReportContent) -> str:
    """Multiplier utilisation and the largest stall shares of the headline's subject and the baseline."""
    parts = []
    for design in dict.fromkeys([content.headline.subject, content.comparison.baseline]):
        result = next((r for r in content.comparison.results if r.design == design), None)
        used = tb.utilisation(result) if result is not None else None
        if used is None:
            continue
        top = sorted(used[1].items(), key=lambda kv: -kv[1])[:3]
        parts.append(f"{_pretty_name(design)}'s multipliers are busy {100 * used[0]:.1f}% of the cycles"
                     f" (cycle shares: {', '.join(f'{k} {100 * v:.0f}%' for k, v in top)})")
    return ("; ".join(parts) + ".") if parts else ""


def _ratio_text(value: float) -> str:
    return fmt_ratio(None if not np.isfinite(value) else float(value))


def _workload_line(content: ReportContent) -> str:
    w = content.comparison.workload
    dens = w.get("densities")
    dens_text = (", ".join(f"{k} {v}" for k, v in dens.items()) if isinstance(dens, dict) else str(dens)) \
        if dens is not None else "n/a"
    phases = ", ".join(content.comparison.phases)
    return (f"network {w.get('network', '?')} · batch {w.get('batch', '?')} · phases {phases}"
            f" · densities {dens_text} · sparsity {w.get('sparsity', 'n/a')} · seed {w.get('seed', 'n/a')}"
            f" · fidelity {w.get('fidelity', 'n/a')} · antsim {__version__}")


def _summary_rows(content: ReportContent) -> list[list[str]]:
    c = content.comparison
    rows = [["design", "backend", "time / step", "energy / step", "area", f"speedup over {c.baseline}",
             f"energy reduction over {c.baseline}", "geomean speedup (layers)", "geomean energy red. (layers)"]]
    for s in c.designs:
        rows.append([s.design, s.backend, fmt_time(s.time_s), fmt_energy(s.energy_j),
                     "n/a" if s.area_mm2 is None else f"{s.area_mm2:.3g} mm²", fmt_ratio(s.speedup),
                     fmt_ratio(s.energy_reduction), fmt_ratio(s.geomean_speedup_layers),
                     fmt_ratio(s.geomean_energy_reduction_layers)])
    return rows


def _phase_rows(content: ReportContent) -> list[list[str]]:
    c = content.comparison
    rows = [["design", *[f"{p} speedup" for p in c.phases], *[f"{p} energy red." for p in c.phases]]]
    for s in c.designs:
        by_phase = {r.phase: r for r in c.rows_for("phase", s.design)}
        rows.append([s.design, *[fmt_ratio(by_phase[p].speedup) for p in c.phases],
                     *[fmt_ratio(by_phase[p].energy_reduction) for p in c.phases]])
    return rows


def _input_rows(content: ReportContent) -> list[list[str]]:
    c = content.comparison
    rows = [["design", "backend", "from", "copy in this report", "design parameters"]]
    for result, source in zip(c.results, c.sources, strict=True):
        rows.append([result.design, result.backend, source, content.result_files[result.design],
                     spec_summary(result.spec, result.meta)])
    return rows


def spec_summary(spec: Any, meta: Any) -> str:
    """One line of the most telling parameters of an arch or GPU spec echo (defensive: any dict)."""
    if not isinstance(spec, dict) or not spec:
        return "not echoed"
    if "sms" in spec or spec.get("kind") == "gpu":
        return _gpu_summary(spec, meta)
    parts = []
    pe = spec.get("pe_array") or {}
    if pe:
        parts.append(f"{pe.get('rows')}×{pe.get('cols')} PEs of {pe.get('F')}×{pe.get('I')} multipliers")
    tech = spec.get("technology") or {}
    if tech:
        parts.append(f"{tech.get('node_nm')} nm, {tech.get('clock_ghz')} GHz")
    anticipation = spec.get("anticipation") or {}
    if anticipation:
        parts.append(f"anticipation {anticipation.get('policy')}")
    dram = spec.get("dram") or {}
    if dram.get("bandwidth_gbps") is not None:
        parts.append(f"DRAM {dram.get('bandwidth_gbps')} GB/s")
    return ", ".join(parts) or ", ".join(str(k) for k in list(spec)[:6])


def _gpu_summary(spec: dict[str, Any], meta: Any) -> str:
    dram, power = spec.get("dram") or {}, spec.get("power") or {}
    parts = [str(spec.get("description") or spec.get("name", "GPU")), f"{spec.get('sms')} SMs",
             f"{spec.get('clock_mhz')} MHz", f"DRAM {dram.get('bandwidth_gbs')} GB/s", f"TDP {power.get('tdp_w')} W"]
    if isinstance(meta, dict) and meta.get("precision"):
        parts.append(f"precision {meta['precision']}")
    return ", ".join(parts)


def rerun_command(content: ReportContent) -> str:
    c = content.comparison
    return f"antsim report results/*.json --baseline {c.baseline} --out REPORT_DIR"


def _html_table(rows: list[list[str]], wrap: bool = False) -> str:
    """A table; numbers stay on one line unless ``wrap`` (text tables)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>" for row in rows[1:])
    classes = "t wrap" if wrap else "t"
    return f'<table class="{classes}"><tr>{head}</tr>{body}</table>'


def _html_headline(content: ReportContent) -> str:
    lines = headline_lines(content)
    network = content.comparison.workload.get("network", "the network")
    subject = _pretty_name(content.headline.subject)
    if not lines:
        return f'<div class="headline" id="headline"><h2>Headline</h2><p>Only {escape(subject)} was given.</p></div>'
    rows = "".join(f'<tr><td>{escape(v)}</td><td class="num">{escape(s)}</td><td class="num">{escape(e)}</td></tr>'
                   for v, s, e in lines)
    return (f'<div class="headline" id="headline"><h2>Headline: {escape(subject)} on {escape(str(network))},'
            f' one training step</h2><table><tr><th></th><th>speedup</th><th>energy reduction</th></tr>{rows}'
            f'</table><div class="note">Ratios of whole-step time and energy (reference ÷ {escape(subject)});'
            f' &gt; 1 means faster / less energy.{escape(paper_note(content))}</div>'
            f'<div class="note">{escape(busy_note(content))}</div></div>')


def render_html(content: ReportContent) -> str:
    """A self-contained page: inline CSS, figures as base64 PNG data URIs, no scripts or external links."""
    c = content.comparison
    title = f"antsim report — {' vs '.join(s.design for s in c.designs)} on {c.workload.get('network', '?')}"
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
             '<meta name="viewport" content="width=device-width, initial-scale=1">'
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>", f'<p class="sub">{escape(_workload_line(content))}</p>',
             _html_headline(content), "<h2>Whole network</h2>", _html_table(_summary_rows(content)),
             f'<p class="note">Baseline: {escape(c.baseline)}. Speedup / energy reduction = baseline time / energy'
             " ÷ the design's; geomean over the per-layer ratios.</p>",
             *_html_sections(content, _TOP_TABLES)]
    for fig in content.figures:
        uri = "data:image/png;base64," + base64.b64encode(fig.png).decode("ascii")
        parts.append(f'<figure id="{fig.name}"><h2>{escape(fig.title)}</h2><img src="{uri}" alt="{escape(fig.title)}">'
                     f'<figcaption>{escape(fig.caption)} Files: <a href="figures/{fig.name}.svg">SVG</a>,'
                     f' <a href="data/{fig.name}.csv">data (CSV)</a>.</figcaption></figure>')
    parts += ["<h2>Per phase</h2>", _html_table(_phase_rows(content)), *_html_sections(content, _END_TABLES),
              _html_inputs(content), "</body></html>"]
    return "\n".join(parts) + "\n"


# (title, rows, note): after the whole-network table, and after the per-phase table
_TOP_TABLES = (("Throughput, energy and utilisation", tb.efficiency_rows,
                "Images/s = batch ÷ step time; per mm² divides by the design's area (accelerators only);"
                " utilisation = multiplier-busy cycles ÷ cycles, cycle shares over all PE cycles."),
               ("Assumptions", tb.assumption_rows, ""))
_END_TABLES = (("Area by component (mm²)", tb.area_rows, "Rebuilt from each result's echoed arch spec."),
               ("Per layer", tb.layer_rows, "Time of fprop + dgrad + wgrad; ratios over the baseline."),
               ("Products per layer kind", tb.kind_rows,
                "Where RCPs arise (conv or GEMM layers, per phase) and how many the anticipation unit removed."))


def _tables(content: ReportContent, which: tuple) -> list[tuple[str, list[list[Any]], str]]:
    return [(title, rows, note) for title, make, note in which if (rows := make(content.comparison))]


def _html_sections(content: ReportContent, which: tuple) -> list[str]:
    return [f"<h2>{escape(title)}</h2>{_html_table([[str(v) for v in r] for r in rows], wrap=title == 'Assumptions')}"
            + (f'<p class="note">{escape(note)}</p>' if note else "") for title, rows, note in _tables(content, which)]


def _md_sections(content: ReportContent, which: tuple) -> list[str]:
    out: list[str] = []
    for title, rows, note in _tables(content, which):
        out += [f"## {title}", "", _md_table([[str(v) for v in r] for r in rows]), ""] + ([note, ""] if note else [])
    return out


def _html_inputs(content: ReportContent) -> str:
    parts = ["<h2>Inputs (to rerun this report)</h2>", _html_table(_input_rows(content), wrap=True),
             f'<p class="sub">{escape(_workload_line(content))}</p>']
    if content.command:
        parts.append(f"<p>Produced by:</p><pre>{escape(content.command)}</pre>")
    parts.append(f"<p>Rerun from this folder:</p><pre>{escape(rerun_command(content))}</pre>")
    for result in content.comparison.results:
        echo = json.dumps({"spec": result.spec, "meta": result.meta}, indent=1, sort_keys=True, default=str)
        parts.append(f"<details><summary>{escape(result.design)}: spec and meta echoed in the result</summary>"
                     f"<pre>{escape(echo)}</pre></details>")
    return "\n".join(parts)


def _md_table(rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in cells) + " |"

    return "\n".join([line(rows[0]), "|" + "---|" * len(rows[0])] + [line(r) for r in rows[1:]])


def render_markdown(content: ReportContent) -> str:
    """The report as Markdown, with relative links to figures/*.png|svg and data/*.csv."""
    c = content.comparison
    subject = _pretty_name(content.headline.subject)
    out = [f"# antsim report — {' vs '.join(s.design for s in c.designs)} on {c.workload.get('network', '?')}",
           "", _workload_line(content), "", f"## Headline: {subject}, one training step", ""]
    lines = headline_lines(content)
    out += [_md_table([["", "speedup", "energy reduction"], *[list(x) for x in lines]]) if lines
            else f"Only {subject} was given.", "", f"Ratios of whole-step time and energy (reference ÷ {subject});"
            f" > 1 means faster / less energy.{paper_note(content)}", "", busy_note(content), "",
            "## Whole network", "", _md_table(_summary_rows(content)), "", *_md_sections(content, _TOP_TABLES)]
    for fig in content.figures:
        out += [f"## {fig.title}", "", f"![{fig.title}](figures/{fig.name}.png)", "",
                f"{fig.caption} ([SVG](figures/{fig.name}.svg), [data](data/{fig.name}.csv))", ""]
    out += ["## Per phase", "", _md_table(_phase_rows(content)), "", *_md_sections(content, _END_TABLES),
            "## Inputs (to rerun this report)", "",
            _md_table(_input_rows(content)), "", "Comparison data: [data/comparison.json](data/comparison.json),"
            " [data/comparison.csv](data/comparison.csv), records: [data/records.csv](data/records.csv).", ""]
    if content.command:
        out += ["Produced by:", "", "```", content.command, "```", ""]
    out += ["Rerun from this folder:", "", "```", rerun_command(content), "```", ""]
    return "\n".join(out)
