"""The reproduction report on disk: `write_report(reproductions, out)` writes `out/report.html`
(static, one file: figures embedded as base64 PNG, no script, no external resource, so it opens
offline) and `out/report.md` (figures beside it in `out/figures/`), from jinja2 templates.
`claims_text` is the claims table for a terminal, at most 80 columns wide.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment

from mpsched.experiments.report import Reproduction

__all__ = ["write_report", "claims_text", "VERDICT_COLORS"]

VERDICT_COLORS = {"holds": "#1a7f37", "magnitude off": "#b35900", "tie": "#6e7781", "fails": "#cf222e",
                  "no data": "#8c959f"}

_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1180px;
       color: #1f2328; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .85em; }
th, td { border: 1px solid #d0d7de; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { color: #fff; border-radius: .8em; padding: .05em .6em; white-space: nowrap; font-size: .9em; }
.figures { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; flex: 1 1 540px; max-width: 100%; } figure img { max-width: 100%; border: 1px solid #eaeef2; }
details summary { cursor: pointer; font-weight: 600; margin: 1em 0 .4em; }
figcaption { font-size: .8em; color: #57606a; }
.meta { color: #57606a; font-size: .85em; }
"""

_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mpsched: reproductions of the seed papers</title>
<style>{{ css|safe }}</style>
</head>
<body>
<h1>mpsched: reproductions of the seed papers{% if quick %} (--quick){% endif %}</h1>
<p class="meta">{{ stamp }} &middot; mpsched {{ version }} &middot; simulator engine &middot; total run time {{ "%.0f"|format(total) }} s ("runs": the simulations' own time when they ran; stored runs of the same code are reused).
Each claim is judged on every repetition (seeds &times; flows) with a 95 % bootstrap interval of the difference it is about:
<b>holds</b> (the interval lies where the paper says and, where the paper states a size, ours is within the tolerance of it),
<b>magnitude off</b> (right direction, size outside that tolerance), <b>tie</b> (the data cannot decide: the interval contains zero),
<b>fails</b> (wholly on the wrong side). One run per side gives a point: "deterministic: no interval".</p>
<table>
<tr><th>study</th><th>paper</th>{% for v in verdicts %}<th>{{ v }}</th>{% endfor %}<th>run time (runs)</th></tr>
{% for r in reps %}<tr><td><a href="#{{ r.name }}">{{ r.name }}</a></td><td>{{ r.published.study.papers|join("; ") }}</td>
{% for v in verdicts %}<td class="num">{{ r.counts()[v] }}</td>{% endfor %}<td class="num">{{ "%.1f"|format(r.seconds) }} s ({{ "%.1f"|format(r.run_seconds) }} s)</td></tr>
{% endfor %}</table>
{% for r in reps %}
<h2 id="{{ r.name }}">{{ r.name }}</h2>
<p class="meta">{{ r.published.study.papers|join("; ") }} &middot; {{ r.published.study.setup }} &middot;
runs in <code>{{ r.out }}</code> &middot; run time {{ "%.1f"|format(r.seconds) }} s, of which the {{ r.n_runs }} runs took {{ "%.1f"|format(r.run_seconds) }} s when they ran (stored runs are reused){% if r.quick %} (--quick){% endif %}</p>
{% if r.published.setup %}<h3>Setup</h3>
<table><tr><th>parameter</th><th>paper</th><th>where</th><th>ours</th><th>why</th><th>when it changes (sensitivity run)</th></tr>
{% for s in r.published.setup %}<tr><td>{{ s.parameter }}</td><td>{{ s.paper }}</td><td>{{ s.source }}</td><td>{{ s.ours }}</td><td>{{ s.why }}</td><td>{{ s.sensitivity or "" }}</td></tr>
{% endfor %}</table>{% endif %}
<h3>Claims</h3>
<table><tr><th>claim</th><th>source</th><th>variant</th><th>verdict</th><th>difference [95 % interval], deciding comparison</th></tr>
{% for c in r.claims %}<tr><td>{{ c.claim.text }}</td><td>{{ c.claim.source }}</td><td>{{ c.variant }}</td>
<td><span class="verdict" style="background: {{ colors[c.verdict] }}">{{ c.verdict }}</span></td><td>{{ c.detail }}</td></tr>
{% endfor %}</table>
{% if r.figures %}<h3>Figures</h3><div class="figures">
{% for f in r.figures %}<figure><img alt="{{ f.title }}" src="data:image/png;base64,{{ b64(f.png) }}">
<figcaption>{{ f.title }}: {{ f.caption }}</figcaption></figure>
{% endfor %}</div>{% endif %}
{% if r.figures_table.height %}<details><summary>Published figures and ours ({{ r.figures_table.height }} rows)</summary>
<table><tr>{% for c in r.figures_table.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in r.figures_table.iter_rows() %}<tr>{% for v in row %}<td{% if v is number %} class="num"{% endif %}>{{ fmt(v) }}</td>{% endfor %}</tr>
{% endfor %}</table></details>{% endif %}
{% endfor %}
</body>
</html>
"""

_MD = """# mpsched: reproductions of the seed papers{% if quick %} (--quick){% endif %}

{{ stamp }}; mpsched {{ version }}; total run time {{ "%.0f"|format(total) }} s. Verdicts: holds, magnitude off (right direction,
size outside the tolerance of the paper's), tie (the 95 % bootstrap interval contains zero), fails; one run per side:
"deterministic: no interval".

| study | {{ verdicts|join(" | ") }} | run time |
|---|{% for v in verdicts %}---:|{% endfor %}---:|
{% for r in reps %}| [{{ r.name }}](#{{ r.name }}) | {% for v in verdicts %}{{ r.counts()[v] }} | {% endfor %}{{ "%.1f"|format(r.seconds) }} s (runs {{ "%.1f"|format(r.run_seconds) }} s) |
{% endfor %}
{% for r in reps %}
## {{ r.name }}

{{ r.published.study.papers|join("; ") }}. {{ r.published.study.setup }}. Runs in `{{ r.out }}`; run time {{ "%.1f"|format(r.seconds) }} s, of which the {{ r.n_runs }} runs took {{ "%.1f"|format(r.run_seconds) }} s when they ran.
{% if r.published.setup %}
### Setup

| parameter | paper | where | ours | why | when it changes |
|---|---|---|---|---|---|
{% for s in r.published.setup %}| {{ md(s.parameter) }} | {{ md(s.paper) }} | {{ md(s.source) }} | {{ md(s.ours) }} | {{ md(s.why) }} | {{ md(s.sensitivity or "") }} |
{% endfor %}{% endif %}
### Claims

| claim | variant | verdict | difference [95 % interval] |
|---|---|---|---|
{% for c in r.claims %}| {{ md(c.claim.text) }} ({{ md(c.claim.source) }}) | {{ md(c.variant) }} | **{{ c.verdict }}** | {{ md(c.detail) }} |
{% endfor %}
{% for f in r.figures %}![{{ f.title }}](figures/{{ r.name }}_{{ loop.index }}.png)

*{{ md(f.title) }}: {{ md(f.caption) }}*

{% endfor %}{% endfor %}"""


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def _md(v: Any) -> str:
    return re.sub(r"([|])", r"\\\1", str(v)).replace("\n", " ")


def write_report(reps: list[Reproduction], out: str | Path, *, version: str = "") -> tuple[Path, Path]:
    """Write `out/report.html` and `out/report.md` (and `out/figures/*.png`); their paths."""
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for r in reps:
        for i, f in enumerate(r.figures, 1):
            (out / "figures" / f"{r.name}_{i}.png").write_bytes(f.png)
    env = Environment(autoescape=False, trim_blocks=False)
    ctx = dict(reps=reps, quick=any(r.quick for r in reps), version=version, total=sum(r.seconds for r in reps),
               verdicts=["holds", "magnitude off", "tie", "fails", "no data"], colors=VERDICT_COLORS,
               stamp=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               b64=lambda b: base64.b64encode(b).decode("ascii"), fmt=_fmt, md=_md)
    html_env = Environment(autoescape=True)
    html = out / "report.html"
    html.write_text(html_env.from_string(_HTML).render(css=_CSS, **ctx), encoding="utf-8")
    md = out / "report.md"
    md.write_text(env.from_string(_MD).render(**ctx), encoding="utf-8")
    return html, md


def _short(iv) -> str:
    """An interval in at most ~20 characters (three significant digits)."""
    if iv is None or math.isnan(iv.estimate):
        return "–"
    if iv.identical:
        return "0 (identical)"
    def f(x: float) -> str:
        if not iv.relative:
            return f"{x:+.3g}"
        return f"{100 * x:+.1f}" if abs(x) < 1 else f"{100 * x:+.0f}"

    unit = " %" if iv.relative else ""
    return f"{f(iv.estimate)}{unit}" + ("" if iv.deterministic else f" [{f(iv.low)}, {f(iv.high)}]")


def claims_text(reps: list[Reproduction], width: int = 80) -> str:
    """Every claim's verdict, one line each under its study and variant, at most `width` columns:
    the claim, the verdict, our difference and its 95 % interval."""
    verdict_w, diff_w = 13, 23
    claim_w = width - 2 - verdict_w - diff_w - 2
    cut = lambda s, n: s if len(s) <= n else s[: n - 1] + "…"  # noqa: E731
    lines = [cut(f"  {'claim':{claim_w}} {'verdict':{verdict_w}} difference [95 %]", width)]
    for r in reps:
        lines.append(cut(f"{r.name} ({r.seconds:.1f} s; runs {r.run_seconds:.1f} s)", width))
        variants = list(dict.fromkeys(c.variant for c in r.claims))
        for v in variants:
            if len(variants) > 1 or v:
                lines.append(cut(f" {v or '(no variant)'}:", width))
            for c in (c for c in r.claims if c.variant == v):
                d = c.deciding
                lines.append(f"  {cut(c.claim['text'], claim_w):{claim_w}} {c.verdict:{verdict_w}} "
                             f"{cut(_short(d.interval if d else None), diff_w)}".rstrip())
    return "\n".join(lines)
