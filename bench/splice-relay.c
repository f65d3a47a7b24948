/*
 * The physical limit of a relay, for the benchmarks (bench/relay-chain.ts): a TCP relay in C that
 * moves bytes with splice(2) through a pipe, so they never enter user space. Usage:
 * `splice-relay PORT...`: listens on 127.0.0.1, one ephemeral port per target PORT, prints
 * `{"ports":[...]}` once listening, and relays every connection to its target on 127.0.0.1, both
 * ways, a thread per direction. A FIN is passed on as a FIN (half-close), as the Node relays do.
 * Built by the bench with the system's `cc`; nothing of tether runs it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_TARGETS 16
#define PIPE_BYTES (1 << 20)

struct direction {
  int from;
  int to;
};

struct connection {
  int client;
  int target;
};

/* Moves bytes from one socket to the other until EOF or an error, then half-closes the other. */
static void *pump(void *arg) {
  struct direction *d = arg;
  int p[2];
  if (pipe2(p, O_CLOEXEC) == 0) {
    /* A pipe holds 64 KiB by default; 1 MiB lets one splice move what a socket has buffered. */
    fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES);
    for (;;) {
      ssize_t n = splice(d->from, NULL, p[1], NULL, PIPE_BYTES, SPLICE_F_MOVE);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      while (n > 0) {
        /* No SPLICE_F_MORE: like MSG_MORE it would hold back a lone small write (ping-pong). */
        ssize_t m = splice(p[0], NULL, d->to, NULL, (size_t)n, SPLICE_F_MOVE);
        if (m < 0 && errno == EINTR) continue;
        if (m <= 0) goto done;
        n -= m;
      }
    }
  done:
    close(p[0]);
    close(p[1]);
  }
  shutdown(d->to, SHUT_WR);
  return NULL;
}

static int dial(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    if (s >= 0) close(s);
    return -1;
  }
  return s;
}

static void no_delay(int s) {
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* One accepted connection: dial its target, pump both ways, close both once both ended. */
static void *serve(void *arg) {
  struct connection *c = arg;
  int up = dial(c->target);
  if (up >= 0) {
    no_delay(up);
    struct direction out = {c->client, up}, back = {up, c->client};
    pthread_t t;
    if (pthread_create(&t, NULL, pump, &out) == 0) {
      pump(&back);
      pthread_join(t, NULL);
    }
    close(up);
  }
  close(c->client);
  free(c);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc - 1;
  if (n < 1 || n > MAX_TARGETS) {
    fprintf(stderr, "usage: splice-relay PORT... (1 to %d)\n", MAX_TARGETS);
    return 2;
  }
  /* A peer that closes first must not end the relay with SIGPIPE: splice returns EPIPE instead. */
  signal(SIGPIPE, SIG_IGN);
  struct pollfd listeners[MAX_TARGETS];
  int targets[MAX_TARGETS];
  printf("{\"ports\":[");
  for (int i = 0; i < n; i++) {
    targets[i] = atoi(argv[i + 1]);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0) {
      perror("splice-relay: listen");
      return 1;
    }
    listeners[i].fd = s;
    listeners[i].events = POLLIN;
    printf("%s%d", i ? "," : "", ntohs(a.sin_port));
  }
  printf("]}\n");
  fflush(stdout);
  for (;;) {
    if (poll(listeners, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      perror("splice-relay: poll");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      if (!(listeners[i].revents & POLLIN)) continue;
      int client = accept4(listeners[i].fd, NULL, NULL, SOCK_CLOEXEC);
      if (client < 0) continue;
      no_delay(client);
      struct connection *c = malloc(sizeof *c);
      pthread_t t;
      if (!c) {
        close(client);
        continue;
      }
      c->client = client;
      c->target = targets[i];
      if (pthread_create(&t, NULL, serve, c) != 0) {
        close(client);
        free(c);
        continue;
      }
      pthread_detach(t);
    }
  }
}
