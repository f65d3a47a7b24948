/**
 * @module The Service Spec Definition (docs/http-api.md, deployments): YAML read with `yaml`
 * (`./spec-yaml`, which refuses whatever the library could choke on), checked with zod, and every
 * problem reported at once with its path and line.
 */
import { z } from 'zod';
import type { ErrorDetail } from '../errors';
import { closestName } from '../../shared/closest-name';
import { formatPath } from '../../shared/zod-issues';
import { readYaml } from './spec-yaml';

export { MAX_ALIAS_EXPANSIONS, MAX_DEPTH, MAX_TOKENS } from './spec-yaml';

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
    /** The container's HTTP port (the `docker` runtime's ingress sends requests there). */
    port: z.number().int('must be a whole number').min(1).max(65535).default(8080),
  }),
  deployment: z.strictObject({
    replicas: z.number().int('must be a whole number').min(0).max(1000),
    strategy: z.enum(['rolling', 'canary']).default('rolling'),
    canary: z.strictObject({ weight: z.number().int().min(1).max(99).default(10) }).optional(),
    /** An HTTP check of the container's port; without it, the image's own HEALTHCHECK, else running is ready. */
    health: z
      .strictObject({
        path: z
          .string()
          .regex(/^\/[^\s]*$/, 'must be a path starting with /')
          .max(1024),
        interval_seconds: z.number().int().min(1).max(3600).default(10),
        timeout_seconds: z.number().int().min(1).max(600).default(5),
        retries: z.number().int().min(1).max(100).default(3),
      })
      .optional(),
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

function message(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') return issue.issues[0]?.message ?? issue.message;
  return issue.message;
}

/** The keys the spec allows in the mapping at `path` (none where it is not a mapping of known keys). */
function keysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.core.$ZodType | undefined = serviceSpecSchema;
  for (const segment of path) {
    while (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) schema = schema.unwrap() as z.core.$ZodType;
    if (schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.core.$ZodType>)[String(segment)];
    else if (schema instanceof z.ZodArray) schema = schema.element as z.core.$ZodType;
    else return [];
  }
  while (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) schema = schema.unwrap() as z.core.$ZodType;
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** `unknown key`, with the allowed key it most likely misspells (`replica` → `replicas`). */
function unknownKey(path: readonly PropertyKey[]): string {
  const key = String(path.at(-1));
  const near = closestName(key, keysAt(path.slice(0, -1)));
  return near ? `unknown key; did you mean ${near}?` : 'unknown key';
}

/** Parses and validates a service spec; the details name every problem with its path and line. */
export function parseSpec(text: string): SpecResult {
  const yaml = readYaml(text);
  if (!yaml.ok) return yaml;
  const { value } = yaml;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, details: [{ path: '(root)', message: 'the spec must be a YAML mapping with service and deployment', line: 1 }] };
  }
  const parsed = serviceSpecSchema.safeParse(value);
  if (!parsed.success) {
    const details: ErrorDetail[] = [];
    for (const issue of parsed.error.issues) {
      const paths = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k]) : [issue.path];
      for (const p of paths) {
        const line = yaml.lineOf(p);
        details.push({
          path: formatPath(p) || '(root)',
          message: issue.code === 'unrecognized_keys' ? unknownKey(p) : message(issue),
          ...(line ? { line } : {}),
        });
      }
    }
    return { ok: false, details };
  }
  return { ok: true, spec: parsed.data, revision: revisionOf(parsed.data.service.image) };
}
