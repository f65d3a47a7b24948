/**
 * @module Reading a service spec's YAML (with `yaml`) without trusting it. Anyone who may deploy
 * to dev sends it, so whatever the library could choke on is refused first, as a 422 like any
 * other bad spec: nesting deeper than `MAX_DEPTH` and documents of more than `MAX_TOKENS` tokens
 * are stopped by a streaming pass before any tree is built (the library builds trees recursively,
 * and a deep document used to exhaust the stack and then abort the whole process); aliases that
 * are unknown, refer to a node containing them, or expand to more than `MAX_ALIAS_EXPANSIONS`
 * aliases in all (alias bombs) are refused before the document is turned into plain values;
 * duplicate keys are found here in one pass (the library's own check is quadratic: a 700 KiB
 * mapping of 80,000 keys held the event loop for over two minutes).
 */
import { isAlias, isMap, isNode, isPair, isScalar, isSeq, Lexer, LineCounter, parseDocument, Parser, type Document, type Node } from 'yaml';
import type { ErrorDetail } from '../errors';
import { formatPath } from '../../shared/zod-issues';

/** The node at each path of the document (keys as strings, indexes as numbers), as `JSON.stringify(path)`. */
type NodeIndex = Map<string, Node>;

function lineOf(nodes: NodeIndex, lines: LineCounter, path: readonly PropertyKey[]): number | undefined {
  // The deepest node on the path that exists: a missing key is reported at its parent. Looked up
  // in the index, not searched for: thousands of unknown keys would make the search quadratic.
  for (let n = path.length; n >= 0; n--) {
    const node = nodes.get(JSON.stringify(path.slice(0, n)));
    if (node?.range) return lines.linePos(node.range[0]).line;
  }
  return undefined;
}

/** No valid service spec nests deeper than 4 (`secrets.vault[0].env`); far below where the stack would run out. */
export const MAX_DEPTH = 32;
/** Tokens of the YAML lexer (a key, a value, an indicator, a line break ...): a service spec has hundreds. */
export const MAX_TOKENS = 50_000;
/** Aliases resolved in all, counting those inside what each alias repeats. */
export const MAX_ALIAS_EXPANSIONS = 100;

const COLLECTION_TOKENS = new Set(['block-map', 'block-seq', 'flow-collection']);

/**
 * The first limit the text breaks, found while streaming it through the library's lexer and
 * parser, which keep their nesting in an array rather than on the call stack: a document too deep
 * or too long is refused after at most `MAX_DEPTH` levels or `MAX_TOKENS` tokens of work.
 */
function shapeProblem(text: string): ErrorDetail | undefined {
  const lines = new LineCounter();
  lines.addNewLine(0); // the first line starts at 0, as Parser.parse() would record
  const parser = new Parser(lines.addNewLine);
  let tokens = 0;
  for (const lexeme of new Lexer().lex(text)) {
    // The documents it yields are dropped: parseDocument builds them once the text passed.
    for (const _document of parser.next(lexeme));
    let message: string | undefined;
    if (++tokens > MAX_TOKENS) message = `the spec is too large: YAML is limited to ${MAX_TOKENS} tokens`;
    let depth = 0;
    for (const token of parser.stack) if (COLLECTION_TOKENS.has(token.type)) depth++;
    if (depth > MAX_DEPTH) message = `nesting is limited to ${MAX_DEPTH} levels`;
    if (message) return { path: '(root)', message, line: lines.linePos(parser.offset).line };
  }
  return undefined;
}

/** An alias's name as quoted back: the client chose its length. */
const aliasName = (name: string): string => (name.length > 64 ? `${name.slice(0, 64)}…` : name);

const TOO_MANY_ALIASES = `aliases are limited to ${MAX_ALIAS_EXPANSIONS} expansions in all, counting the aliases inside what an alias repeats`;

/**
 * What the library would accept but a service spec must not hold: duplicate keys, keys that are
 * collections or aliases, aliases without an anchor before them, aliases inside the node they
 * refer to (a cycle), and more than `MAX_ALIAS_EXPANSIONS` alias expansions in all; and the index
 * of nodes by path that places the schema's problems on their lines. Recursion is safe here:
 * `shapeProblem` bounded the depth.
 */
function inspect(doc: Document, lines: LineCounter): { problems: ErrorDetail[]; nodes: NodeIndex } {
  const details: ErrorDetail[] = [];
  const nodes: NodeIndex = new Map();
  const anchors = new Map<string, Node>();
  /** Alias expansions inside each anchored node walked so far, its aliases' own included. */
  const expansionsOf = new Map<Node, number>();
  /** The nodes being walked: an alias to one of them is a cycle. */
  const open = new Set<Node>();
  let expanded = 0;

  function problem(node: Node, path: readonly PropertyKey[], message: string): void {
    const line = node.range ? lines.linePos(node.range[0]).line : undefined;
    details.push({ path: formatPath(path) || '(root)', message, ...(line ? { line } : {}) });
  }

  /** Walks `node` in document order, as the library resolves aliases; returns its alias expansions. */
  function walk(node: unknown, path: readonly PropertyKey[]): number {
    if (!isNode(node)) return 0;
    const at = JSON.stringify(path);
    if (!nodes.has(at)) nodes.set(at, node);
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (!target) {
        const name = aliasName(node.source);
        problem(node, path, `unknown alias *${name}: an alias must follow its anchor &${name}`);
        return 0;
      }
      if (open.has(target)) {
        problem(node, path, `alias *${aliasName(node.source)} refers to a node that contains it`);
        return 0;
      }
      // Saturated: an alias bomb's count grows exponentially with its lines.
      const count = Math.min(1 + (expansionsOf.get(target) ?? 0), MAX_ALIAS_EXPANSIONS + 1);
      if (expanded <= MAX_ALIAS_EXPANSIONS && expanded + count > MAX_ALIAS_EXPANSIONS) problem(node, path, TOO_MANY_ALIASES);
      expanded = Math.min(expanded + count, MAX_ALIAS_EXPANSIONS + 1);
      return count;
    }
    // An anchor names its node from the node's start, so an alias inside it is a cycle.
    if (node.anchor) anchors.set(node.anchor, node);
    open.add(node);
    let inside = 0;
    if (isMap(node)) {
      const names = new Set<string>();
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        inside += walk(pair.key, path);
        let name = '';
        if (isNode(pair.key) && !isScalar(pair.key)) {
          problem(pair.key, path, 'keys must be plain values, not collections or aliases');
        } else if (isScalar(pair.key)) {
          // The property name the library's toJS gives the key.
          name = pair.key.value === null ? '' : String(pair.key.value);
          if (names.has(name)) problem(pair.key, [...path, name], 'duplicate key');
          names.add(name);
        }
        inside += walk(pair.value, [...path, name]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => {
        inside += walk(item, [...path, index]);
      });
    }
    open.delete(node);
    inside = Math.min(inside, MAX_ALIAS_EXPANSIONS + 1);
    if (node.anchor) expansionsOf.set(node, inside);
    return inside;
  }

  walk(doc.contents, []);
  return { problems: details, nodes };
}

/**
 * The first line of one of the YAML library's syntax errors, without its position (the detail
 * carries the line) and without the name of a JavaScript error it wraps (a tag that is not a
 * valid URI comes as `URIError: URI malformed`): the client learns what is wrong with its text,
 * never what the server runs on.
 */
function syntaxMessage(message: string): string {
  return message
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .replace(/\b[A-Z][A-Za-z]*Error: /g, '');
}

/** The YAML as plain values, and the line of each path in it; or every problem that stops it. */
export type YamlResult = { ok: true; value: unknown; lineOf(path: readonly PropertyKey[]): number | undefined } | { ok: false; details: ErrorDetail[] };

/** Parses a spec's YAML into plain values, refusing what the library could choke on. */
export function readYaml(text: string): YamlResult {
  const shape = shapeProblem(text);
  if (shape) return { ok: false, details: [shape] };
  const lines = new LineCounter();
  // uniqueKeys off: inspect finds duplicates in linear time. logLevel 'error': the
  // library's warnings are about the client's input and must not reach the server's stderr.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: false, logLevel: 'error' });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      details: doc.errors.map((e) => ({
        path: '(root)',
        message: `YAML syntax error: ${syntaxMessage(e.message)}`,
        ...(e.linePos ? { line: e.linePos[0].line } : {}),
      })),
    };
  }
  const { problems, nodes } = inspect(doc, lines);
  if (problems.length > 0) return { ok: false, details: problems };
  let value: unknown;
  try {
    // The library's own alias limit stays as a backstop, above ours so that ours (with its line)
    // speaks first; YAML 1.1 merge keys (`<<`) of something else than a mapping also throw here.
    value = doc.toJS({ maxAliasCount: 10 * MAX_ALIAS_EXPANSIONS });
  } catch (err) {
    // Only the first line of the library's message: it is about the input, never a stack.
    const message =
      err instanceof ReferenceError && /alias/i.test(err.message)
        ? TOO_MANY_ALIASES
        : `the YAML cannot be turned into values: ${String((err as Error).message).split('\n')[0]}`;
    return { ok: false, details: [{ path: '(root)', message }] };
  }
  return { ok: true, value, lineOf: (path) => lineOf(nodes, lines, path) };
}
