/** A valid service spec (docs/http-api.md, deployments) with the parts a test varies. */
export function serviceSpec(o: { name?: string; tag?: string; replicas?: number; strategy?: string; weight?: number; extra?: string } = {}) {
  const name = o.name ?? 'web';
  return [
    'service:',
    `  name: ${name}`,
    `  image: registry.example.com/platform/${name}:${o.tag ?? '1.0.0'}`,
    'deployment:',
    `  replicas: ${o.replicas ?? 2}`,
    ...(o.strategy ? [`  strategy: ${o.strategy}`] : []),
    ...(o.weight !== undefined ? ['  canary:', `    weight: ${o.weight}`] : []),
    'remote-access:',
    '  enabled: true',
    '  broker-url: wss://broker.example.com/ws',
    '  protocols: [diagnostics, shell]',
    'observability: {logs: true, metrics: true, traces: false}',
    'secrets:',
    '  vault:',
    '    - path: secret/data/web',
    '      env: WEB_TOKEN',
    'config:',
    '  env:',
    '    LOG_LEVEL: info',
    '    SESSION_TTL_SECONDS: "3600"',
    ...(o.extra ? [o.extra] : []),
    '',
  ].join('\n');
}
