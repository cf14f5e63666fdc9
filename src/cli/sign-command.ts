import { createInterface } from 'node:readline';
import { readKeyFile } from '../identity/key-file.js';
import type { Decision } from '../quicklogin/challenge.js';
import { CommandFailure } from './failure.js';
import { parseSignUrl } from './sign-url.js';
import { describeRequest, fetchSignInfo, postDecision } from './signer.js';

export interface SignArgs {
  signUrl: string;
  keyFile: string;
  yes: boolean;
  reject: boolean;
}

export interface SignIo {
  input: NodeJS.ReadableStream;
  /** Where the request and the question go (a person reads them); the outcome is the returned text. */
  output: NodeJS.WritableStream;
}

/**
 * Reads one answer line. Resolves undefined when the input ends first (stdin closed, `</dev/null`, a
 * finished pipe): no answer is not a "no", and nothing may be signed or rejected on its behalf.
 */
function ask(io: SignIo, question: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: io.input, output: io.output, terminal: false });
    let answered = false;
    io.output.write(question);
    rl.once('line', (line) => {
      answered = true;
      rl.close();
      // A terminal echoed the Enter; an answer from a pipe was not shown, so end the question's line here.
      if ((io.input as { isTTY?: boolean }).isTTY !== true) io.output.write('\n');
      resolve(line);
    });
    rl.once('close', () => {
      if (!answered) resolve(undefined);
    });
  });
}

const isYes = (answer: string): boolean => ['y', 'yes'].includes(answer.trim().toLowerCase());

/**
 * `tabwire sign <signUrl> --key FILE [--yes] [--reject]`: show, confirm, sign, post (docs/cli.md).
 * Declining an approval signs and sends a rejection, so the waiting page is told at once instead of
 * waiting for the code to expire (docs/signing.md: a rejection needs the key too).
 */
export async function signCommand(args: SignArgs, io: SignIo): Promise<string> {
  const url = parseSignUrl(args.signUrl);
  const { legalId, key } = readKeyFile(args.keyFile);
  const info = await fetchSignInfo(url.href);
  io.output.write(`${describeRequest(info)}\nSigning as ${legalId}.\n`);
  let decision: Decision = args.reject ? 'reject' : 'approve';
  if (!args.yes) {
    const question =
      decision === 'approve'
        ? 'Approve? [y/N] (anything but y signs a rejection, so the page stops waiting) '
        : 'Reject? [y/N] (anything but y leaves the request unanswered) ';
    const answer = await ask(io, question);
    if (answer === undefined) {
      io.output.write('\n');
      throw new CommandFailure(
        'no answer: standard input closed before a decision. Nothing was signed. ' +
          'Run it in a terminal, or decide on the command line: --yes approves, --reject --yes rejects.',
      );
    }
    if (!isYes(answer)) {
      if (decision === 'reject') return 'Nothing signed; the request stays open until it expires.\n';
      decision = 'reject';
    }
  }
  const { state } = await postDecision(url.href, info, legalId, key, decision);
  return `${state}\n`;
}
