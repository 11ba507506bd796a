# A pipeline's random step with dist "integers" refuses bounds NumPy's
# Generator.integers refuses (past the dtype's range), as gen does, where
# it clipped every negative draw of a uint8 to 0; [0, 256) fits uint8.
cat > ok.json <<'J'
{"steps": [{"name": "y", "op": "random", "shape": [5], "dist": "integers",
            "low": 0, "high": 256, "dtype": "uint8"}], "print": ["y"]}
J
$CHUNKCTL run --quiet ok.json >/dev/null || echo "[0, 256) refused" >&2
cat > p.json <<'J'
{"steps": [{"name": "y", "op": "random", "shape": [20], "dist": "integers",
            "low": -5, "high": 5, "dtype": "uint8"}], "print": ["y"]}
J
$CHUNKCTL run --quiet p.json
