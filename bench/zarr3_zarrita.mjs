// bench/zarr3_zarrita.mjs - zarrita (Zarr in JavaScript) under Node as the
// peer reader of bench/zarr3_bench.sh: it opens a Zarr store (v3 or v2) with
// @zarrita/storage's FileSystemStore and reads the whole array with
// zarr.get, as a user of zarrita would.  It knows nothing of chunkctl.
//
//   node zarr3_zarrita.mjs read STORE        read the whole root array, print
//                                            its shape and data_type
//   node zarr3_zarrita.mjs sha256 STORE      the same, then the SHA-256 of its
//                                            elements as C-order bytes
//   node zarr3_zarrita.mjs import            load zarrita and exit (start-up)
//
// zarrita comes from tests/interop/node/node_modules (installed there by
// `npm ci --prefix tests/interop/node`), or from $ZARRITA_NODE_MODULES: one
// install in the checkout, not a second copy for the bench.
// Exit status 0 on success, 1 with one line on stderr otherwise.
import { createHash } from "node:crypto";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const nm = process.env.ZARRITA_NODE_MODULES ||
  path.join(here, "..", "tests", "interop", "node", "node_modules");
const load = (rel) => import(pathToFileURL(path.join(nm, rel)).href);

function fail(msg) {
  process.stderr.write(`zarr3_zarrita: ${msg}\n`);
  process.exit(1);
}

async function main(argv) {
  const [cmd, store] = argv;
  if (!["read", "sha256", "import"].includes(cmd) || (cmd !== "import" && !store))
    fail("usage: zarr3_zarrita.mjs read|sha256 STORE | import");
  const zarr = await load("zarrita/dist/src/index.js");
  const { default: FileSystemStore } = await load("@zarrita/storage/dist/src/fs.js");
  if (cmd === "import") return;
  const root = zarr.root(new FileSystemStore(path.resolve(store)));
  const arr = await zarr.open(root, { kind: "array" });
  const a = await zarr.get(arr);
  const c = a.shape.reduceRight((s, n, d) => (s.ok && a.stride[d] === s.step
    ? { ok: true, step: s.step * n } : { ok: false, step: 0 }), { ok: true, step: 1 });
  if (!c.ok)
    fail(`${store}: zarrita returned strides ${a.stride}, not C order`);
  const out = { shape: a.shape, data_type: arr.dtype };
  if (cmd === "sha256") {
    const d = a.data;
    out.sha256 = createHash("sha256")
      .update(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)).digest("hex");
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main(process.argv.slice(2)).catch((e) => fail(String(e && e.message || e)));
