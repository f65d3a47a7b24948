/** @module What every client command gets: the environment, output, and an API client on demand. */
import { createApiClient, type ApiClient } from './api-client';
import { credentials } from './config';
import { processOut, type Out } from './output';

export interface Context {
  env: NodeJS.ProcessEnv;
  out: Out;
  notice(line: string): void;
  /** A client of the configured server's API with the configured token (throws if there is none). */
  api(): ApiClient;
}

export function createContext(env: NodeJS.ProcessEnv = process.env, out: Out = processOut): Context {
  let api: ApiClient | undefined;
  const notice = (line: string) => out.stderr(`${line}\n`);
  return {
    env,
    out,
    notice,
    api() {
      if (!api) {
        const c = credentials(env);
        api = createApiClient({ server: c.server, token: c.token, notice });
      }
      return api;
    },
  };
}
