"""Public benchmark and change-point histories, read from ``var/histories/`` (not committed: data taken from
other projects' repositories is not ours to commit).

Each JSON file there holds the series of one public source, with the commit it was read at;
``benchmarks/histories.md`` says where each came from, how it was read and what its labels mean.
Standard library and numpy only, so it runs without Django::

    from benchmarks.histories import load_histories
    for h in load_histories():
        print(h.file, h.name, len(h.values), h.labels)
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIRECTORY = Path(__file__).resolve().parents[1] / "var" / "histories"


@dataclass(frozen=True)
class History:
    """One series of one source file.

    Attributes
    ----------
    source : str
        ``"github:owner/repo"`` the series was read from.
    commit : str
        The 40-hex commit of ``source`` that was read.
    paths : tuple of str
        Files of ``source`` the series were taken from.
    name : str
        The series' name, unique within its file.
    values : numpy.ndarray
        Float values in time order (read-only).
    labels : tuple of int or None
        Indices into ``values`` where a change the source publishes begins; empty where the source
        says there is none, None where it says nothing of this series.
    lower_is_better : bool or None
        None where the source does not say.
    unit : str
        Unit of ``values``, ``"unknown"`` or ``"various"`` where not stated.
    file : str
        Name of the JSON file, e.g. ``"otava_tigerbeetle.json"``.
    samples : tuple of numpy.ndarray or None
        Where the file has them (``samples``), the samples behind each point, one array per point (each point of
        ``values`` is then their mean); None otherwise.
    """

    source: str
    commit: str
    paths: tuple
    name: str
    values: np.ndarray
    labels: tuple | None
    lower_is_better: bool | None
    unit: str
    file: str
    samples: tuple | None = None


def load_histories(directory=None):
    """Read every ``*.json`` history file of a directory.

    Parameters
    ----------
    directory : str or pathlib.Path, optional
        Where the files are; ``var/histories`` by default.

    Returns
    -------
    list of History
        One per series, ordered by file name then by the series' order in its file.

    Raises
    ------
    ValueError
        If a label is not an index into its series.
    """
    directory = DIRECTORY if directory is None else Path(directory)
    histories = []
    for path in sorted(directory.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        labels = doc.get("labels", {})
        drawn = doc.get("samples", {})
        for name, raw in doc["series"].items():
            values = np.asarray(raw, dtype=float)
            values.setflags(write=False)
            points = tuple(int(i) for i in labels[name]) if name in labels else None
            if any(not 0 <= i < len(values) for i in points or ()):
                raise ValueError(f"{path.name}: label outside series {name!r}")
            histories.append(
                History(
                    source=doc["source"],
                    commit=doc["commit"],
                    paths=tuple(doc["paths"]),
                    name=name,
                    values=values,
                    labels=points,
                    lower_is_better=doc.get("lower_is_better"),
                    unit=doc.get("unit", "unknown"),
                    file=path.name,
                    samples=_samples(drawn[name], len(values), path.name) if name in drawn else None,
                )
            )
    return histories


def _samples(raw: list, points: int, file: str) -> tuple:
    if len(raw) != points:
        raise ValueError(f"{file}: {len(raw)} sample lists for {points} points")
    arrays = []
    for drawn in raw:
        array = np.asarray(drawn, dtype=float)
        array.setflags(write=False)
        arrays.append(array)
    return tuple(arrays)
