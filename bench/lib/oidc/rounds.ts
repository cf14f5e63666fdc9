/**
 * The measured rounds of bench/oidc-login.ts: a number of whole logins a few at a time (server CPU over the
 * window from /proc, every thread; each login's wall time), and the same logins taken step by step (every
 * login's first step, then every login's second, ...) so each step's server CPU can be read on its own.
 */
import { performance } from 'node:perf_hooks';
import type { ChildServer } from '../processes/child.js';
import { CpuWindow, ownCpu } from '../common.js';
import { procCpuMicros } from '../measure/proc-cpu.js';
import { freshLogin, type FlowContext, type LoginFlow, type LoginState } from './flows.js';

export interface WholeRound {
  flow: string;
  logins: number;
  windowMs: number;
  /** The server process's CPU over the window (user + system, every thread), µs. */
  serverCpuMicros: number;
  /** This process's CPU (browsers, signing app, relying party), µs. */
  benchCpuMicros: number;
  otherPercent: number;
  /** Each login's wall time, first step to last, ms. */
  wallMs: number[];
}

export interface StepRound {
  flow: string;
  logins: number;
  /** Server CPU per login of each step, µs (the child's own getrusage: µs resolution, every thread). */
  steps: { name: string; requests: number; serverCpuMicros: number; otherPercent: number; sqlPerLogin: number }[];
  /** SQLite statements per login over the step round, by verb and table (transaction control left out). */
  sqlByKind: Map<string, number>;
  /** Server CPU per login over the whole step round, from /proc as the whole rounds read it, µs. */
  roundCpuMicros: number;
}

/** The statements the server's event loop has run so far, by kind (bench/servers/oidc-tabwire.ts). */
async function statements(port: number): Promise<Map<string, number>> {
  const counts = (await (await fetch(`http://127.0.0.1:${port}/__bench/sql`)).json()) as Record<string, number>;
  return new Map(Object.entries(counts).filter(([kind]) => !/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/.test(kind)));
}

const total = (m: Map<string, number>): number => [...m.values()].reduce((n, v) => n + v, 0);

/** Runs `count` jobs, `concurrency` at a time. */
async function inParallel(count: number, concurrency: number, job: (k: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
}

async function loginOnce(flow: LoginFlow, ctx: FlowContext): Promise<number> {
  const s: LoginState = freshLogin();
  const t0 = performance.now();
  try {
    for (const step of flow.steps) await step.run(ctx, s);
  } finally {
    await s.tab?.close();
  }
  return performance.now() - t0;
}

/** `logins` whole logins of `flow`, `concurrency` at a time; any failed step fails the round. */
export async function wholeRound(flow: LoginFlow, ctx: FlowContext, server: ChildServer, logins: number, concurrency: number): Promise<WholeRound> {
  const window = await CpuWindow.open([async () => procCpuMicros(server.pid), ownCpu]);
  const wallMs: number[] = [];
  await inParallel(logins, concurrency, async () => {
    wallMs.push(await loginOnce(flow, ctx));
  });
  const w = await window.close();
  return { flow: flow.name, logins, windowMs: w.ms, serverCpuMicros: w.cpuMicros[0]!, benchCpuMicros: w.cpuMicros[1]!, otherPercent: w.otherPercent, wallMs };
}

/** The logins step by step: each step for every login (`concurrency` at a time) in its own CPU window. */
export async function stepRound(flow: LoginFlow, ctx: FlowContext, server: ChildServer, logins: number, concurrency: number): Promise<StepRound> {
  const states = Array.from({ length: logins }, freshLogin);
  const steps: StepRound['steps'] = [];
  const sql0 = await statements(server.port);
  const round = await CpuWindow.open([async () => procCpuMicros(server.pid)]);
  try {
    for (const step of flow.steps) {
      const before = total(await statements(server.port));
      const window = await CpuWindow.open([() => server.cpuMicros(), ownCpu]);
      await inParallel(logins, concurrency, async (k) => step.run(ctx, states[k]!));
      const w = await window.close();
      const sqlPerLogin = (total(await statements(server.port)) - before) / logins;
      steps.push({ name: step.name, requests: step.requests, serverCpuMicros: w.cpuMicros[0]! / logins, otherPercent: w.otherPercent, sqlPerLogin });
    }
  } finally {
    await Promise.all(states.map(async (s) => s.tab?.close()));
  }
  const roundCpuMicros = (await round.close()).cpuMicros[0]! / logins;
  const sql1 = await statements(server.port);
  const sqlByKind = new Map([...sql1].map(([kind, n]) => [kind, (n - (sql0.get(kind) ?? 0)) / logins] as const).filter(([, n]) => n >= 0.05));
  return { flow: flow.name, logins, steps, roundCpuMicros, sqlByKind };
}
