/** @module Reading a password: from standard input (`--password-stdin`) or asked on the terminal without echo (docs/cli.md). */
import { CliError, usageError } from './errors';

/** Reads all of stdin; the trailing newline is not part of the password. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    let value = '';
    const wasRaw = stdin.isRaw;
    // Echo goes off before the question is shown, as getpass(3) does: an answer typed the moment
    // the question appears must never reach the screen.
    stdin.setRawMode(true);
    process.stderr.write(question);
    stdin.resume();
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(wasRaw);
      stdin.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new CliError('cancelled', 'cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** A password to read: what it is (for messages) and the question that asks for it on a terminal. */
export interface PasswordQuestion {
  what: string;
  ask: string;
}

/**
 * The passwords `questions` ask for: from standard input when `fromStdin` (one a line; a single
 * one is all of stdin but its trailing newline), else asked on the terminal without echo, the
 * last one twice when `confirmLast`. A usage error when there is no terminal to ask on, a line is
 * missing or a password is empty.
 */
export async function readPasswords(fromStdin: boolean | undefined, questions: PasswordQuestion[], confirmLast = false): Promise<string[]> {
  let answers: string[] = [];
  if (fromStdin) {
    const text = await readStdin();
    answers = questions.length === 1 ? [text] : text.split(/\r?\n/);
    if (answers.length !== questions.length) {
      throw usageError(`standard input must hold ${questions.map((q) => q.what).join(', then ')}, one a line`);
    }
  } else if (process.stdin.isTTY) {
    for (const q of questions) answers.push(await askHidden(q.ask));
    if (confirmLast && (await askHidden('Again, to be sure: ')) !== answers.at(-1)) {
      throw new CliError(`the two ${questions.at(-1)!.what}s typed differ; nothing was changed`, 'not_confirmed');
    }
  } else {
    throw usageError('no terminal to ask for the password on; pipe it in with --password-stdin');
  }
  const empty = questions.find((_, i) => !answers[i]);
  if (empty) throw usageError(`the ${empty.what} is empty`);
  return answers;
}
