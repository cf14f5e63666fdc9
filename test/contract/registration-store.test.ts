import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ServiceRegistration, StoredAttachment } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// ServiceRegistrationStore and AttachmentStore (src/store/stores.ts) on every backend.

const NOW = 1_700_000_000_000;
const registration = (serviceId: string, expiresAt = NOW + 60_000): ServiceRegistration => ({
  serviceId, callbackUrl: 'https://backend.example/cb?x=1', sessionId: 's'.repeat(256), webhookSecret: 'whsec_abc', createdAt: NOW, expiresAt,
});

describe.each(BACKENDS)('service registration store on $name', (backend) => {
  const s = useStores(backend);

  it('reads a registration back whole, renews it, and purges expired ones', async () => {
    await s.store.services.insert(registration('svc-1'));
    await s.store.services.insert(registration('svc-old', 1_000));
    expect(await s.other.services.get('svc-1')).toEqual(registration('svc-1'));
    expect(await s.other.services.renew('svc-1', NOW + 120_000)).toBe(true);
    expect((await s.store.services.get('svc-1'))!.expiresAt).toBe(NOW + 120_000);
    expect(await s.store.services.renew('svc-none', NOW)).toBe(false);
    expect(await s.store.services.deleteExpired(2_000)).toBe(1);
    expect(await s.store.services.get('svc-old')).toBeUndefined();
    // A lookup with a longer id than any stored one is simply not found.
    expect(await s.store.services.get('x'.repeat(128))).toBeUndefined();
  });
});

describe.each(BACKENDS)('attachment store on $name', (backend) => {
  const s = useStores(backend);

  it('keeps every byte of the content', async () => {
    const attachment: StoredAttachment = {
      id: 'att-1', identityId: 'id@legal.test', contentType: 'application/octet-stream', fileName: 'bytes.bin',
      content: Buffer.concat([Buffer.from([0, 255, 0, 128]), randomBytes(64 * 1024)]), createdAt: NOW,
    };
    await s.store.attachments.insert(attachment);
    expect(await s.other.attachments.get('att-1')).toEqual(attachment);
    expect(await s.other.attachments.get('att-none')).toBeUndefined();
  });
});
