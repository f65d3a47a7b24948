import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { busAuth, credsName, redactedUrl } from '../../../cluster/bus';
import { CONTROL_NAME, isRunOf, nameOfRun, natsPermissions, nodeIdOf } from '../../../shared/protocol/cluster';

describe('the bus a node dials', () => {
  it('takes the user and password out of the URL (the client ignores them there), a password of digits too', () => {
    const { servers, auth, open } = busAuth('nats://tether:4222s%40cret@127.0.0.1:4222,nats://10.0.0.2:4222', undefined);
    expect(servers).toEqual(['nats://127.0.0.1:4222', 'nats://10.0.0.2:4222']);
    expect(auth).toEqual({ user: 'tether', pass: '4222s@cret' });
    expect(open).toBe(false);
    expect(redactedUrl('nats://tether:4222secret@host:4222')).toBe('nats://tether:***@host:4222');
  });

  it('is open without credentials', () => {
    expect(busAuth('nats://127.0.0.1:4222', undefined)).toMatchObject({ auth: {}, open: true });
  });

  it('reads the node name from a credentials file', () => {
    const payload = Buffer.from(JSON.stringify({ name: 'edge-a' })).toString('base64url');
    const file = join(mkdtempSync(join(tmpdir(), 'creds-')), 'x.creds');
    writeFileSync(file, `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ.${payload}.sig\n------END NATS USER JWT------\n`);
    expect(credsName(file)).toBe('edge-a');
  });
});

describe('node names and permissions', () => {
  it('let an edge publish only under its own name, and read only its commands, broadcasts and replies', () => {
    expect(natsPermissions('edge-a')).toEqual({
      pub: ['tether.control.edge-a.>'],
      sub: ['tether.node.edge-a', 'tether.broadcast', '_INBOX.edge-a.>'],
    });
    expect(natsPermissions(CONTROL_NAME).sub).toEqual(['tether.control.>', '_INBOX.control.>']);
  });

  it('tell a run of a node from a run of another whose name begins alike', () => {
    const run = nodeIdOf('edge-a', 'abcdefgh');
    expect(isRunOf('edge-a', run)).toBe(true);
    expect(nameOfRun(run)).toBe('edge-a');
    expect(isRunOf('edge-a', nodeIdOf('edge-a-abcdefgh', 'abcdefgh'))).toBe(false);
    expect(isRunOf('edge', run)).toBe(false);
    expect(isRunOf('edge-b', run)).toBe(false);
  });
});
