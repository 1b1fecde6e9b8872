// The forges' published OpenAPI descriptions as the contract of the lab forge: GitHub's
// (@octokit/openapi, api.github.com) and Gitea's (its v1_openapi3_json template, fetched into the
// lab cache by test/lab/gobuild/build.sh). The same code serves both: operations resolved by
// method + path template (relative to the description's server path), request parameters and
// bodies and the fake's own responses validated with ajv. Each description is parsed once per
// process; validators are compiled lazily, per operation, and cached.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

export type ForgeKind = 'github' | 'gitea';

/** What differs between the two descriptions; everything else is the same code. */
interface DescriptionTraits {
  /** Prefix of the ajv ids of `#/components/schemas/X`, so two descriptions never collide. */
  componentId: string;
  /** Statuses the forge answers on any operation, documented or not, with its error body. */
  genericErrorStatuses: number[];
  /** The forge's error body, for the generic statuses (and see errorBodyOnContentless). */
  errorBody: JsonObject;
  /**
   * Gitea writes its APIError JSON body on every error status, but go-swagger (which generates
   * its description from Go structs) documents that struct's fields as response *headers*, and
   * `notFound`/`empty` with nothing at all. So a 4xx/5xx that documents no body may carry the
   * error body. Off for GitHub, whose description documents its error bodies.
   */
  errorBodyOnContentless: boolean;
  /**
   * go-swagger cannot express nullability: Gitea serialises nil pointers and slices as JSON null
   * (`merged_at`, `milestone`, `assignees` ...) while the description marks nothing nullable. For
   * such a description a null property is treated as an absent one before validation (which
   * loosens nothing: Gitea's schemas require almost nothing, so the property could be omitted).
   */
  nullAsAbsent: boolean;
}

const GITHUB_TRAITS: DescriptionTraits = {
  componentId: 'urn:github:schemas:',
  genericErrorStatuses: [400, 401, 403, 404, 422],
  errorBody: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } },
  errorBodyOnContentless: false,
  nullAsAbsent: false,
};

const specPromises = new Map<ForgeKind, Promise<JsonObject>>();

/** The api.github.com description (not the dereferenced one: it is 5x larger), parsed once per process. */
function loadGitHubDescription(): Promise<JsonObject> {
  return once('github', async () => {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve('@octokit/openapi/package.json');
    const text = await readFile(join(dirname(pkg), 'generated', 'api.github.com.json'), 'utf8');
    return JSON.parse(text) as JsonObject;
  });
}

/** The Gitea version whose description the lab checks against (also read by build.sh). */
export async function giteaVersion(): Promise<string> {
  return (await readFile(fileURLToPath(new URL('./gitea-version', import.meta.url)), 'utf8')).trim();
}

/** Where build.sh puts Gitea's description (same cache rules as the lab binaries). */
export async function giteaDescriptionPath(): Promise<string> {
  const cache =
    process.env.KANGAL_LAB_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kangal-lab');
  return join(cache, 'gitea', await giteaVersion(), 'openapi3.json');
}

/** Gitea's OpenAPI 3 description (placeholders already substituted by build.sh), parsed once per process. */
function loadGiteaDescription(): Promise<JsonObject> {
  return once('gitea', async () => {
    const path = await giteaDescriptionPath();
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new Error(
        `Gitea's OpenAPI description is missing at ${path}: run \`npm run lab:build\` (test/lab/gobuild/build.sh) to fetch it (${err instanceof Error ? err.message : String(err)})`,
        { cause: err },
      );
    }
    return JSON.parse(text) as JsonObject;
  });
}

function once(kind: ForgeKind, load: () => Promise<JsonObject>): Promise<JsonObject> {
  let p = specPromises.get(kind);
  if (!p) {
    p = load();
    specPromises.set(kind, p);
    p.catch(() => specPromises.delete(kind));
  }
  return p;
}

/** Gitea's error body is its `error` response's documented fields (see errorBodyOnContentless). */
function giteaTraits(spec: JsonObject): DescriptionTraits {
  const headers =
    (spec.components as { responses?: Record<string, { headers?: Record<string, { schema?: Json }> }> }).responses
      ?.error?.headers ?? {};
  const names = Object.keys(headers);
  if (names.length === 0)
    throw new Error(
      "Gitea's description has no `error` response with fields: the lab forge cannot check Gitea's error bodies",
    );
  return {
    componentId: 'urn:gitea:schemas:',
    genericErrorStatuses: [400, 401, 403, 404, 405, 409, 422],
    errorBody: {
      type: 'object',
      required: names,
      properties: Object.fromEntries(names.map((n) => [n, headers[n]?.schema ?? {}])),
    },
    errorBodyOnContentless: true,
    nullAsAbsent: true,
  };
}

/** A deep copy with null-valued object properties removed (arrays keep their elements). */
function withoutNullProperties(v: Json): Json {
  if (Array.isArray(v)) return v.map(withoutNullProperties);
  if (!isObject(v)) return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([, x]) => x !== null)
      .map(([k, x]) => [k, withoutNullProperties(x)]),
  );
}

function isObject(v: Json): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const COMPONENT_REF = '#/components/schemas/';

/**
 * OpenAPI 3.0 schema → something ajv takes: `nullable` without `type` becomes an `anyOf` with
 * null, `nullable` with an `enum` gets null in the enum, annotations are dropped, and
 * `#/components/schemas/X` refs point at X's own ajv schema id, so each component is compiled
 * once (inlineRefs: false) and shared by every operation that uses it.
 */
function toAjv(schema: Json, componentId: string): Json {
  const recur = (x: Json): Json => toAjv(x, componentId);
  if (Array.isArray(schema)) return schema.map(recur);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (isAnnotation(k)) continue;
    if (k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT_REF))
      out[k] = componentId + v.slice(COMPONENT_REF.length);
    else out[k] = k === 'properties' || k === 'patternProperties' ? mapValues(v, recur) : recur(v);
  }
  return out.nullable === true ? nullable(out) : out;
}

/** Keys that only annotate a schema; vendor extensions (x-github, Gitea's x-go-name/x-go-package) are annotations too. */
function isAnnotation(k: string): boolean {
  return k === 'example' || k === 'examples' || k === 'description' || k.startsWith('x-');
}

/** The JSON schema of a request body or response description, if it has one. */
function jsonSchemaOf(described: JsonObject): Json {
  return (described.content as Record<string, JsonObject> | undefined)?.['application/json']?.schema;
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
    const extra =
      e.keyword === 'additionalProperties'
        ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
        : '';
    return `${where}${e.instancePath || ''} ${e.message ?? e.keyword}${extra}`.trim();
  });
}

/**
 * Formats Gitea's description uses that ajv-formats lacks (ajv would otherwise ignore them, as
 * strict is off): registered for every description, so none is skipped silently.
 */
function addMissingFormats(ajv: Ajv): Ajv {
  ajv.addFormat('uint64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) && n >= 0 });
  return ajv;
}

/** What validateRequest checks of a request: its path and query parameters, and its parsed body (hasBody: one was sent). */
export interface RequestParts {
  pathParams: Record<string, string>;
  query: Record<string, unknown>;
  body: Json;
  hasBody: boolean;
}

export class ForgeContract {
  private readonly routes: Route[] = [];
  private readonly ajv: Ajv;
  private readonly paramAjv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly added = new WeakMap<Ajv, Set<string>>();
  private readonly traits: DescriptionTraits;
  /** The path prefix the description's templates are relative to (`/api/v1` for Gitea, '' for GitHub). */
  readonly basePath: string;

  constructor(
    readonly kind: ForgeKind,
    private readonly spec: JsonObject,
  ) {
    this.traits = kind === 'gitea' ? giteaTraits(spec) : GITHUB_TRAITS;
    const server = ((spec.servers ?? []) as { url?: string }[])[0]?.url ?? '';
    this.basePath = server.startsWith('/') ? server.replace(/\/$/, '') : '';
    const options = {
      strict: false,
      allErrors: true,
      logger: false as const,
      validateSchema: false,
      inlineRefs: false,
    };
    this.ajv = addMissingFormats(addFormats(new Ajv(options)));
    this.paramAjv = addMissingFormats(addFormats(new Ajv({ ...options, coerceTypes: 'array' as const })));
    const paths = spec.paths as Record<string, Record<string, JsonObject>>;
    for (const [template, item] of Object.entries(paths)) {
      const names: string[] = [];
      const parts = template.split('/').map((seg) =>
        seg.replace(/\{([^}]+)\}|[^{]+/g, (m, name?: string) => {
          if (name === undefined) return escapeRegex(m);
          names.push(name);
          return '([^/]+)';
        }),
      );
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

  static async load(kind: ForgeKind): Promise<ForgeContract> {
    return new ForgeContract(kind, await (kind === 'gitea' ? loadGiteaDescription() : loadGitHubDescription()));
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
  validateRequest(op: Operation, { pathParams, query, body: rawBody, hasBody }: RequestParts): string[] {
    const errors: string[] = [];
    const body = this.traits.nullAsAbsent ? withoutNullProperties(rawBody) : rawBody;
    const params = ((op.spec.parameters ?? []) as Json[]).map((p) => this.deref(p) as Parameter);
    const check = (where: 'path' | 'query', values: Record<string, unknown>): void => {
      const own = params.filter((p) => p.in === where);
      if (where === 'query') {
        const known = new Set(own.map((p) => p.name));
        for (const k of Object.keys(values))
          if (!known.has(k)) errors.push(`query parameter ${k} is not defined by ${op.operationId}`);
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
      const schema = jsonSchemaOf(requestBody);
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

  /** Validates one of the fake's responses; statuses the description does not list are errors, except the forge's generic errors. */
  validateResponse(op: Operation, status: number, rawBody: Json): string[] {
    const body = this.traits.nullAsAbsent ? withoutNullProperties(rawBody) : rawBody;
    const responses = (op.spec.responses ?? {}) as Record<string, Json>;
    const response = this.deref(responses[String(status)] ?? responses.default);
    const errorBody = (): string[] => {
      const v = this.compiled(`${this.kind} error body`, this.ajv, () => this.traits.errorBody);
      return v(body) ? [] : formatErrors(`response ${status} (${this.kind} error body)`, v.errors);
    };
    if (!isObject(response)) {
      // The forge answers these on any operation, documented or not, always with its error body.
      return this.traits.genericErrorStatuses.includes(status)
        ? errorBody()
        : [`${op.operationId} does not document status ${status}`];
    }
    const schema = jsonSchemaOf(response);
    if (schema === undefined) {
      if (body === undefined) return [];
      return this.traits.errorBodyOnContentless && status >= 400
        ? errorBody()
        : [`${op.operationId} documents no body for status ${status}`];
    }
    const v = this.compiled(`${op.method} ${op.template} response ${status}`, this.ajv, () => schema);
    return v(body) ? [] : formatErrors(`response ${status}`, v.errors);
  }

  /** `{$ref: '#/components/parameters/owner'}` → the parameter (refs outside schemas). */
  private deref(v: Json): Json {
    let cur = v;
    for (let i = 0; i < 10 && isObject(cur) && typeof cur.$ref === 'string'; i++) {
      cur = cur.$ref
        .slice(2)
        .split('/')
        .reduce<Json>((o, k) => (isObject(o) ? o[k] : undefined), this.spec);
    }
    return cur;
  }

  /** Adds (without compiling) every component schema `schema` references, transitively. */
  private addComponents(ajv: Ajv, schema: Json): void {
    const added = (this.added.get(ajv) ?? this.added.set(ajv, new Set()).get(ajv)) as Set<string>;
    const queue = new Set<string>();
    collectRefs(schema, queue);
    for (const ref of queue) {
      const prefix = this.traits.componentId;
      if (!ref.startsWith(prefix) || added.has(ref)) continue;
      added.add(ref);
      const name = ref.slice(prefix.length);
      const component = toAjv((this.spec.components as { schemas: Record<string, Json> }).schemas[name], prefix);
      ajv.addSchema(component as JsonObject, ref);
      collectRefs(component, queue);
    }
  }

  private compiled(key: string, ajv: Ajv, schema: () => Json): ValidateFunction {
    let v = this.validators.get(key);
    if (v) return v;
    const root = toAjv(schema(), this.traits.componentId);
    this.addComponents(ajv, root);
    v = ajv.compile(root as JsonObject);
    this.validators.set(key, v);
    return v;
  }
}
