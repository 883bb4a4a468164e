"""The paired arms both lagwindow.py and paired_alternatives.py simulate,
and the batch sums they are judged on (imported by both; not run alone).

arms(rng, amp, phi) draws REPS runs of B buckets of about 200 requests per
arm; attainment about 93% moves with a traffic wave both arms share
(amplitude 3 pp, a random phase per run) and with each arm's own AR(1)
slowdown (innovation amp, coefficient phi), plus binomial noise. It
returns each run's difference of attainment and its per-bucket residual
differences (each arm's good minus its run's ratio times its requests,
over its requests), whose batch sums the paired variances read."""
import numpy as np

REPS, B = 4000, 180


def arms(rng, amp, phi):
    sd = amp / np.sqrt(1 - phi ** 2) if amp > 0 else 0.0
    s = rng.normal(0, 1, (REPS, 2)) * sd
    n = 200 + np.round(rng.normal(0, 14, (REPS, B, 2)))
    phase = rng.uniform(0, 6, REPS)
    num = np.empty((REPS, B, 2))
    for i in range(B):
        s = phi * s + amp * rng.normal(0, 1, (REPS, 2))
        p = np.minimum(1, 0.93 + 0.03 * np.sin(i / 20 + phase)[:, None] + s)
        num[:, i, :] = n[:, i, :] * p + rng.normal(0, 1, (REPS, 2)) * np.sqrt(n[:, i, :] * p * (1 - p))
    r = num.sum(1) / n.sum(1)
    e = (num - r[:, None, :] * n) / n.sum(1)[:, None, :]
    return r[:, 0] - r[:, 1], e[:, :, 0] - e[:, :, 1]


def batch_sums(d, q):
    edges = [g * d.shape[1] // q for g in range(q + 1)]
    return np.stack([d[:, edges[g]:edges[g + 1]].sum(1) for g in range(q)], 1)
