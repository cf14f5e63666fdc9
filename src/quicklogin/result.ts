import type { Identity } from '../store/stores.js';
import { identityView } from '../identity/view.js';
import type { QuickLoginResult } from '../protocol/events.js';

/**
 * Parses a filter: a comma-separated list of names (docs/signing.md, e.g. "PNR,COUNTRY").
 * Absent or blank means "no filter": everything is included (docs/signing.md).
 */
export function parseFilter(filter: string | null | undefined): Set<string> | undefined {
  if (filter === null || filter === undefined) return undefined;
  const names = filter.split(',').map((n) => n.trim()).filter((n) => n !== '');
  return names.length === 0 ? undefined : new Set(names);
}

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

/** The `SignatureReceived` data (docs/signing.md), filtered, with the service's signature last. */
export function buildResult(input: ResultInput): QuickLoginResult {
  const { identity } = input;
  const properties = parseFilter(input.propertyFilter);
  const attachments = parseFilter(input.attachmentFilter);
  const view = identityView(identity);
  const unsigned: Omit<QuickLoginResult, 'ServerSignature'> = {
    ...view,
    Key: identity.clientPubKey,
    Properties: Object.fromEntries(Object.entries(view.Properties).filter(([name]) => !properties || properties.has(name))),
    Attachments: view.Attachments.filter((a) => !attachments || attachments.has(a.FileName)).map((a) => ({
      ...a,
      Url: `${input.attachmentUrlPrefix}/${encodeURIComponent(a.Id)}`,
    })),
    HasClientPublicKey: true,
    HasClientSignature: true,
    ClientSignature: input.clientSignature,
    Purpose: input.purpose,
    ...(input.agentToken ? { AgentApiToken: input.agentToken.jwt, AgentApiExpires: input.agentToken.expires } : {}),
  };
  return { ...unsigned, ServerSignature: input.signServer(unsigned) };
}
