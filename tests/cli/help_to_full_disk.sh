# --help to a full disk fails as any command's output does (exit 1).
$CHUNKCTL --help >/dev/full
