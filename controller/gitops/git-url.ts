// Checks a plans repository URL: HTTPS, or plain HTTP to a loopback host only (a token must never
// cross a network unencrypted), and never with credentials in it (tokens come from files).

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])$/i;

export function checkGitUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is not a URL such as https://github.com/org/plans.git`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `must be an https:// URL (the controller speaks smart HTTP only), not ${url.protocol}`;
  if (url.username !== '' || url.password !== '')
    return 'must not contain credentials: put the token in a file and pass --git-token-file';
  if (url.search !== '' || url.hash !== '') return 'must not have a query or fragment';
  if (url.protocol === 'https:') return undefined;
  if (LOOPBACK.test(url.hostname)) return undefined;
  return `plain HTTP is allowed only for loopback hosts (127.0.0.0/8, localhost, [::1]), not "${url.hostname}": use https://`;
}
