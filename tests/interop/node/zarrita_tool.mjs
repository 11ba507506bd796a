// tests/interop/node/zarrita_tool.mjs - zarrita (Zarr v3 in JavaScript) as
// an independent reader and writer for tests/interop/test_zarr3.py.  It
// knows nothing of chunkctl: it moves whole arrays between a Zarr store and
// a raw file of little-endian, C-order element bytes.
//
//   node zarrita_tool.mjs read STORE PATH OUT.bin
//       reads array PATH ("/" or "/g/x") of STORE; writes its elements to
//       OUT.bin and prints {"shape": [...], "data_type": "..."} on stdout.
//   node zarrita_tool.mjs write STORE PATH IN.bin DTYPE SHAPE CHUNKS CODEC
//       writes a new unsharded Zarr v3 array PATH in STORE (groups above it
//       created as needed) from IN.bin; SHAPE and CHUNKS are "4,5" lists
//       ("" for a 0-d array), CODEC is "bytes" or "zstd[:LEVEL]" (bytes then
//       zstd; zarrita 0.7.5 cannot encode gzip under Node 20).
//
// Either takes several argument groups in a row (read: 3 each, write: 7
// each), done in order; one Node start-up for many arrays keeps the tests
// fast.  read prints one JSON line per group.
//
// Exit status 0 on success, 1 with one line on stderr otherwise.
import * as fs from "node:fs";
import * as path from "node:path";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";

const CTORS = {
  bool: zarr.BoolArray,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  float32: Float32Array,
  float64: Float64Array,
};

function fail(msg) {
  process.stderr.write(`zarrita_tool: ${msg}\n`);
  process.exit(1);
}

function ints(s) {
  return s === "" ? [] : s.split(",").map((x) => Number.parseInt(x, 10));
}

function nodePath(p) {
  return p === "" || p === "/" ? "/" : p.startsWith("/") ? p : `/${p}`;
}

function bytesOf(data) {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

// The elements of a strided chunk {data, shape, stride} in C order, as bytes
// (zarrita hands back a transposed array in its stored order).
function cOrderBytes(chunk) {
  const { data, shape, stride } = chunk;
  const src = bytesOf(data);
  const esize = data.BYTES_PER_ELEMENT;
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new Uint8Array(n * esize);
  const idx = new Array(shape.length).fill(0);
  for (let i = 0; i < n; i++) {
    let off = 0;
    for (let d = 0; d < shape.length; d++) off += idx[d] * stride[d];
    out.set(src.subarray(off * esize, (off + 1) * esize), i * esize);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

function cStrides(shape) {
  const s = new Array(shape.length);
  let step = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    s[d] = step;
    step *= shape[d];
  }
  return s;
}

async function read(store, p, out) {
  const root = zarr.root(new FileSystemStore(store));
  const arr = await zarr.open(root.resolve(nodePath(p)), { kind: "array" });
  let bytes;
  if (arr.shape.length === 0) {
    const v = await zarr.get(arr, null);
    const a = new CTORS[arr.dtype](1);
    if (arr.dtype === "bool") bytesOf(a)[0] = v ? 1 : 0;
    else a[0] = v;
    bytes = bytesOf(a);
  } else {
    bytes = cOrderBytes(await zarr.get(arr, null));
  }
  fs.writeFileSync(out, bytes);
  process.stdout.write(
    `${JSON.stringify({ shape: arr.shape, data_type: arr.dtype })}\n`,
  );
}

async function ensureGroups(store, p) {
  const parts = nodePath(p).split("/").filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const dir = path.join(store, ...parts.slice(0, i));
    if (!fs.existsSync(path.join(dir, "zarr.json"))) {
      const loc = zarr.root(new FileSystemStore(store));
      await zarr.create(loc.resolve(`/${parts.slice(0, i).join("/")}`));
    }
  }
}

async function write(store, p, inFile, dtype, shapeS, chunksS, codec) {
  const Ctor = CTORS[dtype];
  if (!Ctor) fail(`unknown dtype ${dtype}`);
  const shape = ints(shapeS);
  const chunkShape = ints(chunksS);
  const codecs = [{ name: "bytes", configuration: { endian: "little" } }];
  const [cname, level] = codec.split(":");
  if (cname === "zstd") {
    codecs.push({
      name: "zstd",
      configuration: { level: level ? Number(level) : 3, checksum: false },
    });
  } else if (cname !== "bytes") {
    fail(`codec ${codec}: only bytes and zstd`);
  }
  const raw = fs.readFileSync(inFile);
  const buf = new ArrayBuffer(raw.length);
  new Uint8Array(buf).set(raw);
  const data = new Ctor(buf);
  fs.mkdirSync(store, { recursive: true });
  await ensureGroups(store, p);
  const loc = zarr.root(new FileSystemStore(store)).resolve(nodePath(p));
  const arr = await zarr.create(loc, {
    shape,
    chunkShape,
    dtype,
    codecs,
    // a JSON number: zarrita cannot serialize a BigInt for the 64-bit ints
    fillValue: dtype === "bool" ? false : 0,
  });
  await zarr.set(arr, null, { data, shape, stride: cStrides(shape) });
}

async function main() {
  const [cmd, ...a] = process.argv.slice(2);
  const n = { read: 3, write: 7 }[cmd];
  if (n && a.length >= n && a.length % n === 0) {
    const fn = cmd === "read" ? read : write;
    for (let i = 0; i < a.length; i += n) await fn(...a.slice(i, i + n));
    return;
  }
  fail(
    "usage: read STORE PATH OUT.bin ... | " +
      "write STORE PATH IN.bin DTYPE SHAPE CHUNKS CODEC ...",
  );
}

main().catch((e) => {
  const cause = e && e.cause ? ` (${e.cause.message ?? e.cause})` : "";
  fail(`${(e && e.message ? e.message : String(e)).split("\n")[0]}${cause}`);
});
