#!/usr/bin/python3
"""Writes ew_types.inc and ew_cases.inc, the NumPy answers that
tests/ops/test_ew.c checks chunkctl's elementwise ops against.

Run with Debian 12's /usr/bin/python3 and python3-numpy (1.24.2):
    cd tests/data/ops && /usr/bin/python3 ew_gen.py
Deterministic: no random inputs, so no seed.  chunkctl has no float16; where
NumPy answers float16 the files say float32 (see ops/ew.c)."""
import math
import warnings

import numpy as np

warnings.simplefilter("ignore")
assert np.__version__.startswith("1.24"), np.__version__

CHARS = "?bhilBHILfd"  # NumPy's type chars, in the order of the columns
DTYPES = [np.dtype(c) for c in CHARS]
CK = {"?": "CK_BOOL", "b": "CK_I8", "h": "CK_I16", "i": "CK_I32",
      "l": "CK_I64", "B": "CK_U8", "H": "CK_U16", "I": "CK_U32",
      "L": "CK_U64", "f": "CK_F32", "d": "CK_F64"}
UNARY = ["negative", "abs", "sqrt", "exp", "log", "log1p", "expm1", "sin",
         "cos", "tan", "tanh", "floor", "ceil", "round", "isnan", "isfinite",
         "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "minimum",
          "maximum", "less", "less_equal", "greater", "greater_equal",
          "equal", "not_equal", "logical_and", "logical_or"]
COMPARE = {"less", "less_equal", "greater", "greater_equal", "equal",
           "not_equal"}
NP_NAME = {"abs": "absolute", "divide": "true_divide"}
# Python scalars: JSON integers, then non-integral numbers.
SCALARS = [0, 1, 127, 128, 255, 256, 300, 32767, 32768, 65535, 65536,
           2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63, -1, -128, -129,
           -32768, -32769, -2**31, -2**31 - 1, -2**63,
           1.5, -1.5, 65000.0, 1e10, 3.3e38, 3.4e38, 1e39, -1e39, math.inf,
           math.nan]


def call(op, *args):
    if op == "round":
        return np.round(*args)
    if op == "where":
        return np.where(np.array([True, False, True]), *args)
    return getattr(np, NP_NAME.get(op, op))(*args)


def char(dt):
    dt = np.dtype(dt)
    if dt == np.float16:
        dt = np.dtype(np.float32)
    if dt == np.longlong:
        dt = np.dtype(np.int_)
    if dt == np.ulonglong:
        dt = np.dtype(np.uint)
    return dt.char


def out_char(op, args):
    """The dtype char NumPy gives (for comparisons: the dtype compared in,
    np.result_type), '-' where it raises TypeError."""
    try:
        if op in COMPARE:
            call(op, *args)
            return char(np.result_type(*args))
        try:
            return char(call(op, *args).dtype)
        except ValueError:  # integers to negative integer powers
            return char(np.power(*args, where=np.zeros(3, bool)).dtype)
    except TypeError:
        return "-"


def arr(c):
    return np.ones(3, dtype=c)


def c_double(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def write_types(f):
    f.write("/* Made by ew_gen.py from NumPy %s; do not edit. */\n" %
            np.__version__)
    f.write("/* Unary ops: output dtype char for inputs %s. */\n" % CHARS)
    f.write("static const struct unary_row {\n    const char *op, *out;\n"
            "} unary_types[] = {\n")
    for op in UNARY:
        f.write('    {"%s", "%s"},\n' % (op, "".join(
            out_char(op, [arr(c)]) for c in CHARS)))
    f.write("};\n\n")
    f.write("/* Binary ops and where on two arrays: first dtype char, then "
            "the output\n * dtype char (comparisons: np.result_type) for each "
            "second dtype %s. */\n" % CHARS)
    f.write("static const struct binary_row {\n    const char *op;\n"
            "    char a;\n    const char *out;\n} binary_types[] = {\n")
    for op in BINARY + ["where"]:
        for a in CHARS:
            f.write('    {"%s", \'%s\', "%s"},\n' % (op, a, "".join(
                out_char(op, [arr(a), arr(b)]) for b in CHARS)))
    f.write("};\n\n")
    f.write("/* Python scalars, in the order of the columns below; 1: an "
            "integral JSON\n * number (CK_I64), 0: not (CK_F64). */\n")
    f.write("static const struct {\n    double value;\n    int integral;\n"
            "} scalars[] = {\n")
    for v in SCALARS:
        f.write("    {%s, %d},\n" % (
            c_double(v) if isinstance(v, float) else "%d.0" % v,
            isinstance(v, int)))
    f.write("};\n\n")
    f.write("/* An array of dtype char a with each scalar above, the array "
            "first or\n * (scalar_first) second: output dtype chars. */\n")
    f.write("static const struct scalar_row {\n    const char *op;\n"
            "    char a;\n    int scalar_first;\n    const char *out;\n"
            "} scalar_types[] = {\n")
    for op in BINARY + ["where"]:
        for a in CHARS:
            for first in (0, 1):
                cols = []
                for v in SCALARS:
                    args = [v, arr(a)] if first else [arr(a), v]
                    cols.append(out_char(op, args))
                f.write('    {"%s", \'%s\', %d, "%s"},\n' % (
                    op, a, first, "".join(cols)))
    f.write("};\n")


# Kernel values: every op on these five input dtypes.
N = 8
INPUTS = {
    "d": ([1.5, -2.5, 0.0, 2.5, math.inf, math.nan, -math.inf, 0.5],
          [2.0, -2.5, 3.0, math.nan, math.inf, 1.0, 2.0, -4.0]),
    "f": ([1.5, -2.5, 0.0, 2.5, math.inf, math.nan, -math.inf, 0.5],
          [2.0, -2.5, 3.0, math.nan, math.inf, 1.0, 2.0, -4.0]),
    "i": ([0, 1, -7, 2**31 - 1, -2**31, 100, 3, -1],
          [5, 3, 2, 1, 2, 7, 0, 31]),
    "B": ([0, 1, 255, 128, 7, 200, 3, 2],
          [1, 255, 1, 128, 3, 100, 0, 8]),
    "?": ([0, 1, 0, 1, 1, 0, 1, 0],
          [0, 0, 1, 1, 1, 1, 0, 0]),
}
COND = [1, 0, 1, 1, 0, 0, 1, 0]
# Within a few ulps, not exactly: libm and NumPy's SIMD loops may differ.
INEXACT = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
           "power"}


def case(f, op, specs, note):
    """specs: (char, values) for arrays, (None, python scalar) for
    scalars."""
    args = []
    for c, v in specs:
        args.append(np.array(v, dtype=c) if c else v)
    if op == "where":
        cond = np.array(COND, dtype=bool)
        args_np = [cond] + args
        res = np.where(*args_np)
        specs = [("?", COND)] + specs
    else:
        try:
            res = call(op, *args)
        except TypeError:
            return
    if res.dtype == np.float16:
        # chunkctl computes these in float32: NumPy's float32 answer.
        args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a
                for a in args]
        res = call(op, *args)
        note += " (numpy: float16)"
    res = np.broadcast_to(res, (N,))
    rc = char(res.dtype)
    ops = []
    for c, v in specs:
        if c:
            ops.append("{%s, 0, {%s}}" % (CK[c], ", ".join(
                c_double(x) for x in v)))
        else:
            ops.append("{%s, 1, {%s}}" % (
                "CK_I64" if isinstance(v, int) else "CK_F64", c_double(v)))
    f.write("    {/* %s */\n     \"%s\",\n     {%s},\n     %s,\n"
            "     {%s},\n     %d},\n" % (
                note, op, ", ".join(ops), CK[rc], ", ".join(
                    c_double(float(x)) for x in res.astype(np.float64)),
                op in INEXACT))


def write_cases(f):
    f.write("/* Made by ew_gen.py from NumPy %s; do not edit. */\n" %
            np.__version__)
    f.write("static const ew_case ew_cases[] = {\n")
    for c, (a, b) in INPUTS.items():
        for op in UNARY:
            case(f, op, [(c, a)], "%s on %s" % (op, np.dtype(c).name))
        for op in BINARY:
            bb = [abs(x) for x in b] if op == "power" else b
            case(f, op, [(c, a), (c, bb)], "%s on %s" % (
                op, np.dtype(c).name))
        case(f, "where", [(c, a), (c, b)], "where on %s" % np.dtype(c).name)
    # Stride 0: Python scalars, value-based casting, broadcasting.
    i32, u8 = INPUTS["i"][0], INPUTS["B"][0]
    i8 = [0, 1, -7, 127, -128, 100, 3, -1]
    f32 = INPUTS["f"][0]
    for op, specs, note in [
            ("add", [("i", i32), (None, 1)], "int32 + 1 stays int32"),
            ("add", [("b", i8), (None, 300)], "int8 + 300 is int16"),
            ("add", [("b", i8), (None, 1)], "int8 + 1 wraps in int8"),
            ("subtract", [(None, 1), ("B", u8)], "1 - uint8 wraps"),
            ("add", [("B", u8), (None, -1)], "uint8 + -1 is int16"),
            ("multiply", [("f", f32), (None, 1.5)], "float32 * 1.5"),
            ("add", [("i", i32), (None, 1.5)], "int32 + 1.5 is float64"),
            ("add", [("?", INPUTS["?"][0]), (None, 1)], "bool + 1 is int64"),
            ("less", [("B", u8), (None, 300)], "uint8 < 300"),
            ("greater", [("B", u8), (None, -1)], "uint8 > -1"),
            ("power", [("i", i32), (None, 2)], "int32 ** 2"),
            ("power", [(None, 2), ("B", [0, 1, 2, 3, 7, 8, 9, 10])],
             "2 ** uint8"),
            ("divide", [("i", i32), (None, 4)], "int32 / 4"),
            ("maximum", [("f", f32), (None, math.nan)], "maximum with nan"),
            ("where", [("i", i32), (None, -1)], "where(c, int32, -1)"),
            ("where", [(None, 2.5), ("f", f32)], "where(c, 2.5, float32)"),
            ("add", [(None, 2), (None, 3)], "2 + 3 on every element"),
    ]:
        case(f, op, specs, note)
    f.write("};\n")


with open("ew_types.inc", "w") as out:
    write_types(out)
with open("ew_cases.inc", "w") as out:
    write_cases(out)
