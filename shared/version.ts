/** @module The product version and the wire protocol versions agents and brokers negotiate. */
import pkg from '../package.json';

/** The version of this build of tether (agent, broker and API alike). */
export const TETHER_VERSION: string = pkg.version;

/**
 * The agent control protocol travels as the WebSocket subprotocol. A broker refuses an agent
 * that does not offer this one, with a message saying which one it speaks.
 */
export const AGENT_SUBPROTOCOL = 'tether.agent.v1';
