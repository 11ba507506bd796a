# A sharded v3 array whose sharding_indexed lacks index_codecs (required by
# the sharding spec): the error names the missing key, not 'codecs'.
$CHUNKCTL gen --quiet --shape 8,8 --chunks 4,4 --zarr-format 3 --shards 8,8 a.zarr || exit 99
$PY -c "
import json
m = json.load(open('a.zarr/zarr.json'))
del m['codecs'][0]['configuration']['index_codecs']
json.dump(m, open('a.zarr/zarr.json', 'w'))" || exit 98
$CHUNKCTL info a.zarr
