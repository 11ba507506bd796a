# Bins by name over a bool array are NumPy's, which takes bool as uint8
# (0 and 1): fd and auto were refused ("nanquantile of a bool array").
# Edges and counts are compared with numpy.histogram for every rule.
$PY - <<'PY' || exit 99
import h5py, numpy as np
b = np.random.default_rng(1).random(1000) < 0.3
with h5py.File("b.h5", "w") as f:
    f.create_dataset("b", data=b, chunks=(300,))
PY
for bins in auto fd scott rice sturges sqrt 3; do
    $CHUNKCTL histogram b.h5:/b --bins $bins --json >"$bins.json" || continue
    $PY - "$bins" <<'PY'
import json, sys, warnings, h5py, numpy as np
rule = sys.argv[1]
bins = int(rule) if rule.isdigit() else rule
with h5py.File("b.h5") as f:
    b = f["b"][...]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Converting input from bool"
    counts, edges = np.histogram(b, bins=bins)
got = json.load(open(rule + ".json"))["histogram"]
if got["counts"] != counts.tolist() or got["edges"] != edges.tolist():
    print("%s: %s, numpy %s %s" % (rule, got, counts.tolist(),
                                   edges.tolist()), file=sys.stderr)
PY
done
