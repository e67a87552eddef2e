/* The recorders' per-message work in C: loadgen.recorder's compiled engine.
 *
 * Why: in CPython a message's acknowledgement cost ~450 ns (a functools.partial bound per
 * message, then a Python method that reads the clock and appends to three arrays), half of
 * what the memory driver's whole send path costs (bench/RESULTS.md). Here binding is one small
 * object and recording is a few stores.
 *
 * Columns are int64 buffers the engine owns; take() hands each over as bytes and starts anew.
 * Every entry point runs with the GIL held and calls no Python code while it records, so a
 * take() on another thread sees each message's values all or none, like the pure-Python
 * recorders' single append/extend.
 *
 * Clocks: CLOCK_MONOTONIC is what time.perf_counter_ns() reads on Linux (the producer loop's
 * send times come from it), CLOCK_REALTIME what time.time_ns() reads (the stamp's send times).
 * setup.py builds this file only where Python reports those two clocks (Linux; elsewhere, e.g.
 * macOS and Windows, the pure-Python engine records), and tests/unit/test_recorder.py checks both
 * against Python's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct {
    int64_t *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Column;

/* Room for n more values, so a row of several columns is stored all or none. */
static int column_reserve(Column *column, Py_ssize_t n) {
    if (column->len + n <= column->cap) {
        return 0;
    }
    Py_ssize_t cap = column->cap ? column->cap : 4096;
    while (cap < column->len + n) {
        cap *= 2;
    }
    int64_t *grown = PyMem_Realloc(column->data, (size_t)cap * sizeof(int64_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    column->data = grown;
    column->cap = cap;
    return 0;
}

/* Store a value where column_reserve made room. */
static inline void column_store(Column *column, int64_t value) {
    column->data[column->len++] = value;
}

/* A copy of the column's values as bytes; the column is left as it is. */
static PyObject *column_copy(const Column *column) {
    return PyBytes_FromStringAndSize((const char *)column->data,
                                     column->len * (Py_ssize_t)sizeof(int64_t));
}

/* Empty the column (a buffer far bigger than what it held is given back, so one burst does not
 * keep its memory for the rest of the run). Allocates nothing, so it cannot fail. */
static void column_reset(Column *column) {
    if (column->cap > 65536 && column->len < column->cap / 4) {
        PyMem_Free(column->data);
        column->data = NULL;
        column->cap = 0;
    }
    column->len = 0;
}

static int64_t clock_ns(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static int as_int64(PyObject *value, int64_t *out) {
    long long converted = PyLong_AsLongLong(value);
    if (converted == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)converted;
    return 0;
}

static int difference(int64_t a, int64_t b, int64_t *out) {
    if (__builtin_sub_overflow(a, b, out)) {
        PyErr_SetString(PyExc_OverflowError, "latency does not fit in 64 bits");
        return -1;
    }
    return 0;
}

/* ---- the producer's engine ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Column publish;
    Column delay;
    Column from_intended;
    Column acked;
    long long errors;
} ProducerCore;

static int producer_ack(ProducerCore *core, int64_t message_id, int64_t intended_ns,
                        int64_t sent_ns, PyObject *error) {
    if (error != NULL && error != Py_None) {
        core->errors++;
        return 0;
    }
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    int64_t latency, corrected;
    if (difference(now, sent_ns, &latency) < 0 || difference(now, intended_ns, &corrected) < 0) {
        return -1;
    }
    if (column_reserve(&core->publish, 1) < 0 || column_reserve(&core->from_intended, 1) < 0 ||
        column_reserve(&core->acked, 1) < 0) {
        return -1;
    }
    column_store(&core->publish, latency);
    column_store(&core->from_intended, corrected);
    column_store(&core->acked, message_id);
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
    .tp_name = "loadgen._hotpath.Ack",
    .tp_doc = "One message's acknowledgement: ack(error, *client_args), error None when "
              "acknowledged.",
    .tp_basicsize = sizeof(Ack),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)ack_dealloc,
    .tp_call = (ternaryfunc)ack_call,
};

static void producer_dealloc(ProducerCore *self) {
    PyMem_Free(self->publish.data);
    PyMem_Free(self->delay.data);
    PyMem_Free(self->from_intended.data);
    PyMem_Free(self->acked.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* bind(message_id, intended_ns, sent_ns) -> Ack; records the publish delay (sent - intended). */
static PyObject *producer_bind(ProducerCore *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bind(message_id, intended_ns, sent_ns)");
        return NULL;
    }
    int64_t message_id, intended_ns, sent_ns, delay;
    if (as_int64(args[0], &message_id) < 0 || as_int64(args[1], &intended_ns) < 0 ||
        as_int64(args[2], &sent_ns) < 0 || difference(sent_ns, intended_ns, &delay) < 0) {
        return NULL;
    }
    Ack *ack = PyObject_New(Ack, &AckType);
    if (ack == NULL) {
        return NULL;
    }
    if (column_reserve(&self->delay, 1) < 0) {
        ack->core = NULL;
        Py_DECREF(ack);
        return NULL;
    }
    column_store(&self->delay, delay);
    Py_INCREF(self);
    ack->core = self;
    ack->message_id = message_id;
    ack->intended_ns = intended_ns;
    ack->sent_ns = sent_ns;
    return (PyObject *)ack;
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

/* take() -> (publish, publish_delay, publish_from_intended, acked) as bytes of int64. Everything
 * is allocated before any column is emptied, so a failure leaves all four as they were. */
static PyObject *producer_take(ProducerCore *self, PyObject *unused) {
    Column *columns[] = {&self->publish, &self->delay, &self->from_intended, &self->acked};
    const Py_ssize_t count = (Py_ssize_t)(sizeof(columns) / sizeof(columns[0]));
    PyObject *taken = PyTuple_New(count);
    if (taken == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *values = column_copy(columns[i]);
        if (values == NULL) {
            Py_DECREF(taken);
            return NULL;
        }
        PyTuple_SET_ITEM(taken, i, values);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        column_reset(columns[i]);
    }
    return taken;
}

static PyObject *producer_acked_count(ProducerCore *self, void *unused) {
    return PyLong_FromSsize_t(self->publish.len);
}

static PyMethodDef producer_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))producer_bind, METH_FASTCALL,
     "bind(message_id, intended_ns, sent_ns): the message's acknowledgement callable."},
    {"on_done", (PyCFunction)(void (*)(void))producer_on_done, METH_VARARGS | METH_KEYWORDS,
     "on_done(message_id, intended_ns, sent_ns, error, *client_args)."},
    {"take", (PyCFunction)producer_take, METH_NOARGS,
     "The four columns since the last take, as bytes of int64."},
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
    .tp_name = "loadgen._hotpath.ProducerCore",
    .tp_doc = "The producer recorder's columns and per-message entry points.",
    .tp_basicsize = sizeof(ProducerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)producer_dealloc,
    .tp_methods = producer_methods,
    .tp_getset = producer_getset,
    .tp_members = producer_members,
};

/* ---- the consumer's engine ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Column rows;
    long long bytes_total;
} ConsumerCore;

static void consumer_dealloc(ConsumerCore *self) {
    PyMem_Free(self->rows.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* on_message(payload, sent_ns, message_id, intended_ns, partition): one delivery row. */
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
    int64_t sent_ns, message_id, intended_ns, partition, e2e, from_intended;
    if (as_int64(args[1], &sent_ns) < 0 || as_int64(args[2], &message_id) < 0 ||
        as_int64(args[3], &intended_ns) < 0 || as_int64(args[4], &partition) < 0) {
        return NULL;
    }
    int64_t now = clock_ns(CLOCK_REALTIME);
    if (difference(now, sent_ns, &e2e) < 0 || difference(now, intended_ns, &from_intended) < 0 ||
        column_reserve(&self->rows, 4) < 0) {
        return NULL;
    }
    column_store(&self->rows, e2e);
    column_store(&self->rows, from_intended);
    column_store(&self->rows, message_id);
    column_store(&self->rows, partition);
    self->bytes_total += size;
    Py_RETURN_NONE;
}

/* take() -> the delivery rows since the last take, as bytes of int64. */
static PyObject *consumer_take(ConsumerCore *self, PyObject *unused) {
    PyObject *taken = column_copy(&self->rows);
    if (taken != NULL) {
        column_reset(&self->rows);
    }
    return taken;
}

static PyObject *consumer_received(ConsumerCore *self, void *unused) {
    return PyLong_FromSsize_t(self->rows.len / 4);
}

static PyMethodDef consumer_methods[] = {
    {"on_message", (PyCFunction)(void (*)(void))consumer_on_message, METH_FASTCALL,
     "on_message(payload, sent_ns, message_id, intended_ns, partition)."},
    {"take", (PyCFunction)consumer_take, METH_NOARGS,
     "The delivery rows since the last take, as bytes of int64."},
    {NULL},
};

static PyGetSetDef consumer_getset[] = {
    {"received", (getter)consumer_received, NULL, "Deliveries not taken yet.", NULL},
    {NULL},
};

static PyMemberDef consumer_members[] = {
    {"bytes_total", T_LONGLONG, offsetof(ConsumerCore, bytes_total), READONLY,
     "Payload bytes received so far."},
    {NULL},
};

static PyTypeObject ConsumerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen._hotpath.ConsumerCore",
    .tp_doc = "The consumer recorder's delivery rows and its per-message entry point.",
    .tp_basicsize = sizeof(ConsumerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
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

static struct PyModuleDef hotpath_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "loadgen._hotpath",
    .m_doc = "The recorders' per-message work in C (see loadgen.recorder).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__hotpath(void) {
    if (PyType_Ready(&AckType) < 0 || PyType_Ready(&ProducerCoreType) < 0 ||
        PyType_Ready(&ConsumerCoreType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&hotpath_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "ProducerCore", (PyObject *)&ProducerCoreType) < 0 ||
        PyModule_AddObjectRef(module, "ConsumerCore", (PyObject *)&ConsumerCoreType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
