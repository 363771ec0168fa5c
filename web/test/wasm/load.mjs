// Loads the wasm module (built by scripts/build-web.sh into src/wasm-pkg)
// synchronously for Node, and the acceptance vectors from ../shared/vectors
// beside the checkout (docs/cli.md#acceptance-vectors).
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as wasm from '../../src/wasm-pkg/pipelab_wasm.js';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');
wasm.initSync({ module: readFileSync(join(repoRoot, 'web/src/wasm-pkg/pipelab_wasm_bg.wasm')) });
export { wasm };

export function vectors(name) {
  const dir = process.env.PIPELAB_VECTORS ?? resolve(repoRoot, '../shared/vectors');
  const file = join(dir, name);
  if (!existsSync(file)) throw new Error(`acceptance vectors not found at ${file} (set PIPELAB_VECTORS)`);
  return JSON.parse(readFileSync(file, 'utf8'));
}

export const hex = (bytes) => Buffer.from(bytes).toString('hex');
export const fromHex = (h) => new Uint8Array(Buffer.from(h, 'hex'));
export const bytes = (s) => new Uint8Array(Buffer.from(s, 'latin1'));
