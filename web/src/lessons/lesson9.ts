// Lesson 9: why pipelining helps on loopback too. With no network between
// client and Redis the round trip is a few µs, yet 1,000 sequential SETs
// still cost about 1,000 write() and 1,000 read() calls on each side (and as
// many wake-ups of Redis's event loop); one pipeline costs a handful. The run
// counts both sides' system calls (summary.read_syscalls / write_syscalls,
// summary.server) and draws the verdict from them.
import { compare, type CompareRun } from '../api/client.js';
import { bestRuns, repeat, timedVerdict } from './noise.js';
import { syscallTable } from './syscalls.js';
import type { Lesson } from './types.js';
import { fmtInt, fmtMs, fmtX, lines, metrics } from './ui.js';

const N = 1000;
const text = lines(N, (i) => `SET tut:l9:key:${i} x`);
/** Fewer system calls by at least this factor on each side: "a handful" against N. */
const FEWER = 20;

const ratio = (a: number | null | undefined, b: number | null | undefined) => (a ?? 0) / Math.max(1, b ?? 0);

export const lesson9: Lesson = {
  title: 'Why pipelining helps on loopback too',
  claim: `With no network at all, ${fmtInt(N)} sequential SETs still cost about ${fmtInt(N)} reads and ${fmtInt(N)} writes on each side; one pipeline costs a handful, and that is where its speed comes from.`,
  text: `
    <p>On loopback (client and Redis on one machine, no simulated RTT) a round trip takes
    microseconds, so it is tempting to think pipelining no longer matters. It does, because
    the round trip was never the only cost: every command sent alone is one <code>write()</code>
    system call by the client, one wake-up of Redis's event loop, one <code>read()</code> and one
    <code>write()</code> by Redis, and one <code>read()</code> by the client. Each system call crosses
    into the kernel and back; each wake-up is a context switch. A pipeline pays them once for
    the whole batch: Redis reads many commands in one <code>read()</code> and writes many replies
    in one <code>write()</code> (redis.io, "Redis pipelining": "it's not just a matter of RTT").</p>
    <p>This runs ${fmtInt(N)} <code>SET</code>s sequentially and as one pipeline at 0 ms simulated
    RTT (<code>/api/v1/compare</code>, twice, the faster of each kept) and counts both sides'
    system calls: pipelab's own <code>read</code> and <code>write</code> calls on the connection, and
    Redis's <code>total_reads_processed</code> / <code>total_writes_processed</code> (INFO stats) and
    the µs it spent running commands (INFO commandstats), read before and after each run.</p>`,
  build() {
    return {
      example: () => ({ text, mode: 'sequential', simulated_rtt_ms: 0, batch_size: 1000, on_error: 'continue' }),
      async run(out) {
        const reps = await repeat(2, () => compare({ text, modes: ['pipeline'], batch_size: N, simulated_rtt_ms: 0 }));
        const { best, noise } = bestRuns(reps, ['sequential', 'pipeline']);
        const seq = best.sequential!.summary;
        const pipe = best.pipeline!.summary;
        const speedup = seq.total_us / Math.max(1, pipe.total_us);
        const clientCalls = (s: CompareRun['summary']) => s.write_syscalls + (s.read_syscalls ?? 0);
        const serverCalls = (s: CompareRun['summary']) => (s.server ? s.server.reads + s.server.writes : null);
        const clientFewer = ratio(clientCalls(seq), clientCalls(pipe));
        const serverFewer = serverCalls(seq) == null || serverCalls(pipe) == null ? null : ratio(serverCalls(seq), serverCalls(pipe));
        const savedCalls = clientCalls(seq) - clientCalls(pipe) + ((serverCalls(seq) ?? 0) - (serverCalls(pipe) ?? 0));
        const perCallUs = (seq.total_us - pipe.total_us) / Math.max(1, savedCalls);
        // Of the time the pipeline saved, the share Redis's own command time accounts for.
        const workShare = seq.server && pipe.server ? (seq.server.usec - pipe.server.usec) / Math.max(1, seq.total_us - pipe.total_us) : null;
        const holds = clientFewer >= FEWER && serverFewer != null && serverFewer >= FEWER && speedup > 1.5;
        const approx = seq.server?.approximate || pipe.server?.approximate;
        out.replaceChildren(
          syscallTable([
            { mode: 'sequential', summary: seq },
            { mode: 'pipeline', summary: pipe },
          ]),
          metrics([
            { key: 'sequential_us', label: 'sequential', value: seq.total_us, text: fmtMs(seq.total_us) },
            { key: 'pipeline_us', label: 'pipeline', value: pipe.total_us, text: fmtMs(pipe.total_us) },
            { key: 'speedup', label: 'speedup on loopback', value: speedup, text: fmtX(speedup) },
            { key: 'client_fewer', label: 'client syscalls, fewer by', value: clientFewer, text: fmtX(clientFewer) },
            { key: 'server_fewer', label: 'Redis reads + writes, fewer by', value: serverFewer ?? 0, text: serverFewer == null ? '—' : fmtX(serverFewer) },
            { key: 'server_usec_sequential', label: 'Redis command time, sequential', value: seq.server?.usec ?? 0, text: seq.server ? `${fmtInt(seq.server.usec)} µs` : '—' },
            { key: 'server_usec_pipeline', label: 'Redis command time, pipeline', value: pipe.server?.usec ?? 0, text: pipe.server ? `${fmtInt(pipe.server.usec)} µs` : '—' },
            { key: 'us_per_saved_call', label: 'time saved per syscall saved', value: perCallUs, text: `${perCallUs.toFixed(1)} µs` },
            { key: 'noise', label: 'repeat spread', value: noise, text: `${Math.round(noise * 100)}%` },
          ]),
          timedVerdict(
            holds,
            noise,
            `Sequential: ${fmtInt(seq.write_syscalls)} writes and ${fmtInt(seq.read_syscalls ?? 0)} reads here, ${seq.server ? `${fmtInt(seq.server.reads)} reads and ${fmtInt(seq.server.writes)} writes in Redis` : 'Redis not asked'}; ` +
              `one pipeline: ${fmtInt(pipe.write_syscalls)} and ${fmtInt(pipe.read_syscalls ?? 0)} here, ${pipe.server ? `${fmtInt(pipe.server.reads)} and ${fmtInt(pipe.server.writes)} in Redis` : '—'}. ` +
              `The pipeline was ${fmtX(speedup)} faster with no network at all, about ${perCallUs.toFixed(1)} µs saved per system call saved. ` +
              (seq.server && pipe.server && workShare != null
                ? `Redis's own command time was ${fmtInt(seq.server.usec)} µs against ${fmtInt(pipe.server.usec)} µs: ${Math.round(Math.max(0, workShare) * 100)}% of the ${fmtMs(seq.total_us - pipe.total_us)} saved; the rest was system calls, wake-ups and waiting for them.`
                : "Redis's own command time was not measured.") +
              (approx ? ' Other clients used Redis meanwhile: its counts are approximate.' : ''),
          ),
        );
      },
    };
  },
};
