#!/usr/bin/python3
"""Coverage and width of variance estimators for the paired attainment
difference (stats.PairedDiffOfRatios) on the arms of TestPairedBatchCount:
two arms share a traffic wave, each carries its own AR(1) slowdown per
bucket (innovation amp, lag-1 autocorrelation phi) on top of binomial
noise, 180 buckets of ~200 requests at attainment ~93%.

Estimators (d = paired per-bucket residual differences, summing to 0):
  nbm6   6 non-overlapping batches, Student's t with 5 df (the method used)
  obm6   overlapping batch means over windows of 30 buckets
         (Meketon-Schmeiser), t with 1.5*(6-1) = 7.5 df
  l1q18  18 batches of 10 buckets plus twice the lag-1 covariance of the
         batch sums (a rectangular lag window on batch sums)
For obm6 and l1q18 the critical value is also simulated exactly for iid
normal buckets (printed), the best case for any fixed-b approximation.

Each row: coverage of 0 (nominal 90%) and mean half-width over 1.645 times
the SD of the estimate across replicates ("width").
Run: /usr/bin/python3 paired_alternatives.py > paired_alternatives.txt"""
import numpy as np
import scipy
from scipy import stats

from pairedarms import B, REPS, arms, batch_sums

rng = np.random.default_rng(1)


def nbm(d, q=6):
    D = batch_sums(d, q)
    return q / (q - 1) * (D ** 2).sum(1)


def obm(d, q=6):
    b = d.shape[1]
    m = b // q
    c = np.concatenate([np.zeros((d.shape[0], 1)), np.cumsum(d, 1)], 1)
    W = c[:, m:] - c[:, :-m]
    return b * b / ((b - m + 1) * (b - m) * m) * (W ** 2).sum(1)


def l1(d, q=18):
    D = batch_sums(d, q)
    D = D - D.mean(1, keepdims=True)
    return np.maximum((D ** 2).sum(1) + 2 * (D[:, 1:] * D[:, :-1]).sum(1), 0)


def iid_cv(f):
    z0 = np.random.default_rng(7).normal(size=(40000, B))
    z = z0 - z0.mean(1, keepdims=True)
    return float(np.quantile(np.abs(z0.sum(1)) / np.sqrt(np.maximum(f(z), 1e-300)), 0.9))


cvs = {"nbm6": stats.t.ppf(0.95, 5), "obm6": stats.t.ppf(0.95, 7.5), "l1q18": iid_cv(l1)}
print(f"scipy {scipy.__version__}; critical values: nbm6 t5 {cvs['nbm6']:.3f}, obm6 t7.5 {cvs['obm6']:.3f} "
      f"(iid-exact {iid_cv(obm):.3f}), l1q18 iid-exact {cvs['l1q18']:.3f}")
print(f"{REPS} replicates per row; coverage Monte Carlo SE about 0.5 pp")
for amp, phi in [(0.0, 0.8), (0.01, 0.5), (0.01, 0.8), (0.006, 0.9), (0.01, 0.9)]:
    pt, d = arms(rng, amp, phi)
    row = []
    for name, f in [("nbm6", nbm), ("obm6", obm), ("l1q18", l1)]:
        h = cvs[name] * np.sqrt(f(d))
        row.append(f"{name} coverage {100 * np.mean(np.abs(pt) <= h):5.1f}% width {np.mean(h) / (1.645 * pt.std()):.3f}")
    print(f"amp {amp:.3f} phi {phi:.1f}: " + " | ".join(row))
