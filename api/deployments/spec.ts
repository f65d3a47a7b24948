/**
 * @module The Service Spec Definition (docs/http-api.md, deployments): YAML parsed with `yaml`, checked
 * with zod, and every problem reported at once with its path and line.
 *
 * Anyone who may deploy to dev sends this YAML, so whatever the library could choke on is refused
 * first, as a 422 like any other bad spec: nesting deeper than `MAX_DEPTH` and documents of more
 * than `MAX_TOKENS` tokens are stopped by a streaming pass before any tree is built (the library
 * builds trees recursively, and a deep document used to exhaust the stack and then abort the whole
 * process); aliases that are unknown, refer to a node containing them, or expand to more than
 * `MAX_ALIAS_EXPANSIONS` aliases in all (alias bombs) are refused before the document is turned
 * into plain values; duplicate keys are found here in one pass (the library's own check is
 * quadratic: a 700 KiB mapping of 80,000 keys held the event loop for over two minutes).
 */
import {
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  parseDocument,
  Parser,
  type Document,
  type Node,
} from 'yaml';
import { z } from 'zod';
import type { ErrorDetail } from '../errors';
import { formatPath } from '../../shared/zod-issues';

export const SERVICE_NAME = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** `host[:port]/repository/.../name:tag`, the tag `v?MAJOR.MINOR.PATCH`. */
export const IMAGE = /^[A-Za-z0-9.-]+(?::\d{1,5})?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*){2,}:(?<tag>v?\d+\.\d+\.\d+)$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const PROTOCOLS = ['diagnostics', 'shell', 'file-transfer'] as const;

const remoteAccess = z
  .strictObject({
    enabled: z.boolean(),
    'broker-url': z
      .string()
      .refine((u) => /^wss?:\/\/[^/\s]+/.test(u) && URL.canParse(u), 'must be a ws:// or wss:// URL')
      .optional(),
    protocols: z
      .array(z.enum(PROTOCOLS))
      .min(1, 'must name at least one protocol')
      .refine((p) => new Set(p).size === p.length, 'must not repeat a protocol')
      .optional(),
  })
  .superRefine((ra, ctx) => {
    if (!ra.enabled) return;
    if (ra['broker-url'] === undefined) ctx.addIssue({ code: 'custom', path: ['broker-url'], message: 'is required when enabled is true' });
    if (ra.protocols === undefined) ctx.addIssue({ code: 'custom', path: ['protocols'], message: 'is required when enabled is true' });
  });

export const serviceSpecSchema = z.strictObject({
  service: z.strictObject({
    name: z.string().regex(SERVICE_NAME, 'must be a DNS label: lowercase letters, digits and -, starting with a letter, at most 63'),
    image: z.string().regex(IMAGE, 'must be host/repository/name:tag with a tag like 1.4.2 or v1.4.2'),
  }),
  deployment: z.strictObject({
    replicas: z.number().int('must be a whole number').min(0).max(1000),
    strategy: z.enum(['rolling', 'canary']).default('rolling'),
    canary: z.strictObject({ weight: z.number().int().min(1).max(99).default(10) }).optional(),
  }),
  'remote-access': remoteAccess.optional(),
  observability: z.strictObject({ logs: z.boolean().optional(), metrics: z.boolean().optional(), traces: z.boolean().optional() }).optional(),
  secrets: z
    .strictObject({
      vault: z.array(
        z.strictObject({
          path: z.string().min(1),
          env: z.string().regex(ENV_NAME, 'must be an environment variable name: A-Z, 0-9 and _, not starting with a digit'),
        }),
      ),
    })
    .optional(),
  config: z
    .strictObject({
      env: z.record(
        z.string().regex(ENV_NAME, 'must be an environment variable name: A-Z, 0-9 and _, not starting with a digit'),
        z.string({ error: 'must be a string (quote numbers and booleans)' }),
      ),
    })
    .optional(),
});

export type ServiceSpec = z.output<typeof serviceSpecSchema>;

export type SpecResult = { ok: true; spec: ServiceSpec; revision: string } | { ok: false; details: ErrorDetail[] };

/** The revision of an image: its tag with a leading `v` (`:1.4.2` → `v1.4.2`). */
export function revisionOf(image: string): string {
  const tag = IMAGE.exec(image)?.groups?.tag ?? image.slice(image.lastIndexOf(':') + 1);
  return tag.startsWith('v') ? tag : `v${tag}`;
}

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

function message(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) return 'is required';
  if (issue.code === 'invalid_key') return issue.issues[0]?.message ?? issue.message;
  return issue.message;
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

/** Parses and validates a service spec; the details name every problem with its path and line. */
export function parseSpec(text: string): SpecResult {
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
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, details: [{ path: '(root)', message: 'the spec must be a YAML mapping with service and deployment', line: 1 }] };
  }
  const parsed = serviceSpecSchema.safeParse(value);
  if (!parsed.success) {
    const details: ErrorDetail[] = [];
    for (const issue of parsed.error.issues) {
      const paths = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k]) : [issue.path];
      for (const p of paths) {
        const line = lineOf(nodes, lines, p);
        details.push({
          path: formatPath(p) || '(root)',
          message: issue.code === 'unrecognized_keys' ? 'unknown key' : message(issue),
          ...(line ? { line } : {}),
        });
      }
    }
    return { ok: false, details };
  }
  return { ok: true, spec: parsed.data, revision: revisionOf(parsed.data.service.image) };
}
