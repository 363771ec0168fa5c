// Every export format, run for real against a real redis-server: the RESP file
// through `redis-cli --pipe`, Python with redis-py, Node with ioredis, Ruby
// with redis-rb (Debian's ruby-redis), Rust with the redis crate
// (web/test/export-rs). Go and Java are parsed by their own toolchains
// (gofmt, javac's parser: scripts/setup.sh installs both), and built and run
// where their client library is given (see the skips).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importTs, run, startRedis, tmpDir, webDir } from './helpers.mjs';
import { wasm } from '../wasm/load.mjs';

const ex = await importTs('export/index.ts');
const { argvToJson, argvFromJson } = await importTs('export/argv.ts');
/** argv -> RESP through the wasm module (the resp crate), as the page does. */
const encode = (argv) => wasm.replyToResp(JSON.stringify(argvToJson(argv)));

const B = (s) => new Uint8Array(Buffer.from(s, 'latin1'));
const U = (s) => new Uint8Array(Buffer.from(s, 'utf8'));
const binKey = B('bin\x00key\xff');
const binVal = B('\xff\x00\x01\r\n\'"\\ end');

/** A mixed batch: binary key and value, UTF-8, a failing INCR at index 2, an array reply, a nil. */
const MIXED = [
  [U('SET'), binKey, binVal],
  [U('SET'), U('s'), U('héllo ✓')],
  [U('INCR'), U('s')],
  [U('RPUSH'), U('list'), U('a'), U('b c')],
  [U('GET'), binKey],
  [U('LRANGE'), U('list'), U('0'), U('-1')],
  [U('GET'), U('missing')],
];
/** A queue-time error (INCR without its key): MULTI/EXEC must answer EXECABORT and run nothing. */
const ABORTING = [
  [U('SET'), U('k'), U('changed')],
  [U('INCR')],
  [U('SET'), U('k2'), U('v')],
];

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

/** Each runnable target: writes the snippet where its toolchain finds the library, runs it. */
const runners = {
  async 'redis-py'(snippet) {
    const file = join(tmpDir, snippet.filename);
    writeFileSync(file, snippet.content);
    return run('python3', [file], { env: { ...process.env, REDIS_URL: redis.url } });
  },
  async ioredis(snippet) {
    // Inside web/ so that `import "ioredis"` resolves to web/node_modules.
    const file = join(tmpDir, snippet.filename);
    writeFileSync(file, snippet.content);
    return run('node', [file], { env: { ...process.env, REDIS_URL: redis.url } });
  },
  async 'redis-rs'(snippet) {
    const dir = join(webDir, 'test/export-rs');
    writeFileSync(join(dir, 'snippet.rs'), snippet.content);
    // An explicit target dir: a CARGO_TARGET_DIR in the environment must not move the binary.
    const built = await run('cargo', ['build', '-q', '--locked', '--manifest-path', join(dir, 'Cargo.toml'), '--target-dir', join(dir, 'target')], {});
    assert.equal(built.code, 0, `cargo build of the redis-rs snippet failed:\n${built.stderr}\n${snippet.content}`);
    return run(join(dir, 'target/debug/snippet'), [], { env: { ...process.env, REDIS_URL: redis.url } });
  },
  async 'redis-rb'(snippet) {
    const file = join(tmpDir, snippet.filename);
    writeFileSync(file, snippet.content);
    return run('ruby', [file], { env: { ...process.env, REDIS_URL: redis.url } });
  },
  async resp(snippet) {
    return run('redis-cli', ['-p', String(redis.port), '--pipe'], { input: Buffer.from(snippet.content) });
  },
};

/** `N) reply` lines of a snippet's output, in order. */
function replyLines(stdout) {
  return stdout
    .split('\n')
    .map((l) => /^(\d+)\) (.*)$/.exec(l))
    .filter(Boolean)
    .map((m) => ({ n: Number(m[1]), text: m[2] }));
}

async function checkMixedState(label) {
  const c = redis.client;
  assert.deepEqual(Buffer.compare(await c.getBuffer(Buffer.from(binKey)), Buffer.from(binVal)), 0, `${label}: binary value under the binary key`);
  assert.equal(await c.get('s'), 'héllo ✓', `${label}: UTF-8 value`);
  assert.deepEqual(await c.lrange('list', 0, -1), ['a', 'b c'], `${label}: list`);
}

test('argv survives the round trip through reply JSON and the wasm encoder', () => {
  for (const argv of [...MIXED, ...ABORTING]) {
    const resp = encode(argv);
    const decoded = wasm.decodeReplies(resp);
    assert.equal(decoded.values.length, 1);
    const back = argvFromJson(decoded.values[0]);
    assert.deepEqual(back.map((a) => Buffer.from(a).toString('hex')), argv.map((a) => Buffer.from(a).toString('hex')));
  }
});

for (const mode of ['pipeline', 'transaction']) {
  for (const target of Object.keys(runners)) {
    test(`${target} (${mode}): mixed binary batch runs as printed`, async () => {
      await redis.client.flushall();
      const snippet = ex.exportBatch(target, MIXED, mode, encode);
      const out = await runners[target](snippet);
      await checkMixedState(`${target} ${mode}`);
      if (target === 'resp') {
        // redis-cli --pipe counts top-level error replies. In a pipeline the INCR error is one;
        // in MULTI/EXEC it sits inside EXEC's array: MULTI + 7 QUEUED + EXEC = 9 replies, 0 errors.
        const [errors, replies, code] = mode === 'pipeline' ? [1, 7, 1] : [0, 9, 0];
        assert.match(out.stdout, new RegExp(`errors: ${errors}, replies: ${replies}`), out.stdout + out.stderr);
        assert.equal(out.code, code);
        return;
      }
      assert.equal(out.code, 1, `${target}: exit status 1 because INCR failed\n${out.stdout}\n${out.stderr}`);
      const lines = replyLines(out.stdout);
      assert.deepEqual(lines.map((l) => l.n), [1, 2, 3, 4, 5, 6, 7], out.stdout);
      assert.match(lines[2].text, /^\(error\).*not an integer/, out.stdout);
      for (const i of [0, 1, 3, 4, 5, 6]) assert.doesNotMatch(lines[i].text, /\(error\)/, `line ${i + 1}: ${out.stdout}`);
      assert.match(lines[3].text, /\b2\b/, 'RPUSH returned the length 2');
      assert.match(lines[5].text, /a.*b c/, 'LRANGE shows both elements');
    });
  }
}

for (const target of Object.keys(runners)) {
  test(`${target} (transaction): a queue-time error aborts with EXECABORT and changes nothing`, async () => {
    await redis.client.flushall();
    await redis.client.set('k', 'original');
    const snippet = ex.exportBatch(target, ABORTING, 'transaction', encode);
    const out = await runners[target](snippet);
    assert.equal(await redis.client.get('k'), 'original', `${target}: k unchanged\n${out.stdout}`);
    assert.equal(await redis.client.exists('k2'), 0, `${target}: k2 never set`);
    assert.notEqual(out.code, 0, `${target}: non-zero exit\n${out.stdout}${out.stderr}`);
    assert.match(out.stdout + out.stderr, /EXECABORT/, out.stdout + out.stderr);
  });
}

test('go-redis snippet is valid Go (gofmt), where Go is installed', async (t) => {
  const gofmt = ['/usr/bin/gofmt', '/usr/lib/go/bin/gofmt', '/usr/local/go/bin/gofmt'].find(existsSync);
  if (!gofmt) return t.skip('no Go toolchain on this machine (Debian golang-go is optional)');
  for (const [batch, mode] of [[MIXED, 'pipeline'], [MIXED, 'transaction'], [ABORTING, 'transaction']]) {
    const s = ex.exportBatch('go-redis', batch, mode, encode);
    const file = join(tmpDir, 'main.go');
    writeFileSync(file, s.content);
    const out = await run(gofmt, ['-e', '-l', file]);
    assert.equal(out.code, 0, `gofmt rejected the ${mode} snippet:\n${out.stderr}\n${s.content}`);
    assert.equal(out.stderr, '');
    assert.equal(out.stdout, '', 'the snippet is formatted as gofmt formats it');
  }
});

test('the redis-rb snippet is valid Ruby on both of its paths (ruby -c)', async () => {
  for (const mode of ['pipeline', 'transaction']) {
    const s = ex.exportBatch('redis-rb', MIXED, mode, encode);
    assert.match(s.content, /pipelined\(exception: false\)/);
    if (mode === 'transaction') assert.match(s.content, /\[\["MULTI"\], \*COMMANDS, \["EXEC"\]\]/);
    const file = join(tmpDir, `syntax-${mode}.rb`);
    writeFileSync(file, s.content);
    const out = await run('ruby', ['-c', file]);
    assert.equal(out.code, 0, `ruby -c:\n${out.stderr}\n${s.content}`);
  }
  // Interpolation cannot sneak in: "#{" in an argument stays those bytes.
  const tricky = [[U('SET'), U('k'), U('#{exit 3}#@x#$y')]];
  await redis.client.flushall();
  const out = await runners['redis-rb'](ex.exportBatch('redis-rb', tricky, 'pipeline', encode));
  assert.equal(out.code, 0, out.stdout + out.stderr);
  assert.equal(await redis.client.get('k'), '#{exit 3}#@x#$y');
});

test('the Jedis snippet parses as Java (javac\'s parser), where a JDK is installed', async (t) => {
  if (!existsSync('/usr/bin/javac')) return t.skip('no JDK on this machine (scripts/setup.sh installs default-jdk-headless)');
  // javac's own parser (JavacTask.parse): syntax errors only, as Jedis
  // itself is not packaged for Debian and Maven Central is unreachable.
  const parser = join(tmpDir, 'ParseOnly.java');
  writeFileSync(parser, `import javax.tools.*;
import com.sun.source.util.JavacTask;
public class ParseOnly {
  public static void main(String[] files) throws Exception {
    JavaCompiler c = ToolProvider.getSystemJavaCompiler();
    DiagnosticCollector<JavaFileObject> d = new DiagnosticCollector<>();
    StandardJavaFileManager fm = c.getStandardFileManager(d, null, null);
    JavacTask task = (JavacTask) c.getTask(null, fm, d, null, null, fm.getJavaFileObjects(files));
    task.parse();
    boolean bad = false;
    for (Diagnostic<? extends JavaFileObject> x : d.getDiagnostics()) { System.err.println(x); bad |= x.getKind() == Diagnostic.Kind.ERROR; }
    System.exit(bad ? 1 : 0);
  }
}
`);
  for (const [batch, mode] of [[MIXED, 'pipeline'], [MIXED, 'transaction'], [ABORTING, 'transaction']]) {
    const s = ex.exportBatch('jedis', batch, mode, encode);
    const file = join(tmpDir, s.filename);
    writeFileSync(file, s.content);
    const out = await run('java', [parser, file]);
    assert.equal(out.code, 0, `javac's parser rejected the ${mode} snippet:\n${out.stderr}\n${s.content}`);
  }
  // The check has teeth: a missing brace is caught.
  writeFileSync(join(tmpDir, 'Broken.java'), 'public class Broken { void f() { }');
  assert.notEqual((await run('java', [parser, join(tmpDir, 'Broken.java')])).code, 0);
});

test('Jedis snippet compiles and runs, where a Jedis class path is given (PIPELAB_JEDIS_CLASSPATH)', async (t) => {
  const cp = process.env.PIPELAB_JEDIS_CLASSPATH;
  if (!cp) return t.skip('Jedis is not packaged for Debian and Maven Central is unreachable: set PIPELAB_JEDIS_CLASSPATH to check');
  for (const [batch, mode] of [[MIXED, 'pipeline'], [MIXED, 'transaction'], [ABORTING, 'transaction']]) {
    await redis.client.flushall();
    await redis.client.set('k', 'original');
    const s = ex.exportBatch('jedis', batch, mode, encode);
    const dir = join(tmpDir, `jedis-${mode}-${batch.length}`);
    (await import('node:fs')).mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, s.filename), s.content);
    const c = await run('javac', ['-cp', cp, '-d', dir, join(dir, s.filename)]);
    assert.equal(c.code, 0, `javac:\n${c.stderr}`);
    const out = await run('java', ['-cp', `${cp}:${dir}`, 'PipelabBatch'], { env: { ...process.env, REDIS_URL: redis.url } });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    if (batch === MIXED) {
      await checkMixedState(`jedis ${mode}`);
      assert.match(replyLines(out.stdout)[2].text, /^\(error\)/);
    } else {
      assert.equal(await redis.client.get('k'), 'original');
      assert.match(out.stdout, /EXECABORT/);
    }
  }
});

test('go-redis snippet builds and runs, where a go-redis module is given (PIPELAB_GOREDIS_MODDIR)', async (t) => {
  // A directory with a go.mod that requires github.com/redis/go-redis/v9 and resolves offline
  // (module cache or replace directives): the Go module proxy is not reachable here.
  const modDir = process.env.PIPELAB_GOREDIS_MODDIR;
  if (!modDir) return t.skip('go-redis v9 is not packaged for Debian and the Go module proxy is unreachable: set PIPELAB_GOREDIS_MODDIR to check');
  const { mkdirSync, copyFileSync } = await import('node:fs');
  for (const [batch, mode] of [[MIXED, 'pipeline'], [MIXED, 'transaction'], [ABORTING, 'transaction']]) {
    await redis.client.flushall();
    await redis.client.set('k', 'original');
    const s = ex.exportBatch('go-redis', batch, mode, encode);
    const dir = join(tmpDir, `go-${mode}-${batch.length}`);
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(modDir, 'go.mod'), join(dir, 'go.mod'));
    writeFileSync(join(dir, 'main.go'), s.content);
    const env = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOSUMDB: 'off', GOTOOLCHAIN: 'local' };
    const b = await run('go', ['build', '-o', 'app', '.'], { cwd: dir, env });
    assert.equal(b.code, 0, `go build:\n${b.stderr}`);
    const out = await run(join(dir, 'app'), [], { env: { ...process.env, REDIS_URL: redis.url } });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    if (batch === MIXED) {
      await checkMixedState(`go-redis ${mode}`);
      const lines = replyLines(out.stdout);
      assert.equal(lines.length, 7, out.stdout);
      assert.match(lines[2].text, /^\(error\).*not an integer/);
    } else {
      assert.equal(await redis.client.get('k'), 'original');
      assert.match(out.stdout, /EXECABORT/);
    }
  }
});
