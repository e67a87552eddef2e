/* The producer loop's burst in C: loadgen.engine.burst's compiled engine.
 *
 * Why: between the schedule and the client a Python loop runs its whole per-message body in
 * bytecode, and then the driver's send its own, which sets a floor under a Python harness: a bare
 * Python client loop's cost. For producers that hand over a client call (loadgen.driver_api's
 * PrefixedSend) a burst here runs from the clock read to the client with no Python bytecode in
 * between: the key source, bind, the client's call and an immediate ack go through vectorcall,
 * and the stamp is written into the new payload.
 *
 * Per message, in this order (loadgen.engine.burst.SendBurst takes the same steps in Python
 * through each producer's send, and tests/unit/test_burst.py holds both to the same messages):
 * intended = start +
 * (int64)(index * interval), the product in double as Python's int(index * interval); now from
 * CLOCK_MONOTONIC; the key (None, or keys(now)); the message id (the producer's id base plus
 * index / producers); ack = bind(message_id, intended, now); the value: a new bytes of the
 * payload's size, "lg-stamp", then big-endian send time (CLOCK_REALTIME), message id and
 * intended + to_wall, then the payload's tail; the call; ack(None) after it, for a call without
 * an ack slot. A call that raises ends the burst and is returned, not raised: the Python side
 * hands that message to the driver's resend.
 *
 * When `bind` is a compiled recorder's (loadgen.engine._hotpath's ProducerCore.bind), bind goes
 * through its C interface (the capsule PRODUCER_API) with no ints boxed; and for a call without
 * an ack slot nothing is bound before the call: after it returns, the publish delay and the
 * acknowledgement are recorded in one C call (no ack object), and if it raises, the message is
 * bound then, for the resend. The values recorded are the same.
 *
 * Clocks: CLOCK_MONOTONIC is what time.perf_counter_ns() reads on Linux, CLOCK_REALTIME what
 * time.time_ns() reads; setup.py builds this file only where Python reports those two clocks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_clock.h"


static void put_int64(char *at, int64_t value) {
    uint64_t bits = (uint64_t)value;
    for (int i = 7; i >= 0; i--) {
        at[i] = (char)(bits & 0xff);
        bits >>= 8;
    }
}

/* One producer's call: args[0] is the spare slot PY_VECTORCALL_ARGUMENTS_OFFSET lends the
 * callee, args[1..nargs] the template's items (borrowed from its tuple); the value, key and ack
 * slots hold each message's objects for the length of its call only. */
typedef struct {
    PyObject *call;
    PyObject **args;
    Py_ssize_t nargs;
    Py_ssize_t value_at;
    Py_ssize_t key_at;
    Py_ssize_t ack_at; /* -1: acknowledged when the call returns */
} Target;

typedef struct {
    PyObject_HEAD
    PyObject *target_tuple;  /* owns every call and template the targets borrow */
    PyObject *payload_tuple; /* bytes of at least PREFIX_BYTES each */
    PyObject *keys;          /* NULL: no key */
    PyObject *bind;
    PyObject *core; /* the ProducerCore whose bind `bind` is: bound and acked without boxing */
    Target *targets;
    Py_ssize_t n_targets;
    int64_t *bases;
    int64_t to_wall;
    int running;
} Burst;

static const ProducerApi *producer_api; /* NULL where loadgen.engine._hotpath is not built */

static int slot_in(Py_ssize_t at, Py_ssize_t nargs) {
    return at >= 0 && at < nargs;
}

/* Target i from its (call, args, value_at, key_at, ack_at) tuple; the positions are checked
 * here so that run() can trust them. */
static int target_init(Target *target, PyObject *item) {
    PyObject *template;
    if (!PyTuple_Check(item) ||
        !PyArg_ParseTuple(item, "OO!nnn", &target->call, &PyTuple_Type, &template,
                          &target->value_at, &target->key_at, &target->ack_at)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a target is (call, args, value_at, key_at, ack_at)");
        }
        return -1;
    }
    Py_ssize_t nargs = PyTuple_GET_SIZE(template);
    int ack_ok = target->ack_at == -1 || (slot_in(target->ack_at, nargs) &&
                                          target->ack_at != target->value_at &&
                                          target->ack_at != target->key_at);
    if (!slot_in(target->value_at, nargs) || !slot_in(target->key_at, nargs) ||
        target->value_at == target->key_at || !ack_ok) {
        PyErr_SetString(PyExc_ValueError, "a target's slots must be distinct positions in args");
        return -1;
    }
    target->args = PyMem_Calloc((size_t)nargs + 1, sizeof(PyObject *));
    if (target->args == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        target->args[i + 1] = PyTuple_GET_ITEM(template, i);
    }
    target->nargs = nargs;
    return 0;
}

static int burst_init_targets(Burst *self, PyObject *targets, PyObject *id_bases) {
    self->target_tuple = PySequence_Tuple(targets);
    PyObject *bases = PySequence_Tuple(id_bases);
    int failed = -1;
    if (self->target_tuple == NULL || bases == NULL) {
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(self->target_tuple);
    if (n == 0 || PyTuple_GET_SIZE(bases) != n) {
        PyErr_SetString(PyExc_ValueError, "a burst needs targets and one id base per target");
        goto done;
    }
    self->targets = PyMem_Calloc((size_t)n, sizeof(Target));
    self->bases = PyMem_Calloc((size_t)n, sizeof(int64_t));
    if (self->targets == NULL || self->bases == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    self->n_targets = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (target_init(&self->targets[i], PyTuple_GET_ITEM(self->target_tuple, i)) < 0 ||
            as_int64(PyTuple_GET_ITEM(bases, i), &self->bases[i]) < 0) {
            goto done;
        }
    }
    failed = 0;
done:
    Py_XDECREF(bases);
    return failed;
}

static int burst_init_payloads(Burst *self, PyObject *payloads) {
    self->payload_tuple = PySequence_Tuple(payloads);
    if (self->payload_tuple == NULL) {
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(self->payload_tuple);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "a burst needs at least one payload");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *payload = PyTuple_GET_ITEM(self->payload_tuple, i);
        if (!PyBytes_CheckExact(payload)) {
            PyErr_SetString(PyExc_TypeError, "payloads must be bytes");
            return -1;
        }
        if (PyBytes_GET_SIZE(payload) < PREFIX_BYTES) {
            PyErr_SetString(PyExc_ValueError, "payloads must be at least 32 bytes (the stamp)");
            return -1;
        }
    }
    return 0;
}

static PyObject *burst_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"targets", "payloads", "keys", "bind", "id_bases", "to_wall", NULL};
    PyObject *targets, *payloads, *keys, *bind, *id_bases;
    long long to_wall;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOL:Burst", names, &targets, &payloads,
                                     &keys, &bind, &id_bases, &to_wall)) {
        return NULL;
    }
    Burst *self = (Burst *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->to_wall = (int64_t)to_wall;
    self->keys = keys == Py_None ? NULL : Py_NewRef(keys);
    self->bind = Py_NewRef(bind);
    self->core = producer_api == NULL ? NULL : Py_XNewRef(producer_api->core_of(bind));
    if (burst_init_targets(self, targets, id_bases) < 0 ||
        burst_init_payloads(self, payloads) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int burst_traverse(Burst *self, visitproc visit, void *arg) {
    Py_VISIT(self->target_tuple);
    Py_VISIT(self->payload_tuple);
    Py_VISIT(self->keys);
    Py_VISIT(self->bind);
    Py_VISIT(self->core);
    return 0;
}

static int burst_clear(Burst *self) {
    Py_CLEAR(self->target_tuple);
    Py_CLEAR(self->payload_tuple);
    Py_CLEAR(self->keys);
    Py_CLEAR(self->bind);
    Py_CLEAR(self->core);
    return 0;
}

static void burst_dealloc(Burst *self) {
    PyObject_GC_UnTrack(self);
    burst_clear(self);
    for (Py_ssize_t i = 0; i < self->n_targets; i++) {
        PyMem_Free(self->targets[i].args);
    }
    PyMem_Free(self->targets);
    PyMem_Free(self->bases);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* start + int(index * interval), as Python computes it for a float interval. */
static int intended_time(int64_t start, int64_t index, double interval, int64_t *out) {
    double offset = (double)index * interval;
    if (!(offset > -9223372036854775808.0 && offset < 9223372036854775808.0) ||
        __builtin_add_overflow(start, (int64_t)offset, out)) {
        PyErr_SetString(PyExc_OverflowError, "intended time does not fit in 64 bits");
        return -1;
    }
    return 0;
}

static PyObject *call_with_int64s(PyObject *callable, const int64_t *values, Py_ssize_t n) {
    PyObject *args[4] = {NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((args[i + 1] = PyLong_FromLongLong(values[i])) == NULL) {
            goto done;
        }
    }
    result = PyObject_Vectorcall(callable, args + 1, (size_t)n | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                 NULL);
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(args[i + 1]);
    }
    return result;
}

/* A new bytes: the stamp, then the payload's bytes after the prefix. */
static PyObject *stamped(PyObject *payload, int64_t message_id, int64_t intended_wall) {
    Py_ssize_t size = PyBytes_GET_SIZE(payload);
    PyObject *value = PyBytes_FromStringAndSize(NULL, size);
    if (value == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(value);
    memcpy(out + PREFIX_BYTES, PyBytes_AS_STRING(payload) + PREFIX_BYTES,
           (size_t)(size - PREFIX_BYTES));
    memcpy(out, PREFIX_MARK, 8);
    put_int64(out + 8, clock_ns(CLOCK_REALTIME));
    put_int64(out + 16, message_id);
    put_int64(out + 24, intended_wall);
    return value;
}

/* (index, error, key, value, ack) for the message whose call raised; takes over key, value and
 * ack, and the error, which is no longer set. */
static PyObject *failure(int64_t index, PyObject *key, PyObject *value, PyObject *ack) {
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    PyErr_NormalizeException(&type, &error, &traceback);
    if (traceback != NULL) {
        PyException_SetTraceback(error, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return Py_BuildValue("(LNNNN)", (long long)index, error, key, value, ack);
}

/* failure() for a message bound only now, its call having raised. */
static PyObject *failure_bound(Burst *self, int64_t index, PyObject *key, PyObject *value,
                               const int64_t values[3]) {
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    PyObject *ack = producer_api->bind(self->core, values[0], values[1], values[2]);
    if (ack == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
        Py_DECREF(key);
        Py_DECREF(value);
        return NULL;
    }
    PyErr_Restore(type, error, traceback);
    return failure(index, key, value, ack);
}

/* bind(message_id, intended, now): in C for a ProducerCore's bind, else through Python. */
static PyObject *bound(Burst *self, const int64_t values[3]) {
    if (self->core != NULL) {
        return producer_api->bind(self->core, values[0], values[1], values[2]);
    }
    return call_with_int64s(self->bind, values, 3);
}

/* The message of a call without an ack slot, acknowledged as the call returned: ack(None), or
 * for a ProducerCore (which made no ack) its delay and acknowledgement recorded in C. */
static int acknowledge(Burst *self, PyObject *ack, const int64_t values[3]) {
    if (ack == NULL) {
        return producer_api->sent_and_acked(self->core, values[0], values[1], values[2]);
    }
    PyObject *args[2] = {NULL, Py_None};
    PyObject *done = PyObject_Vectorcall(ack, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (done == NULL) {
        return -1;
    }
    Py_DECREF(done);
    return 0;
}

static PyObject *burst_send(Burst *self, int64_t first, int64_t end, int64_t start,
                            double interval) {
    const Py_ssize_t n = self->n_targets;
    const Py_ssize_t n_payloads = PyTuple_GET_SIZE(self->payload_tuple);
    for (int64_t index = first; index < end; index++) {
        int64_t intended, message_id, intended_wall;
        if (intended_time(start, index, interval, &intended) < 0) {
            return NULL;
        }
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        PyObject *key = self->keys == NULL ? Py_NewRef(Py_None)
                                           : call_with_int64s(self->keys, &now, 1);
        if (key == NULL) {
            return NULL;
        }
        Target *target = &self->targets[index % n];
        if (__builtin_add_overflow(self->bases[index % n], index / n, &message_id) ||
            __builtin_add_overflow(intended, self->to_wall, &intended_wall)) {
            PyErr_SetString(PyExc_OverflowError, "message id or time does not fit in 64 bits");
            Py_DECREF(key);
            return NULL;
        }
        const int64_t values[3] = {message_id, intended, now};
        /* a ProducerCore acknowledging as the call returns needs no ack object */
        int unboxed = self->core != NULL && target->ack_at < 0;
        PyObject *ack = unboxed ? NULL : bound(self, values);
        if (ack == NULL && !unboxed) {
            Py_DECREF(key);
            return NULL;
        }
        PyObject *payload = PyTuple_GET_ITEM(self->payload_tuple, index % n_payloads);
        PyObject *value = stamped(payload, message_id, intended_wall);
        if (value == NULL) {
            Py_DECREF(key);
            Py_XDECREF(ack);
            return NULL;
        }
        PyObject **args = target->args + 1;
        args[target->value_at] = value;
        args[target->key_at] = key;
        if (target->ack_at >= 0) {
            args[target->ack_at] = ack;
        }
        PyObject *returned = PyObject_Vectorcall(
            target->call, args, (size_t)target->nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (returned == NULL) {
            /* the resend needs the message's ack: bound now, as the Python loop bound it */
            return unboxed ? failure_bound(self, index, key, value, values)
                           : failure(index, key, value, ack);
        }
        Py_DECREF(returned);
        int failed = target->ack_at < 0 && acknowledge(self, ack, values) < 0;
        Py_DECREF(key);
        Py_DECREF(value);
        Py_XDECREF(ack);
        if (failed) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* run(first, end, start_ns, interval_ns) -> None, or (index, error, key, value, ack). */
static PyObject *burst_run(Burst *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "run(first, end, start_ns, interval_ns)");
        return NULL;
    }
    int64_t first, end, start;
    if (as_int64(args[0], &first) < 0 || as_int64(args[1], &end) < 0 ||
        as_int64(args[2], &start) < 0) {
        return NULL;
    }
    double interval = PyFloat_AsDouble(args[3]);
    if (interval == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (first < 0) {
        PyErr_SetString(PyExc_ValueError, "message indices start at 0");
        return NULL;
    }
    if (self->running || self->bind == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the burst is running already, or was cleared");
        return NULL;
    }
    self->running = 1;
    PyObject *result = burst_send(self, first, end, start, interval);
    self->running = 0;
    return result;
}

static PyMethodDef burst_methods[] = {
    {"run", (PyCFunction)(void (*)(void))burst_run, METH_FASTCALL,
     "run(first, end, start_ns, interval_ns): send messages [first, end); None when every one "
     "was handed over, else (index, error, key, value, ack) of the one whose call raised."},
    {NULL},
};

static PyTypeObject BurstType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "loadgen.engine._burst.Burst",
    .tp_doc = "Burst(targets, payloads, keys, bind, id_bases, to_wall): the producer loop's "
              "per-message work for producers that take stamped payloads.",
    .tp_basicsize = sizeof(Burst),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = burst_new,
    .tp_dealloc = (destructor)burst_dealloc,
    .tp_traverse = (traverseproc)burst_traverse,
    .tp_clear = (inquiry)burst_clear,
    .tp_methods = burst_methods,
};

static int burst_exec(PyObject *module) {
    if (PyType_Ready(&BurstType) < 0) {
        return -1;
    }
    producer_api = PyCapsule_Import(PRODUCER_API_CAPSULE, 0);
    if (producer_api == NULL) {
        PyErr_Clear(); /* no compiled recorders: bind is called as any callable */
    }
    if (PyModule_AddObjectRef(module, "Burst", (PyObject *)&BurstType) < 0 ||
        add_stamp_constants(module) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot burst_slots[] = {MODULE_SLOTS(burst_exec)};

static struct PyModuleDef burst_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "loadgen.engine._burst",
    .m_doc = "The producer loop's burst in C (see loadgen.engine.burst).",
    .m_size = 0,
    .m_slots = burst_slots,
};

PyMODINIT_FUNC PyInit__burst(void) {
    return PyModuleDef_Init(&burst_module);
}
