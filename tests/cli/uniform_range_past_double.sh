# A uniform range whose width high - low is past the largest double wrote
# inf everywhere with exit 0; NumPy's Generator.uniform raises
# OverflowError ("high - low range exceeds valid bounds").  gen and the
# random step refuse it alike, and gen writes nothing; -1e308 to 0 fits.
$CHUNKCTL gen --quiet --shape 4 --low -1e308 --high 0 ok.h5:/x ||
    echo "[-1e308, 0) refused" >&2
$CHUNKCTL gen --quiet --shape 4 --low -1e308 --high 1e308 g.h5:/x
echo "gen: exit $?" >&2
test -e g.h5 && echo "gen wrote g.h5" >&2
cat > p.json <<'J'
{"steps": [{"name": "y", "op": "random", "shape": [4], "low": -1e308,
            "high": 1e308}], "print": ["y"]}
J
$CHUNKCTL run --quiet p.json
