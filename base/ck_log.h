/*
 * base/ck_log.h - the only way code below cli/ talks to the user.
 * Warnings and notes go to stderr prefixed "chunkctl: "; --quiet silences
 * notes, never errors (those travel back as ck_err to cli/).
 */
#ifndef CK_LOG_H
#define CK_LOG_H

typedef enum ck_log_level {
    CK_LOG_WARN = 0,
    CK_LOG_NOTE,
    CK_LOG_DEBUG
} ck_log_level;

/* mute 1: every message is dropped, whatever the level (an MPI rank
 * other than 0, whose words rank 0 speaks). */
void ck_log_mute(int mute);
/* Messages above 'level' are dropped.  Default: CK_LOG_NOTE. */
void ck_log_set_level(ck_log_level level);
ck_log_level ck_log_get_level(void);
void ck_log(ck_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
