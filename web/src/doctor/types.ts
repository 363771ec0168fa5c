// The doctor's JSON API (`pipelab doctor --ui` at /api/doctor, `pipelab serve
// --doctor-listen` at /api/v1/doctor; doctor/src/page.rs and doctor/src/report.rs;
// docs/api.md "pipelab doctor --ui"). Times: *_us µs, *_ms ms.

export interface Flight {
  commands: number;
  start_us: number;
  wait_us: number;
  think_us: number | null;
  bytes_up: number;
  bytes_down: number;
  pattern: string;
}

export interface PatternCount { pattern: string; commands: number }

export interface Missed {
  connection: number;
  peer: string;
  commands: number;
  pattern: string;
  description: string;
  patterns: PatternCount[];
  start_us: number;
  duration_ms: number;
  think_us_max: number;
  /** Why the run was judged independent, for people. */
  why: string;
  /** Comparisons of a command with an earlier reply of the run; none found the reply's bytes in it. */
  replies_compared: number;
  rtt_ms: number;
  saving_ms: number;
  going_on: boolean;
  /** The run's shape as a playground batch, one inline command a line. */
  example: string;
}

export interface DepthBucket { min: number; max: number | null; flights: number; commands: number }

export interface ConnectionReport { connection: number; peer: string; commands: number; flights: number; max_depth: number }

export interface Summary {
  duration_ms: number;
  rtt_ms: number;
  connections: number;
  commands: number;
  flights: number;
  round_trips_per_s: number;
  depth: DepthBucket[];
  wait_share: number;
  transactions: number;
  scripts: number;
  missed_pipelines: number;
  missed_commands: number;
  saving_ms: number;
  recent_connections: ConnectionReport[];
}

export interface UiSummary { summary: Summary; missed: Missed[]; playground_url: string }

/** `recent_flights`: the kept flights that started after `since`. */
export interface ConnectionFlights extends ConnectionReport { open: boolean; recent_flights: Flight[] }
