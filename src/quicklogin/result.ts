import type { Identity } from '../identity/identity.js';
import type { QuickLoginResult } from '../protocol/events.js';

/**
 * Parses a filter: a comma-separated list of names (REFERENCE-CLIENTS.md, e.g. "PNR,COUNTRY").
 * Absent or blank means "no filter": everything is included (docs/signing.md).
 */
export function parseFilter(filter: string | null | undefined): Set<string> | undefined {
  if (filter === null || filter === undefined) return undefined;
  const names = filter.split(',').map((n) => n.trim()).filter((n) => n !== '');
  return names.length === 0 ? undefined : new Set(names);
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

export interface ResultInput {
  identity: Identity;
  purpose: string;
  propertyFilter: string | null;
  attachmentFilter: string | null;
  clientSignature: string;
  /** Prefix of attachment links; the attachment id is appended (see docs/agent-api.md "Attachments"). */
  attachmentUrlPrefix: string;
  /** Session-proxy mode: a token for the signer's own agent account. */
  agentToken?: { jwt: string; expires: number } | undefined;
  signServer: (unsigned: Omit<QuickLoginResult, 'ServerSignature'>) => string;
}

/** The `SignatureReceived` data (ARCHITECTURE.md §2), filtered, with the service's signature last. */
export function buildResult(input: ResultInput): QuickLoginResult {
  const { identity } = input;
  const properties = parseFilter(input.propertyFilter);
  const attachments = parseFilter(input.attachmentFilter);
  const unsigned: Omit<QuickLoginResult, 'ServerSignature'> = {
    Id: identity.id,
    Key: identity.clientPubKey,
    Provider: identity.provider,
    State: identity.state,
    Created: seconds(identity.created),
    Updated: seconds(identity.updated),
    From: seconds(identity.from),
    To: seconds(identity.to),
    Properties: Object.fromEntries(
      Object.entries(identity.properties).filter(([name]) => !properties || properties.has(name)),
    ),
    Attachments: identity.attachments
      .filter((a) => !attachments || attachments.has(a.fileName))
      .map((a) => ({
        Id: a.id,
        ContentType: a.contentType,
        FileName: a.fileName,
        Signature: a.signature,
        Timestamp: seconds(a.timestamp),
        Url: `${input.attachmentUrlPrefix}/${encodeURIComponent(a.id)}`,
      })),
    ClientKeyName: identity.clientKeyName,
    HasClientPublicKey: true,
    ClientPubKey: identity.clientPubKey,
    HasClientSignature: true,
    ClientSignature: input.clientSignature,
    Purpose: input.purpose,
    ...(input.agentToken ? { AgentApiToken: input.agentToken.jwt, AgentApiExpires: input.agentToken.expires } : {}),
  };
  return { ...unsigned, ServerSignature: input.signServer(unsigned) };
}
