"""Expected values computed independently of results.stats: scipy's Welch test and Fieller's interval in
closed form (Kalibera & Jones §6, spec §5–§6), for tests of the pages, the API and the CLI.

A series is ``(mean, variance, n)``: the mean, the variance (ddof=1) of its n independent units.
"""

import numpy as np
from scipy import stats


def welch_p(candidate: tuple, baseline: tuple) -> float:
    (mean_n, var_n, n_n), (mean_o, var_o, n_o) = candidate, baseline
    return float(stats.ttest_ind_from_stats(mean_n, np.sqrt(var_n), n_n, mean_o, np.sqrt(var_o), n_o,
                                            equal_var=False).pvalue)


def fieller(candidate: tuple, baseline: tuple, confidence: float = 0.95) -> tuple[float, float]:
    """Fieller's interval of mean_candidate / mean_baseline with n_candidate + n_baseline − 2 degrees of freedom."""
    (mean_n, var_n, n_n), (mean_o, var_o, n_o) = candidate, baseline
    h2 = stats.t.ppf((1 + confidence) / 2, n_n + n_o - 2) ** 2
    a = mean_o**2 - h2 * var_o / n_o
    root = np.sqrt((mean_n * mean_o) ** 2 - a * (mean_n**2 - h2 * var_n / n_n))
    return float((mean_n * mean_o - root) / a), float((mean_n * mean_o + root) / a)


def bh_qvalues(pvalues) -> list[float]:
    return [float(q) for q in stats.false_discovery_control(pvalues, method="bh")]


def percent(ratio: float, low: float, high: float) -> str:
    """A change as the pages and the CLI print it: ``+8.0% [+6.9%, +9.1%]``."""
    return f"{(ratio - 1) * 100:+.1f}% [{(low - 1) * 100:+.1f}%, {(high - 1) * 100:+.1f}%]"
