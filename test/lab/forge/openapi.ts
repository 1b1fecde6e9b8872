// GitHub's published OpenAPI description (@octokit/openapi, api.github.com) as the contract of
// the lab forge: operations resolved by method + path template, request parameters and bodies
// and the fake's own responses validated with ajv. The description is parsed once per process;
// validators are compiled lazily, per operation, and cached.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';

type Json = unknown;
type JsonObject = Record<string, Json>;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonObject;
}

export interface Operation {
  method: string;
  template: string;
  operationId: string;
  spec: JsonObject;
}

interface Route {
  method: string;
  template: string;
  regex: RegExp;
  names: string[];
  literals: number;
}

export interface Match {
  op: Operation;
  pathParams: Record<string, string>;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

let specPromise: Promise<JsonObject> | undefined;

/** The api.github.com description (not the dereferenced one: it is 5x larger), parsed once per process. */
export function loadGitHubDescription(): Promise<JsonObject> {
  specPromise ??= (async () => {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve('@octokit/openapi/package.json');
    const text = await readFile(join(dirname(pkg), 'generated', 'api.github.com.json'), 'utf8');
    return JSON.parse(text) as JsonObject;
  })();
  return specPromise;
}

function isObject(v: Json): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const COMPONENT_REF = '#/components/schemas/';
const COMPONENT_ID = 'urn:github:schemas:';

/**
 * OpenAPI 3.0 schema → something ajv takes: `nullable` without `type` becomes an `anyOf` with
 * null, `nullable` with an `enum` gets null in the enum, annotations are dropped, and
 * `#/components/schemas/X` refs point at X's own ajv schema id, so each component is compiled
 * once (inlineRefs: false) and shared by every operation that uses it.
 */
function toAjv(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(toAjv);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'example' || k === 'examples' || k === 'description' || k === 'x-github') continue;
    if (k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT_REF)) out[k] = COMPONENT_ID + v.slice(COMPONENT_REF.length);
    else out[k] = k === 'properties' || k === 'patternProperties' ? mapValues(v, toAjv) : toAjv(v);
  }
  return out.nullable === true ? nullable(out) : out;
}

function nullable(out: JsonObject): Json {
  const values = out.enum;
  if (Array.isArray(values) && !values.includes(null)) out.enum = [...(values as Json[]), null];
  if (out.type !== undefined) return out;
  delete out.nullable;
  return { anyOf: [{ type: 'null' }, out] };
}

function mapValues(v: Json, f: (x: Json) => Json): Json {
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, f(x)]));
}

function collectRefs(schema: Json, into: Set<string>): void {
  if (Array.isArray(schema)) {
    for (const s of schema) collectRefs(s, into);
    return;
  }
  if (!isObject(schema)) return;
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$ref' && typeof v === 'string') into.add(v);
    else collectRefs(v, into);
  }
}

function formatErrors(where: string, errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : '';
    return `${where}${e.instancePath || ''} ${e.message ?? e.keyword}${extra}`.trim();
  });
}

export class GitHubContract {
  private readonly routes: Route[] = [];
  private readonly ajv: Ajv;
  private readonly paramAjv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly added = new WeakMap<Ajv, Set<string>>();

  constructor(private readonly spec: JsonObject) {
    const options = { strict: false, allErrors: true, logger: false as const, validateSchema: false, inlineRefs: false };
    this.ajv = addFormats(new Ajv(options));
    this.paramAjv = addFormats(new Ajv({ ...options, coerceTypes: 'array' as const }));
    const paths = spec.paths as Record<string, Record<string, JsonObject>>;
    for (const [template, item] of Object.entries(paths)) {
      const names: string[] = [];
      const parts = template.split('/').map((seg) => seg.replace(/\{([^}]+)\}|[^{]+/g, (m, name?: string) => {
        if (name === undefined) return escapeRegex(m);
        names.push(name);
        return '([^/]+)';
      }));
      const regex = new RegExp(`^${parts.join('/')}$`);
      const literals = template.split('/').filter((s) => s && !s.includes('{')).length;
      for (const method of Object.keys(item)) {
        if (['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method)) {
          this.routes.push({ method, template, regex, names, literals });
        }
      }
    }
    // Literal segments win over templates (`/releases/latest` over `/releases/{release_id}`).
    this.routes.sort((a, b) => b.literals - a.literals);
  }

  static async load(): Promise<GitHubContract> {
    return new GitHubContract(await loadGitHubDescription());
  }

  match(method: string, path: string): Match | undefined {
    const m = method.toLowerCase();
    for (const r of this.routes) {
      if (r.method !== m) continue;
      const found = r.regex.exec(path);
      if (!found) continue;
      const pathParams: Record<string, string> = {};
      r.names.forEach((name, i) => {
        pathParams[name] = decodeURIComponent(found[i + 1] ?? '');
      });
      const spec = (this.spec.paths as Record<string, Record<string, JsonObject>>)[r.template]?.[m] ?? {};
      return { op: { method: m, template: r.template, operationId: String(spec.operationId), spec }, pathParams };
    }
    return undefined;
  }

  /** Validates (and coerces, in place) path and query parameters, and the JSON body. Returns error messages. */
  validateRequest(op: Operation, pathParams: Record<string, string>, query: Record<string, unknown>, body: Json, hasBody: boolean): string[] {
    const errors: string[] = [];
    const params = ((op.spec.parameters ?? []) as Json[]).map((p) => this.deref(p) as Parameter);
    const check = (where: 'path' | 'query', values: Record<string, unknown>): void => {
      const own = params.filter((p) => p.in === where);
      if (where === 'query') {
        const known = new Set(own.map((p) => p.name));
        for (const k of Object.keys(values)) if (!known.has(k)) errors.push(`query parameter ${k} is not defined by ${op.operationId}`);
      }
      const v = this.compiled(`${op.method} ${op.template} ${where}`, this.paramAjv, () => ({
        type: 'object',
        properties: Object.fromEntries(own.map((p) => [p.name, p.schema ?? {}])),
        required: own.filter((p) => p.required).map((p) => p.name),
      }));
      if (!v(values)) errors.push(...formatErrors(`${where} parameters`, v.errors));
    };
    check('path', pathParams);
    check('query', query);

    const requestBody = this.deref(op.spec.requestBody);
    if (isObject(requestBody)) {
      const schema = (requestBody.content as Record<string, JsonObject> | undefined)?.['application/json']?.schema;
      if (!hasBody) {
        if (requestBody.required === true) errors.push(`request body is required by ${op.operationId}`);
      } else if (schema !== undefined) {
        const v = this.compiled(`${op.method} ${op.template} body`, this.ajv, () => schema);
        if (!v(body)) errors.push(...formatErrors('body', v.errors));
      }
    } else if (hasBody) {
      errors.push(`${op.operationId} takes no request body`);
    }
    return errors;
  }

  /** Validates one of the fake's responses; statuses the description does not list are errors, except GitHub's generic 4xx errors. */
  validateResponse(op: Operation, status: number, body: Json): string[] {
    const responses = (op.spec.responses ?? {}) as Record<string, Json>;
    const response = this.deref(responses[String(status)] ?? responses.default);
    if (!isObject(response)) {
      // GitHub answers these on any operation, documented or not, always with a `message`.
      const generic = [400, 401, 403, 404, 422].includes(status) && isObject(body) && typeof body.message === 'string';
      return generic ? [] : [`${op.operationId} does not document status ${status}`];
    }
    const schema = (response.content as Record<string, JsonObject> | undefined)?.['application/json']?.schema;
    if (schema === undefined) return body === undefined ? [] : [`${op.operationId} documents no body for status ${status}`];
    const v = this.compiled(`${op.method} ${op.template} response ${status}`, this.ajv, () => schema);
    return v(body) ? [] : formatErrors(`response ${status}`, v.errors);
  }

  /** `{$ref: '#/components/parameters/owner'}` → the parameter (refs outside schemas). */
  private deref(v: Json): Json {
    let cur = v;
    for (let i = 0; i < 10 && isObject(cur) && typeof cur.$ref === 'string'; i++) {
      cur = cur.$ref.slice(2).split('/').reduce<Json>((o, k) => (isObject(o) ? o[k] : undefined), this.spec);
    }
    return cur;
  }

  /** Adds (without compiling) every component schema `schema` references, transitively. */
  private addComponents(ajv: Ajv, schema: Json): void {
    const added = (this.added.get(ajv) ?? this.added.set(ajv, new Set()).get(ajv)) as Set<string>;
    const queue = new Set<string>();
    collectRefs(schema, queue);
    for (const ref of queue) {
      if (!ref.startsWith(COMPONENT_ID) || added.has(ref)) continue;
      added.add(ref);
      const name = ref.slice(COMPONENT_ID.length);
      const component = toAjv((this.spec.components as { schemas: Record<string, Json> }).schemas[name]);
      ajv.addSchema(component as JsonObject, ref);
      collectRefs(component, queue);
    }
  }

  private compiled(key: string, ajv: Ajv, schema: () => Json): ValidateFunction {
    let v = this.validators.get(key);
    if (v) return v;
    const root = toAjv(schema());
    this.addComponents(ajv, root);
    v = ajv.compile(root as JsonObject);
    this.validators.set(key, v);
    return v;
  }
}
