/**
 * @module A recording as plain text, for reading and grep (`?format=text`): the terminal output
 * of its `o` events, escape sequences and control characters removed. An escape sequence (or a
 * CR LF) split across events is held until its end arrives, so no fragment of one leaks through.
 */
import { Transform } from 'node:stream';
import { parseCastEvent, stripTerminalEscapes } from '../../shared/asciicast';

/** The start of an escape sequence at the end of `text` that is not complete yet, if any. */
function unfinishedTail(text: string): number {
  const esc = text.lastIndexOf('\x1b');
  if (esc >= 0 && text.length - esc < 256) {
    const rest = text.slice(esc);
    if (!/^\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][\s\S]*?(?:\x07|\x1b\\)|[ -/]*[0-~])/.test(rest)) return esc;
  }
  return text.endsWith('\r') ? text.length - 1 : text.length;
}

/** Reads asciicast lines, writes the output they hold as plain UTF-8 text. */
export function castToText(): Transform {
  let partialLine = '';
  let carry = '';
  const take = (line: string): string => {
    const event = parseCastEvent(line);
    if (!event || event[1] !== 'o') return '';
    const text = carry + event[2];
    const cut = unfinishedTail(text);
    carry = text.slice(cut);
    return stripTerminalEscapes(text.slice(0, cut));
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (partialLine + chunk.toString('utf8')).split('\n');
      partialLine = lines.pop()!;
      const out = lines.map(take).join('');
      done(null, out.length > 0 ? out : undefined);
    },
    flush(done) {
      const out = take(partialLine) + stripTerminalEscapes(carry);
      done(null, out.length > 0 ? out : undefined);
    },
  });
}
