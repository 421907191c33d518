/*
 * What the interposed dlsym and dlvsym share (dlsym_entry.S, dlsym.c,
 * dlsym_libc.c; internal, hidden like everything in this library).
 */
#ifndef CONVCACHE_PRELOAD_DLSYM_H
#define CONVCACHE_PRELOAD_DLSYM_H

typedef void *(*dlsym_fn)(void *handle, const char *name);
typedef void *(*dlvsym_fn)(void *handle, const char *name, const char *version);

/* glibc's own dlsym and dlvsym, found by dlsym_libc_find; NULL until then.
 * The entries jump to them. */
extern dlsym_fn libc_dlsym;
extern dlvsym_fn libc_dlvsym;

/* dlsym_libc_find finds glibc's dlsym and dlvsym by reading the dynamic
 * symbol table of the C library (libdl.so.2 first, for glibc before 2.34)
 * itself, since any dlsym this library called would be its own. Returns 1
 * when both were found. Idempotent, safe from any thread. */
int dlsym_libc_find(void);

/* dlsym_hook decides one lookup (version NULL for dlsym): this library's
 * own function where the lookup is redirected, or NULL, and then the entry
 * asks glibc, as the caller would have. caller: the caller's return
 * address. */
void *dlsym_hook(void *handle, const char *name, const char *version, void *caller);

/* String tests for the code that runs before a lookup is known to be a
 * served one (dlsym_hook's first test, dlsym_libc.c): plain loops, never
 * the C library's strcmp, strncmp, strrchr or strlen. Other libraries call
 * dlsym while they start, a sanitizer runtime (ThreadSanitizer,
 * AddressSanitizer) among them, to find the functions its interceptors
 * wrap; its strcmp is one of those interceptors, not yet able to run (it
 * jumped to address 0: every sanitized program crashed at start under the
 * interposer). */
static inline int dl_has_prefix(const char *s, const char *prefix) {
    for (; *prefix; s++, prefix++)
        if (*s != *prefix) return 0;
    return 1;
}

static inline int dl_same(const char *a, const char *b) {
    for (; *a == *b; a++, b++)
        if (!*a) return 1;
    return 0;
}

#endif
