"""Reference values for Student's t at very many degrees of freedom.

A Satterthwaite combination of a variance with a negligible one (the
replica widening of a quantile gate whose replicas do not differ) gives
degrees of freedom of 1e38 and more; gonum's StudentsT loses all accuracy
there (its 95% quantile at 1e15 reads -0.14, at 1e20 105). These are
scipy's t.ppf refined by Newton steps on t.sf (as make_reference.py), and
t.sf, at such degrees of freedom. Run: python3 make_tquantile.py >
tquantile.json (Debian's python3-scipy).
"""
import json

import scipy
from scipy import stats


def t_quantile(p, df):
    # the Newton steps only where scipy's t.pdf is finite (past about
    # 1e15 degrees of freedom it overflows; t.ppf is the normal's there)
    q = stats.t.ppf(p, df)
    if df > 1e12:
        return q
    for _ in range(3):
        q += (stats.t.sf(q, df) - (1 - p)) / stats.t.pdf(q, df)
    return q


cases = []
for df in [5.0, 1e3, 1e5, 1e7, 1e9, 1e13, 1e15, 1e20, 1e38, 1e300]:
    for p in [0.95, 0.975, 0.995]:
        cases.append({"df": df, "p": p, "quantile": float(t_quantile(p, df))})
    for x in [1.0, 1.6448536269514722, 3.0]:
        cases.append({"df": df, "x": x, "sf": float(stats.t.sf(x, df))})
print(json.dumps({"scipy": scipy.__version__, "cases": cases}, indent=1))
