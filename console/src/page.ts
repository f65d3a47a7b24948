/** @module What a page of the console is: it renders into the root it is given and may return what ends it when you leave. */

/** Ends what a page started (a stream, a session, a subscription). */
export type Cleanup = () => void;

/** A page: the root to render into, the parameters of its route and the query of the URL. */
export type Page = (root: HTMLElement, params: string[], query: URLSearchParams) => Cleanup | void | Promise<Cleanup | void>;
