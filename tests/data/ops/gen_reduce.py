#!/usr/bin/python3
"""Writes reduce_cases.txt: reductions computed by NumPy (1.24) for
tests/ops/test_reduce.c.  Run with Debian's /usr/bin/python3; seed 20240601.

Format, one record per line, whitespace separated:
  array <id> <dtype> <ndim> <shape...> <values...>      (values: repr)
  case <id> <op> <axes-mask> <ddof> <result-dtype> raise
  case <id> <op> <axes-mask> <ddof> <result-dtype> <warn 0/1> <values...>
"""
import itertools
import warnings

import numpy as np

rng = np.random.default_rng(20240601)
OPS = ["sum", "prod", "min", "max", "mean", "var", "std", "argmin",
       "argmax", "count_nonzero", "any", "all", "nansum", "nanmean",
       "nanmin", "nanmax", "nanvar", "nanstd"]


def make(dtype, shape, nan):
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.startswith("float"):
        # one decimal in [-3, 3]: ties and zeros happen
        a = np.round(rng.uniform(-3, 3, n), 1).astype(dtype)
        if nan:
            a[rng.random(n) < 0.2] = np.nan
        return a.reshape(shape)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -20), min(info.max, 20)
    if dtype in ("int64", "uint64"):  # large values: sums and products wrap
        lo, hi = (info.min // 4, info.max // 4) if dtype == "int64" \
            else (0, info.max // 2)
    return rng.integers(lo, hi, n, dtype=dtype, endpoint=True).reshape(shape)


def fmt(v):
    return repr(float(v)) if isinstance(v, (float, np.floating)) \
        else str(int(v))


lines = []
aid = 0
for dtype in ["float64", "float32", "int32", "uint8", "bool", "int64",
              "uint64", "int8"]:
    shapes = [(7, 5), (6,), (2, 3, 1, 4)]
    if dtype in ("float64", "int32"):
        shapes.append((3, 4, 5))
    for shape in shapes:
        for nan in ([False, True] if dtype.startswith("float") else [False]):
            a = make(dtype, shape, nan)
            aid += 1
            lines.append("array %d %s %d %s %s" % (
                aid, dtype, a.ndim, " ".join(map(str, shape)),
                " ".join(fmt(v) for v in a.ravel())))
            nd = a.ndim
            for r in range(0, nd + 1):
                for axes in itertools.combinations(range(nd), r):
                    mask = sum(1 << d for d in axes)
                    for op in OPS:
                        if op.startswith("arg") and len(axes) not in (1, nd):
                            continue
                        if op.startswith("arg") and len(axes) == 0:
                            continue
                        ddofs = [0, 1] if "var" in op or "std" in op else [0]
                        for ddof in ddofs:
                            f = getattr(np, op)
                            kw = {}
                            if op.startswith("arg"):
                                kw = {"axis": axes[0]} if len(axes) == 1 \
                                    and nd > 1 else {}
                            elif op == "count_nonzero":
                                kw = {"axis": axes}
                            else:
                                kw = {"axis": axes}
                            if ddof:
                                kw["ddof"] = ddof
                            with warnings.catch_warnings(record=True) as w:
                                warnings.simplefilter("always")
                                try:
                                    res = np.asarray(f(a, **kw))
                                except ValueError:
                                    lines.append("case %d %s %d %d - raise" % (
                                        aid, op, mask, ddof))
                                    continue
                            warn = int(any(issubclass(x.category,
                                                      RuntimeWarning)
                                           for x in w))
                            if op == "count_nonzero":
                                res = res.astype(np.int64)
                            lines.append("case %d %s %d %d %s %d %s" % (
                                aid, op, mask, ddof, res.dtype.name, warn,
                                " ".join(fmt(v) for v in res.ravel())))

with open("reduce_cases.txt", "w") as fh:
    fh.write("\n".join(lines) + "\n")
print(len(lines), "lines")
