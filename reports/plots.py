"""Pictures that answer a question (matplotlib, Agg backend): where each framework's loop conforms (the verdict
map), what the same step limit allows in each (requests and tool runs), and how the context grows per call.
Each function returns PNG bytes, or None when the records hold nothing to draw (or matplotlib is missing).
Nothing here measures the machine (no timings)."""

from __future__ import annotations

import io
from typing import Any

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import cells, columns
from loopbench.reports.scorecard import category_label, category_of, category_order


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


VERDICT_COLOUR = {"conforms": "#1e8e3e", "deviates": "#e8a33d", "unsupported": "#a56cd6", "error": "#c5221f"}


def verdict_map(records: list[RunRecord]) -> bytes | None:
    """Scenario × framework variant, each cell coloured by its verdict, scenarios grouped by category: where
    each framework's loop stops the way the policy asks, at a glance."""
    plt = _plt()
    if plt is None or not records:
        return None
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    by = {(c.scenario, c.column): c.rep.verdict for c in cells(records)}
    cols = columns(records)
    cat_of = {r.scenario: category_of(r) for r in records}
    rows: list[str] = []
    groups: list[tuple[str, int, int]] = []
    for cat in category_order(records):
        mine = sorted(s for s, c in cat_of.items() if c == cat)
        groups.append((category_label(cat), len(rows), len(rows) + len(mine)))
        rows += mine
    codes = list(VERDICT_COLOUR)
    grid = [[codes.index(by[(s, c)]) if (s, c) in by else float("nan") for c in cols] for s in rows]
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(cols) + 5.0), 0.28 * len(rows) + 2.4))
    ax.imshow(grid, aspect="auto", cmap=ListedColormap(list(VERDICT_COLOUR.values())), vmin=-0.5,
              vmax=len(codes) - 0.5, interpolation="nearest")
    ax.set_xticks(range(len(cols)), cols, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    for label, lo, hi in groups:
        if lo:
            ax.axhline(lo - 0.5, color="white", linewidth=3)
        ax.text(len(cols) - 0.4, (lo + hi - 1) / 2, label, va="center", ha="left", fontsize=8, weight="bold")
    ax.set_xticks([x - 0.5 for x in range(1, len(cols))], minor=True)
    ax.grid(which="minor", axis="x", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    ax.legend(handles=[Patch(color=v, label=k) for k, v in VERDICT_COLOUR.items()], fontsize=8,
              loc="upper left", bbox_to_anchor=(0, -0.22), ncol=4, frameon=False)
    ax.set_title("Verdict per scenario and framework variant")
    return _png(fig, plt)


def _step_limit_scenario(records: list[RunRecord]) -> tuple[str, int] | None:
    """The scenario that shows what a step limit allows: among those with the most common neutral
    max_model_calls, the one where the most framework variants stopped on a steps limit (ties: by id)."""
    limit_of: dict[str, int] = {}
    for r in records:
        t = r.limits.get("max_model_calls")
        if t is not None and isinstance(t.neutral, int):
            limit_of.setdefault(r.scenario, t.neutral)
    if not limit_of:
        return None
    common = max(set(limit_of.values()), key=lambda n: (list(limit_of.values()).count(n), -n))
    stopped = {s: sum(1 for c in cells(records) if c.scenario == s and c.rep.outcome == "limit_steps")
               for s, n in limit_of.items() if n == common}
    best = max(sorted(stopped), key=lambda s: stopped[s])
    return (best, common) if stopped[best] else None


def limit_plot(records: list[RunRecord]) -> bytes | None:
    """What the same neutral limit allows in each framework: the model requests the server saw and the tools
    the ledger ran, per framework variant, for one scenario that sets `max_model_calls = N`."""
    plt = _plt()
    found = _step_limit_scenario(records)
    if plt is None or found is None:
        return None
    scenario, n = found
    reps = {c.column: c.rep for c in cells(records) if c.scenario == scenario}
    cols = [c for c in columns(records) if c in reps]
    req = [reps[c].counters.model_requests_observed or 0 for c in cols]
    tools = [reps[c].counters.tool_executions or 0 for c in cols]
    fig, ax = plt.subplots(figsize=(max(7.0, 0.85 * len(cols) + 2.5), 4.2))
    xs = range(len(cols))
    ax.bar([x - 0.2 for x in xs], req, width=0.4, label="model requests (server)", color="#4c72b0")
    ax.bar([x + 0.2 for x in xs], tools, width=0.4, label="tool executions (ledger)", color="#dd8452")
    for x, (a, b) in enumerate(zip(req, tools, strict=True)):
        ax.text(x - 0.2, a, str(a), ha="center", va="bottom", fontsize=8)
        ax.text(x + 0.2, b, str(b), ha="center", va="bottom", fontsize=8)
    ax.axhline(n, color="black", linestyle="--", linewidth=1, label=f"max_model_calls = {n}")
    ax.set_xticks(list(xs), cols, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("count")
    ax.set_ylim(0, max([n, *req, *tools]) * 1.2)
    ax.set_title(f"What max_model_calls = {n} allows ({scenario})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig, plt)


def _context_scenario(records: list[RunRecord]) -> str | None:
    """The scenario whose prompts grew the most (a `context` scenario when there is one)."""
    growth: dict[str, int] = {}
    for r in records:
        g = r.counters.max_request_growth_bytes or 0
        growth[r.scenario] = max(growth.get(r.scenario, 0), g)
    context = [s for s in growth if any(r.scenario == s and r.category == "context" for r in records)]
    pool = context or list(growth)
    if not pool or not any(growth[s] for s in pool):  # no prompt grew: no picture
        return None
    return max(sorted(pool), key=lambda s: growth[s])


def context_plot(records: list[RunRecord]) -> bytes | None:
    """Prompt size of each model request in the scenario whose context grew the most: one small panel per
    framework variant, on the same scale, so series that coincide stay distinguishable."""
    plt = _plt()
    scenario = _context_scenario(records)
    series = [(c.column, [q.prompt_bytes for q in c.rep.requests]) for c in cells(records) if c.scenario == scenario]
    series = [(k, v) for k, v in series if v]
    if plt is None or not series:
        return None
    n = len(series)
    ncols = min(3, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols + 0.6, 2.3 * nrows + 0.8), sharey=True,
                             squeeze=False)
    top = max(max(v) for _, v in series) / 1024
    for ax, (col, sizes) in zip(axes.flat, series, strict=False):
        ax.plot(range(1, len(sizes) + 1), [b / 1024 for b in sizes], marker="o", color="#4c72b0")
        for i, b in enumerate(sizes, 1):
            ax.annotate(f"{b / 1024:.0f}", (i, b / 1024), textcoords="offset points", xytext=(0, 4), fontsize=7,
                        ha="center")
        ax.set_title(col, fontsize=8)
        ax.set_ylim(0, top * 1.25)
        ax.set_xticks(range(1, len(sizes) + 1))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.supxlabel("model request #", fontsize=9)
    fig.supylabel("prompt size (KiB)", fontsize=9)
    fig.suptitle(f"Context growth per call — {scenario}", fontsize=10)
    return _png(fig, plt)


PLOTS = (
    ("verdict_map.png", "Verdict per scenario and framework variant", verdict_map),
    ("what_the_limit_allows.png", "What the same step limit allows", limit_plot),
    ("context_growth.png", "Context growth per call", context_plot),
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
