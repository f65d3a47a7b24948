/** @module Every operation the API serves, in the order the document lists its tags. */
import type { OperationSpec } from '../operation';
import { deviceOperations } from './devices';
import { fleetOperations } from './fleet';
import { identityOperations } from './identity';
import { publicOperations } from './public';
import { serviceOperations } from './services';
import { sessionOperations } from './sessions';

export const OPERATIONS: readonly OperationSpec[] = [
  ...publicOperations,
  ...identityOperations,
  ...deviceOperations,
  ...sessionOperations,
  ...serviceOperations,
  ...fleetOperations,
];
