"""Expected values computed independently of results.stats: scipy's Welch test and Fieller's interval in
closed form (Kalibera & Jones §6, spec §5–§6), for tests of the pages, the API and the CLI.

A series is ``(mean, variance, n)``: the mean, the variance (ddof=1) of its n independent units.
"""

import numpy as np
from scipy import stats


def test_df(candidate: tuple, baseline: tuple) -> float:
    """ν of spec §5 (revised): Welch–Satterthwaite's, or Hsu's min(n) − 1 while a side has fewer than 5 units."""
    (_, var_n, n_n), (_, var_o, n_o) = candidate, baseline
    if min(n_n, n_o) < 5:
        return min(n_n, n_o) - 1.0
    error_n, error_o = var_n / n_n, var_o / n_o
    return (error_n + error_o) ** 2 / (error_n**2 / (n_n - 1) + error_o**2 / (n_o - 1))


def welch_p(candidate: tuple, baseline: tuple) -> float:
    (mean_n, var_n, n_n), (mean_o, var_o, n_o) = candidate, baseline
    if min(n_n, n_o) >= 5:
        return float(stats.ttest_ind_from_stats(mean_n, np.sqrt(var_n), n_n, mean_o, np.sqrt(var_o), n_o,
                                                equal_var=False).pvalue)
    t = (mean_n - mean_o) / np.sqrt(var_n / n_n + var_o / n_o)
    return float(2 * stats.t.sf(abs(t), test_df(candidate, baseline)))


def fieller(candidate: tuple, baseline: tuple, confidence: float = 0.95,
            df: float | None = None) -> tuple[float, float]:
    """Fieller's interval of mean_candidate / mean_baseline; by default with the ν of the Welch test beside it."""
    (mean_n, var_n, n_n), (mean_o, var_o, n_o) = candidate, baseline
    df = test_df(candidate, baseline) if df is None else df
    h2 = stats.t.ppf((1 + confidence) / 2, df) ** 2
    a = mean_o**2 - h2 * var_o / n_o
    root = np.sqrt((mean_n * mean_o) ** 2 - a * (mean_n**2 - h2 * var_n / n_n))
    return float((mean_n * mean_o - root) / a), float((mean_n * mean_o + root) / a)


def bh_qvalues(pvalues) -> list[float]:
    return [float(q) for q in stats.false_discovery_control(pvalues, method="bh")]


def percent(ratio: float, low: float, high: float) -> str:
    """A change as the pages and the CLI print it: ``+8.0% [+6.9%, +9.1%]``."""
    return f"{(ratio - 1) * 100:+.1f}% [{(low - 1) * 100:+.1f}%, {(high - 1) * 100:+.1f}%]"


def lugsail_variance_of_mean(x) -> tuple[float, float]:
    """Spec §2a by hand: (Var(x̄), ν) from lugsail overlapping batch means (b = ⌊√n⌋, r = 3, c = ½), or from the
    sample variance with n − 1 where that is the larger."""
    x = np.asarray(x, dtype=float)
    n = x.size
    b = int(np.floor(np.sqrt(n)))

    def obm(size):
        batches = np.array([x[i:i + size].mean() for i in range(n - size + 1)])
        return n * size / ((n - size) * (n - size + 1)) * np.sum((batches - x.mean()) ** 2)

    lugsail = 2 * obm(b) - obm(b // 3)
    if x.var(ddof=1) >= lugsail:
        return x.var(ddof=1) / n, n - 1.0
    return lugsail / n, float(np.floor(1.5 * (n / b - 1)))
