"""Run tables with planted effects, whose registered verdicts are known: shared by the tests of an
experiment's analysis (test_alias.py, test_causal.py) and of its report (test_alias_report.py,
test_causal_report.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from tanbias.lab.analysis import alias, causal
from tanbias.lab.analysis.alias_design import ALIAS_READINGS, positions
from tanbias.lab.analysis.registered import complete_seeds
from tanbias.lab.experiments import ALIAS, ALIAS_LEVELS, causal_arms
from tanbias.lab.probe import probe_steps

#: the causal runs' steps
STEPS = 320


# ------------------------------------------------------------------ the aliasing knob
def alias_table(slopes=None, seeds=range(4), noise=0.02, gain=None, rng=0):
    """A run table along the knob: every reading ``= seed + slope * x + noise``, x the design position,
    ``log_collision`` falling by ln 15 end to end."""
    g = np.random.default_rng(rng)
    slopes, gain = slopes or {}, gain or {}
    rows = []
    for kind in ("encoder", "decoder"):
        for s in seeds:
            base = g.normal(0, 0.3)
            for level, x in positions().items():
                r = {"run": f"alias-{kind}-{level}-s{s}", "kind": kind, "level": level, "seed": s, "on_alias": True,
                     "x_alias": x, "diverged": False, "log_type_collision": -5.7 + g.normal(0, 1e-3),
                     "gain": 1.5 + gain.get(kind, 0.0) * x + g.normal(0, noise),
                     "log_convergence": np.nan if level == "k0" else np.log(0.3) + g.normal(0, 0.05),
                     "log_convergence_init": np.nan if level == "k0" else np.log(2.0) + g.normal(0, 0.05)}
                for m in ALIAS_READINGS:
                    r[m] = base + slopes.get(m, 0.0) * x + g.normal(0, noise)
                r["log_collision"] = -5.7 - np.log(15) * x + g.normal(0, 1e-3)
                rows.append(r)
    return pd.DataFrame(rows)


def alias_analysis(interim, **slopes):
    """The aliasing analysis of a planted table (readings along the knob with ``slopes``), its learning
    compared with a direct knob whose gain falls by 0.8 end to end."""
    t = alias_table(slopes)
    dose_t = alias_table({}, gain={"encoder": -0.8, "decoder": -0.8}).assign(on_token=True)
    dose_t["level"] = dose_t["level"].map(dict(zip(ALIAS_LEVELS, ("skewed", "b16", "b37", "b100"))))
    return alias.AliasAnalysis(status=pd.DataFrame({"run": t["run"], "committed": True}), table=t,
                               responses=alias.responses(t), learning=alias.learning_contrast(t, dose_t),
                               convergence=pd.DataFrame(), clouds=alias.convergence_words(t),
                               seeds={k: complete_seeds(ALIAS, t, k) for k in ("encoder", "decoder")}, interim=interim)


# ------------------------------------------------------------------ the causal test
def causal_table(effects=None, loss=None, seeds=range(5), noise=0.02, rng=0):
    """A run table with ``log_mean_cosine = seed + effect[arm] + noise`` and ``heldout_loss`` likewise."""
    g = np.random.default_rng(rng)
    effects, loss = effects or {}, loss or {}
    rows = []
    for kind in ("encoder", "decoder"):
        for s in seeds:
            base = g.normal(0, 0.3)
            for arm in causal_arms(kind):
                rows.append({"run": f"causal-{kind}-{arm}-s{s}", "kind": kind, "arm": arm, "seed": s, "steps": STEPS,
                             "log_mean_cosine": -1 + base + effects.get(arm, 0.0) + g.normal(0, noise),
                             "heldout_loss": 5 + loss.get(arm, 0.0) + g.normal(0, 0.01), "diverged": False,
                             "share": 0.4 if arm in ("proxy", "uniform") else 0.25 if arm == "random" else np.nan,
                             **{o: g.normal(0, 0.1) for o in causal.OUTCOMES
                                if o not in ("log_mean_cosine", "heldout_loss")}})
    return pd.DataFrame(rows)


def causal_trajectory(table, gap_end=-0.3, gap_last=-0.3, noise=0.01, rng=0):
    """Trajectories whose proxy-early - control gap is ``gap_end`` at the window's end and ``gap_last``
    at the last step (0 elsewhere in the other arms); every run's held-out loss falls from 9 to 6."""
    g = np.random.default_rng(rng)
    end = causal.window_end(STEPS)
    steps = probe_steps(STEPS, 14)
    rows = []
    for _, r in table.iterrows():
        for i, step in enumerate(steps):
            gap = 0.0
            if r["arm"] == "proxy-early":
                gap = gap_end if step <= end else gap_end + (gap_last - gap_end) * (step - end) / (STEPS - 1 - end)
            rows.append({"run": r["run"], "kind": r["kind"], "arm": r["arm"], "seed": r["seed"], "step": step,
                         "layer": "mean", "log_mean_cosine": -1 + gap + g.normal(0, noise),
                         "heldout_loss": 9.0 - 3.0 * i / (len(steps) - 1)})
    return pd.DataFrame(rows)


def progress_trajectory(table, slow_arm="proxy", lag=0.2, offset=0.0, seeds_noise=0.02, rng=0):
    """Trajectories along one curve ``ln cos = loss - 7 + offset`` (anisotropy falls as the loss falls):
    every arm's held-out loss goes from 9 down to 6, ``slow_arm``'s only to 6 + ``lag``, and
    ``slow_arm`` sits ``offset`` above the curve at every loss."""
    g = np.random.default_rng(rng)
    steps = probe_steps(STEPS, 14)
    rows = []
    for _, r in table.iterrows():
        end = 6.0 + (lag if r["arm"] == slow_arm else 0.0) + g.normal(0, 0.01)
        shift = (offset if r["arm"] == slow_arm else 0.0) + g.normal(0, seeds_noise)
        for i, step in enumerate(steps):
            loss = 9.0 - (9.0 - end) * i / (len(steps) - 1)
            rows.append({"run": r["run"], "kind": r["kind"], "arm": r["arm"], "seed": r["seed"], "step": step,
                         "layer": "mean", "log_mean_cosine": loss - 7 + shift, "heldout_loss": loss})
    return pd.DataFrame(rows)


def causal_status(t):
    """The status table of planted runs: every run committed, ten minutes each."""
    return pd.DataFrame({"run": t["run"], "kind": t["kind"], "committed": True, "minutes": 10.0})


def complete_causal(t, traj):
    """Every registered rule and the matched reading applied to a planted table and its trajectories, as
    :func:`causal.analyse_causal` applies them to committed runs (every seed complete)."""
    return causal.from_tables(t, traj, causal_status(t), interim=False)
