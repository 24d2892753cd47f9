"""Student's t and the normal distribution, by the ``scipy.special`` functions that ``scipy.stats.t`` and
``scipy.stats.norm`` call: the same numbers (tests/stats/test_distributions.py checks them bit for bit) without
importing ``scipy.stats``, which takes half a second that ``manage.py compare --files`` would spend on nothing
else. Arguments broadcast; valid ones are assumed (the callers validate).
"""

import numpy as np
from scipy import special

__all__ = ["normal_inverse_survival", "normal_quantile", "normal_survival", "t_inverse_survival", "t_quantile",
           "t_survival"]


def t_quantile(q, df):
    """``scipy.stats.t.ppf(q, df)``."""
    return special.stdtrit(df, q)


def t_survival(x, df):
    """``scipy.stats.t.sf(x, df)``."""
    return special.stdtr(df, np.negative(x))


def t_inverse_survival(q, df):
    """``scipy.stats.t.isf(q, df)``."""
    return np.negative(special.stdtrit(df, q))


def normal_quantile(q):
    """``scipy.stats.norm.ppf(q)``."""
    return special.ndtri(q)


def normal_survival(x):
    """``scipy.stats.norm.sf(x)``."""
    return special.ndtr(np.negative(x))


def normal_inverse_survival(q):
    """``scipy.stats.norm.isf(q)``."""
    return np.negative(special.ndtri(q))
