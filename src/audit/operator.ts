import { InvalidArgumentError, Option } from 'commander';
import { operatorActor, type Actor } from './actor.js';

/**
 * `--actor NAME` of the operator commands that change things: whom the audit log names. Without it:
 * RISKWATCH_OPERATOR, else the OS user (operatorActor). Features add it to their commands.
 */
export const actorOption = () =>
  new Option(
    '--actor <name>',
    'who makes the change, as the audit log names them (default: $RISKWATCH_OPERATOR, else the OS user)',
  ).argParser((value: string) => {
    const name = value.trim();
    if (!name || name.length > 300) throw new InvalidArgumentError('expected 1 to 300 characters');
    return name;
  });

/** The operator of a command that took `actorOption()`. */
export const commandActor = (opts: { actor?: string }): Actor => operatorActor(opts.actor);
