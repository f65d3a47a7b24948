/**
 * The interface docs under docs/ stay true: their tables of endpoints, error codes, settings,
 * close codes, control messages, commands, cluster subjects and metrics are compared with what
 * the code serves and knows.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, FLEET_ERRORS } from '../shared/api/errors';
import { registerClientCommands } from '../cli/index';
import { addAgentOptions } from '../cmd/agent-options';
import { SETTING_NAMES } from '../cmd/server-config';
import { AGENT_CLOSE, agentToRelayMessage, relayToAgentMessage } from '../shared/protocol/control-channel';
import { STREAM_CLOSE } from '../shared/protocol/session-stream';
import {
  BROADCAST_SUBJECT,
  broadcastMessage,
  bytesRequest,
  CONTROL_NAME,
  CONTROL_VERBS,
  controlSubject,
  natsPermissions,
  nodeSubject,
  PART,
  presenceMessage,
} from '../shared/protocol/cluster';
import { createRelay } from '../relay/index';
import { createBus } from '../cluster/bus';
import { createControl } from '../cluster/control';
import { AGENT_AUTH_CACHE_MS, createEdge, STREAM_AUTH_CACHE_MS } from '../cluster/edge';
import { deadlineOf, nodeHeartbeatOf } from '../cluster/heartbeats';
import { EDGE_SETTING_NAMES, loadEdgeConfig } from '../cmd/server-config';
import { silentLogger } from '../shared/log';
import { createMetrics } from '../shared/metrics';
import { detachedApi } from './helpers/api';

const doc = (name: string) => readFileSync(resolve(__dirname, '..', 'docs', name), 'utf8');

/** The first cells of a markdown table's rows under `heading`, without their backticks. */
function firstColumn(text: string, heading: string): string[] {
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `heading ${heading}`).toBeGreaterThan(-1);
  const rows: string[] = [];
  for (const line of text.slice(start + heading.length + 2).split('\n')) {
    if (line.startsWith('#')) break;
    const cell = /^\| `([^`]+)` \|/.exec(line);
    if (cell) rows.push(cell[1]!);
  }
  return rows;
}

describe('docs/http-api.md', () => {
  let detached: Awaited<ReturnType<typeof detachedApi>>;
  beforeAll(async () => {
    detached = await detachedApi();
  });
  afterAll(() => detached.close());

  it('lists exactly the endpoints the server serves', () => {
    const documented = firstColumn(doc('http-api.md'), '## Endpoints');
    expect([...documented].sort()).toEqual([...detached.api.endpoints()].sort());
  });

  it('names every error code', () => {
    const text = doc('http-api.md');
    for (const code of [...Object.keys(ERROR_CODES), ...Object.keys(FLEET_ERRORS)]) expect(text).toContain(`\`${code}\``);
  });
});

describe('docs/settings.md', () => {
  it('lists every server setting and every agent flag', () => {
    const text = doc('settings.md');
    for (const name of SETTING_NAMES) expect(text).toContain(`\`TETHER_${name.toUpperCase()}\``);
    const agent = addAgentOptions(new Command('agent'));
    for (const option of agent.options) expect(text).toContain(`\`${option.long}`);
  });
});

describe('docs/session-streams.md and docs/control-channel.md', () => {
  it('list every close code', () => {
    const stream = firstColumn(doc('session-streams.md'), '## Close codes').map(Number);
    expect(stream.sort()).toEqual([...new Set(Object.values(STREAM_CLOSE))].sort());
    const control = firstColumn(doc('control-channel.md'), '## Close codes of the control channel').map(Number);
    expect(control.sort()).toEqual(Object.values(AGENT_CLOSE).sort());
  });

  it('list every control message', () => {
    const documented = firstColumn(doc('control-channel.md'), '## Messages');
    const options = [...relayToAgentMessage._zod.def.options, ...agentToRelayMessage._zod.def.options];
    const types = options.map((o) => o.shape.type._zod.def.values[0]);
    expect(documented.sort()).toEqual(types.sort());
  });
});

describe('docs/cli.md', () => {
  it('lists every command of the client', () => {
    const program = new Command('tether');
    registerClientCommands(
      program,
      () => {
        throw new Error('not run');
      },
      () => {},
    );
    // Hidden commands (`forward-master`, `__complete-devices`) are tether's own plumbing, not the user's.
    const visible = (c: Command) =>
      c
        .createHelp()
        .visibleCommands(c)
        .filter((sub) => sub.name() !== 'help');
    const names = visible(program).flatMap((c) => (visible(c).length > 0 ? visible(c).map((sub) => `${c.name()} ${sub.name()}`) : [c.name()]));
    const documented = firstColumn(doc('cli.md'), '## Commands').map((cmd) => cmd.replace(/^tether /, ''));
    for (const name of [...names, 'server', 'agent', 'broker']) {
      expect(
        documented.some((d) => d === name || d.startsWith(`${name} `)),
        name,
      ).toBe(true);
    }
  });
});

/** The rows of the markdown table under `heading`, each as its cells (backticks kept). */
function tableRows(page: string, heading: string): string[][] {
  const text = `\n${page}`;
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `heading ${heading}`).toBeGreaterThan(-1);
  const rows: string[][] = [];
  for (const line of text.slice(start + heading.length + 2).split('\n')) {
    if (line.startsWith('#')) break;
    if (!line.startsWith('|') || /^\|[-| ]+\|$/.test(line)) continue;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
  }
  return rows.slice(1); // the header
}

/** Whether NATS would let a subscription or permission `pattern` cover `subject` (`*` one token, `>` the rest). */
function covers(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

describe('docs/cluster.md', () => {
  const text = doc('cluster.md');
  const subjects = tableRows(text, '## What the nodes say to each other');
  const subjectOf = (row: string[]) => row[0]!.replace(/`/g, '');

  it('lists exactly the subjects of shared/protocol/cluster.ts: a row per control verb, the node commands and the broadcasts', () => {
    const documented = subjects.map(subjectOf).sort();
    const code = [...Object.values(CONTROL_VERBS).map((verb) => controlSubject('<node>', verb)), nodeSubject('<node>'), BROADCAST_SUBJECT].sort();
    expect(documented).toEqual(code);
  });

  it("says who sends each subject to whom as the nodes' bus permissions allow it", () => {
    const edge = natsPermissions('edge-a');
    const control = natsPermissions(CONTROL_NAME);
    for (const row of subjects) {
      const subject = subjectOf(row).replace('<node>', 'edge-a');
      const direction = row[2]!;
      const [sender, receiver] = direction.startsWith('node → control')
        ? [edge, control]
        : direction.startsWith('control → ')
          ? [control, edge]
          : [undefined, undefined];
      expect(sender, `${subject}: "${direction}" names no known direction`).toBeDefined();
      expect(
        sender!.pub.some((p) => covers(p, subject)),
        `${direction} may publish ${subject}`,
      ).toBe(true);
      expect(
        receiver!.sub.some((p) => covers(p, subject)),
        `${direction}: the receiver may read ${subject}`,
      ).toBe(true);
      // A node speaks only for itself: another edge may not publish it, nor read a command for this one.
      const other = natsPermissions('edge-b');
      if (sender === edge)
        expect(
          other.pub.some((p) => covers(p, subject)),
          `edge-b publishing ${subject}`,
        ).toBe(false);
      if (subject === nodeSubject('edge-a')) expect(other.sub.some((p) => covers(p, subject))).toBe(false);
    }
  });

  it('names every broadcast in the row of tether.broadcast', () => {
    const row = subjects.find((r) => subjectOf(r) === BROADCAST_SUBJECT)!;
    const documented = [...row[3]!.matchAll(/`([a-z._]+)`/g)].map((m) => m[1]!).sort();
    const types = broadcastMessage._zod.def.options.map((o) => o.shape.type._zod.def.values[0] as string).sort();
    expect(documented).toEqual(types);
  });

  it('states the bounds the messages are checked against: 2,000 items per message, counts of at most 2^40', () => {
    expect(text).toContain(`${PART.toLocaleString('en-US')} items per message`);
    const agent = { device_id: 'd', generation: 1, since: 0, agent_version: null, forward_allow: null, proof: 'p' };
    const changes = (n: number) => ({ kind: 'changes', node_id: 'edge-a-abcdefgh', online: Array.from({ length: n }, () => agent), offline: [] });
    expect(presenceMessage.safeParse(changes(PART)).success).toBe(true);
    expect(presenceMessage.safeParse(changes(PART + 1)).success).toBe(false);
    expect(text).toContain('at most 2^40');
    expect(bytesRequest.safeParse({ counts: [['s', 2 ** 40, 0]] }).success).toBe(true);
    expect(bytesRequest.safeParse({ counts: [['s', 2 ** 40 + 1, 0]] }).success).toBe(false);
    expect(bytesRequest.safeParse({ counts: [['s', -1, 0]] }).success).toBe(false);
  });

  it("states the edges' cache lifetimes and the heartbeat deadline as the code has them", () => {
    expect(text).toContain(`keeps a proven agent token for ${AGENT_AUTH_CACHE_MS / 1000} s`);
    expect(text).toContain(`a stream grant for ${STREAM_AUTH_CACHE_MS / 1000} s`);
    const defaults = loadEdgeConfig({ TETHER_NATS_URL: 'nats://127.0.0.1:4222', TETHER_PUBLIC_URL: 'http://127.0.0.1:8081' });
    expect(text).toContain(`two heartbeat intervals, ${deadlineOf(defaults.heartbeat_ms) / 1000} s by default`);
    expect(deadlineOf(defaults.heartbeat_ms)).toBe(2 * defaults.heartbeat_ms);
    // "4 times per deadline (at most every 5 s)"
    expect(text).toContain('4 times per deadline (at most every 5 s)');
    expect(nodeHeartbeatOf(2_000)).toBe(deadlineOf(2_000) / 4);
    expect(nodeHeartbeatOf(defaults.heartbeat_ms)).toBe(5_000);
    expect(nodeHeartbeatOf(600_000)).toBe(5_000);
  });

  it("names only real settings, and an edge's settings are the ones it needs", () => {
    const named = new Set([...text.matchAll(/`?(TETHER_[A-Z_]+)/g)].map((m) => m[1]!));
    const agentEnv = new Set(
      [...JSON.stringify(addAgentOptions(new Command('agent')).options.map((o) => o.description)).matchAll(/env (TETHER_[A-Z_]+)/g)].map((m) => m[1]!),
    );
    const settings = new Set([...SETTING_NAMES, ...EDGE_SETTING_NAMES].map((n) => `TETHER_${n.toUpperCase()}`));
    expect([...named].filter((n) => !settings.has(n) && !agentEnv.has(n))).toEqual([]);
    // The edge row of the table of nodes: what `tether broker` cannot start without.
    const edgeRow = tableRows(text, '# Several nodes joined by NATS').find((r) => r[0]!.startsWith('edge'))!;
    const needs = [...edgeRow[3]!.matchAll(/`(TETHER_[A-Z_]+)`/g)].map((m) => m[1]!);
    expect(needs.sort()).toEqual(['TETHER_NATS_CREDS', 'TETHER_NATS_URL', 'TETHER_PUBLIC_URL']);
    for (const name of needs) expect(EDGE_SETTING_NAMES.map((n) => `TETHER_${n.toUpperCase()}`)).toContain(name);
    expect(() => loadEdgeConfig({ TETHER_NATS_URL: 'nats://127.0.0.1:4222' })).toThrow(/TETHER_PUBLIC_URL/);
    expect(() => loadEdgeConfig({ TETHER_PUBLIC_URL: 'http://127.0.0.1:8081' })).toThrow(/TETHER_NATS_URL/);
    // "Without credentials … a node starts only when every bus address is on loopback"; a user and password are credentials.
    const edgeAt = (url: string) => () => loadEdgeConfig({ TETHER_NATS_URL: url, TETHER_PUBLIC_URL: 'http://10.0.0.2:8081' });
    expect(edgeAt('nats://10.0.0.1:4222')).toThrow(/TETHER_NATS_CREDS/);
    expect(edgeAt('nats://127.0.0.1:4222,nats://10.0.0.1:4222')).toThrow(/TETHER_NATS_CREDS/);
    expect(edgeAt('nats://127.0.0.1:4222')).not.toThrow();
    expect(edgeAt('nats://tether:secret@10.0.0.1:4222')).not.toThrow();
  });

  it('names the metrics the nodes register: every node, the control node, an edge', async () => {
    const section = text.slice(text.indexOf('\n## Metrics\n'), text.indexOf('\n## Three nodes on one machine\n'));
    const names = (part: string) => [...part.matchAll(/`(tether_[a-z_]+)/g)].map((m) => m[1]!);
    const everyNode = names(section.slice(0, section.indexOf('the control node adds')));
    const controlOnly = names(section.slice(section.indexOf('the control node adds'), section.indexOf('an edge adds')));
    const edgeOnly = names(section.slice(section.indexOf('an edge adds')));
    expect(everyNode.length * controlOnly.length * edgeOnly.length).toBeGreaterThan(0);

    // The parts of each node, as the composition roots put them together, built and never started.
    const bus = (nodeName: string) => createBus({ url: 'nats://127.0.0.1:1', nodeName, name: 'docs-test', log: silentLogger });
    const brokerOf = (metrics: ReturnType<typeof createMetrics>) =>
      createRelay({
        log: silentLogger,
        metrics,
        now: Date.now,
        heartbeatMs: 20_000,
        authenticateAgent: () => false,
        presence: { online() {}, offline() {}, seen() {} },
        authorizeStream: () => ({ ok: false, code: 4404, reason: 'none' }),
        recordBytes: async () => {},
      });
    const registered = async (metrics: ReturnType<typeof createMetrics>) =>
      new Set([...(await metrics.render()).matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
    const controlMetrics = createMetrics();
    const control = createControl({
      bus: bus(CONTROL_NAME),
      run: 'control-abcdefgh',
      publicUrl: 'http://127.0.0.1:8080',
      heartbeatMs: 20_000,
      log: silentLogger,
      metrics: controlMetrics,
      now: Date.now,
      api: {
        agentKey: async () => undefined,
        agentKeys: async () => new Map(),
        authorizeStream: async () => ({ ok: false, code: 4404, reason: 'none' }),
        openSession: async () => undefined,
        recordBytes: async () => {},
        presence: { apply: async () => {}, onlineIds: async () => [], seen: async () => {} },
        recordings: { start: () => undefined },
      },
    });
    const controlBroker = brokerOf(controlMetrics);
    const edgeMetrics = createMetrics();
    createEdge({
      bus: bus('edge-a'),
      nodeName: 'edge-a',
      nodeId: 'edge-a-abcdefgh',
      publicUrl: 'http://127.0.0.1:8081',
      heartbeatMs: 20_000,
      log: silentLogger,
      metrics: edgeMetrics,
    });
    const edgeBroker = brokerOf(edgeMetrics);
    try {
      const onControl = await registered(controlMetrics);
      const onEdge = await registered(edgeMetrics);
      for (const name of [...everyNode, ...controlOnly, 'tether_cluster_refused_total']) expect(onControl, name).toContain(name);
      for (const name of edgeOnly) expect(onEdge, name).toContain(name);
      // tether_cluster_bus_up is the edge's composition root's (cmd/edge-node.ts); the rest of every node's are the relay's.
      for (const name of everyNode.filter((n) => n !== 'tether_cluster_bus_up')) expect(onEdge, name).toContain(name);
      const cluster = (set: Set<string>) => [...set].filter((n) => n.startsWith('tether_cluster_'));
      expect(cluster(onControl).filter((n) => !text.includes(`\`${n}`))).toEqual([]);
      expect(cluster(onEdge).filter((n) => !text.includes(`\`${n}`))).toEqual([]);
    } finally {
      await Promise.all([controlBroker.close(), edgeBroker.close(), control.close()]);
    }
  });
});
