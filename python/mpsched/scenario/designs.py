"""Space-filling designs in the unit cube, for `[design]` (`mpsched.scenario.sweep`).

Sobol, Latin hypercube and Halton come from scipy.stats.qmc; `random` is plain uniform draws;
`wsp` is the WSP algorithm (Santiago, Claeys-Bruno and Sergent, "Construction of space-filling
designs using WSP algorithm for high dimensional spaces", Chemometrics and Intelligent
Laboratory Systems 113, 2012): from a dense candidate set (here a Sobol sequence), keep a point,
drop every candidate closer to it than d_min, move to the nearest candidate left, and repeat; the
kept points are at least d_min apart and spread evenly. d_min is found by bisection so that at
least the wanted number of points is kept; the first `n` in the order of the walk are the design.
"""

from __future__ import annotations

import hashlib
import os
import uuid
import warnings
from importlib import metadata
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["cache_dir", "cached", "draw", "wsp"]


def draw(kind: str, n: int, dim: int, seed: int) -> np.ndarray:
    """`n` points of a `kind` design in [0, 1)^dim, deterministic for a seed."""
    if kind == "wsp":
        return wsp(n, dim, seed)
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.random((n, dim))
    with warnings.catch_warnings():
        # Sobol warns when n is not a power of two (balance is lost); that is the user's call.
        warnings.simplefilter("ignore", UserWarning)
        from scipy.stats import qmc  # about a second to import: only here, and cached (see `cached`)

        if kind == "sobol":
            return qmc.Sobol(dim, rng=rng).random(n)
        if kind == "lhs":
            return qmc.LatinHypercube(dim, rng=rng).random(n)
        if kind == "halton":
            return qmc.Halton(dim, rng=rng).random(n)
    raise ValueError(f"unknown design kind {kind!r}")


def _walk(candidates: np.ndarray, d_min: float, limit: int) -> list[int]:
    """The WSP walk over `candidates` with exclusion radius `d_min`: the indices kept, in order
    (stops once `limit` are kept)."""
    alive = np.ones(len(candidates), dtype=bool)
    centre = np.full(candidates.shape[1], 0.5)
    current = int(np.argmin(((candidates - centre) ** 2).sum(axis=1)))  # start nearest the centre
    kept = []
    while True:
        kept.append(current)
        alive[current] = False
        if len(kept) >= limit:
            return kept
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            return kept
        dist = np.sqrt(((candidates[idx] - candidates[current]) ** 2).sum(axis=1))
        alive[idx[dist < d_min]] = False
        rest = dist >= d_min
        if not rest.any():
            return kept
        current = int(idx[rest][np.argmin(dist[rest])])


def wsp(n: int, dim: int, seed: int, candidates_per_point: int = 10) -> np.ndarray:
    """`n` WSP points in [0, 1)^dim from a scrambled Sobol candidate set of about
    `candidates_per_point` * n points (see the module's docstring)."""
    m = max(256, candidates_per_point * n)
    cands = draw("sobol", m, dim, seed)
    lo, hi = 0.0, float(np.sqrt(dim))  # no two points of the cube are further apart
    best = _walk(cands, lo, n)
    for _ in range(30):
        mid = (lo + hi) / 2
        kept = _walk(cands, mid, n)
        if len(kept) >= n:
            lo, best = mid, kept
        else:
            hi = mid
    return cands[best[:n]]


def cache_dir() -> Path:
    """Where drawn designs are kept: ``$MPSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/mpsched``,
    else ``~/.cache/mpsched``."""
    if os.environ.get("MPSCHED_CACHE_DIR"):
        return Path(os.environ["MPSCHED_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpsched"


def _library_versions() -> str:
    out = []
    for lib in ("scipy", "numpy"):
        try:
            out.append(f"{lib}={metadata.version(lib)}")
        except metadata.PackageNotFoundError:
            out.append(f"{lib}=?")
    return ",".join(out)


def cached(key: str, make: Callable[[], np.ndarray]) -> np.ndarray:
    """`make()`, kept in the cache under `key` and the libraries' versions (an unwritable cache
    only costs the time of drawing again)."""
    digest = hashlib.sha256(f"design-v1|{key}|{_library_versions()}".encode()).hexdigest()[:20]
    path = cache_dir() / "designs" / f"{digest}.npy"
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        pass
    points = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{uuid.uuid4().hex[:8]}.tmp.npy")
        np.save(tmp, points, allow_pickle=False)
        os.replace(tmp, path)  # whole or not at all, even with two studies drawing at once
    except OSError:
        pass
    return points
