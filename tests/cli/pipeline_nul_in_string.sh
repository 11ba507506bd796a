# cJSON cuts a string at an escaped NUL, so "sum\u0000zz" ran as sum,
# "s\u0000zz" named the step s and "a.h5\u0000zz:/x" read a.h5, all with
# exit 0.  A key or string value holding \u0000 is refused, naming where;
# an escaped backslash before u0000 is not a NUL.
$CHUNKCTL gen --quiet --shape 3 a.h5:/x || exit 99
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "r\\u0000",
 "op": "sum", "args": ["x"]}], "print": ["r\\u0000"]}' > ok.json
$CHUNKCTL run --quiet ok.json >/dev/null || echo "ok.json refused" >&2
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "r",
 "op": "sum\u0000zz", "args": ["x"]}], "print": ["r"]}' > op.json
$CHUNKCTL run --quiet op.json
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "s\u0000zz",
 "op": "sum", "args": ["x"]}], "print": ["s"]}' > name.json
$CHUNKCTL run --quiet name.json
printf '%s' '{"inputs": {"x": "a.h5\u0000zz:/x"}, "steps": [{"name": "s",
 "op": "sum", "args": ["x"]}], "print": ["s"]}' > input.json
$CHUNKCTL run --quiet input.json
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "s",
 "op": "sum", "args": ["x"], "ax\u0000is": 0}], "print": ["s"]}' > key.json
$CHUNKCTL run --quiet key.json
