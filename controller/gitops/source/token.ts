// The Git and forge tokens: read from their files on every use (controller/runtime/token-file.ts).
import { readTokenFile as readToken } from '../../runtime/token-file.js';

export const readTokenFile = (file: string | undefined, flag: string): Promise<string | undefined> =>
  readToken(file, flag, 'GitTokenUnreadable');
