import { createInterface } from 'node:readline/promises';
import { readKeyFile } from '../identity/key-file.js';
import { describeRequest, fetchSignInfo, postDecision } from './signer.js';

export interface SignArgs {
  signUrl: string;
  keyFile: string;
  yes: boolean;
  reject: boolean;
}

/** `tabwire sign <signUrl> --key FILE [--yes] [--reject]`: show, confirm, sign, post. */
export async function signCommand(args: SignArgs, io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }): Promise<string> {
  const { legalId, key } = readKeyFile(args.keyFile);
  const info = await fetchSignInfo(args.signUrl);
  const decision = args.reject ? 'reject' : 'approve';
  io.output.write(`${describeRequest(info)}\nSigning as ${legalId}.\n`);
  if (!args.yes) {
    const rl = createInterface({ input: io.input, output: io.output });
    const answer = (await rl.question(`${decision === 'approve' ? 'Approve' : 'Reject'}? [y/N] `)).trim().toLowerCase();
    rl.close();
    if (answer !== 'y' && answer !== 'yes') return 'Nothing signed.\n';
  }
  const { state } = await postDecision(args.signUrl, info, legalId, key, decision);
  return `${state}\n`;
}
