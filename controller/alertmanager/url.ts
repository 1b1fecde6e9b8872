// Checks --alertmanager-url: http(s), no credentials in it (a token comes from a file), and a token
// only over https:// or to a loopback host. Plain HTTP without a token is allowed: in-cluster
// Alertmanagers (alertmanager-operated:9093) usually speak it.
const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])$/i;

export function checkAlertmanagerUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is not a URL such as http://alertmanager-operated.monitoring:9093`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `must be an http:// or https:// URL, not ${url.protocol}`;
  if (url.username !== '' || url.password !== '')
    return 'must not contain credentials: put the token in a file and pass --alertmanager-token-file';
  if (url.search !== '' || url.hash !== '') return 'must not have a query or fragment';
  return undefined;
}

/** Whether a bearer token may be sent to this URL. */
export function tokenMaySend(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || LOOPBACK.test(url.hostname);
  } catch {
    return false;
  }
}
