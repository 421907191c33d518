/*
 * STANDIN_TRACE=path: the stand-in cuDNN appends one line per backend call
 * to path ("%p": the process id), to see what a host (cudnn_frontend)
 * calls, in order:
 *
 *   create ENGINEHEUR_DESCRIPTOR 0x... -> 0
 *   set 0x...(ENGINEHEUR_DESCRIPTOR) ENGINEHEUR_MODE type=8 n=1 -> 0
 *   get 0x...(ENGINEHEUR_DESCRIPTOR) ENGINEHEUR_RESULTS type=15 req=0 -> 0 n=19
 *   finalize 0x...(EXECUTION_PLAN_DESCRIPTOR) -> 0
 *   execute 0x... 0x... -> 0
 *   destroy 0x...(KNOB_CHOICE_DESCRIPTOR) -> 0
 *
 * Names are cudnn_graph.h's without their CUDNN_ / CUDNN_ATTR_ prefixes,
 * for the values backend_api.h lists; a number otherwise.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin_backend.h"

struct named {
    const char *name;
    long long value;
};
#define CC_NAMED(name, value) {#name, value},
static const struct named constants[] = {CC_BACKEND_CONSTANTS(CC_NAMED)};
#undef CC_NAMED

/* lookup names value among the constants that start with prefix (without
 * it), or writes the number into buf. */
static const char *lookup(const char *prefix, long long value, char *buf, size_t cap) {
    size_t n = strlen(prefix);
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (constants[i].value == value && !strncmp(constants[i].name, prefix, n)) return constants[i].name + n;
    snprintf(buf, cap, "%lld", value);
    return buf;
}

const char *sb_type_name(int t, char *buf, size_t cap) { return lookup("CUDNN_BACKEND_", t, buf, cap); }
const char *sb_attr_name(int a, char *buf, size_t cap) { return lookup("CUDNN_ATTR_", a, buf, cap); }

static pthread_once_t once = PTHREAD_ONCE_INIT;
static FILE *out;
static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER;

static void open_trace(void) {
    const char *path = getenv("STANDIN_TRACE");
    if (!path || !*path) return;
    char name[4096];
    size_t n = 0;
    for (const char *p = path; *p && n + 24 < sizeof name; p++) {
        if (p[0] == '%' && p[1] == 'p') n += (size_t)snprintf(name + n, sizeof name - n, "%ld", (long)getpid()), p++;
        else name[n++] = *p;
    }
    name[n] = 0;
    out = fopen(name, "a");
    if (!out) fprintf(stderr, "stand-in cuDNN: cannot open STANDIN_TRACE %s\n", name);
}

int sb_tracing(void) {
    pthread_once(&once, open_trace);
    return out != NULL;
}

void sb_trace(const char *fmt, ...) {
    if (!sb_tracing()) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&tmu);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
    pthread_mutex_unlock(&tmu);
    va_end(ap);
}
