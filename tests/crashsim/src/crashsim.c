/*
 * crashsim: an SQLite VFS over the default one that keeps, beside every file, what a power
 * cut would leave of it: the bytes of its last xSync, and whether its name is on stable
 * storage (a folder sync, which SQLite's unix VFS makes on the first sync of a new WAL or
 * journal, or a delete with its syncDir flag). In the spirit of SQLite's own crash tests
 * (src/test6.c), simpler: unsynced writes are dropped whole, never torn.
 *
 * crashsim_freeze(prefix) makes every later write, truncate, sync and delete of the files
 * under prefix a no-op (the process "lost power": what its connections do while they close
 * reaches no disk); crashsim_restore(prefix) then rewrites each such file as the power cut left
 * it and forgets it.
 */
#include <sqlite3.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct Entry Entry;
struct Entry {
    char *path;
    int live_exists;              /* the real file exists */
    unsigned char *live_synced;   /* what the live file held at its last sync */
    size_t live_synced_len;
    int durable_exists;           /* after a power cut, the name exists ... */
    unsigned char *durable;       /* ... and holds this */
    size_t durable_len;
    int durable_is_live;          /* the durable name is the live file's */
    int frozen;
    int open;                     /* handles open on it (restore refuses while any is) */
    Entry *next;
};

typedef struct CsFile {
    sqlite3_file base;
    Entry *e;          /* NULL for files without a name (temporary) */
    int dirsync;       /* sync the folder at the first sync, as the unix VFS does */
    sqlite3_file *real;
} CsFile;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static Entry *entries;
static sqlite3_vfs *base_vfs;
static sqlite3_vfs cs_vfs;
static sqlite3_io_methods cs_io;

static void set_bytes(unsigned char **dst, size_t *dst_len, const unsigned char *src, size_t len) {
    free(*dst);
    *dst = NULL;
    *dst_len = 0;
    if (len) {
        *dst = malloc(len);
        memcpy(*dst, src, len);
        *dst_len = len;
    }
}

/* The whole content of path (NULL, 0 when it cannot be read). */
static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

static Entry *find(const char *path) {
    for (Entry *e = entries; e; e = e->next)
        if (strcmp(e->path, path) == 0) return e;
    return NULL;
}

static int in_dir(const char *path, const char *dir, size_t dir_len) {
    return strncmp(path, dir, dir_len) == 0 && path[dir_len] == '/' &&
           strchr(path + dir_len + 1, '/') == NULL;
}

/* A sync of the folder holding path: every name in it is durable as it is now. */
static void dirsync_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return;
    size_t dir_len = (size_t)(slash - path);
    for (Entry *e = entries; e; e = e->next) {
        if (!in_dir(e->path, path, dir_len)) continue;
        if (e->live_exists) {
            e->durable_exists = 1;
            set_bytes(&e->durable, &e->durable_len, e->live_synced, e->live_synced_len);
            e->durable_is_live = 1;
        } else {
            e->durable_exists = 0;
            set_bytes(&e->durable, &e->durable_len, NULL, 0);
            e->durable_is_live = 0;
        }
    }
}

static int frozen(CsFile *p) {
    return p->e && __atomic_load_n(&p->e->frozen, __ATOMIC_SEQ_CST);
}

/* ---- file methods ---- */

static int cs_close(sqlite3_file *f) {
    CsFile *p = (CsFile *)f;
    int rc = p->real->pMethods->xClose(p->real);
    if (p->e) {
        pthread_mutex_lock(&mu);
        p->e->open--;
        pthread_mutex_unlock(&mu);
        p->e = NULL;
    }
    return rc;
}

static int cs_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xRead(p->real, buf, amt, off);
}

static int cs_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off) {
    CsFile *p = (CsFile *)f;
    if (frozen(p)) return SQLITE_OK;
    return p->real->pMethods->xWrite(p->real, buf, amt, off);
}

static int cs_truncate(sqlite3_file *f, sqlite3_int64 size) {
    CsFile *p = (CsFile *)f;
    if (frozen(p)) return SQLITE_OK;
    return p->real->pMethods->xTruncate(p->real, size);
}

static int cs_sync(sqlite3_file *f, int flags) {
    CsFile *p = (CsFile *)f;
    if (frozen(p)) return SQLITE_OK;
    int rc = p->real->pMethods->xSync(p->real, flags);
    if (rc != SQLITE_OK || !p->e) return rc;
    pthread_mutex_lock(&mu);
    Entry *e = p->e;
    size_t len;
    unsigned char *now = read_all(e->path, &len);
    free(e->live_synced);
    e->live_synced = now;
    e->live_synced_len = len;
    if (e->durable_is_live) set_bytes(&e->durable, &e->durable_len, now, len);
    if (p->dirsync) {
        dirsync_of(e->path);
        p->dirsync = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int cs_file_size(sqlite3_file *f, sqlite3_int64 *size) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xFileSize(p->real, size);
}

static int cs_lock(sqlite3_file *f, int l) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xLock(p->real, l);
}

static int cs_unlock(sqlite3_file *f, int l) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xUnlock(p->real, l);
}

static int cs_check_reserved(sqlite3_file *f, int *out) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xCheckReservedLock(p->real, out);
}

static int cs_file_control(sqlite3_file *f, int op, void *arg) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xFileControl(p->real, op, arg);
}

static int cs_sector_size(sqlite3_file *f) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xSectorSize(p->real);
}

static int cs_device(sqlite3_file *f) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xDeviceCharacteristics(p->real);
}

static int cs_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xShmMap(p->real, pg, sz, extend, pp);
}

static int cs_shm_lock(sqlite3_file *f, int off, int n, int flags) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xShmLock(p->real, off, n, flags);
}

static void cs_shm_barrier(sqlite3_file *f) {
    CsFile *p = (CsFile *)f;
    p->real->pMethods->xShmBarrier(p->real);
}

static int cs_shm_unmap(sqlite3_file *f, int del) {
    CsFile *p = (CsFile *)f;
    return p->real->pMethods->xShmUnmap(p->real, del);
}

static int cs_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp) {
    CsFile *p = (CsFile *)f;
    /* No memory-mapped reads: every byte goes through xRead and xWrite. */
    (void)p; (void)off; (void)amt;
    *pp = 0;
    return SQLITE_OK;
}

static int cs_unfetch(sqlite3_file *f, sqlite3_int64 off, void *ptr) {
    (void)f; (void)off; (void)ptr;
    return SQLITE_OK;
}

/* ---- VFS methods ---- */

static int cs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags) {
    (void)vfs;
    CsFile *p = (CsFile *)f;
    memset(p, 0, sizeof(*p));
    p->real = (sqlite3_file *)&p[1];
    int existed = name && access(name, F_OK) == 0;
    int rc = base_vfs->xOpen(base_vfs, name, p->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        p->base.pMethods = 0;
        return rc;
    }
    p->base.pMethods = &cs_io;
    if (!name) return rc;
    p->dirsync = (flags & SQLITE_OPEN_CREATE) &&
                 (flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL));
    pthread_mutex_lock(&mu);
    Entry *e = find(name);
    if (!e) {
        e = calloc(1, sizeof(*e));
        e->path = strdup(name);
        e->next = entries;
        entries = e;
        if (existed) {
            /* Made before this simulation looked: taken as on stable storage. */
            size_t len;
            unsigned char *now = read_all(name, &len);
            e->live_synced = now;
            e->live_synced_len = len;
            e->durable_exists = 1;
            set_bytes(&e->durable, &e->durable_len, now, len);
            e->durable_is_live = 1;
        }
        e->live_exists = 1;
    } else if (!existed) {
        /* A new file under a name whose old file may still be the durable one. */
        e->live_exists = 1;
        set_bytes(&e->live_synced, &e->live_synced_len, NULL, 0);
        e->durable_is_live = 0;
    }
    e->open++;
    p->e = e;
    pthread_mutex_unlock(&mu);
    return rc;
}

static int cs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    pthread_mutex_lock(&mu);
    Entry *e = find(name);
    if (e && e->frozen) {
        pthread_mutex_unlock(&mu);
        return SQLITE_OK;
    }
    pthread_mutex_unlock(&mu);
    int rc = base_vfs->xDelete(base_vfs, name, sync_dir);
    if (rc != SQLITE_OK) return rc;
    pthread_mutex_lock(&mu);
    if (e) {
        e->live_exists = 0;
        set_bytes(&e->live_synced, &e->live_synced_len, NULL, 0);
        e->durable_is_live = 0;
        if (sync_dir) dirsync_of(name);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int cs_access(sqlite3_vfs *v, const char *n, int flags, int *out) {
    (void)v;
    return base_vfs->xAccess(base_vfs, n, flags, out);
}
static int cs_full_pathname(sqlite3_vfs *v, const char *n, int len, char *out) {
    (void)v;
    return base_vfs->xFullPathname(base_vfs, n, len, out);
}
static void *cs_dlopen(sqlite3_vfs *v, const char *n) {
    (void)v;
    return base_vfs->xDlOpen(base_vfs, n);
}
static void cs_dlerror(sqlite3_vfs *v, int n, char *out) {
    (void)v;
    base_vfs->xDlError(base_vfs, n, out);
}
static void (*cs_dlsym(sqlite3_vfs *v, void *h, const char *s))(void) {
    (void)v;
    return base_vfs->xDlSym(base_vfs, h, s);
}
static void cs_dlclose(sqlite3_vfs *v, void *h) {
    (void)v;
    base_vfs->xDlClose(base_vfs, h);
}
static int cs_randomness(sqlite3_vfs *v, int n, char *out) {
    (void)v;
    return base_vfs->xRandomness(base_vfs, n, out);
}
static int cs_sleep(sqlite3_vfs *v, int us) {
    (void)v;
    return base_vfs->xSleep(base_vfs, us);
}
static int cs_current_time(sqlite3_vfs *v, double *out) {
    (void)v;
    return base_vfs->xCurrentTime(base_vfs, out);
}
static int cs_last_error(sqlite3_vfs *v, int n, char *out) {
    (void)v;
    return base_vfs->xGetLastError(base_vfs, n, out);
}
static int cs_current_time64(sqlite3_vfs *v, sqlite3_int64 *out) {
    (void)v;
    return base_vfs->xCurrentTimeInt64(base_vfs, out);
}

/* ---- the test's controls ---- */

/* Registers the VFS as "crashsim" (the default one with make_default). 0 when done. */
int crashsim_register(int make_default) {
    if (base_vfs) return SQLITE_OK;
    base_vfs = sqlite3_vfs_find(0);
    if (!base_vfs) return SQLITE_ERROR;
    cs_io.iVersion = 3;
    cs_io.xClose = cs_close;
    cs_io.xRead = cs_read;
    cs_io.xWrite = cs_write;
    cs_io.xTruncate = cs_truncate;
    cs_io.xSync = cs_sync;
    cs_io.xFileSize = cs_file_size;
    cs_io.xLock = cs_lock;
    cs_io.xUnlock = cs_unlock;
    cs_io.xCheckReservedLock = cs_check_reserved;
    cs_io.xFileControl = cs_file_control;
    cs_io.xSectorSize = cs_sector_size;
    cs_io.xDeviceCharacteristics = cs_device;
    cs_io.xShmMap = cs_shm_map;
    cs_io.xShmLock = cs_shm_lock;
    cs_io.xShmBarrier = cs_shm_barrier;
    cs_io.xShmUnmap = cs_shm_unmap;
    cs_io.xFetch = cs_fetch;
    cs_io.xUnfetch = cs_unfetch;
    cs_vfs.iVersion = 2;
    cs_vfs.szOsFile = (int)sizeof(CsFile) + base_vfs->szOsFile;
    cs_vfs.mxPathname = base_vfs->mxPathname;
    cs_vfs.zName = "crashsim";
    cs_vfs.xOpen = cs_open;
    cs_vfs.xDelete = cs_delete;
    cs_vfs.xAccess = cs_access;
    cs_vfs.xFullPathname = cs_full_pathname;
    cs_vfs.xDlOpen = cs_dlopen;
    cs_vfs.xDlError = cs_dlerror;
    cs_vfs.xDlSym = cs_dlsym;
    cs_vfs.xDlClose = cs_dlclose;
    cs_vfs.xRandomness = cs_randomness;
    cs_vfs.xSleep = cs_sleep;
    cs_vfs.xCurrentTime = cs_current_time;
    cs_vfs.xGetLastError = cs_last_error;
    cs_vfs.xCurrentTimeInt64 = cs_current_time64;
    return sqlite3_vfs_register(&cs_vfs, make_default);
}

/* The power goes: nothing more of the files under prefix reaches the disk. */
int crashsim_freeze(const char *prefix) {
    size_t n = strlen(prefix);
    int count = 0;
    pthread_mutex_lock(&mu);
    for (Entry *e = entries; e; e = e->next) {
        if (strncmp(e->path, prefix, n) == 0) {
            __atomic_store_n(&e->frozen, 1, __ATOMIC_SEQ_CST);
            count++;
        }
    }
    pthread_mutex_unlock(&mu);
    return count;
}

/* After the frozen files were closed: each is rewritten as the power cut left it (or removed)
 * and forgotten. Returns how many files, -1 when one could not be rewritten, or -2 (changing
 * nothing) while a file under prefix is still open: a connection of the process that lost
 * power still runs, and would write to the rewritten file (a checkpoint, the WAL's delete at
 * its close) through an entry forgotten here. */
int crashsim_restore(const char *prefix) {
    size_t n = strlen(prefix);
    int count = 0, failed = 0;
    pthread_mutex_lock(&mu);
    for (Entry *e = entries; e; e = e->next) {
        if (strncmp(e->path, prefix, n) == 0 && e->open > 0) {
            pthread_mutex_unlock(&mu);
            return -2;
        }
    }
    Entry **link = &entries;
    while (*link) {
        Entry *e = *link;
        if (strncmp(e->path, prefix, n) != 0) {
            link = &e->next;
            continue;
        }
        if (e->durable_exists) {
            FILE *f = fopen(e->path, "wb");
            if (!f || (e->durable_len && fwrite(e->durable, 1, e->durable_len, f) != e->durable_len))
                failed = 1;
            if (f) fclose(f);
        } else {
            unlink(e->path);
        }
        *link = e->next;
        free(e->path);
        free(e->live_synced);
        free(e->durable);
        free(e);
        count++;
    }
    pthread_mutex_unlock(&mu);
    return failed ? -1 : count;
}

/* How many handles are open on the files under prefix. */
int crashsim_open_count(const char *prefix) {
    size_t n = strlen(prefix);
    int count = 0;
    pthread_mutex_lock(&mu);
    for (Entry *e = entries; e; e = e->next)
        if (strncmp(e->path, prefix, n) == 0) count += e->open;
    pthread_mutex_unlock(&mu);
    return count;
}
