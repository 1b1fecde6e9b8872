// Certificates for the lab, made with Debian's openssl CLI: Node has no X.509 issuing API, and
// openssl is what real clusters' tooling uses too.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type KeyType = 'ec' | 'ed25519' | 'rsa';

export interface CertFiles {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

export interface IssueOptions {
  commonName: string;
  /** Subject O= entries, e.g. `system:masters` for Kubernetes or `os:admin` for Talos. */
  organizations?: string[];
  /** `IP:127.0.0.1`, `DNS:localhost` ... */
  subjectAltNames?: string[];
  usage: 'server' | 'client' | 'both';
  keyType?: KeyType;
  days?: number;
  /** Issue a certificate whose validity already ended (for expired-certificate tests). */
  expired?: boolean;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function keyArgs(keyType: KeyType): string[] {
  switch (keyType) {
    case 'ec':
      return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];
    case 'ed25519':
      return ['-newkey', 'ed25519'];
    case 'rsa':
      return ['-newkey', 'rsa:2048'];
  }
}

function subject(commonName: string, organizations: string[] = []): string {
  return organizations.map((o) => `/O=${o}`).join('') + `/CN=${commonName}`;
}

function load(dir: string, name: string): CertFiles {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  return { certPath, keyPath, cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
}

/** A CA's subject and key: `organizations` are its O= entries (e.g. `talos` for a Talos OS CA). */
export interface CASubject {
  commonName: string;
  keyType?: KeyType;
  organizations?: string[];
}

export function createCA(
  dir: string,
  name: string,
  { commonName, keyType = 'ec', organizations = [] }: CASubject,
): CertFiles {
  mkdirSync(dir, { recursive: true });
  openssl(
    [
      'req',
      '-x509',
      ...keyArgs(keyType),
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '3650',
      '-subj',
      subject(commonName, organizations),
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ],
    dir,
  );
  return load(dir, name);
}

export function issueCert(dir: string, name: string, ca: CertFiles, opts: IssueOptions): CertFiles {
  mkdirSync(dir, { recursive: true });
  openssl(
    [
      'req',
      ...keyArgs(opts.keyType ?? 'ec'),
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject(opts.commonName, opts.organizations),
    ],
    dir,
  );
  const eku = { server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[opts.usage];
  const ext = [`extendedKeyUsage=${eku}`];
  if (opts.subjectAltNames?.length) ext.push(`subjectAltName=${opts.subjectAltNames.join(',')}`);
  writeFileSync(join(dir, `${name}.ext`), ext.join('\n') + '\n');
  // `openssl x509` in 3.0 cannot backdate; `-days 0`-style tricks are not portable, so an expired
  // certificate is made by `openssl ca` with explicit start and end dates.
  if (opts.expired) {
    const caDir = join(dir, `${name}-ca-db`);
    mkdirSync(caDir, { recursive: true });
    writeFileSync(join(caDir, 'index.txt'), '');
    writeFileSync(join(caDir, 'serial'), '01\n');
    writeFileSync(
      join(caDir, 'openssl.cnf'),
      [
        '[ca]',
        'default_ca=lab',
        '[lab]',
        `dir=${caDir}`,
        'database=$dir/index.txt',
        'serial=$dir/serial',
        'new_certs_dir=$dir',
        'default_md=sha256',
        'policy=any',
        'copy_extensions=none',
        '[any]',
        'commonName=supplied',
        'organizationName=optional',
      ].join('\n') + '\n',
    );
    openssl(
      [
        'ca',
        '-batch',
        '-config',
        join(caDir, 'openssl.cnf'),
        '-cert',
        ca.certPath,
        '-keyfile',
        ca.keyPath,
        '-in',
        `${name}.csr`,
        '-out',
        `${name}.crt`,
        '-startdate',
        '20200101000000Z',
        '-enddate',
        '20200102000000Z',
        '-extfile',
        `${name}.ext`,
        '-notext',
      ],
      dir,
    );
  } else {
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        ca.certPath,
        '-CAkey',
        ca.keyPath,
        '-CAcreateserial',
        '-out',
        `${name}.crt`,
        '-days',
        String(opts.days ?? 365),
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
  }
  return load(dir, name);
}

/** An RSA key pair for service-account token signing. */
export function createKeyPair(dir: string, name: string): { privatePath: string; publicPath: string } {
  openssl(['genrsa', '-out', `${name}.key`, '2048'], dir);
  openssl(['rsa', '-in', `${name}.key`, '-pubout', '-out', `${name}.pub`], dir);
  return { privatePath: join(dir, `${name}.key`), publicPath: join(dir, `${name}.pub`) };
}
