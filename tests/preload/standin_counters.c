/*
 * What the stand-in cuDNN saw, per shape (the operation graph's operation
 * and tensors: standin_plan.c names them), for tests to read: heuristics
 * queried, plans built (finalized) and timed, executes, and the engines and
 * knobs of the plans timed and executed. standin_backend_shapes gives
 * them to a program; with STANDIN_REPORT=path they are written to path at
 * exit ("%p" in path: the process id), one line per shape, fields
 * separated by one space, each NAME=VALUE, in this order:
 *
 *   shape=fprop:f32:2x3x32x32:16x3x3x3:2x16x32x32 heuristics=2 built=17
 *   build_failed=0 timed=10 executes=22 exec_failed=0 timed_ws_max=98304
 *   timed_plans=eng1_k2:3_k14:4,... executed_plans=eng0,... last=eng0
 *
 * (one line in the file). A tag list holds each distinct tag once, in the
 * order first seen, at most 48 (then "+" ends it); "-" is an empty list
 * or no plan. timed_ws_max is -1 when nothing was timed.
 *
 * Timing windows: the stand-in CUDA runtime reports each cudaEventRecord
 * of a thread (its record number) and each cudaEventElapsedTime between
 * two records of that thread. A plan that executed successfully after the
 * first record and before the second is timed; it counts once however
 * many windows it ran in (SAMPLE_MEDIAN_OF_THREE: three).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "standin_backend.h"

#define MAX_SHAPES 256
#define RING 16

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static struct standin_shape_stats shapes[MAX_SHAPES];
static int nshapes;
static unsigned long long next_serial;

/* The serials of the plans counted as timed: an open-addressing set. */
static unsigned long long *timed_set;
static size_t timed_cap, timed_len;

/* This thread's recent executes, and its current record number. */
struct exec_note {
    uint64_t seq;
    unsigned long long serial;
    long long ws;
    char shape[SB_SHAPE_MAX], tag[SB_TAG_MAX];
};
static __thread struct exec_note ring[RING];
static __thread int ring_next;
static __thread uint64_t cur_seq;

/* shape_of returns name's counts, made on first sight; past MAX_SHAPES,
 * the last slot ("other") takes the rest. cmu is held. */
static struct standin_shape_stats *shape_of(const char *name) {
    for (int i = 0; i < nshapes; i++)
        if (!strcmp(shapes[i].shape, name)) return &shapes[i];
    if (nshapes == MAX_SHAPES) {
        snprintf(shapes[MAX_SHAPES - 1].shape, SB_SHAPE_MAX, "other");
        return &shapes[MAX_SHAPES - 1];
    }
    struct standin_shape_stats *s = &shapes[nshapes++];
    snprintf(s->shape, sizeof s->shape, "%s", name);
    s->timed_ws_max = -1;
    return s;
}

static void add_tag(char (*tags)[SB_TAG_MAX], int *n, const char *tag) {
    for (int i = 0; i < *n && i < SB_TAGS_MAX; i++)
        if (!strcmp(tags[i], tag)) return;
    if (*n < SB_TAGS_MAX) snprintf(tags[(*n)++], SB_TAG_MAX, "%s", tag);
    else if (*n == SB_TAGS_MAX) snprintf(tags[SB_TAGS_MAX - 1], SB_TAG_MAX, "+"), (*n)++;
}

/* first_timing: serial not yet counted as timed; it is now. cmu is held. */
static int first_timing(unsigned long long serial) {
    if (2 * (timed_len + 1) > timed_cap) {
        size_t cap = timed_cap ? 2 * timed_cap : 1024;
        unsigned long long *set = calloc(cap, sizeof *set);
        if (!set) abort(); /* a test double: out of memory ends the test */
        for (size_t i = 0; i < timed_cap; i++)
            for (size_t j = timed_set[i] % cap; timed_set[i]; j = (j + 1) % cap)
                if (!set[j]) {
                    set[j] = timed_set[i];
                    break;
                }
        free(timed_set);
        timed_set = set, timed_cap = cap;
    }
    size_t j = serial % timed_cap;
    for (; timed_set[j]; j = (j + 1) % timed_cap)
        if (timed_set[j] == serial) return 0;
    timed_set[j] = serial;
    timed_len++;
    return 1;
}

void sb_count_heuristics(const char *shape) {
    pthread_mutex_lock(&cmu);
    shape_of(shape)->heuristics++;
    pthread_mutex_unlock(&cmu);
}

void sb_count_build(struct desc *plan, const char *shape, int ok) {
    pthread_mutex_lock(&cmu);
    struct standin_shape_stats *s = shape_of(shape);
    if (ok) {
        s->built++;
        plan->serial = ++next_serial;
    } else {
        s->build_failed++;
    }
    pthread_mutex_unlock(&cmu);
}

void sb_count_execute(const struct desc *plan, int64_t workspace, int ok) {
    pthread_mutex_lock(&cmu);
    struct standin_shape_stats *s = shape_of(plan->shape);
    if (ok) {
        s->executes++;
        add_tag(s->executed_tags, &s->nexecuted, plan->tag);
        snprintf(s->last, sizeof s->last, "%s", plan->tag);
    } else {
        s->exec_failed++;
    }
    pthread_mutex_unlock(&cmu);
    if (!ok) return;
    struct exec_note *e = &ring[ring_next++ % RING];
    e->seq = cur_seq;
    e->serial = plan->serial;
    e->ws = workspace;
    snprintf(e->shape, sizeof e->shape, "%s", plan->shape);
    snprintf(e->tag, sizeof e->tag, "%s", plan->tag);
}

void standin_backend_on_record(uint64_t seq) { cur_seq = seq; }

void standin_backend_on_window(uint64_t start, uint64_t stop) {
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < RING; i++) {
        struct exec_note *e = &ring[i];
        if (!e->serial || e->seq < start || e->seq >= stop || !first_timing(e->serial)) continue;
        struct standin_shape_stats *s = shape_of(e->shape);
        s->timed++;
        add_tag(s->timed_tags, &s->ntimed, e->tag);
        if (e->ws > s->timed_ws_max) s->timed_ws_max = e->ws;
    }
    pthread_mutex_unlock(&cmu);
}

int standin_backend_shapes(struct standin_shape_stats *out, int cap) {
    pthread_mutex_lock(&cmu);
    int n = nshapes;
    for (int i = 0; out && i < n && i < cap; i++) out[i] = shapes[i];
    pthread_mutex_unlock(&cmu);
    return n;
}

/* ---- the report ---------------------------------------------------------------- */

static void put_tags(FILE *f, const char *name, char (*tags)[SB_TAG_MAX], int n) {
    fprintf(f, " %s=", name);
    if (n == 0) fputc('-', f);
    for (int i = 0; i < n && i < SB_TAGS_MAX; i++) fprintf(f, "%s%s", i ? "," : "", tags[i]);
}

__attribute__((destructor)) static void write_report(void) {
    const char *path = getenv("STANDIN_REPORT");
    if (!path || !*path) return;
    char name[4096];
    size_t n = 0;
    for (const char *p = path; *p && n + 24 < sizeof name; p++) {
        if (p[0] == '%' && p[1] == 'p') n += (size_t)snprintf(name + n, sizeof name - n, "%ld", (long)getpid()), p++;
        else name[n++] = *p;
    }
    name[n] = 0;
    FILE *f = fopen(name, "w");
    if (!f) {
        fprintf(stderr, "stand-in cuDNN: cannot write STANDIN_REPORT %s\n", name);
        return;
    }
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < nshapes; i++) {
        struct standin_shape_stats *s = &shapes[i];
        fprintf(f, "shape=%s heuristics=%llu built=%llu build_failed=%llu timed=%llu executes=%llu exec_failed=%llu "
                   "timed_ws_max=%lld",
                s->shape, s->heuristics, s->built, s->build_failed, s->timed, s->executes, s->exec_failed,
                s->timed_ws_max);
        put_tags(f, "timed_plans", s->timed_tags, s->ntimed);
        put_tags(f, "executed_plans", s->executed_tags, s->nexecuted);
        fprintf(f, " last=%s\n", s->last[0] ? s->last : "-");
    }
    pthread_mutex_unlock(&cmu);
    fclose(f);
}
