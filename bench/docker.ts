/**
 * @module Real Docker for the `docker` deployment runtime's end-to-end tests and for the
 * deployment benchmark (bench/deploy.ts; the tests use this file through test/helpers/docker.ts:
 * the benchmarks never import the tests): a `dockerd` of the test's
 * own, a registry on a loopback port, and tiny service images built and pushed in the test.
 *
 * Why each choice:
 * - The system's packages, never a download: `dockerd` from Debian's `docker.io`, the registry
 *   from `docker-registry`, the image's only program from `busybox-static`, and `ip` (iproute2),
 *   `setpriv` (util-linux) and `umount` (mount). `dockerPrograms()` finds them through
 *   `systemProgram`, which installs what is missing with apt-get when the tests run as root (CI:
 *   a fresh Debian 12 machine); test files starting in parallel retry while another holds the
 *   dpkg lock, so a file's set-up may take DOCKER_SETUP_TIMEOUT_MS there. Not root: one line
 *   names every missing package (and dockerd needs root anyway).
 * - A daemon per call, never the machine's: its own `--data-root`, `--exec-root`, `--pidfile`,
 *   unix socket and `--config-file` in a temp dir (that file only moves the trust key off the
 *   shared /etc/docker/key.json, and a host's /etc/docker/daemon.json changes nothing), and its
 *   own containerd namespaces: dockerd starts a containerd of its own, but should it find a
 *   system one, two test daemons still never see each other's containers.
 * - A bridge per daemon, not the default docker0: every daemon on a host takes docker0 and hands
 *   out addresses from 172.17.0.0/16 on its own, so two daemons (two test files in parallel, or
 *   an engineer's daemon) both gave their first container 172.17.0.2 on the same bridge, and a
 *   port one daemon published answered with the other daemon's container (tried: it did). Each
 *   daemon here gets `--bridge tether-dkN` with 172.31.N.0/24, a bridge the harness creates and
 *   deletes. The interface's name is the lock between parallel files (`ip link add` fails when it
 *   exists); its alias names the owners' pids and the daemon's dir, so that a bridge and dir left
 *   by a test process killed outright are taken back by the next daemon.
 * - `--iptables=false`, no ip forwarding or masquerade: a starting dockerd flushes the DOCKER
 *   chains every other daemon relies on, and the tests need none of it. Ports published on
 *   127.0.0.1 (`-p 127.0.0.1::8080`) go through docker-proxy, the userland proxy, which needs no
 *   rule; the containers reach nothing beyond their bridge. Tests connect to 127.0.0.1 only,
 *   never to a container's address.
 * - No TLS for the registry (distribution 2.8, filesystem storage in a temp dir, no environment so
 *   no REGISTRY_* variable overrides its file): dockerd treats 127.0.0.0/8 as an insecure
 *   registry by default, so it pushes to and pulls from `127.0.0.1:PORT` over plain HTTP.
 * - Images FROM scratch with the static busybox (httpd, wget) and one index.html: about 2 MB,
 *   built through the Engine API (dockerode, a tar-stream context) and pushed in about half a
 *   second, with a HEALTHCHECK every second so that `healthy` comes in about a second and
 *   `unhealthy` in about three, not minutes.
 * - Everything stops by pid (SIGTERM, then SIGKILL after a deadline): the containers first, then
 *   dockerd, then its containerd should it outlive it, then every mount left under the temp dir
 *   (overlay layers, network namespaces, the data root's own bind mount) deepest first, then the
 *   dir and the bridge. A test file that forgets to stop is stopped when it ends (`stopAllDocker`). The daemons run under
 *   `setpriv --pdeathsig SIGTERM` (same pid): a test process killed outright still takes its
 *   dockerd and registry down with it, and dockerd then unmounts its own layers.
 *
 * The parts: ./docker/processes (programs and processes), ./docker/daemon, ./docker/registry,
 * ./docker/image.
 */
export {
  DOCKER_SETUP_TIMEOUT_MS,
  dockerPrograms,
  isAlive,
  stopAllDocker,
  type DockerDaemon,
  type Registry,
  type ServiceImageOptions,
} from './docker/processes';
export { startDocker } from './docker/daemon';
export { startRegistry } from './docker/registry';
export { buildServiceImage, serviceDockerfile } from './docker/image';
