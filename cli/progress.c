/*
 * cli/progress.c - a one-line progress bar on stderr: chunks done/total,
 * MB/s and time left.  Drawn only when stderr is a terminal and --quiet is
 * not given; redrawn at most ten times a second, by whichever worker
 * thread gets there first.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct bar {
    ck_progress p;
    const char *label;
    double t0, last;
    int drawn;
    pthread_mutex_t lock;
} bar;

static bar the_bar;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(bar *b, int64_t done, int64_t total, int64_t bytes, double t)
{
    char line[160], fill[31];
    double el = t - b->t0, rate = el > 0 ? (double)bytes / el / 1e6 : 0;
    double left = done > 0 ? el * (double)(total - done) / (double)done : 0;
    int w = total > 0 ? (int)(30 * done / total) : 30;

    memset(fill, '#', (size_t)w);
    memset(fill + w, '.', (size_t)(30 - w));
    fill[30] = '\0';
    snprintf(line, sizeof line,
             "\r%s [%s] %lld/%lld chunks  %.0f MB/s  %.0fs left ", b->label,
             fill, (long long)done, (long long)total, rate, left);
    fputs(line, stderr);
    b->drawn = 1;
}

static void update(void *ctx, int64_t done, int64_t total, int64_t bytes)
{
    bar *b = ctx;
    double t = now();

    if (t - b->last < 0.1 && done < total)
        return;
    if (pthread_mutex_trylock(&b->lock) != 0)
        return;
    b->last = t;
    draw(b, done, total, bytes, t);
    pthread_mutex_unlock(&b->lock);
}

void cli_progress_begin(cli_common *c, const char *label)
{
    if (c->quiet || !isatty(STDERR_FILENO))
        return;
    memset(&the_bar, 0, sizeof the_bar);
    pthread_mutex_init(&the_bar.lock, NULL);
    the_bar.p.update = update;
    the_bar.p.ctx = &the_bar;
    the_bar.label = label;
    the_bar.t0 = now();
    c->progress = &the_bar.p;
}

void cli_progress_end(cli_common *c)
{
    if (!c->progress)
        return;
    if (the_bar.drawn)
        fputs("\n", stderr);
    pthread_mutex_destroy(&the_bar.lock);
    c->progress = NULL;
}
