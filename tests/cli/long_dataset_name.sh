# A dataset name longer than the room for it (512 bytes) beside a short
# file name: refused as too long, exit 2.  It was copied into a buffer
# sized for a path (PATH_MAX): a stack overflow under ASan.
long=$(head -c 2000 /dev/zero | tr '\0' x)
printf '{"inputs": {"x": "a.h5:/%s"}, "steps": [], "print": ["x"]}' \
    "$long" > p.json
$CHUNKCTL run p.json
