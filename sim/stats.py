"""Statistics the project shares: the Wilson score interval of a proportion (win rates in reports, score
fractions in tournament ratings).  Engine core: imports only scipy."""
from __future__ import annotations

import math

from scipy import special


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of ``successes`` out of ``n`` trials, without continuity correction
    (Wilson 1927; the same as ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` for whole ``k``).

    ``successes`` may be fractional (tournament scores count a draw as half a win).  Raises ``ValueError`` for
    ``n < 1``, ``successes`` outside ``[0, n]`` or ``confidence`` outside (0, 1)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"successes {successes} out of range for {n} trials")
    z = float(special.ndtri(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    return max(0.0, centre - half), min(1.0, centre + half)
