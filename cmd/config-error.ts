/** @module The one error of the settings (docs/settings.md): what is wrong, said once at start-up. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
