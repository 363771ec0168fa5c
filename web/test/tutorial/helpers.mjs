// Shared by the tutorial tests: a real redis-server on a free port, and the
// page's TypeScript modules bundled by esbuild (Vite's own bundler) so that
// Node runs exactly the code the page runs.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
export const webDir = resolve(here, '../..');
export const repoRoot = resolve(webDir, '..');
/** Scratch files (git-ignored): generated snippets, bundles. */
export const tmpDir = join(here, 'tmp');
mkdirSync(tmpDir, { recursive: true });

/** A free TCP port: bind 127.0.0.1:0, read the port, release it. */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** Waits until `probe()` resolves truthy, polling every 50 ms, for at most `ms`. */
export async function waitFor(probe, ms, what) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      if (await probe()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

/** Starts `redis-server` on a free port without persistence; `stop()` kills it. */
export async function startRedis() {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const { default: Redis } = await import('ioredis');
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  await waitFor(async () => {
    if (probe.status !== 'ready') await probe.connect().catch(() => {});
    return (await probe.ping()) === 'PONG';
  }, 10_000, `redis-server on port ${port}`);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    client: probe,
    async stop() {
      probe.disconnect();
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
    },
  };
}

// The wasm module's glue stays one module outside every bundle, so that a
// test's `initSync` (../wasm/load.mjs) serves the modules it bundles.
const wasmGlue = {
  name: 'wasm-glue',
  setup(b) {
    b.onResolve({ filter: /wasm-pkg\/pipelab_wasm\.js$/ }, (args) => ({ path: pathToFileURL(resolve(args.resolveDir, args.path)).href, external: true }));
  },
};

/** Bundles a TypeScript module of web/src and imports it. */
export async function importTs(relPath) {
  const entry = join(webDir, 'src', relPath);
  const outfile = join(tmpDir, relPath.replace(/[\\/]/g, '_').replace(/\.ts$/, '.mjs'));
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'neutral', outfile, logLevel: 'error', external: ['*.wasm'], plugins: [wasmGlue] });
  return import(pathToFileURL(outfile).href + `?t=${Date.now()}`);
}

/** Runs a program; resolves to { code, stdout, stderr } (never rejects on exit status). */
export function run(cmd, args, opts = {}) {
  return new Promise((ok, fail) => {
    const p = spawn(cmd, args, { ...opts, stdio: [opts.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.once('error', fail);
    p.once('close', (code) => ok({ code, stdout, stderr }));
    if (opts.input !== undefined) p.stdin.end(opts.input);
  });
}
