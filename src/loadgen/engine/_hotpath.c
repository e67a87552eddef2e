/* The recorders' per-message work in C: loadgen.engine.recorder's compiled engine.
 *
 * Each latency is counted into an HdrHistogram as it is measured (the bucket arithmetic of
 * loadgen.base.hdr_core, in microseconds), so an interval's snapshot is a copy of the non-empty
 * buckets, not the binning of every raw value. What the accounting needs per message (the ids
 * acknowledged; each delivery's id and partition) stays in int64 columns the engine owns.
 *
 * Every entry point runs with the GIL held and calls no Python code while it records, so a
 * take() on another thread sees each message's values all or none: a message's counts, id and
 * negative counts land in the same take. Everything a call stores is checked and allocated
 * first, so a call that fails stores nothing.
 *
 * Clocks: CLOCK_MONOTONIC is what time.perf_counter_ns() reads on Linux (the producer loop's
 * send times come from it), CLOCK_REALTIME what time.time_ns() reads (the stamp's send times).
 * setup.py builds this file only where Python reports those two clocks, and
 * tests/unit/test_recorder.py checks both against Python's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_clock.h"
#include "_column.h"
#include "_receipts.h"

static int difference(int64_t a, int64_t b, int64_t *out) {
    if (__builtin_sub_overflow(a, b, out)) {
        PyErr_SetString(PyExc_OverflowError, "latency does not fit in 64 bits");
        return -1;
    }
    return 0;
}

/* ---- histograms recorded as messages come ---------------------------------------------- */

/* HdrHistogram's bucket layout for one value range (loadgen.base.hdr_core.Layout), in microseconds.
 * The counts array is split into pages allocated on first use: an interval's latencies touch a
 * few pages of the 2.5 million counts (20 MB) an end-to-end histogram spans. */
#define PAGE_SHIFT 10
#define PAGE_SIZE (1 << PAGE_SHIFT)

typedef struct {
    int64_t highest;
    int64_t unit_magnitude;
    int64_t half_magnitude;
    int64_t half_count;
    int64_t mask;
    Py_ssize_t counts_len;
} Layout;

typedef struct {
    Layout layout;
    int64_t **pages;
    Py_ssize_t page_count;
} Histogram;

/* HdrHistogram's geometry for lowest 1 << unit_magnitude, `highest` and a sub-bucket half count
 * of 1 << half_magnitude, as loadgen.base.hdr_core.layout computes it: a layout is accepted only
 * if it is this, so counts_index stays below counts_len and the mask is never 0. */
static Layout layout_of(int64_t highest, int64_t unit_magnitude, int64_t half_magnitude) {
    int64_t half_count = INT64_C(1) << half_magnitude;
    uint64_t smallest_untrackable = (uint64_t)(2 * half_count) << unit_magnitude;
    int64_t buckets = 1;
    while (smallest_untrackable <= (uint64_t)highest) {
        smallest_untrackable <<= 1;
        buckets++;
    }
    int64_t mask = (2 * half_count - 1) << unit_magnitude;
    return (Layout){highest, unit_magnitude, half_magnitude, half_count, mask,
                    (Py_ssize_t)((buckets + 1) * half_count)};
}

static int layout_from(PyObject *tuple, Layout *out) {
    long long values[6];
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 6) {
        PyErr_SetString(PyExc_TypeError, "a layout is a tuple of 6 ints: highest, "
                                         "unit_magnitude, half_magnitude, half_count, mask, "
                                         "counts_len");
        return -1;
    }
    for (Py_ssize_t i = 0; i < 6; i++) {
        values[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
        if (values[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    if (values[0] < 1 || values[2] < 1 || values[2] > 40 || values[1] < 0 || values[1] > 20) {
        PyErr_SetString(PyExc_ValueError, "not an HdrHistogram layout");
        return -1;
    }
    *out = layout_of(values[0], values[1], values[2]);
    if (out->half_count != values[3] || out->mask != values[4] || out->counts_len != values[5]) {
        PyErr_SetString(PyExc_ValueError, "an inconsistent HdrHistogram layout: half_count, mask "
                                          "or counts_len is not what the magnitudes give");
        return -1;
    }
    return 0;
}

static int histogram_init(Histogram *histogram, const Layout *layout) {
    histogram->layout = *layout;
    histogram->page_count = (layout->counts_len + PAGE_SIZE - 1) >> PAGE_SHIFT;
    histogram->pages = PyMem_Calloc((size_t)histogram->page_count, sizeof(int64_t *));
    if (histogram->pages == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void histogram_free(Histogram *histogram) {
    for (Py_ssize_t page = 0; histogram->pages != NULL && page < histogram->page_count; page++) {
        PyMem_Free(histogram->pages[page]);
    }
    PyMem_Free(histogram->pages);
    histogram->pages = NULL;
}

/* HdrHistogram's countsArrayIndex of a latency in nanoseconds (>= 0), as microseconds clamped
 * to the highest trackable value, as loadgen.base.hdr.record_ns bins it. */
static Py_ssize_t counts_index(const Layout *layout, int64_t latency_ns) {
    int64_t micros = latency_ns / 1000;
    if (micros > layout->highest) {
        micros = layout->highest;
    }
    int bit_length = 64 - __builtin_clzll((unsigned long long)(micros | layout->mask));
    int64_t shift = bit_length - layout->half_magnitude - 1; /* bucket + unit magnitude */
    int64_t sub_bucket = micros >> shift;
    int64_t bucket_base = (shift - layout->unit_magnitude + 1) << layout->half_magnitude;
    return (Py_ssize_t)(sub_bucket + bucket_base - layout->half_count);
}

/* The page holding `index`, allocated (zeroed) if it is not yet. */
static int histogram_reserve(Histogram *histogram, Py_ssize_t index) {
    int64_t **page = &histogram->pages[index >> PAGE_SHIFT];
    if (*page == NULL) {
        *page = PyMem_Calloc(PAGE_SIZE, sizeof(int64_t));
        if (*page == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* Count one value at `index`, whose page histogram_reserve made sure of. */
static inline void histogram_count(Histogram *histogram, Py_ssize_t index) {
    histogram->pages[index >> PAGE_SHIFT][index & (PAGE_SIZE - 1)]++;
}

static Py_ssize_t histogram_buckets(const Histogram *histogram) {
    Py_ssize_t buckets = 0;
    for (Py_ssize_t page = 0; page < histogram->page_count; page++) {
        const int64_t *counts = histogram->pages[page];
        for (Py_ssize_t i = 0; counts != NULL && i < PAGE_SIZE; i++) {
            buckets += counts[i] != 0;
        }
    }
    return buckets;
}

/* The non-empty buckets as two bytes objects of int64, (index, counts) in index order; NULL
 * with an error set if they cannot be allocated. The histogram is left as it is. */
static PyObject *histogram_copy(const Histogram *histogram) {
    Py_ssize_t buckets = histogram_buckets(histogram);
    Py_ssize_t size = buckets * (Py_ssize_t)sizeof(int64_t);
    PyObject *index = PyBytes_FromStringAndSize(NULL, size);
    PyObject *counts = PyBytes_FromStringAndSize(NULL, size);
    PyObject *pair = index && counts ? PyTuple_Pack(2, index, counts) : NULL;
    Py_XDECREF(index);
    Py_XDECREF(counts);
    if (pair == NULL) {
        return NULL;
    }
    int64_t *to_index = (int64_t *)PyBytes_AS_STRING(index);
    int64_t *to_counts = (int64_t *)PyBytes_AS_STRING(counts);
    for (Py_ssize_t page = 0; page < histogram->page_count; page++) {
        const int64_t *from = histogram->pages[page];
        for (Py_ssize_t i = 0; from != NULL && i < PAGE_SIZE; i++) {
            if (from[i] != 0) {
                *to_index++ = ((int64_t)page << PAGE_SHIFT) + i;
                *to_counts++ = from[i];
            }
        }
    }
    return pair;
}

/* A tuple of `size` items whose first three are copies (histogram_copy) of `histograms`; the
 * rest for the caller to fill. NULL with an error set if anything could not be allocated. */
static PyObject *histograms_taken(Histogram *histograms[3], Py_ssize_t size) {
    PyObject *taken = PyTuple_New(size);
    for (Py_ssize_t i = 0; taken != NULL && i < 3; i++) {
        PyObject *pair = histogram_copy(histograms[i]);
        if (pair == NULL) {
            Py_CLEAR(taken);
        } else {
            PyTuple_SET_ITEM(taken, i, pair);
        }
    }
    return taken;
}

/* Empty the histogram, giving its pages back. Allocates nothing, so it cannot fail. */
static void histogram_reset(Histogram *histogram) {
    for (Py_ssize_t page = 0; page < histogram->page_count; page++) {
        PyMem_Free(histogram->pages[page]);
        histogram->pages[page] = NULL;
    }
}

/* ---- the producer's engine ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Histogram publish;
    Histogram delay;
    Histogram from_intended;
    Column acked; /* runs of consecutive acknowledged ids: (first id, count) pairs */
    Py_ssize_t acked_count;
    long long errors;
} ProducerCore;

/* Whether `message_id` continues the last run of `runs` ((first id, count) pairs). */
static int continues_run(const Column *runs, int64_t message_id) {
    if (runs->len == 0) {
        return 0;
    }
    const int64_t *last = &runs->data[runs->len - 2];
    return last[0] <= INT64_MAX - last[1] && last[0] + last[1] == message_id;
}

/* Room for `message_id` in the runs of acknowledged ids: in order, acknowledgements extend the
 * last run, so a producer's interval is a few pairs, not an id per message. */
static int acked_reserve(Column *runs, int64_t message_id) {
    return continues_run(runs, message_id) ? 0 : column_reserve(runs, 2);
}

static void acked_store(Column *runs, int64_t message_id) {
    if (continues_run(runs, message_id)) {
        runs->data[runs->len - 1]++;
    } else {
        column_store(runs, message_id);
        column_store(runs, 1);
    }
}

static int nonnegative(int64_t latency, const char *what) {
    if (latency < 0) {
        PyErr_Format(PyExc_ValueError, "%s is negative: %lld ns", what, (long long)latency);
        return -1;
    }
    return 0;
}

/* Where an acknowledgement's latencies are counted (their pages reserved). */
typedef struct {
    Py_ssize_t publish;
    Py_ssize_t from_intended;
} AckSlots;

/* An acknowledgement received now, checked and made room for: nothing is stored. */
static int producer_ack_prepare(ProducerCore *core, int64_t message_id, int64_t intended_ns,
                                int64_t sent_ns, AckSlots *at) {
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    int64_t latency, corrected;
    if (difference(now, sent_ns, &latency) < 0 || difference(now, intended_ns, &corrected) < 0 ||
        nonnegative(latency, "publish latency") < 0 ||
        nonnegative(corrected, "publish latency from the intended time") < 0) {
        return -1;
    }
    at->publish = counts_index(&core->publish.layout, latency);
    at->from_intended = counts_index(&core->from_intended.layout, corrected);
    if (histogram_reserve(&core->publish, at->publish) < 0 ||
        histogram_reserve(&core->from_intended, at->from_intended) < 0 ||
        acked_reserve(&core->acked, message_id) < 0) {
        return -1;
    }
    return 0;
}

/* Store what producer_ack_prepare made room for; cannot fail. */
static void producer_ack_store(ProducerCore *core, int64_t message_id, const AckSlots *at) {
    histogram_count(&core->publish, at->publish);
    histogram_count(&core->from_intended, at->from_intended);
    acked_store(&core->acked, message_id);
    core->acked_count++;
}

static int producer_ack(ProducerCore *core, int64_t message_id, int64_t intended_ns,
                        int64_t sent_ns, PyObject *error) {
    if (error != NULL && error != Py_None) {
        core->errors++;
        return 0;
    }
    AckSlots at;
    if (producer_ack_prepare(core, message_id, intended_ns, sent_ns, &at) < 0) {
        return -1;
    }
    producer_ack_store(core, message_id, &at);
    return 0;
}
typedef struct {
    PyObject_HEAD
    ProducerCore *core;
    int64_t message_id;
    int64_t intended_ns;
    int64_t sent_ns;
} Ack;

static PyTypeObject AckType;

static void ack_dealloc(Ack *self) {
    Py_XDECREF(self->core);
    PyObject_Free(self);
}

/* The parameters of on_done(message_id, intended_ns, sent_ns, error, *client_args), the
 * pure-Python engine's signature; an Ack is on_done with the first three bound. */
static const char *const ON_DONE_PARAMETERS[] = {"message_id", "intended_ns", "sent_ns", "error"};
#define ON_DONE_ARITY 4

/* Fill `values` from a call's positional `args` and keyword `kwargs` the way Python binds them
 * to on_done's signature when the first `bound` parameters are already given: TypeError for an
 * unknown keyword, a parameter given twice or one missing; positional arguments past `error` are
 * the client's own and ignored. */
static int on_done_arguments(PyObject *args, PyObject *kwargs, Py_ssize_t bound,
                             PyObject *values[ON_DONE_ARITY]) {
    Py_ssize_t positional = bound + PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = bound; i < ON_DONE_ARITY; i++) {
        values[i] = i < positional ? PyTuple_GET_ITEM(args, i - bound) : NULL;
    }
    Py_ssize_t next = 0;
    PyObject *key, *value;
    while (kwargs != NULL && PyDict_Next(kwargs, &next, &key, &value)) {
        Py_ssize_t i = 0;
        while (i < ON_DONE_ARITY &&
               !(PyUnicode_Check(key) &&
                 PyUnicode_CompareWithASCIIString(key, ON_DONE_PARAMETERS[i]) == 0)) {
            i++;
        }
        if (i == ON_DONE_ARITY) {
            PyErr_Format(PyExc_TypeError, "on_done() got an unexpected keyword argument '%S'", key);
            return -1;
        }
        if (i < positional) {
            PyErr_Format(PyExc_TypeError, "on_done() got multiple values for argument '%s'",
                         ON_DONE_PARAMETERS[i]);
            return -1;
        }
        values[i] = value;
    }
    for (Py_ssize_t i = bound; i < ON_DONE_ARITY; i++) {
        if (values[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "on_done() missing required argument '%s'",
                         ON_DONE_PARAMETERS[i]);
            return -1;
        }
    }
    return 0;
}

/* ack(error, *client_args): what a driver calls once per message; `error` may be passed by
 * keyword, as to the pure-Python engine's acknowledgement. */
static PyObject *ack_call(Ack *self, PyObject *args, PyObject *kwargs) {
    PyObject *error;
    if (kwargs == NULL && PyTuple_GET_SIZE(args) > 0) {
        error = PyTuple_GET_ITEM(args, 0);
    } else {
        PyObject *values[ON_DONE_ARITY];
        if (on_done_arguments(args, kwargs, 3, values) < 0) {
            return NULL;
        }
        error = values[3];
    }
    if (producer_ack(self->core, self->message_id, self->intended_ns, self->sent_ns, error) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyTypeObject AckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen.engine._hotpath.Ack",
    .tp_doc = "One message's acknowledgement: ack(error, *client_args), error None when "
              "acknowledged.",
    .tp_basicsize = sizeof(Ack),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)ack_dealloc,
    .tp_call = (ternaryfunc)ack_call,
};

static void producer_dealloc(ProducerCore *self) {
    histogram_free(&self->publish);
    histogram_free(&self->delay);
    histogram_free(&self->from_intended);
    PyMem_Free(self->acked.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ProducerCore(layout): the publish metrics' layout (loadgen.base.hdr_core.Layout's fields).
 * Built whole in tp_new, so no entry point ever sees a core without its histograms. */
static PyObject *producer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"layout", NULL};
    PyObject *given;
    Layout layout;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:ProducerCore", names, &given) ||
        layout_from(given, &layout) < 0) {
        return NULL;
    }
    ProducerCore *self = (ProducerCore *)type->tp_alloc(type, 0);
    if (self != NULL && (histogram_init(&self->publish, &layout) < 0 ||
                         histogram_init(&self->delay, &layout) < 0 ||
                         histogram_init(&self->from_intended, &layout) < 0)) {
        Py_CLEAR(self);
    }
    return (PyObject *)self;
}

/* The publish delay (sent - intended) checked and its page reserved: *at is where it counts. */
static int producer_sent_prepare(ProducerCore *core, int64_t intended_ns, int64_t sent_ns,
                                 Py_ssize_t *at) {
    int64_t delay;
    if (difference(sent_ns, intended_ns, &delay) < 0 || nonnegative(delay, "publish delay") < 0) {
        return -1;
    }
    *at = counts_index(&core->delay.layout, delay);
    return histogram_reserve(&core->delay, *at);
}

static PyObject *bind_values(PyObject *core, int64_t message_id, int64_t intended_ns,
                             int64_t sent_ns) {
    ProducerCore *producer = (ProducerCore *)core;
    Py_ssize_t at;
    if (producer_sent_prepare(producer, intended_ns, sent_ns, &at) < 0) {
        return NULL;
    }
    Ack *ack = PyObject_New(Ack, &AckType);
    if (ack == NULL) {
        return NULL;
    }
    histogram_count(&producer->delay, at);
    ack->core = (ProducerCore *)Py_NewRef(core);
    ack->message_id = message_id;
    ack->intended_ns = intended_ns;
    ack->sent_ns = sent_ns;
    return (PyObject *)ack;
}

static int sent_and_acked(PyObject *core, int64_t message_id, int64_t intended_ns,
                          int64_t sent_ns) {
    ProducerCore *producer = (ProducerCore *)core;
    Py_ssize_t delay_at;
    AckSlots at;
    if (producer_sent_prepare(producer, intended_ns, sent_ns, &delay_at) < 0 ||
        producer_ack_prepare(producer, message_id, intended_ns, sent_ns, &at) < 0) {
        return -1;
    }
    histogram_count(&producer->delay, delay_at);
    producer_ack_store(producer, message_id, &at);
    return 0;
}

/* bind(message_id, intended_ns, sent_ns) -> Ack; records the publish delay (sent - intended). */
static PyObject *producer_bind(ProducerCore *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bind(message_id, intended_ns, sent_ns)");
        return NULL;
    }
    int64_t message_id, intended_ns, sent_ns;
    if (as_int64(args[0], &message_id) < 0 || as_int64(args[1], &intended_ns) < 0 ||
        as_int64(args[2], &sent_ns) < 0) {
        return NULL;
    }
    return bind_values((PyObject *)self, message_id, intended_ns, sent_ns);
}

static PyTypeObject ProducerCoreType;

static PyObject *core_of(PyObject *bind) {
    if (PyCFunction_Check(bind) &&
        PyCFunction_GET_FUNCTION(bind) == (PyCFunction)(void (*)(void))producer_bind) {
        PyObject *owner = PyCFunction_GET_SELF(bind);
        if (owner != NULL && PyObject_TypeCheck(owner, &ProducerCoreType)) {
            return owner;
        }
    }
    return NULL;
}

/* on_done(message_id, intended_ns, sent_ns, error, *client_args): the unbound form. */
static PyObject *producer_on_done(ProducerCore *self, PyObject *args, PyObject *kwargs) {
    PyObject *values[ON_DONE_ARITY];
    if (on_done_arguments(args, kwargs, 0, values) < 0) {
        return NULL;
    }
    int64_t message_id, intended_ns, sent_ns;
    if (as_int64(values[0], &message_id) < 0 || as_int64(values[1], &intended_ns) < 0 ||
        as_int64(values[2], &sent_ns) < 0) {
        return NULL;
    }
    if (producer_ack(self, message_id, intended_ns, sent_ns, values[3]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* take() -> ((index, counts) of publish, of publish_delay, of publish_from_intended, acked runs),
 * all bytes of int64. Everything is allocated before anything is emptied, so a failure leaves
 * the core as it was. */
static PyObject *producer_take(ProducerCore *self, PyObject *unused) {
    Histogram *histograms[] = {&self->publish, &self->delay, &self->from_intended};
    PyObject *taken = histograms_taken(histograms, 4);
    if (taken == NULL) {
        return NULL;
    }
    PyObject *acked = column_copy(&self->acked);
    if (acked == NULL) {
        Py_DECREF(taken);
        return NULL;
    }
    PyTuple_SET_ITEM(taken, 3, acked);
    for (Py_ssize_t i = 0; i < 3; i++) {
        histogram_reset(histograms[i]);
    }
    column_reset(&self->acked);
    self->acked_count = 0;
    return taken;
}

static PyObject *producer_acked_count(ProducerCore *self, void *unused) {
    return PyLong_FromSsize_t(self->acked_count);
}

static PyMethodDef producer_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))producer_bind, METH_FASTCALL,
     "bind(message_id, intended_ns, sent_ns): the message's acknowledgement callable."},
    {"on_done", (PyCFunction)(void (*)(void))producer_on_done, METH_VARARGS | METH_KEYWORDS,
     "on_done(message_id, intended_ns, sent_ns, error, *client_args)."},
    {"take", (PyCFunction)producer_take, METH_NOARGS,
     "The three publish histograms and the acknowledged ids since the last take."},
    {NULL},
};

static PyGetSetDef producer_getset[] = {
    {"acked_count", (getter)producer_acked_count, NULL, "Acknowledgements not taken yet.", NULL},
    {NULL},
};

static PyMemberDef producer_members[] = {
    {"errors", T_LONGLONG, offsetof(ProducerCore, errors), READONLY, "Failed sends so far."},
    {NULL},
};

static PyTypeObject ProducerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen.engine._hotpath.ProducerCore",
    .tp_doc = "ProducerCore(layout): the producer recorder's histograms and per-message entry "
              "points.",
    .tp_basicsize = sizeof(ProducerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = producer_new,
    .tp_dealloc = (destructor)producer_dealloc,
    .tp_methods = producer_methods,
    .tp_getset = producer_getset,
    .tp_members = producer_members,
};

/* ---- the consumer's engine ------------------------------------------------------------- */

/* A latency below this is a message without a send time (loadgen.driver_api.NO_SEND_TIME_NS): it
 * is counted received, in no histogram, and not as clock skew. */
#define UNSTAMPED_BELOW (-(INT64_C(1) << 62))

typedef struct {
    PyObject_HEAD
    Histogram e2e;
    Histogram from_intended;
    Histogram uncorrected;
    Column identities; /* (message id, partition) per delivery, in arrival order, when the
                          accounting is not kept here (no receipts) */
    Receipts *receipts; /* the subscription's, shared with its other consumers; or NULL */
    IdMap highest;      /* stream (producer, partition + 1) -> the highest seq delivered */
    long long received; /* deliveries since the last take */
    int64_t *shifts;   /* per producer number: ns to subtract (this worker's clock offset
                          minus that producer's worker's); NULL while clocks are not corrected */
    Py_ssize_t shift_count;
    long long negative;
    long long negative_uncorrected;
    long long bytes_total;
    long long foreign; /* stamped payloads whose times give no 64-bit latency: not recorded */
} ConsumerCore;

static void consumer_dealloc(ConsumerCore *self) {
    histogram_free(&self->e2e);
    histogram_free(&self->from_intended);
    histogram_free(&self->uncorrected);
    PyMem_Free(self->identities.data);
    PyMem_Free(self->shifts);
    Py_XDECREF(self->receipts);
    idmap_free(&self->highest);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ConsumerCore(layout, receipts=None): the end-to-end metrics' layout; the subscription's
 * Receipts to keep the accounting in as deliveries come, else each delivery's identity is
 * handed over. Built whole in tp_new, so no entry point ever sees a core without its
 * histograms. */
static PyObject *consumer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"layout", "receipts", NULL};
    PyObject *given, *receipts = Py_None;
    Layout layout;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:ConsumerCore", names, &given,
                                     &receipts) ||
        layout_from(given, &layout) < 0) {
        return NULL;
    }
    if (receipts != Py_None && !PyObject_TypeCheck(receipts, &ReceiptsType)) {
        PyErr_SetString(PyExc_TypeError, "ConsumerCore(layout, receipts): a Receipts or None");
        return NULL;
    }
    ConsumerCore *self = (ConsumerCore *)type->tp_alloc(type, 0);
    if (self != NULL && (histogram_init(&self->e2e, &layout) < 0 ||
                         histogram_init(&self->from_intended, &layout) < 0 ||
                         histogram_init(&self->uncorrected, &layout) < 0)) {
        Py_CLEAR(self);
    }
    if (self != NULL) {
        self->receipts = receipts == Py_None ? NULL : (Receipts *)Py_NewRef(receipts);
    }
    return (PyObject *)self;
}

/* Room for what consumer_account stores for message_id; *window is the receipts' window to
 * note it in. */
static int consumer_account_prepare(ConsumerCore *core, int64_t message_id, Window **window) {
    if (core->receipts == NULL) {
        return column_reserve(&core->identities, 2);
    }
    if (message_id == NO_MESSAGE_ID) {
        return 0;
    }
    if (idmap_reserve(&core->highest) < 0) {
        return -1;
    }
    return receipts_prepare(core->receipts, message_id, window);
}

/* The delivery's identity: handed over as it is, or accounted here (order on its stream, then
 * the subscription's receipts, in the window consumer_account_prepare gave). */
static void consumer_account(ConsumerCore *core, Window *window, int64_t message_id,
                             int64_t partition) {
    core->received++;
    if (core->receipts == NULL) {
        column_store(&core->identities, message_id);
        column_store(&core->identities, partition);
        return;
    }
    if (message_id == NO_MESSAGE_ID) {
        core->receipts->unidentified++;
        return;
    }
    int64_t seq = message_id & SEQ_MASK;
    int64_t stream = (message_id & ~SEQ_MASK) | (partition + 1);
    int64_t *highest = idmap_find(&core->highest, stream);
    if (highest == NULL) {
        idmap_insert(&core->highest, stream, seq);
    } else if (seq < *highest) {
        column_store(&core->receipts->late, partition);
    } else {
        *highest = seq;
    }
    receipts_note(core->receipts, window, message_id, partition);
}

static int64_t shift_of(const ConsumerCore *core, int64_t message_id) {
    int64_t number = message_id >> SEQ_BITS;
    if (message_id < 0 || number >= core->shift_count) {
        return 0;
    }
    return core->shifts[number];
}

/* A delivery's end-to-end latencies: as measured (raw) and corrected for the clocks. */
typedef struct {
    int64_t raw;
    int64_t e2e;
    int64_t from_intended;
} Latencies;

/* The latencies of a delivery received now; -1 with OverflowError set (the only error) if one
 * does not fit in 64 bits. */
static int consumer_latencies(const ConsumerCore *core, int64_t sent_ns, int64_t message_id,
                              int64_t intended_ns, Latencies *out) {
    int64_t now = clock_ns(CLOCK_REALTIME);
    int64_t raw_from_intended;
    int64_t shift = core->shifts != NULL ? shift_of(core, message_id) : 0;
    if (difference(now, sent_ns, &out->raw) < 0 ||
        difference(now, intended_ns, &raw_from_intended) < 0 ||
        difference(out->raw, shift, &out->e2e) < 0 ||
        difference(raw_from_intended, shift, &out->from_intended) < 0) {
        return -1;
    }
    return 0;
}

/* One delivery: its latencies into the histograms (a negative one counted instead), its id and
 * partition into the identities, all or nothing. A partition is -1 (unknown) or below
 * PARTITION_LIMIT: partition + 1 is the low bits of its stream's key. */
static int consumer_record(ConsumerCore *core, Py_ssize_t size, const Latencies *latencies,
                           int64_t message_id, int64_t partition) {
    if (partition < -1 || partition >= PARTITION_LIMIT) {
        PyErr_Format(PyExc_ValueError, "partition %lld is not -1 or in [0, %lld)",
                     (long long)partition, (long long)PARTITION_LIMIT);
        return -1;
    }
    int64_t raw = latencies->raw, e2e = latencies->e2e, from_intended = latencies->from_intended;
    int corrected = core->shifts != NULL;
    Py_ssize_t at = e2e >= 0 ? counts_index(&core->e2e.layout, e2e) : -1;
    Py_ssize_t at_intended =
        from_intended >= 0 ? counts_index(&core->from_intended.layout, from_intended) : -1;
    Py_ssize_t at_raw = corrected && raw >= 0 ? counts_index(&core->uncorrected.layout, raw) : -1;
    Window *window = NULL;
    if ((at >= 0 && histogram_reserve(&core->e2e, at) < 0) ||
        (at_intended >= 0 && histogram_reserve(&core->from_intended, at_intended) < 0) ||
        (at_raw >= 0 && histogram_reserve(&core->uncorrected, at_raw) < 0) ||
        consumer_account_prepare(core, message_id, &window) < 0) {
        return -1;
    }
    if (at >= 0) {
        histogram_count(&core->e2e, at);
    } else if (e2e > UNSTAMPED_BELOW) {
        core->negative++;
    }
    if (at_intended >= 0) {
        histogram_count(&core->from_intended, at_intended);
    }
    if (at_raw >= 0) {
        histogram_count(&core->uncorrected, at_raw);
    } else if (corrected && raw > UNSTAMPED_BELOW) {
        core->negative_uncorrected++;
    }
    consumer_account(core, window, message_id, partition);
    core->bytes_total += size;
    return 0;
}

/* on_message(payload, sent_ns, message_id, intended_ns, partition): one delivery. */
static PyObject *consumer_on_message(ConsumerCore *self, PyObject *const *args,
                                     Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "on_message(payload, sent_ns, message_id, intended_ns, partition)");
        return NULL;
    }
    Py_ssize_t size = PyObject_Length(args[0]);
    if (size < 0) {
        return NULL;
    }
    int64_t sent_ns, message_id, intended_ns, partition;
    Latencies latencies;
    if (as_int64(args[1], &sent_ns) < 0 || as_int64(args[2], &message_id) < 0 ||
        as_int64(args[3], &intended_ns) < 0 || as_int64(args[4], &partition) < 0 ||
        consumer_latencies(self, sent_ns, message_id, intended_ns, &latencies) < 0 ||
        consumer_record(self, size, &latencies, message_id, partition) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static int64_t big_endian_int64(const unsigned char *bytes) {
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) {
        value = (value << 8) | bytes[i];
    }
    return (int64_t)value;
}

/* Record `payload` if it starts with loadgen's stamp (loadgen.driver_api.stamp): 1 if it did, 0
 * (recording nothing) if it does not or is not bytes, -1 with an error set. A stamp whose times
 * give no 64-bit latency is garbled or not loadgen's: counted foreign, not recorded, and 1, so
 * that no driver reads it again and fails on it. */
static int consumer_record_prefixed(ConsumerCore *core, PyObject *payload, int64_t partition) {
    if (!PyBytes_CheckExact(payload) || PyBytes_GET_SIZE(payload) < PREFIX_BYTES ||
        memcmp(PyBytes_AS_STRING(payload), PREFIX_MARK, 8) != 0) {
        return 0;
    }
    const unsigned char *stamp = (const unsigned char *)PyBytes_AS_STRING(payload) + 8;
    int64_t message_id = big_endian_int64(stamp + 8);
    Latencies latencies;
    if (consumer_latencies(core, big_endian_int64(stamp), message_id,
                           big_endian_int64(stamp + 16), &latencies) < 0) {
        PyErr_Clear();
        core->foreign++;
        return 1;
    }
    if (consumer_record(core, PyBytes_GET_SIZE(payload), &latencies, message_id, partition) < 0) {
        return -1;
    }
    return 1;
}

/* on_prefixed(payload, partition) -> bool: a delivery whose payload starts with loadgen's
 * stamp; False, recording nothing, for one that does not, which the driver reads its own way. */
static PyObject *consumer_on_prefixed(ConsumerCore *self, PyObject *const *args,
                                      Py_ssize_t nargs) {
    int64_t partition;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "on_prefixed(payload, partition)");
        return NULL;
    }
    if (as_int64(args[1], &partition) < 0) {
        return NULL;
    }
    int recorded = consumer_record_prefixed(self, args[0], partition);
    return recorded < 0 ? NULL : PyBool_FromLong(recorded);
}

/* on_prefixed_many(payloads, start, partition) -> int: payloads[start:] (a list) recorded as
 * on_prefixed does, up to the first that does not carry the stamp; its index (len(payloads)
 * when every one did), from which the driver reads its own way. */
static PyObject *consumer_on_prefixed_many(ConsumerCore *self, PyObject *const *args,
                                           Py_ssize_t nargs) {
    Py_ssize_t start;
    int64_t partition;
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "on_prefixed_many(payloads: list, start, partition)");
        return NULL;
    }
    start = PyLong_AsSsize_t(args[1]);
    if ((start == -1 && PyErr_Occurred()) || as_int64(args[2], &partition) < 0) {
        return NULL;
    }
    PyObject *payloads = args[0];
    Py_ssize_t index = start < 0 ? 0 : start;
    for (; index < PyList_GET_SIZE(payloads); index++) {
        int recorded = consumer_record_prefixed(self, PyList_GET_ITEM(payloads, index), partition);
        if (recorded < 0) {
            return NULL;
        }
        if (recorded == 0) {
            break;
        }
    }
    return PyLong_FromSsize_t(index);
}

/* correct_clocks(shifts): from now on subtract shifts[producer number] (bytes of int64) from
 * each delivery's latencies, and record the uncorrected end-to-end latency too. */
static PyObject *consumer_correct_clocks(ConsumerCore *self, PyObject *shifts) {
    if (!PyBytes_Check(shifts) || PyBytes_GET_SIZE(shifts) % sizeof(int64_t) != 0) {
        PyErr_SetString(PyExc_TypeError, "correct_clocks(shifts): bytes of int64");
        return NULL;
    }
    Py_ssize_t count = PyBytes_GET_SIZE(shifts) / (Py_ssize_t)sizeof(int64_t);
    int64_t *copy = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(int64_t));
    if (copy == NULL) {
        return PyErr_NoMemory();
    }
    memcpy(copy, PyBytes_AS_STRING(shifts), (size_t)count * sizeof(int64_t));
    PyMem_Free(self->shifts);
    self->shifts = copy;
    self->shift_count = count;
    Py_RETURN_NONE;
}

/* take() -> ((index, counts) of endToEnd, of endToEndFromIntended, of endToEndUncorrected,
 * identities, negative, negative uncorrected, deliveries) since the last take; all or
 * nothing. */
static PyObject *consumer_take(ConsumerCore *self, PyObject *unused) {
    Histogram *histograms[] = {&self->e2e, &self->from_intended, &self->uncorrected};
    PyObject *taken = histograms_taken(histograms, 7);
    if (taken == NULL) {
        return NULL;
    }
    PyObject *items[] = {column_copy(&self->identities), PyLong_FromLongLong(self->negative),
                         PyLong_FromLongLong(self->negative_uncorrected),
                         PyLong_FromLongLong(self->received)};
    for (Py_ssize_t i = 0; i < 4; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < 4; j++) {
                Py_XDECREF(items[j]);
            }
            Py_DECREF(taken);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < 4; i++) {
        PyTuple_SET_ITEM(taken, 3 + i, items[i]);
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        histogram_reset(histograms[i]);
    }
    column_reset(&self->identities);
    self->negative = self->negative_uncorrected = 0;
    self->received = 0;
    return taken;
}

/* forget_order(): every stream's order starts again (the readiness probe's deliveries are not
 * the run's). */
static PyObject *consumer_forget_order(ConsumerCore *self, PyObject *unused) {
    idmap_free(&self->highest);
    Py_RETURN_NONE;
}

static PyObject *consumer_received(ConsumerCore *self, void *unused) {
    return PyLong_FromLongLong(self->received);
}

static PyMethodDef consumer_methods[] = {
    {"on_message", (PyCFunction)(void (*)(void))consumer_on_message, METH_FASTCALL,
     "on_message(payload, sent_ns, message_id, intended_ns, partition)."},
    {"on_prefixed", (PyCFunction)(void (*)(void))consumer_on_prefixed, METH_FASTCALL,
     "on_prefixed(payload, partition) -> whether the payload carried loadgen's stamp prefix."},
    {"on_prefixed_many", (PyCFunction)(void (*)(void))consumer_on_prefixed_many, METH_FASTCALL,
     "on_prefixed_many(payloads, start, partition) -> the index of the first payload without "
     "the stamp prefix, the ones before it recorded."},
    {"correct_clocks", (PyCFunction)consumer_correct_clocks, METH_O,
     "correct_clocks(shifts): ns to subtract per producer number, as bytes of int64."},
    {"take", (PyCFunction)consumer_take, METH_NOARGS,
     "The end-to-end histograms, identities and negative counts since the last take."},
    {"forget_order", (PyCFunction)consumer_forget_order, METH_NOARGS,
     "Start every stream's order check again."},
    {NULL},
};

static PyGetSetDef consumer_getset[] = {
    {"received", (getter)consumer_received, NULL, "Deliveries not taken yet.", NULL},
    {NULL},
};

static PyMemberDef consumer_members[] = {
    {"bytes_total", T_LONGLONG, offsetof(ConsumerCore, bytes_total), READONLY,
     "Payload bytes received so far."},
    {"foreign", T_LONGLONG, offsetof(ConsumerCore, foreign), READONLY,
     "Stamped payloads skipped so far because their times give no 64-bit latency."},
    {NULL},
};

static PyTypeObject ConsumerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen.engine._hotpath.ConsumerCore",
    .tp_doc = "ConsumerCore(layout, receipts=None): the consumer recorder's histograms and per-delivery entry "
              "points.",
    .tp_basicsize = sizeof(ConsumerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = consumer_new,
    .tp_dealloc = (destructor)consumer_dealloc,
    .tp_methods = consumer_methods,
    .tp_getset = consumer_getset,
    .tp_members = consumer_members,
};

/* ---- the module ------------------------------------------------------------------------ */

static PyObject *perf_counter_ns(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(clock_ns(CLOCK_MONOTONIC));
}

static PyObject *time_ns(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(clock_ns(CLOCK_REALTIME));
}

static PyMethodDef module_methods[] = {
    {"perf_counter_ns", perf_counter_ns, METH_NOARGS, "The clock acknowledgements are timed by."},
    {"time_ns", time_ns, METH_NOARGS, "The clock deliveries are timed by."},
    {NULL},
};

static int hotpath_exec(PyObject *module) {
    if (PyType_Ready(&AckType) < 0 || PyType_Ready(&ProducerCoreType) < 0 ||
        PyType_Ready(&ConsumerCoreType) < 0 || PyType_Ready(&ReceiptsType) < 0) {
        return -1;
    }
    static ProducerApi api = {core_of, bind_values, sent_and_acked};
    PyObject *unstamped = PyLong_FromLongLong(UNSTAMPED_BELOW);
    PyObject *partitions = PyLong_FromLongLong(PARTITION_LIMIT);
    PyObject *capsule = PyCapsule_New(&api, PRODUCER_API_CAPSULE, NULL);
    int failed =
        unstamped == NULL || partitions == NULL || capsule == NULL ||
        PyModule_AddObjectRef(module, "PRODUCER_API", capsule) < 0 ||
        PyModule_AddObjectRef(module, "ProducerCore", (PyObject *)&ProducerCoreType) < 0 ||
        PyModule_AddObjectRef(module, "ConsumerCore", (PyObject *)&ConsumerCoreType) < 0 ||
        PyModule_AddObjectRef(module, "Receipts", (PyObject *)&ReceiptsType) < 0 ||
        PyModule_AddObjectRef(module, "UNSTAMPED_BELOW", unstamped) < 0 ||
        PyModule_AddObjectRef(module, "PARTITION_LIMIT", partitions) < 0 ||
        PyModule_AddIntConstant(module, "SEQ_BITS", SEQ_BITS) < 0 ||
        add_stamp_constants(module) < 0;
    Py_XDECREF(unstamped);
    Py_XDECREF(partitions);
    Py_XDECREF(capsule);
    return failed ? -1 : 0;
}

static PyModuleDef_Slot hotpath_slots[] = {MODULE_SLOTS(hotpath_exec)};

static struct PyModuleDef hotpath_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "loadgen.engine._hotpath",
    .m_doc = "The recorders' per-message work in C (see loadgen.engine.recorder).",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = hotpath_slots,
};

PyMODINIT_FUNC PyInit__hotpath(void) {
    return PyModuleDef_Init(&hotpath_module);
}
