import { generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchSigner } from '../../src/callbacks/batch-signer.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const otherKey = generateKeyPairSync('ed25519').publicKey;

/** Contents of random lengths (0 included), as callbacks' `id.timestamp.body` are. */
const contents = (n: number): Buffer[] => Array.from({ length: n }, (_, i) => randomBytes(i % 7 === 0 ? 0 : 1 + ((i * 131) % 2_000)));

describe('BatchSigner: Ed25519 on a thread of its own, in batches', () => {
  let signer: BatchSigner | undefined;
  afterEach(async () => {
    await signer?.close();
    signer = undefined;
  });

  it('gives every content its own valid signature, for many asked at once (several batches) and one at a time', async () => {
    signer = new BatchSigner(privateKey);
    const many = contents(1_200); // more than one batch of 512
    const signatures = await Promise.all(many.map((c) => signer!.sign(c)));
    signatures.forEach((signature, i) => {
      expect(signature.length).toBe(64);
      expect(verify(null, many[i]!, publicKey, signature)).toBe(true);
      // The signature belongs to this content, not to a neighbour of the batch.
      if (i > 0 && !many[i]!.equals(many[i - 1]!)) expect(verify(null, many[i - 1]!, publicKey, signature)).toBe(false);
    });
    expect(verify(null, many[1]!, otherKey, signatures[1]!)).toBe(false);
    for (const c of contents(5)) expect(verify(null, c, publicKey, await signer.sign(c))).toBe(true);
  });

  it('signatures asked for while a batch is with the thread go in the next one and still arrive in their order', async () => {
    signer = new BatchSigner(privateKey);
    const first = contents(50);
    const pending = first.map((c) => signer!.sign(c));
    const later = contents(50).map((c) => c.length === 0 ? Buffer.from('x') : c);
    const laterSigned = later.map((c) => signer!.sign(c));
    const [a, b] = await Promise.all([Promise.all(pending), Promise.all(laterSigned)]);
    a.forEach((s, i) => expect(verify(null, first[i]!, publicKey, s)).toBe(true));
    b.forEach((s, i) => expect(verify(null, later[i]!, publicKey, s)).toBe(true));
  });

  it('closed while signatures are owed, it still delivers them (on the thread pool), and signs after close', async () => {
    signer = new BatchSigner(privateKey);
    const owed = contents(300);
    const pending = owed.map((c) => signer!.sign(c));
    await signer.close();
    const signatures = await Promise.all(pending);
    signatures.forEach((s, i) => expect(verify(null, owed[i]!, publicKey, s)).toBe(true));
    const after = Buffer.from('after close');
    expect(verify(null, after, publicKey, await signer.sign(after))).toBe(true);
  });

  it('a thread that dies mid-batch loses no signature: they are made on the thread pool, and the next batch gets a new thread', async () => {
    signer = new BatchSigner(privateKey);
    const owed = contents(200);
    const pending = owed.map((c) => signer!.sign(c));
    // The thread as the signer holds it; terminating it is what a crash of the thread looks like from outside.
    const worker = (signer as unknown as { worker: { terminate(): Promise<number> } }).worker;
    expect(worker).toBeDefined();
    await worker.terminate();
    const signatures = await Promise.all(pending);
    signatures.forEach((s, i) => expect(verify(null, owed[i]!, publicKey, s)).toBe(true));
    const next = Buffer.from('next batch');
    expect(verify(null, next, publicKey, await signer.sign(next))).toBe(true);
    expect((signer as unknown as { worker: unknown }).worker).not.toBe(worker);
  });
});
