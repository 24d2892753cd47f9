"""Bisection: from a confirmed regression to the commit that caused it (issue 32).

- :mod:`.plan`: which commit is measured next and what the finished sessions name, a pure function of the
  steps so far (framework-free: ``benchmarks/bisection.py`` drives it with simulated sessions);
- each session is one of Pilot's loop with a :class:`runner.session.levels.LevelCheck` in its targets.
"""
