// Many sockets' sends in one system call (io_uring, through Debian's liburing): a proxy that
// shares its core with the upstream writes an iteration's requests upstream before the
// upstream, woken by the first, can preempt it (the kernel preempts on return to user space).
#ifndef CSENDRING_H
#define CSENDRING_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef struct sidecar_send_ring sidecar_send_ring;

/// A ring for at most `entries` sends per call; NULL (errno set) where the kernel refuses
/// io_uring (a seccomp filter, kernel.io_uring_disabled) or is older than 5.18.
sidecar_send_ring *sidecar_send_ring_new(unsigned entries);
void sidecar_send_ring_free(sidecar_send_ring *ring);

/// Sends `messages[i]` on `fds[i]` for each i < count (at most `entries`) with MSG_DONTWAIT |
/// MSG_NOSIGNAL, all in one io_uring_enter, and waits for every completion (none blocks: a
/// full socket completes with -EAGAIN). `results[i]`: the bytes sent, or -errno: -ECANCELED
/// when it was not attempted (send it with a plain call), -EIO when the ring failed after the
/// kernel took it (whether it was sent is unknown: fail the stream). The caller drains exactly
/// what the results say was sent. Returns 0, or -errno when the ring failed; it is then
/// unusable (only `sidecar_send_ring_free` may follow).
int sidecar_send_ring_send(sidecar_send_ring *ring, const int *fds, struct msghdr *messages, unsigned count,
                           ssize_t *results);

#endif
