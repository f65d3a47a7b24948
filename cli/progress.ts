/**
 * @module Transfer progress on a terminal (cli-progress): bytes, rate and ETA when the total is
 * known. Nothing at all when stderr is not a TTY, so logs and pipes stay clean.
 */
import cliProgress from 'cli-progress';
import { formatBytes, formatDuration } from './output';

export interface Progress {
  add(bytes: number): void;
  stop(): void;
}

const silent: Progress = { add() {}, stop() {} };

export function createProgress(label: string, total: number | undefined, enabled = process.stderr.isTTY === true): Progress {
  if (!enabled) return silent;
  const started = performance.now();
  let done = 0;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      barsize: 30,
      format: total ? `${label} [{bar}] {percentage}% {done} of {size} {rate} ETA {eta_h}` : `${label} {done} {rate}`,
      formatValue: (v, _o, type) => (type === 'percentage' ? String(v).padStart(3) : String(v)),
    },
    cliProgress.Presets.shades_classic,
  );
  const payload = () => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    return {
      done: formatBytes(done),
      size: formatBytes(total ?? 0),
      rate: `${formatBytes(Math.round(rate))}/s`,
      eta_h: total && rate > 0 ? formatDuration((total - done) / rate) : '-',
    };
  };
  bar.start(total || 1, 0, payload());
  return {
    add(bytes) {
      done += bytes;
      bar.update(total ? Math.min(done, total) : 0, payload());
    },
    stop() {
      bar.update(total ? Math.min(done, total) : 0, payload());
      bar.stop();
    },
  };
}
