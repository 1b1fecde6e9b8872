// The Talos adapter's public surface: the port, the client that implements it, its errors.
export type * from './port.js';
export { TalosApiError, TalosErrorKind, isTalosApiError } from './errors.js';
export { loadCredentials, relabelEd25519Key, type SecretData, type TalosCredentials } from './credentials.js';
export { TalosClient, createTalosClient, type TalosClientOptions, type TalosConfigInput } from './client.js';
export { TALOS_API_PORT, closeAllTalosChannels, talosChannelStats } from './channels.js';
