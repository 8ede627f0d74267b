"""What every registered experiment shares: its runs, its registration, its power, Holm, its readings.

An experiment of the lab is a :class:`~tanbias.lab.experiments.Design`; this module reads
any of them the same way, and its statistics share these rules (chapters 8, 10-13):

* the runs: :func:`run_status` (every cell, committed or not), :func:`load` (the committed
  runs, checksums verified), :func:`complete_seeds` (the seeds whose every level is
  committed and none diverged);
* the registration: :func:`load_registration` reads a pinned file of
  ``data/preregistration/`` (refused unless its sha256 is the pinned one), :func:`registration`
  a design's;
* power from realised SDs: :func:`seed_blocked_sd` (the noise a seed-paired comparison
  sees), :func:`t_test_power`, :func:`detectable_ratio` and :func:`power_at` (a seed-paired
  regression along a knob), :func:`contrast_power` and :func:`seeds_needed` (a seed-paired
  contrast of two arms);
* :func:`holm`, with the one rule for a p value that cannot be computed: the row stays in
  its registered family with p = 1 (the family's size is fixed by the registration; a row
  that cannot be estimated does not make the others easier to pass);
* :func:`t_interval`, the seed-paired t interval; :class:`CellContrasts`, a contrast of a grid's
  cells in the seed-blocked model ``outcome ~ C(seed) + C(cell)``;
* :func:`learning`, how much a run learned (gain over unigram, accuracy);
* the matched-progress reading: :func:`value_at_progress` (an outcome read at a held-out
  loss) and :func:`progress_word` (does a sign survive matched progress?), on
  :func:`relative_word`, an interval's word against a sign measured before it
  (:func:`tanbias.stats.interval_word` is the one rule that reads an interval).

Nothing here reads an experiment's registration values by itself: the alpha, the family
and the target come in as parameters.
"""
from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs
from tanbias.lab.config import KINDS
from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ALPHA", "TARGET_RATIO", "TARGET_POWER", "TARGET_LOG", "REGISTRATION_DIR", "load_registration", "registration", "BOOK_POSTHOC_SHA256", "book_posthoc", "run_status", "load", "complete_seeds",
           "learning", "t_multiplier", "t_interval", "holm", "seed_blocked_sd", "t_test_power", "detectable_effect",
           "detectable_ratio",
           "power_at", "contrast_power", "seeds_needed", "relative_word", "progress_word", "value_at_progress",
           "progress_table", "CellContrasts"]

#: the level of every registered test of the lab (two-sided; Holm's first threshold is ALPHA / m)
ALPHA = 0.05
#: the change every experiment's design is powered for, and the power: a ratio of x1.25, detected with
#: 80 % power (each registration states it); ``TARGET_LOG`` is that ratio in ln units, the band of a
#: "no change" prediction, a "small" effect and a low-power null
TARGET_RATIO = 1.25
TARGET_POWER = 0.8
TARGET_LOG = float(np.log(TARGET_RATIO))

#: where the experiments' pre-registrations live: ``<experiment>.toml`` (predictions and decision
#: rule, committed before the first run, pinned by sha256) and ``<experiment>-posthoc.toml`` (rules
#: added after the data were seen, dated, with their reason)
REGISTRATION_DIR = runs.ROOT / "data" / "preregistration"


# --------------------------------------------------------------------------- the registration
def load_registration(name: str, sha256: str | None, directory=None) -> dict:
    """A registration file (``<directory>/<name>.toml``), parsed, its sha256 checked.

    Parameters
    ----------
    name : str
        The file's stem, e.g. ``"dose"`` (the predictions and decision rule of chapter 10, as
        committed) or ``"dose-posthoc"`` (the rules added after the dose runs).
    sha256 : str or None
        The pinned hash; None reads the file unchecked.
    directory : path-like, optional
        Default :data:`REGISTRATION_DIR`.

    Returns
    -------
    dict
        The parsed TOML.

    Raises
    ------
    CorruptFileError
        The file is missing, is not TOML, or its sha256 is not the pinned one (a registration
        is a commitment: restore it from git, never rewrite it).

    Example
    -------
    >>> load_registration("causal", None)["rule"]["causal"]["contrasts"][0]
    'proxy - control'
    """
    import hashlib
    import tomllib

    path = Path(REGISTRATION_DIR if directory is None else directory) / f"{name}.toml"
    restore = f"git checkout -- {path.relative_to(runs.ROOT) if path.is_relative_to(runs.ROOT) else path}"
    if not path.exists():
        raise CorruptFileError(path, restore, "the registration file is missing")
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 is not None and digest != sha256:
        raise CorruptFileError(path, restore, f"sha256 {digest} is not the pinned {sha256}")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CorruptFileError(path, restore, f"not TOML: {err}") from err


@functools.lru_cache(maxsize=None)
def _pinned(name: str, sha256: str) -> dict:
    return load_registration(name, sha256)


#: the pin of ``data/preregistration/book-posthoc.toml``: the readings added after the data across
#: experiments (the survival table by a test of the difference, the retired standardised reading, the
#: collapse part's common steps, words with no earlier rule)
BOOK_POSTHOC_SHA256 = "687ae5050741e547aa84af6d4f7992426ab52d6fd80afb5cc4e6c6ef64b845c5"


def book_posthoc() -> dict:
    """``data/preregistration/book-posthoc.toml``, parsed, its sha256 checked against :data:`BOOK_POSTHOC_SHA256`.

    >>> book_posthoc()["meta"]["date"]
    '2026-12-07'
    """
    return _pinned("book-posthoc", BOOK_POSTHOC_SHA256)


def registration(design, posthoc: bool = False) -> dict:
    """A design's registration (``data/preregistration/<registration>.toml``, its sha256 checked
    against the design's pin) or, with ``posthoc``, the rules written after its runs
    (``<registration>-posthoc.toml``). Read once per process.

    Raises
    ------
    ParameterError
        The design has no such registration.

    Example
    -------
    >>> from tanbias.lab.experiments import DOSE
    >>> registration(DOSE, posthoc=True)["multiplicity"]["method"]
    'holm'
    """
    sha = design.posthoc_sha256 if posthoc else design.registration_sha256
    if design.registration is None or sha is None:
        raise ParameterError(f"design={design.name!r} has no {'post-hoc ' if posthoc else ''}registration: valid "
                             "range is a design with a pinned registration file.")
    return _pinned(design.registration + ("-posthoc" if posthoc else ""), sha)


# --------------------------------------------------------------------------- the runs
def run_status(design, runs_dir=None) -> pd.DataFrame:
    """Every cell of a design, committed or not: one row per cell in queue order.

    Returns
    -------
    DataFrame
        ``run, kind, <factor>, seed, shared`` (the cell is another design's run),
        ``committed`` (complete: its manifest lists ``tokens.csv``) and ``minutes`` of
        training (from its summary, where committed).
    """
    import pandas as pd

    root = runs.RUNS_DIR if runs_dir is None else Path(runs_dir)
    rows = []
    for kind, level, seed, run in design.cells():
        done = runs.is_complete(root / run)
        minutes = json.loads((root / run / "summary.json").read_text())["train_seconds"] / 60 if done else np.nan
        rows.append({"run": run, "kind": kind, design.factor: level, "seed": seed,
                     "shared": run != design.run_name(kind, level, seed), "committed": done, "minutes": minutes})
    return pd.DataFrame(rows)


def load(design, runs_dir=None, names=None) -> dict:
    """A design's committed runs that are complete (checksums verified), ``{run: RunData}``, in queue
    order; ``names`` (run folders) replaces the design's."""
    root = runs.RUNS_DIR if runs_dir is None else Path(runs_dir)
    names = [run for *_, run in design.cells()] if names is None else list(names)
    return {n: runs.load_run(root / n) for n in names if runs.is_complete(root / n)}


def complete_seeds(design, table, kind: str, skip=None) -> list[int]:
    """The seeds of ``kind`` in a run table (columns ``kind``, ``seed``, the design's factor and,
    where there is one, ``diverged``) whose every level of the design is there and none diverged.
    ``skip(level)``, if given, says which levels a seed may lack (the rivals' long runs).

    >>> import pandas as pd
    >>> from tanbias.lab.experiments import ALIAS
    >>> t = pd.DataFrame({"kind": "decoder", "level": ["k0", "k1", "k2", "k3", "k0"], "seed": [0, 0, 0, 0, 1]})
    >>> complete_seeds(ALIAS, t, "decoder")
    [0]
    """
    check_choice("kind", kind, KINDS)
    out = []
    for seed, g in table[table["kind"] == kind].groupby("seed"):
        levels = {lv for lv in design.levels_of(kind, int(seed))  # the levels the grid has at this seed
                  if skip is None or not skip(lv)}
        if set(g[design.factor]) >= levels and not ("diverged" in g and g["diverged"].any()):
            out.append(int(seed))
    return sorted(out)


def learning(ev: dict) -> dict:
    """How much a run learned, from its final evaluation (``summary.json``'s ``eval``): ``eval_loss``,
    ``unigram_loss``, ``gain`` (``unigram_loss - eval_loss``, nats per scored token), ``accuracy`` and
    ``unigram_accuracy`` (NaN where the evaluation lacks one).

    >>> learning({"loss": 5.0, "unigram_loss": 6.5, "accuracy": 0.2})["gain"]
    1.5
    """
    loss, uni = ev.get("loss", np.nan), ev.get("unigram_loss", np.nan)
    return {"eval_loss": loss, "unigram_loss": uni, "gain": float(uni - loss),
            "accuracy": ev.get("accuracy", np.nan), "unigram_accuracy": ev.get("unigram_accuracy", np.nan)}


# --------------------------------------------------------------------------- intervals and Holm
@functools.lru_cache(maxsize=None)
def t_multiplier(n: int, level: float) -> float:
    """The two-sided Student t multiplier of a ``level`` interval of a mean over ``n`` values (n − 1 df).

    >>> round(t_multiplier(3, 0.95), 3)
    4.303
    """
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, n - 1))


def t_interval(x, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean and Student-t interval of ``x`` (NaNs dropped): ``(mean, lo, hi, n)``. With seed-paired
    differences as ``x``, the seed-paired t interval of the run as the unit.

    >>> m, lo, hi, n = t_interval([1.0, 2.0, 3.0])
    >>> round(m, 3), round(lo, 3), round(hi, 3), n
    (2.0, -0.484, 4.484, 3)
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(x.mean())
    if n == 1:
        return m, float("nan"), float("nan"), 1
    h = float(t_multiplier(n, level) * x.std(ddof=1) / np.sqrt(n))
    return m, m - h, m + h, n


class CellContrasts:
    """Contrasts of a grid's cells in the seed-blocked model, each model fitted once.

    For one outcome and one set of runs (one row each: ``seed``, ``cell``, the outcome), OLS
    ``outcome ~ C(seed) + C(cell)`` (statsmodels) over the seeds given, the first of ``cells`` the
    reference; a contrast ``sum_c w_c beta_c`` gets its t interval and two-sided p on the residual
    df. With fewer than two seeds, or an outcome missing, every column but ``n_seeds`` is NaN.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs: ``kind``, ``cell``, ``seed`` and the outcomes' columns.
    cells : callable
        ``cells(kind) -> tuple`` of the cells of an architecture's model, in order (the first is
        the reference).
    seeds : callable
        ``seeds(kind) -> list`` of the seeds that enter its model (the complete ones).

    Example
    -------
    >>> import pandas as pd
    >>> rows = [dict(kind="decoder", cell=c, seed=s, y=0.1 * i + 0.01 * s + 0.001 * (i * s % 3))
    ...         for i, c in enumerate("abc") for s in range(3)]
    >>> fits = CellContrasts(pd.DataFrame(rows), lambda kind: "abc", lambda kind: [0, 1, 2])
    >>> r = fits("decoder", "y", {"c": 1, "a": -1})
    >>> round(r["estimate"], 3), r["df"], r["n_seeds"]
    (0.2, 4.0, 3)
    """

    def __init__(self, table, cells, seeds):
        self.table, self.cells, self.seeds = table, cells, seeds
        self._fits = {}

    def fit(self, kind: str, outcome: str):
        """``(statsmodels fit or None, number of seeds)`` of one architecture's model of ``outcome``."""
        import pandas as pd
        import statsmodels.formula.api as smf

        key = (kind, outcome)
        if key not in self._fits:
            seeds, cells = list(self.seeds(kind)), list(self.cells(kind))
            t = self.table
            d = t[(t["kind"] == kind) & t["seed"].isin(seeds) & t["cell"].isin(cells)].copy()
            fit = None
            if len(seeds) >= 2 and d[outcome].notna().all():
                d["cell_"] = pd.Categorical(d["cell"], categories=cells)
                fit = smf.ols(f"{outcome} ~ C(seed) + C(cell_)", data=d).fit()
            self._fits[key] = (fit, len(seeds))
        return self._fits[key]

    def __call__(self, kind: str, outcome: str, weights: dict, confidence: float = 1 - ALPHA) -> dict:
        """``estimate, se, df, lo, hi, p, n_seeds`` of the contrast ``weights`` (``{cell: w}``)."""
        fit, n = self.fit(kind, outcome)
        nan = float("nan")
        out = {"estimate": nan, "se": nan, "df": nan, "lo": nan, "hi": nan, "p": nan, "n_seeds": n}
        if fit is None:
            return out
        L = np.zeros(len(fit.params))
        for cell, w in weights.items():
            key = f"C(cell_)[T.{cell}]"
            if key in fit.params.index:                 # the reference cell has no coefficient
                L[fit.params.index.get_loc(key)] += w
        t = fit.t_test(L)
        lo, hi = np.asarray(t.conf_int(alpha=1 - confidence)).ravel()
        out.update(estimate=float(np.ravel(t.effect)[0]), se=float(np.ravel(t.sd)[0]), df=float(fit.df_resid),
                   lo=float(lo), hi=float(hi), p=float(np.ravel(t.pvalue)[0]))
        return out


def holm(p, family: int | None = None) -> np.ndarray:
    """Holm-adjusted p values of one registered family (statsmodels ``multipletests``).

    The one rule for a p value that cannot be computed (NaN: too few seeds, an end of the knob
    not committed): the row stays in its family with p = 1, so the family keeps the size its
    registration fixed, and a row that cannot be estimated does not make the others easier to
    pass. Its own adjusted p is NaN.

    Parameters
    ----------
    p : array-like, shape (n,)
        The raw p values of every row of the family, NaN where one cannot be computed.
    family : int, optional
        The family's registered size: ``n`` must equal it.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    ParameterError
        ``n`` is not the registered family's size.

    Example
    -------
    >>> holm([0.01, 0.04, float("nan")]).round(3).tolist()        # a family of three, one row missing
    [0.03, 0.08, nan]
    """
    p = np.asarray(p, float).ravel()
    if family is not None and p.size != family:
        raise ParameterError(f"rows={p.size} is not allowed: valid range is the registered family's {family} rows. "
                             "Pass every row of the family, NaN where a p value cannot be computed.")
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        from statsmodels.stats.multitest import multipletests

        out[ok] = multipletests(np.where(ok, p, 1.0), method="holm")[1][ok]
    return out


# --------------------------------------------------------------------------- power from realised SDs
def seed_blocked_sd(y) -> dict:
    """Residual standard deviation of a seeds x levels table under the additive model ``seed + level``.

    ``sd`` with ``df = (seeds − 1)(levels − 1)`` degrees of freedom, ``n_seeds``, ``n_levels``: the
    noise a seed-paired comparison of two levels (or arms) sees.

    >>> seed_blocked_sd([[0.0, 1.0], [1.0, 2.0]])["sd"]           # purely additive: no residual
    0.0
    """
    y = np.asarray(y, float)
    r = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = (y.shape[0] - 1) * (y.shape[1] - 1)
    return {"sd": float(np.sqrt((r ** 2).sum() / df)), "df": int(df), "n_seeds": int(y.shape[0]),
            "n_levels": int(y.shape[1])}


def t_test_power(effect: float, se: float, df: int, alpha: float) -> float:
    """Power of a two-sided t test at ``alpha`` (``df`` degrees of freedom) to detect ``effect``
    estimated with standard error ``se``: the noncentral t's mass beyond both critical values.

    >>> round(t_test_power(0.0, 1.0, 10, 0.05), 3)        # no effect: the test's size
    0.05
    """
    from scipy import stats

    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = effect / se
    # the far tail: nct.cdf(-crit) is tiny (and NaN in scipy for large nc)
    lower = np.nan_to_num(stats.nct.cdf(-crit, df, nc), nan=0.0)
    return float(stats.nct.sf(crit, df, nc) + lower)


def detectable_effect(se: float, df: float, alpha: float, power: float = 0.8) -> float:
    """The smallest effect (in the units of ``se``, e.g. ln units) a two-sided t test at ``alpha`` with
    ``df`` degrees of freedom detects with ``power`` (:func:`t_test_power`), for an estimate of
    standard error ``se``; NaN where ``se`` or ``df`` is not finite.

    >>> round(detectable_effect(1.0, 1000, 0.05), 2)        # about 1.96 + 0.84 standard errors
    2.8
    """
    from scipy.optimize import brentq

    if not (np.isfinite(se) and np.isfinite(df) and se > 0 and df > 0):
        return float("nan")
    return float(brentq(lambda b: t_test_power(b, se, df, alpha) - power, 1e-9 * se, 40 * se))


def detectable_ratio(sd: float, n_seeds: int, positions, power: float = 0.8, alpha: float = 0.05) -> float:
    """Smallest end-to-end ratio (flattest / start) a seed-paired regression detects with this power.

    The model is ``log y_sj = a_s + b x_j + e`` (a seed's own intercept ``a_s``,
    design positions ``x_j`` in [0, 1], noise sd ``sd``); ``exp(|b|)`` is the
    end-to-end ratio. The slope's standard error is ``sd / sqrt(n_seeds Σ(x_j - x̄)^2)``
    with ``n_seeds * n_levels - n_seeds - 1`` degrees of freedom, and the power of
    the two-sided t test at level ``alpha`` comes from the noncentral t.

    >>> r = detectable_ratio(0.086, 3, [0, 1/3, 2/3, 1])
    >>> 1.2 < r < 1.3
    True
    """
    from scipy.optimize import brentq

    sd = check_real("sd", sd, 0)
    n_seeds = check_int("n_seeds", n_seeds, lo=2)
    power = check_real("power", power, 0, 1)
    alpha = check_real("alpha", alpha, 0, 1)
    x = np.asarray(positions, float)
    sxx = float(((x - x.mean()) ** 2).sum())
    se = sd / np.sqrt(n_seeds * sxx)
    df = n_seeds * len(x) - n_seeds - 1
    b = brentq(lambda b: t_test_power(b, se, df, alpha) - power, 1e-9, 15 * se)
    return float(np.exp(b))


def power_at(ratio: float, sd: float, n_seeds: int, positions, alpha: float = 0.05) -> float:
    """Power of the seed-paired regression of :func:`detectable_ratio` to detect an end-to-end ``ratio``.

    The same model (noise sd ``sd``, ``n_seeds`` seeds, design positions ``positions``);
    ``ratio`` and ``1/ratio`` are the same effect, two-sided. (The aliasing knob's
    registration names it ``tanbias.lab.analysis.dose_design.power_at``, where it lived when
    that file was pinned.)

    >>> x = [0, 1/3, 2/3, 1]
    >>> round(power_at(detectable_ratio(0.1, 3, x), 0.1, 3, x), 3)
    0.8
    """
    ratio = check_real("ratio", ratio, 0)
    sd = check_real("sd", sd, 0)
    n_seeds = check_int("n_seeds", n_seeds, lo=2)
    alpha = check_real("alpha", alpha, 0, 1)
    x = np.asarray(positions, float)
    se = sd / np.sqrt(n_seeds * float(((x - x.mean()) ** 2).sum()))
    return t_test_power(abs(float(np.log(ratio))), se, n_seeds * len(x) - n_seeds - 1, alpha)


def contrast_power(ratio: float, sd: float, n_seeds: int, n_arms: int, alpha: float) -> float:
    """Power of one seed-paired contrast of two arms to detect a change by ``ratio``.

    The model is ``ln y_sa = seed_s + arm_a + e`` (noise sd ``sd``) over ``n_arms`` arms
    and ``n_seeds`` seeds; a contrast of two arms has standard error ``sd √(2 / n_seeds)``
    and ``(n_seeds − 1)(n_arms − 1)`` residual degrees of freedom; the two-sided t test at
    ``alpha`` (Holm's first threshold over a family of m contrasts is ``α / m``, Bonferroni's,
    the conservative one).

    >>> round(contrast_power(1.25, 0.145, 12, 6, alpha=0.05 / 6), 2) >= 0.8
    True
    """
    ratio = check_real("ratio", ratio, 0)
    sd = check_real("sd", sd, 0)
    n_seeds = check_int("n_seeds", n_seeds, lo=2)
    n_arms = check_int("n_arms", n_arms, lo=2)
    alpha = check_real("alpha", alpha, 0, 1)
    se = sd * np.sqrt(2.0 / n_seeds)
    return t_test_power(abs(float(np.log(ratio))), se, (n_seeds - 1) * (n_arms - 1), alpha)


def seeds_needed(sd: float, n_arms: int, ratio: float, power: float, alpha: float, at_least: int = 5) -> int:
    """The fewest seeds (at least ``at_least``) at which :func:`contrast_power` reaches ``power``.

    Raises
    ------
    ValueError
        More than 200 seeds would be needed.

    Example
    -------
    >>> seeds_needed(0.05, 6, 1.25, 0.8, 0.05 / 6)
    5
    """
    for n in range(at_least, 200):
        if contrast_power(ratio, sd, n, n_arms, alpha) >= power:
            return n
    raise ValueError(f"sd={sd} needs more than 200 seeds for power {power}: valid range is a smaller sd.")


# --------------------------------------------------------------------------- the matched-progress reading
def relative_word(sign, lo, hi) -> str:
    """An interval's word (:func:`tanbias.stats.interval_word`) against a sign measured before it:
    ``"same"`` (it lies on that sign's side of 0), ``"opposite"``, ``"indistinguishable"``
    (it contains 0) or ``"undecided"`` (a bound is NaN, or no sign).

    ``sign`` is a number (its sign is read) or ``"+"``/``"-"``.

    >>> relative_word("-", -0.3, -0.1), relative_word(2.0, -0.3, -0.1), relative_word(-1, -0.3, 0.1)
    ('same', 'opposite', 'indistinguishable')
    """
    side = {"+": 1.0, "-": -1.0}.get(sign, np.nan) if isinstance(sign, str) else float(np.sign(sign))
    word = interval_word(lo, hi)
    if word == "undecided" or not np.isfinite(side) or side == 0:      # no side to compare with
        return "undecided"
    if word == "indistinguishable":
        return word
    return "same" if (word == "positive") == (side > 0) else "opposite"


#: the words of :func:`progress_word`, by :func:`relative_word`
_PROGRESS_WORDS = {"same": "survives", "opposite": "reverses", "indistinguishable": "not told apart from progress",
                   "undecided": "undecided"}


def progress_word(sign, lo, hi) -> str:
    """The matched-progress reading of a sign: the same contrast's interval at matched training
    progress (``lo``, ``hi``) ``"survives"`` (it lies on the sign's side of 0), ``"reverses"``
    (the other side), is ``"not told apart from progress"`` (it contains 0) or is
    ``"undecided"`` (no interval, or no sign). The words of ``causal-posthoc.toml``; chapter 10's
    ``[progress]`` gate (``dose-posthoc.toml``) reads "survives" as surviving.

    >>> progress_word("-", -0.5, -0.1), progress_word(-0.2, -0.5, 0.1)
    ('survives', 'not told apart from progress')
    """
    return _PROGRESS_WORDS[relative_word(sign, lo, hi)]


def progress_table(progress) -> pd.DataFrame:
    """Contrasts at matched training progress as a reader's table, for chapters 12 and 13: architecture,
    contrast, the held-out loss the first arm ends with beyond the second (nats), the ratio at the last
    step (the registered contrast), the ratio at matched held-out loss with its 95 % interval (``lo``,
    ``hi``, ratios: ``format_table(..., intervals={"its 95 % CI": ("lo", "hi")})``), the word, and
    the seeds it reads. ``progress`` has ``kind, contrast, loss_gap, registered, estimate, lo, hi, word,
    n_seeds``, the contrasts on the ln scale.

    Example
    -------
    >>> import pandas as pd
    >>> p = pd.DataFrame([dict(contrast="head_final", kind="decoder", estimate=np.log(0.5), lo=np.log(0.4),
    ...                        hi=np.log(0.6), n_seeds=2, loss_gap=-0.4, registered=np.log(0.45), word="survives")])
    >>> row = progress_table(p).iloc[0]
    >>> [round(float(row[c]), 2) for c in ("loss gap at end [nats]", "ratio, last step", "ratio, matched loss", "lo", "hi")]
    [-0.4, 0.45, 0.5, 0.4, 0.6]
    """
    import pandas as pd

    return pd.DataFrame({"architecture": progress["kind"], "contrast": progress["contrast"],
                         "loss gap at end [nats]": progress["loss_gap"],
                         "ratio, last step": np.exp(progress["registered"]),
                         "ratio, matched loss": np.exp(progress["estimate"]),
                         "lo": np.exp(progress["lo"]), "hi": np.exp(progress["hi"]),
                         "reading": progress["word"], "seeds": progress["n_seeds"].astype(int)}).reset_index(drop=True)


def value_at_progress(steps, loss, outcome, level: float, last: bool = False) -> float:
    """The outcome of one run at the held-out loss ``level`` (the matched-progress reading).

    ``steps``, ``loss`` and ``outcome`` are the run's probe steps and the held-out loss and outcome
    at each. With ``last`` (the run that learned less: ``level`` is its own final loss) the outcome
    at the last probe step; otherwise the outcome at the first probe step whose loss is at most
    ``level``, linearly interpolated in loss from the step before it.

    Raises
    ------
    ValueError
        The run's held-out loss never reaches ``level`` (and ``last`` is False).

    Example
    -------
    >>> value_at_progress([0, 10, 20], [9.0, 7.0, 6.0], [0.0, 1.0, 3.0], 6.5)
    2.0
    >>> value_at_progress([0, 10, 20], [9.0, 7.0, 6.0], [0.0, 1.0, 3.0], 6.0, last=True)
    3.0
    """
    order = np.argsort(np.asarray(steps))
    loss, outcome = np.asarray(loss, float)[order], np.asarray(outcome, float)[order]
    if not len(loss) or not np.isfinite(loss).all():
        return np.nan
    if last:
        return float(outcome[-1])
    below = np.flatnonzero(loss <= level)
    if not len(below):
        raise ValueError(f"level={level!r}: the run's held-out loss never reaches it (its lowest is "
                         f"{loss.min():.4g}); pass last=True for the run that learned less")
    i = int(below[0])
    if i == 0:
        return float(outcome[0])
    w = (loss[i - 1] - level) / (loss[i - 1] - loss[i])
    return float(outcome[i - 1] + w * (outcome[i] - outcome[i - 1]))
