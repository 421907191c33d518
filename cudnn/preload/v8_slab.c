/*
 * The small shadows' memory: 32-byte slots in 64 KiB slabs of the
 * interposer's own (mmap), apart from the host's heap. A host holds many
 * tensors alive; in malloc's heap their shadows sat between the host's
 * and cuDNN's own chunks, each with malloc's 8-byte header, and their
 * frees fed malloc's fast bins, which cuDNN's next large free then had to
 * consolidate. Here a slot is the shadow's 32 bytes exactly, the slots of
 * descriptors made one after another lie together, and a slab is given
 * back to the system when its last slot is freed (one empty slab is kept,
 * so that a host making and dropping one descriptor at a time does not
 * map and unmap a slab each time).
 *
 * v8_mu guards every slab (the callers hold it). A slab is aligned to its
 * size, so a slot's slab is its address rounded down; the slab's first
 * slot holds its header. Built with AddressSanitizer (make preload-asan),
 * each slot is malloc's instead, so that the sanitizer sees its bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "v8.h"

#if defined(__SANITIZE_ADDRESS__)
void *v8_slab_alloc(void) { return calloc(1, V8_SLOT); }
void v8_slab_free(void *p) { free(p); }
#else

#define SLAB_BYTES ((size_t)64 << 10)
#define SLOTS (SLAB_BYTES / V8_SLOT)

struct slab {
    struct slab *next, **prev; /* on the list of slabs with a free slot */
    void *free;                /* freed slots, linked through their first word */
    unsigned used;             /* slots in use */
    unsigned fresh;            /* the first slot never used (slot 0 is this header) */
};
_Static_assert(sizeof(struct slab) <= V8_SLOT, "a slab's header fits its first slot");

static struct slab *open_slabs; /* the slabs with a free slot */
static struct slab *spare;      /* an empty slab kept */

static void open_add(struct slab *b) {
    b->next = open_slabs;
    if (b->next) b->next->prev = &b->next;
    b->prev = &open_slabs;
    open_slabs = b;
}

static void open_remove(struct slab *b) {
    *b->prev = b->next;
    if (b->next) b->next->prev = b->prev;
    b->next = NULL;
    b->prev = NULL;
}

/* slab_map maps a slab aligned to its size: twice the size, then the
 * parts before and after it given back. */
static struct slab *slab_map(void) {
    char *p = mmap(NULL, 2 * SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uintptr_t a = ((uintptr_t)p + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1);
    size_t head = a - (uintptr_t)p;
    if (head) munmap(p, head);
    munmap((char *)a + SLAB_BYTES, SLAB_BYTES - head);
    struct slab *b = (struct slab *)a;
    b->fresh = 1;
    return b;
}

void *v8_slab_alloc(void) {
    struct slab *b = open_slabs;
    if (!b) {
        b = spare ? spare : slab_map();
        spare = NULL;
        if (!b) return NULL;
        open_add(b);
    }
    char *p;
    if (b->free) {
        p = b->free;
        memcpy(&b->free, p, sizeof b->free);
    } else {
        p = (char *)b + (size_t)b->fresh++ * V8_SLOT;
    }
    if (++b->used == SLOTS - 1) open_remove(b); /* full */
    memset(p, 0, V8_SLOT);
    return p;
}

void v8_slab_free(void *p) {
    struct slab *b = (struct slab *)((uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1));
    memcpy(p, &b->free, sizeof b->free);
    b->free = p;
    if (b->used-- == SLOTS - 1) open_add(b); /* was full */
    if (b->used > 0) return;
    open_remove(b);
    if (spare) munmap(spare, SLAB_BYTES);
    /* Kept empty: its slots all free, in its list, for the next alloc. */
    b->free = NULL;
    b->fresh = 1;
    spare = b;
}
#endif
