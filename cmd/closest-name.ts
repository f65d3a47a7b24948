/** @module Moved to shared/closest-name.ts (the API's spec uses it too); kept while callers move. */
export * from '../shared/closest-name';
