// Who wrote a rollout report: each controller signs the YAML twin of its reports with its own
// Ed25519 key (--report-signing-key-file), and a downstream controller accepts a report as
// promotion evidence only when it verifies with the public key it holds for that cluster
// (--promotion-keys-dir/<cluster>.pem). The signed bytes name the file, so a signature cannot be
// moved to another plan's or another cluster's report. One place for the format, both directions.
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

const DOMAIN = 'kangal-patch-report-v1';
const HEADER = 'kangal-patch-report-signature: v1';

/** The `.sig` file beside a report's YAML twin: status/<cluster>/<plan>.yaml → status/<cluster>/<plan>.sig */
export const signaturePath = (yamlPath: string): string => yamlPath.replace(/\.yaml$/, '.sig');

const signedBytes = (yamlPath: string, yaml: string): Buffer => Buffer.from(`${DOMAIN}\n${yamlPath}\n${yaml}`, 'utf8');

/** First 16 hex digits of the SHA-256 of the public key (SPKI DER): names the key in the .sig file. */
function keyId(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return createHash('sha256')
    .update(pub.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export interface ReportSigner {
  keyId: string;
  /** The content of the .sig file for the YAML twin at `yamlPath`. */
  sign(yamlPath: string, yaml: string): string;
  /** undefined when `sigFile` is this signer's signature of `yaml` at `yamlPath` (verifyReport with its own public key); else why not. */
  verify(yamlPath: string, yaml: string, sigFile: string | undefined): string | undefined;
}

export function reportSigner(privateKey: KeyObject, cluster: string): ReportSigner {
  const id = keyId(privateKey);
  const own: TrustedKeys = new Map([[cluster, [createPublicKey(privateKey)]]]);
  return {
    keyId: id,
    verify: (yamlPath, yaml, sigFile) => verifyReport(own, cluster, { yamlPath, yaml, sigFile }),
    sign: (yamlPath, yaml) =>
      [
        `# Ed25519 signature of ${yamlPath.split('/').pop() ?? yamlPath} by the KangalPatch controller of cluster ${cluster}: promotion evidence (docs/auto-update-and-promotion.md "Promoting across clusters").`,
        HEADER,
        `key: ${id}`,
        `signature: ${sign(null, signedBytes(yamlPath, yaml), privateKey).toString('base64')}`,
        '',
      ].join('\n'),
  };
}

/** The signing key of --report-signing-key-file (PEM, Ed25519), or an Error saying what is wrong with the file. */
export async function loadSigningKey(file: string): Promise<KeyObject | Error> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    const key = createPrivateKey(text);
    if (key.asymmetricKeyType !== 'ed25519')
      return new Error(
        `${file} holds a ${key.asymmetricKeyType ?? 'unknown'} key; report signing needs an Ed25519 private key (openssl genpkey -algorithm ed25519)`,
      );
    return key;
  } catch {
    return new Error(
      `${file} holds no PEM private key; create one with: openssl genpkey -algorithm ed25519 -out report-signing.pem`,
    );
  }
}

/** cluster → its public keys (several PEM blocks in one file: key rotation). */
export type TrustedKeys = ReadonlyMap<string, readonly KeyObject[]>;

/** --promotion-keys-dir: `<cluster>.pem` files holding Ed25519 public keys; errors name the file. */
export async function loadTrustedKeys(dir: string): Promise<{ keys: TrustedKeys; errors: string[] }> {
  const keys = new Map<string, KeyObject[]>();
  const errors: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    return { keys, errors: [`cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`] };
  }
  for (const name of names.filter((n) => n.endsWith('.pem')).sort()) {
    const cluster = name.slice(0, -'.pem'.length);
    const blocks =
      (await readFile(join(dir, name), 'utf8')).match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ??
      [];
    const parsed: KeyObject[] = [];
    for (const block of blocks) {
      try {
        const key = createPublicKey(block);
        if (key.asymmetricKeyType === 'ed25519') parsed.push(key);
        else
          errors.push(
            `${join(dir, name)}: a ${key.asymmetricKeyType ?? 'unknown'} key; only Ed25519 public keys are accepted`,
          );
      } catch {
        errors.push(`${join(dir, name)}: a PUBLIC KEY block that does not parse`);
      }
    }
    if (parsed.length === 0 && blocks.length === 0)
      errors.push(
        `${join(dir, name)}: no "-----BEGIN PUBLIC KEY-----" block (export it with: openssl pkey -in report-signing.pem -pubout)`,
      );
    if (parsed.length > 0) keys.set(cluster, parsed);
  }
  return { keys, errors };
}

/** A YAML twin (a report, or the report index) and the content of its .sig file (undefined: none beside it). */
export interface SignedFile {
  yamlPath: string;
  yaml: string;
  sigFile: string | undefined;
}

/** undefined when the .sig file proves the YAML twin was written by `cluster`'s controller; else why not. */
export function verifyReport(
  keys: TrustedKeys,
  cluster: string,
  { yamlPath, yaml, sigFile }: SignedFile,
): string | undefined {
  const trusted = keys.get(cluster);
  if (!trusted || trusted.length === 0)
    return `no public key for cluster ${cluster} in --promotion-keys-dir (${cluster}.pem): its reports cannot be verified`;
  if (sigFile === undefined)
    return `no signature (${signaturePath(yamlPath)}): not written by the controller of ${cluster}`;
  const lines = sigFile.split('\n').map((l) => l.trim());
  const field = (name: string): string | undefined =>
    lines
      .find((l) => l.startsWith(`${name}: `))
      ?.slice(name.length + 2)
      .trim();
  const signature = field('signature');
  if (!lines.includes(HEADER) || signature === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(signature))
    return `${signaturePath(yamlPath)} is not a KangalPatch report signature`;
  const id = field('key');
  const candidates = trusted.filter((k) => id === undefined || keyId(k) === id);
  if (candidates.length === 0)
    return `signed with key ${id ?? '?'}, which is not a key of cluster ${cluster} in --promotion-keys-dir`;
  const bytes = signedBytes(yamlPath, yaml);
  const sig = Buffer.from(signature, 'base64');
  return candidates.some((k) => verify(null, bytes, k, sig))
    ? undefined
    : `the signature does not verify with cluster ${cluster}'s key: the report was changed or not written by its controller`;
}
