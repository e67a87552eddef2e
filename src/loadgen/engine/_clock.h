/* What loadgen's C modules share: the clocks Python reads, int conversion as Python's, the
 * stamp's layout, the recorders' C interface for the burst, and the modules' init slots.
 *
 * CLOCK_MONOTONIC is what time.perf_counter_ns() reads on Linux, CLOCK_REALTIME what
 * time.time_ns() reads; setup.py builds the modules only where Python reports those two clocks.
 */
#ifndef LOADGEN_CLOCK_H
#define LOADGEN_CLOCK_H

#include <Python.h>
#include <stdint.h>
#include <time.h>

/* loadgen.driver_api.stamp: the mark, then send time, message id and intended time, big-endian. */
#define PREFIX_MARK "lg-stamp"
#define PREFIX_BYTES 32

static inline int64_t clock_ns(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* `value` as an int64, or -1 with TypeError or OverflowError set, as Python converts it. */
static inline int as_int64(PyObject *value, int64_t *out) {
    long long converted = PyLong_AsLongLong(value);
    if (converted == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)converted;
    return 0;
}

/* loadgen.engine._hotpath's producer recording as loadgen.engine._burst calls it, with no Python object per
 * message: the capsule loadgen.engine._hotpath.PRODUCER_API. */
typedef struct {
    /* the ProducerCore whose bind `bind` is (borrowed), or NULL for any other callable */
    PyObject *(*core_of)(PyObject *bind);
    /* core.bind(message_id, intended_ns, sent_ns): a new Ack, the publish delay recorded */
    PyObject *(*bind)(PyObject *core, int64_t message_id, int64_t intended_ns, int64_t sent_ns);
    /* bind and ack(None) in one go, for a client call that is its own acknowledgement */
    int (*sent_and_acked)(PyObject *core, int64_t message_id, int64_t intended_ns,
                          int64_t sent_ns);
} ProducerApi;

#define PRODUCER_API_CAPSULE "loadgen.engine._hotpath.PRODUCER_API"

/* The stamp's layout as module constants, which tests/unit/test_c_constants.py compares with
 * loadgen.driver_api.stamp's. */
static inline int add_stamp_constants(PyObject *module) {
    PyObject *mark = PyBytes_FromString(PREFIX_MARK);
    int failed = mark == NULL || PyModule_AddObjectRef(module, "PREFIX_MARK", mark) < 0 ||
                 PyModule_AddIntConstant(module, "PREFIX_BYTES", PREFIX_BYTES) < 0;
    Py_XDECREF(mark);
    return failed ? -1 : 0;
}

/* Both modules' multi-phase init slots, `exec` first. Their types, capsule and the burst's
 * binding are static, shared by every interpreter in the process: an interpreter with its own
 * GIL may not import them. Every entry point relies on the GIL (the recorders' all-or-none
 * takes, the shared Receipts, a Burst's running flag and argument buffers), so a free-threaded
 * build keeps the GIL on while they are imported. Each slot is declared where Python has it. */
#ifdef Py_mod_multiple_interpreters
#define INTERPRETERS_SLOT \
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#else
#define INTERPRETERS_SLOT
#endif
#ifdef Py_mod_gil
#define GIL_SLOT {Py_mod_gil, Py_MOD_GIL_USED},
#else
#define GIL_SLOT
#endif
#define MODULE_SLOTS(exec) {Py_mod_exec, (void *)(exec)}, INTERPRETERS_SLOT GIL_SLOT {0, NULL}

#endif
