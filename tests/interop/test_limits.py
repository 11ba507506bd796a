"""Limits (issue 17): inputs that ask for absurd resources are refused
before anything is allocated, in one line naming the limit and where it
was hit (chunkctl(1), LIMITS):

- more than 2^53 elements in an array or a pipeline step (a 2^62-element
  Zarr v2/v3 array or HDF5 dataset, a shape whose product overflows int64,
  gen --shape, broadcast_to);
- more than 4 GiB in one chunk (Zarr v2 chunks, Zarr v3 chunk_grid and
  sharding inner chunks, gen --chunks);
- a pipeline file over 16 MiB, more than 256 steps, more than 10^6 JSON
  values;
- JSON nested deeper than 512 levels (pipelines, .zarray, .zattrs,
  zarr.json), which must not overflow the stack under ASan either.

Each case checks the exit status, the one line on stderr, that nothing is
left behind, and that the children's peak RSS stays small.
"""
import json
import os
import resource
import unittest

import _common as C
from _common import np, h5py

BIG = 2 ** 31             # (BIG, BIG): 2^62 elements
HUGE = [2 ** 40] * 3      # 2^120 elements: overflows int64
ELEMS = "2^53"            # words of the element limit
CHUNK = "4 GiB"           # ... of the chunk limit
DEPTH = "512 levels"      # ... of the nesting limit
DEEP = 10 ** 5            # nesting of the hostile JSON
RSS_MAX_KB = 200 * 1024   # peak RSS of any chunkctl run here


def zarray(path, shape, chunks, dtype="<f8", text=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, ".zarray"), "w") as f:
        f.write(text if text is not None else json.dumps({
            "zarr_format": 2, "shape": shape, "chunks": chunks,
            "dtype": dtype, "compressor": None, "fill_value": 0,
            "order": "C", "filters": None}))


def zarr3(path, shape, chunks, inner=None, text=None):
    os.makedirs(path, exist_ok=True)
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if inner:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs,
            "index_codecs": [{"name": "bytes",
                              "configuration": {"endian": "little"}},
                             {"name": "crc32c"}]}}]
    with open(os.path.join(path, "zarr.json"), "w") as f:
        f.write(text if text is not None else json.dumps({
            "zarr_format": 3, "node_type": "array", "shape": shape,
            "data_type": "uint8",
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": codecs}))


def deep_list(n=DEEP):
    return "[" * n + "]" * n


def deep_object(n=DEEP):
    return '{"a":' * n + "1" + "}" * n


class Limits(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        p = cls.path
        # 2^62 elements: uint8 so that the bytes still fit int64 and only
        # the element limit can refuse it.
        zarray(p("big2.zarr"), [BIG, BIG], [1000, 1000], "|u1")
        zarray(p("huge2.zarr"), HUGE, [1000] * 3)
        zarr3(p("big3.zarr"), [BIG, BIG], [1000, 1000])
        zarr3(p("huge3.zarr"), HUGE, [1000] * 3)
        with h5py.File(p("big.h5"), "w") as f:
            # h5py makes it without allocating (nothing is written).
            f.create_dataset("x", shape=(BIG, BIG), chunks=(1000, 1000),
                             dtype="u1")
        # 2^40-byte chunks (2^20 x 2^20 uint8 or 2^20 x 2^17 float64).
        zarray(p("chunk2.zarr"), [2 ** 20, 2 ** 20], [2 ** 20, 2 ** 17])
        zarr3(p("chunk3.zarr"), [2 ** 20, 2 ** 20], [2 ** 20, 2 ** 20])
        zarr3(p("inner3.zarr"), [2 ** 20, 2 ** 20], [2 ** 20, 2 ** 20],
              inner=[2 ** 20, 2 ** 20])
        with h5py.File(p("small.h5"), "w") as f:
            f.create_dataset("x", data=np.arange(16.0).reshape(4, 4),
                             chunks=(2, 2))
        # JSON nested 10^5 deep in each metadata file.
        zarray(p("deep2.zarr"), None, None,
               text='{"zarr_format": 2, "shape": ' + deep_list() + "}")
        zarray(p("attrs2.zarr"), [4], [2])
        with open(p("attrs2.zarr", ".zattrs"), "w") as f:
            f.write('{"a": ' + deep_object() + "}")
        zarr3(p("deep3.zarr"), None, None,
              text='{"zarr_format": 3, "attributes": ' + deep_object() + "}")

    def setUp(self):
        self.out = self.fresh("out-%s.h5" % self._testMethodName)
        self.outz = self.fresh("out-%s.zarr" % self._testMethodName)

    def refused(self, code, needles, *args):
        """chunkctl args fails with code, one line naming needles, leaves
        no output, and stays small."""
        p = C.run(*args, expect=None)
        self.assertCleanError(p, code, *needles)
        for out in (self.out, self.outz):
            self.assertFalse(os.path.exists(out), "output left behind")
        left = [e for e in os.listdir(self.tmp) if "ck-tmp" in e]
        self.assertEqual(left, [], "temporaries left behind")
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertLess(rss, RSS_MAX_KB, "peak RSS of a child (kB)")
        return p

    def pipeline(self, name, doc=None, text=None):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text if text is not None else json.dumps(doc))
        return path

    def sum_of(self, src):
        return self.pipeline("sum-%s.json" % os.path.basename(src), {
            "inputs": {"x": src},
            "steps": [{"name": "s", "op": "sum", "args": ["x"]}],
            "outputs": {"s": self.out + ":/s"}})

    # -- 1. more than 2^53 elements --------------------------------------

    def test_elements_refused_by_every_command(self):
        for name in ("big2.zarr", "huge2.zarr", "big3.zarr", "huge3.zarr",
                     "big.h5:/x"):
            with self.subTest(array=name):
                src = self.path(name)
                where = name.split(":")[0]
                self.refused(1, (ELEMS, where), "info", src)
                self.refused(1, (ELEMS, where), "copy", "--quiet", src,
                             self.outz)
                self.refused(1, (ELEMS, where), "run", "--quiet",
                             self.sum_of(src))
                if "huge" not in name:
                    self.refused(1, (ELEMS, where), "svd", "--quiet", src,
                                 "-o", self.out)
                self.refused(1, (ELEMS, where), "sum", src, "-o",
                             self.out + ":/s")

    def test_gen_shape_is_a_usage_error(self):
        for shape in ("%d,%d" % (BIG, BIG), ",".join(map(str, HUGE))):
            with self.subTest(shape=shape):
                self.refused(2, (ELEMS, "--shape", "out-"), "gen", "--quiet",
                             "--dtype", "uint8", "--shape", shape, self.out)

    def test_pipeline_step_over_the_limit(self):
        doc = {"inputs": {"x": self.path("small.h5") + ":/x"},
               "steps": [{"name": "b", "op": "broadcast_to", "args": ["x"],
                          "shape": [BIG, BIG, 4, 4]},
                         {"name": "s", "op": "sum", "args": ["b"]}],
               "outputs": {"s": self.out + ":/s"}}
        self.refused(2, (ELEMS, "steps[0]"), "run", "--quiet",
                     self.pipeline("bcast.json", doc))

    # -- 2. more than 4 GiB in a chunk -----------------------------------

    def test_chunk_bytes_refused(self):
        for name in ("chunk2.zarr", "chunk3.zarr", "inner3.zarr"):
            with self.subTest(array=name):
                src = self.path(name)
                self.refused(1, (CHUNK, name), "info", src)
                self.refused(1, (CHUNK, name), "copy", "--quiet", src,
                             self.out)
                self.refused(1, (CHUNK, name), "run", "--quiet",
                             self.sum_of(src))

    def test_gen_chunks_is_a_usage_error(self):
        for dst in (self.outz, self.out + ":/x"):
            with self.subTest(dst=dst):
                self.refused(2, (CHUNK, "--chunks"), "gen", "--quiet",
                             "--shape", "1048576,1048576", "--chunks",
                             "1048576,131072", dst)

    # -- 3. pipeline size -------------------------------------------------

    def test_million_steps(self):
        text = json.dumps({"inputs": {"x": self.path("small.h5") + ":/x"},
                           "steps": [{}] * 10 ** 6, "print": ["s"]})
        self.refused(2, ("256 steps", "steps"), "run", "--quiet",
                     self.pipeline("steps.json", text=text))

    def test_million_values(self):
        text = json.dumps({"inputs": {"x": self.path("small.h5") + ":/x"},
                           "steps": [{"name": "h", "op": "histogram",
                                      "args": ["x"],
                                      "bins": [0] * (11 * 10 ** 5)}],
                           "print": ["h"]})
        self.refused(2, ("1000000 JSON values", "values.json"), "run",
                     "--quiet", self.pipeline("values.json", text=text))

    def test_file_size(self):
        path = self.path("huge.json")
        with open(path, "w") as f:
            f.truncate(1 << 30)  # sparse: 1 GiB that takes no disk
        self.refused(2, ("16 MiB", "huge.json"), "run", "--quiet", path)
        self.refused(2, ("16 MiB", "huge.json"), "plan", path)

    # -- 4. nesting -------------------------------------------------------

    def test_deep_pipeline(self):
        for kind, text in (("list", deep_list()), ("object", deep_object())):
            with self.subTest(kind=kind):
                name = "deep-%s.json" % kind
                self.refused(2, (DEPTH, name), "run", "--quiet",
                             self.pipeline(name, text=text))

    def test_deep_metadata(self):
        for name, file in (("deep2.zarr", ".zarray"),
                           ("attrs2.zarr", ".zattrs"),
                           ("deep3.zarr", "zarr.json")):
            with self.subTest(array=name):
                src = self.path(name)
                self.refused(1, (DEPTH, name + "/" + file), "info", src)
                self.refused(1, (DEPTH, name + "/" + file), "copy", "--quiet",
                             src, self.out)


if __name__ == "__main__":
    C.main()
