// Benchmark (not a test): in headless Chromium, time to convert 100 000
// inline commands to RESP with the wasm module as the page loads it, and the
// full editor sync (wasm + RESP view + byte offsets). Serves web/dist itself.
//   node bench/inline.bench.mjs [commands=100000] [rounds=9]
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { launchBrowser, repoRoot } from '../test/e2e/harness.mjs';

const n = Number(process.argv[2] ?? 100000);
const rounds = Number(process.argv[3] ?? 9);
const dist = join(repoRoot, 'web/dist');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm' };

const server = http.createServer(async (req, res) => {
  const path = normalize(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  try {
    const body = await readFile(join(dist, path));
    res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.pipelab?.editors);
  const r = await page.evaluate(({ n, rounds }) => {
    const { wasm, editors } = window.pipelab;
    const text = Array.from({ length: n }, (_, i) => `SET key:${i} "value ${i}"`).join('\n');
    const conv = [];
    let bytes = 0;
    for (let k = 0; k < rounds; k++) {
      const t = performance.now();
      const out = wasm.inlineToResp(text);
      conv.push(performance.now() - t);
      bytes = out.resp.length;
      if (out.commands !== n) throw new Error(`${out.commands} commands`);
    }
    const sync = [];
    for (let k = 0; k < 3; k++) {
      const t = performance.now();
      editors.setInline(text + (k % 2 ? '\nPING' : ''));
      sync.push(performance.now() - t);
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    return { textBytes: new TextEncoder().encode(text).length, bytes, convMedian: med(conv), convBest: Math.min(...conv), syncMedian: med(sync) };
  }, { n, rounds });
  console.log(`${n} inline commands (${r.textBytes} bytes of text) -> ${r.bytes} bytes of RESP`);
  console.log(`inlineToResp in Chromium: median ${r.convMedian.toFixed(1)} ms, best ${r.convBest.toFixed(1)} ms (${rounds} rounds)`);
  console.log(`full editor sync (setInline: wasm + RESP view + byte offsets): median ${r.syncMedian.toFixed(0)} ms`);
} finally {
  await browser.close();
  server.close();
}
