#include "CEventMemory.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Each block starts with a header (16 bytes, so the caller's pointer keeps malloc's 16-byte
// alignment): the size asked for and the size class, or NO_CLASS for a block of another size.
enum { HEADER = 16, SMALLEST = 512, CLASSES = 5, KEEP_PER_CLASS = 64, NO_CLASS = CLASSES };

struct header {
    size_t size;
    size_t size_class;
};

struct free_block {
    struct free_block *next;
};

struct thread_cache {
    struct free_block *blocks[CLASSES];
    unsigned counts[CLASSES];
    int registered;
};

static __thread struct thread_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void release_cache(void *value) {
    struct thread_cache *c = value;
    for (int k = 0; k < CLASSES; k++) {
        while (c->blocks[k] != NULL) {
            struct free_block *b = c->blocks[k];
            c->blocks[k] = b->next;
            free((char *)b - HEADER);
        }
        c->counts[k] = 0;
    }
    c->registered = 0;
}

static void make_cache_key(void) { (void)pthread_key_create(&cache_key, release_cache); }

static inline size_t class_capacity(size_t k) { return (size_t)SMALLEST << k; }

// Sizes above half the smallest class up to the largest are cached; smaller ones (events,
// timers: malloc's own cache serves them) and larger ones are not.
static inline size_t class_of(size_t size) {
    if (size <= SMALLEST / 2 || size > class_capacity(CLASSES - 1)) return NO_CLASS;
    size_t k = 0;
    while (class_capacity(k) < size) k++;
    return k;
}

void *sidecar_event_memory_malloc(size_t size) {
    size_t k = class_of(size);
    if (k != NO_CLASS && cache.blocks[k] != NULL) {
        struct free_block *b = cache.blocks[k];
        cache.blocks[k] = b->next;
        cache.counts[k]--;
        struct header *h = (struct header *)((char *)b - HEADER);
        h->size = size;
        return b;
    }
    size_t capacity = k == NO_CLASS ? size : class_capacity(k);
    if (capacity > SIZE_MAX - HEADER) return NULL;
    struct header *h = malloc(HEADER + capacity);
    if (h == NULL) return NULL;
    h->size = size;
    h->size_class = k;
    return (char *)h + HEADER;
}

void sidecar_event_memory_free(void *pointer) {
    if (pointer == NULL) return;
    struct header *h = (struct header *)((char *)pointer - HEADER);
    size_t k = h->size_class;
    if (k != NO_CLASS && cache.counts[k] < KEEP_PER_CLASS) {
        if (!cache.registered) {
            // The key's destructor frees this thread's blocks when it exits.
            pthread_once(&cache_key_once, make_cache_key);
            if (pthread_setspecific(cache_key, &cache) != 0) {
                free(h);
                return;
            }
            cache.registered = 1;
        }
        struct free_block *b = pointer;
        b->next = cache.blocks[k];
        cache.blocks[k] = b;
        cache.counts[k]++;
        return;
    }
    free(h);
}

void *sidecar_event_memory_realloc(void *pointer, size_t size) {
    if (pointer == NULL) return sidecar_event_memory_malloc(size);
    struct header *h = (struct header *)((char *)pointer - HEADER);
    size_t k = h->size_class;
    if (k != NO_CLASS && size <= class_capacity(k)) {
        h->size = size;
        return pointer;
    }
    if (k == NO_CLASS && class_of(size) == NO_CLASS) {
        if (size > SIZE_MAX - HEADER) return NULL;
        struct header *moved = realloc(h, HEADER + size);
        if (moved == NULL) return NULL;
        moved->size = size;
        return (char *)moved + HEADER;
    }
    void *grown = sidecar_event_memory_malloc(size);
    if (grown == NULL) return NULL;
    memcpy(grown, pointer, h->size < size ? h->size : size);
    sidecar_event_memory_free(pointer);
    return grown;
}

size_t sidecar_event_memory_cached_blocks(void) {
    size_t n = 0;
    for (int k = 0; k < CLASSES; k++) n += cache.counts[k];
    return n;
}

int sidecar_event_memory_install(void) {
    static atomic_int installed;
    if (atomic_exchange(&installed, 1) != 0) return 0;
    event_set_mem_functions(sidecar_event_memory_malloc, sidecar_event_memory_realloc, sidecar_event_memory_free);
    return 1;
}
