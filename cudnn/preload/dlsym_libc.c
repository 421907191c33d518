/*
 * glibc's own dlsym and dlvsym, for the interposed ones (dlsym_entry.S) to
 * hand lookups to. This library defines dlsym and dlvsym, so every call it
 * made to either by name would come back to it; glibc has no other public
 * way in. They are read from the C library's dynamic symbol table, as the
 * loader itself would: the object is found in the loaded objects' list by
 * its name (libdl.so.2, where glibc before 2.34 defines them, then
 * libc.so.6), the symbol by its GNU hash table (or the SysV one), the
 * default version preferred. Nothing is written; nothing is cached that is
 * not a function inside that object.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "dlsym.h"

dlsym_fn libc_dlsym;
dlvsym_fn libc_dlvsym;

/* basename_is reports whether path's last component begins with prefix. */
static int basename_is(const char *path, const char *prefix) {
    if (!path) return 0;
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/') b = p + 1;
    return dl_has_prefix(b, prefix); /* (dlsym.h: no strncmp here) */
}

/* at: a dynamic-section address; glibc relocates most in place (adds
 * l_addr), some architectures leave them as offsets. */
static uintptr_t at(const struct link_map *m, ElfW(Addr) p) {
    return p < m->l_addr ? m->l_addr + p : p;
}

static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

struct dyn {
    const ElfW(Sym) *sym;
    const char *str;
    const uint32_t *gnu, *sysv;
    const ElfW(Half) *ver;
};

/* pick reports whether symbol i is a definition of name, a function; *best
 * takes it if it is the default version or nothing better was seen. */
static void pick(const struct link_map *m, const struct dyn *d, uint32_t i, const char *name,
                 uintptr_t *best, int *best_default) {
    const ElfW(Sym) *s = &d->sym[i];
    if (s->st_shndx == SHN_UNDEF || (s->st_info & 0xf) != STT_FUNC || s->st_value == 0) return;
    if (!dl_same(d->str + s->st_name, name)) return;
    int dflt = !d->ver || !(d->ver[i] & 0x8000);
    if (*best && (*best_default || !dflt)) return;
    *best = m->l_addr + s->st_value;
    *best_default = dflt;
}

static uintptr_t lookup(const struct link_map *m, const char *name) {
    struct dyn d = {0};
    for (const ElfW(Dyn) *e = m->l_ld; e && e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_SYMTAB: d.sym = (const ElfW(Sym) *)at(m, e->d_un.d_ptr); break;
        case DT_STRTAB: d.str = (const char *)at(m, e->d_un.d_ptr); break;
        case DT_GNU_HASH: d.gnu = (const uint32_t *)at(m, e->d_un.d_ptr); break;
        case DT_HASH: d.sysv = (const uint32_t *)at(m, e->d_un.d_ptr); break;
        case DT_VERSYM: d.ver = (const ElfW(Half) *)at(m, e->d_un.d_ptr); break;
        }
    }
    if (!d.sym || !d.str) return 0;
    uintptr_t best = 0;
    int best_default = 0;
    if (d.gnu) {
        uint32_t nbuckets = d.gnu[0], symoffset = d.gnu[1], bloom_size = d.gnu[2];
        if (nbuckets == 0) return 0;
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(d.gnu + 4) + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = gnu_hash(name), i = buckets[h % nbuckets];
        if (i < symoffset) return 0;
        for (;; i++) {
            uint32_t c = chain[i - symoffset];
            if ((c | 1) == (h | 1)) pick(m, &d, i, name, &best, &best_default);
            if (c & 1) break;
        }
    } else if (d.sysv) {
        for (uint32_t i = 0; i < d.sysv[1]; i++) pick(m, &d, i, name, &best, &best_default);
    }
    return best;
}

/* inside reports whether p lies in the object m (not in this library). */
static int inside(const struct link_map *m, uintptr_t p) {
    Dl_info info;
    return p && dladdr((void *)p, &info) && (uintptr_t)info.dli_fbase == m->l_addr &&
           info.dli_fbase != NULL;
}

int dlsym_libc_find(void) {
    if (__atomic_load_n(&libc_dlsym, __ATOMIC_ACQUIRE) && __atomic_load_n(&libc_dlvsym, __ATOMIC_ACQUIRE))
        return 1;
    /* This library's own link map, then every object in the list. */
    Dl_info info;
    struct link_map *self = NULL;
    if (!dladdr1((void *)&dlsym_libc_find, &info, (void **)&self, RTLD_DL_LINKMAP) || !self) return 0;
    while (self->l_prev) self = self->l_prev;
    static const char *const names[] = {"libdl.so", "libc.so"};
    for (int k = 0; k < 2; k++) {
        for (struct link_map *m = self; m; m = m->l_next) {
            if (!basename_is(m->l_name, names[k])) continue;
            uintptr_t s = lookup(m, "dlsym"), v = lookup(m, "dlvsym");
            if (!inside(m, s) || !inside(m, v)) continue;
            __atomic_store_n(&libc_dlvsym, (dlvsym_fn)v, __ATOMIC_RELEASE);
            __atomic_store_n(&libc_dlsym, (dlsym_fn)s, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

/* Found at load, before the host can call dlsym from another thread; a
 * dlsym called before this constructor runs (another library's
 * constructor) finds them itself. */
__attribute__((constructor)) static void dlsym_libc_init(void) { dlsym_libc_find(); }
