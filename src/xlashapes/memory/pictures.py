"""Pictures of a memory report: the timeline of live bytes over the schedule as SVG, and one self-contained
HTML page (no network) with the timeline, a sortable buffer table and hover details.

The timeline stacks arguments and outputs (always allocated) at the bottom, then the largest temporaries live
at the peak, each its own labelled band over its lifetime, then all other temporaries; a dashed line marks the
temp peak.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape

from .report import BufferInfo, MemoryReport

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
BASE_FILL = "#c7c7c7"
OTHER_FILL = "#e8e8e8"
MAX_POINTS = 1200


@dataclass(frozen=True)
class Band:
    """One stacked band of the timeline: a label, its colour and its (lower, upper) bytes at each sample."""

    label: str
    fill: str
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    info: BufferInfo | None


@dataclass(frozen=True)
class Timeline:
    """The timeline as data: sampled schedule times and the stacked bands at each."""

    times: tuple[int, ...]
    bands: tuple[Band, ...]
    peak_time: int
    peak_bytes: int


def _samples(report: MemoryReport) -> list[int]:
    length = len(report.temp_timeline)
    if length <= MAX_POINTS:
        return list(range(length))
    step = -(-length // MAX_POINTS)
    times = []
    for first in range(0, length, step):
        window = range(first, min(first + step, length))
        times.append(max(window, key=lambda t: report.temp_timeline[t]))
    if report.peak_time not in times:
        times.append(report.peak_time)
        times.sort()
    return times


def timeline(report: MemoryReport, top: int = 8) -> Timeline:
    """The stacked bands: arguments and outputs, the ``top`` largest temps live at the peak, other temps.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> from xlashapes.memory import memory_report
    >>> text = "HloModule m, is_scheduled=true\\nENTRY e {\\n  p = f32[8]{0} parameter(0)\\n"
    >>> text += "  a = f32[16]{0} concatenate(p, p), dimensions={0}\\n"
    >>> text += "  ROOT b = f32[8]{0} slice(a), slice={[0:8]}\\n}\\n"
    >>> [(band.label, band.upper) for band in timeline(memory_report(parse_hlo_module(text))).bands]
    [('arguments + outputs', (64, 64, 64, 64)), ('a', (64, 128, 128, 64)), ('other temporaries', (64, 128, 128, 64))]
    """
    times = _samples(report)
    base = report.arguments_bytes + report.outputs_bytes - report.alias_bytes
    temps = [b for b in report.live_at_peak if b.kind == "temp"][: max(top, 0)]
    lower = [base] * len(times)
    bands = [Band("arguments + outputs", BASE_FILL, tuple([0] * len(times)), tuple(lower), None)]
    shown = [0] * len(times)
    for k, info in enumerate(temps):
        sizes = [info.physical_bytes if info.start <= t <= info.end else 0 for t in times]
        upper = [lo + size for lo, size in zip(lower, sizes)]
        bands.append(Band(info.instruction, PALETTE[k % len(PALETTE)], tuple(lower), tuple(upper), info))
        shown = [s + size for s, size in zip(shown, sizes)]
        lower = upper
    rest = [lo + max(report.temp_timeline[t] - s, 0) for lo, t, s in zip(lower, times, shown)]
    bands.append(Band("other temporaries", OTHER_FILL, tuple(lower), tuple(rest), None))
    return Timeline(tuple(times), tuple(bands), report.peak_time, base + report.temp_timeline[report.peak_time]
                    if report.temp_timeline else base)


def _mib(size: int) -> str:
    return f"{size / 2**20:,.2f} MiB"


def timeline_svg(report: MemoryReport, *, top: int = 8, width: int = 960, height: int = 380) -> str:
    """The memory timeline as an SVG document (bands carry ``<title>`` hover text).

    >>> from xlashapes.hlo import parse_hlo_module
    >>> from xlashapes.memory import memory_report
    >>> text = "HloModule m, is_scheduled=true\\nENTRY e {\\n  ROOT p = f32[8]{0} parameter(0)\\n}\\n"
    >>> timeline_svg(memory_report(parse_hlo_module(text))).startswith("<svg")
    True
    """
    data = timeline(report, top)
    left, right, top_margin, bottom = 80, 190, 30, 40
    plot_w, plot_h = width - left - right, height - top_margin - bottom
    last = max(data.times[-1] if data.times else 1, 1)
    ceiling = max([max(b.upper) for b in data.bands if b.upper] + [1]) * 1.12  # headroom for the peak label

    def x(t: int) -> float:
        return left + plot_w * t / last

    def y(v: int) -> float:
        return top_margin + plot_h * (1 - v / ceiling)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="18" font-size="13" font-weight="bold">{escape(report.module)}: peak '
             f'{_mib(report.peak_bytes)} (arguments + outputs + temp - alias)</text>']
    for k, band in enumerate(data.bands):
        if not any(u > lo for u, lo in zip(band.upper, band.lower)):
            continue
        upper = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(data.times, band.upper))
        lower = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in reversed(list(zip(data.times, band.lower))))
        hover = band.label if band.info is None else (
            f"{band.info.instruction} {band.info.shape} {_mib(band.info.physical_bytes)}\n"
            f"{band.info.op_name}\n{band.info.source}")
        parts.append(f'<polygon class="band" data-band="{k}" points="{upper} {lower}" fill="{band.fill}" '
                     f'stroke="none"><title>{escape(hover)}</title></polygon>')
        ly = top_margin + 14 + 16 * k
        parts.append(f'<rect x="{width - right + 12}" y="{ly - 9}" width="10" height="10" fill="{band.fill}"/>')
        label = band.label if len(band.label) <= 26 else band.label[:25] + "…"
        parts.append(f'<text x="{width - right + 26}" y="{ly}">{escape(label)}</text>')
    px = x(data.peak_time)
    parts.append(f'<line id="peak-marker" x1="{px:.1f}" y1="{top_margin}" x2="{px:.1f}" y2="{top_margin + plot_h}" '
                 f'stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3"/>')
    anchor, shift = ("end", -4) if px > left + plot_w / 2 else ("start", 4)
    parts.append(f'<text x="{px + shift:.1f}" y="{top_margin + 12}" text-anchor="{anchor}" fill="#d62728">most live '
                 f'{_mib(data.peak_bytes)} at {escape(report.peak_instruction)}</text>')
    parts.append(f'<line x1="{left}" y1="{top_margin + plot_h}" x2="{left + plot_w}" y2="{top_margin + plot_h}" '
                 'stroke="#333"/>')
    parts.append(f'<line x1="{left}" y1="{top_margin}" x2="{left}" y2="{top_margin + plot_h}" stroke="#333"/>')
    for i in range(5):
        value = int(ceiling * i / 4)
        parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{_mib(value)}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">schedule position '
                 f'(0 to {last})</text>')
    parts.append("</svg>")
    return "\n".join(parts)


_SCRIPT = """
const rows = JSON.parse(document.getElementById('buffer-data').textContent);
const body = document.querySelector('#buffers tbody');
const tip = document.getElementById('tip');
const columns = ['physical_bytes', 'logical_bytes', 'kind', 'instruction', 'shape', 'op_name', 'source',
  'start', 'end'];
let sortKey = 'physical_bytes', descending = true;
function fmt(key, v) { return key.endsWith('bytes') ? v.toLocaleString('en-US') : String(v); }
function render() {
  rows.sort((a, b) => {
    const x = a[sortKey], y = b[sortKey];
    const c = (typeof x === 'number') ? x - y : (String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0);
    return descending ? -c : c;
  });
  body.replaceChildren(...rows.map(r => {
    const tr = document.createElement('tr');
    if (r.live_at_peak) tr.className = 'peak';
    for (const key of columns) {
      const td = document.createElement('td');
      td.textContent = fmt(key, r[key]);
      if (key.endsWith('bytes') || key === 'start' || key === 'end') td.className = 'num';
      tr.appendChild(td);
    }
    tr.addEventListener('mousemove', e => show(e, r));
    tr.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
    return tr;
  }));
}
function show(e, r) {
  tip.textContent = r.instruction + ' = ' + r.opcode + '  ' + r.shape + '\\n' + (r.op_name || '(no op_name)') +
    '\\n' + (r.source || '(no source line)') + '\\nlive ' + r.start + '-' + r.end + ', ' + r.allocation;
  tip.style.left = (e.pageX + 14) + 'px';
  tip.style.top = (e.pageY + 10) + 'px';
  tip.style.display = 'block';
}
document.querySelectorAll('#buffers th').forEach((th, i) => th.addEventListener('click', () => {
  const key = columns[i];
  descending = (key === sortKey) ? !descending : true;
  sortKey = key;
  render();
}));
render();
"""


def _row(info: BufferInfo, live: bool) -> dict[str, object]:
    return {"instruction": info.instruction, "opcode": info.opcode, "shape": str(info.shape), "kind": info.kind,
            "physical_bytes": info.physical_bytes, "logical_bytes": info.logical_bytes, "op_name": info.op_name,
            "source": info.source, "start": info.start, "end": info.end, "allocation": info.allocation,
            "live_at_peak": live}


def report_html(report: MemoryReport, *, top: int = 8, max_rows: int = 5000) -> str:
    """One self-contained HTML page: the summary, the timeline, a sortable buffer table and hover details.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> from xlashapes.memory import memory_report
    >>> text = "HloModule m, is_scheduled=true\\nENTRY e {\\n  ROOT p = f32[8]{0} parameter(0)\\n}\\n"
    >>> page = report_html(memory_report(parse_hlo_module(text)))
    >>> page.startswith("<!DOCTYPE html>"), 'id="peak-marker"' in page, "<script src" in page
    (True, True, False)
    """
    live = {(b.computation, b.instruction) for b in report.live_at_peak}
    ranked = sorted(report.buffers, key=lambda b: -b.physical_bytes)[:max_rows]
    rows = [_row(b, (b.computation, b.instruction) in live) for b in ranked]
    data = json.dumps(rows).replace("</", "<\\/")
    heads = "".join(f"<th>{escape(h)}</th>" for h in (
        "bytes", "unpadded", "kind", "instruction", "shape", "op_name", "source", "from", "to"))
    label = "upper bound (module not scheduled)" if report.is_upper_bound else "peak"
    summary = (f"{label} <b>{_mib(report.peak_bytes)}</b> = arguments {_mib(report.arguments_bytes)} + outputs "
               f"{_mib(report.outputs_bytes)} + temp {_mib(report.temp_bytes)} - alias {_mib(report.alias_bytes)}"
               f" ({escape(report.backend)} buffer assignment)")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>memory of {escape(report.module)}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
table {{ border-collapse: collapse; font-size: 12px; }}
th {{ cursor: pointer; background: #eee; position: sticky; top: 0; padding: 3px 6px; text-align: left; }}
td {{ padding: 2px 6px; border-bottom: 1px solid #eee; white-space: nowrap; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.peak td:first-child {{ border-left: 3px solid #d62728; }}
tr:hover {{ background: #fff4d6; }}
#tip {{ position: absolute; display: none; background: #333; color: #fff; padding: 6px 8px; font-size: 12px;
  white-space: pre; border-radius: 3px; pointer-events: none; }}
</style></head><body>
<h1>{escape(report.module)}</h1>
<p id="summary">{summary}</p>
<div id="timeline">{timeline_svg(report, top=top)}</div>
<p>{len(rows)} buffers{" (largest)" if len(report.buffers) > max_rows else ""}; rows with a red edge are live at the
peak. Click a header to sort; hover a row for the instruction and its source line.</p>
<table id="buffers"><thead><tr>{heads}</tr></thead><tbody></tbody></table>
<div id="tip"></div>
<script type="application/json" id="buffer-data">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
