/**
 * @module When the terminal's session ends by itself: a line with its expiry and a countdown,
 * and the relay's `session_expiring` notices (docs/session-streams.md, notices) as a banner
 * above the terminal, never written into it (it would land in the middle of whatever runs).
 */
import type { StreamNotice } from '../../../shared/protocol/session-stream';
import { h, replace } from '../dom';
import { formatTime } from '../format';
import { clockText } from './player-timeline';

export interface ExpiryView {
  /** The session now expires at `iso` (opened, extended, or said so by a notice). */
  expiresAt(iso: string): void;
  /** A notice from the relay: shown in the banner. */
  notice(notice: StreamNotice): void;
  /** The session ended: no countdown, no banner. */
  ended(): void;
  stop(): void;
}

/** `5:00`, or `1:02:03` past an hour. */
const left = (seconds: number) => (seconds >= 3600 ? `${Math.floor(seconds / 3600)}:${clockText(seconds % 3600).padStart(5, '0')}` : clockText(seconds));

/** The expiry line in `line` and the banner in `banner`, updated every second until stopped. */
export function expiryView(line: HTMLElement, banner: HTMLElement): ExpiryView {
  let expires: number | undefined;
  const tick = () => {
    if (expires === undefined) return replace(line);
    const seconds = Math.max(0, Math.round((expires - Date.now()) / 1000));
    replace(line, `The session expires at ${formatTime(new Date(expires).toISOString())}, in ${left(seconds)}.`);
    line.classList.toggle('soon', seconds <= 300);
  };
  const timer = setInterval(tick, 1000);
  const expiresAt = (iso: string) => {
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return;
    // A later expiry than a notice announced (extended since): the warning no longer holds.
    if (expires !== undefined && t > expires + 1000) banner.hidden = true;
    expires = t;
    tick();
  };
  return {
    expiresAt,
    notice(n) {
      if (n.code === 'session_expiring') expiresAt(n.expires_at);
      replace(
        banner,
        h('strong', {}, n.code === 'session_expiring' ? 'Session expiring: ' : 'Notice: '),
        n.message,
        ' ',
        h('button', { type: 'button', class: 'link', id: 'session-notice-dismiss', onclick: () => (banner.hidden = true) }, 'Dismiss'),
      );
      banner.dataset.code = n.code;
      banner.hidden = false;
    },
    ended() {
      expires = undefined;
      banner.hidden = true;
      tick();
    },
    stop: () => clearInterval(timer),
  };
}
