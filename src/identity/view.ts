import type { Identity } from '../store/stores.js';

const seconds = (ms: number): number => Math.floor(ms / 1000);

/** An identity as the Agent API and results show it (reference field names; times in Unix seconds). */
export function identityView(identity: Identity) {
  return {
    Id: identity.id,
    Provider: identity.provider,
    State: identity.state,
    Created: seconds(identity.created),
    Updated: seconds(identity.updated),
    From: seconds(identity.from),
    To: seconds(identity.to),
    Properties: { ...identity.properties },
    Attachments: identity.attachments.map((a) => ({
      Id: a.id,
      ContentType: a.contentType,
      FileName: a.fileName,
      Signature: a.signature,
      Timestamp: seconds(a.timestamp),
    })),
    ClientKeyName: identity.clientKeyName,
    ClientPubKey: identity.clientPubKey,
  };
}
