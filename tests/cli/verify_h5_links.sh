# HDF5 links that lead nowhere (a dangling soft link, an external link to
# a missing file: h5py's f[name] raises KeyError for both) are damage to
# verify, named with their targets, and a warning to info; a damaged chunk
# of a dataset reached through an external link names the file that holds
# its bytes (ext.h5), not only the linking one.
$PY -c "
import h5py, numpy as np
with h5py.File('ext.h5', 'w') as f:
    f.create_dataset('e', data=np.arange(6.), chunks=(3,), compression='gzip')
with h5py.File('lk.h5', 'w') as f:
    f.create_dataset('a', data=np.arange(5))
    f['ext'] = h5py.ExternalLink('ext.h5', '/e')
    f['dangling'] = h5py.SoftLink('/nope')
    f['dext'] = h5py.ExternalLink('nofile.h5', '/x')
o = h5py.File('ext.h5', 'r')['e'].id.get_chunk_info(0).byte_offset
b = bytearray(open('ext.h5', 'rb').read()); b[o + 2] ^= 0xff; b[o + 3] ^= 0xff
open('ext.h5', 'wb').write(b)" || exit 99
$CHUNKCTL info lk.h5 >/dev/null || echo "info failed" >&2
$CHUNKCTL verify --quiet lk.h5 >out
rc=$?
for want in "damaged: lk.h5: '/dangling' is a soft link to '/nope', which does not exist" \
    "damaged: lk.h5: '/dext' is an external link to nofile.h5:/x, which cannot be opened"; do
    grep -qxF "$want" out || echo "missing: $want" >&2
done
grep -q '^damaged: lk.h5:/ext: chunk (0) in [^ ]*ext.h5:/e: ' out ||
    echo "the external chunk's file is not named: $(grep ext: out)" >&2
grep -q '^lk.h5: 2 arrays, 3 chunks, .* 1 damaged, 2 named but missing$' out ||
    echo "summary: $(tail -1 out)" >&2
exit $rc
