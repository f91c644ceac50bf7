#include "CSendRing.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

struct sidecar_send_ring {
    struct io_uring ring;
    unsigned entries;
    int failed;  // -errno once a call could not reap what it queued
};

sidecar_send_ring *sidecar_send_ring_new(unsigned entries) {
    sidecar_send_ring *ring = calloc(1, sizeof *ring);
    if (ring == NULL) return NULL;
    // SUBMIT_ALL (5.18): a send the kernel refuses completes with its error instead of
    // stopping the submission there. Kernels without it are refused a ring (EINVAL) and the
    // loop sends with plain calls: older kernels' handling of MSG_DONTWAIT in io_uring is not
    // relied on, since a send that armed a poll instead of failing would block the loop.
    int status = io_uring_queue_init(entries, &ring->ring, IORING_SETUP_SUBMIT_ALL);
    if (status < 0) {
        free(ring);
        errno = -status;
        return NULL;
    }
    ring->entries = entries;
    return ring;
}

void sidecar_send_ring_free(sidecar_send_ring *ring) {
    if (ring == NULL) return;
    // Closing the ring drops any entry the kernel never took: nothing runs after this.
    io_uring_queue_exit(&ring->ring);
    free(ring);
}

int sidecar_send_ring_send(sidecar_send_ring *ring, const int *fds, struct msghdr *messages, unsigned count,
                           ssize_t *results) {
    if (ring->failed) return ring->failed;
    if (count > ring->entries) return -EINVAL;
    unsigned queued = 0;
    for (; queued < count; queued++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring->ring);
        if (sqe == NULL) break;  // not expected: every call reaps all it queued
        // MSG_DONTWAIT: a full socket completes with -EAGAIN at once instead of arming a
        // poll that would complete after this call returned.
        // One buffer (most requests and responses): a plain send, which spares the kernel
        // copying in the message header and importing its vector.
        if (messages[queued].msg_iovlen == 1) {
            io_uring_prep_send(sqe, fds[queued], messages[queued].msg_iov[0].iov_base,
                               messages[queued].msg_iov[0].iov_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
            io_uring_prep_sendmsg(sqe, fds[queued], &messages[queued], MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        io_uring_sqe_set_data64(sqe, queued);
    }
    // One enter submits them all and waits for as many completions.
    int submitted = io_uring_submit_and_wait(&ring->ring, queued);
    unsigned taken = submitted > 0 ? (unsigned)submitted : 0;
    while (taken < queued) {
        int more = io_uring_submit_and_wait(&ring->ring, queued - taken);
        if (more == -EINTR) continue;
        if (more <= 0) {
            // Entries the kernel may take later would point at the caller's messages: the
            // ring is retired before that can happen, and what was taken is reaped below.
            ring->failed = more < 0 ? more : -EIO;
            break;
        }
        taken += (unsigned)more;
    }
    // In order: the kernel takes entries from the head. One it took but whose completion was
    // lost may or may not have been sent (-EIO: the caller fails that stream).
    for (unsigned i = 0; i < count; i++) results[i] = i < taken ? -EIO : -ECANCELED;
    for (unsigned reaped = 0; reaped < taken;) {
        struct io_uring_cqe *cqe;
        int status = io_uring_wait_cqe(&ring->ring, &cqe);
        if (status == -EINTR) continue;
        if (status < 0) {
            ring->failed = status;
            return status;
        }
        unsigned long long index = io_uring_cqe_get_data64(cqe);
        if (index < count) results[index] = cqe->res;
        io_uring_cqe_seen(&ring->ring, cqe);
        reaped++;
    }
    return ring->failed;
}
