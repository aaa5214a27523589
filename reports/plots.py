"""Pictures where a picture says more (matplotlib, Agg backend): each function returns PNG bytes, or None
when the records hold nothing to draw (or matplotlib is not installed)."""

from __future__ import annotations

import io
from typing import Any

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import cells, columns

PROMPT_SCENARIO = "huge_tool_output"


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the lock; reports still build without pictures
        return None
    return plt


def _png(fig: Any, plt: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _grouped_barh(title: str, xlabel: str, data: dict[str, dict[str, float]], scenarios: list[str],
                  cols: list[str], log: bool = False) -> bytes | None:
    plt = _plt()
    if plt is None or not scenarios or not cols:
        return None
    n = len(cols)
    height = 0.8 / n
    fig, ax = plt.subplots(figsize=(10, min(20.0, max(3.0, 0.14 * len(scenarios) * n + 0.2 * len(scenarios) + 1.5))))
    cmap = plt.get_cmap("tab10")
    for i, col in enumerate(cols):
        ys = [j + (i - (n - 1) / 2) * height for j in range(len(scenarios))]
        vals = [data.get(col, {}).get(s, float("nan")) for s in scenarios]
        ax.barh(ys, vals, height=height, label=col, color=cmap(i % 10))
    ax.set_yticks(range(len(scenarios)), scenarios, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if log:
        ax.set_xscale("log")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig, plt)


def requests_plot(records: list[RunRecord]) -> bytes | None:
    """Model requests the server observed, per scenario and framework variant (majority run per cell): an
    annotated heat map, readable with any number of framework variants."""
    plt = _plt()
    data: dict[tuple[str, str], float] = {}
    for c in cells(records):
        v = c.rep.counters.model_requests_observed
        if v is not None:
            data[(c.scenario, c.column)] = v
    if plt is None or not data:
        return None
    scenarios = sorted({s for s, _ in data})
    cols = [c for c in columns(records) if any(k[1] == c for k in data)]
    grid = [[data.get((s, c), float("nan")) for c in cols] for s in scenarios]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(cols) + 3.5), 0.3 * len(scenarios) + 1.8))
    im = ax.imshow(grid, aspect="auto", cmap="YlOrRd")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(scenarios)), scenarios, fontsize=8)
    top = max(data.values()) or 1
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if v == v:  # not NaN
                ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=8,
                        color="white" if v > 0.6 * top else "black")
    ax.set_title("Model requests observed by the server")
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    return _png(fig, plt)


def time_plot(records: list[RunRecord]) -> bytes | None:
    """Wall time per run (elapsed_s), per scenario and framework variant, log scale."""
    data: dict[str, dict[str, float]] = {}
    for c in cells(records):
        v = c.rep.counters.elapsed_s
        if v is not None and v > 0:
            data.setdefault(c.column, {})[c.scenario] = v
    scenarios = sorted({s for d in data.values() for s in d})
    return _grouped_barh("Time per run", "elapsed seconds (log scale)", data, scenarios,
                         [c for c in columns(records) if c in data], log=True)


def prompt_plot(records: list[RunRecord], scenario: str = PROMPT_SCENARIO) -> bytes | None:
    """Prompt size of each model request in one scenario (huge_tool_output): context growth per call."""
    plt = _plt()
    series = [(c.column, [q.prompt_bytes for q in c.rep.requests]) for c in cells(records) if c.scenario == scenario]
    series = [(k, v) for k, v in series if v]
    if plt is None or not series:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for col, sizes in series:
        ax.plot(range(1, len(sizes) + 1), [s / 1024 for s in sizes], marker="o", label=col)
    ax.set_xlabel("model request #")
    ax.set_ylabel("prompt size (KiB)")
    ax.set_title(f"Prompt size per call — {scenario}")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig, plt)


PLOTS = (
    ("requests_per_scenario.png", "Model requests per scenario and framework", requests_plot),
    ("prompt_size_huge_tool_output.png", "Prompt size per call (huge_tool_output)", prompt_plot),
    ("time_per_run.png", "Time per run", time_plot),
)


def all_plots(records: list[RunRecord]) -> list[tuple[str, str, bytes]]:
    """(file name, title, PNG) for every picture that has something to show."""
    out = []
    for name, title, fn in PLOTS:
        png = fn(records)
        if png:
            out.append((name, title, png))
    return out


def main(argv: list[str]) -> None:
    """`python -m loopbench.reports.plots RESULTS`: draw the pictures of a results directory or file beside it;
    print the drawn ones as JSON [[file name, title], ...] (the report builder runs this beside its own work)."""
    import json

    from loopbench.reports.load import load_results

    results = load_results(argv[0])
    drawn = []
    for name, title, png in all_plots(results.records):
        (results.dir / name).write_bytes(png)
        drawn.append([name, title])
    print(json.dumps(drawn))


if __name__ == "__main__":
    import sys
    import warnings

    warnings.simplefilter("ignore")  # the builder reports the results file's warnings itself
    main(sys.argv[1:])
