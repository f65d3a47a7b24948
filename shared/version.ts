/** @module The product version and the wire protocol versions agents and relays negotiate. */
import pkg from '../package.json';

/** The version of this build of tether (agent, relay and API alike). */
export const TETHER_VERSION: string = pkg.version;

/**
 * The agent control protocol travels as the WebSocket subprotocol. A relay refuses an agent
 * that does not offer this one, with a message saying which one it speaks.
 */
export const AGENT_SUBPROTOCOL = 'tether.agent.v1';
