"""HDF5 zstd chunks (filter 32015) checked without chunkctl's plugin.

test_write.py reads chunkctl's zstd files through libh5zstd.so, chunkctl's
own filter: a format error made the same way on both sides (a header
before the frame, a level in the wrong cd_values slot) would pass there.
Here no HDF5 plugin can load (CK_H5_NO_PLUGINS, see _common): h5py hands
over each chunk's stored bytes with read_direct_chunk, and numcodecs'
Zstd (Debian's, on libzstd) decodes them as one plain zstd frame.  The
other way, chunks that numcodecs compressed and h5py stored with
write_direct_chunk under filter 32015 are read by chunkctl.
"""

import itertools
import json
import os

os.environ["CK_H5_NO_PLUGINS"] = "1"  # before _common loads h5py

import _common as C  # noqa: E402
from _common import np, h5py  # noqa: E402
from numcodecs import Zstd  # noqa: E402

H5_SHUFFLE, H5_ZSTD = 2, 32015
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # RFC 8878, 3.1.1
SHAPE = (45, 67)    # 3 x 5 chunks of 16 x 16, the last row and column partial
CHUNKS = (16, 16)


def chunk_starts(shape, chunks):
    """The offset of every chunk of the grid, C order."""
    return list(itertools.product(
        *(range(0, s, c) for s, c in zip(shape, chunks))))


def region(start, chunks, shape):
    """The part of the array a chunk at 'start' holds (edge chunks are
    stored whole in HDF5; the rest of them is padding)."""
    return tuple(slice(o, min(o + c, s))
                 for o, c, s in zip(start, chunks, shape))


def unshuffle(raw, itemsize):
    """Undoes HDF5's shuffle filter (H5Zshuffle.c): byte j of element i is
    stored at j * n + i."""
    b = np.frombuffer(raw, dtype=np.uint8)
    n = len(b) // itemsize
    return b.reshape(itemsize, n).T.tobytes()


class ZstdChunks(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.want = {
            "f8": C.make_data("<f8", SHAPE, 1801),
            "i2_be": C.make_data(">i2", SHAPE, 1802),
            "u4": C.make_data("<u4", SHAPE, 1803),
        }
        cls.src = cls.path("src.h5")
        with h5py.File(cls.src, "w") as f:
            for name, a in cls.want.items():
                f.create_dataset(name, data=a, chunks=CHUNKS)

    def check_plugins_absent(self, d):
        """Reading through HDF5's pipeline must fail in this process: the
        decoding below is numcodecs', not a plugin's."""
        with self.assertRaises(OSError, msg="a zstd plugin is loaded"):
            d[()]

    def decode_chunks(self, d, want, level, shuffle=False):
        """Every stored chunk of d: one plain zstd frame that numcodecs
        decodes to the chunk's full size, equal to 'want' where it holds
        data."""
        plist = d.id.get_create_plist()
        ids = C.h5_filter_ids(d)
        self.assertEqual(ids, [H5_SHUFFLE, H5_ZSTD] if shuffle else
                         [H5_ZSTD], "filter pipeline")
        fid, _flags, cd, _name = plist.get_filter(len(ids) - 1)
        self.assertEqual(fid, 32015, "zstd filter id")
        self.assertGreaterEqual(len(cd), 1, "cd_values %r" % (cd,))
        self.assertEqual(cd[0], level, "cd_values[0] is the level")
        self.assertEqual(d.chunks, CHUNKS)
        nbytes = int(np.prod(CHUNKS)) * d.dtype.itemsize
        starts = chunk_starts(d.shape, CHUNKS)
        self.assertEqual(d.id.get_num_chunks(), len(starts), "chunks stored")
        for start in starts:
            with self.subTest(chunk=start):
                mask, raw = d.id.read_direct_chunk(start)
                self.assertEqual(mask, 0, "filter mask: every filter ran")
                self.assertEqual(raw[:4], ZSTD_MAGIC,
                                 "a zstd frame from the first byte")
                dec = bytes(Zstd().decode(raw))
                self.assertEqual(len(dec), nbytes, "decoded chunk size")
                if shuffle:
                    dec = unshuffle(dec, d.dtype.itemsize)
                got = np.frombuffer(dec, dtype=d.dtype).reshape(CHUNKS)
                reg = region(start, CHUNKS, d.shape)
                inner = tuple(slice(0, r.stop - r.start) for r in reg)
                self.assertSameArray(got[inner], want[reg],
                                     "chunk %s" % (start,))

    def test_copy_to_zstd_decodes_with_numcodecs(self):
        for spec, level, shuffle in (("zstd:3", 3, False),
                                     ("zstd:1:shuffle", 1, True),
                                     ("zstd:19", 19, False)):
            with self.subTest(compress=spec):
                out = self.fresh("c_%s.h5" % spec.replace(":", "_"))
                C.copy(self.src, out, "--compress", spec)
                with h5py.File(out, "r") as f:
                    for name, want in sorted(self.want.items()):
                        with self.subTest(compress=spec, name=name):
                            self.decode_chunks(f[name], want, level, shuffle)
                    self.check_plugins_absent(f["f8"])

    def test_gen_default_is_zstd_numcodecs_reads(self):
        """gen's default compression is zstd:3; its chunks decode to what
        the same seed writes uncompressed (read by h5py, no filter)."""
        args = ("--shape", "45,67", "--chunks", "16,16", "--seed", "8",
                "--dist", "normal")
        z = self.fresh("gen_z.h5")
        plain = self.fresh("gen_plain.h5")
        C.gen(z + ":/x", *args)
        C.gen(plain + ":/x", *args, "--compress", "none")
        with h5py.File(plain, "r") as f:
            self.assertEqual(C.h5_filter_ids(f["x"]), [])
            want = f["x"][()]
        self.assertGreater(len(np.unique(want)), 1000, "values vary")
        with h5py.File(z, "r") as f:
            self.decode_chunks(f["x"], want, 3)

    def test_numcodecs_chunks_read_by_chunkctl(self):
        """Frames from numcodecs' Zstd, stored with write_direct_chunk
        under filter 32015 (level 5 in cd_values[0]): chunkctl copies them
        to an uncompressed file equal to the arrays, and sums them."""
        src = self.fresh("numcodecs.h5")
        with h5py.File(src, "w") as f:
            for name, a in sorted(self.want.items()):
                d = f.create_dataset(name, shape=a.shape, dtype=a.dtype,
                                     chunks=CHUNKS, compression=H5_ZSTD,
                                     compression_opts=(5,),
                                     allow_unknown_filter=True)
                self.assertEqual(C.h5_filter_ids(d), [H5_ZSTD])
                for start in chunk_starts(a.shape, CHUNKS):
                    full = np.zeros(CHUNKS, dtype=a.dtype)
                    reg = region(start, CHUNKS, a.shape)
                    full[tuple(slice(0, r.stop - r.start) for r in reg)] = \
                        a[reg]
                    frame = Zstd(level=5).encode(full.tobytes())
                    d.id.write_direct_chunk(start, frame, 0)
            self.check_plugins_absent(f["f8"])
        out = self.fresh("numcodecs_plain.h5")
        C.copy(src, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            for name, want in sorted(self.want.items()):
                with self.subTest(name=name):
                    self.assertEqual(C.h5_filter_ids(f[name]), [])
                    self.assertSameArray(f[name][()], want, name)
        # an integer sum is exact: a second reader of the same chunks
        p = C.run("reduce", "--quiet", "--json", "sum", src + ":/u4")
        res = json.loads(p.stdout)["result"]
        self.assertEqual(res["dtype"], "uint64")
        self.assertEqual(res["values"],
                         [int(self.want["u4"].sum(dtype=np.uint64))])


if __name__ == "__main__":
    C.main()
