/** @module Liveness and readiness over HTTP: what `GET /healthz` and `GET /readyz` answer (no token needed). */
import { z } from 'zod';
import { named } from './common';

export const health = named('Health', z.strictObject({ status: z.literal('ok') }));
export type Health = z.infer<typeof health>;

/** A peer's bus (docs/peers.md): said only by a server that has one. */
const nats = z.enum(['connected', 'disconnected']).optional();
export const ready = named('Readiness', z.strictObject({ status: z.literal('ready'), database: z.literal('open'), nats: z.literal('connected').optional() }));
export const notReady = named('NotReady', z.strictObject({ status: z.literal('not ready'), database: z.enum(['open', 'unavailable']), nats }));
export type Readiness = z.infer<typeof ready> | z.infer<typeof notReady>;
