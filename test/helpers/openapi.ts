/**
 * Checks responses against the OpenAPI document (api/operations.ts), so that the document cannot drift
 * from the code: the JSON client (`./http`) runs every response an end-to-end test receives
 * through `checkResponse`, and a mismatch fails the test. A response is matched to its operation
 * by method and path template; its status must be documented there, its content type declared,
 * its JSON body valid against the schema (Ajv, draft 2020-12) and its required headers present.
 * Paths the document does not know (tests poke at unknown routes) must answer an error body of
 * their interface.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { OpenApiDocument, RefObject, ResponseObject } from '../../api/openapi/document';
import { buildApiDocument } from '../../api/operations';
import { dialectOf } from '../../shared/api/errors';

/** What one response said. */
export interface ObservedResponse {
  method: string;
  /** The path as requested (a query string is ignored). */
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

const COMPONENTS = 'https://tether.invalid/openapi/components';

type Json = Record<string, unknown>;

/** `#/components/schemas/X` → the Ajv schema holding the components. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      key === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', `${COMPONENTS}#/$defs/`) : rewriteRefs(v),
    ]),
  );
}

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  literals: number;
  responses: Record<string, ResponseObject | RefObject>;
  operationId: string;
}

/** The router's matching: `{param}` is one segment, case-insensitive, an optional trailing slash. */
function routeOf(method: string, template: string, op: { operationId: string; responses: Route['responses'] }): Route {
  const segments = template.split('/').filter(Boolean);
  const source = segments.map((s) => (/^\{\w+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  return {
    method: method.toUpperCase(),
    template,
    pattern: new RegExp(`^/${source}/?$`, 'i'),
    literals: segments.filter((s) => !s.startsWith('{')).length,
    responses: op.responses,
    operationId: op.operationId,
  };
}

export function createResponseChecker(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  ajv.addSchema({ $id: COMPONENTS, $defs: rewriteRefs(doc.components.schemas) as Json });
  const compiled = new Map<unknown, ValidateFunction>();
  const validatorOf = (schema: Json): ValidateFunction => {
    let validate = compiled.get(schema);
    if (!validate) compiled.set(schema, (validate = ajv.compile(rewriteRefs(schema) as Json)));
    return validate;
  };
  const resolve = <T>(ref: T | RefObject, where: 'responses' | 'headers'): T => {
    if (typeof ref !== 'object' || ref === null || !('$ref' in ref)) return ref as T;
    const name = ref.$ref.replace(`#/components/${where}/`, '');
    const target = (doc.components[where] as Record<string, T> | undefined)?.[name];
    if (!target) throw new Error(`the document refers to ${ref.$ref}, which it does not hold`);
    return target;
  };
  const routes = Object.entries(doc.paths).flatMap(([template, item]) => Object.entries(item).map(([method, op]) => routeOf(method, template, op)));
  const genericError = { contract: schemaOf('Error'), fleet: schemaOf('FleetError') };
  function schemaOf(id: string): Json {
    return { $ref: `#/components/schemas/${id}` };
  }

  const explain = (validate: ValidateFunction) =>
    (validate.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`).join('; ');

  function bodyProblems(schema: Json, text: string): string[] {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return ['the body is not JSON'];
    }
    const validate = validatorOf(schema);
    return validate(body) ? [] : [`body: ${explain(validate)}`];
  }

  /** The operation a request went to: the most specific template that matches. */
  function match(method: string, pathname: string): Route | undefined {
    const candidates = routes.filter((route) => route.method === method.toUpperCase() && route.pattern.test(pathname));
    return candidates.sort((a, b) => b.literals - a.literals)[0];
  }

  /** The problems with one response, none when it is as documented. */
  function problemsOf(r: ObservedResponse, pathname: string, route: Route | undefined): string[] {
    const type = (r.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (!route) {
      // An unknown route: an error of the interface its path belongs to, nothing else.
      if (r.status < 400) return [`no operation of the document matches, yet it answered ${r.status}`];
      if (type !== 'application/json') return [`an unknown route answered ${type || 'no content type'}, not an error body`];
      return bodyProblems(genericError[dialectOf(pathname)], r.text);
    }
    const declared = route.responses[String(r.status)] ?? route.responses.default;
    if (!declared) return [`status ${r.status} is not documented (it documents ${Object.keys(route.responses).join(', ')})`];
    const response = resolve<ResponseObject>(declared, 'responses');
    const problems: string[] = [];
    for (const [name, ref] of Object.entries(response.headers ?? {})) {
      const header = resolve<{ required?: boolean; schema?: Json }>(ref, 'headers');
      const value = r.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`header ${name} is missing`);
      } else if (header.schema && !validatorOf(header.schema)(value)) {
        problems.push(`header ${name}: ${JSON.stringify(value)} is not as documented`);
      }
    }
    const content = response.content ?? {};
    if (Object.keys(content).length === 0) {
      if (r.text !== '') problems.push(`a body was sent (${type}), none is documented`);
      return problems;
    }
    const media = content[type];
    if (!media) {
      if (r.text !== '' || type !== '') problems.push(`content type ${type || '(none)'} is not one of ${Object.keys(content).join(', ')}`);
      return problems;
    }
    if (type === 'application/json') problems.push(...bodyProblems(media.schema, r.text));
    return problems;
  }

  return {
    /** Throws when the response is not as the document says, naming the operation, status and problems. */
    checkResponse(r: ObservedResponse): void {
      const pathname = new URL(r.path, 'http://localhost').pathname;
      const route = match(r.method, pathname);
      const problems = problemsOf(r, pathname, route);
      if (problems.length === 0) return;
      const operation = route ? `${route.operationId} (${route.method} ${route.template})` : `${r.method} ${pathname} (no operation)`;
      const body = r.text.length > 600 ? `${r.text.slice(0, 600)}…` : r.text;
      throw new Error(`the response does not match the OpenAPI document: ${operation} answered ${r.status}:\n  - ${problems.join('\n  - ')}\n  body: ${body}`);
    },
  };
}

let shared: ReturnType<typeof createResponseChecker> | undefined;

/** Checks a response against the document the code builds (built once per test file). */
export function checkResponse(r: ObservedResponse): void {
  shared ??= createResponseChecker(buildApiDocument());
  shared.checkResponse(r);
}
