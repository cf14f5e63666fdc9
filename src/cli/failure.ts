/**
 * Exit statuses of the CLI (docs/cli.md "Exit status"): scripts embedding `tabwire login` tell a
 * rejection or a timeout from a broken set-up without parsing messages.
 */
export const ExitStatus = {
  ok: 0,
  /** Anything that failed: refused by the service, unreachable, a result that does not verify. */
  failed: 1,
  /** The command was called wrongly (unknown flag, missing value, bad value). */
  usage: 2,
  /** `login`: the person rejected the request. */
  rejected: 3,
  /** `login`: no answer within `--timeout`. */
  timedOut: 4,
} as const;

/** A command that ran and failed: its message goes to stderr, and the process exits with `status`. */
export class CommandFailure extends Error {
  override name = 'CommandFailure';
  constructor(
    message: string,
    readonly status: number = ExitStatus.failed,
  ) {
    super(message);
  }
}
