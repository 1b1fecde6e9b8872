// The file an auto-update proposal adds: the template's own document with `autoUpdate` removed and
// `talosVersion` set, edited through the `yaml` Document API so comments, key order and flow style
// stay as the person wrote them (never parse → stringify). Pure: text in, text out.
import { isMap, isScalar, parseAllDocuments, Scalar, YAMLMap, type Document } from 'yaml';
import { childPlanName } from '../names.js';

/** Label on a child plan naming the template that proposed it. */
export const TEMPLATE_LABEL = 'kangalpatch.ozalp.dk/auto-update-template';

export interface ChildPlanFile {
  /** metadata.name of the child: `<template>-<version>`, dots as dashes (v1.13.3 → prod-v1-13-3). */
  name: string;
  /** `<name>.yaml`, to put next to the template. */
  fileName: string;
  text: string;
}

const YAML_OPTIONS = { version: '1.2', uniqueKeys: true, merge: false, prettyErrors: false } as const;

/**
 * The child plan of template `template` (its document in `templateText`) for Talos `version`.
 * An Error names what is wrong with the template text (it is the template's file, already loaded).
 */
export function childPlanDocument(templateText: string, template: string, version: string): ChildPlanFile | Error {
  const docs = parseAllDocuments(templateText, YAML_OPTIONS);
  if (!Array.isArray(docs)) return new Error('the template file holds no YAML document');
  const doc = docs.find((d) => d.getIn(['kind']) === 'PatchPlan' && d.getIn(['metadata', 'name']) === template);
  if (!doc) return new Error(`the template file holds no PatchPlan named ${template}`);
  if (doc.errors.length > 0)
    return new Error(`the template document does not parse: ${doc.errors[0]?.message.split('\n')[0] ?? ''}`);
  const target = doc.getIn(['spec', 'target'], true);
  if (!isMap(target)) return new Error(`PatchPlan ${template} has no spec.target mapping`);
  doc.deleteIn(['spec', 'target', 'autoUpdate']);
  const quoted = new Scalar(version);
  quoted.type = Scalar.QUOTE_DOUBLE; // "v1.13" unquoted would be a float
  target.items.unshift(doc.createPair('talosVersion', quoted));
  const name = childPlanName(template, version);
  const nameNode = doc.getIn(['metadata', 'name'], true);
  if (isScalar(nameNode)) nameNode.value = name;
  setLabel(doc, TEMPLATE_LABEL, template);
  return { name, fileName: `${name}.yaml`, text: doc.toString({ lineWidth: 0, flowCollectionPadding: false }) };
}

function setLabel(doc: Document, key: string, value: string): void {
  const labels = doc.getIn(['metadata', 'labels'], true);
  if (isMap(labels)) labels.set(key, value);
  else {
    const map = new YAMLMap();
    map.set(key, value);
    doc.setIn(['metadata', 'labels'], map);
  }
}
