#ifndef SIDECAR_CEVENT_SHIM_H
#define SIDECAR_CEVENT_SHIM_H
// glibc headers first: Debian's event2/event-config.h defines _GNU_SOURCE, which would
// otherwise change fd_set inside this module and clash with Glibc's.
#include <sys/types.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <malloc.h>

#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <openssl/ssl.h>

// Macros Swift cannot import.
static inline struct event *sidecar_evtimer_new(struct event_base *b, event_callback_fn cb, void *arg) {
    return event_new(b, -1, 0, cb, arg);
}
static inline struct event *sidecar_evsignal_new(struct event_base *b, int sig, event_callback_fn cb, void *arg) {
    return event_new(b, sig, EV_SIGNAL | EV_PERSIST, cb, arg);
}
static inline int sidecar_errno(void) { return errno; }
// Proxy additions.
static inline int sidecar_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline int sidecar_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    extern int accept4(int, struct sockaddr *, socklen_t *, int);  // _GNU_SOURCE-only in glibc
    return accept4(fd, addr, len, flags);
}
#endif
