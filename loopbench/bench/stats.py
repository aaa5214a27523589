"""The bench's arithmetic: the suite's lower bound, the ratio of medians, its bootstrap spread, and the goal's
verdict from the two ratios' intervals."""

from __future__ import annotations

import random
import statistics

GOAL_RATIO = 1.10  # loopbench's run vs the plain script's, wall and CPU
GOAL_SUITE = 1.15  # the suite's wall vs its lower bound


def lower_bound_s(longest_run_s: float, tree_cpu_s: float, cores: int) -> float:
    """No schedule can finish before its longest run, nor before the work's CPU spread over every core."""
    return max(longest_run_s, tree_cpu_s / max(cores, 1))


def goal_verdict(wall: list[float], cpu: list[float], goal: float = GOAL_RATIO) -> str:
    """From the two ratios' intervals: `met` (both at or below the goal), `not met` (either above), else
    `undecided` (more pairs would tell)."""
    if wall[1] <= goal and cpu[1] <= goal:
        return "met"
    if wall[0] > goal or cpu[0] > goal:
        return "not met"
    return "undecided"


def settled(wall: tuple[float, float], cpu: tuple[float, float], goal: float = GOAL_RATIO) -> bool:
    """Enough pairs: both intervals are narrower than the gap the goal tests, and the verdict is decided."""
    narrow = max(wall[1] - wall[0], cpu[1] - cpu[0]) < goal - 1
    return narrow and goal_verdict(list(wall), list(cpu), goal) != "undecided"


def ratio_of_medians(new: list[float], base: list[float]) -> float:
    return statistics.median(new) / statistics.median(base)


def bootstrap_interval(new: list[float], base: list[float], rounds: int = 2000, seed: int = 7
                       ) -> tuple[float, float]:
    """The 95 % interval of median(new) / median(base) over pairs resampled with replacement (a pair stays a
    pair: both were measured under the same load)."""
    rng = random.Random(seed)
    n = len(new)
    ratios = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(ratio_of_medians([new[i] for i in idx], [base[i] for i in idx]))
    ratios.sort()
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]
