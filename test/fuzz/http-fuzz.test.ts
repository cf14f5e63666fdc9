import { describe, expect, it } from 'vitest';
import { expectHealthy, expectNoFindings, expectNormalLogin, expectNormalOidcLogin, fuzzRuns, useFuzzService } from './fuzz-service.js';
import { BENIGN_ROUTE, hasBody, HTTP_ROUTE_NAMES, httpCaseFor, isExpensive, isOAuth, type DamagedPart } from './generators.js';
import { judgeStoredMessages } from './oracle.js';
import { exchange } from './wire.js';

// Property: whatever a client sends to any route, the answer is not a 5xx, and a 4xx is
// problem+json with a catalogue code and a matching status (docs/reliability.md). Each route has
// two properties, so a refusal at the framework level (headers, target, method) does not hide a
// failure in the handler (body) or the other way round. fast-check prints the seed and the
// smallest failing request it found.
const fuzz = useFuzzService();

const RUNS: Record<Exclude<DamagedPart, 'any'>, number> = { body: fuzzRuns(150), request: fuzzRuns(80) };

function property(name: string, part: Exclude<DamagedPart, 'any'>): Promise<void> {
  // A valid request of an expensive route costs a password hash: a quarter of the runs keeps the file fast.
  return expectNoFindings(fuzz, httpCaseFor(fuzz.ctx, name, part), isExpensive(name) ? Math.ceil(RUNS[part] / 4) : RUNS[part]);
}

describe('HTTP fuzz: generated bad input at every route', () => {
  for (const name of HTTP_ROUTE_NAMES) {
    if (name === BENIGN_ROUTE) {
      // RFC 9110 §7.8: a server may ignore an Upgrade it does not offer; optional headers do not turn a valid GET into a refusal.
      it('public GET routes with odd but well-formed optional headers (Upgrade: h2c, Expect, …) answer 2xx or 3xx', () => property(name, 'request'), 60_000);
      continue;
    }
    // The OpenID Provider's endpoints answer errors as OAuth 2.0 / OpenID Connect specify (oauth-oracle.ts).
    const rule = isOAuth(name)
      ? 'no 5xx, every error an OAuth error (JSON `error`, HTML page or problem+json), no redirect but to a registered URI'
      : 'no 5xx, every 4xx is problem+json from the catalogue';
    if (hasBody(name)) {
      it(`${name}, damaged body: ${rule}`, () => property(name, 'body'), 60_000);
    }
    it(`${name}, damaged headers, target or method: ${rule}`, () => property(name, 'request'), 60_000);
  }

  it('every message the fuzzing stored for its account is well-formed XML (PopMessages)', async () => {
    // The fuzzer sent text and XML messages to its own account with odd `to`, `id`, `subject` and `message`.
    for (let page = 0; page < 100; page++) {
      const outcome = await exchange(fuzz.target, {
        method: 'POST',
        target: '/Agent/Xmpp/PopMessages',
        headers: [['Content-Type', 'application/json'], ['Authorization', `Bearer ${fuzz.ctx.jwt}`]],
        body: JSON.stringify({ maxCount: 100 }),
      });
      expect(outcome.kind === 'answer' && outcome.answer.status).toBe(200);
      if (outcome.kind !== 'answer') return;
      const finding = judgeStoredMessages(outcome.answer);
      expect(finding, finding?.detail).toBeUndefined();
      if ((JSON.parse(outcome.answer.body.toString('utf8')) as { messages: unknown[] }).messages.length < 100) return;
    }
  });

  it('after the fuzzing the service is up and a normal login still works', async () => {
    await expectHealthy(fuzz.target);
    await expectNormalLogin(fuzz.service);
    await expectNormalOidcLogin(fuzz.service);
  });
});
