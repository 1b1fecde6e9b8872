// Names. In status messages, Events and logs: a few by name, the rest counted. A message naming
// every node of a 5,000-node plan is longer than the CRD's condition message limit (32,768 bytes)
// and the apiserver refuses the whole status write. Of objects: deterministic, so the apiserver
// arbitrates races (plan/names.ts, hooks.ts); names over the limit keep a readable prefix and end in
// a hash.

/** `a, b, c and 4,997 more` when there are more than `max` names. */
export function someNames(names: readonly string[], max = 20): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} and ${(names.length - max).toLocaleString('en-US')} more`;
}

/** FNV-1a, 64 bits as two 32-bit halves: stable across processes and versions, no crypto needed. */
export function hash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x811c9dc5) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0').slice(0, 2);
}

/** `name` if it fits in `max`, else a prefix, `-` and a 10-character hash of the whole name. */
export function shortened(name: string, max: number): string {
  if (name.length <= max) return name;
  const h = hash(name);
  return `${name.slice(0, max - h.length - 1).replace(/[-.]+$/, '')}-${h}`;
}

/** Plan names are label values too (objectName): at most 63 characters. */
const MAX_PLAN_NAME = 63;

/**
 * The name of the child plan an auto-update template proposes for Talos `version`:
 * `<template>-<version>`, dots as dashes (v1.13.3 → prod-v1-13-3). Promotion matches upstream
 * reports to a template's children by it.
 */
export function childPlanName(template: string, version: string): string {
  return shortened(`${template}-${version.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`, MAX_PLAN_NAME);
}
