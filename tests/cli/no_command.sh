# An unknown command is a usage error.
$CHUNKCTL frobnicate
