"""Bar charts for reports: matplotlib, rendered to inline SVG (no external assets).

Text stays text in the SVG (``svg.fonttype = "none"``), so charts are crisp and searchable.
Charts need matplotlib (``pip install 'toollab[eval]'``); :func:`available` says whether it is
there and reports then show their tables only.
"""

from __future__ import annotations

import importlib.util
import io
import re
from collections.abc import Sequence

#: colours of the run series (colour-blind safe, Okabe-Ito)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MAX_GROUPS = 24


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _svg(fig: object, salt: str) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    text = buf.getvalue()
    start = text.find("<svg")
    svg = text[start:] if start >= 0 else text
    # ids must be unique within the page: prefix every id (and reference) with the chart's salt
    svg = re.sub(r'id="([^"]+)"', lambda m: f'id="{salt}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{salt}-{m.group(1)})", svg)
    svg = re.sub(r'xlink:href="#([^"]+)"', lambda m: f'xlink:href="#{salt}-{m.group(1)}"', svg)
    return svg


def grouped_bars(
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    xlabel: str,
    salt: str,
    fraction: bool = True,
) -> str | None:
    """Horizontal bars: one row per group, one bar per series (run or model).  ``fraction``:
    the values are fractions, drawn and labelled as percentages (one decimal, as every table
    writes them); else counts.  ``None`` without data."""
    if not available() or not groups or not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    groups = list(groups)[:MAX_GROUPS]
    n_series = len(series)
    height = max(1.6, len(groups) * (0.26 + 0.16 * n_series) + 0.9)
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": salt, "font.size": 9, "font.family": "sans-serif"}
    ):
        fig, ax = plt.subplots(figsize=(7.2, height))
        bar_h = 0.8 / n_series
        for s, (label, values) in enumerate(series):
            ys = [g - 0.4 + bar_h * (s + 0.5) for g in range(len(groups))]
            scale = 100.0 if fraction else 1.0
            vals = [
                scale * v if isinstance(v, int | float) else 0.0
                for v in list(values)[: len(groups)]
            ]
            bars = ax.barh(
                ys, vals, height=bar_h * 0.92, color=PALETTE[s % len(PALETTE)], label=label
            )
            for bar, v in zip(bars, list(values)[: len(groups)], strict=False):
                if isinstance(v, int | float):
                    text = f"{100 * v:.1f}" if fraction else f"{int(v)}"
                    ax.text(
                        bar.get_width(),
                        bar.get_y() + bar.get_height() / 2,
                        " " + text,
                        va="center",
                        fontsize=7.5,
                        color="#333333",
                    )
        ax.set_yticks(range(len(groups)))
        ax.set_yticklabels(groups)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        if fraction:
            ax.set_xlim(0, 112)
        else:
            top = max(
                (v for _, vals in series for v in vals if isinstance(v, int | float)), default=1
            )
            ax.set_xlim(0, max(1.0, float(top)) * 1.15)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        if n_series > 1:
            ax.legend(
                loc="lower left",
                bbox_to_anchor=(0.0, 1.0),
                ncol=min(n_series, 4),
                fontsize=8,
                frameon=False,
            )
        fig.tight_layout()
        return _svg(fig, salt)
