/* What one subscription's consumers on a worker received, kept as deliveries arrive, so a
 * stats snapshot hands the accounting (loadgen.engine.accounting) ranges of ids instead of an id per
 * delivery to sort.
 *
 * Per producer (the id's high bits) a window of bits over its seqs says which were received:
 * the first delivery of a seq is new, a second one a duplicate, found here with its partition.
 * Bits set since the last take are the interval's new ids, handed over as [start, end) ranges.
 * The window keeps up with the producer by dropping its bottom words once every seq in them
 * was received (so [floor, base) is all received); deliveries further apart than it spans
 * (a consumer reading one partition far ahead of another) grow it up to a limit, beyond which
 * its bottom is dropped with its gaps. A seq below the window and the floor then cannot be told
 * new from duplicate here: its (id, partition) goes to the ledger, which checks it against
 * every range handed over so far, as it checks every delivery of the pure-Python engine. So
 * the counts are exact whatever the order; only the work moves.
 *
 * Consumers call this with the GIL held and no Python code run between a receipts_prepare and
 * its receipts_note, so a take() on another thread sees a delivery all or none.
 */
#ifndef LOADGEN_RECEIPTS_H
#define LOADGEN_RECEIPTS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_column.h"
#include "_idmap.h"

/* loadgen.engine.accounting: a message id is (producer number << SEQ_BITS) | seq. */
#define SEQ_BITS 40
#define SEQ_MASK ((INT64_C(1) << SEQ_BITS) - 1)
/* loadgen.engine.accounting.PARTITION_LIMIT: a partition is -1 (unknown) or below this, so that
 * partition + 1 fits in the seq bits of a (producer, partition) stream's key. */
#define PARTITION_LIMIT SEQ_MASK
/* loadgen.driver_api.NO_MESSAGE_ID: a delivery that carries no id. */
#define NO_MESSAGE_ID (-1)

#define WINDOW_FIRST_WORDS 64 /* 4,096 seqs */
#define WINDOW_MAX_WORDS 32768 /* 2,097,152 seqs; 512 KiB of bits per producer at most */

typedef struct {
    int64_t producer;
    int64_t base;  /* the seq of bit 0 of word 0, a multiple of 64 */
    int64_t floor; /* every seq in [floor, base) was received */
    int dropped;   /* whether the window ever moved up: below it then, bits were dropped */
    Py_ssize_t words;
    uint64_t *seen;
    uint64_t *fresh;                 /* seen since the last take */
    Py_ssize_t fresh_lo, fresh_hi;   /* the words that may hold fresh bits */
} Window;

typedef struct {
    PyObject_HEAD
    IdMap producers; /* producer number -> index into windows */
    Window *windows;
    Py_ssize_t window_count;
    Py_ssize_t window_cap;
    Py_ssize_t max_words;
    Column ranges;     /* [start, end) ids new since the last take */
    Column duplicates; /* the partition of each delivery of an id received before */
    Column late;       /* the partition of each delivery a consumer got out of order */
    Column unsure;     /* (id, partition) of deliveries below a window: the ledger checks them */
    long long unidentified;
} Receipts;

/* Added, not or-ed: the end of a range at the top of the seq space is the next producer's 0. */
static inline int64_t id_of(int64_t producer, int64_t seq) {
    return (int64_t)(((uint64_t)producer << SEQ_BITS) + (uint64_t)seq);
}

/* Hand over [start, end), joined to the last range when it ends at start. */
static int receipts_emit(Receipts *receipts, int64_t start, int64_t end) {
    Column *ranges = &receipts->ranges;
    if (ranges->len >= 2 && ranges->data[ranges->len - 1] == start) {
        ranges->data[ranges->len - 1] = end;
        return 0;
    }
    if (column_reserve(ranges, 2) < 0) {
        return -1;
    }
    column_store(ranges, start);
    column_store(ranges, end);
    return 0;
}

/* Hand over word i's fresh bits as ranges and clear them. A failure leaves some handed over
 * and the word as it was: handing a range over twice changes no set, so that is harmless. */
static int window_emit_word(Receipts *receipts, Window *window, Py_ssize_t i) {
    uint64_t bits = window->fresh[i];
    int64_t first = window->base + 64 * (int64_t)i;
    while (bits) {
        int low = __builtin_ctzll(bits);
        uint64_t above = ~(bits >> low);
        int run = above ? __builtin_ctzll(above) : 64;
        if (receipts_emit(receipts, id_of(window->producer, first + low),
                          id_of(window->producer, first + low + run)) < 0) {
            return -1;
        }
        bits = low + run >= 64 ? 0 : bits & (~UINT64_C(0) << (low + run));
    }
    window->fresh[i] = 0;
    return 0;
}

/* Hand over the fresh bits of words [from, to) that may hold any. */
static int window_emit_words(Receipts *receipts, Window *window, Py_ssize_t from, Py_ssize_t to) {
    from = from > window->fresh_lo ? from : window->fresh_lo;
    to = to < window->fresh_hi ? to : window->fresh_hi;
    for (Py_ssize_t i = from; i < to; i++) {
        if (window->fresh[i] && window_emit_word(receipts, window, i) < 0) {
            return -1;
        }
    }
    return 0;
}

static int window_emit(Receipts *receipts, Window *window) {
    if (window_emit_words(receipts, window, 0, window->words) < 0) {
        return -1;
    }
    window->fresh_lo = window->fresh_hi = 0;
    return 0;
}

/* How many bottom words hold every seq at or above the floor. */
static Py_ssize_t window_settled(const Window *window) {
    Py_ssize_t k = 0;
    for (; k < window->words; k++) {
        int64_t below_floor = window->floor - (window->base + 64 * (int64_t)k);
        uint64_t needed = below_floor <= 0    ? ~UINT64_C(0)
                          : below_floor >= 64 ? 0
                                              : ~UINT64_C(0) << below_floor;
        if ((window->seen[k] & needed) != needed) {
            break;
        }
    }
    return k;
}

/* Move the window up by `drop` words, handing over the fresh bits of those it leaves. */
static int window_drop(Receipts *receipts, Window *window, Py_ssize_t drop) {
    Py_ssize_t gone = drop < window->words ? drop : window->words;
    if (window_emit_words(receipts, window, 0, gone) < 0) {
        return -1;
    }
    size_t kept = (size_t)(window->words - gone) * sizeof(uint64_t);
    memmove(window->seen, window->seen + gone, kept);
    memmove(window->fresh, window->fresh + gone, kept);
    memset(window->seen + window->words - gone, 0, (size_t)gone * sizeof(uint64_t));
    memset(window->fresh + window->words - gone, 0, (size_t)gone * sizeof(uint64_t));
    window->base += 64 * (int64_t)drop;
    window->dropped |= drop > 0;
    window->fresh_lo = window->fresh_lo > gone ? window->fresh_lo - gone : 0;
    window->fresh_hi = window->fresh_hi > gone ? window->fresh_hi - gone : 0;
    return 0;
}

static int window_grow(Window *window, Py_ssize_t words) {
    size_t size = (size_t)words * sizeof(uint64_t);
    size_t old = (size_t)window->words * sizeof(uint64_t);
    uint64_t *seen = PyMem_Realloc(window->seen, size);
    if (seen == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    window->seen = seen;
    uint64_t *fresh = PyMem_Realloc(window->fresh, size);
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    window->fresh = fresh;
    memset((char *)seen + old, 0, size - old);
    memset((char *)fresh + old, 0, size - old);
    window->words = words;
    return 0;
}

/* Make the window reach seq (at or above its base): drop the settled bottom words, else grow,
 * else drop what it must, gaps and all (the floor then starts at the new base). */
static int window_fit(Receipts *receipts, Window *window, int64_t seq) {
    Py_ssize_t at = (Py_ssize_t)((seq - window->base) >> 6);
    if (at < window->words) {
        return 0;
    }
    Py_ssize_t settled = window_settled(window);
    Py_ssize_t words = window->words;
    while (at - settled >= words && words < receipts->max_words) {
        words *= 2;
    }
    words = words < receipts->max_words ? words : receipts->max_words;
    if (words > window->words && window_grow(window, words) < 0) {
        return -1;
    }
    if (at - settled < window->words) {
        return window_drop(receipts, window, settled);
    }
    if (window_drop(receipts, window, at - window->words + 1) < 0) {
        return -1;
    }
    window->floor = window->base;
    return 0;
}

/* Where the window may start below `seq`: it leaves room for other partitions lagging. */
static inline int64_t window_base_below(const Receipts *receipts, int64_t seq) {
    Py_ssize_t first = WINDOW_FIRST_WORDS < receipts->max_words ? WINDOW_FIRST_WORDS
                                                                : receipts->max_words;
    int64_t base = (seq & ~INT64_C(63)) - 64 * (int64_t)(first / 2);
    return base > 0 ? base : 0;
}

/* Move a window that never moved up down to reach seq (a partition lagging the first
 * delivery), growing it if it must; one that cannot leaves seq below it, to the ledger. */
static int window_lower(Receipts *receipts, Window *window, int64_t seq) {
    int64_t base = window_base_below(receipts, seq);
    Py_ssize_t shift = (Py_ssize_t)((window->base - base) >> 6);
    Py_ssize_t used = window->words;
    while (used > 0 && window->seen[used - 1] == 0) {
        used--;
    }
    if (used + shift > receipts->max_words) {
        return 0;
    }
    Py_ssize_t words = window->words;
    while (words < used + shift) {
        words *= 2;
    }
    words = words < receipts->max_words ? words : receipts->max_words;
    if (words > window->words && window_grow(window, words) < 0) {
        return -1;
    }
    memmove(window->seen + shift, window->seen, (size_t)used * sizeof(uint64_t));
    memmove(window->fresh + shift, window->fresh, (size_t)used * sizeof(uint64_t));
    memset(window->seen, 0, (size_t)shift * sizeof(uint64_t));
    memset(window->fresh, 0, (size_t)shift * sizeof(uint64_t));
    window->base = base;
    if (window->fresh_lo < window->fresh_hi) {
        window->fresh_lo += shift;
        window->fresh_hi += shift;
    }
    return 0;
}

static int receipts_new_window(Receipts *receipts, int64_t producer, int64_t seq) {
    if (idmap_reserve(&receipts->producers) < 0) {
        return -1;
    }
    if (receipts->window_count == receipts->window_cap) {
        Py_ssize_t cap = receipts->window_cap ? receipts->window_cap * 2 : 8;
        Window *grown = PyMem_Realloc(receipts->windows, (size_t)cap * sizeof(Window));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        receipts->windows = grown;
        receipts->window_cap = cap;
    }
    Window window = {
        .producer = producer, .base = window_base_below(receipts, seq), .floor = seq};
    if (window_grow(&window, WINDOW_FIRST_WORDS < receipts->max_words ? WINDOW_FIRST_WORDS
                                                                     : receipts->max_words) < 0) {
        PyMem_Free(window.seen);
        PyMem_Free(window.fresh);
        return -1;
    }
    receipts->windows[receipts->window_count] = window;
    idmap_insert(&receipts->producers, producer, receipts->window_count++);
    return 0;
}

/* Everything receipts_note(message_id, ...) and a late partition will store, made room for
 * first; *window is where receipts_note notes it (valid until the receipts change). -1 with
 * an error set. */
static int receipts_prepare(Receipts *receipts, int64_t message_id, Window **window) {
    int64_t producer = message_id >> SEQ_BITS, seq = message_id & SEQ_MASK;
    if (column_reserve(&receipts->duplicates, 1) < 0 || column_reserve(&receipts->late, 1) < 0 ||
        column_reserve(&receipts->unsure, 2) < 0) {
        return -1;
    }
    int64_t *index = idmap_find(&receipts->producers, producer);
    if (index == NULL) {
        if (receipts_new_window(receipts, producer, seq) < 0) {
            return -1;
        }
        *window = &receipts->windows[receipts->window_count - 1];
        return 0;
    }
    *window = &receipts->windows[*index];
    if (seq >= (*window)->base) {
        return window_fit(receipts, *window, seq);
    }
    return (*window)->dropped ? 0 : window_lower(receipts, *window, seq);
}

/* A delivery of message_id (not NO_MESSAGE_ID) to the window receipts_prepare gave: new, a
 * duplicate, or one for the ledger to tell. */
static void receipts_note(Receipts *receipts, Window *window, int64_t message_id,
                          int64_t partition) {
    int64_t seq = message_id & SEQ_MASK;
    if (seq < window->base) {
        if (seq >= window->floor) {
            column_store(&receipts->duplicates, partition);
        } else {
            column_store(&receipts->unsure, message_id);
            column_store(&receipts->unsure, partition);
        }
        return;
    }
    Py_ssize_t word = (Py_ssize_t)((seq - window->base) >> 6);
    uint64_t bit = UINT64_C(1) << ((seq - window->base) & 63);
    if (window->seen[word] & bit) {
        column_store(&receipts->duplicates, partition);
        return;
    }
    window->seen[word] |= bit;
    window->fresh[word] |= bit;
    if (!window->dropped && seq < window->floor) {
        window->floor = seq; /* below it nothing was received yet */
    }
    if (window->fresh_lo >= window->fresh_hi) {
        window->fresh_lo = word;
        window->fresh_hi = word + 1;
    } else if (word < window->fresh_lo) {
        window->fresh_lo = word;
    } else if (word >= window->fresh_hi) {
        window->fresh_hi = word + 1;
    }
}

static void receipts_forget(Receipts *receipts) {
    for (Py_ssize_t i = 0; i < receipts->window_count; i++) {
        PyMem_Free(receipts->windows[i].seen);
        PyMem_Free(receipts->windows[i].fresh);
    }
    PyMem_Free(receipts->windows);
    receipts->windows = NULL;
    receipts->window_count = receipts->window_cap = 0;
    idmap_free(&receipts->producers);
    column_reset(&receipts->ranges);
    column_reset(&receipts->duplicates);
    column_reset(&receipts->late);
    column_reset(&receipts->unsure);
    receipts->unidentified = 0;
}

static void receipts_dealloc(Receipts *self) {
    receipts_forget(self);
    PyMem_Free(self->ranges.data);
    PyMem_Free(self->duplicates.data);
    PyMem_Free(self->late.data);
    PyMem_Free(self->unsure.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Receipts(max_words=32768): a window spans at most max_words * 64 seqs. Set in tp_new, so no
 * entry point ever sees receipts without their limit. */
static PyObject *receipts_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"max_words", NULL};
    Py_ssize_t max_words = WINDOW_MAX_WORDS;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|n:Receipts", keywords, &max_words)) {
        return NULL;
    }
    if (max_words < 1) {
        PyErr_SetString(PyExc_ValueError, "max_words must be at least 1");
        return NULL;
    }
    Receipts *self = (Receipts *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->max_words = max_words;
    }
    return (PyObject *)self;
}

/* take() -> (ranges, duplicates, late, unsure, unidentified) since the last take: flat int64
 * bytes of [start, end) ranges, partitions, partitions, (id, partition) pairs; all or nothing. */
static PyObject *receipts_take(Receipts *self, PyObject *unused) {
    for (Py_ssize_t i = 0; i < self->window_count; i++) {
        if (window_emit(self, &self->windows[i]) < 0) {
            return NULL;
        }
    }
    Column *columns[] = {&self->ranges, &self->duplicates, &self->late, &self->unsure};
    PyObject *taken = PyTuple_New(5);
    if (taken == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 4; i++) {
        PyObject *values = column_copy(columns[i]);
        if (values == NULL) {
            Py_DECREF(taken);
            return NULL;
        }
        PyTuple_SET_ITEM(taken, i, values);
    }
    PyObject *unidentified = PyLong_FromLongLong(self->unidentified);
    if (unidentified == NULL) {
        Py_DECREF(taken);
        return NULL;
    }
    PyTuple_SET_ITEM(taken, 4, unidentified);
    for (Py_ssize_t i = 0; i < 4; i++) {
        column_reset(columns[i]);
    }
    self->unidentified = 0;
    return taken;
}

/* forget(): as if nothing had been received (the readiness probe's deliveries are not the
 * run's). */
static PyObject *receipts_forget_all(Receipts *self, PyObject *unused) {
    receipts_forget(self);
    Py_RETURN_NONE;
}

static PyObject *receipts_window_words(Receipts *self, void *unused) {
    Py_ssize_t words = 0;
    for (Py_ssize_t i = 0; i < self->window_count; i++) {
        words += self->windows[i].words;
    }
    return PyLong_FromSsize_t(words);
}

static PyMethodDef receipts_methods[] = {
    {"take", (PyCFunction)receipts_take, METH_NOARGS,
     "(ranges, duplicates, late, unsure, unidentified) since the last take."},
    {"forget", (PyCFunction)receipts_forget_all, METH_NOARGS,
     "Forget every delivery so far, as if none had come."},
    {NULL},
};

static PyGetSetDef receipts_getset[] = {
    {"window_words", (getter)receipts_window_words, NULL,
     "The 64-seq words the windows span together (each costs 16 bytes).", NULL},
    {NULL},
};

static PyTypeObject ReceiptsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen.engine._hotpath.Receipts",
    .tp_doc = "Receipts(max_words=32768): what one subscription's consumers received, kept as "
              "they receive it (ConsumerCore(layout, receipts)).",
    .tp_basicsize = sizeof(Receipts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = receipts_new,
    .tp_dealloc = (destructor)receipts_dealloc,
    .tp_methods = receipts_methods,
    .tp_getset = receipts_getset,
};

#endif
