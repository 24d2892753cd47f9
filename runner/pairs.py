"""How an A/B session's pair decisions read, worded once for the session page and the alert list.

A pair is stored as :class:`runner.session.PairComparison` made it (``dataclasses.asdict``). Sessions stored
before the anytime rule kept ``better``/``worse``/``resolved`` and Welch's p of the last look: they read as
decided by Pilot's rule.
"""

from results.presentation import format_probability
from results.stats import DIFFERENT, EQUIVALENT, UNDECIDED, format_change

RULES = {"anytime": "anytime-valid (mixture SPRT)", "pilot": "Pilot's rule (one look's Welch p)"}


def pair_view(pair: dict, *, threshold: float | None = None) -> dict:
    """What the pages show of one stored pair: the workloads, the change of the second over the first with
    its interval, the rule's p, and the decision in words; a direction only when the pair was decided
    different."""
    if "first" in pair:
        first, second, decision = pair["first"], pair["second"], pair["decision"]
        first_mean, second_mean = pair["first_mean"], pair["second_mean"]
    else:
        first, second = pair["better"], pair["worse"]
        first_mean, second_mean = pair["better_mean"], pair["worse_mean"]
        decision = DIFFERENT if pair.get("resolved") else UNDECIDED
    ratio = pair.get("ratio") if pair.get("ratio") is not None else (second_mean / first_mean if first_mean else None)
    change = format_change(float(ratio), pair.get("ratio_low"), pair.get("ratio_high")) if ratio is not None else "—"
    if decision == DIFFERENT:
        words = f"{first} better than {second}"
    elif decision == EQUIVALENT:
        band = f" than ±{100 * threshold:g}%" if threshold else ""
        words = f"no difference larger{band}" if band else "no difference that matters"
    else:
        words = "no difference resolved"
    return {"metric": pair["metric"], "first": first, "second": second, "first_mean": first_mean,
            "second_mean": second_mean, "change": change, "p": format_probability(pair.get("pvalue")),
            "decision": decision, "words": words, "rule": RULES.get(pair.get("rule", "pilot"), pair.get("rule"))}


def session_pairs(session) -> list[dict]:
    """Every pair a finished A/B session stored, as :func:`pair_view` words it at its job's θ."""
    return [pair_view(pair, threshold=session.job.comparison_threshold)
            for pair in (session.outcome or {}).get("comparisons", [])]
