// Node and object names in status messages, Events and logs: a few by name, the rest counted. A
// message naming every node of a 5,000-node plan is longer than the CRD's condition message limit
// (32,768 bytes) and the apiserver refuses the whole status write.

/** `a, b, c and 4,997 more` when there are more than `max` names. */
export function someNames(names: readonly string[], max = 20): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} and ${(names.length - max).toLocaleString('en-US')} more`;
}
