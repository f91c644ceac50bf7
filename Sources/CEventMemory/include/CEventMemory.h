// libevent's allocations through a per-thread cache of blocks.
//
// A proxied request makes four evbuffer chains (the request and the response head, each read
// and written), 512 or 1024 bytes, and frees them when the iteration's sends are done. Many
// of them are alive at once at the end of an iteration, more than glibc's per-thread cache
// keeps (7 per size), so most allocations and frees took malloc's slower paths: ~1,100
// instructions per request (callgrind). Here each thread keeps up to 64 freed blocks per
// power-of-two size from 512 to 8192 bytes and hands them out again; other sizes go straight
// to malloc. A block freed on another thread joins that thread's cache; a thread's cache is
// freed when the thread exits.
#ifndef CEVENTMEMORY_H
#define CEVENTMEMORY_H

#include <stddef.h>

/// Installs the cache as libevent's allocator (event_set_mem_functions). Must be called
/// before libevent allocates anything, and once: memory libevent allocated before would be
/// freed by the wrong allocator. Returns 1 the first time, 0 after.
int sidecar_event_memory_install(void);

/// The functions installed, for tests: allocate, resize and free a block as libevent does.
void *sidecar_event_memory_malloc(size_t size);
void *sidecar_event_memory_realloc(void *pointer, size_t size);
void sidecar_event_memory_free(void *pointer);

/// Blocks this thread keeps for reuse, over all sizes (tests).
size_t sidecar_event_memory_cached_blocks(void);

#endif
