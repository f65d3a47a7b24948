/** @module Liveness and readiness over HTTP: what `GET /healthz` and `GET /readyz` answer (no token needed). */
import { z } from 'zod';
import { named } from './common';

export const health = named('Health', z.strictObject({ status: z.literal('ok') }));
export type Health = z.infer<typeof health>;

export const ready = named('Readiness', z.strictObject({ status: z.literal('ready'), database: z.literal('open') }));
export const notReady = named('NotReady', z.strictObject({ status: z.literal('not ready'), database: z.literal('unavailable') }));
export type Readiness = z.infer<typeof ready> | z.infer<typeof notReady>;
