"""The two statistics a sweep needs, written out: a pass rate's Wilson interval and the exact
McNemar test of a paired change in pass rate.

Both are a few lines of the standard library (no scipy): the Wilson score interval keeps
inside [0, 1] and stays honest for the small counts a sweep has (the normal approximation
says 10 of 10 is certain); McNemar's exact test is the binomial test of the discordant pairs
(passed before and fail now against the reverse), the standard paired test for pass/fail.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

CONFIDENCE: Final = 0.95
"""The confidence of every interval the lab shows."""


def wilson_interval(passed: int, runs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``runs`` trials; ``(nan, nan)``
    with no trials."""
    if runs <= 0:
        return float("nan"), float("nan")
    if not 0 <= passed <= runs:
        raise ValueError(f"passed must be between 0 and runs ({runs}), got {passed}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = passed / runs
    z2 = z * z
    centre = (p + z2 / (2 * runs)) / (1 + z2 / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs)) / (1 + z2 / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(regressed: int, fixed: int) -> float:
    """The two-sided exact McNemar p-value: under no change, each discordant pair is a
    regression or a fix with even odds, so the smaller count is binomial(n, 1/2); 1.0 with
    no discordant pair."""
    if regressed < 0 or fixed < 0:
        raise ValueError("counts of pairs are never negative")
    n = regressed + fixed
    if n == 0:
        return 1.0
    k = min(regressed, fixed)
    tail: float = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2.0 * tail)
