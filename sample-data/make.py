#!/usr/bin/python3
"""Rebuild the bundled sample data with h5py and zarr-python (not chunkctl).

    /usr/bin/python3 sample-data/make.py

Deterministic: NumPy's default_rng with fixed seeds.  Larger arrays are made
with `chunkctl gen` (see README).
"""
import os
import shutil

import h5py
import numcodecs
import numpy as np
import zarr

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261122)

# A tall-skinny matrix (the SVD example), a 3-D integer cube, a mask.
x = rng.normal(9.0, 1.0, size=(2000, 100))
cube = rng.integers(0, 1000, size=(40, 50, 30), dtype=np.int64)
mask = rng.random((500, 200)) < 0.5
temps = (rng.normal(15, 8, size=(365, 64)).astype(np.float32))

h5 = os.path.join(here, "sample.h5")
if os.path.exists(h5):
    os.remove(h5)
with h5py.File(h5, "w") as f:
    f.attrs["title"] = "chunkctl sample data"
    f.attrs["seed"] = 20261122
    d = f.create_dataset("x", data=x, chunks=(500, 100), compression="gzip",
                         compression_opts=4, shuffle=True)
    d.attrs["description"] = "normal(9, 1), tall and skinny"
    f.create_dataset("cube", data=cube, chunks=(16, 25, 30))
    g = f.create_group("weather")
    t = g.create_dataset("temps", data=temps, chunks=(100, 64),
                         compression="gzip", compression_opts=6)
    t.attrs["units"] = "degC"
    g.create_dataset("mask", data=mask, chunks=(128, 128))

zs = os.path.join(here, "sample.zarr")
if os.path.exists(zs):
    shutil.rmtree(zs)
root = zarr.open_group(zs, mode="w")
root.attrs["title"] = "chunkctl sample data"
root.create_dataset("x", data=x, chunks=(500, 100),
                    compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
root.create_dataset("cube", data=cube, chunks=(16, 25, 30),
                    compressor=numcodecs.Zstd(3))
w = root.create_group("weather")
w.create_dataset("temps", data=temps, chunks=(100, 64),
                 compressor=numcodecs.Zlib(6), order="F")
w["temps"].attrs["units"] = "degC"
print("wrote", h5, zs)
