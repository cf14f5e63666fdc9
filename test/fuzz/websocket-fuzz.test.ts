import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { releaseContext } from './context.js';
import { expectHealthy, expectNormalLogin, FUZZ_SEED, fuzzRuns, startFuzzService, type FuzzService } from './fuzz-service.js';
import { wsCases } from './generators.js';
import { runCase } from './run-case.js';

// Property: a refused handshake is problem+json from the catalogue (never a 5xx), and whatever an
// accepted socket sends, the service never closes it with 1011 (RFC 6455 §7.4.1, its 500) and keeps
// serving (docs/reliability.md). fast-check prints the seed and the smallest failing case.
let fuzz: FuzzService;

beforeAll(async () => {
  fuzz = await startFuzzService();
});
afterAll(async () => {
  releaseContext(fuzz.ctx);
  await fuzz.service.close();
});

const RUNS = { handshake: fuzzRuns(150), frames: fuzzRuns(150), raw: fuzzRuns(60) };

describe('WebSocket fuzz: generated handshakes, frames and raw bytes at /ClientEventsWS', () => {
  for (const kind of ['handshake', 'frames', 'raw'] as const) {
    it(`${kind}: no 5xx, every refusal is problem+json from the catalogue, no 1011 close`, async () => {
      await fc.assert(
        fc.asyncProperty(wsCases(fuzz.ctx)[kind], async (c) => {
          const seen = await runCase(fuzz.target, fuzz.ctx, c, { timeoutMs: 10_000 });
          if (seen.finding) throw new Error(`${seen.finding.kind} (${seen.finding.signature}): ${seen.finding.detail}\n  request: ${seen.request}`);
        }),
        { numRuns: RUNS[kind], seed: FUZZ_SEED },
      );
      await expectHealthy(fuzz.target);
    }, 60_000);
  }

  it('after the fuzzing the service is up and a normal login still works', async () => {
    await expectHealthy(fuzz.target);
    await expectNormalLogin(fuzz.service);
  });
});
