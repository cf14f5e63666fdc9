import { describe, expect, it } from 'vitest';
import type { Identity, LoginCode } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// SignatureReads (src/store/signature-reads.ts) on every backend: a signature's code and identity in one
// statement, each read exactly as its own store reads it.

const NOW = 1_700_000_000_000;

const code = (id: string, over: Partial<LoginCode> = {}): LoginCode => ({
  code: id, tabId: 'tab-1234', sessionHash: 'h', origin: 'https://a.example', purpose: `purpose ${id}`, propertyFilter: 'A,B',
  attachmentFilter: 'photo.png', serviceId: '', agentApiTimeout: 60, nonce: 'n', createdAt: NOW, expiresAt: NOW + 300_000, state: 'pending',
  legalId: null, signedAt: null, scanSeconds: 30, fetchedAt: NOW + 1, bindingHash: 'b'.repeat(64), ...over,
});

const identity = (id: string, over: Partial<Identity> = {}): Identity => ({
  id, provider: 'tabwire', state: 'Approved', created: NOW, updated: NOW + 1, from: NOW, to: NOW + 86_400_000,
  properties: { FIRST: 'Ada', LAST: 'Lovelace' }, attachments: [{ id: 'att-1', fileName: 'photo.png', contentType: 'image/png', signature: 'sig', timestamp: NOW }],
  clientKeyName: 'ed25519', clientPubKey: Buffer.alloc(32, 1).toString('base64'), accountId: 'acct-1', ...over,
});

describe.each(BACKENDS)('signature reads on $name', (backend) => {
  const s = useStores(backend);

  it('answers the code and the identity as codes.get and identities.get do', async () => {
    await s.store.codes.insert(code('sig-1'));
    await s.store.identities.insert(identity('ada@sig'));
    const read = await s.other.signatureReads.read('sig-1', 'ada@sig');
    expect(read).toEqual({ code: await s.other.codes.get('sig-1'), identity: await s.other.identities.get('ada@sig') });
    expect(read?.identity).toEqual(identity('ada@sig'));
    expect(read?.code).toEqual(code('sig-1'));
  });

  it('a settled code reads with its tab event and published flag; an identity with a key problem keeps it', async () => {
    await s.store.codes.insert(code('sig-2'));
    await s.store.codes.settle('sig-2', { state: 'approved', legalId: 'grace@sig', now: NOW + 5, tabEvent: { type: 'SignatureReceived', data: { n: 2 } } });
    await s.store.identities.insert(identity('grace@sig', { keyProblem: 'small_order', accountId: null }));
    const read = await s.other.signatureReads.read('sig-2', 'grace@sig');
    expect(read?.code).toEqual(await s.other.codes.get('sig-2'));
    expect(read?.code).toMatchObject({ state: 'approved', published: false, tabEvent: { type: 'SignatureReceived', data: { n: 2 } } });
    expect(read?.identity).toEqual(await s.other.identities.get('grace@sig'));
    expect(read?.identity).toMatchObject({ keyProblem: 'small_order', accountId: null });
  });

  it('an unknown identity reads as undefined beside its code; an unknown code as undefined', async () => {
    await s.store.codes.insert(code('sig-3'));
    expect(await s.other.signatureReads.read('sig-3', 'nobody@sig')).toEqual({ code: code('sig-3'), identity: undefined });
    await s.store.identities.insert(identity('ada2@sig'));
    expect(await s.other.signatureReads.read('no-such-code', 'ada2@sig')).toBeUndefined();
  });
});
