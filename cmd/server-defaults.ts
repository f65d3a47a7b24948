/**
 * @module Defaults of the server's settings that commands other than `tether server` print or
 * use, apart from `./server-config` so that they load without its YAML and zod.
 */

/** Where the database lives unless TETHER_DATA_DIR or `data_dir` says otherwise. */
export const DEFAULT_DATA_DIR = './data';
