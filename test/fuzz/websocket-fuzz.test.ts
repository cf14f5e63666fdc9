import { describe, it } from 'vitest';
import { expectHealthy, expectNoFindings, expectNormalLogin, fuzzRuns, useFuzzService } from './fuzz-service.js';
import { wsCases } from './generators.js';

// Property: a refused handshake is problem+json from the catalogue (never a 5xx), and whatever an
// accepted socket sends, the service never closes it with 1011 (RFC 6455 §7.4.1, its 500) and keeps
// serving (docs/reliability.md). fast-check prints the seed and the smallest failing case.
const fuzz = useFuzzService();

const RUNS = { handshake: fuzzRuns(150), frames: fuzzRuns(150), raw: fuzzRuns(60) };

describe('WebSocket fuzz: generated handshakes, frames and raw bytes at /ClientEventsWS', () => {
  for (const kind of ['handshake', 'frames', 'raw'] as const) {
    it(`${kind}: no 5xx, every refusal is problem+json from the catalogue, no 1011 close`, () => expectNoFindings(fuzz, wsCases(fuzz.ctx)[kind], RUNS[kind]), 60_000);
  }

  it('after the fuzzing the service is up and a normal login still works', async () => {
    await expectHealthy(fuzz.target);
    await expectNormalLogin(fuzz.service);
  });
});
