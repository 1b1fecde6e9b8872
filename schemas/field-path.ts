// The one spelling of a field path in messages (zod issues, YAML positions, CEL problems), so the
// loader, `validate`, the controller's InvalidSpec and the notify config name a field alike.

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Renders a zod/YAML path: numbers as [i], plain names dotted, others quoted in brackets, so a map
 * key with dots stays one key: `spec.hooks.preNode.template.metadata.labels["app.kubernetes.io/name"]`.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}
