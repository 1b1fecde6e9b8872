// What the progress of a finished ImageService.Pull says about the download.

/** Layer statuses that download nothing: content the containerd held before the pull, and its unpacking. */
const NOTHING_DOWNLOADED = new Set(['ALREADY_EXISTS', 'EXTRACTING', 'EXTRACT_COMPLETE']);

/**
 * Whether a pull that named its image downloaded nothing, from the statuses of its progress lines
 * (as the client names them). No progress at all: Talos skipped the pull, as the namespace held an
 * image of that name already (Talos pulls WithSkipIfAlreadyPulled and answers only the name).
 * Otherwise every layer was in the containerd's content store already (ALREADY_EXISTS, then its
 * unpacking for this namespace). Any download status, or one this client does not know, is a download.
 */
export function pulledNothing(statuses: readonly string[]): boolean {
  return statuses.every((s) => NOTHING_DOWNLOADED.has(s));
}
