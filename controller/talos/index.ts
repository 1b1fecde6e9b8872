// The Talos adapter's public surface: the port, the client that implements it, its errors.
export type * from './port.js';
export { TalosApiError, TalosErrorKind, isTalosApiError } from './errors.js';
export { loadCredentials, relabelEd25519Key } from './credentials.js';
export { TalosClient, createTalosClient, type TalosClientOptions } from './client.js';
export { closeAllTalosChannels, talosChannelStats } from './channels.js';
