// The plain log of a watch (stdout not a terminal): keyed facts, each printed again only when its
// signature changes — a plan's phase, reason and counts, a group's counts, a node's phase and reason
// (a new message alone, or a clock that moved, prints nothing). Pure.
import type { PlanEntry, StatusDocument } from './document.js';
import { planSentence, reasonText, type TextOptions } from './sentences.js';

export interface Fact {
  signature: string;
  text: string;
}

function planFacts(p: PlanEntry, o: TextOptions): [string, Fact][] {
  const c = p.counts;
  const out: [string, Fact][] = [
    [
      `plan ${p.name}`,
      {
        signature: [p.phase, p.wait.reason, p.paused, c.completed, c.failed, c.held, c.skipped, c.total].join('|'),
        text: `plan ${p.name}: ${p.phase}${p.template || c.total === 0 ? '' : ` ${c.completed}/${c.total} nodes`} — ${planSentence(p, o).join('; ')}`,
      },
    ],
  ];
  for (const g of p.groups) {
    const text = `plan ${p.name}: group ${g.name}: ${g.completed}/${g.total} completed, ${g.running} running, ${g.failed} failed, ${g.held} held, ${g.pending} pending`;
    out.push([`plan ${p.name} group ${g.name}`, { signature: text, text }]);
  }
  for (const n of p.nodes) {
    const why = reasonText(n.wait);
    out.push([
      `plan ${p.name} node ${n.node}`,
      {
        signature: `${n.phase}|${n.wait.reason ?? ''}`,
        text: `plan ${p.name}: node ${n.node} (${n.group}): ${n.phase}${why ? ` — ${why}` : ''}`,
      },
    ]);
  }
  return [...out, ...autoUpdateFacts(p)];
}

/** A template's release check and its promotion, each printed again when what it says changes (not when it checked again). */
function autoUpdateFacts(p: PlanEntry): [string, Fact][] {
  const a = p.autoUpdate;
  if (!a) return [];
  const releases = `plan ${p.name}: releases: nodes on ${a.currentVersion ?? '?'}, newest ${a.latestVersion ?? '?'}${a.pendingVersion ? `, pending ${a.pendingVersion}` : ''}${a.lastProposedVersion ? `, proposed ${a.lastProposedVersion}${a.lastProposalURL ? ` (${a.lastProposalURL})` : ''}` : ''}${a.lastError ? `, last error ${a.lastError}` : ''}`;
  const out: [string, Fact][] = [[`plan ${p.name} auto-update`, { signature: releases, text: releases }]];
  const pr = a.promotion;
  if (pr) {
    const stages = pr.stages.map(
      (s) => `${s.cluster} ${s.state}${s.state === 'Soaking' && s.eligibleTime ? ` until ${s.eligibleTime}` : ''}`,
    );
    const text = `plan ${p.name}: promotion: ${pr.reason}${pr.version ? ` ${pr.version}` : ''}${stages.length ? ` (${stages.join(', ')})` : ''}`;
    out.push([`plan ${p.name} promotion`, { signature: text, text }]);
  }
  return out;
}

export function facts(doc: StatusDocument, o: TextOptions): Map<string, Fact> {
  return new Map(doc.plans.flatMap((p) => planFacts(p, o)));
}

/** The texts of the facts whose signature changed since `seen` (which is updated to them). */
export function changedFacts(seen: Map<string, string>, now: Map<string, Fact>): string[] {
  const lines: string[] = [];
  for (const [key, f] of now) {
    if (seen.get(key) === f.signature) continue;
    seen.set(key, f.signature);
    lines.push(f.text);
  }
  return lines;
}
